#!/usr/bin/perl

# A Redis that answers the lookup with what no real one would: a header
# announcing a billion elements, a 3 MB bulk string, a reply that never
# ends.  hiredis 0.14 allocates what a header announces and buffers a bulk
# whole; the module caps both (src/ngx_http_gms_redis_reply.c) and drops the
# connection: 503, logged, no worker lost, nothing to GMS.
#
# The stand-in Redis here is a few lines of Perl speaking RESP: it
# answers anything it reads with the reply under test.

use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;
use Test::More;

use GmsTest;
use GmsTest::Nginx;

GmsTest::need_module();

# A server answering every read with $reply; returns its port and pid.
sub hostile_redis {
    my ($reply) = @_;

    my $listen = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
                                       LocalPort => 0, Listen => 16,
                                       ReuseAddr => 1)
        or die "listen: $!\n";

    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        $SIG{PIPE} = 'IGNORE';
        my $sel = IO::Select->new($listen);
        while (1) {
            for my $fh ($sel->can_read(1)) {
                if ($fh == $listen) {
                    my $c = $listen->accept or next;
                    $sel->add($c);
                    next;
                }
                my $n = sysread($fh, my $buf, 65536);
                if (!$n) {
                    $sel->remove($fh);
                    close $fh;
                    next;
                }
                syswrite($fh, $reply);
            }
        }
    }

    my $port = $listen->sockport;
    close $listen;
    return ($port, $pid);
}

my @cases = (
    ['an array of a billion elements', "*1000000000\r\n"],
    ['a lookup with a 3 MB actor',
     "*4\r\n\$3000000\r\n" . ('a' x 3_000_000) . "\r\n"],
    ['a privileges array of 100000',
     "*4\r\n\$21\r\nurn:li:corpuser:alice\r\n\$0\r\n\r\n\$0\r\n\r\n"
     . "*100000\r\n"],
    ['an error reply of 200 KB', '-' . ('E' x 200_000) . "\r\n"],
);

for my $case (@cases) {
    my ($title, $reply) = @$case;

    subtest $title => sub {
        my ($port, $pid) = hostile_redis($reply);

        my $n = GmsTest::Nginx->new;
        $n->start(<<"CONF");
    gms_token_redis 127.0.0.1:$port;
    gms_token_redis_timeout 3s;
    gms_token_salt "";

    server {
        listen 127.0.0.1:%%PORT%%;
        gms_token_auth on;
        # past the check: a 404 from an empty directory
        location / { root %%TESTDIR%%; }
    }
CONF

        my $res = $n->http(GET => '/entities/x',
                           { Authorization => 'Bearer some-token' });
        is($res->{status}, 503, 'status 503');
        like($n->error_log,
             qr/\[error\].*gms:\ (?:redis\ reply\ over\ the\ module's\ limits
                                  |redis\ protocol\ error\ .*larger\ than)/x,
             "refused by the module's caps, not by the lookup deadline");

        my $again = $n->http(GET => '/entities/x',
                             { Authorization => 'Bearer some-token' });
        is($again->{status}, 503, 'and again: the worker is still there');

        $n->stop;
        is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');

        kill 'KILL', $pid;
        waitpid $pid, 0;
    };
}

# The invalidation subscription (with a cache) reads what hiredis 0.14
# asserts on in subscribed mode: an array of fewer than 2, a channel that
# is not a string, a kind that is not one.  The module's reply builders for
# the subscription refuse every shape but ["kind", channel, payload]: the
# connection is dropped and tried again later, and no worker aborts.
my @subscription = (
    ['an array of one', "*1\r\n\$7\r\nmessage\r\n"],
    ['integers for kind and channel', "*3\r\n:1\r\n:2\r\n:3\r\n"],
    ['a nested array', "*3\r\n\$7\r\nmessage\r\n*1\r\n:1\r\n\$1\r\nx\r\n"],
    ['a nil channel', "*3\r\n\$7\r\nmessage\r\n\$-1\r\n\$1\r\nx\r\n"],
    ['a bare integer', ":5\r\n"],
);

for my $case (@subscription) {
    my ($title, $reply) = @$case;

    subtest "subscription: $title" => sub {
        my ($port, $pid) = hostile_redis($reply);

        my $n = GmsTest::Nginx->new;
        $n->start(<<"CONF");
    gms_token_redis 127.0.0.1:$port;
    gms_token_redis_timeout 1s;
    gms_token_salt "";
    gms_token_cache zone=tokens:1m;

    server {
        listen 127.0.0.1:%%PORT%%;
        gms_token_auth on;
        location / { root %%TESTDIR%%; }
    }
CONF

        ok(GmsTest::wait_until(sub {
               $n->error_log =~ /gms: redis subscription: unexpected/ }, 5),
           'refused by the subscription\'s reply builders');

        my $res = $n->http(GET => '/entities/x',
                           { Authorization => 'Bearer some-token' });
        is($res->{status}, 503, 'requests still answered: 503');

        $n->stop;
        is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');

        kill 'KILL', $pid;
        waitpid $pid, 0;
    };
}

done_testing();

#!/usr/bin/perl

# Lookups wait for discovery (issue 27, item 5): a worker asks the
# Sentinels where the master is when it starts, so after every start and
# every reload; a lookup that arrives meanwhile waits for the answer,
# within gms_token_redis_timeout, instead of getting 503.
#
#   - an edge of four workers on Sentinels that take 300 ms to answer:
#     requests fired right at the start get 200 (and 401 for an unknown
#     token), none 503; clients that go meanwhile leave nothing behind;
#   - real Sentinels, a request loop on new connections, five reloads:
#     only 200s;
#   - Sentinels that never answer: a request gets 503 within about the
#     timeout, and so do the ones after;
#   - Sentinels nobody listens for: 503 at once (discovery gave up).

use strict;
use warnings;

use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Edge;
use GmsTest::Checks qw(status metric no_crash gms_lines request_loop);
use GmsTest::HTTP;
use GmsTest::Sentinel;

GmsTest::need_module();
GmsTest::need_redis();
GmsTest::Sentinel::_need_sentinel();


subtest 'Sentinels slow to answer: requests at the start wait' => sub {
    my $m = GmsTest::Redis->start;
    GmsTest::Edge::seed($m, 'token-1');

    my $port = $m->port;
    my @s = map {
        GmsTest::Sentinel->fake(master => $port, on => { SENTINEL => sub {
            my ($c, undef, $what) = @_;
            sleep 0.3;
            return GmsTest::Sentinel::Fake::_resp(['127.0.0.1', $port])
                if lc($what // '') eq 'get-master-addr-by-name';
            return undef;
        } })
    } 1 .. 2;

    my $n = GmsTest::Edge->topology(sentinel => \@s, master => 'gms',
                                    timeout => '2s', workers => 4);

    # clients that go while their lookup waits: it is taken back
    GmsTest::HTTP::raw($n->port, "GET /ok HTTP/1.1\r\nHost: x\r\n"
                       . "Authorization: Bearer token-$_\r\n\r\n",
                       timeout => 0.02) for 1 .. 2;

    # at once, on connections of their own: every worker is still asking
    my $got = $n->parallel([ map {
        [GET => '/ok', { Authorization => 'Bearer '
                                          . ($_ % 4 ? 'token-1' : 'nope') }]
    } 1 .. 16 ], timeout => 10);

    my @status = map { $_->{status} // 'none' } @$got;
    is_deeply(\@status, [ map { $_ % 4 ? 200 : 401 } 1 .. 16 ],
              'right at the start: 200 for the token, 401 for an unknown one')
        or diag gms_lines($n);
    is(status($n, 'token-1'), 200, 'and 200 afterwards');
    unlike($n->error_log, qr/\[error\].*redis unavailable for token id/,
           'no lookup refused for want of a master');

    no_crash($n);
};


subtest 'real Sentinels: start and reloads under a request loop' => sub {
    my $m = GmsTest::Redis->start;
    my $s = GmsTest::Sentinel->start(master => $m, down_after => 60_000);
    GmsTest::Edge::seed($m, 'steady');

    my $n = GmsTest::Edge->topology(sentinel => $s, master => 'gms',
                                    timeout => '2s', workers => 4);
    my $loop = request_loop($n->port, 'steady', 3);

    ok(GmsTest::wait_until(sub { $loop->{count}->() >= 30 }, 10),
       'the loop runs');

    for my $i (1 .. 5) {
        $n->reload;
        my $seen = $loop->{count}->();
        GmsTest::wait_until(sub { $loop->{count}->() >= $seen + 30 }, 10);
    }

    my $count = $loop->{stop}->();
    is_deeply([ sort keys %$count ], [200],
              'five reloads under load: only 200')
        or diag explain($count), gms_lines($n);
    note join ', ', map { "$_: $count->{$_}" } sort keys %$count;

    no_crash($n);
};


subtest 'Sentinels that never answer: 503 within about the timeout' => sub {
    # they accept the connection and read, but say nothing
    my @s = map {
        GmsTest::Sentinel->fake(master => 1, on => {
            SENTINEL => sub { my ($c) = @_; 1 while $c->read_command; '' },
        })
    } 1 .. 2;

    my $n = GmsTest::Edge->topology(sentinel => \@s, master => 'gms',
                                    timeout => '2s', workers => 2);

    my $t0 = time;
    is(status($n, 'token-1'), 503, 'a request: 503');
    my $took = time - $t0;
    note sprintf 'answered in %.2f s', $took;
    cmp_ok($took, '<', 5, 'answered, not left hanging');
    is(status($n, 'token-1'), 503, 'the next one: 503 too');
    like($n->error_log, qr/gms: redis lookup of token id "\S+" (?x:
                           )(?:timed out|failed: no redis server known)/,
         'the failure logged');

    no_crash($n);
};


subtest 'Sentinels nobody listens for: 503, discovery gave up' => sub {
    my @ports = map { GmsTest::free_port() } 1 .. 3;
    my $n = GmsTest::Edge->topology(
        sentinel => [ map { "127.0.0.1:$_" } @ports ], timeout => '2s');

    my @got = map { status($n, 'token-1') } 1 .. 3;
    is_deeply(\@got, [503, 503, 503], '503 for every request');
    ok(GmsTest::wait_until(sub {
           $n->error_log =~ /gms: no redis server known: (?x:
                             )no Sentinel named master "gms"/ }, 5),
       'the lookups waiting were answered when no Sentinel named the master')
        or diag gms_lines($n);

    no_crash($n);
};

done_testing();

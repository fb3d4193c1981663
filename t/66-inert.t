#!/usr/bin/perl

# Loaded but not used, the module is inert: with load_module and no
# location that checks tokens, answers getEsTaskStatus or serves metrics,
# nginx opens no connection nginx alone would not open, no timer of the
# module's fires and the error log, debug lines included, has no line of
# the module's.  Redis is reached only where a location checks tokens, and
# a server without checks beside one with them is served exactly as nginx
# without the module serves it.
#
# What the workers do is watched with strace, attached to the master and
# its workers (-f) before a reload, so that the new workers run under it
# from their start: every connect() they make, and every epoll_wait() that
# ends with no event, which is a timer firing (an idle nginx worker without
# timers waits with no timeout at all).  The default Redis address
# (127.0.0.1:6379) cannot be pointed at a test's port, and whether anything
# listens there is the machine's business: strace sees the attempt either
# way.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use GmsTest;
use GmsTest::Nginx;
use GmsTest::Stub;
use GmsTest::Edge;

GmsTest::need_module();
GmsTest::need_redis();
GmsTest::skip_all('strace not found in PATH (make deps installs it)')
    unless GmsTest::in_path('strace');


# Runs $traffic with the workers of $n traced, then one more second for a
# timer to fire; returns the addresses connected to, how many waits a
# timer ended, and the trace.
sub traced {
    my ($n, $traffic) = @_;

    my $trace = $n->dir . '/strace.log';
    my @pids = ($n->master_pid, $n->worker_pids);

    my $strace = GmsTest::spawn(['strace', '-f', '-qq',
                                 '-e', 'trace=connect,epoll_wait',
                                 '-o', $trace, map { ('-p', $_) } @pids],
                                $n->dir . '/strace.out');

    GmsTest::wait_until(sub {
        !grep { GmsTest::slurp("/proc/$_/status") !~ /^TracerPid:\s*[1-9]/m }
             @pids
    }, 5) or die 'strace could not attach: '
                 . GmsTest::slurp($n->dir . '/strace.out');

    # new workers, born under the trace: their init_process is seen too
    $n->reload;

    $traffic->();
    sleep 1;

    kill 'INT', $strace;
    waitpid $strace, 0;

    my $text = GmsTest::slurp($trace);
    my %to;

    while ($text =~ /connect\(\d+, \{(.*?)\}, \d+\)/g) {
        my $sa = $1;
        my $addr = $sa =~ /sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)/
                   ? "$2:$1"
                   : $sa =~ /sin6_port=htons\((\d+)\).*"([0-9a-f:]+)"/
                   ? "[$2]:$1"
                   : $sa =~ /sun_path="([^"]*)"/ ? "unix:$1" : $sa;

        # the master's user lookup on reload, where nscd or systemd's
        # userdb answers it
        next if $addr =~ m{^unix:(?:/var)?/run/(?:nscd|systemd)/};

        $to{$addr}++;
    }

    my $timers = () = $text =~ /epoll_wait(?:\(| resumed>).*\) = 0$/mg;

    return { to => [sort keys %to], timers => $timers, text => $text };
}

# The error log's lines of the module's: its own start with "gms"; the
# test's directories, named gms-test-*, are left out first.
sub gms_lines {
    my ($n) = @_;
    my $dir = $n->dir;
    return grep { /\bgms\b/ } map { s/\Q$dir\E\S*//gr
                                    =~ s{/\S*gms-test-\S*}{}gr }
                  split /\n/, $n->error_log;
}

# Requests a client may send to any server: a bearer token, a session
# cookie, a getEsTaskStatus, a body; the answer bodies are what nginx sent
# upstream, as the echo stand-in reflects it.
my @REQUESTS = (
    [GET => '/entities/x', { Authorization => 'Bearer t0ken-one' }],
    [GET => '/r', { Authorization => 'Bearer t0ken-one' }],
    [POST => '/operations?action=getEsTaskStatus',
     { Authorization => 'Bearer t0ken-two',
       'Content-Type' => 'application/json' }, '{"task":"n1:7"}'],
    [GET => '/openapi/operations/elasticSearch/getTaskStatus?task=n1:7',
     { Cookie => 'PLAY_SESSION=abc; actor=urn:li:corpuser:x' }],
    [POST => '/api/graphql', { 'Content-Type' => 'application/json',
                               'X-DataHub-Actor' => 'urn:li:corpuser:y' },
     '{"query":"{ me { corpUser { urn } } }"}'],
    [GET => '/r'],
);

sub send_all {
    my ($n, %headers) = @_;
    my @got;
    for my $r (@REQUESTS) {
        my ($method, $target, $h, $body) = @$r;
        my $res = $n->http($method, $target, { %{ $h // {} }, %headers },
                           $body);
        push @got, [$res->{status} // 'none', $res->{body} // ''];
    }
    return \@got;
}


# --- load_module, and no gms_* directive ------------------------------------

subtest 'load_module alone: no connection, no timer, no log line' => sub {
    my $gms = GmsTest::Stub->echo;
    my $n = GmsTest::Nginx->new(log_level => 'debug', workers => 2);

    $n->start(<<'CONF', vars => { GMS => $gms->port });
    server {
        listen 127.0.0.1:%%PORT%%;
        location / { proxy_pass http://127.0.0.1:%%GMS%%; }
        location /r { return 200 "ok\n"; }
    }
CONF

    my @answers;
    my $t = traced($n, sub {
        for (1 .. 4) {
            push @answers, @{ send_all($n) };
            sleep 0.5;
        }
    });

    is_deeply([grep { $_->[0] ne '200' } @answers], [],
              'every request answered 200, by the stand-in or by return');
    ok(grep({ $_ eq '127.0.0.1:' . $gms->port } @{ $t->{to} }),
       'the trace sees the workers connect upstream');
    is_deeply($t->{to}, ['127.0.0.1:' . $gms->port],
              'and to nothing else: no Redis, at 6379 or anywhere');
    is($t->{timers}, 0, 'no timer fired in any worker');

    $n->stop;
    is_deeply([gms_lines($n)], [],
              'the error log (debug) has no line of the module\'s');
    is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');
};


# --- metrics and getEsTaskStatus, no checks: Redis named, never reached -----

subtest 'metrics and getEsTaskStatus without checks: Redis not reached' => sub {
    my $redis = GmsTest::Redis->start;
    my $gms = GmsTest::Stub->echo;
    my $running = GmsTest::slurp(
        't/fixtures/search-cluster/running-reindex-es6.json');
    my $search = GmsTest::Stub->start(handler => sub {
        return [200, ['Content-Type' => 'application/json'], $running];
    });
    my $n = GmsTest::Nginx->new(log_level => 'debug', workers => 2);

    my %vars = (GMS => $gms->port, SEARCH => $search->port,
                REDIS => $redis->port);

    $n->start(<<'CONF', vars => \%vars);
    gms_token_redis 127.0.0.1:%%REDIS%%;
    gms_token_cache zone=gms_tokens:1m;
    server {
        listen 127.0.0.1:%%PORT%%;
        location / {
            gms_es_task_status /_es_tasks/;
            proxy_pass http://127.0.0.1:%%GMS%%;
        }
        location /_es_tasks/ {
            internal;
            proxy_pass http://127.0.0.1:%%SEARCH%%/_tasks/;
        }
        location = /metrics { gms_token_metrics; }
    }
CONF

    my ($task, $metrics);
    my $t = traced($n, sub {
        for (1 .. 4) {
            $task = $n->http(POST => '/operations?action=getEsTaskStatus',
                             { 'Content-Type' => 'application/json' },
                             '{"task":"n1:7"}');
            $metrics = $n->http(GET => '/metrics');
            send_all($n);
            sleep 0.5;
        }
    });

    is($task->{status}, 200, 'getEsTaskStatus answered at the edge');
    like($task->{body}, qr/HI4YEIRMRuSdwsE4bCK7Bg:192/, 'with the task');
    is($metrics->{status}, 200, 'the metrics served');
    like($metrics->{body}, qr/^gms_es_task_requests_total\{outcome="status"\} [1-9]/m,
         'counting the task status');

    is_deeply([grep { /:\Q@{[ $redis->port ]}\E$/ } @{ $t->{to} }], [],
              'no connection to the Redis the configuration names');
    is_deeply([sort @{ $t->{to} }],
              [sort map { '127.0.0.1:' . $_->port } $gms, $search],
              'only to GMS and the search cluster');
    like($redis->cmd(CLIENT => 'LIST'), qr/\A[^\n]*\n?\z/,
         'Redis has no client but the test');
    is($t->{timers}, 0, 'no timer fired in any worker');

    $n->stop;
    is_deeply([grep { /\[(?!debug)\w+\]/ } gms_lines($n)], [],
              'no line of the module\'s above debug');
    is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');
};


# --- a server that checks beside one that does not --------------------------

my $TWO_SERVERS = <<'CONF';
    gms_token_redis 127.0.0.1:%%REDIS%%;
    gms_token_redis_timeout %%TIMEOUT%%;
    gms_token_key_prefix %%PREFIX%%;
    %%SALT%%

    server {
        listen 127.0.0.1:%%PORT%%;
        server_name checked;
        gms_token_auth on;
        location / { proxy_pass http://127.0.0.1:%%GMS%%; }
    }

%%PLAIN%%
CONF

# the server without checks, as nginx without the module runs it too
my $PLAIN = <<'CONF';
    server {
        listen 127.0.0.1:%%PORT%%;
        server_name plain;
        location / { proxy_pass http://127.0.0.1:%%GMS%%; }
        location /r { return 200 "ok\n"; }
    }
CONF

subtest 'a server with checks beside one without' => sub {
    my $e = GmsTest::Edge->start(conf => $TWO_SERVERS =~ s/%%PLAIN%%/$PLAIN/r);
    my $n = $e->nginx;
    my $redis = $e->redis;
    $e->token('t0ken-one', actor => 'urn:li:corpuser:alice');

    my $plain = GmsTest::Nginx->new(log_level => 'debug', no_module => 1);
    $plain->start($PLAIN, vars => { GMS => $e->gms->port });

    my $with = send_all($n, Host => 'plain');
    my $without = send_all($plain, Host => 'plain');
    is_deeply($with, $without,
              'the plain server: what reaches GMS, and the answers, as '
              . 'without the module');

    sleep 2;
    my @clients = grep { !/cmd=client\|list/ } split /\n/,
                  $redis->cmd(CLIENT => 'LIST');
    is_deeply(\@clients, [], 'no token checked yet: Redis not reached');

    my $res = $n->http(GET => '/entities/x', { Host => 'checked' });
    is($res->{status}, 401, 'the checked server: no token, 401');
    $res = $n->http(GET => '/entities/x', { Host => 'checked',
                                            Authorization => 'Bearer nope' });
    is($res->{status}, 401, 'an unknown token, 401');
    $res = $n->http(GET => '/entities/x',
                    { Host => 'checked', Authorization => 'Bearer t0ken-one' });
    is($res->{status}, 200, 'the seeded token, 200');
    ok($e->lookups >= 1, 'looked up in Redis');

    is_deeply(send_all($n, Host => 'plain'), $without,
              'the plain server still as without the module');

    $plain->stop;
    is_deeply([$plain->bad_log_lines], [], 'no alerts in plain nginx');
    $n->stop;
    is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');
};

done_testing();

#!/usr/bin/perl

# The Redis client traceable at error_log debug, credentials never in it:
#
#   - Sentinel with replica=prefer and password=: each discovery answer
#     (the master named, a usable replica), each connection reaching
#     ready and its ROLE, the lookup's flight (created, answered, the
#     request woken) and where the lookup went, each naming the peer;
#   - a request joining another's flight, and the flight's deadline;
#   - Redis Cluster: the slot map's answer, an ASK and a MOVED followed,
#     and the new master, naming the nodes;
#   - neither the password nor the bearer token in any line.

use strict;
use warnings;

use POSIX ();
use Test::More;

use GmsTest;
use GmsTest::Checks qw(status no_crash);
use GmsTest::FakeRedis;
use GmsTest::Nginx;
use GmsTest::Sentinel;

GmsTest::need_module();

my $password = 'pw-d3bug-never-logged';
my $token = 'token-d3bug-never-logged';
my $ip = qr/127\.0\.0\.1/;

# nginx at error_log debug, the http-level $conf, one worker; lookups
# time out after $timeout (500ms)
sub edge {
    my ($conf, $timeout) = @_;
    $timeout //= '500ms';
    my $n = GmsTest::Nginx->new(log_level => 'debug');
    GmsTest::write_file($n->dir . '/ok', "ok\n");
    $n->start(<<"CONF");
    $conf
    gms_token_redis_timeout $timeout;
    gms_token_salt "";

    server {
        listen 127.0.0.1:%%PORT%%;
        gms_token_auth on;
        location / { root %%TESTDIR%%; }
    }
CONF
    return $n;
}

# every expected line is in the log; neither secret is
sub traced {
    my ($n, @expect) = @_;
    my $log = $n->error_log;
    my $missed = 0;
    for my $e (@expect) {
        ok($log =~ $e->[0], $e->[1]) or $missed++;
    }
    diag join "\n", grep { /gms: / } split /\n/, $log if $missed;
    ok($log !~ /\Q$password\E/, 'the password is in no line');
    ok($log !~ /\Q$token\E/, 'the token is in no line');
}


subtest 'Sentinel, replica=prefer: discovery, connections, flights' => sub {
    my $m = GmsTest::FakeRedis->start;
    my $r = GmsTest::FakeRedis->start(on => {
        ROLE => "*5\r\n\$5\r\nslave\r\n\$9\r\n127.0.0.1\r\n:6379\r\n"
                . "\$9\r\nconnected\r\n:1000000000000\r\n",
    });
    my ($mp, $rp) = ($m->port, $r->port);
    my $s = GmsTest::Sentinel->fake(master => $mp, replicas => [$rp]);
    my $name = quotemeta $s->name;

    my $n = edge("gms_token_redis_sentinel @{[ $s->addresses ]} "
                 . "master=@{[ $s->name ]} replica=prefer "
                 . "password=$password;");

    ok(GmsTest::wait_until(sub {
           status($n, $token) == 401
           && $n->error_log =~ /replica lookup connection to \S+:$rp ready/
       }, 10), 'a lookup answered; the replica connected');

    traced($n,
        [qr/gms: sentinel at $ip:\d+: master "$name" is at $ip:$mp/,
         'the Sentinel named the master'],
        [qr/gms: sentinel at $ip:\d+: a usable replica at $ip:$rp/,
         'and the replica'],
        [qr/gms: Sentinels: the master is at $ip:$mp/,
         'the lookups follow the master'],
        [qr/gms: redis lookup connection to $ip:$mp: connected, \d+ setup/,
         'the master connection: connected'],
        [qr/gms: redis lookup connection to $ip:$mp ready/,
         'the master connection: ready'],
        [qr/gms: redis lookup at $ip:$mp: ROLE "master"/,
         "the master's ROLE"],
        [qr/gms: redis replica lookup at $ip:$rp: ROLE "slave"/,
         "the replica's ROLE"],
        [qr/gms: token id "[^"]+": a new flight, deadline 500 ms/,
         'the flight created'],
        [qr/gms: redis lookup of "[^"]+" to $ip:$mp/,
         'the lookup sent to the master'],
        [qr/gms: token id "[^"]+": flight answered, waking its requests/,
         'the flight answered'],
        [qr/gms: token id "[^"]+": the request wakes/, 'the request woken']);
    no_crash($n);
};


subtest 'a flight joined, its deadline passed' => sub {
    # a server that answers a lookup too late
    my $slow = GmsTest::FakeRedis->start(on => {
        EVALSHA => sub { select(undef, undef, undef, 4); undef },
    });
    my $n = edge("gms_token_redis 127.0.0.1:@{[ $slow->port ]};", '2s');

    # two requests for one token at once: the second joins the first's
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        status($n, $token);
        POSIX::_exit(0);
    }
    select(undef, undef, undef, 0.2);
    is(status($n, $token), 503, 'past the deadline: 503');
    waitpid $pid, 0;

    traced($n,
        [qr/gms: token id "[^"]+": joined its flight/,
         'the second request joined the flight'],
        [qr/gms: token id "[^"]+": the lookup's deadline passed/,
         'the deadline passed'],
        [qr/gms: redis lookup connection to $ip:\d+ closed, backoff \d+ ms/,
         'the late connection closed, its backoff']);
    no_crash($n);
};


subtest 'Redis Cluster: the map, ASK and MOVED followed' => sub {
    my $dir = GmsTest::tempdir();
    my $mode = "$dir/mode";

    my $other = GmsTest::FakeRedis->start(on => { ASKING => "+OK\r\n" });
    my $op = $other->port;

    # the slot's node: redirects as $mode says, to $other
    my $node = GmsTest::FakeRedis->start(on => {
        EVALSHA => sub {
            my $r = GmsTest::slurp($mode);
            return length $r ? $r : undef;
        },
    });
    my $np = $node->port;

    # the seed, old enough for CLUSTER SLOTS: every slot is $node's
    my $seed = GmsTest::FakeRedis->start(on => { CLUSTER => sub {
        my ($conn, @cmd) = @_;
        return "-ERR unknown subcommand 'shards'. Try CLUSTER HELP.\r\n"
            if uc($cmd[1] // '') eq 'SHARDS';
        return "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n\$9\r\n127.0.0.1\r\n"
             . ":$np\r\n\$2\r\nid\r\n";
    } });
    my $sp = $seed->port;

    GmsTest::write_file($mode, "-ASK 11641 127.0.0.1:$op\r\n");
    my $n = edge("gms_token_redis_cluster 127.0.0.1:$sp "
                 . "password=$password;");

    ok(GmsTest::wait_until(sub { status($n, $token) == 401 }, 10),
       'ASK: the node asked answers (401: no such token)');

    GmsTest::write_file($mode, "-MOVED 11641 127.0.0.1:$op\r\n");
    is(status($n, $token), 401, 'MOVED: the node named answers');

    traced($n,
        [qr/gms: cluster: $ip:${sp}'s map: slot 11641's master is at $ip:$np/,
         "the map's answer"],
        [qr/gms: cluster: $ip:$np redirected a lookup: ASK 11641 $ip:$op/,
         'the ASK'],
        [qr/gms: redis redirected lookup connection to $ip:$op ready/,
         "the ASK's connection"],
        [qr/gms: cluster: $ip:$np redirected a lookup: MOVED 11641 $ip:$op/,
         'the MOVED'],
        [qr/gms: cluster: the master is at $ip:$op/,
         'the lookups follow the new master'],
        [qr/gms: redis lookup of "[^"]+" again, to $ip:$op/,
         'the lookup sent again']);
    no_crash($n);
};

done_testing();

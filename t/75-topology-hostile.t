#!/usr/bin/perl

# Topology replies as src/lib/gms_topology.c reads them for both the edge
# and gms-token: a cluster map whose other shards or ranges are hostile
# (two ranges that overlap, a range past slot 16383, a node's port past
# 65535) is refused whole, though the slot's own shard is well formed: the
# edge answers 503 and logs the reason, gms-token --redis-cluster exits 3
# saying it; the same map without them serves (401: no such token, exit
# 1).  Both the edge and gms-token --sentinel refuse a master whose ROLE
# is not of the documented shape.

use strict;
use warnings;

use Test::More;

use GmsTest;
use GmsTest::Checks qw(status no_crash);
use GmsTest::FakeRedis;
use GmsTest::Nginx;
use GmsTest::Tool qw(run_tool datahub_id);

GmsTest::need_module();
GmsTest::Tool::need_tool();

# the slot's master: a FakeRedis, which knows no token
my $node = GmsTest::FakeRedis->start;
my $np = $node->port;

sub bulk { return join '', map { '$' . length($_) . "\r\n$_\r\n" } @_ }

# a shard of CLUSTER SHARDS: slots from..to, one master at 127.0.0.1:port
sub shard {
    my ($from, $to, $port) = @_;
    return "*4\r\n" . bulk('slots') . "*2\r\n:$from\r\n:$to\r\n"
         . bulk('nodes') . "*1\r\n*10\r\n" . bulk('port') . ":$port\r\n"
         . bulk('ip', '127.0.0.1', 'endpoint', '127.0.0.1', 'role', 'master',
                'health', 'online');
}

# a range of CLUSTER SLOTS
sub range {
    my ($from, $to, $port) = @_;
    return "*3\r\n:$from\r\n:$to\r\n*3\r\n" . bulk('127.0.0.1')
         . ":$port\r\n" . bulk('id');
}

# name => [CLUSTER SHARDS's answer, CLUSTER SLOTS's (undef: SHARDS known),
#          the reason a refusal gives]
my %maps = (
    'a good map'        => ["*2\r\n" . shard(0, 8000, $np)
                            . shard(8001, 16383, $np)],
    'overlapping ranges' => ["*2\r\n" . shard(0, 16383, $np)
                             . shard(100, 200, 1),
                             undef, 'two slot ranges overlap'],
    'a range past 16383' => ["*2\r\n" . shard(0, 16383, $np)
                             . shard(16384, 20000, 1),
                             undef, 'a slot range is not within 0-16383'],
    'SLOTS: a good map' => [undef, "*1\r\n" . range(0, 16383, $np)],
    'SLOTS: overlapping ranges' => [undef, "*2\r\n" . range(0, 16383, $np)
                                    . range(5, 5, 1),
                                    'two slot ranges overlap'],
);
# the slot's shard with a replica at port 70000
$maps{'a port past 65535'} = [
    "*1\r\n*4\r\n" . bulk('slots') . "*2\r\n:0\r\n:16383\r\n" . bulk('nodes')
    . "*2\r\n" . join('', map {
        "*10\r\n" . bulk('port') . ":$_->[0]\r\n"
        . bulk('ip', '127.0.0.1', 'endpoint', '127.0.0.1', 'role', $_->[1],
               'health', 'online') } [$np, 'master'], [70000, 'replica']),
    undef, "a node's port is not a port"];

# a seed answering CLUSTER as the map says
sub seed {
    my ($map) = @_;
    my ($shards, $slots) = @$map;
    return GmsTest::FakeRedis->start(on => { CLUSTER => sub {
        my ($conn, @cmd) = @_;
        return uc($cmd[1] // '') eq 'SLOTS' ? $slots
             : $shards // "-ERR unknown subcommand 'shards'. Try CLUSTER "
                          . "HELP.\r\n";
    } });
}

for my $name (sort keys %maps) {
    my ($shards, $slots, $why) = @{ $maps{$name} };
    my $cmd = defined $shards ? 'CLUSTER SHARDS' : 'CLUSTER SLOTS';
    my $seed = seed($maps{$name});

    subtest "the edge: $name" => sub {
        my $n = GmsTest::Nginx->new(log_level => 'info');
        GmsTest::write_file($n->dir . '/ok', "ok\n");
        $n->start(<<"CONF");
    gms_token_redis_cluster 127.0.0.1:@{[ $seed->port ]};
    gms_token_redis_timeout 500ms;
    gms_token_salt "";

    server {
        listen 127.0.0.1:%%PORT%%;
        gms_token_auth on;
        location / { root %%TESTDIR%%; }
    }
CONF

        if (!defined $why) {
            ok(GmsTest::wait_until(sub { status($n, 'token-x') == 401 }, 10),
               '401 through the slot\'s master');
            no_crash($n);
            return;
        }

        ok(GmsTest::wait_until(sub {
            $n->error_log =~ /\Q$cmd\E refused: \Q$why\E/ }, 10),
           "refused, the reason logged: $why")
            or diag(join "\n", grep { /gms/ } split /\n/, $n->error_log);
        is(status($n, 'token-x'), 503, 'no map: 503');
        no_crash($n);
    };

    subtest "gms-token: $name" => sub {
        my $res = run_tool(undef, 'show', datahub_id('x'),
                           '--redis-cluster', '127.0.0.1:' . $seed->port);

        if (!defined $why) {
            is($res->{rc}, 1, 'exit 1: no such token, from the slot\'s master')
                or diag($res->{err});
            return;
        }

        is($res->{rc}, 3, 'exit 3');
        like($res->{err}, qr/\Q$cmd\E: unexpected reply \(\Q$why\E\)/,
             "the reason said: $why") or diag($res->{err});
    };

    $seed->stop;
}

subtest 'gms-token --sentinel: a master\'s ROLE of another shape' => sub {
    for my $case (["*1\r\n" . bulk('master'), 'ROLE: [master] alone'],
                  ["*3\r\n" . bulk('master') . ":0\r\n*1\r\n:5\r\n",
                   'ROLE: a replica not [host, port, offset]']) {
        my ($role, $name) = @$case;
        my $master = GmsTest::FakeRedis->start(on => { ROLE => $role });
        my $sentinel = GmsTest::FakeRedis->start(on => {
            SENTINEL => sub { "*2\r\n" . bulk('127.0.0.1', $master->port) } });

        my $res = run_tool(undef, 'show', datahub_id('x'), '--sentinel',
                           '127.0.0.1:' . $sentinel->port, '--master', 'gms');
        is($res->{rc}, 3, "$name: exit 3");
        like($res->{err}, qr/named 127\.0\.0\.1:\d+, whose ROLE is not (?x:
                            )understood/, "$name: refused, said")
            or diag($res->{err});

        $_->stop for $master, $sentinel;
    }

    my $master = GmsTest::FakeRedis->start;
    my $sentinel = GmsTest::FakeRedis->start(on => {
        SENTINEL => sub { "*2\r\n" . bulk('127.0.0.1', $master->port) } });
    my $res = run_tool(undef, 'show', datahub_id('x'), '--sentinel',
                       '127.0.0.1:' . $sentinel->port, '--master', 'gms');
    is($res->{rc}, 1, 'a master\'s ROLE as Redis answers it: served (exit 1, '
                      . 'no such token)') or diag($res->{err});
};

subtest 'the edge through Sentinel: a master\'s ROLE of another shape' => sub {
    for my $case (["*1\r\n" . bulk('master'), 'ROLE: [master] alone', 503],
                  ["*3\r\n" . bulk("master", "0") . "*0\r\n",
                   "ROLE: an offset that is a string", 503],
                  [undef, 'ROLE as Redis answers it', 401]) {
        my ($role, $name, $want) = @$case;
        my $master = GmsTest::FakeRedis->start(
            $role ? (on => { ROLE => $role }) : ());
        my $sentinel = GmsTest::FakeRedis->start(on => {
            SENTINEL => sub { "*2\r\n" . bulk('127.0.0.1', $master->port) } });

        my $n = GmsTest::Nginx->new(log_level => 'debug');
        GmsTest::write_file($n->dir . '/ok', "ok\n");
        $n->start(<<"CONF");
    gms_token_redis_sentinel 127.0.0.1:@{[ $sentinel->port ]} master=gms;
    gms_token_redis_timeout 500ms;
    gms_token_salt "";

    server {
        listen 127.0.0.1:%%PORT%%;
        gms_token_auth on;
        location / { root %%TESTDIR%%; }
    }
CONF

        if ($want == 401) {
            ok(GmsTest::wait_until(sub { status($n, 'token-x') == 401 }, 10),
               "$name: 401 through the master");
        } else {
            # the master is connected to when a lookup needs it
            is(status($n, 'token-x'), 503, "$name: 503");
            ok(GmsTest::wait_until(sub {
                $n->error_log =~ /ROLE refused: .*\n(?s:.*)is not a master (?x:
                                  )\(ROLE\)/ }, 10),
               "$name: refused, said") or diag(join "\n", grep { /gms/ }
                                                split /\n/, $n->error_log);
        }
        no_crash($n);
        $n->stop;

        $_->stop for $master, $sentinel;
    }
};

done_testing();

#!/usr/bin/perl

# Redis Cluster (issue 27): a real cluster of six nodes (three masters,
# three replicas) on loopback, plain (with an ACL user: user=) and over
# TLS with a password (password_file=).
#
#   - gms_token_redis_cluster finds the slot of the prefix's hash tag
#     ({gms}: by default) in CLUSTER SHARDS: 200 and 401 through it;
#   - a prefix without a hash tag is refused by nginx -t;
#   - the slot migrated under a steady request loop: ASK counted while the
#     migration is held, MOVED once it ends, and nothing but 200 for the
#     valid tokens and 401 for unknown ones meanwhile;
#   - the slot's master killed: 503 only until the map names the replica
#     that took over, then 200 again, without a reload;
#   - the slot without a live node (cluster-require-full-coverage):
#     CLUSTERDOWN, 503;
#   - invalidation published on any node drops a cached entry, and again
#     after the subscribed node was killed;
#   - nodes announced by host name (cluster-preferred-endpoint-type
#     hostname) are resolved by nginx's resolver, and a migration's ASK
#     and MOVED to host names are followed too;
#   - gms_redis_node_up shows where the worker's connections go;
#   - CLUSTER SLOTS when a node does not know CLUSTER SHARDS (before Redis
#     7), and hostile nodes (a malformed map, MOVED/ASK that cannot be
#     followed, CLUSTERDOWN, TRYAGAIN): 503, never a crash.

use strict;
use warnings;

use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Certs;
use GmsTest::Edge;
use GmsTest::Checks qw(status metric no_crash request_rows);
use GmsTest::Cluster;
use GmsTest::DNS;
use GmsTest::FakeRedis;
use GmsTest::JWT;

GmsTest::need_module();
GmsTest::need_redis();

# A labelled series' value on /metrics
sub labelled {
    my ($n, $name, $labels) = @_;
    my $text = $n->http(GET => '/metrics')->{body} // '';
    return $text =~ /^\Q$name\E\{\Q$labels\E\} (\S+)$/m ? $1 : undef;
}

# After a migration's end the edge learns the slot's new master from a
# MOVED, or from the map when a refresh (every 5 s, or one an ASK asked
# for) comes first: finish_migration tells the new master before the old
# one, as Redis's docs say, and a map read from it already names it.
# Waits until either is seen; returns which.
sub moved_or_refreshed {
    my ($n, $moved, $refreshes) = @_;
    my $how = '';
    GmsTest::wait_until(sub {
        $how = 'a MOVED'
            if (labelled($n, 'gms_redis_cluster_redirections_total',
                         'kind="moved"') // 0) > $moved;
        $how ||= 'the map'
            if metric($n, 'gms_redis_cluster_map_refreshes_total')
               > $refreshes;
        return $how;
    }, 10);
    return $how;
}

# gms_redis_node_up's samples for a role: { "host:port" => 0|1 }
sub nodes {
    my ($n, $role) = @_;
    my $text = $n->http(GET => '/metrics')->{body} // '';
    my %up;
    for my $line (split /\n/, $text) {
        $up{$1} = $2 if $line =~ /^gms_redis_node_up\{worker="\d+",
                                  role="\Q$role\E",node="([^"]+)"\}\ (\d)$/x;
    }
    return \%up;
}

sub ready {
    my ($n, $token) = @_;
    return GmsTest::wait_until(sub { status($n, $token) == 200 }, 10);
}

# The answers of a loop that were not what the token deserves
sub wrong {
    my ($seen, $valid) = @_;
    return grep { $_->[2] != ($_->[1] eq $valid ? 200 : 401) } @$seen;
}

my $slot;


subtest 'a prefix without a hash tag: nginx -t refuses it' => sub {
    my ($rc, $out) = GmsTest::nginx_t(<<'CONF');
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events {}
http {
    gms_token_redis_cluster 127.0.0.1:7000;
    gms_token_key_prefix gms:;
    gms_token_salt "";
}
CONF
    isnt($rc, 0, 'nginx -t fails');
    like($out, qr/has no hash tag.*"\{gms\}:"/, 'saying why, and what to use');

    ($rc, $out) = GmsTest::nginx_t(<<'CONF');
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events {}
http {
    gms_token_redis_cluster 127.0.0.1:7000;
    gms_token_key_prefix "{}gms:";
    gms_token_salt "";
}
CONF
    isnt($rc, 0, 'an empty tag: nginx -t fails');

    ($rc, $out) = GmsTest::nginx_t(<<'CONF');
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events {}
http {
    gms_token_redis_cluster 127.0.0.1:7000 127.0.0.1:7001;
    gms_token_key_prefix "{edge}:gms:";
    gms_token_salt "";
}
CONF
    is($rc, 0, 'a tagged prefix: ok') or diag $out;

    ($rc, $out) = GmsTest::nginx_t(<<'CONF');
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events {}
http {
    gms_token_redis 127.0.0.1:6379;
    gms_token_redis_cluster 127.0.0.1:7000;
    gms_token_salt "";
}
CONF
    like($out, qr/cannot be used with "gms_token_redis"/,
         'exclusive with gms_token_redis');
};


subtest 'CLUSTER SLOTS before Redis 7; hostile nodes' => sub {
    my $dir = GmsTest::tempdir();
    my $mode = "$dir/mode";
    GmsTest::write_file($mode, '');

    # the slot's "master": EVALSHA answered as $mode says (nil: no token)
    my $node = GmsTest::FakeRedis->start(on => {
        EVALSHA => sub { my $r = GmsTest::slurp($mode); length $r ? $r : undef },
    });
    my $np = $node->port;

    # a node of an old cluster: no SHARDS, SLOTS names $node for every slot
    my $old = GmsTest::FakeRedis->start(on => { CLUSTER => sub {
        my ($conn, @cmd) = @_;
        return "-ERR unknown subcommand 'shards'. Try CLUSTER HELP.\r\n"
            if uc($cmd[1] // '') eq 'SHARDS';
        return "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n\$9\r\n127.0.0.1\r\n"
             . ":$np\r\n\$2\r\nid\r\n";
    } });

    my $n = GmsTest::Edge->topology(cluster => [ $old->address ]);

    ok(GmsTest::wait_until(sub { status($n, 'token-x') == 401 }, 10),
       'CLUSTER SLOTS: the node it names answers (401: no such token)');
    like($n->error_log, qr/does not know CLUSTER SHARDS.*CLUSTER SLOTS/,
         'the fallback logged');

    for my $case (["-MOVED 16384 127.0.0.1:$np\r\n", 'MOVED to slot 16384'],
                  ["-MOVED 1 127.0.0.1:$np\r\n", 'MOVED for another slot'],
                  ["-MOVED 11641 127.0.0.1:0\r\n", 'MOVED to port 0'],
                  ["-MOVED 11641 \x01bad:1\r\n", 'MOVED to a control byte'],
                  ["-ASK 11641 127.0.0.1:$np\r\n", 'ASK, again and again'],
                  ["-MOVED 11641 127.0.0.1:$np\r\n", 'MOVED, again and again'],
                  ["-CLUSTERDOWN The cluster is down\r\n", 'CLUSTERDOWN'],
                  ["-TRYAGAIN Multiple keys request during rehashing\r\n",
                   'TRYAGAIN']) {
        GmsTest::write_file($mode, $case->[0]);
        is(status($n, 'token-x'), 503, "$case->[1]: 503");
    }
    cmp_ok(metric($n, 'gms_redis_cluster_errors_total'), '>=', 2,
           'CLUSTERDOWN and TRYAGAIN counted');
    no_crash($n);

    # seeds whose maps are not maps
    my @bad = map { my $r = $_; GmsTest::FakeRedis->start(on => {
        CLUSTER => sub { $r } }) }
        ":5\r\n",
        "*1\r\n*2\r\n\$5\r\nslots\r\n\$3\r\nabc\r\n",
        "*1\r\n*4\r\n\$5\r\nslots\r\n*2\r\n:0\r\n\$1\r\nx\r\n"
            . "\$5\r\nnodes\r\n*0\r\n",
        "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
        GmsTest::FakeRedis::HUGE_ARRAY,
        "*1\r\n*4\r\n\$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n"
            . "\$5\r\nnodes\r\n*1\r\n*4\r\n\$4\r\nport\r\n:70000\r\n"
            . "\$2\r\nip\r\n\$9\r\n127.0.0.1\r\n";

    $n = GmsTest::Edge->topology(cluster => [ map { $_->address } @bad ]);
    ok(GmsTest::wait_until(sub {
        (metric($n, 'gms_redis_cluster_map_refreshes_total') // 0)
        >= scalar @bad }, 15), 'every seed asked');
    is(status($n, 'token-x'), 503, 'no usable map: 503');
    cmp_ok(metric($n, 'gms_redis_protocol_errors_total'), '>=', 3,
           'malformed maps are protocol errors');
    no_crash($n);
};


my $c = GmsTest::Cluster->start;
$slot = $c->slot('{gms}:token:x');
GmsTest::Edge::seed($c, "token-$_") for 1 .. 5;

subtest 'lookups through the cluster, {gms}: by default' => sub {
    my $n = GmsTest::Edge->topology(cluster => $c,
        http => 'gms_token_cache zone=tokens:1m ttl=300s;');

    ok(ready($n, "token-1"), "a token: 200 once the map is known")
        or diag join "\n", grep { /gms/ } split /\n/, $n->error_log;
    is(status($n, 'token-2'), 200, 'another: 200');
    is(status($n, 'nope'), 401, 'an unknown one: 401');

    my $master = $c->master_of($slot);
    is_deeply(nodes($n, "lookup"), { $master->address => 1 },
              'the lookups go to the slot\'s master');
    ok(GmsTest::wait_until(sub {
        (nodes($n, 'subscription')->{ $master->address } // 0) == 1 }, 5),
       'the subscription sits on it too');
    cmp_ok(metric($n, 'gms_redis_cluster_map_refreshes_total'), '>=', 1,
           'the map was asked for');

    # invalidation: published on a node that is not the subscribed one
    is(status($n, 'token-3'), 200, 'token-3 cached');
    $c->cmd(DEL => '{gms}:token:' . GmsTest::sha256_b64('token-3'));
    is(status($n, 'token-3'), 200, 'deleted without a message: cached');
    my ($other) = grep { $_ != $master } $c->nodes;
    $other->cmd(PUBLISH => '{gms}:invalidate',
                GmsTest::sha256_b64('token-3'));
    ok(GmsTest::wait_until(sub { status($n, 'token-3') == 401 }, 5),
       'published on another node: dropped, 401');
    GmsTest::Edge::seed($c, 'token-3');

    no_crash($n);

    # replica=prefer: the slot's master's replica, whose health is online
    $n = GmsTest::Edge->topology(cluster => $c, options => 'replica=prefer');
    my ($replica) = $c->replicas_of($master);
    ok(GmsTest::wait_until(sub {
        status($n, 'token-1') == 200
        && (nodes($n, 'replica')->{ $replica->address } // 0) == 1 }, 10),
       'replica=prefer: a connection to the slot\'s replica');
    is(status($n, 'nope'), 401, 'an unknown token: 401');
    ok($replica->cmd(INFO => 'commandstats') =~ /^cmdstat_evalsha_ro:calls=[1-9]/m,
       'lookups read on the replica (EVALSHA_RO)');
    is(labelled($n, 'gms_redis_cluster_redirections_total', 'kind="moved"'),
       0, 'READONLY sent: the replica does not redirect them');
    no_crash($n);

    # user=: AUTH user password, an ACL user on every node
    $_->cmd(ACL => 'SETUSER', 'edge', 'on', '>edge-pw', '~*', '&*', '+@all')
        for $c->nodes;
    $n = GmsTest::Edge->topology(cluster => $c,
        options => 'user=edge password=edge-pw');
    ok(ready($n, 'token-1'), 'user=edge password=...: 200');
    no_crash($n);
    $n = GmsTest::Edge->topology(cluster => $c,
        options => 'user=edge password=wrong');
    sleep 0.5;
    is(status($n, 'token-1'), 503, 'a wrong password for the user: 503');
    like($n->error_log, qr/WRONGPASS/, 'the refusal logged');
    no_crash($n);
};


# A session token's user: the lookup script with the user's key
# ({gms}:actor:<urn>, KEYS[1]) reads the set and {gms}:inactive on the
# slot's master, and with replica=prefer on its replica (EVALSHA_RO)
subtest "a session token's user through the cluster" => sub {
    my $key = 'c2Vzc2lvbi1rZXktNjA=';
    my $file = GmsTest::tempdir() . '/key';
    GmsTest::write_file($file, "$key\n");
    my $jwt = GmsTest::JWT::session($key, 'sam');
    my $sam = 'urn:li:corpuser:sam';
    $c->cmd(SADD => "{gms}:actor:$sam", 'MANAGE_ACCESS_TOKENS');

    my ($replica) = $c->replicas_of($c->master_of($slot));
    my $read_only = sub {
        my ($calls) = $replica->cmd(INFO => 'commandstats')
                      =~ /^cmdstat_evalsha_ro:calls=(\d+)/m;
        return $calls // 0;
    };
    my $before = $read_only->();

    for my $options ('', 'replica=prefer') {
        my $n = GmsTest::Edge->topology(cluster => $c, options => $options,
            http => "gms_token_signing_key_file $file;\n"
                    . 'gms_datahub_version 1.2.0;',
            server => 'gms_token_require_privilege MANAGE_ACCESS_TOKENS;');
        ok(ready($n, $jwt), "'$options': a privilege checked, the user's "
                            . 'set read: 200');

        # the master alone for a while after the subscription starts
        ok(GmsTest::wait_until(sub {
            status($n, $jwt) == 200 && $read_only->() > $before }, 15),
           "replica=prefer: the user's lookup on the replica (EVALSHA_RO)")
            if $options;
        # a replica applies the write a moment later: no cache, no wait
        $c->cmd(SADD => '{gms}:inactive', $sam);
        ok(GmsTest::wait_until(sub { status($n, $jwt) == 401 }, 5),
           "'$options': in {gms}:inactive: 401 (1.2.0)");
        $c->cmd(SREM => '{gms}:inactive', $sam);
        ok(GmsTest::wait_until(sub { status($n, $jwt) == 200 }, 5),
           "'$options': out of it: 200");
        no_crash($n);
    }
};


subtest 'the slot migrated under a request loop: ASK, then MOVED' => sub {
    my $n = GmsTest::Edge->topology(cluster => $c);
    ok(ready($n, 'token-1'), 'ready');

    my $from = $c->master_of($slot);
    my ($to) = grep { $_ != $from }
               grep { ($_->cmd(INFO => 'replication') // '') =~ /^role:master/m }
               $c->nodes;

    my $loop = request_rows($n->port, tokens => ['token-1', 'nope'],
                            pause => 0.02, seconds => 40);
    ok(GmsTest::wait_until(sub { $loop->{count}->() >= 10 }, 5),
       'the loop runs');

    $c->migrate($slot, $to, hold => 1);
    ok(GmsTest::wait_until(sub {
        (labelled($n, 'gms_redis_cluster_redirections_total', 'kind="ask"')
         // 0) >= 4 }, 10),
       'the slot held in migration: ASK followed');

    my $moved = labelled($n, 'gms_redis_cluster_redirections_total',
                         'kind="moved"') // 0;
    my $refreshes = metric($n, 'gms_redis_cluster_map_refreshes_total');
    $c->finish_migration($slot);
    is($c->master_of($slot)->port, $to->port, 'the slot has moved');
    my $how = moved_or_refreshed($n, $moved, $refreshes);
    ok($how, 'the migration done: MOVED followed, or the map read again'
             . ($how ? " ($how came first)" : ''));
    ok(GmsTest::wait_until(sub {
        (nodes($n, 'lookup')->{ $to->address } // 0) == 1 }, 10),
       'the lookups now go to the new master');

    my $count = $loop->{count}->();
    GmsTest::wait_until(sub { $loop->{count}->() >= $count + 10 }, 5);

    my $seen = $loop->{stop}->();
    my @wrong = wrong($seen, 'token-1');
    cmp_ok(scalar @$seen, '>=', 20, scalar(@$seen) . ' requests in the loop');
    is(scalar @wrong, 0, 'none answered other than 200 (valid) and 401 '
                         . '(unknown)')
        or diag explain [ @wrong[0 .. ($#wrong < 5 ? $#wrong : 5)] ];

    no_crash($n);
};


subtest 'the slot\'s master killed: 503 until the map is refreshed' => sub {
    my $n = GmsTest::Edge->topology(cluster => $c);
    my $cached = GmsTest::Edge->topology(cluster => $c,
        http => 'gms_token_cache zone=tokens:1m ttl=300s;');
    ok(ready($n, 'token-1') && ready($cached, 'token-1'), 'ready');

    my $master = $c->master_of($slot);
    ok(GmsTest::wait_until(sub {
        (nodes($cached, 'subscription')->{ $master->address } // 0) == 1 }, 5),
       'subscribed on the slot\'s master');

    my $loop = request_rows($n->port, tokens => ['token-1', 'nope'],
                            pause => 0.02, seconds => 40);
    ok(GmsTest::wait_until(sub { $loop->{count}->() >= 10 }, 5),
       'the loop runs');

    my $t0 = time;
    my $new = $c->kill_master_of($slot, 20);
    ok($new, 'a replica took over');

    ok(GmsTest::wait_until(sub { status($n, 'token-2') == 200 }, 15),
       'then 200 again, without a reload');
    my $count = $loop->{count}->();
    GmsTest::wait_until(sub { $loop->{count}->() >= $count + 10 }, 5);
    my $seen = $loop->{stop}->();

    my @other = grep { $_->[2] != 503 } wrong($seen, 'token-1');
    is(scalar @other, 0, 'nothing but 200, 401 and 503 meanwhile')
        or diag explain [ @other[0 .. ($#other < 5 ? $#other : 5)] ];
    my @tail = @$seen[-10 .. -1];
    is(scalar(wrong(\@tail, 'token-1')), 0, 'the last ten as they should be');
    my @failed = grep { $_->[2] == 503 } @$seen;
    diag sprintf '%d of %d answered 503, over %.1f s after the kill',
        scalar @failed, scalar @$seen,
        @failed ? $failed[-1][0] - $t0 : 0;

    is_deeply(nodes($n, 'lookup'), { $new->address => 1 },
              'gms_redis_node_up: the lookups on the new master');

    # the subscription followed: an invalidation published now arrives
    ok(GmsTest::wait_until(sub {
        (nodes($cached, 'subscription')->{ $new->address } // 0) == 1 }, 10),
       'resubscribed on the new master');
    is(status($cached, 'token-4'), 200, 'token-4 cached');
    $c->cmd(DEL => '{gms}:token:' . GmsTest::sha256_b64('token-4'));
    $c->cmd(PUBLISH => '{gms}:invalidate', GmsTest::sha256_b64('token-4'));
    ok(GmsTest::wait_until(sub { status($cached, 'token-4') == 401 }, 5),
       'an invalidation after the failover: 401');

    no_crash($n);
    no_crash($cached);
};


subtest 'nodes announced by host name, through nginx\'s resolver' => sub {
    my %names = map { ('node' . $_->port . '.test' => '127.0.0.1') } $c->nodes;
    my $dns = GmsTest::DNS->start(names => \%names);

    for my $node ($c->nodes) {
        $node->cmd(CONFIG => 'SET', 'cluster-announce-hostname',
                   'node' . $node->port . '.test');
        $node->cmd(CONFIG => 'SET', 'cluster-preferred-endpoint-type',
                   'hostname');
    }
    # every node has heard every other's name (the bus's gossip)
    ok(GmsTest::wait_until(sub {
        for my $node ($c->nodes) {
            my $m = eval { $node->cmd(CLUSTER => 'SLOTS') } or return 0;
            return 0 if grep { $_->[2][0] !~ /\.test$/ } @$m;
        }
        return 1;
    }, 15), 'the nodes announce their names');

    my $n = GmsTest::Edge->topology(cluster => $c,
        http => 'resolver 127.0.0.1:' . $dns->port . ' valid=1s ipv6=off;');
    ok(ready($n, 'token-1'), 'a token: 200');
    is(status($n, 'nope'), 401, 'an unknown one: 401');
    my $master = $c->master_of($slot);
    cmp_ok($dns->queries('node' . $master->port . '.test'), '>=', 1,
           'the slot\'s master\'s name was resolved');
    is_deeply(nodes($n, 'lookup'), { $master->address => 1 },
              'the lookups go to it');

    # a migration: ASK and MOVED name host names too
    my ($to) = grep { $_ != $master }
               grep { ($_->cmd(INFO => 'replication') // '') =~ /^role:master/m }
               $c->nodes;
    my $loop = request_rows($n->port, tokens => ['token-1', 'nope'],
                            pause => 0.02, seconds => 40);
    ok(GmsTest::wait_until(sub { $loop->{count}->() >= 10 }, 5),
       'the loop runs');
    my $ask = labelled($n, 'gms_redis_cluster_redirections_total',
                       'kind="ask"');
    $c->migrate($slot, $to, hold => 1);
    ok(GmsTest::wait_until(sub {
        labelled($n, 'gms_redis_cluster_redirections_total', 'kind="ask"')
        >= $ask + 4 }, 10), 'ASK to a host name followed');
    my $moved = labelled($n, 'gms_redis_cluster_redirections_total',
                         'kind="moved"') // 0;
    my $refreshes = metric($n, 'gms_redis_cluster_map_refreshes_total');
    $c->finish_migration($slot);
    my $how = moved_or_refreshed($n, $moved, $refreshes);
    ok($how, 'MOVED to a host name followed, or the map read again'
             . ($how ? " ($how came first)" : ''));
    ok(GmsTest::wait_until(sub {
        (nodes($n, 'lookup')->{ $to->address } // 0) == 1 }, 10),
       'the lookups now go to the new master');
    my $count = $loop->{count}->();
    GmsTest::wait_until(sub { $loop->{count}->() >= $count + 10 }, 5);
    my $seen = $loop->{stop}->();
    my @wrong = wrong($seen, 'token-1');
    is(scalar @wrong, 0, 'none of ' . scalar(@$seen) . ' answered other '
                         . 'than 200 (valid) and 401 (unknown)')
        or diag explain [ @wrong[0 .. ($#wrong < 5 ? $#wrong : 5)] ];

    no_crash($n);

    for my $node ($c->nodes) {
        $node->cmd(CONFIG => 'SET', 'cluster-preferred-endpoint-type', 'ip');
    }
};


subtest 'CLUSTERDOWN: 503 at once' => sub {
    my $n = GmsTest::Edge->topology(cluster => $c);
    ok(ready($n, 'token-1'), 'ready');

    # another shard without a live node: the cluster is down everywhere
    # (cluster-require-full-coverage yes, the default)
    my $master = $c->master_of($slot);
    my ($other) = grep { $_ != $master && $_->port != $master->port }
                  map { $c->master_of($_) } 0, 8000, 16000;
    $_->kill for $c->replicas_of($other), $other;

    ok(GmsTest::wait_until(sub { status($n, 'token-1') == 503 }, 15),
       'the slot\'s master answers CLUSTERDOWN: 503');
    is(status($n, 'nope'), 503, 'for an unknown token too, never 401');
    cmp_ok(metric($n, 'gms_redis_cluster_errors_total'), '>=', 2,
           'gms_redis_cluster_errors_total counts them');
    like($n->error_log, qr/answered "CLUSTERDOWN/, 'logged');

    no_crash($n);
};

$c->stop;


subtest 'TLS and a password' => sub {
    my $certs = GmsTest::Certs->new;
    my $t = GmsTest::Cluster->start(tls => $certs, password => 'cluster-pw');
    GmsTest::Edge::seed($t, 'tls-token');

    my $ssl = <<"CONF";
    gms_token_redis_ssl_trusted_certificate $certs->{ca};
    gms_token_redis_ssl_name localhost;
CONF
    my $file = GmsTest::tempdir() . '/redis-password';
    GmsTest::write_file($file, "cluster-pw\n");
    my $n = GmsTest::Edge->topology(cluster => $t, tls => 1,
        options => "tls password_file=$file", http => $ssl);
    ok(ready($n, 'tls-token'), 'a token: 200 over TLS (password_file=)');
    is(status($n, 'nope'), 401, 'an unknown one: 401');
    my $master = $t->master_of($t->slot('{gms}:x'));
    is_deeply(nodes($n, 'lookup'), { $master->address(tls => 1) => 1 },
              'on the slot\'s master\'s TLS port');
    is(metric($n, 'gms_redis_tls_handshake_failures_total'), 0,
       'no TLS failures');
    no_crash($n);

    $n = GmsTest::Edge->topology(cluster => $t, tls => 1,
        options => 'tls password=wrong', http => $ssl);
    sleep 1;
    is(status($n, 'tls-token'), 503, 'a wrong password: 503');
    no_crash($n);

    $t->stop;
};

done_testing();

#!/usr/bin/perl

# Items 5 and 6 of issue 27 in a cluster (t/62 and t/63 test them under
# Sentinel): a real cluster of six nodes with a password.
#
#   - lookups wait for the first slot map: an edge of four workers whose
#     only seed answers CLUSTER SHARDS after 300 ms (the real map, relayed)
#     answers the requests fired right at its start 200 (401 for an
#     unknown token), none 503, and so do requests under three reloads;
#     on the real nodes, an edge started while a request loop already
#     runs, and reloaded three times under it: only 200;
#   - a seed that leaves the map's question unanswered gives way to the
#     next within gms_token_redis_timeout (not after the map's 5 s round):
#     a request two seconds after the start gets 200;
#   - seeds that never answer (one silent, one nobody listens on): 503,
#     and the log says no cluster node gave the slot map;
#   - replica=prefer with a cache: the replica of the slot's master is
#     read while all is well (its EVALSHA_RO count grows); cut off from its
#     master (a wrong masterauth, its link killed: it keeps its data and
#     keeps answering reads), a token deleted on the master and published
#     gets 401 within about a second and never 200 for 7 s (past the 5 s
#     in which an invalidated token is read from the master anyway), and
#     one deleted and not published gets 401; made to lag (CLIENT PAUSE
#     WRITE: it answers reads, applies nothing) while a token is deleted
#     and published: 401 within about a second, never a cached 200.

use strict;
use warnings;

use IO::Socket::IP;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Edge;
use GmsTest::Checks qw(status metric no_crash calls gms_lines request_loop
                       watch);
use GmsTest::Cluster;
use GmsTest::FakeRedis;
use GmsTest::HTTP;

GmsTest::need_module();
GmsTest::need_redis();

my $PASSWORD = 'secret';

# the cluster, the slot of {gms}, its master and replica, the tokens' ids
my ($c, $slot, $m, $r, %id);

# The raw replies of $node to AUTH and @commands (each an array of
# words), sent over one connection, read until it has been quiet 0.3 s.
sub raw {
    my ($node, @commands) = @_;

    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                PeerPort => $node->port)
        or die "connect: $!\n";
    for my $cmd (['AUTH', $PASSWORD], @commands) {
        print $s '*' . @$cmd . "\r\n",
                 map { '$' . length($_) . "\r\n$_\r\n" } @$cmd;
    }

    my $got = '';
    my $end = time + 3;
    while (time < $end) {
        my $rin = '';
        vec($rin, fileno($s), 1) = 1;
        last if length($got) > 5 && !select(my $rout = $rin, undef, undef,
                                             0.3);
        sysread($s, $got, 65536, length $got) or last;
    }
    close $s;

    $got =~ s/^\+OK\r\n// or die "AUTH: $got\n";
    return $got;
}

# The real CLUSTER SHARDS of $node as it came over the wire.
sub raw_shards {
    return raw($_[0], ['CLUSTER', 'SHARDS']);
}

# Whether the replica $r has $token's entry (READONLY: a cluster's replica
# redirects reads to its master without it).
sub on_replica {
    my ($token) = @_;
    my $got = raw($r, ['READONLY'], ['EXISTS', "{gms}:token:$id{$token}"]);
    $got =~ /^\+OK\r\n:([01])\r\n\z/ or die "EXISTS: $got\n";
    return $1;
}


$c = GmsTest::Cluster->start(password => $PASSWORD);
$slot = $c->slot('{gms}:token:x');
$m = $c->master_of($slot);
($r) = $c->replicas_of($m);
note "slot $slot: master ", $m->port, ', replica ', $r->port;

$id{$_} = GmsTest::Edge::seed($c, $_) for qw(steady cut-a cut-b lag-a);
ok(GmsTest::wait_until(sub { !grep { !on_replica($_) } keys %id }, 5),
   'the replica has the tokens');


subtest 'a seed slow to give the map: requests at the start wait' => sub {
    my $shards = raw_shards($m);

    my $f = GmsTest::FakeRedis->start(on => {
        CLUSTER => sub { sleep 0.3; return $shards },
    });

    my $n = GmsTest::Edge->topology(cluster => [ $f->address ], workers => 4,
        timeout => '2s', options => "password=$PASSWORD");

    my $got = $n->parallel([ map {
        [GET => '/ok', { Authorization => 'Bearer '
                                          . ($_ % 4 ? 'steady' : 'nope') }]
    } 1 .. 16 ], timeout => 10);

    my @status = map { $_->{status} // 'none' } @$got;
    is_deeply(\@status, [ map { $_ % 4 ? 200 : 401 } 1 .. 16 ],
              'right at the start: 200 for the token, 401 for an unknown one')
        or diag gms_lines($n);
    is(status($n, 'steady'), 200, 'and 200 afterwards');
    like($n->error_log, qr/gms: cluster: slot $slot is served by (?x:
                           )127\.0\.0\.1:@{[ $m->port ]}/,
         'the map relayed named the slot\'s master');
    unlike($n->error_log, qr/\[error\].*redis unavailable for token id/,
           'no lookup refused for want of a map');

    # every new worker waits 300 ms for its map: reloads under a loop
    my $loop = request_loop($n->port, 'steady', 3);
    ok(GmsTest::wait_until(sub { $loop->{count}->() >= 30 }, 10),
       'the loop runs');
    for my $i (1 .. 3) {
        $n->reload;
        my $seen = $loop->{count}->();
        GmsTest::wait_until(sub { $loop->{count}->() >= $seen + 30 }, 10);
    }
    my $count = $loop->{stop}->();
    is_deeply([ sort keys %$count ], [200],
              'three reloads under load, each worker\'s map 300 ms away: '
              . 'only 200')
        or diag explain($count), gms_lines($n);
    note join ', ', map { "$_: $count->{$_}" } sort keys %$count;

    no_crash($n);
};


subtest 'the real cluster: start and reloads under a request loop' => sub {
    my $n = GmsTest::Edge->topology_nginx(workers => 4);

    # fired before the edge listens: its first answers come from workers
    # that have just started
    my $loop = request_loop($n->port, 'steady', 3);
    $n->start(GmsTest::Edge->topology_conf(cluster => $c, timeout => '2s',
        options => "password=$PASSWORD"));

    ok(GmsTest::wait_until(sub { $loop->{count}->() >= 30 }, 10),
       'the loop runs');

    for my $i (1 .. 3) {
        $n->reload;
        my $seen = $loop->{count}->();
        GmsTest::wait_until(sub { $loop->{count}->() >= $seen + 30 }, 10);
    }

    my $count = $loop->{stop}->();
    is_deeply([ sort keys %$count ], [200],
              'a start and three reloads under load: only 200')
        or diag explain($count), gms_lines($n);
    note join ', ', map { "$_: $count->{$_}" } sort keys %$count;

    no_crash($n);
};


subtest 'a seed that does not answer gives way within the timeout' => sub {
    my $shards = raw_shards($m);

    # its first connection says nothing to CLUSTER SHARDS; the next one
    # relays the map (listed twice: two seeds, one of them silent first)
    my $f = GmsTest::FakeRedis->start(on => {
        CLUSTER => sub {
            my ($conn) = @_;
            return $shards if $conn->number > 1;
            1 while $conn->read_command;
            return '';
        },
    });

    my $n = GmsTest::Edge->topology_nginx;
    $n->start(GmsTest::Edge->topology_conf(
        cluster => [ $f->address, $f->address ], timeout => '1s',
        options => "password=$PASSWORD"));

    # the silent question given up after 1 s, not after the map's round
    # of 5 s: a request a moment later is answered from the map
    sleep 1.8;
    is(status($n, 'steady'), 200, '200 two seconds after the start')
        or diag gms_lines($n);
    like($n->error_log, qr/no answer to the slot map's question/,
         'the silent seed left, and said');

    no_crash($n);
};


subtest 'seeds that never answer: 503, and said' => sub {
    # one accepts the connection and reads, but says nothing
    my $f = GmsTest::FakeRedis->start(on => {
        CLUSTER => sub { my ($conn) = @_; 1 while $conn->read_command; '' },
    });
    my $dead = '127.0.0.1:' . GmsTest::free_port();

    my $n = GmsTest::Edge->topology(cluster => [ $f->address, $dead ],
        timeout => '2s', options => "password=$PASSWORD");

    is(status($n, 'steady'), 503, 'a request: answered, 503');
    is(status($n, 'steady'), 503, 'the next one: 503 too');
    ok(GmsTest::wait_until(sub {
           $n->error_log =~ /gms: no redis server known: (?x:
                             )no cluster node gave the slot map/ }, 15),
       'no cluster node gave the slot map: logged')
        or diag gms_lines($n);
    is(status($n, 'steady'), 503, 'and 503 after');

    no_crash($n);
};


# Deletes $token's entry on the slot's master and publishes its id there
# (what gms-token revoke does, without waiting for the replicas); then 401
# is due within about a second, and nothing but 401 for $seconds more.
sub revoked {
    my ($n, $token, $seconds, $what) = @_;

    is($m->cmd(DEL => "{gms}:token:$id{$token}"), 1,
       "$what: deleted on the slot's master");
    is($m->cmd(PUBLISH => '{gms}:invalidate', $id{$token}), 1,
       "$what: published, heard by the edge");
    ok(on_replica($token),
       "$what: the replica still has it");

    ok(GmsTest::wait_until(sub { status($n, $token) == 401 }, 1.5),
       "$what: 401 within about a second")
        or diag gms_lines($n);
    my @got = watch($n, $token, $seconds);
    is_deeply([ grep { $_ != 401 } @got ], [],
              "$what: nothing but 401 for $seconds s more")
        or diag join(' ', @got), "\n", gms_lines($n);
}


subtest 'replica=prefer: the slot\'s replica never undoes a revocation' => sub {
    my $n = GmsTest::Edge->topology(cluster => $c, timeout => '2s',
        options => "password=$PASSWORD replica=prefer",
        http => 'gms_token_cache zone=tokens:1m ttl=300s negative_ttl=1s;');

    # all is well: the replica answers the lookups
    my $i = 0;
    my $ro = calls($r, 'evalsha_ro');
    ok(GmsTest::wait_until(sub {
           status($n, 'warm-' . $i++) == 401 && calls($r, 'evalsha_ro') > $ro
       }, 15),                 # the master alone for 5 s after subscribing
       'the slot\'s replica is read (its EVALSHA_RO count grows)');
    $ro = calls($r, 'evalsha_ro');
    is(status($n, 'cut-a'), 200, 'cut-a: 200, cached');
    is(status($n, 'lag-a'), 200, 'lag-a: 200, cached');
    cmp_ok(calls($r, 'evalsha_ro'), '>=', $ro + 2, 'both from the replica');

    # cut off: its master refuses it from now on; it keeps its data
    is($r->cmd(CONFIG => 'SET', 'masterauth', 'wrong'), 'OK',
       'a wrong masterauth on the replica');
    $r->cmd(CLIENT => 'KILL', 'TYPE', 'master');

    ok(GmsTest::wait_until(sub {
           $n->error_log =~ /gms: redis replica at 127\.0\.0\.1:(?x:
                             )@{[ $r->port ]} is not in step with its (?x:
                             )master \(ROLE: "(?:connect|handshake|sync)/ },
                             5),
       'the edge sees the replica\'s link down (ROLE), and says so')
        or diag gms_lines($n);

    revoked($n, 'cut-a', 7, 'cut-a deleted and published, replica cut off');

    $m->cmd(DEL => "{gms}:token:$id{'cut-b'}");
    ok(on_replica('cut-b'),
       'cut-b deleted on the master, still on the replica');
    is(status($n, 'cut-b'), 401, 'cut-b deleted, not published: 401');

    # back in step
    is($r->cmd(CONFIG => 'SET', 'masterauth', $PASSWORD), 'OK',
       'the right masterauth again');
    ok(GmsTest::wait_until(sub {
           $n->error_log =~ /gms: redis replica at 127\.0\.0\.1:(?x:
                             )@{[ $r->port ]} is in step with its master (?x:
                             )again/ }, 10),
       'the replica back in step: said so')
        or diag gms_lines($n);
    $ro = calls($r, 'evalsha_ro');
    my $j = 0;
    ok(GmsTest::wait_until(sub {
           status($n, 'back-' . $j++) == 401
           && calls($r, 'evalsha_ro') > $ro }, 10),
       'and read again');

    # made to lag: it answers reads, applies nothing for 3 s
    is($r->cmd(CLIENT => 'PAUSE', 3000, 'WRITE'), 'OK',
       'CLIENT PAUSE WRITE on the replica');
    my $paused = time;
    revoked($n, 'lag-a', 4, 'lag-a deleted and published, replica lagging');
    cmp_ok(time - $paused, '>', 3, 'past the pause');
    ok(GmsTest::wait_until(sub {
           !on_replica('lag-a') }, 5),
       'the replica applies the delete once the pause is over');

    no_crash($n);
};

$c->stop;

done_testing();

#!/usr/bin/perl

# Replica reads never undo a revocation (issue 27, item 6, the edge's
# side): a master, a replica, three Sentinels, an edge with replica=prefer
# and a cache of ttl 300 s (negative_ttl 1 s: a 401 cached for longer
# would hide the replica from the checks that follow it).
#
#   - a replica cut off from its master (a wrong masterauth and its link
#     killed: it keeps its data, cannot get back, and the Sentinels, who
#     would mend a REPLICAOF to a dead port after a few seconds, see
#     nothing to mend): the edge sees it in ROLE ("connect", not
#     "connected") and reads from the
#     master: a token deleted on the master, published or not, gets 401
#     within about a second and never 200 afterwards, past the window in
#     which an invalidated token is read from the master anyway; once the
#     replica is back in step, it is read again;
#   - a replica that lags (CLIENT PAUSE WRITE on it: it answers reads, but
#     applies nothing its master sends) while a token is deleted and the
#     invalidation published: 401 within about a second, never a cached
#     200 afterwards; and when it lags longer than the 5 s in which an
#     invalidated token is read from the master anyway: the edge sees its
#     offset behind the master's and reads from the master meanwhile;
#   - a replica that answers nothing for a while (DEBUG SLEEP): the same.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Edge;
use GmsTest::Checks qw(status metric no_crash calls gms_lines watch);
use GmsTest::Sentinel;

GmsTest::need_module();
GmsTest::need_redis();
GmsTest::Sentinel::_need_sentinel();

sub synced {
    my ($replica, $id) = @_;
    return GmsTest::wait_until(sub { $replica->cmd(EXISTS => "gms:token:$id") },
                               5);
}

# Deletes $token's entry on the master and publishes its id there (what
# gms-token revoke does, without waiting for the replicas); then 401 is
# due within about a second, and nothing but 401 for $seconds more.
sub revoked {
    my ($n, $m, $token, $id, $seconds, $what) = @_;

    $m->cmd(DEL => "gms:token:$id");
    $m->cmd(PUBLISH => 'gms:invalidate', $id);

    ok(GmsTest::wait_until(sub { status($n, $token) == 401 }, 1.5),
       "$what: 401 within about a second")
        or diag gms_lines($n);
    my @got = watch($n, $token, $seconds);
    is_deeply([ grep { $_ != 401 } @got ], [],
              "$what: nothing but 401 for $seconds s more")
        or diag join(' ', @got), "\n", gms_lines($n);
}


my $m = GmsTest::Redis->start;
my $r = GmsTest::Redis->start(replicaof => ['127.0.0.1', $m->port]);
# no failover here: the master stays
my $s = GmsTest::Sentinel->start(master => $m, down_after => 60_000);

my %id;
$id{$_} = GmsTest::Edge::seed($m, $_)
    for qw(steady cut-a cut-b lag-a lag-b sleep-a);
synced($r, $id{$_}) for keys %id;

my $n = GmsTest::Edge->topology(sentinel => $s, options => 'replica=prefer',
    timeout => '1s',
    http => 'gms_token_cache zone=tokens:1m ttl=300s negative_ttl=1s;');
my $i = 0;
# a new worker reads everything from the master for the 5 s after its
# subscription starts, then from the replica once a ROLE says it is in
# step: well within 15 s, under ASan on a loaded machine too
ok(GmsTest::wait_until(sub {
       status($n, 'warm-' . $i++) == 401 && calls($r, 'evalsha_ro') > 0
   }, 15),
   'replica=prefer: the replica is read');


subtest 'a replica cut off from its master is not read' => sub {
    is(status($n, 'cut-a'), 200, 'cut-a: 200, cached');
    my $ro = calls($r, 'evalsha_ro');
    cmp_ok($ro, '>', 0, 'read from the replica');

    # its master refuses it from now on: it keeps its data
    is($r->cmd(CONFIG => 'SET', 'masterauth', 'wrong'), 'OK',
       'a wrong masterauth on the replica');
    $r->cmd(CLIENT => 'KILL', 'TYPE', 'master');

    ok(GmsTest::wait_until(sub {
           $n->error_log =~ /gms: redis replica at 127\.0\.0\.1:(?x:
                             )@{[ $r->port ]} is not in step with its (?x:
                             )master \(ROLE: "connect/ }, 5),
       'the edge sees the replica\'s link down (ROLE), and says so')
        or diag gms_lines($n);

    # published: dropped from the cache, and read from the master
    revoked($n, $m, 'cut-a', $id{'cut-a'}, 7, 'cut-a deleted and published');

    # not published, never looked up: only the master knows
    $m->cmd(DEL => "gms:token:$id{'cut-b'}");
    is(status($n, 'cut-b'), 401, 'cut-b deleted, not published: 401');

    $ro = calls($r, 'evalsha_ro');
    is(status($n, 'steady'), 200, 'steady: 200');
    is(calls($r, 'evalsha_ro'), $ro, 'from the master, not the replica');

    # back in step: read again
    $r->cmd(CONFIG => 'SET', 'masterauth', '');
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
           && calls($r, 'evalsha_ro') > $ro }, 5),
       'and read again');
};


subtest "a lagging replica: the revoked token read from the master" => sub {
    is(status($n, 'lag-a'), 200, 'lag-a: 200, cached');

    # the replica answers reads but applies nothing for 4 s
    is($r->cmd(CLIENT => 'PAUSE', 4000, 'WRITE'), 'OK',
       'CLIENT PAUSE WRITE on the replica');
    my $paused = time;

    revoked($n, $m, 'lag-a', $id{'lag-a'}, 6, 'lag-a deleted and published');
    cmp_ok(time - $paused, '>', 4, 'past the pause');

    ok(!$r->cmd(EXISTS => "gms:token:$id{'lag-a'}"),
       'the replica has applied the delete by now');
};


subtest 'a replica behind for longer than the window' => sub {
    ok(GmsTest::wait_until(sub {
           status($n, 'lag-b') == 200 && calls($r, 'evalsha_ro') > 0 }, 5),
       'lag-b: 200, cached');

    my $again = qr/replica at 127\.0\.0\.1:@{[ $r->port ]} is in step (?x:
                   )with its master again/;
    my $before = () = $n->error_log =~ /$again/g;

    is($r->cmd(CLIENT => 'PAUSE', 9000, 'WRITE'), 'OK',
       'CLIENT PAUSE WRITE on the replica, for 9 s');
    my $paused = time;

    # nobody asks for it while its invalidation is fresh: the first lookup
    # comes after the window, the replica still behind
    $m->cmd(DEL => "gms:token:$id{'lag-b'}");
    $m->cmd(PUBLISH => 'gms:invalidate', $id{'lag-b'});
    sleep 6.5;
    ok($r->cmd(EXISTS => "gms:token:$id{'lag-b'}"),
       'the replica still has the token');
    my @got = watch($n, 'lag-b', 1.5);
    is_deeply([ grep { $_ != 401 } @got ], [],
              'lag-b, deleted and published 6.5 s ago: 401')
        or diag join(' ', @got), "\n", gms_lines($n);
    like($n->error_log, qr/gms: redis replica at 127\.0\.0\.1:(?x:
                           )@{[ $r->port ]} is behind its master/,
         'the replica seen behind (ROLE\'s offsets), and said');
    sleep 0.1 while time < $paused + 9;
    ok(GmsTest::wait_until(sub {
           (() = $n->error_log =~ /$again/g) > $before }, 5),
       'in step again once the pause is over');
};


subtest 'a replica that answers nothing for a while' => sub {
    is(status($n, 'sleep-a'), 200, 'sleep-a: 200, cached');

    my $pid = $r->sleep_in_background(3);
    sleep 0.2;

    revoked($n, $m, 'sleep-a', $id{'sleep-a'}, 5,
            'sleep-a deleted and published');
    waitpid $pid, 0;
};

no_crash($n);

done_testing();

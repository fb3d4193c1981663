#!/usr/bin/perl

# Redis Sentinel (issue 15): a master, a replica and three redis-sentinel
# processes.
#
#   - gms_token_redis_sentinel finds the master through the Sentinels;
#   - replica=prefer sends lookups (EVALSHA_RO) to the replica, which
#     answers them while the master is stopped; what the replica does not
#     answer (an error, a lost connection, a Redis without EVALSHA_RO)
#     the master does;
#   - password= on master and replicas;
#   - a master answering -LOADING: 503, the Sentinels asked again, and the
#     master they name next answers;
#   - the subscription to a Sentinel, quiet for 10 s, is PINGed and kept;
#     a Sentinel that leaves the PING unanswered gives way to the next;
#   - the master killed under a steady request loop: Sentinel promotes the
#     replica, the edge follows within seconds without a reload, and no
#     request gets anything but 200, 401 or 503 meanwhile;
#   - replica=prefer reads from the new master's replica;
#   - the push invalidation arrives from the new master.

use strict;
use warnings;

use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Edge;
use GmsTest::Checks qw(status metric no_crash calls gms_lines request_rows);
use GmsTest::FakeRedis;
use GmsTest::Sentinel;

GmsTest::need_module();
GmsTest::need_redis();
GmsTest::Sentinel::_need_sentinel();

# Waits until the replica has what the master was given.
sub synced {
    my ($replica, $id) = @_;
    return GmsTest::wait_until(sub { $replica->cmd(EXISTS => "gms:token:$id") },
                               5);
}

# A FakeRedis standing in for a replica: ROLE says slave, connected, at
# an offset past any the master has (in step), and $reply (bytes, or a
# sub as GmsTest::FakeRedis takes them) answers the lookups.
sub fake_replica {
    my ($reply) = @_;
    return GmsTest::FakeRedis->start(on => {
        ROLE       => "*5\r\n\$5\r\nslave\r\n\$9\r\n127.0.0.1\r\n:6379\r\n"
                      . "\$9\r\nconnected\r\n:1000000000000\r\n",
        EVALSHA_RO => $reply,
        EVAL_RO    => $reply,
    });
}

# How often a FakeRedis was sent $command.
sub sent {
    my ($fake, $command) = @_;
    return scalar grep { /^\Q$command\E(?: |$)/ } $fake->commands;
}


# --- discovery and replica reads ----------------------------------------------

subtest 'discovery, and replica=prefer reads from the replica' => sub {
    my $m = GmsTest::Redis->start;
    my $r = GmsTest::Redis->start(replicaof => ['127.0.0.1', $m->port]);
    # no failover in this part, even with the master stopped
    my $s = GmsTest::Sentinel->start(master => $m, down_after => 60_000);

    synced($r, GmsTest::Edge::seed($m, "token-$_")) for 1 .. 20;

    my $n = GmsTest::Edge->topology(sentinel => $s);
    is(status($n, 'token-1'), 200, 'a token on the master: 200');
    is(status($n, 'nope'), 401, 'an unknown one: 401');
    cmp_ok(calls($m, 'evalsha'), '>=', 2, 'looked up on the master');
    is(calls($r, 'evalsha_ro'), 0, 'replica=off: nothing on the replica');
    is(metric($n, 'gms_redis_connected{target="master"}'), 1,
       'gms_redis_connected{target="master"} 1');
    is(metric($n, 'gms_redis_connected{target="sentinel"}'), 1,
       'gms_redis_connected{target="sentinel"} 1');
    no_crash($n);

    $n = GmsTest::Edge->topology(sentinel => $s, options => 'replica=prefer');
    my $i = 1;
    ok(GmsTest::wait_until(sub {
           status($n, 'token-' . $i++) == 200 && calls($r, 'evalsha_ro') > 0
       }, 5),
       'replica=prefer: lookups go to the replica (EVALSHA_RO)');
    is(metric($n, 'gms_redis_connected{target="replica"}'), 1,
       'gms_redis_connected{target="replica"} 1');

    # the master stopped: the replica alone answers
    $m->pause;
    my $ro = calls($r, 'evalsha_ro');
    my @got = map { status($n, "token-$_") } 15 .. 20;
    is_deeply(\@got, [(200) x 6], 'the master stopped: 200 for every token');
    is(status($n, 'nope'), 401, 'and 401 for an unknown one');
    is(calls($r, 'evalsha_ro') - $ro, 7, 'each one answered by the replica');
    $m->resume;

    no_crash($n);
};


subtest 'replica=prefer: the master answers what the replica cannot' => sub {
    my $m = GmsTest::Redis->start;
    GmsTest::Edge::seed($m, "token-$_") for 1 .. 3;

    my %replies = (
        'an error'          => "-ERR something went wrong\r\n",
        '-LOADING'          => "-LOADING Redis is loading the dataset\r\n",
        'a lost connection' => sub { $_[0]->close; POSIX::_exit(0) },
        # Redis 6: no EVALSHA_RO
        'no EVALSHA_RO'     => "-ERR unknown command `EVALSHA_RO`, with "
                               . "args beginning with: \r\n",
    );

    for my $what (sort keys %replies) {
        my $replica = fake_replica($replies{$what});
        my $s = GmsTest::Sentinel->fake(master => $m->port,
                                        replicas => [$replica->port]);
        my $n = GmsTest::Edge->topology(sentinel => $s,
        options => 'replica=prefer');

        ok(GmsTest::wait_until(sub { status($n, 'token-1') == 200 }, 5),
           "$what: 200 from the master")
            or diag gms_lines($n);

        # lookups go to the master until the replica's connection, which
        # they open, is up; then one goes to the replica first
        my $evalsha = calls($m, 'evalsha');
        my @got;
        ok(GmsTest::wait_until(sub {
               push @got, status($n, 'token-2');
               sent($replica, 'EVALSHA_RO') > 0
           }, 5),
           "$what: the replica asked")
            or diag gms_lines($n);
        is_deeply([ grep { $_ != 200 } @got ], [], "$what: 200 every time")
            or diag gms_lines($n);
        is(calls($m, 'evalsha') - $evalsha, scalar @got,
           "$what: every lookup answered by the master");

        if ($what eq 'no EVALSHA_RO') {
            is(status($n, 'token-3'), 200, 'and 200 again');
            is(sent($replica, 'EVALSHA_RO'), 1, 'the replica not asked again');
            my @warn = $n->error_log
                =~ /\[warn\].*gms: redis replica at \S+ does not know (?x:
                   )EVALSHA_RO \(Redis 7\.0 or later\)/g;
            is(scalar @warn, 1, 'said once, at warn');
        }

        if ($what eq 'an error') {
            like($n->error_log, qr/gms: redis replica at 127\.0\.0\.1:\d+ (?x:
                                   )answered "ERR something went wrong": (?x:
                                   )the lookup goes to the master/,
                 'the error logged');
        }

        no_crash($n);
    }
};


subtest 'password= on the master and its replica' => sub {
    my $m = GmsTest::Redis->start(password => 'secret');
    my $r = GmsTest::Redis->start(password => 'secret',
                                  replicaof => ['127.0.0.1', $m->port]);
    my $s = GmsTest::Sentinel->start(master => $m, down_after => 60_000);

    synced($r, GmsTest::Edge::seed($m, 'token-1'));

    my $n = GmsTest::Edge->topology(sentinel => $s,
        options => 'password=secret replica=prefer');
    ok(GmsTest::wait_until(sub {
           status($n, 'token-1') == 200 && calls($r, 'evalsha_ro') > 0
       }, 5),
       '200, and read from the replica')
        or diag gms_lines($n);
    cmp_ok(calls($m, 'evalsha'), '>=', 1, 'and from the master');
    no_crash($n);

    $n = GmsTest::Edge->topology(sentinel => $s, options => 'password=wrong');
    is(status($n, 'token-1'), 503, 'a wrong password: 503');
    like($n->error_log, qr/refused the connection's setup: WRONGPASS/,
         'the refusal logged');
    no_crash($n);
};


subtest 'a master answering -LOADING: 503, the Sentinels asked again' => sub {
    my $m = GmsTest::Redis->start;
    GmsTest::Edge::seed($m, 'token-1');

    my $loading = GmsTest::FakeRedis->start(on => {
        EVALSHA => "-LOADING Redis is loading the dataset in memory\r\n",
        EVAL    => "-LOADING Redis is loading the dataset in memory\r\n",
    });
    my $s = GmsTest::Sentinel->fake(master => $loading->port);
    my $n = GmsTest::Edge->topology(sentinel => $s);

    ok(GmsTest::wait_until(sub {
           sent($s, 'SENTINEL get-master-addr-by-name') == 1 }, 5),
       'the Sentinel asked for the master');
    is(status($n, 'token-1'), 503, '-LOADING: 503');
    my $port = $loading->port;
    like($n->error_log, qr/redis at 127\.0\.0\.1:$port answered -LOADING/,
         'the answer logged');
    like($n->error_log, qr/gms: sentinel: asking again for master "gms": (?x:
                           )the server is unavailable/,
         'the Sentinels asked again');
    ok(GmsTest::wait_until(sub {
           sent($s, 'SENTINEL get-master-addr-by-name') >= 2 }, 5),
       'the Sentinel asked for the master a second time');

    # the Sentinel names a master that answers: the next ask follows it
    $s->move($m->port);
    ok(GmsTest::wait_until(sub { status($n, 'token-1') == 200 }, 10),
       'then a master that answers: 200')
        or diag gms_lines($n);
    no_crash($n);
};


# --- a quiet subscription -----------------------------------------------------

subtest 'the subscription to a Sentinel, quiet, is PINGed and kept' => sub {
    my $m = GmsTest::Redis->start;
    my $s = GmsTest::Sentinel->start(master => $m, down_after => 60_000);
    GmsTest::Edge::seed($m, 'token-1');

    # the worker's subscription, as CLIENT LIST shows it on its Sentinel
    # (the Sentinels' own connections to each other are not subscribed)
    my $subscriber = sub {
        my @subs = grep { /\bsub=1\b/ }
                   map { split /\n/, $s->cmd($_, CLIENT => 'LIST') }
                   0 .. $s->ports - 1;
        return @subs == 1 ? $subs[0] : undef;
    };

    my $n = GmsTest::Edge->topology(sentinel => $s);
    is(status($n, 'token-1'), 200, 'token-1: 200');
    my $before;
    ok(GmsTest::wait_until(sub { $before = $subscriber->() }, 5),
       'subscribed to one Sentinel');
    my ($id) = ($before // '') =~ /\bid=(\d+)/;

    my $after;
    ok(GmsTest::wait_until(sub {
           $after = $subscriber->() // '';
           $after =~ /\bcmd=ping\b/ }, 25),
       'PINGed after 10 s of quiet (CLIENT LIST: cmd=ping)')
        or diag $after;
    is(($after =~ /\bid=(\d+)/)[0], $id,
       'on the same connection: the answer was taken');
    unlike($n->error_log, qr/closing the redis sentinel connection/,
           'the Sentinel\'s connection was not closed');
    is(metric($n, 'gms_redis_connected{target="sentinel"}'), 1,
       'gms_redis_connected{target="sentinel"} 1');
    is(status($n, 'token-1'), 200, 'still 200');

    no_crash($n);
};


subtest 'a Sentinel that leaves the PING unanswered: the next one' => sub {
    my $m = GmsTest::Redis->start;
    GmsTest::Edge::seed($m, 'token-1');

    # both answer everything until the first PING on a connection, then
    # nothing more on it: a host gone, a firewall that forgot it
    my @s = map {
        GmsTest::Sentinel->fake(master => $m->port, on => {
            PING => sub { my ($c) = @_; 1 while $c->read_command; return '' },
        })
    } 1 .. 2;

    my $n = GmsTest::Edge->topology(sentinel => \@s);
    ok(GmsTest::wait_until(sub { status($n, 'token-1') == 200 }, 5),
       'token-1: 200')
        or diag gms_lines($n);
    my $first;
    ok(GmsTest::wait_until(sub {
           ($first) = grep { sent($_, 'SUBSCRIBE') } @s }, 5),
       'subscribed to one Sentinel');
    my ($next) = grep { $_ != ($first // 0) } @s;

    # PINGed after 10 s of quiet, dropped 10 s later without an answer
    my $address = $first ? $first->addresses : 'none';
    ok(GmsTest::wait_until(sub {
           $n->error_log =~ /closing the redis sentinel connection to (?x:
                             )\Q$address\E: no answer to PING/ }, 35),
       'the silent Sentinel dropped: "no answer to PING"')
        or diag gms_lines($n);
    ok(GmsTest::wait_until(sub {
           sent($next, 'SENTINEL get-master-addr-by-name') == 1
           && sent($next, 'SUBSCRIBE') == 1 }, 5),
       'the next Sentinel asked for the master, and subscribed to');
    is(status($n, 'token-1'), 200, 'still 200');

    no_crash($n);
};


# --- failover -----------------------------------------------------------------

subtest 'failover under a request loop; invalidation from the new master' => sub {
    my $m = GmsTest::Redis->start;
    my $r = GmsTest::Redis->start(replicaof => ['127.0.0.1', $m->port]);
    # the replica's own replica: the Sentinels learn of it once $r is the
    # master, so it is the one replica=prefer must read from afterwards
    my $r2 = GmsTest::Redis->start(replicaof => ['127.0.0.1', $r->port]);
    my $s = GmsTest::Sentinel->start(master => $m);

    synced($r, GmsTest::Edge::seed($m, 'steady'));
    my $kept = GmsTest::Edge::seed($m, 'kept');
    synced($r, $kept);
    synced($r2, $kept);

    my $n = GmsTest::Edge->topology(sentinel => $s);
    my $cached = GmsTest::Edge->topology(sentinel => $s,
        http => 'gms_token_cache zone=tokens:1m ttl=300s;');
    my $prefer = GmsTest::Edge->topology(sentinel => $s,
        options => 'replica=prefer');

    is(status($n, 'steady'), 200, 'before: 200');
    ok(GmsTest::wait_until(sub {
           status($prefer, 'steady') == 200 && calls($r, 'evalsha_ro') > 0
       }, 5),
       'before, replica=prefer reads from the replica');
    is(status($cached, 'kept'), 200, 'before, with a cache: 200');
    ok(GmsTest::wait_until(sub {
           $m->cmd(PUBSUB => 'NUMSUB', 'gms:invalidate')->[1] == 1 }, 5),
       'the cache subscribed on the master')
        or diag gms_lines($cached);

    my $loop = request_rows($n->port, tokens => ['steady'], pause => 0.05,
                            seconds => 30);
    ok(GmsTest::wait_until(sub { $loop->{count}->() >= 10 }, 5),
       'the loop runs');

    my $old = $m->port;
    $m->kill;
    my $t0 = time;
    is($s->wait_failover($old, 20), $r->port,
       'Sentinel promoted the replica');
    my $promoted = time;

    ok(GmsTest::wait_until(sub { status($n, 'steady') == 200 }, 5),
       'the edge follows within 5 s of the promotion');
    my $followed = time;
    # a second more of the loop on the new master
    my $settled = $followed + 1;
    sleep 0.05 while time < $settled;
    my $seen = $loop->{stop}->();

    my %count;
    $count{ $_->[2] }++ for @$seen;
    is_deeply([ grep { !/^(?:200|401|503)$/ } sort keys %count ], [],
              'no answer but 200, 401, 503 meanwhile')
        or diag explain \%count;
    ok(scalar(grep { $_->[0] < $t0 && $_->[2] == 200 } @$seen),
       '200s before the kill');
    my @after = grep { $_->[0] > $followed } @$seen;
    ok(@after && !grep({ $_->[2] != 200 } @after),
       'only 200s once the edge followed')
        or diag explain \@after;
    note sprintf 'promotion %.1f s after the kill, followed %.1f s later; %s',
                 $promoted - $t0, $followed - $promoted,
                 join ', ', map { "$_: $count{$_}" } sort keys %count;

    cmp_ok(metric($n, 'gms_redis_failovers_total') // 0, '>=', 1,
           'gms_redis_failovers_total');

    # the Sentinels list the new master's replicas once they have reached
    # them, after +switch-master
    ok(GmsTest::wait_until(sub {
           status($prefer, 'steady') == 200 && calls($r2, 'evalsha_ro') > 0
       }, 15),
       'replica=prefer reads from the new master\'s replica')
        or diag gms_lines($prefer);
    my $ro = calls($r, 'evalsha_ro');
    is(status($prefer, 'steady'), 200, 'replica=prefer: 200');
    is(calls($r, 'evalsha_ro'), $ro, 'and nothing read from the new master');
    is(metric($n, 'gms_redis_connected{target="master"}'), 1,
       'connected to the new master');
    like($n->error_log, qr/127\.0\.0\.1:@{[ $r->port ]}/,
         'the new master named in the log');

    # the cache's subscription moved to the new master: what is published
    # there drops the entry (and nothing else does: the ttl is 300 s)
    ok(GmsTest::wait_until(sub {
           $r->cmd(PUBSUB => 'NUMSUB', 'gms:invalidate')->[1] == 1 }, 10),
       'the cache subscribed on the new master');
    is(status($cached, 'kept'), 200, 'kept: 200, cached again');
    $r->cmd(DEL => "gms:token:$kept");
    is(status($cached, 'kept'), 200, 'deleted without a message: still cached');
    $r->cmd(PUBLISH => 'gms:invalidate', $kept);
    ok(GmsTest::wait_until(sub { status($cached, 'kept') == 401 }, 2),
       'published on the new master: dropped, 401')
        or diag gms_lines($cached);

    no_crash($n);
    no_crash($cached);
    no_crash($prefer);
};

done_testing();

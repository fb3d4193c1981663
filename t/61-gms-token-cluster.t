#!/usr/bin/perl

# gms-token against a real Redis Cluster (issue 27), on TLS with a
# password: --redis-cluster ADDR,... finds the master of the slot of the
# prefix's hash tag ({gms}: by default; a prefix without a tag, --redis
# or --db beside it, are usage errors), the seeds tried in turn (a dead
# one first; none reachable: one line, exit code 3); an ACL user
# (--user); --redis at a node that does not serve the slot says to give
# --redis-cluster; put, show, grant, privileges, revoke land on that
# master and publish on {gms}:invalidate, which a subscriber on another
# node sees; WAIT before PUBLISH: with the slot's replica stopped (SIGSTOP) a revoke still
# completes, warns that WAIT expired, and publishes; 'migrate' copies a
# standalone Redis's gms: keys to the cluster's {gms}: with their TTLs,
# skipping a key of the wrong type, the lease and keys of no contract,
# idempotent, and from the master a Sentinel names; never a key that
# had an expiry without one (issue 33: thousands in their last
# milliseconds); 'sync --gms' (an
# expired token's id published twice: by the deletion's script, then
# after WAIT) and 'follow' with its lease against the cluster; the slot
# held mid-migration (show follows ASK, put's transaction fails naming
# it), then moved to another master while follow runs, then that master
# killed and its replica promoted: follow's next cycles, and the next
# commands, succeed after rediscovery.

use strict;
use warnings;

use Test::More;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Certs;
use GmsTest::Cluster;
use GmsTest::GraphQL;
use GmsTest::Sentinel;
use GmsTest::Subscriber;
use GmsTest::Tool qw(run_tool start_follow stop_follow ok_lines out_lines
                     gms_account gms_args datahub_id listed now_ms);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $t0 = time;
my $dir = GmsTest::tempdir();
my $certs = GmsTest::Certs->new;
my $PASSWORD = 'cluster-secret';
GmsTest::write_file("$dir/password", "$PASSWORD\n");

my $c = GmsTest::Cluster->start(tls => $certs, password => $PASSWORD);

my $SLOT = 11641;           # of the tag gms: CRC16 XMODEM mod 16384
is($c->slot('{gms}:token:x'), $SLOT, "{gms}: keys lie in slot $SLOT");

# a dead seed first: the seeds are asked in turn
my $seeds = join ',', '127.0.0.1:1', $c->addresses(tls => 1);
my @conn = ('--redis-cluster', $seeds, '--tls', '--tls-ca-file',
            $certs->{ca}, '--password-file', "$dir/password");

my $now = now_ms();
my $alice = 'urn:li:corpuser:alice';
my $bob = 'urn:li:corpuser:bob';

sub key { return '{gms}:token:' . datahub_id($_[0]) }
sub master { return $c->master_of($SLOT) }

# a subscriber on a node that is not the slot's master: PUBLISH in a
# cluster reaches every node
my ($elsewhere) = grep { $_->port != master()->port } $c->nodes;
my $sub = GmsTest::Subscriber->new($elsewhere, '{gms}:invalidate');

# the messages seen until $want is among them (the bus delivers the
# tool's message and the marker by different paths: asked again)
sub seen {
    my ($want) = @_;
    my @got;
    GmsTest::wait_until(sub {
        push @got, $sub->messages;
        return grep { $_ eq $want } @got;
    }, 10);
    return grep { $_ eq $want } @got;
}


# --- options ------------------------------------------------------------------

my $res = run_tool(undef, 'show', datahub_id('x'), @conn, '--prefix', 'gms:');
is($res->{rc}, 2, 'a --prefix without a hash tag: usage error');
like($res->{err}, qr/--prefix: 'gms:' has no hash tag.*\{gms\}:/,
     '... which says why and suggests {gms}:');

$res = run_tool(undef, 'show', datahub_id('x'), @conn, '--prefix', '{}x:');
is($res->{rc}, 2, 'an empty tag {} is no hash tag');

$res = run_tool(undef, 'show', datahub_id('x'), @conn, '--redis',
                '127.0.0.1:6379');
is($res->{rc}, 2, '--redis with --redis-cluster: usage error');

$res = run_tool(undef, 'show', datahub_id('x'), @conn, '--db', '1');
is($res->{rc}, 2, '--db 1 with --redis-cluster: usage error');

$res = run_tool(undef, 'show', datahub_id('x'), '--redis-cluster',
                '127.0.0.1:1', @conn[2 .. $#conn]);
is($res->{rc}, 3, 'no node reachable: a Redis error');
like($res->{err}, qr/^gms-token: show: redis cluster 127.0.0.1:1: no node (?x:
                     )led to the master of slot $SLOT.*127.0.0.1:1: (?x:
                     )cannot connect[^\n]*\n\z/,
     '... one line that says so') or diag($res->{err});

# --redis at a node that does not serve the slot: -MOVED, said for what it is
$res = run_tool(undef, 'show', datahub_id('x'), '--redis',
                $elsewhere->address, '--password-file', "$dir/password",
                '--prefix', '{gms}:');
is($res->{rc}, 3, '--redis at a cluster node: a Redis error');
like($res->{err}, qr/MOVED $SLOT \S+ \(a node of a Redis Cluster: give (?x:
                    )--redis-cluster/, '... which says to give --redis-cluster')
    or diag($res->{err});


# --- put, show, grant, revoke on the slot's master ------------------------------

$res = run_tool(undef, 'put', '--id', datahub_id('one'), '--actor', $alice,
                '--expires-in', '1d', @conn);
is($res->{rc}, 0, 'put through --redis-cluster') or diag($res->{err});
is(master()->cmd(HGET => key('one'), 'actor'), $alice,
   "... the token is on slot ${SLOT}'s master");
ok(seen(datahub_id('one')), '... its id published, seen on another node');

$res = run_tool(undef, 'show', datahub_id('one'), @conn);
like($res->{out}, qr/"actor":"\Q$alice\E"/, 'show reads it')
    or diag($res->{err});

$res = run_tool(undef, 'grant', $alice, 'MANAGE_ACCESS_TOKENS', @conn);
is($res->{rc}, 0, 'grant') or diag($res->{err});
is(master()->cmd(SISMEMBER => "{gms}:actor:$alice", 'MANAGE_ACCESS_TOKENS'),
   1, '... the set is on the master');
ok(seen($alice), '... the user published');

$res = run_tool(undef, 'privileges', $alice, @conn);
is($res->{out}, "MANAGE_ACCESS_TOKENS\n", 'privileges');

$res = run_tool(undef, 'revoke', datahub_id('one'), @conn);
is($res->{rc}, 0, 'revoke') or diag($res->{err});
is(master()->cmd(EXISTS => key('one')), 0, '... the token is gone');
ok(seen(datahub_id('one')), '... its id published');
unlike($res->{err}, qr/WAIT/, '... the replica acknowledged: no warning');

# an ACL user: AUTH user password on every node (ACLs are each node's)
$_->cmd(ACL => 'SETUSER', 'filler', 'on', '>filler-secret', '~{gms}:*',
        '&*', '+@all') for $c->nodes;
GmsTest::write_file("$dir/filler", "filler-secret\n");
$res = run_tool(undef, 'put', '--id', datahub_id('acl'), '--actor', $alice,
                @conn[0 .. 4], '--password-file', "$dir/filler", '--user',
                'filler');
is($res->{rc}, 0, '--user: put as an ACL user') or diag($res->{err});
is(master()->cmd(HGET => key('acl'), 'actor'), $alice, '... written');
$res = run_tool(undef, 'put', '--id', datahub_id('acl'), '--actor', $alice,
                @conn[0 .. 4], '--password-file', "$dir/password", '--user',
                'filler');
is($res->{rc}, 3, '--user with a wrong password: a Redis error');
like($res->{err}, qr/AUTH: WRONGPASS/, '... AUTH refused') or diag($res->{err});


# --- WAIT before PUBLISH: the replica stopped ---------------------------------

my ($replica) = $c->replicas_of(master());
ok($replica, "slot ${SLOT}'s master has a replica");

$res = run_tool(undef, 'put', '--id', datahub_id('two'), '--actor', $alice,
                @conn);
is($res->{rc}, 0, 'put a token to revoke');
seen(datahub_id('two'));

$replica->pause;
my $t = time;
$res = run_tool(undef, 'revoke', datahub_id('two'), @conn,
                '--wait-timeout', '500ms');
my $took = time - $t;
$replica->resume;

is($res->{rc}, 0, 'the replica stopped: revoke still succeeds')
    or diag($res->{err});
like($res->{err}, qr/WAIT: 0 of 1 replicas acknowledged the change within (?x:
                     )500 ms; publishing anyway/,
     '... and warns that WAIT expired') or diag($res->{err});
ok($took < 10, '... it ended (hang guard)');
is(master()->cmd(EXISTS => key('two')), 0, '... the token is gone');
ok(seen(datahub_id('two')), '... and its id published');
diag(sprintf 'revoke with the replica stopped, --wait-timeout 500ms: %.2f s',
     $took);

$res = run_tool(undef, 'put', '--id', datahub_id('three'), '--actor', $alice,
                @conn, '--wait-timeout', '0');
is($res->{rc}, 0, '--wait-timeout 0 accepted');
$res = run_tool(undef, 'put', '--id', datahub_id('three'), '--actor', $alice,
                @conn, '--wait-timeout', 'soon');
is($res->{rc}, 2, '--wait-timeout soon: usage error');


# --- migrate: a standalone gms: to the cluster's {gms}: -----------------------

my $old = GmsTest::Redis->start;
my $tok_a = 'gms:token:' . datahub_id('mig-a');
my $tok_b = 'gms:token:' . datahub_id('mig-b');
$old->cmd(HSET => $tok_a, actor => $alice, expiresAt => $now + 3_600_000);
$old->cmd(PEXPIRE => $tok_a, 3_600_000);
$old->cmd(HSET => $tok_b, actor => $bob);
$old->cmd(SADD => "gms:actor:$bob", 'P1', 'P2');
$old->cmd(SADD => 'gms:inactive', $bob);
$old->cmd(SADD => 'gms:deleted', $bob);
$old->cmd(HSET => 'gms:sync', at => $now, tokens => 2);
$old->cmd(SET => 'gms:lease', 'host:1:00', 'PX', 60_000);
$old->cmd(SET => 'gms:token:' . datahub_id('mig-bad'), 'a string');
$old->cmd(SET => 'gms:other', 'not the contract');

my @from = ('--from-redis', '127.0.0.1:' . $old->port);
$res = run_tool(undef, 'migrate', @from, @conn);
is($res->{rc}, 0, 'migrate from a standalone Redis') or diag($res->{err});
is($res->{out}, "tokens=2 actors=1 inactive=1 deleted=1 sync=1 skipped=1\n",
   '... prints what it copied');
like($res->{err}, qr/gms:token:\S+: a string, not a hash: skipped/,
     '... a key of the wrong type reported');
ok(seen('*'), "... '*' published");

my $m = master();
is($m->cmd(HGET => '{gms}:token:' . datahub_id('mig-a'), 'actor'), $alice,
   '... a token copied under {gms}:');
my $pttl = $m->cmd(PTTL => '{gms}:token:' . datahub_id('mig-a'));
ok($pttl > 3_500_000 && $pttl <= 3_600_000, "... with its TTL ($pttl ms)");
is($m->cmd(PTTL => '{gms}:token:' . datahub_id('mig-b')), -1,
   '... one without expiry stays without');
is_deeply([ sort @{ $m->cmd(SMEMBERS => "{gms}:actor:$bob") } ],
          [ 'P1', 'P2' ], '... the privileges');
is($m->cmd(SISMEMBER => '{gms}:inactive', $bob), 1, '... inactive');
is($m->cmd(SISMEMBER => '{gms}:deleted', $bob), 1, '... deleted');
is($m->cmd(HGET => '{gms}:sync', 'tokens'), 2, '... sync');
is($m->cmd(EXISTS => '{gms}:lease'), 0, '... never the lease');
is($m->cmd(EXISTS => '{gms}:other'), 0, '... nor a key of no contract');

$res = run_tool(undef, 'migrate', @from, @conn);
is($res->{out}, "tokens=2 actors=1 inactive=1 deleted=1 sync=1 skipped=1\n",
   'migrate again: the same copies');
is_deeply([ sort @{ $m->cmd(SMEMBERS => "{gms}:actor:$bob") } ],
          [ 'P1', 'P2' ], '... the same data');

# the source's master named by a Sentinel, under another prefix
$old->cmd(HSET => 'src:token:' . datahub_id('mig-c'), actor => $bob);
my $sentinel = GmsTest::Sentinel->fake(master => $old->port);
$res = run_tool(undef, 'migrate', '--from-sentinel', $sentinel->addresses,
                '--from-master', $sentinel->name, '--from-prefix', 'src:',
                @conn);
is($res->{out}, "tokens=1 actors=0 inactive=0 deleted=0 sync=0 skipped=0\n",
   'migrate --from-sentinel --from-master --from-prefix')
    or diag($res->{err});
is($m->cmd(HGET => '{gms}:token:' . datahub_id('mig-c'), 'actor'), $bob,
   '... the token copied');

$res = run_tool(undef, 'migrate', '--from-sentinel', $sentinel->addresses,
                @conn);
is($res->{rc}, 2, '--from-sentinel without --from-master: usage error');

# Keys in their last milliseconds (issue 33, finding 6): a key read in
# its last millisecond has PTTL 0, and one copied without PEXPIRE lives
# for ever.  20,000 tokens whose times to live are spread over 1 to
# 1,000 ms, made at once by a script: whenever migrate reads them, about
# one in a thousand it reads is in its last millisecond.  Beside them
# tokens of an hour and tokens without expiry.  None of the target's
# copies may be without expiry but those of the latter.
my $MAKE = <<'LUA';
for i = 1, 20000 do
  local k = ARGV[1] .. 'token:exp-' .. i
  redis.call('HSET', k, 'actor', 'urn:li:corpuser:e')
  redis.call('PEXPIRE', k, 1 + i % 1000)
end
for i = 1, 100 do
  redis.call('HSET', ARGV[1] .. 'token:hour-' .. i, 'actor', 'u')
  redis.call('PEXPIRE', ARGV[1] .. 'token:hour-' .. i, 3600000)
  redis.call('HSET', ARGV[1] .. 'token:ever-' .. i, 'actor', 'u')
end
return 1
LUA
# the target's keys under a pattern whose PTTL is -1
my $FOREVER = <<'LUA';
local out, cursor = {}, '0'
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    if redis.call('PTTL', k) == -1 then out[#out + 1] = k end
  end
until cursor == '0'
return out
LUA
my $MIG = $c->slot('{mig}:token:x');
subtest 'keys in their last milliseconds: never copied without expiry' => sub {
    my @forever;
    for my $round (1 .. 3) {
        my $p = "r$round:";
        $old->cmd(EVAL => $MAKE, 0, $p);
        $res = run_tool(undef, 'migrate', @from, '--from-prefix', $p,
                        @conn, '--prefix', "{mig}:$p");
        is($res->{rc}, 0, "round $round: migrate") or diag($res->{err});
        my $t = $c->master_of($MIG);
        push @forever, @{ $t->cmd(EVAL => $FOREVER, 0,
                                  "{mig}:${p}token:exp-*") };
        my $hour = $t->cmd(PTTL => "{mig}:${p}token:hour-1");
        ok($hour > 3_500_000, "... a token of an hour: $hour ms left");
        is(scalar @{ $t->cmd(EVAL => $FOREVER, 0,
                             "{mig}:${p}token:ever-*") }, 100,
           '... the 100 tokens without expiry stay without');
        last if @forever;
    }
    is_deeply(\@forever, [], 'no expiring token copied without expiry')
        or diag(scalar(@forever) . ' copied without expiry');
};
$old->stop;


# --- sync --gms and follow, with the lease ------------------------------------

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjbHVzdGVyIn0.'
             . 'c2VjcmV0LWdtcy1jbHVzdGVyLXNpZ25hdHVyZS02MQ';
my $token_file = gms_account($SECRET, $dir);
my $gms = GmsTest::GraphQL->start(token => $SECRET,
    tokens => [ listed('s-1'), listed('s-2'),
                listed('s-old', expires => $now - 60_000) ],
    policies => [ { urn => 'urn:li:dataHubPolicy:tokens',
                    privileges => ['MANAGE_ACCESS_TOKENS'],
                    actors => { users => [$alice] } } ]);

# cached, listed as expired: sync deletes it
run_tool(undef, 'put', '--id', datahub_id('s-old'), '--actor', $alice, @conn);
seen(datahub_id('s-old'));

$res = run_tool(undef, 'sync', gms_args($gms->url, $token_file), @conn);
is($res->{rc}, 0, 'sync --gms through --redis-cluster') or diag($res->{err});
is(master()->cmd(EXISTS => key('s-1'), key('s-2')), 2,
   '... the listed tokens are on the master');
my @got;
GmsTest::wait_until(sub {
    push @got, $sub->messages;
    return 2 <= grep { $_ eq datahub_id('s-old') } @got;
}, 10);
ok((grep { $_ eq datahub_id('s-1') } @got), '... and published');
is(master()->cmd(EXISTS => key('s-old')), 0, '... the expired one deleted');
is(scalar(grep { $_ eq datahub_id('s-old') } @got), 2,
   '... its id published by the deletion, and again after WAIT');

my $f = start_follow(gms_args($gms->url, $token_file), '--interval', '1s',
                     '--privileges-interval', '1s', @conn);
END { kill 'KILL', $f->{pid} if $f && $f->{pid} }

ok(GmsTest::wait_until(sub { ok_lines($f) >= 1 }, 15),
   'follow: a cycle against the cluster');
like(master()->cmd(GET => '{gms}:lease') // '', qr/:$f->{pid}:/,
     '... it holds the lease {gms}:lease on the master');
like(master()->cmd(HGET => '{gms}:sync', 'holder') // '', qr/:$f->{pid}:/,
     '... and names itself in {gms}:sync');

# the slot moves to another master under the running follower
my $from_node = master();
my ($to) = grep { $_->port != $from_node->port
                  && ($_->cmd(INFO => 'replication') // '') =~ /^role:master/m }
           $c->nodes;
$c->migrate($SLOT, $to, hold => 1);

# mid-migration: a key already moved is answered -ASK by the old master
$res = run_tool(undef, 'show', datahub_id('s-1'), '--redis-cluster',
                $from_node->address(tls => 1), @conn[2 .. $#conn]);
is($res->{rc}, 0, 'the slot in migration: show follows ASK')
    or diag($res->{err});
like($res->{out}, qr/"actor":"\Q$alice\E"/, '... and reads the token');

# a transaction is not redirected: it fails, saying why
$res = run_tool(undef, 'put', '--id', datahub_id('s-9'), '--actor', $alice,
                '--redis-cluster', $from_node->address(tls => 1),
                @conn[2 .. $#conn]);
is($res->{rc}, 3, '... put (MULTI) fails');
like($res->{err}, qr/ASK \d+ \S+ \(the slot of the prefix's hash tag is (?x:
                    )being migrated; try again once it is done\)/,
     '... naming the redirection') or diag($res->{err});

$c->finish_migration($SLOT, $to);
$c->wait_ok(15);
is(master()->port, $to->port, "slot $SLOT migrated to another master");

# a single command on the old master: -MOVED, followed once
$res = run_tool(undef, 'show', datahub_id('s-1'), '--redis-cluster',
                $from_node->address(tls => 1), @conn[2 .. $#conn]);
is($res->{rc}, 0, 'after the migration: show seeded with the old master')
    or diag($res->{err});

$gms->tokens([ listed('s-1'), listed('s-2'), listed('s-3') ]);
ok(GmsTest::wait_until(sub { $to->cmd(EXISTS => key('s-3')) }, 20),
   '... follow writes the next token there (rediscovered)')
    or diag(GmsTest::slurp($f->{out}), GmsTest::slurp($f->{err}));
ok(GmsTest::wait_until(sub {
       ($to->cmd(GET => '{gms}:lease') // '') =~ /:$f->{pid}:/ }, 10),
   '... and keeps its lease there');

# a command whose first seed is the old master
$res = run_tool(undef, 'show', datahub_id('s-3'), '--redis-cluster',
                $from_node->address(tls => 1), @conn[2 .. $#conn]);
is($res->{rc}, 0, '... a command seeded with the old master finds it')
    or diag($res->{err});

# the new master killed: its replica promoted
my $promoted = $c->kill_master_of($SLOT, 20);
ok($promoted, 'the master killed, its replica promoted');

$gms->tokens([ listed('s-1'), listed('s-2'), listed('s-3'), listed('s-4') ]);
ok(GmsTest::wait_until(sub {
       $promoted && $promoted->cmd(EXISTS => key('s-4')) }, 25),
   '... follow writes the next token on the promoted replica')
    or diag(GmsTest::slurp($f->{out}), GmsTest::slurp($f->{err}));

$res = run_tool(undef, 'revoke', datahub_id('s-4'), @conn);
is($res->{rc}, 0, '... and the next command succeeds') or diag($res->{err});

is(stop_follow($f, 'TERM', 10), 0, 'follow stops on SIGTERM');
$f = undef;

diag(sprintf 't/61 ran in %.1f s', time - $t0);

$c->stop;
undef $c;

done_testing();

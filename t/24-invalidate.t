#!/usr/bin/perl

# Push invalidation: what gms-token publishes on <prefix>invalidate drops
# the matching entries from every worker's shared cache at once, whatever
# the ttl (a token id, a user's URN, "*", anything else: everything); a
# subscription that was down drops the whole cache when it comes back; the
# metrics count it all, and gms_token_sync_age_seconds follows <prefix>sync
# (with or without a cache); a quiet subscription is PINGed and kept.

use strict;
use warnings;

use Test::More;
use File::Basename qw(dirname);
use Cwd qw(abs_path);
use POSIX ();
use Time::HiRes qw(sleep);
use GmsTest;
use GmsTest::Edge;

my $repo = abs_path(dirname(__FILE__) . '/..');
my $bin = $ENV{GMS_TOKEN_BIN} // "$repo/build/gms-token";

plan skip_all => "gms-token not built: $bin (run 'make tool')" unless -x $bin;

delete $ENV{GMS_REDIS_PASSWORD};

my $e = GmsTest::Edge->start(
    workers => 2,
    http    => 'gms_token_cache zone=tokens:1m ttl=300s negative_ttl=300s;',
    server  => 'location = /metrics { gms_token_auth off; '
               . 'gms_token_metrics; }',
);
my $redis = $e->redis;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

sub tool {
    my (@args) = @_;
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        exec { $bin } $bin, @args or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    return $? >> 8;
}

sub status { $e->get($_[0] // '/entities/x', $_[1])->{status} }
sub result { $e->get($_[0], $_[1])->{headers}{'x-gms-result'} // '' }

sub metric {
    my ($name) = @_;
    my $text = $e->nginx->http(GET => '/metrics')->{body};
    return $text =~ /^\Q$name\E (\S+)$/m ? $1 : undef;
}

# both workers subscribed before anything is cached
ok(GmsTest::wait_until(
       sub { (metric('gms_token_invalidation_subscriptions') // 0) == 2 }, 5),
   'every worker subscribed');
is(metric('gms_token_invalidation_flushes_total'), 2,
   'each subscription began by dropping the cache');

# --- a token id -------------------------------------------------------------

my $id = $e->token('alice-token', actor => 'urn:li:corpuser:alice');
$e->token('bob-token', actor => 'urn:li:corpuser:bob');

is(status(undef, 'alice-token'), 200, 'alice cached for 300s');
is(status(undef, 'bob-token'), 200, 'bob cached for 300s');

my $before = $e->lookups;
$redis->cmd(DEL => "gms:token:$id");
is(status(undef, 'alice-token'), 200,
   'deleted in Redis without a message: still cached (the ttl rules)');

is(tool('revoke', @at, $id), 1, 'gms-token revoke: was not cached in Redis');
ok(GmsTest::wait_until(sub { status(undef, 'alice-token') == 401 }, 2),
   'revoke published the id: refused within 2 s, ttl 300s notwithstanding');
is(status(undef, 'bob-token'), 200, 'other tokens stay cached');
is($e->lookups - $before, 1, 'one new lookup: only the dropped entry');
ok(metric('gms_token_invalidations_total') >= 2,
   'each worker received the message');

# --- a negative entry -------------------------------------------------------

my $carol_id = GmsTest::sha256_b64('carol-token');
is(status(undef, 'carol-token'), 401, 'unknown: cached as such for 300s');
is(tool('put', @at, '--id', $carol_id, '--actor', 'urn:li:corpuser:carol'),
   0, 'gms-token put');
ok(GmsTest::wait_until(sub { status(undef, 'carol-token') == 200 }, 2),
   'put published the id: the negative entry is gone');

# --- a user: privileges changed ---------------------------------------------

$e->token('dave-1', actor => 'urn:li:corpuser:dave');
$e->token('dave-2', actor => 'urn:li:corpuser:dave');
$e->grant('urn:li:corpuser:dave', 'MANAGE_ACCESS_TOKENS');

is(status('/admin/x', 'dave-1'), 200, 'dave may, token 1');
is(status('/admin/x', 'dave-2'), 200, 'dave may, token 2');

is(tool('deny', @at, 'urn:li:corpuser:dave', 'MANAGE_ACCESS_TOKENS'), 0,
   'gms-token deny');
ok(GmsTest::wait_until(sub { result('/admin/x', 'dave-1') eq 'forbidden' },
                       2),
   'deny published the user: token 1 refused at once');
is(result('/admin/x', 'dave-2'), 'forbidden', 'and token 2, of the same user');
is(status(undef, 'bob-token'), 200, 'other users stay cached');

is(tool('grant', @at, 'urn:li:corpuser:dave', 'MANAGE_ACCESS_TOKENS'), 0,
   'gms-token grant');
ok(GmsTest::wait_until(sub { status('/admin/x', 'dave-1') == 200 }, 2),
   'grant published the user too');

# --- "*" and garbage ---------------------------------------------------------

$redis->cmd(DEL => 'gms:token:' . GmsTest::sha256_b64('bob-token'));
is(status(undef, 'bob-token'), 200, 'bob deleted silently, still cached');
$redis->cmd(PUBLISH => 'gms:invalidate', '*');
ok(GmsTest::wait_until(sub { status(undef, 'bob-token') == 401 }, 2),
   '"*" drops everything');

$e->token('erin-token', actor => 'urn:li:corpuser:erin');
is(status(undef, 'erin-token'), 200, 'erin cached');
$redis->cmd(DEL => 'gms:token:' . GmsTest::sha256_b64('erin-token'));
$redis->cmd(PUBLISH => 'gms:invalidate', "not\r\na token");
ok(GmsTest::wait_until(sub { status(undef, 'erin-token') == 401 }, 2),
   'a message that is neither id nor user drops everything');
like($e->nginx->error_log, qr/invalidation "not\r\na token" is neither/,
     'and is logged');

$redis->cmd(PUBLISH => 'gms:other', $id);

my $flushed = metric('gms_token_invalidation_flushes_total');
$redis->cmd(PUBLISH => 'gms:invalidate', 'x' x 10_000);
ok(GmsTest::wait_until(
       sub { metric('gms_token_invalidation_flushes_total') >= $flushed + 2
             && metric('gms_token_invalidation_subscriptions') == 2 }, 5),
   'a message over the size cap: each worker drops the connection, '
   . 'subscribes again and drops the cache');
is(status(undef, 'carol-token'), 200, 'the edge still answers');

# --- the subscription dropped and restored ----------------------------------

$e->token('frank-token', actor => 'urn:li:corpuser:frank');
is(status(undef, 'frank-token'), 200, 'frank cached');
$redis->cmd(DEL => 'gms:token:' . GmsTest::sha256_b64('frank-token'));
is(status(undef, 'frank-token'), 200, 'deleted silently: still cached');

my $flushes = metric('gms_token_invalidation_flushes_total');
$redis->cmd(CLIENT => 'KILL', 'TYPE', 'pubsub');
ok(GmsTest::wait_until(
       sub { metric('gms_token_invalidation_flushes_total') >= $flushes + 2
             && metric('gms_token_invalidation_subscriptions') == 2 }, 5),
   'both workers subscribed again, each dropping the cache');
is(status(undef, 'frank-token'), 401,
   'what was missed while down cannot be served from the cache');

# --- gms_token_sync_age_seconds ----------------------------------------------

is(metric('gms_token_sync_age_seconds'), '+Inf', 'no sync yet: +Inf');

my $at = int(Time::HiRes::time() * 1000) - 5000;
$redis->cmd(HSET => 'gms:sync', at => $at, tokens => 3);
ok(GmsTest::wait_until(sub {
       my $age = metric('gms_token_sync_age_seconds');
       $age ne '+Inf' && $age >= 5 && $age < 30 }, 4),
   'the last sync 5 s ago: an age of 5 s and a bit');

$redis->cmd(HSET => 'gms:sync', at => 'soon');
ok(GmsTest::wait_until(
       sub { metric('gms_token_sync_age_seconds') eq '+Inf' }, 4),
   'a bad time is no time');
like($e->nginx->error_log, qr/"gms:sync" field "at" is not a time/,
     'and is logged');

$redis->cmd(DEL => 'gms:sync');

# --- at most one HGET a second, for the whole edge ---------------------------

$redis->cmd(CONFIG => 'RESETSTAT');
sleep(3.2);
my ($calls) = $redis->cmd(INFO => 'commandstats')
              =~ /^cmdstat_hget:calls=(\d+)/m;
ok(defined $calls && $calls >= 2 && $calls <= 4,
   "3 s, 2 workers: one HGET a second (@{[ $calls // 0 ]})");

# --- a quiet subscription -----------------------------------------------------

# the last subscription began with the CLIENT KILL above: quiet since
sub subscribers {
    return grep { /\bsub=1\b/ } split /\n/, $redis->cmd(CLIENT => 'LIST');
}

my $flushes_now = metric('gms_token_invalidation_flushes_total');
ok(GmsTest::wait_until(sub {
       my @subs = subscribers();
       @subs == 2 && !grep { !/\bcmd=ping\b/ } @subs }, 25),
   'each worker PINGs its quiet subscription (CLIENT LIST: cmd=ping)');
is(metric('gms_token_invalidation_flushes_total'), $flushes_now,
   'and takes Redis\'s ["pong", ""]: not subscribed again');

$e->token('grace-token', actor => 'urn:li:corpuser:grace');
is(status(undef, 'grace-token'), 200, 'grace cached');
$redis->cmd(DEL => 'gms:token:' . GmsTest::sha256_b64('grace-token'));
$redis->cmd(PUBLISH => 'gms:invalidate', GmsTest::sha256_b64('grace-token'));
ok(GmsTest::wait_until(sub { status(undef, 'grace-token') == 401 }, 2),
   'invalidations still arrive after the PINGs');

$e->nginx->stop;
is_deeply([ grep { !/is neither a token id|is not a time|closing redis subscription|closing the redis subscription|subscription connection lost|subscription: unexpected string/ }
            $e->nginx->bad_log_lines ], [], 'no other alerts or errors');


# --- gms_token_sync_age_seconds without a cache ------------------------------

my $plain = GmsTest::Edge->start(
    server => 'location = /metrics { gms_token_auth off; '
              . 'gms_token_metrics; }',
);

sub plain_age {
    my $text = $plain->nginx->http(GET => '/metrics')->{body} // '';
    return $text =~ /^gms_token_sync_age_seconds (\S+)$/m ? $1 : '';
}

is(plain_age(), '+Inf', 'no cache, no sync yet: +Inf');
$plain->redis->cmd(HSET => 'gms:sync',
                   at => int(Time::HiRes::time() * 1000) - 5000);
ok(GmsTest::wait_until(sub {
       my $age = plain_age();
       $age ne '+Inf' && $age >= 5 && $age < 30 }, 4),
   'without gms_token_cache too: the age of the last sync');

done_testing;

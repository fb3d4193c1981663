#!/usr/bin/perl

# The shared token cache: hits need no Redis, revocation and negative
# entries age out with their ttl, expiresAt is honoured mid-ttl, a flood
# of random tokens leaves real users in place, concurrent requests with
# one cold token make one lookup, stale entries stand in for a failing
# Redis, an entry too large for the zone is not kept, and the zone
# survives a reload, but not its entries when the reload changes where
# tokens come from.

use strict;
use warnings;

use Test::More;
use POSIX ();
use Time::HiRes qw(sleep time);
use GmsTest;
use GmsTest::Edge;

sub status { $_[0]->get("/entities/x", $_[1])->{status} }

my $actor = sub { $_[0]->{headers}{'x-gms-actor'} };

# --- ttl, revocation, negative entries, expiresAt ---------------------------

{
    my $e = GmsTest::Edge->start(
        http => 'gms_token_cache zone=tokens:1m ttl=1s negative_ttl=1s;');

    $e->token('cached', actor => 'urn:li:corpuser:alice');
    is(status($e, 'cached'), 200, 'warm');

    my $before = $e->lookups;
    is(status($e, 'cached'), 200, 'cached token');
    is($e->lookups, $before, 'a hit makes no Redis lookup');

    $e->redis->cmd(DEL => 'gms:token:' . GmsTest::sha256_b64('cached'));
    is(status($e, 'cached'), 200, 'revoked, still cached within ttl');
    ok(GmsTest::wait_until(sub { status($e, 'cached') == 401 }, 3),
       'revocation visible once the ttl has passed');

    is(status($e, 'later'), 401, 'unknown token');
    $e->token('later', actor => 'urn:li:corpuser:bob');
    $before = $e->lookups;
    is(status($e, 'later'), 401, 'negative entry answers within negative_ttl');
    is($e->lookups, $before, 'without a lookup');
    ok(GmsTest::wait_until(sub { status($e, 'later') == 200 }, 3),
       'negative entry expires after negative_ttl');

    $e->nginx->stop;
    is_deeply([$e->nginx->bad_log_lines], [], 'no alerts');
}

{
    my $e = GmsTest::Edge->start(
        http => 'gms_token_cache zone=tokens:1m ttl=60s;');

    my $expires = int(time() * 1000) + 1200;
    $e->token('short', actor => 'urn:li:corpuser:alice',
              expiresAt => $expires);
    is(status($e, 'short'), 200, 'token valid, cached for up to 60s');
    sleep(0.1) while time() * 1000 < $expires + 50;
    is(status($e, 'short'), 401, 'expiresAt honoured in the middle of the ttl');
    is($e->get('/entities/x', 'short')->{headers}{'x-gms-result'}, 'expired',
       'as expired');
}

# --- hits need no Redis; a flood does not evict real users; reload ----------

{
    my $e = GmsTest::Edge->start(
        http => 'gms_token_cache zone=tokens:128k ttl=60s negative_ttl=60s;',
        server => 'location = /metrics { gms_token_auth off; '
                  . 'gms_token_metrics; }');
    my $n = $e->nginx;

    $e->token("good-$_", actor => "urn:li:corpuser:user$_") for 1 .. 100;

    my $res = $n->parallel([ map {
        [GET => '/entities/x', { Authorization => "Bearer good-$_" }]
    } 1 .. 100 ]);
    is(scalar(grep { $_->{status} == 200 } @$res), 100,
       '100 good tokens warmed');

    my $flooded = 0;
    for my $batch (0 .. 49) {
        $res = $n->parallel([ map {
            [GET => '/entities/x',
             { Authorization => 'Bearer random-' . ($batch * 200 + $_) }]
        } 1 .. 200 ]);
        $flooded += grep { $_->{status} == 401 } @$res;
    }
    is($flooded, 10_000, '10,000 random tokens refused');

    # the negative budget is a quarter of the zone in the slab's own
    # sizes: a negative node takes 256 bytes, so 128k / 4 / 256 of them
    my $metrics = $n->http(GET => '/metrics')->{body} // '';
    my ($negative) = $metrics
        =~ /^gms_token_cache_entries\{kind="negative"\} (\d+)$/m;
    my ($positive) = $metrics
        =~ /^gms_token_cache_entries\{kind="positive"\} (\d+)$/m;
    my ($evicted) = $metrics
        =~ /^gms_token_cache_evictions_total\{kind="negative"\} (\d+)$/m;
    my ($evicted_positive) = $metrics
        =~ /^gms_token_cache_evictions_total\{kind="positive"\} (\d+)$/m;
    ok(defined $negative && $negative <= 128 * 1024 / 4 / 256,
       'negative entries within a quarter of the zone ('
       . ($negative // 'none') . ')');
    is($positive, 100, 'the 100 good tokens still cached');
    ok(defined $evicted && $evicted >= 10_000 - $negative,
       'the flood evicted negative entries, counted ('
       . ($evicted // 'none') . ')');
    is($evicted_positive, 0, 'no positive entry evicted');

    $e->redis->stop;

    $res = $n->parallel([ map {
        [GET => '/entities/x', { Authorization => "Bearer good-$_" }]
    } 1 .. 100 ]);
    is(scalar(grep { $_->{status} == 200 } @$res), 100,
       'Redis stopped: all 100 good tokens still answered from the cache');
    is(status($e, 'never-seen'), 503, 'Redis stopped: an uncached token gets 503');

    $n->reload;
    is(status($e, 'good-7'), 200, 'the cache survives a reload');

    $n->stop;
    is_deeply([$n->bad_log_lines], [], 'no alerts');
}

# --- entries too large for the zone -----------------------------------------

# The smallest zone nginx takes (8 pages); an entry over 1/16 of it is
# looked up each time instead of evicting the others or, the largest one
# (a 512-byte actor with 256 privileges of 128 bytes: larger than the
# whole zone), failing to fit with an alert on every request.

subtest 'an entry too large for the zone is not cached' => sub {
    my $page = POSIX::sysconf(POSIX::_SC_PAGESIZE()) || 4096;
    my $e = GmsTest::Edge->start(
        http => 'gms_token_cache zone=small:' . (8 * $page / 1024) . 'k '
                . 'ttl=60s;');

    my $largest = 'urn:li:corpuser:' . ('l' x (512 - 16));
    my @privileges = map { sprintf('P%03d_', $_) . ('X' x 123) } 1 .. 256;
    $e->token('largest', actor => $largest);
    $e->grant($largest, @privileges);

    # about 3/4 of a page: fits in the zone, yet over 1/16 of it
    my $large = 'urn:li:corpuser:large';
    my $some = int(3 * $page / 4 / 129);
    $e->token('large', actor => $large);
    $e->grant($large, @privileges[0 .. $some - 1]);

    $e->token('small', actor => 'urn:li:corpuser:small');

    for my $case ([largest => $largest, 256], [large => $large, $some]) {
        my ($token, $urn, $n) = @$case;
        my $lookups = $e->lookups;
        my @res = map { $e->get('/entities/x', $token) } 1 .. 3;
        is_deeply([map { $_->{status} } @res], [200, 200, 200],
                  "$token entry: answered every time");
        is($actor->($res[2]), $urn, 'with its actor');
        is(scalar(split /,/, $res[2]{headers}{'x-gms-privileges'}), $n,
           'and its privileges');
        is($e->lookups - $lookups, 3, 'each time from Redis');
    }

    is($e->get('/entities/x', 'small')->{status}, 200, 'a small entry');
    my $lookups = $e->lookups;
    is($actor->($e->get('/entities/x', 'small')), 'urn:li:corpuser:small',
       'answered again');
    is($e->lookups - $lookups, 0, 'from the cache');

    $e->nginx->stop;
    is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');
};

# --- coalescing --------------------------------------------------------------

{
    my $e = GmsTest::Edge->start(timeout => '2s');
    $e->token('cold', actor => 'urn:li:corpuser:alice');

    my $before = $e->lookups;

    # Redis busy for a moment: every request arrives while the first
    # request's lookup is still pending
    my $pid = $e->redis->sleep_in_background(0.4);
    sleep(0.1);

    my $res = $e->nginx->parallel([ map {
        [GET => "/entities/$_", { Authorization => 'Bearer cold' }]
    } 1 .. 20 ]);
    waitpid($pid, 0);

    is(scalar(grep { $_->{status} == 200 } @$res), 20,
       '20 concurrent requests with one cold token answered');
    is($e->lookups - $before, 1, 'with one Redis lookup');
}

# --- stale entries while Redis fails ----------------------------------------

{
    my $e = GmsTest::Edge->start(
        http => 'gms_token_cache zone=tokens:1m ttl=1s stale=2s;');

    $e->token('kept', actor => 'urn:li:corpuser:alice');
    my $warmed = time();
    is(status($e, 'kept'), 200, 'warm');

    $e->redis->stop;
    sleep(0.1) while time() < $warmed + 1.2;

    my $res = $e->get('/entities/x', 'kept');
    is($res->{status}, 200, 'past ttl, Redis down: the stale entry is used');
    is(GmsTest::json_decode($res->{body})->{header}{'x-datahub-actor'},
       'urn:li:corpuser:alice', 'with its actor');
    like($e->nginx->error_log, qr/\[warn\].*stale cache entry/,
         'stale use logged');

    sleep(0.1) while time() < $warmed + 3.3;
    is(status($e, 'kept'), 503, 'past the stale window: fail closed');
}

{
    my $e = GmsTest::Edge->start(
        http => 'gms_token_cache zone=tokens:1m ttl=1s;');

    $e->token('kept', actor => 'urn:li:corpuser:alice');
    my $warmed = time();
    is(status($e, 'kept'), 200, 'warm');
    $e->redis->stop;
    sleep(0.1) while time() < $warmed + 1.2;
    is(status($e, 'kept'), 503, 'without stale=, past ttl and Redis down: 503');
}

# --- a reload that changes where tokens come from ---------------------------

# The token id (the cache's key) depends on the token and the salt only:
# after a reload to another Redis, key prefix or database, the same id
# names another entry, and the cached one must not answer for it.  A new
# worker's subscription to invalidations drops the whole cache once
# confirmed; until then (or if it never is) only the entries' record of
# where they came from keeps them out.  Here the Redis refuses SUBSCRIBE,
# so that nothing else drops them.

sub refuse_subscribe {
    my ($redis) = @_;
    is($redis->cmd(ACL => 'SETUSER', 'default', '-subscribe'), 'OK',
       'this Redis refuses SUBSCRIBE');
}

# nginx -s reload with gms_token_redis 127.0.0.1:$port_and_params
sub reload_redis {
    my ($e, $port_and_params) = @_;
    $e->nginx->{opt}{vars}{REDIS} = $port_and_params;
    $e->reload;
}

subtest 'reload with another prefix: cached entries not used' => sub {
    my $r = GmsTest::Edge->start(
        http => 'gms_token_cache zone=reload_tokens:1m ttl=60s '
                . 'negative_ttl=60s;');

    $r->token('moving', actor => 'urn:li:corpuser:one');
    $r->token('gone', actor => 'urn:li:corpuser:gone');
    is($actor->($r->get('/entities/x', 'moving')), 'urn:li:corpuser:one',
       'cached under gms:');
    is($r->get('/entities/x', 'gone')->{status}, 200, 'another, cached');

    refuse_subscribe($r->redis);
    $r->reload(prefix => 'other:');
    $r->token('moving', actor => 'urn:li:corpuser:two');
    is($actor->($r->get('/entities/x', 'moving')), 'urn:li:corpuser:two',
       'another prefix: read from it, not from the cache');
    is($r->get('/entities/x', 'gone')->{status}, 401,
       'a token only under the old prefix: 401');

    $r->nginx->stop;
    is_deeply([$r->nginx->bad_log_lines], [], 'no alerts or crashes');
};

subtest 'reload with another Redis address: cached entries not used' => sub {
    my $r = GmsTest::Edge->start(
        http => 'gms_token_cache zone=reload_tokens:1m ttl=60s;');
    my $other = GmsTest::Redis->start;

    my $id = $r->token('moving', actor => 'urn:li:corpuser:one');
    $other->cmd(HSET => "gms:token:$id", actor => 'urn:li:corpuser:two');

    is($actor->($r->get('/entities/x', 'moving')), 'urn:li:corpuser:one',
       'cached from the first Redis');
    my $lookups = $r->lookups;
    is($actor->($r->get('/entities/x', 'moving')), 'urn:li:corpuser:one',
       'answered from the cache');
    is($r->lookups - $lookups, 0, 'without a lookup');

    refuse_subscribe($other);
    reload_redis($r, $other->port);
    my $res = $r->get('/entities/x', 'moving');
    is($actor->($res), 'urn:li:corpuser:two',
       "the same token id: the other Redis's actor, not the cached one");
    is(GmsTest::json_decode($res->{body})->{header}{'x-datahub-actor'},
       'urn:li:corpuser:two', 'as GMS saw it');

    $r->nginx->stop;
    is_deeply([$r->nginx->bad_log_lines], [], 'no alerts or crashes');
};

subtest 'reload with another db=: cached entries not used' => sub {
    my $r = GmsTest::Edge->start(
        http => 'gms_token_cache zone=reload_tokens:1m ttl=60s;');

    # a connection of its own: SELECT stays with it
    my $db1 = GmsTest::Redis->client(port => $r->redis->port);
    my $id = $r->token('moving', actor => 'urn:li:corpuser:one');
    $db1->cmd(SELECT => 1);
    $db1->cmd(HSET => "gms:token:$id", actor => 'urn:li:corpuser:two');

    is($actor->($r->get('/entities/x', 'moving')), 'urn:li:corpuser:one',
       'cached from db 0');

    refuse_subscribe($r->redis);
    reload_redis($r, $r->redis->port . ' db=1');
    my $res = $r->get('/entities/x', 'moving');
    is($actor->($res), 'urn:li:corpuser:two',
       "the same token id: db 1's actor, not the cached one");
    is(GmsTest::json_decode($res->{body})->{header}{'x-datahub-actor'},
       'urn:li:corpuser:two', 'as GMS saw it');

    $r->nginx->stop;
    is_deeply([$r->nginx->bad_log_lines], [], 'no alerts or crashes');
};

done_testing();

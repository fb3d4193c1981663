#!/usr/bin/perl

# The shared token cache: hits need no Redis, revocation and negative
# entries age out with their ttl, expiresAt is honoured mid-ttl, a flood
# of random tokens leaves real users in place, concurrent requests with
# one cold token make one lookup, stale entries stand in for a failing
# Redis, and the zone survives a reload.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep time);
use GmsTest;
use GmsTest::Edge;

sub status { $_[0]->get("/entities/x", $_[1])->{status} }

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
        http => 'gms_token_cache zone=tokens:128k ttl=60s negative_ttl=60s;');
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

subtest 'reload with another prefix or salt: cached entries not used' => sub {
    my $r = GmsTest::Edge->start(
        master => 1,
        http => 'gms_token_cache zone=reload_tokens:1m ttl=60s '
                . 'negative_ttl=60s;');

    my $actor = sub { $_[0]->{headers}{'x-gms-actor'} };

    $r->token('moving', actor => 'urn:li:corpuser:one');
    $r->token('gone', actor => 'urn:li:corpuser:gone');
    is($actor->($r->get('/entities/x', 'moving')), 'urn:li:corpuser:one',
       'cached under gms:');
    is($r->get('/entities/x', 'gone')->{status}, 200, 'another, cached');

    $r->reload(prefix => 'other:');
    $r->token('moving', actor => 'urn:li:corpuser:two');
    is($actor->($r->get('/entities/x', 'moving')), 'urn:li:corpuser:two',
       'another prefix: read from it, not from the cache');
    is($r->get('/entities/x', 'gone')->{status}, 401,
       'a token only under the old prefix: 401');

    $r->reload(salt => 'pepper');
    $r->token('moving', salt => 'pepper', actor => 'urn:li:corpuser:three');
    is($actor->($r->get('/entities/x', 'moving')), 'urn:li:corpuser:three',
       'another salt: read anew');

    $r->nginx->stop;
    is_deeply([$r->nginx->bad_log_lines], [], 'no alerts or crashes');
};

done_testing();

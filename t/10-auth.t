#!/usr/bin/perl

# The bearer token check in the access phase: a real redis-server holds the
# tokens as the metadata service would write them, a stand-in GMS echoes
# what reached it.

use strict;
use warnings;

use Test::More;
use GmsTest;
use GmsTest::Edge;
use GmsTest::Messages qw($RESTLI_EXCEPTION $CHALLENGE $INVALID_TOKEN
                         $INSUFFICIENT_SCOPE $MISSING_TOKEN $MALFORMED_HEADER
                         $UNKNOWN_TOKEN $EXPIRED_TOKEN $UNAUTHORIZED
                         $STORE_UNAVAILABLE
                         refused);

# /realm/: gms_token_realm, a quote and a backslash in it
my $e = GmsTest::Edge->start(server => <<'SERVER');
        location /realm/ {
            gms_token_realm 'Corp "One" \\ Two';
            proxy_pass http://gms;
        }
SERVER
my $n = $e->nginx;

my $alice = 'urn:li:corpuser:alice';
my $bob = 'urn:li:corpuser:bob';

$e->token('alice-token', actor => $alice, type => 'PERSONAL');
$e->grant($alice, 'GET_ES_TASK_STATUS_PRIVILEGE');

sub body { GmsTest::json_decode($_[0]{body}) }

# What the stand-in GMS saw last (undef if nothing reached it).
sub gms_saw {
    my $reqs = $e->gms->requests;
    return $reqs->[-1];
}

# --- refusals, and nothing reaches GMS -------------------------------------

$e->gms->clear_requests;

refused($e->get('/entities/urn%3Ali%3Acorpuser%3Aalice'), 401, $CHALLENGE,
        $MISSING_TOKEN, 'no token', 'content-type' => 'application/json');

my $before = $e->lookups;

for my $header ('Basic YWxpY2U6c2VjcmV0', 'Bearer', 'Bearer ',
                'Bearer a b', 'Bearer a,b', 'Token alice-token',
                'Bearer ' . ('a' x 4097))
{
    refused($n->http(GET => '/entities/x', { Authorization => $header }), 401,
            $INVALID_TOKEN, $MALFORMED_HEADER,
            'malformed: ' . substr($header, 0, 24),
            'content-type' => 'application/json');
}

is($e->lookups, $before, 'malformed headers cost no Redis call');

refused($e->get('/entities/x', 'no-such-token'), 401, $INVALID_TOKEN,
        $UNKNOWN_TOKEN, 'unknown token', 'content-type' => 'application/json');
is($e->lookups, $before + 1, 'an unknown token costs one lookup');

# --- the realm, a quoted-string (RFC 9110) ---------------------------------

refused($e->get('/realm/x'), 401, 'Bearer realm="Corp \\"One\\" \\\\ Two"',
        $MISSING_TOKEN, 'gms_token_realm: no token');
refused($e->get('/realm/x', 'no-such-token'), 401,
        'Bearer realm="Corp \\"One\\" \\\\ Two", error="invalid_token"',
        $UNKNOWN_TOKEN, 'gms_token_realm: an unknown token');

is_deeply($e->gms->requests, [], 'no refused request reached GMS');

# --- a valid token ----------------------------------------------------------

my $id = GmsTest::sha256_b64('alice-token');
my $res = $e->get('/entities/urn%3Ali%3Acorpuser%3Aalice', 'alice-token');

is($res->{status}, 200, 'valid token: 200');
my $saw = body($res);
is($saw->{header}{authorization}, 'Bearer alice-token',
   'Authorization reaches GMS unchanged');
is($saw->{header}{'x-datahub-actor'}, $alice, 'actor set for GMS');
is($res->{headers}{'x-gms-result'}, 'ok', '$gms_token_result');
is($res->{headers}{'x-gms-id'}, $id, '$gms_token_id is the id');
is($res->{headers}{'x-gms-actor'}, $alice, '$gms_token_actor');
is($res->{headers}{'x-gms-privileges'}, 'GET_ES_TASK_STATUS_PRIVILEGE',
   '$gms_token_privileges');

$res = $n->http(GET => '/entities/x',
                { Authorization => 'bEaReR   alice-token  ' });
is($res->{status}, 200, 'scheme is case-insensitive, spaces tolerated');

$res = $e->get('/entities/x', 'no-such-token');
is($res->{headers}{'x-gms-result'}, 'unknown', 'result of an unknown token');
is($res->{headers}{'x-gms-id'}, GmsTest::sha256_b64('no-such-token'),
   'id of a refused token, for the logs');

# --- a client cannot choose the actor GMS sees ------------------------------

$res = $e->get('/entities/x', 'alice-token',
               'X-DataHub-Actor' => 'urn:li:corpuser:datahub');
my @actors = map { $_->[1] } grep { lc $_->[0] eq 'x-datahub-actor' }
             @{ body($res)->{headers} };
is_deeply(\@actors, [$alice], 'a spoofed X-DataHub-Actor is replaced');

$res = $n->http(GET => '/open/x',
                { 'X-DataHub-Actor' => 'urn:li:corpuser:datahub',
                  Authorization => 'Bearer whatever' });
is($res->{status}, 200, 'auth off: passed through');
ok(!exists body($res)->{header}{'x-datahub-actor'},
   'auth off: a spoofed X-DataHub-Actor is dropped');
is(body($res)->{header}{authorization}, 'Bearer whatever',
   'auth off: Authorization untouched');
is($res->{headers}{'x-gms-result'}, 'off', 'auth off: result is off');

# --- URNs reach GMS byte for byte, in both path forms -----------------------

my $urn = '/entities/urn%3Ali%3Adataset%3A%28urn%3Ali%3AdataPlatform%3A'
        . 'hive%2Cdb.tab%2Fle%2CPROD%29?aspects=List(datasetProperties)';

is(body($e->get($urn, 'alice-token'))->{uri}, $urn,
   'direct form: URN byte for byte');
is(body($e->get("/api/gms$urn", 'alice-token'))->{uri}, $urn,
   'frontend-proxy form: prefix stripped, URN byte for byte');

$res = $n->http(POST => '/aspects?action=ingestProposal',
                { Authorization => 'Bearer alice-token',
                  'Content-Type' => 'application/json' },
                '{"proposal":{"entityUrn":"urn:li:corpuser:alice"}}');
is($res->{status}, 200, 'POST with a body');
is(body($res)->{body}, '{"proposal":{"entityUrn":"urn:li:corpuser:alice"}}',
   'body reaches GMS');

# --- expiry, revocation, privileges -----------------------------------------

my $now = int(time() * 1000);

$e->token('old', actor => $bob, expiresAt => $now - 1000);
refused($e->get('/entities/x', 'old'), 401, $INVALID_TOKEN, $EXPIRED_TOKEN,
        'past expiresAt', 'content-type' => 'application/json');
is($e->get('/entities/x', 'old')->{headers}{'x-gms-result'}, 'expired',
   'result of an expired token');

$e->token('fresh', actor => $bob, expiresAt => $now + 3_600_000);
is($e->get('/entities/x', 'fresh')->{status}, 200, 'future expiresAt');

$e->token('forever', actor => $bob, expiresAt => 0);
is($e->get('/entities/x', 'forever')->{status}, 200, 'expiresAt 0: no expiry');

# 3 s from now, not from $now: a loaded machine may have spent that
my $soon = int(time() * 1000) + 3000;
$e->token('soon', actor => $bob, expiresAt => $soon);
is($e->get('/entities/x', 'soon')->{status}, 200, 'valid before expiresAt');
GmsTest::wait_until(sub { time() * 1000 > $soon + 100 }, 5);
is($e->get('/entities/x', 'soon')->{status}, 401, 'refused after expiresAt');

$e->token('revoked', actor => $bob);
is($e->get('/entities/x', 'revoked')->{status}, 200, 'before revocation');
$e->redis->cmd(DEL => 'gms:token:' . GmsTest::sha256_b64('revoked'));
refused($e->get('/entities/x', 'revoked'), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
        'revoked: key deleted', 'content-type' => 'application/json');

refused($e->get('/admin/tokens', 'fresh'), 401, $INSUFFICIENT_SCOPE,
        $UNAUTHORIZED, 'privilege missing',
        'content-type' => 'application/json');
is($e->get('/admin/tokens', 'fresh')->{headers}{'x-gms-result'}, 'forbidden',
   'result of a missing privilege');

$e->grant($bob, 'GENERATE_PERSONAL_ACCESS_TOKENS');
is($e->get('/admin/tokens', 'fresh')->{status}, 200,
   'one of the required privileges granted');
is($e->get('/admin/tokens', 'forever')->{status}, 200,
   'privileges belong to the user: every token of the user has them');

$e->deny($bob, 'GENERATE_PERSONAL_ACCESS_TOKENS');
is($e->get('/admin/tokens', 'fresh')->{status}, 401, 'privilege removed');

# --- Redis forgetting the lookup script -------------------------------------

sub evals {
    my ($calls) = $e->redis->cmd(INFO => 'commandstats')
                  =~ /^cmdstat_eval:calls=(\d+)/m;
    return $calls // 0;
}

my $evals = evals();
$e->redis->cmd(SCRIPT => 'FLUSH');
$res = $e->get('/entities/x', 'alice-token');
is($res->{status}, 200, 'script cache flushed: still 200');
is(evals(), $evals + 1, 'NOSCRIPT answered by sending the script (EVAL)');

# --- Redis answering an error, timing out, gone, and back -------------------

$e->redis->cmd(SET => 'gms:token:' . GmsTest::sha256_b64('wrongtype'), 'x');
$res = $e->get('/entities/x', 'wrongtype');
is($res->{status}, 503, 'Redis error reply: 503');
is($res->{headers}{'retry-after'}, '1', 'Retry-After');
is(body($res)->{status}, 503, 'error body');
like($n->error_log, qr/\[error\].*gms: redis lookup of token id .* failed/,
     'error reply logged');

$e->redis->cmd(HSET => 'gms:token:' . GmsTest::sha256_b64('badexp'),
               actor => $bob, expiresAt => 'tomorrow');
is($e->get('/entities/x', 'badexp')->{status}, 503,
   'a malformed expiresAt fails closed');

# DEBUG SLEEP blocks Redis longer than the 500ms deadline
{
    my $pid = $e->redis->sleep_in_background(1.5);
    select(undef, undef, undef, 0.2);
    $res = $e->get('/entities/x', 'alice-token');
    is($res->{status}, 503, 'Redis timing out: 503');
    like($n->error_log, qr/\[error\].*timed out/, 'timeout logged');
    waitpid($pid, 0);
}

ok(GmsTest::wait_until(
       sub { $e->get('/entities/x', 'alice-token')->{status} == 200 }, 3),
   'lookups work again after the timeout');

$e->redis->stop;
$res = $e->get('/entities/x', 'alice-token');
is($res->{status}, 503, 'Redis stopped: 503, never 200 or 401');
is($res->{headers}{'retry-after'}, '1', 'Retry-After while Redis is down');
is_deeply(body($res), { exceptionClass => $RESTLI_EXCEPTION, status => 503,
                        message => $STORE_UNAVAILABLE },
          '503 body');
is($e->get('/entities/x', 'no-such-token')->{status}, 503,
   'unknown token while Redis is down: 503, not 401');

$e->redis->start_again;
$e->token('alice-token', actor => $alice);
ok(GmsTest::wait_until(
       sub { $e->get('/entities/x', 'alice-token')->{status} == 200 }, 3),
   'Redis back: 200 again without a reload');

# --- 200 concurrent requests on one worker, pipelined on one connection -----

my @users = map { "urn:li:corpuser:user$_" } 0 .. 9;
$e->token("token-$_", actor => $users[$_]) for 0 .. 9;

my @reqs = map {
    my $i = $_;
    [GET => "/entities/$i", { Authorization => $i % 5 == 4
                                  ? "Bearer unknown-$i"
                                  : 'Bearer token-' . $i % 10 }]
} 0 .. 199;

my $clients = $e->redis->cmd(INFO => 'clients');
my $responses = $n->parallel(\@reqs);
my @wrong = grep {
    my $i = $_;
    my $r = $responses->[$i];
    $i % 5 == 4
        ? ($r->{status} // 0) != 401
        : ($r->{status} // 0) != 200
          || body($r)->{header}{'x-datahub-actor'} ne $users[$i % 10]
          || body($r)->{uri} ne "/entities/$i";
} 0 .. 199;
is_deeply(\@wrong, [], '200 concurrent requests each answered correctly');
my ($connected) = $e->redis->cmd(INFO => 'clients') =~ /connected_clients:(\d+)/;
is($connected, 2, 'one Redis connection for the worker (and the test\'s)');

# --- a client that goes away while its lookup is pending --------------------

{
    my $pid = $e->redis->sleep_in_background(0.3);
    select(undef, undef, undef, 0.1);
    my @workers = $n->worker_pids;
    $n->raw("GET /entities/x HTTP/1.0\r\nAuthorization: Bearer alice-token"
            . "\r\n\r\n", timeout => 0.05);
    waitpid($pid, 0);
    ok(GmsTest::wait_until(
           sub { $e->get('/entities/x', 'alice-token')->{status} == 200 }, 3),
       'client gone during its lookup: the worker goes on');
    is_deeply([$n->worker_pids], \@workers, 'same worker');
}

# --- the raw token is never logged ------------------------------------------

# The log is at debug level (GmsTest::Edge's default), where nginx itself
# logs every request header and every request it sends upstream: the
# module masks bearer tokens in those lines, and logs ids, not tokens.
# quotes and backslashes in the value do not end the mask
$e->get('/entities/x', undef,
        Authorization => 'Bearer "quoted-secret-1\\" quoted-secret-2');
$e->get('/entities/x', undef, Authorization => 'Basic \\"quoted-secret-3');
# a browser's cookies (DataHub's frontend session, say): values masked too
$e->get('/entities/x', 'alice-token',
        Cookie => 'PLAY_SESSION=cookie-secret-1; actor=cookie-secret-2');

my $log = $n->error_log;
unlike($log, qr/quoted-secret/, 'a quoted token is masked whole');
like($log, qr/http header: "Authorization: \*{19}$/m,
     "nginx's header line is there, masked to its end");
unlike($log, qr/alice-token|no-such-token|token-\d|unknown-\d/,
       'no raw token anywhere in the debug log');
unlike($log, qr/cookie-secret/, 'no cookie value either');
like($log, qr/http header: "Cookie: PLAY_SESSION=\*+; actor=\*+$/m,
     'the Cookie line is there, its names kept');
my @module_lines = grep { /gms: / } split /\n/, $log;
ok((grep { /\Q$id\E/ } @module_lines), 'the module logs the id instead');

$n->stop;
is_deeply([$n->bad_log_lines], [], 'no alerts, crashes or leaked sockets');

done_testing();

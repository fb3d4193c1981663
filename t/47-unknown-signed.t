#!/usr/bin/perl

# A token made in DataHub works at the edge at once (issue 25, item 8).
# A signed token that verifies under GMS's key and has not expired, but
# that Redis does not have yet (gms-token follow lists it at its next
# cycle), goes on to GMS, which decides: GMS accepts such a token at once
# (StatefulTokenService reads its entity store, not the search index that
# listAccessTokens reads).  GMS's answer reaches the client unchanged, and
# a 401 from GMS is remembered in the shared cache for negative_ttl, so a
# revoked token costs GMS one request per negative_ttl.  A token that
# gms-token removed from Redis (its id published) is refused by the edge
# itself, even where a GMS replica would still accept it.  Forged,
# expired, malformed and unsigned tokens are refused as before: no Redis,
# no GMS.  gms_token_unknown_signed refuse keeps the old answer (401).

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use Test::More;
use Time::HiRes qw(sleep time);
use GmsTest;
use GmsTest::Edge;
use GmsTest::JWT;
use GmsTest::Stub;
use GmsTest::Messages qw($INVALID_TOKEN $UNKNOWN_TOKEN
                         $CANNOT_VERIFY $EXPIRED_TOKEN $INSUFFICIENT_SCOPE
                         $UNAUTHORIZED
                         refused);

GmsTest::need_module();
GmsTest::need_redis();

# DataHub's default signing key (DATAHUB_TOKEN_SERVICE_SIGNING_KEY)
my $KEY = 'WnEdIeTG/VVCLQqGwC/BAkqyY0k+H8NEAtWGejrBI94=';
my $NEGATIVE_TTL = 2;

my $dir = GmsTest::tempdir();
GmsTest::write_file("$dir/key", "$KEY\n");
GmsTest::write_file("$dir/revoked", '');

# GMS 0.13's 401 for a revoked token, to Accept: application/json (Jetty's
# error page, JSON variant; see its .source.txt): what the stand-in answers
my $FIXTURE = dirname(abs_path(__FILE__))
    . '/fixtures/datahub/gms-0.13-401-revoked-token-accept-json.http.json';
my $GMS_401 = GmsTest::json_decode(GmsTest::slurp($FIXTURE))->{response};

sub urn { "urn:li:corpuser:$_[0]" }

sub personal { GmsTest::JWT::personal($KEY, @_) }


# --- the stand-in GMS -------------------------------------------------------

# GMS's REST side: 401 (the recorded answer, byte for byte) for a token
# listed in $dir/revoked, as DataHubTokenAuthenticator refuses a token
# whose entity is gone; otherwise the request echoed, as GmsTest::Stub's
# echo does.  Every request is logged (requests()).
my $gms = GmsTest::Stub->start(handler => sub {
    my ($req) = @_;
    my ($token) = ($req->{header}{authorization} // '') =~ /^Bearer (\S+)$/;
    my %revoked = map { $_ => 1 }
                  split /\n/, GmsTest::slurp("$dir/revoked") // '';
    if (defined $token && $revoked{$token}) {
        return [$GMS_401->{status}, [%{ $GMS_401->{headers} }],
                $GMS_401->{body}];
    }
    return [200, ['Content-Type' => 'application/json'],
            GmsTest::json_encode(GmsTest::Stub::record($req))];
});

sub revoke_at_gms {
    my ($token) = @_;
    GmsTest::write_file("$dir/revoked",
                        (GmsTest::slurp("$dir/revoked") // '') . "$token\n");
}

# What reached GMS since the last call: "METHOD URI" and the Authorization
# each carried.
sub gms_saw {
    my $reqs = $gms->requests;
    $gms->clear_requests;
    return [map { "$_->{method} $_->{uri}" } @$reqs];
}

sub gms_authorizations {
    my $reqs = $gms->requests;
    $gms->clear_requests;
    return [map { $_->{header}{authorization} // '' } @$reqs];
}


# --- the edge ---------------------------------------------------------------

my $CONF = <<"CONF";
    gms_token_redis 127.0.0.1:%%REDIS%%;
    gms_token_redis_timeout %%TIMEOUT%%;
    gms_token_key_prefix %%PREFIX%%;
    %%SALT%%
    gms_token_signing_key_file $dir/key;
    gms_token_cache zone=tokens:1m ttl=30s negative_ttl=${NEGATIVE_TTL}s;

    map \$request_uri \$gms_stripped_uri {
        ~^/api/gms(?<rest>/.*)\$  \$rest;
        default                  /;
    }

    upstream gms {
        server 127.0.0.1:@{[ $gms->port ]};
        keepalive 16;
    }

    server {
        listen 127.0.0.1:%%PORT%%;

        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header X-DataHub-Actor \$gms_token_actor;

        add_header X-Gms-Result \$gms_token_result always;
        add_header X-Gms-Id \$gms_token_id always;
        add_header X-Gms-Actor \$gms_token_actor always;

        gms_token_auth on;

        location / {
            proxy_pass http://gms;
        }

        location /api/gms/ {
            proxy_pass http://gms\$gms_stripped_uri;
        }

        location /operations {
            gms_es_task_status /_es_tasks/ privilege=off;
            proxy_pass http://gms;
        }

        location /refuse/ {
            gms_token_unknown_signed refuse;
            proxy_pass http://gms;
        }

        location /admin/ {
            gms_token_require_privilege MANAGE_ACCESS_TOKENS;
            proxy_pass http://gms;
        }

        location /pre/ {
            gms_token_phase preaccess;
            proxy_pass http://gms;
        }

        location /src/ {
            gms_token_source \$http_x_gms_token;
            proxy_pass http://gms;
        }

        location /ar/ {
            auth_request /ar-check;
            proxy_pass http://gms;
        }

        location = /ar-check {
            internal;
            proxy_pass http://gms/check;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
        }

        location /_es_tasks/ {
            internal;
            proxy_pass http://127.0.0.1:%%SEARCH%%/_tasks/;
        }

        location = /metrics {
            gms_token_auth off;
            gms_token_metrics;
        }
    }
CONF

my $e = GmsTest::Edge->start(conf => $CONF, workers => 2);

sub body {
    my ($res) = @_;
    my $body = eval { GmsTest::json_decode($res->{body} // '') };
    return ref $body eq 'HASH' ? $body : {};
}

sub metrics {
    my $res = $e->nginx->http(GET => '/metrics');
    my %m;
    for my $line (split /\n/, $res->{body} // '') {
        $m{$1} = $2 if $line =~ /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/;
    }
    return \%m;
}

sub delta {
    my ($before, $after, $name) = @_;
    return ($after->{$name} // 0) - ($before->{$name} // 0);
}

# The edge's own refusal of a token: 401, the challenge, the Rest.li body.
# What gms-token publishes: returns once every worker has received it
# (each receives each message, and drops the token's entry in turn).
sub publish {
    my ($id) = @_;
    my $name = 'gms_token_invalidations_total';
    my $before = metrics()->{$name} // 0;
    $e->redis->cmd(PUBLISH => 'gms:invalidate', $id);
    ok(GmsTest::wait_until(sub { (metrics()->{$name} // 0) >= $before + 2 },
                           5),
       'both workers received the invalidation');
}

ok(GmsTest::wait_until(sub {
       (metrics()->{gms_token_invalidation_subscriptions} // 0) == 2 }, 5),
   'both workers subscribed to the invalidations');
gms_saw();


# --- a token DataHub made, not yet in Redis: GMS decides ---------------------

subtest 'a signed token Redis does not have goes to GMS (the default)' => sub {
    my $pat = personal('alice');
    my $m0 = metrics();
    my $lookups = $e->lookups;

    my $res = $e->get('/entities/x', $pat);
    is($res->{status}, 200, "GMS's own answer: 200");
    is($res->{headers}{'x-gms-result'}, 'passed', '$gms_token_result passed');
    is($res->{headers}{'x-gms-id'}, GmsTest::sha256_b64($pat),
       '$gms_token_id is its id');
    is($res->{headers}{'x-gms-actor'}, undef,
       '$gms_token_actor empty: the edge vouches for no user');
    is(body($res)->{header}{authorization}, "Bearer $pat",
       'GMS got the Authorization header unchanged');
    ok(!exists body($res)->{header}{'x-datahub-actor'},
       'and no X-DataHub-Actor');
    is($e->lookups - $lookups, 1, 'after one Redis lookup');
    is_deeply(gms_saw(), ['GET /entities/x'], 'GMS asked once');

    $lookups = $e->lookups;
    is($e->get('/entities/y', $pat)->{status}, 200, 'again: 200');
    is($e->lookups - $lookups, 0,
       'no Redis lookup: its absence is remembered for negative_ttl');
    is_deeply(gms_saw(), ['GET /entities/y'], 'GMS decides again');

    my $m1 = metrics();
    is(delta($m0, $m1, 'gms_token_requests_total{result="passed"}'), 2,
       'counted as passed');
    is(delta($m0, $m1, 'gms_token_passed_answers_total{answer="accepted"}'),
       2, "GMS's answers counted as accepted");
    is(delta($m0, $m1, 'gms_token_requests_total{result="unknown"}'), 0,
       'none as unknown');
};

subtest 'the /api/gms/ path form' => sub {
    my $pat = personal('alice');
    my $res = $e->get('/api/gms/entities/x', $pat);
    is($res->{status}, 200, 'status 200');
    is($res->{headers}{'x-gms-result'}, 'passed', 'passed');
    is(body($res)->{uri}, '/entities/x', 'GMS got its own path');
    is(body($res)->{header}{authorization}, "Bearer $pat",
       'and the Authorization header unchanged');
};

subtest 'a service-account token' => sub {
    my $svc = GmsTest::JWT::service_account($KEY, 'svc-ingest');
    my $res = $e->get('/entities/x', $svc);
    is($res->{status}, 200, 'status 200');
    is($res->{headers}{'x-gms-result'}, 'passed', 'passed');
};

subtest 'gms_token_phase preaccess' => sub {
    gms_saw();
    my $res = $e->get('/pre/x', personal('alice'));
    is($res->{status}, 200, 'status 200');
    is($res->{headers}{'x-gms-result'}, 'passed', 'passed');
    is_deeply(gms_saw(), ['GET /pre/x'], 'GMS asked');
};

subtest 'gms_token_source: GMS gets the token as Authorization' => sub {
    my $pat = personal('alice');
    my $res = $e->get('/src/x', undef, 'X-GMS-Token' => $pat);
    is($res->{status}, 200, 'status 200');
    is($res->{headers}{'x-gms-result'}, 'passed', 'passed');
    is(body($res)->{header}{authorization}, "Bearer $pat",
       'Authorization: Bearer <token>');
};

subtest 'the token once in Redis: checked at the edge again' => sub {
    my $pat = personal('dave');
    is($e->get('/entities/x', $pat)->{headers}{'x-gms-result'}, 'passed',
       'before the sync: passed');

    # what gms-token sync does: the entry, then its id published
    my $id = $e->token($pat, actor => urn('dave'), type => 'PERSONAL');
    publish($id);

    my $res = $e->get('/entities/x', $pat);
    is($res->{headers}{'x-gms-result'}, 'ok', 'after it: ok');
    is($res->{headers}{'x-gms-actor'}, urn('dave'), 'as its user');
};


# --- gms_token_unknown_signed refuse ----------------------------------------

subtest 'refuse: 401, GMS not asked' => sub {
    my $pat = personal('alice');
    gms_saw();
    my $lookups = $e->lookups;

    refused($e->get('/refuse/x', $pat), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
            'refused as unknown', 'x-gms-result' => 'unknown');
    is($e->lookups - $lookups, 1, 'after one Redis lookup');
    is_deeply(gms_saw(), [], 'GMS not asked');

    is($e->get('/entities/x', $pat)->{status}, 200,
       'the same token where GMS decides: 200');
    refused($e->get('/refuse/x', $pat), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
            'and still refused where the edge does',
            'x-gms-result' => 'unknown');
    is_deeply(gms_saw(), ['GET /entities/x'], 'GMS asked only there');
};

subtest 'where the edge checks a privilege: refused' => sub {
    my $pat = personal('erin');
    $e->grant(urn('erin'), 'MANAGE_ACCESS_TOKENS');
    gms_saw();

    refused($e->get('/admin/x', $pat), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
            'refused as unknown: no entry, so no privileges',
            'x-gms-result' => 'unknown');
    is_deeply(gms_saw(), [], 'GMS not asked');
};

subtest 'getEsTaskStatus, which the edge answers: refused' => sub {
    my $res = $e->nginx->http(POST => '/operations?action=getEsTaskStatus',
                              { Authorization => 'Bearer ' . personal('erin'),
                                'Content-Type' => 'application/json' },
                              '{"task":"known:1"}');
    refused($res, 401, $INVALID_TOKEN, $UNKNOWN_TOKEN, 'refused as unknown',
            'x-gms-result' => 'unknown');
    is_deeply(gms_saw(), [], 'GMS not asked');
};


# --- revoked: GMS's 401, then the edge's ------------------------------------

subtest "revoked in DataHub: GMS's 401, then the edge's, once per negative_ttl" => sub {
    my $pat = personal('bob');
    revoke_at_gms($pat);
    my $m0 = metrics();
    gms_saw();

    my $res = $e->get('/entities/x', $pat);
    is($res->{status}, 401, 'GMS refuses: 401');
    is($res->{body}, $GMS_401->{body}, "GMS's body, byte for byte");
    is($res->{headers}{'content-type'}, 'application/json',
       "GMS's Content-Type");
    is($res->{headers}{'cache-control'}, $GMS_401->{headers}{'Cache-Control'},
       "GMS's Cache-Control");
    is($res->{headers}{'www-authenticate'}, undef,
       'no challenge added: GMS sends none');
    is($res->{headers}{'x-gms-result'}, 'passed', '$gms_token_result passed');
    is_deeply(gms_saw(), ['GET /entities/x'], 'GMS asked');

    my $lookups = $e->lookups;
    my $start = time;
    my @results = map { $e->get('/entities/x', $pat) } 1 .. 10;
    my $took = time - $start;
    note(sprintf '10 requests in %.3f s', $took);

    SKIP: {
        skip 'the requests took longer than negative_ttl', 4
            if $took >= $NEGATIVE_TTL;
        refused($results[0], 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
                "then the edge's own 401", 'x-gms-result' => 'unknown');
        is_deeply([grep { $_->{status} != 401 } @results], [],
                  'for each of 10 requests');
        is_deeply(gms_saw(), [], 'GMS not asked again');
        is($e->lookups - $lookups, 0, 'nor Redis');
    }

    my $m1 = metrics();
    is(delta($m0, $m1, 'gms_token_passed_answers_total{answer="refused"}'),
       1, "GMS's 401 counted as refused");
    is(delta($m0, $m1, 'gms_token_requests_total{result="unknown"}'), 10,
       'the edge refusals as unknown');

    sleep $NEGATIVE_TTL + 0.5;
    gms_saw();

    $res = $e->get('/entities/x', $pat);
    is($res->{body}, $GMS_401->{body},
       "negative_ttl later: GMS's 401 again");
    is($e->get('/entities/x', $pat)->{status}, 401, 'then the edge\'s');
    is_deeply(gms_saw(), ['GET /entities/x'],
              'GMS asked once in this negative_ttl');
};


# --- removed from Redis by gms-token: refused here --------------------------

subtest 'removed from Redis: the edge refuses, GMS not asked' => sub {
    my $pat = personal('carol');
    my $id = $e->token($pat, actor => urn('carol'), type => 'PERSONAL');

    my $res = $e->get('/entities/x', $pat);
    is($res->{headers}{'x-gms-result'}, 'ok', 'in Redis: ok');
    gms_saw();

    # gms-token revoke, or follow pruning it: DEL, then the id published;
    # the stand-in GMS still accepts it, as a GMS replica whose revocation
    # cache (5 minutes) still says "not revoked" would
    $e->redis->cmd(DEL => "gms:token:$id");
    publish($id);

    refused($e->get('/entities/x', $pat), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
            'refused once the removal is published',
            'x-gms-result' => 'unknown');
    my $lookups = $e->lookups;
    refused($e->get('/entities/x', $pat), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
            'refused by the edge itself', 'x-gms-result' => 'unknown');
    is_deeply(gms_saw(), [], 'GMS not asked');
    is($e->lookups - $lookups, 0, 'nor Redis: remembered');
};

subtest 'a removed token back in Redis: ok again' => sub {
    my $pat = personal('frank');
    my $id = $e->token($pat, actor => urn('frank'), type => 'PERSONAL');
    is($e->get('/entities/x', $pat)->{status}, 200, 'in Redis: 200');

    $e->redis->cmd(DEL => "gms:token:$id");
    publish($id);
    is($e->get('/entities/x', $pat)->{status}, 401, 'removed: 401');

    # its user active again (gms-token follow --inactive refuse)
    $e->token($pat, actor => urn('frank'), type => 'PERSONAL');
    publish($id);
    is($e->get('/entities/x', $pat)->{headers}{'x-gms-result'}, 'ok',
       'back: ok');
};


# --- auth_request: the subrequest to GMS decides as well --------------------

subtest 'auth_request into a location where GMS decides' => sub {
    my $pat = personal('alice');
    gms_saw();

    my $res = $e->get('/ar/x', $pat);
    is($res->{status}, 200, 'a token GMS accepts: 200');
    is_deeply(gms_saw(), ['GET /check', 'GET /ar/x'],
              'GMS asked by the subrequest, then the request');

    my $gone = personal('bob');
    revoke_at_gms($gone);

    is($e->get('/ar/x', $gone)->{status}, 401,
       "one GMS refuses: 401 (auth_request's)");
    is_deeply(gms_saw(), ['GET /check'], 'GMS asked by the subrequest only');

    refused($e->get('/ar/x', $gone), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
            "then the edge's own 401", 'x-gms-result' => 'unknown');
    is_deeply(gms_saw(), [], 'GMS not asked: its 401 remembered');
};


# --- refused as before: no Redis, no GMS ------------------------------------

my $claims = GmsTest::JWT::claims('PERSONAL', 'alice');

for my $case (
    ['forged: another key', GmsTest::JWT::personal('a key GMS never had',
                                                   'alice'),
     $CANNOT_VERIFY, 'invalid'],
    ['expired', personal('alice', exp => int(time) - 60), $EXPIRED_TOKEN,
     'expired'],
    ['malformed: not a JWT', 'abc', $CANNOT_VERIFY, 'invalid'],
    ['malformed: claims not JSON',
     GmsTest::JWT::mint($KEY, undef, payload_raw => '{"actorId":'),
     $CANNOT_VERIFY, 'invalid'],
    ['unsigned: alg none', GmsTest::JWT::mint($KEY, $claims,
                                               header => { alg => 'none' },
                                               sig => ''),
     $CANNOT_VERIFY, 'invalid'],
    ['unsigned: no signature', GmsTest::JWT::mint($KEY, $claims, sig => ''),
     $CANNOT_VERIFY, 'invalid'],
) {
    my ($title, $token, $message, $result) = @$case;

    subtest "$title: 401, no Redis, no GMS" => sub {
        gms_saw();
        my $lookups = $e->lookups;
        my $m0 = metrics();

        refused($e->get('/entities/x', $token), 401, $INVALID_TOKEN, $message,
                'refused', 'x-gms-result' => $result);
        is($e->lookups - $lookups, 0, 'no Redis call');
        is_deeply(gms_saw(), [], 'nothing reached GMS');
        is(delta($m0, metrics(), 'gms_token_requests_total{result="passed"}'),
           0, 'not counted as passed');
    };
}

$e->nginx->stop;
is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');


# --- without a cache or a signing key ---------------------------------------

subtest 'without a signing key: refused, as before' => sub {
    my $p = GmsTest::Edge->start(
        http => 'gms_token_cache zone=tokens:1m;');
    my $pat = personal('alice');
    my $res = $p->get('/entities/x', $pat);
    is($res->{status}, 401, '401: nothing verifies it');
    is($res->{headers}{'x-gms-result'}, 'unknown', 'unknown');
    $p->nginx->stop;
    is_deeply([$p->nginx->bad_log_lines], [], 'no alerts or crashes');
};

my $conf = <<'CONF';
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events { }
http {
    gms_token_salt "";
    %%HTTP%%
    server {
        listen 127.0.0.1:1;
        location / { gms_token_auth on; %%LOCATION%% }
    }
}
CONF

sub nginx_t {
    my ($http, $location) = @_;
    return GmsTest::nginx_t($conf =~ s/%%HTTP%%/$http/r
                                  =~ s/%%LOCATION%%/$location \/\/ ''/er);
}

my $key = "gms_token_signing_key_file $dir/key;";
my $cache = 'gms_token_cache zone=t:1m;';

for my $case (
    ['refuse, with key and cache', "$key $cache",
     'gms_token_unknown_signed refuse;'],
    ['pass, with key and cache', "$key $cache",
     'gms_token_unknown_signed pass;'],
    ['pass at the http level', "$key $cache gms_token_unknown_signed pass;"],
    ['refuse without a key or a cache', '',
     'gms_token_unknown_signed refuse;'],
    ['the default without a key or a cache', ''],
) {
    my ($title, $http, $location) = @$case;
    my ($rc, $out) = nginx_t($http, $location);
    is($rc, 0, "nginx -t accepts $title") or diag($out);
}

for my $case (
    ['a bad value', "$key $cache", 'gms_token_unknown_signed allow;',
     qr/\[emerg\].*invalid value "allow"/],
    ['pass without a cache', $key, 'gms_token_unknown_signed pass;',
     qr/\[emerg\].*gms_token_unknown_signed pass needs/],
    ['pass without a signing key', $cache, 'gms_token_unknown_signed pass;',
     qr/\[emerg\].*gms_token_unknown_signed pass needs/],
    ['pass at the http level without a cache',
     "$key gms_token_unknown_signed pass;", undef,
     qr/\[emerg\].*gms_token_unknown_signed pass needs/],
) {
    my ($title, $http, $location, $error) = @$case;
    subtest "nginx -t refuses $title" => sub {
        my ($rc, $out) = nginx_t($http, $location);
        isnt($rc, 0, 'refused');
        like($out, $error, 'saying why');
    };
}

done_testing();

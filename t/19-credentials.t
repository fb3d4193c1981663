#!/usr/bin/perl

# Credentials the edge checks without a personal access token's Redis
# entry (issue 13).  With gms_token_signing_key_file it verifies DataHub's
# JWTs itself: a session token passes on its signature alone, a personal
# or service-account token is verified and then looked up as before, and
# anything forged, broken or expired is refused before any Redis call.
# gms_token_system_client lets DataHub's own services in with
# "Basic <id>:<secret>", acting for the user they name in X-DataHub-Actor.
# $gms_token_type says which kind of credential a request carried.
#
# The tokens are minted here (GmsTest::JWT) the way DataHub's
# StatelessTokenService (session tokens, version "1") and
# StatefulTokenService (personal and service-account tokens, version "2")
# mint them: HS256 keyed with the bytes of the signing key string, claims
# actorType, actorId, type, version, jti, sub, exp and iss.

use strict;
use warnings;

use Cwd qw(abs_path);
use Digest::SHA qw(hmac_sha512);
use File::Basename qw(dirname);
use MIME::Base64 qw(decode_base64 encode_base64);
use Test::More;
use GmsTest;
use GmsTest::Edge;
use GmsTest::JWT;
use GmsTest::Messages qw($RESTLI_EXCEPTION $INVALID_TOKEN $INSUFFICIENT_SCOPE
                         $CANNOT_VERIFY $EXPIRED_TOKEN $UNKNOWN_TOKEN
                         $MALFORMED_HEADER $UNAUTHORIZED $ES_UNAUTHORIZED
                         refused);

# DataHub's default signing key (DATAHUB_TOKEN_SERVICE_SIGNING_KEY) and
# system client (DATAHUB_SYSTEM_CLIENT_ID, _SECRET)
my $KEY = 'WnEdIeTG/VVCLQqGwC/BAkqyY0k+H8NEAtWGejrBI94=';
my $NEW_KEY = 'the signing key rotated in';
my $UNKNOWN_KEY = 'a signing key the edge does not know';
my $SYSTEM = '__datahub_system';
my $SECRET = 'JohnSnowKnowsNothing';
my $BASIC = "Basic $SYSTEM:$SECRET";

my $EXAMPLES = dirname(abs_path(__FILE__))
               . '/fixtures/datahub/example-tokens.constructed.json';

my $dir = GmsTest::tempdir();

# Key and secret files as a mounted secret holds them: a trailing newline.
sub file {
    my ($name, $bytes) = @_;
    GmsTest::write_file("$dir/$name", $bytes);
    return "$dir/$name";
}

my $key_file = file(key => "$KEY\n");
my $new_key_file = file('new-key' => "$NEW_KEY\n");
my $secret_file = file('system-secret' => "$SECRET\n");
my $type_log = "$dir/type.log";

sub urn { "urn:li:corpuser:$_[0]" }

sub session { GmsTest::JWT::session($KEY, @_) }
sub personal { GmsTest::JWT::personal($KEY, @_) }


# --- helpers ----------------------------------------------------------------

sub body {
    my ($res) = @_;
    my $body = eval { GmsTest::json_decode($res->{body} // '') };
    return ref $body eq 'HASH' ? $body : {};
}

# The X-DataHub-Actor headers the stand-in GMS received.
sub actors_at_gms {
    my ($res) = @_;
    return [map { $_->[1] } grep { lc $_->[0] eq 'x-datahub-actor' }
            @{ body($res)->{headers} // [] }];
}

# Reached GMS as $actor's request (undef: without an actor), with
# $gms_token_type $type.
sub passed {
    my ($res, $actor, $type, $title) = @_;

    subtest $title => sub {
        is($res->{status}, 200, 'status 200');
        is_deeply(actors_at_gms($res), [defined $actor ? $actor : ()],
                  'the X-DataHub-Actor GMS saw');
        is($res->{headers}{'x-gms-type'}, $type, '$gms_token_type');
    };
}

sub metrics {
    my ($edge) = @_;
    my $res = $edge->nginx->http(GET => '/metrics');
    my %m;
    for my $line (split /\n/, $res->{body} // '') {
        $m{$1} = $2 if $line =~ /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/;
    }
    return \%m;
}

# Refused before any Redis call, nothing reaching GMS, counted as $reason
# and as the request result $result (an expired token's is "expired", any
# other refused token's "invalid").
sub refused_unheard {
    my ($edge, $title, $token, $reason, $result, $message) = @_;

    subtest "$reason: $title" => sub {
        my $m0 = metrics($edge);
        my $lookups = $edge->lookups;
        $edge->gms->clear_requests;

        my $res = $edge->get('/entities/x', $token);
        is($res->{status}, 401, 'status 401');
        is($res->{headers}{'www-authenticate'}, $INVALID_TOKEN,
           'invalid_token');
        is_deeply(body($res), { exceptionClass => $RESTLI_EXCEPTION,
                                status => 401, message => $message }, 'body')
            if defined $message;

        is($edge->lookups - $lookups, 0, 'no Redis call');
        is_deeply($edge->gms->requests, [], 'nothing reached GMS');

        my $m1 = metrics($edge);
        for my $counter ("gms_token_jwt_rejected_total{reason=\"$reason\"}",
                         "gms_token_requests_total{result=\"$result\"}")
        {
            is(($m1->{$counter} // 0) - ($m0->{$counter} // 0), 1,
               "$counter counted it");
        }
    };
}

# the search cluster: known:1 has completed, any other task is not found
my $SEARCH_CLUSTER = GmsTest::Stub::search_cluster(
    missing => [404, ['Content-Type' => 'application/json'],
                '{"error":{"type":"resource_not_found_exception"},'
                . '"status":404}']);

sub ask_task_status {
    my ($edge, %headers) = @_;
    return $edge->nginx->http(POST => '/operations?action=getEsTaskStatus',
                              { 'Content-Type' => 'application/json',
                                %headers },
                              '{"task":"known:1"}');
}

sub cluster_asked {
    my ($edge) = @_;
    my $reqs = $edge->search->requests;
    $edge->search->clear_requests;
    return [map { "$_->{method} $_->{uri}" } @$reqs];
}


# --- the edge: one signing key, the system client, metrics ------------------

my $e = GmsTest::Edge->start(
    search => $SEARCH_CLUSTER,
    http   => <<"HTTP",
    gms_token_signing_key_file $key_file;
    gms_token_system_client $SYSTEM secret_file=$secret_file;

    log_format gms_type '\$gms_token_type \$request_uri';
    access_log $type_log gms_type;
HTTP
    server => <<'SERVER',
        add_header X-Gms-Type $gms_token_type always;

        location = /metrics {
            gms_token_auth off;
            gms_token_metrics;
        }

        # service-account tokens exist from DataHub 1.4.0 (TokenType)
        location /v1.4/ {
            gms_datahub_version 1.4.0;
            proxy_pass http://gms;
        }
SERVER
);


# --- session tokens: the signature is enough --------------------------------

subtest 'a session token, no Redis entry' => sub {
    my $jwt = session('alice');
    my $lookups = $e->lookups;

    my $res = $e->get('/entities/x', $jwt);
    passed($res, urn('alice'), 'SESSION', 'passed as alice');
    is(body($res)->{header}{authorization}, "Bearer $jwt",
       'Authorization reaches GMS unchanged');
    is($res->{headers}{'x-gms-actor'}, urn('alice'), '$gms_token_actor');
    is($e->lookups - $lookups, 0, 'no Redis call');

    passed($e->get('/api/gms/entities/x', $jwt), urn('alice'), 'SESSION',
           'the frontend-proxy path form too');
};

subtest 'a session token without exp never expires' => sub {
    passed($e->get('/entities/x', session('alice', exp => undef)),
           urn('alice'), 'SESSION', 'passed');
};

subtest "a session token beside a spoofed X-DataHub-Actor" => sub {
    passed($e->get('/entities/x', session('alice'),
                   'X-DataHub-Actor' => urn('datahub')),
           urn('alice'), 'SESSION', "only the token's user reaches GMS");
};


# --- session tokens where a privilege is needed -----------------------------

subtest 'a session token at a location that needs a privilege' => sub {
    my $jwt = session('bob');

    my $lookups = $e->lookups;
    refused($e->get('/admin/tokens', $jwt), 401, $INSUFFICIENT_SCOPE,
            $UNAUTHORIZED, 'not granted: refused');
    is($e->lookups - $lookups, 1, "bob's privileges read from Redis");

    $e->grant(urn('bob'), 'GENERATE_PERSONAL_ACCESS_TOKENS');
    $lookups = $e->lookups;
    passed($e->get('/admin/tokens', $jwt), urn('bob'), 'SESSION',
           'granted: passed');
    is($e->lookups - $lookups, 1, 'after reading them');

    $e->deny(urn('bob'), 'GENERATE_PERSONAL_ACCESS_TOKENS');
    is($e->get('/admin/tokens', $jwt)->{status}, 401, 'revoked: refused');
};

subtest 'getEsTaskStatus with a session token' => sub {
    my $jwt = session('carol');
    $e->search->clear_requests;

    my $res = ask_task_status($e, Authorization => "Bearer $jwt");
    refused($res, 401, $INSUFFICIENT_SCOPE, $ES_UNAUTHORIZED,
            'not granted: refused');
    is_deeply(cluster_asked($e), [], 'the cluster was not asked');

    $e->grant(urn('carol'), 'GET_ES_TASK_STATUS_PRIVILEGE');
    $res = ask_task_status($e, Authorization => "Bearer $jwt");
    is($res->{status}, 200, 'granted: answered');
    like(body($res)->{value} // '', qr/"completed"/, 'with the task status');
    is_deeply(cluster_asked($e), ['GET /_tasks/known:1'],
              'the cluster was asked');
};


# --- personal and service-account tokens: verified, then looked up ----------

my $pat = personal('alice');
my $svc = GmsTest::JWT::service_account($KEY, 'svc-ingest');

subtest 'a personal token without a Redis entry' => sub {
    my $lookups = $e->lookups;
    refused($e->get('/entities/x', $pat), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
            'refused as revoked');
    is($e->lookups - $lookups, 1, 'after one lookup');
};

subtest 'a personal token with its Redis entry' => sub {
    my $id = $e->token($pat, actor => urn('alice'), type => 'PERSONAL');
    my $lookups = $e->lookups;

    my $res = $e->get('/entities/x', $pat);
    passed($res, urn('alice'), 'PERSONAL', 'passed as alice');
    is($res->{headers}{'x-gms-id'}, $id, 'looked up by its id');
    is(body($res)->{header}{authorization}, "Bearer $pat",
       'Authorization reaches GMS unchanged');
    is($e->lookups - $lookups, 1, 'after one lookup');
};

subtest 'a service-account token with its Redis entry' => sub {
    $e->token($svc, actor => urn('svc-ingest'), type => 'SERVICE_ACCOUNT');
    passed($e->get('/v1.4/entities/x', $svc), urn('svc-ingest'),
           'SERVICE_ACCOUNT', 'passed as svc-ingest at 1.4.0');

    # the default release, 0.13.0: TokenType.valueOf fails in GMS's
    # StatelessTokenService, 401 "Unable to verify the provided token."
    refused($e->get('/entities/x', $svc), 401, $INVALID_TOKEN, $CANNOT_VERIFY,
            'refused before 1.4.0');
};

subtest "a personal token whose Redis entry names another user" => sub {
    my $jwt = personal('alice');
    $e->token($jwt, actor => urn('mallory'), type => 'PERSONAL');
    my $mark = length $e->nginx->error_log;

    refused($e->get('/entities/x', $jwt), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
            'refused as revoked');

    my @errors = grep { /\[error\]/ } split /\n/,
                 substr($e->nginx->error_log, $mark);
    ok((grep { /actor/
               && (/does not match/
                   || /\Q${\ urn('mallory')}\E/ && /\Q${\ urn('alice')}\E/) }
        @errors),
       'the actor mismatch logged as an error')
        or diag(explain(\@errors));
};


# --- refused before any Redis call ------------------------------------------

my $now = time;
my $claims = GmsTest::JWT::claims('SESSION', 'alice');

sub with { GmsTest::JWT::mint($KEY, { %$claims, @_ }) }

sub without {
    my %c = %$claims;
    delete @c{@_};
    return GmsTest::JWT::mint($KEY, \%c);
}

my @malformed = (
    ['not a JWT', 'abc'],
    ['two parts', 'abc.def'],
    ['payload not base64url',
     GmsTest::JWT::mint($KEY, undef, payload_segment => 'eyJ~fQ')],
    ['payload not JSON',
     GmsTest::JWT::mint($KEY, undef, payload_raw => 'actorId=alice')],
    ['payload not an object',
     GmsTest::JWT::mint($KEY, undef, payload_raw => '["alice"]')],
    (map { ["no $_", without($_)] } qw(actorType actorId type version)),
    ['actorType not USER', with(actorType => 'SERVICE')],
    ['actorType in lowercase', with(actorType => 'user')],
    ['type unknown', with(type => 'REFRESH')],
    ['version "3"', with(version => '3')],
    ['version a number', with(version => 1)],
    ['actorId a number', with(actorId => 42)],
    ['actorId null', with(actorId => undef)],
    ['exp a string', with(exp => 'tomorrow')],
    ['exp not whole', with(exp => $now + 3600.5)],
    ['actorId given twice',
     GmsTest::JWT::mint($KEY, undef, payload_raw =>
         GmsTest::json_encode($claims) =~ s/^\{/{"actorId":"admin",/r)],
    ['actorId with a control byte', with(actorId => "alice\x01")],
);

my (undef, undef, $signature) =
    GmsTest::JWT::parts(GmsTest::JWT::mint($KEY, $claims));
my @bad_signature = (
    ['alg none, no signature',
     GmsTest::JWT::mint($KEY, $claims, header => { alg => 'none' },
                        sig => '')],
    ['alg HS512, signed with HMAC-SHA512',
     GmsTest::JWT::mint($KEY, $claims, header => { alg => 'HS512' },
                        hmac => \&hmac_sha512)],
    ['signed with another key', GmsTest::JWT::session($UNKNOWN_KEY, 'alice')],
    ['signed with what the key decodes to from base64',
     GmsTest::JWT::session(decode_base64($KEY), 'alice')],
    ['payload changed, signature kept',
     GmsTest::JWT::mint($KEY, { %$claims, actorId => 'admin', sub => 'admin' },
                        sig => $signature)],
);

my $late_pat = personal('alice', exp => $now - 3600);
$e->token($late_pat, actor => urn('alice'), type => 'PERSONAL');

my @expired = (
    ['session token, exp an hour ago', session('alice', exp => $now - 3600),
     $EXPIRED_TOKEN],
    ['session token, exp 30 s ago, no leeway',
     session('alice', exp => $now - 30), $EXPIRED_TOKEN],
    ['personal token in Redis, exp an hour ago', $late_pat, $EXPIRED_TOKEN],
);

# not valid yet: counted with the expired ones, but the token has not
# expired
my @premature = (
    ['session token, nbf an hour ahead', session('alice', nbf => $now + 3600)],
);

refused_unheard($e, @$_[0, 1], 'malformed', 'invalid', $CANNOT_VERIFY)
    for @malformed;
refused_unheard($e, @$_[0, 1], 'bad_signature', 'invalid', $CANNOT_VERIFY)
    for @bad_signature;
refused_unheard($e, @$_[0, 1], 'expired', 'expired', $_->[2]) for @expired;
refused_unheard($e, @$_[0, 1], 'expired', 'invalid', undef) for @premature;


# --- DataHub's example tokens: signed with a key the edge does not know -----

subtest "DataHub's example tokens, in Redis" => sub {
    unless (ok(-r $EXAMPLES, 'the fixture is there')) {
        diag("missing: $EXAMPLES");
        return;
    }
    my $examples = GmsTest::json_decode(GmsTest::slurp($EXAMPLES));

    for my $user (qw(alice bob)) {
        my $example = $examples->{$user};
        is($e->token($example->{token}, actor => urn($user),
                     type => 'PERSONAL'),
           $example->{id_empty_salt}, "$user\'s token seeded under its id");
        refused_unheard($e, "$user\'s example token", $example->{token},
                        'bad_signature', 'invalid', $CANNOT_VERIFY);
    }
};


# --- the system client ------------------------------------------------------

subtest 'the system client acting for a user' => sub {
    my $lookups = $e->lookups;

    my $res = $e->get('/entities/x', undef, Authorization => $BASIC,
                      'X-DataHub-Actor' => urn('alice'));
    passed($res, urn('alice'), 'SYSTEM', "GMS sees the client's actor");
    is($res->{headers}{'x-gms-actor'}, urn('alice'),
       '$gms_token_actor is the actor it acts for');
    is(body($res)->{header}{authorization}, $BASIC,
       'Authorization reaches GMS unchanged');

    passed($e->get('/entities/x', undef,
                   Authorization => "basic $SYSTEM:$SECRET",
                   'X-DataHub-Actor' => urn('alice')),
           urn('alice'), 'SYSTEM', 'the scheme in lowercase');

    is($e->lookups - $lookups, 0, 'no Redis call');
};

subtest 'the system client on its own' => sub {
    my $res = $e->get('/entities/x', undef, Authorization => $BASIC);
    passed($res, undef, 'SYSTEM', 'passed without an actor');
    ok(!defined $res->{headers}{'x-gms-actor'}, '$gms_token_actor is empty');
};

subtest 'the system client needs no privilege' => sub {
    my $lookups = $e->lookups;
    $e->search->clear_requests;

    passed($e->get('/admin/tokens', undef, Authorization => $BASIC,
                   'X-DataHub-Actor' => urn('nobody')),
           urn('nobody'), 'SYSTEM', 'gms_token_require_privilege');

    my $res = ask_task_status($e, Authorization => $BASIC);
    is($res->{status}, 200, 'getEsTaskStatus answered');
    is_deeply(cluster_asked($e), ['GET /_tasks/known:1'],
              'the cluster was asked');

    is($e->lookups - $lookups, 0, 'no Redis call');
};

for my $case (['a wrong secret', "Basic $SYSTEM:wrong"],
              ['a prefix of the secret', "Basic $SYSTEM:JohnSnow"],
              ['the secret and more', "Basic $SYSTEM:${SECRET}More"],
              ['no secret', "Basic $SYSTEM:"],
              ['an unknown client id', "Basic someone:$SECRET"],
              ['a prefix of the client id', "Basic __datahub:$SECRET"],
              ['the base64 form',
               'Basic ' . encode_base64("$SYSTEM:$SECRET", '')])
{
    $e->gms->clear_requests;
    refused($e->get('/entities/x', undef, Authorization => $case->[1],
                    'X-DataHub-Actor' => urn('alice')),
            401, $INVALID_TOKEN, $CANNOT_VERIFY, "system client, $case->[0]");
    is_deeply($e->gms->requests, [], "$case->[0]: nothing reached GMS");
}


# --- $gms_token_type in the access log --------------------------------------

subtest '$gms_token_type in the access log' => sub {
    $e->get('/logged/session', session('alice'));
    $e->get('/logged/personal', $pat);
    $e->get('/v1.4/logged/service-account', $svc);
    $e->get('/logged/system', undef, Authorization => $BASIC);
    $e->get('/logged/none');

    my %want = ('/logged/session' => 'SESSION',
                '/logged/personal' => 'PERSONAL',
                '/v1.4/logged/service-account' => 'SERVICE_ACCOUNT',
                '/logged/system' => 'SYSTEM',
                '/logged/none' => '-');
    my %logged;

    # a request is logged as it ends, which may be after its answer
    GmsTest::wait_until(sub {
        %logged = map { /^(\S+) ((?:\/v1\.4)?\/logged\/\S+)$/ ? ($2 => $1) : () }
                  split /\n/, GmsTest::slurp($type_log);
        return keys %logged == keys %want;
    }, 5);

    is_deeply(\%logged, \%want, 'the type of each request');
};


# --- Redis stopped: what needs no Redis still passes ------------------------

subtest 'Redis stopped' => sub {
    $e->redis->stop;

    passed($e->get('/entities/x', session('alice')), urn('alice'), 'SESSION',
           'a session token');
    passed($e->get('/entities/x', undef, Authorization => $BASIC,
                   'X-DataHub-Actor' => urn('alice')),
           urn('alice'), 'SYSTEM', 'the system client');
    passed($e->get('/admin/tokens', undef, Authorization => $BASIC,
                   'X-DataHub-Actor' => urn('alice')),
           urn('alice'), 'SYSTEM', 'the system client, a privilege needed');

    is($e->get('/entities/x', $pat)->{status}, 503,
       'a personal token in no cache: 503');
    is($e->get('/admin/tokens', session('bob'))->{status}, 503,
       "a session token where its user's privileges are needed: 503");
};

$e->nginx->stop;
is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');


# --- without a signing key: Redis only, as before ---------------------------

subtest 'without gms_token_signing_key_file' => sub {
    my $p = GmsTest::Edge->start;

    my $jwt = session('alice');
    my $lookups = $p->lookups;
    refused($p->get('/entities/x', $jwt), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
            'a session token unknown to Redis is refused');
    is($p->lookups - $lookups, 1, 'after a lookup');

    $p->token($jwt, actor => urn('alice'));
    is($p->get('/entities/x', $jwt)->{status}, 200,
       'the same token in Redis passes');

    refused($p->get('/entities/x', 'abc'), 401, $INVALID_TOKEN, $UNKNOWN_TOKEN,
            'any bearer token is looked up');
    refused($p->get('/entities/x', undef, Authorization => $BASIC),
            401, $INVALID_TOKEN, $MALFORMED_HEADER, 'Basic is refused');

    $p->nginx->stop;
    is_deeply([$p->nginx->bad_log_lines], [], 'no alerts or crashes');
};


# --- two signing keys, a leeway ---------------------------------------------

my $r = GmsTest::Edge->start(http => <<"HTTP");
    gms_token_signing_key_file $key_file;
    gms_token_signing_key_file $new_key_file;
    gms_token_jwt_leeway 60s;
HTTP

subtest 'key rotation: either key verifies' => sub {
    is($r->get('/entities/x', session('alice'))->{status}, 200,
       'signed with the first key');
    is($r->get('/entities/x', GmsTest::JWT::session($NEW_KEY, 'alice'))
       ->{status}, 200, 'signed with the second key');
    refused($r->get('/entities/x',
                    GmsTest::JWT::session($UNKNOWN_KEY, 'alice')),
            401, $INVALID_TOKEN, $CANNOT_VERIFY, 'signed with a third key');
};

subtest 'gms_token_jwt_leeway 60s' => sub {
    my $lookups;

    is($r->get('/entities/x', session('alice', exp => time - 30))->{status},
       200, 'exp 30 s ago: passed');
    $lookups = $r->lookups;
    refused($r->get('/entities/x', session('alice', exp => time - 120)),
            401, $INVALID_TOKEN, $EXPIRED_TOKEN, 'exp 120 s ago: refused');
    is($r->lookups - $lookups, 0, 'without a Redis call');

    is($r->get('/entities/x', session('alice', nbf => time + 30))->{status},
       200, 'nbf 30 s ahead: passed');
    $lookups = $r->lookups;
    refused($r->get('/entities/x', session('alice', nbf => time + 120)),
            401, $INVALID_TOKEN, undef, 'nbf 120 s ahead: refused');
    is($r->lookups - $lookups, 0, 'without a Redis call');
};

subtest 'without gms_token_system_client, Basic stays refused' => sub {
    refused($r->get('/entities/x', undef, Authorization => $BASIC),
            401, $INVALID_TOKEN, $MALFORMED_HEADER, 'refused');
};

$r->nginx->stop;
is_deeply([$r->nginx->bad_log_lines], [], 'no alerts or crashes');


# --- the token cache --------------------------------------------------------

my $c = GmsTest::Edge->start(http => <<"HTTP");
    gms_token_signing_key_file $key_file;
    gms_token_cache zone=tokens:1m ttl=60s negative_ttl=60s;
HTTP

subtest 'gms_token_cache: a personal token' => sub {
    my $jwt = personal('dave');
    $c->token($jwt, actor => urn('dave'), type => 'PERSONAL');

    my $lookups = $c->lookups;
    is($c->get('/entities/x', $jwt)->{status}, 200, 'cold: passed');
    is($c->lookups - $lookups, 1, 'after a lookup');

    $lookups = $c->lookups;
    is($c->get('/entities/x', $jwt)->{status}, 200, 'warm: passed');
    is($c->lookups - $lookups, 0, 'without one');
};

subtest 'gms_token_cache: a session token where a privilege is needed' => sub {
    my $jwt = session('erin');
    $c->grant(urn('erin'), 'MANAGE_ACCESS_TOKENS');

    my $lookups = $c->lookups;
    is($c->get('/admin/tokens', $jwt)->{status}, 200, 'cold: passed');
    is($c->lookups - $lookups, 1, 'after reading the privileges');

    $lookups = $c->lookups;
    is($c->get('/admin/tokens', $jwt)->{status}, 200, 'warm: passed');
    is($c->lookups - $lookups, 0, 'without reading them again');
};

# the cache keeps an entry for its ttl (60 s): a token's own exp, two
# seconds away, must end it sooner
subtest 'gms_token_cache: a cached token still expires at its exp' => sub {
    my @cases = (['session token', session('frank', exp => time + 2)],
                 ['personal token', personal('frank', exp => time + 2)]);
    $c->token($cases[1][1], actor => urn('frank'), type => 'PERSONAL');

    for my $case (@cases) {
        my ($kind, $token) = @$case;
        is($c->get('/entities/x', $token)->{status}, 200,
           "$kind: passed, now cached");
    }

    for my $case (@cases) {
        my ($kind, $token) = @$case;
        ok(GmsTest::wait_until(
               sub { $c->get('/entities/x', $token)->{status} != 200 }, 5),
           "$kind: refused once its exp has passed");
        refused($c->get('/entities/x', $token), 401, $INVALID_TOKEN,
                $EXPIRED_TOKEN, "$kind: as expired");
    }
};

$c->nginx->stop;
is_deeply([$c->nginx->bad_log_lines], [], 'no alerts or crashes');


# --- session tokens in subrequests, and a stale entry with privileges -------
#
# A session token's privileges are read only where the main request's
# location checks one: a subrequest (auth_request here) into a location
# that checks a privilege is refused for a session token at a location
# that checks none, never let through on privileges nobody read; a
# personal token of the same user passes.  And a request where no
# privilege is needed must not overwrite the stale entry that holds them.

my $s = GmsTest::Edge->start(http => <<HTTP, server => <<'SERVER');
    gms_token_signing_key_file $key_file;
    gms_token_cache zone=session_stale:1m ttl=1s stale=60s;
HTTP
        location /ar/ {
            auth_request /ar-check;
            proxy_pass http://gms;
        }
        location /ar-checked/ {
            gms_token_require_privilege MANAGE_INGESTION;
            auth_request /ar-check;
            proxy_pass http://gms;
        }
        location = /ar-check {
            internal;
            gms_token_require_privilege MANAGE_INGESTION;
            gms_token_forbidden_status 403;
            proxy_pass http://gms/check;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
        }
        location /ingestion/ {
            gms_token_require_privilege MANAGE_INGESTION;
            proxy_pass http://gms;
        }
SERVER

$s->grant(urn('ingest'), 'MANAGE_INGESTION');

subtest 'a subrequest needing a privilege, with a session token' => sub {
    my $pat = personal('ingest');
    $s->token($pat, actor => urn('ingest'), type => 'PERSONAL');
    is($s->get('/ar/x', $pat)->{status}, 200,
       'a personal token of a user holding it: the subrequest passes');

    my $jwt = session('ingest');
    is($s->get('/ar/x', $jwt)->{status}, 403,
       'a session token where the main location checks none: refused');
    like($s->nginx->error_log,
         qr/\[info\].*a session token's privileges are read only where/,
         'saying why');
    is($s->get('/ar-checked/x', $jwt)->{status}, 200,
       'where the main location checks it too: the subrequest passes');
};

subtest 'a stale session entry keeps its privileges' => sub {
    my $jwt = session('ingest');
    is($s->get('/ingestion/x', $jwt)->{status}, 200,
       'privileges read from Redis');
    select(undef, undef, undef, 1.3);                   # past the ttl
    is($s->get('/entities/x', $jwt)->{status}, 200,
       'then a request needing none');
    $s->redis->stop;
    is($s->get('/ingestion/x', $jwt)->{status}, 200,
       'Redis down: the stale entry with the privileges is still used');
};

$s->nginx->stop;
is_deeply([$s->nginx->bad_log_lines], [], 'no alerts or crashes');


# --- nginx -t ---------------------------------------------------------------

my $conf = <<'CONF';
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events { }
http {
    gms_token_salt "";
    %%HTTP%%
    server {
        listen 127.0.0.1:1;
        location / { gms_token_auth on; }
    }
}
CONF

sub nginx_t {
    my ($http) = @_;
    return GmsTest::nginx_t($conf =~ s/%%HTTP%%/$http/r);
}

my $third_key_file = file('third-key' => "$UNKNOWN_KEY\n");
my $colon_secret = file('colon-secret' => "John:Snow\n");

my @good = (
    "gms_token_signing_key_file $key_file;",
    # DataHubSystemAuthenticator splits at the first ':' from 1.4.0 (PR 15023)
    "gms_datahub_version 1.4.0;\n"
    . "gms_token_system_client $SYSTEM secret_file=$colon_secret;",
    "gms_token_signing_key_file $key_file;\n"
    . "gms_token_signing_key_file $new_key_file;",
    "gms_token_signing_key_file $key_file; gms_token_jwt_leeway 30s;\n"
    . "gms_token_system_client $SYSTEM secret_file=$secret_file;",
);

my @bad = (
    ['a missing key file', "$dir/no-such-key",
     "gms_token_signing_key_file $dir/no-such-key;"],
    ['an empty key file', file('empty-key' => ''),
     "gms_token_signing_key_file $dir/empty-key;"],
    ['a key file with only a newline', file('newline-key' => "\n"),
     "gms_token_signing_key_file $dir/newline-key;"],
    ['three key files', undef,
     "gms_token_signing_key_file $key_file;\n"
     . "gms_token_signing_key_file $new_key_file;\n"
     . "gms_token_signing_key_file $third_key_file;"],
    # before 1.4.0 (the default, 0.13.0), at every ':'
    ["a system client secret with ':'", $colon_secret,
     "gms_token_system_client $SYSTEM secret_file=$colon_secret;"],
    ['an empty system client secret', file('empty-secret' => ''),
     "gms_token_system_client $SYSTEM secret_file=$dir/empty-secret;"],
    ['a leeway over an hour', undef,
     "gms_token_signing_key_file $key_file; gms_token_jwt_leeway 2h;"],
    ['a system client secret of only a newline',
     file('newline-secret' => "\n"),
     "gms_token_system_client $SYSTEM secret_file=$dir/newline-secret;"],
);

for my $http (@good) {
    my ($rc, $out) = nginx_t($http);
    is($rc, 0, 'nginx -t accepts: ' . ($http =~ s/\s*\n\s*/ /gr))
        or diag($out);
}

for my $case (@bad) {
    my ($title, $named, $http) = @$case;
    subtest "nginx -t refuses $title" => sub {
        my ($rc, $out) = nginx_t($http);
        isnt($rc, 0, 'refused');
        unlike($out, qr/unknown directive/, 'the directive is known');
        my ($directive) = $http =~ /(\w+)[^;]*;\s*\z/;
        like($out, defined $named
                   ? qr/\[emerg\].*(?:\Q$named\E|\Q$directive\E)/
                   : qr/\[emerg\]/,
             'an error naming the file or the directive');
    };
}

done_testing();

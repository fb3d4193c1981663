#!/usr/bin/perl

# Inactive users behind every credential (issue 33, items 1 and 2): a
# user in gms:inactive ('gms-token follow --inactive mark') is refused
# where the edge answers getEsTaskStatus itself, whatever their
# credential, as the location's gms_datahub_version answers:
#
# - a session token (signed with GMS's key, StatelessTokenService): as a
#   personal token, since StatelessTokenService.validateAccessToken
#   checks every token DataHub signed: 0.15.0 to 1.1.x take it and
#   refuse every operation (OperationContext, PR 12158): Rest.li's 500,
#   OpenAPI's 403 {"error":"Actor is not active"}
#   (GlobalControllerExceptionHandler); from 1.2.0 the token itself, 401
#   (validateActor, PR 13947);
# - an external OAuth token (1.3.0 on): DataHubOAuthAuthenticator never
#   asks whether its user is active, so GMS takes the token and refuses
#   every operation: Rest.li's 500 before 1.7.0, and from 1.7.0 its 403
#   "Actor is not active" (OperationsResource builds the session before
#   the task, RestliUtils.asSession, PR 18003); OpenAPI's 403.
#
# The user's status is read in the same lookup as their privileges (one
# EVALSHA).  Both forms, both paths (/api/gms/ too), with and without
# gms_token_cache; with a cache, a user marked after their entry was
# cached is refused once their URN is published.  Where a session or
# OAuth token goes to GMS unread (no privilege checked), GMS decides.
# The OpenAPI form follows the 0.15.0 rule for a personal token too
# (issue 33, item 3).

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use Test::More;

use GmsTest;
use GmsTest::Edge;
use GmsTest::JWT;
use GmsTest::Messages qw($RESTLI_EXCEPTION $INVALID_TOKEN $UNKNOWN_TOKEN);

GmsTest::need_module();
GmsTest::need_redis();
GmsTest::skip_all('no openssl command') unless GmsTest::in_path('openssl');


# GlobalControllerExceptionHandler.actorAccessException
my $OPENAPI_INACTIVE = GmsTest::fixture('datahub-openapi-getTaskStatus-inactive.json');

my $INACTIVE = 'Actor is not active';
my $INACTIVE_500 = 'io.datahubproject.metadata.exception.'
                 . "ActorAccessException: $INACTIVE";

my $KEY = 'c2lnbmluZy1rZXktNjY=';
my $ISS = 'https://idp.example.test/realms/dh';
my $AUD = 'api://datahub';

my $SESSION_USER = 'urn:li:corpuser:u1';
my $OAUTH_USER = 'urn:li:corpuser:__oauth_idp_example_test_realms_dh_u2';
my $ACTIVE_USER = 'urn:li:corpuser:u3';
my $PERSONAL_USER = 'urn:li:corpuser:u4';

my $dir = GmsTest::tempdir();
GmsTest::write_file("$dir/key", "$KEY\n");
my $rsa = GmsTest::JWT::rsa_key("$dir/k1.pem");
GmsTest::write_file("$dir/jwks.json", GmsTest::JWT::jwks([$rsa, 'k1']));

sub session { GmsTest::JWT::session($KEY, $_[0]) }

sub oauth {
    my ($sub) = @_;
    return GmsTest::JWT::rs256($rsa, 'k1',
                               { iss => $ISS, aud => $AUD, sub => $sub,
                                 exp => time() + 600, iat => time() });
}


my $OPENAPI = '/openapi/operations/elasticSearch/getTaskStatus?task=known:1';

# form => [kind, method, path]
my @FORMS = (
    ['restli', POST => '/operations?action=getEsTaskStatus'],
    ['restli', POST => '/api/gms/operations?action=getEsTaskStatus'],
    ['openapi', GET => $OPENAPI],
    ['openapi', GET => "/api/gms$OPENAPI"],
);

sub ask {
    my ($e, $form, $token) = @_;
    my ($kind, $method, $path) = @$form;
    return $e->nginx->http($method => $path,
                           { Authorization => "Bearer $token",
                             'Content-Type' => 'application/json' },
                           $kind eq 'restli' ? '{"task":"known:1"}' : undef);
}

sub json_body {
    my ($res) = @_;
    my $body = eval { GmsTest::json_decode($res->{body} // '') };
    return ref $body eq 'HASH' ? $body : {};
}

# release => what GMS does with the user of each credential: a session
# token's (as a personal token's), an OAuth token's (1.3.0 on)
my @RELEASES = (
    ['0.15.0', session => 'actor'],
    ['1.1.0', session => 'actor'],
    ['1.2.0', session => 'token'],
    ['1.3.0', session => 'token', oauth => 'actor'],
    ['1.7.0', session => 'token', oauth => 'actor'],
);

# What the edge answers the inactive user's credential at $form.
sub refused {
    my ($res, $v, $rule, $form, $title) = @_;
    my ($kind) = @$form;

    subtest $title => sub {
        if ($rule eq 'token') {
            is($res->{status}, 401, '401: GMS refuses the token itself '
                                    . '(StatelessTokenService.validateActor)');
            is_deeply(json_body($res), { exceptionClass => $RESTLI_EXCEPTION,
                                         status => 401,
                                         message => $UNKNOWN_TOKEN },
                      'the body of a token Redis does not have');
            is($res->{headers}{'www-authenticate'}, $INVALID_TOKEN,
               'invalid_token');
            return;
        }

        if ($kind eq 'openapi') {
            is($res->{status}, 403, '403 (GlobalControllerExceptionHandler)');
            is($res->{body}, $OPENAPI_INACTIVE, $OPENAPI_INACTIVE);
            like($res->{headers}{'content-type'} // '',
                 qr{^application/json}, 'application/json');
            return;
        }

        my $status = $v eq '1.7.0' ? 403 : 500;
        is($res->{status}, $status,
           $status == 403 ? '403 (RestliUtils.asSession, PR 18003)'
                          : '500 (RestliUtils.toTask: unwrapped)');
        is_deeply(json_body($res),
                  { exceptionClass => $RESTLI_EXCEPTION, status => $status,
                    message => $status == 403 ? $INACTIVE : $INACTIVE_500 },
                  'the Rest.li error');
        is($res->{headers}{'x-restli-error-response'}, 'true',
           'X-RestLi-Error-Response');
        ok(!defined $res->{headers}{'www-authenticate'}, 'no challenge');
    };
}

sub edge {
    my ($v, $cache, $oauth) = @_;

    my $http = "gms_datahub_version $v;\n"
             . "gms_token_signing_key_file $dir/key;\n";
    $http .= "gms_token_oauth issuer=$ISS audience=$AUD "
             . "jwks_file=$dir/jwks.json;\n" if $oauth;
    $http .= "gms_token_cache zone=tokens:1m ttl=300s negative_ttl=300s;\n"
        if $cache;

    my $e = GmsTest::Edge->start(
        search => GmsTest::Stub::search_cluster(), http => $http, server => <<'SERVER');
        location = /openapi/operations/elasticSearch/getTaskStatus {
            gms_es_task_status /_es_tasks/;
            proxy_pass http://gms;
        }
SERVER

    for my $user ($SESSION_USER, $OAUTH_USER, $ACTIVE_USER, $PERSONAL_USER) {
        $e->grant($user, 'GET_ES_TASK_STATUS_PRIVILEGE');
    }

    return $e;
}

for my $release (@RELEASES) {
    my ($v, %rule) = @$release;

    for my $cache (0, 1) {
        my $with = $cache ? 'with gms_token_cache' : 'without a cache';

        subtest "DataHub $v, $with" => sub {
            my $e = edge($v, $cache, $rule{oauth});
            my %token = (session => session('u1'));
            $token{oauth} = oauth('u2') if $rule{oauth};

            # active, every credential answered; with a cache, their
            # entries are cached with the user's status (active)
            for my $form (@FORMS) {
                is(ask($e, $form, $token{$_})->{status}, 200,
                   "active, $_: 200 at $form->[2]")
                    for sort keys %token;
            }

            # a session token seen where no privilege is checked first
            is(ask($e, $FORMS[0], session('u3'))->{status}, 200,
               'another active user: 200');

            $e->redis->cmd(SADD => 'gms:inactive', $SESSION_USER,
                           $OAUTH_USER);
            $e->redis->cmd(PUBLISH => 'gms:invalidate', $_)
                for $SESSION_USER, $OAUTH_USER;

            for my $kind (sort keys %token) {
                for my $form (@FORMS) {
                    my $res;

                    # with a cache: once each worker has the message
                    GmsTest::wait_until(sub {
                        $res = ask($e, $form, $token{$kind});
                        $res->{status} != 200;
                    }, 10);

                    refused($res, $v, $rule{$kind}, $form,
                            "inactive, $kind token: $form->[1] $form->[2]");
                }
            }

            is_deeply([map { $_->{uri} } @{ $e->gms->requests }], [],
                      'none of it reached GMS');

            # an uncached session token of an inactive user
            my $fresh = GmsTest::JWT::session($KEY, 'u1',
                                              exp => time() + 1800);
            refused(ask($e, $FORMS[1], $fresh), $v, $rule{session},
                    $FORMS[1], 'inactive, another session token of theirs');

            # where no privilege is checked, GMS decides (from 1.2.0 it
            # refuses the token; its session, from 0.15.0): the edge
            # does not read a session token's user there
            if (!$cache) {
                $e->gms->clear_requests;
                my $res = $e->get('/entities/x', $fresh);
                is($res->{status}, 200, 'a proxied location: to GMS');
                is(scalar @{ $e->gms->requests }, 1, 'GMS decides');
            }

            is(ask($e, $FORMS[2], session('u3'))->{status}, 200,
               'an active user: 200 still');

            # reactivated
            $e->redis->cmd(SREM => 'gms:inactive', $SESSION_USER,
                           $OAUTH_USER);
            $e->redis->cmd(PUBLISH => 'gms:invalidate', $_)
                for $SESSION_USER, $OAUTH_USER;

            for my $kind (sort keys %token) {
                ok(GmsTest::wait_until(sub {
                    ask($e, $FORMS[3], $token{$kind})->{status} == 200;
                }, 10), "reactivated, $kind token: 200 again");
            }

            $e->nginx->stop;
            is_deeply([$e->nginx->bad_log_lines], [],
                      'no alerts or crashes');
        };
    }
}


# a user's lookup after Redis lost its scripts: -NOSCRIPT, then EVAL
subtest "a session token's user, the script cache flushed" => sub {
    my $e = edge('1.2.0', 0, 0);
    $e->redis->cmd(SCRIPT => 'FLUSH');
    is(ask($e, $FORMS[0], session('u3'))->{status}, 200,
       'an active user: 200');
    $e->redis->cmd(SCRIPT => 'FLUSH');
    $e->redis->cmd(SADD => 'gms:inactive', $ACTIVE_USER);
    refused(ask($e, $FORMS[2], session('u3')), '1.2.0', 'token', $FORMS[2],
            'marked inactive: refused');
    # the first too, when the connection loaded the script before the
    # first flush (it opens for the sync age as well)
    like($e->redis->cmd(INFO => 'commandstats'), qr/^cmdstat_eval:calls=\d/m,
         'after -NOSCRIPT, sent again with EVAL');
    $e->nginx->stop;
    is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');
};


# --- the OpenAPI form at 0.15.0: a personal token (issue 33, item 3) ---------

subtest 'DataHub 0.15.0: a personal token of a suspended user' => sub {
    my $e = edge('0.15.0', 0, 0);
    my $pat = GmsTest::JWT::personal($KEY, 'u4');
    $e->token($pat, actor => $PERSONAL_USER, type => 'PERSONAL');
    $e->redis->cmd(SADD => 'gms:inactive', $PERSONAL_USER);

    for my $form (@FORMS) {
        refused(ask($e, $form, $pat), '0.15.0', 'actor', $form,
                "$form->[1] $form->[2]");
    }

    is_deeply([map { $_->{uri} } @{ $e->gms->requests }], [],
              'none of it reached GMS');

    $e->redis->cmd(SREM => 'gms:inactive', $PERSONAL_USER);
    is(ask($e, $FORMS[2], $pat)->{status}, 200, 'reactivated: 200');

    $e->nginx->stop;
    is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');
};

done_testing();

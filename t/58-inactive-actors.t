#!/usr/bin/perl

# Inactive actors by release (issue 26, item 1): a user gms-token found
# suspended, soft-removed or hard-deleted is in gms:inactive; with
# 'gms-token follow --inactive mark' their tokens stay cached, and the
# edge reads the set in its one lookup and answers as its
# gms_datahub_version's GMS does (ActorContext.isActive):
#
# - before 0.15.0 nothing checks it: the token works everywhere;
# - 0.15.0 to 1.1.x (commit 8c724dbf, PR 12158, in the server's 0.15.0
#   release notes, docs/how/updating-datahub.md, though after the CLI's
#   v0.15.0 tag): GMS takes the token, but OperationContext.asSession
#   throws ActorAccessException("Actor is not active") before any
#   privilege is checked.  Where the edge checks a privilege it answers
#   403 with that message; getEsTaskStatus, which the edge answers, is
#   Rest.li's 500 (OperationsResource calls asSession inside
#   RestliUtils.toTask, which maps only a wrapped ActorAccessException to
#   403: the bare one becomes RestLiServiceException(S_500, throwable));
#   anything else reaches GMS unchanged, which answers it itself;
# - from 1.2.0 GMS refuses the token itself (StatelessTokenService.
#   validateActor, commit e7463ac1, PR 13947): 401, as for a token Redis
#   does not have.
#
# Back to 200 once the user leaves the set.  Then the follower's mode
# against the stand-in GMS and an edge with a cache (ttl 300 s): the
# tokens stay cached, the user's URN is published, and the edge answers
# by release at once.
#
# DataHub's OAuth users (issue 33): the user of an external OAuth token
# (__oauth_<issuer>_<sub>, made by ServiceAccountService.
# ensureServiceAccountExists with the subTypes ["SERVICE"]) holds no
# DataHub token, yet the follower finds them (scrollAcrossEntities by that
# sub-type, soft-removed ones too) and reads their status: suspended or
# soft-removed, they are put in gms:inactive and the edge refuses their
# OAuth token at getEsTaskStatus (1.3.0: Rest.li's 500); active again,
# served again; hard-deleted, served (GMS makes the user again).

use strict;
use warnings;

use Test::More;

use GmsTest;
use GmsTest::Messages qw($RESTLI_EXCEPTION $INVALID_TOKEN $UNKNOWN_TOKEN);
use GmsTest::Edge;
use GmsTest::GraphQL;
use GmsTest::JWT;
use GmsTest::Subscriber;
use GmsTest::Tool qw(run_tool gms_account gms_args datahub_id key_of);

GmsTest::need_module();
GmsTest::need_redis();

# OperationContext's builder, RestliUtils.forbidden's message
my $INACTIVE = 'Actor is not active';

# RestLiServiceException(HttpStatus, Throwable): the cause's toString()
my $INACTIVE_500 = 'io.datahubproject.metadata.exception.'
                 . "ActorAccessException: $INACTIVE";

my $SUSPENDED = 'urn:li:corpuser:suspended';
my $GONE = 'urn:li:corpuser:gone';


sub ask_task_status {
    my ($e, $token) = @_;
    return $e->nginx->http(POST => '/operations?action=getEsTaskStatus',
                           { 'Content-Type' => 'application/json',
                             Authorization => "Bearer $token" },
                           '{"task":"known:1"}');
}

sub json_body {
    my ($res) = @_;
    return eval { GmsTest::json_decode($res->{body} // '') } // {};
}

sub answered {
    my ($res, $status, $message, $title) = @_;
    subtest $title => sub {
        is($res->{status}, $status, "status $status");
        is_deeply(json_body($res), { exceptionClass => $RESTLI_EXCEPTION,
                                     status => $status,
                                     message => $message }, 'body');
    };
}

sub reached_gms {
    my ($e, $res, $token, $title) = @_;
    subtest $title => sub {
        is($res->{status}, 200, 'status 200, from GMS');
        my @seen = @{ $e->gms->requests };
        is(scalar @seen, 1, 'one request reached GMS');
        is($seen[0]{header}{authorization}, "Bearer $token",
           'Authorization unchanged');
        is($seen[0]{header}{'x-datahub-actor'}, $SUSPENDED,
           'its actor named');
    };
}

# release => what GMS does with an inactive user's token
my %RELEASES = (
    '0.14.1' => 'accepted',
    '0.15.0' => 'actor',
    '1.0.0'  => 'actor',
    '1.1.0'  => 'actor',
    '1.2.0'  => 'token',
    '1.7.0'  => 'token',
);

for my $v (sort keys %RELEASES) {
    my $rule = $RELEASES{$v};

    subtest "DataHub $v: an inactive user's token ($rule)" => sub {
        my $e = GmsTest::Edge->start(search => GmsTest::Stub::search_cluster(),
                                     http => "gms_datahub_version $v;");

        $e->token('sus-token', actor => $SUSPENDED);
        $e->grant($SUSPENDED, qw(MANAGE_ACCESS_TOKENS
                                 GET_ES_TASK_STATUS_PRIVILEGE));
        $e->token('plain-token', actor => 'urn:li:corpuser:plain');
        $e->token('gone-token', actor => $GONE);
        $e->grant($GONE, 'MANAGE_ACCESS_TOKENS');
        $e->redis->cmd(SADD => 'gms:inactive', $SUSPENDED,
                       'urn:li:corpuser:plain', $GONE);
        $e->redis->cmd(SADD => 'gms:deleted', $GONE);
        $e->gms->clear_requests;

        my $gone = $e->get('/admin/x', 'gone-token');

        # hard-deleted only: asSession builds with enforceExistence off
        # (its skipCache lands in build()'s enforceExistenceEnabled) until
        # validateActor checks it, 1.2.0
        is($gone->{status}, $rule eq 'token' ? 401 : 200,
           'a hard-deleted user (gms:deleted): '
           . ($rule eq 'token' ? '401 (validateActor, enforceExistence)'
                               : '200 (OperationContext.asSession: no '
                                 . 'existence check)'));

        # it reached GMS (1.2: refused): nothing else should
        $e->gms->clear_requests;

        my $admin = $e->get('/admin/x', 'sus-token');
        my $task = ask_task_status($e, 'sus-token');
        my $plain = $e->get('/admin/x', 'plain-token');

        if ($rule eq 'accepted') {
            is($admin->{status}, 200,
               'gms_token_require_privilege: 200, nothing checks it');
            is($task->{status}, 200, 'getEsTaskStatus: answered');
            $e->gms->clear_requests;
            reached_gms($e, $e->get('/entities/x', 'sus-token'),
                        'sus-token', 'a proxied location: GMS answers');

        } elsif ($rule eq 'actor') {
            answered($admin, 403, $INACTIVE,
                     "gms_token_require_privilege: 403 '$INACTIVE' "
                     . '(OperationContext, PR 12158)');
            ok(!defined $admin->{headers}{'www-authenticate'},
               'no challenge: not a scope GMS asks for');
            is($admin->{headers}{'x-gms-result'}, 'forbidden',
               '$gms_token_result forbidden');
            answered($plain, 403, $INACTIVE,
                     'without the privilege too: GMS refuses the actor '
                     . 'before it checks one');
            answered($task, 500, $INACTIVE_500,
                     'getEsTaskStatus: Rest.li 500 (RestliUtils.toTask, '
                     . 'OperationsResource)');
            is($task->{headers}{'x-restli-error-response'}, 'true',
               'getEsTaskStatus: X-RestLi-Error-Response');
            is_deeply($e->gms->requests, [], 'none of them reached GMS');
            reached_gms($e, $e->get('/entities/x', 'sus-token'),
                        'sus-token',
                        'a proxied location: reaches GMS unchanged, which '
                        . 'answers it itself');

        } else {
            for my $case (['/admin/x', $admin], ['getEsTaskStatus', $task],
                          ['/entities/x', $e->get('/entities/x',
                                                  'sus-token')])
            {
                answered($case->[1], 401, $UNKNOWN_TOKEN,
                         "$case->[0]: 401 (StatelessTokenService."
                         . 'validateActor, PR 13947)');
                is($case->[1]{headers}{'www-authenticate'}, $INVALID_TOKEN,
                   "$case->[0]: invalid_token");
            }
            is_deeply($e->gms->requests, [], 'nothing reached GMS');
        }

        # reactivated: out of the set (no cache here: the next lookup)
        $e->redis->cmd(SREM => 'gms:inactive', $SUSPENDED);
        $e->gms->clear_requests;
        is($e->get('/admin/x', 'sus-token')->{status}, 200,
           'reactivated: gms_token_require_privilege 200');
        is(ask_task_status($e, 'sus-token')->{status}, 200,
           'reactivated: getEsTaskStatus 200');
        is($e->get('/entities/x', 'sus-token')->{status}, 200,
           'reactivated: proxied 200');

        $e->nginx->stop;
        is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');
    };
}

subtest 'a token cached before the set existed: an older Redis' => sub {
    my $e = GmsTest::Edge->start(http => 'gms_datahub_version 1.0.0;');
    $e->token('sus-token', actor => $SUSPENDED);
    $e->grant($SUSPENDED, 'MANAGE_ACCESS_TOKENS');
    is($e->get('/admin/x', 'sus-token')->{status}, 200,
       'no gms:inactive: every user active');
    $e->redis->cmd(SET => 'gms:inactive', 'not a set');
    is($e->get('/admin/x', 'sus-token')->{status}, 503,
       'gms:inactive of another type: the lookup fails (503), as for any '
       . 'bad entry');
    $e->nginx->stop;
};


# --- the follower: --inactive mark ------------------------------------------

GmsTest::Tool::need_tool();

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYXJrIn0.c2VjcmV0LTU4';
my ($alice, $bob) = map { "urn:li:corpuser:$_" } qw(alice bob);

my $e = GmsTest::Edge->start(
    workers => 2,
    http => 'gms_token_cache zone=tokens:1m ttl=300s negative_ttl=300s;',
    server => <<'SERVER');
        location /v0.15/ {
            gms_datahub_version 0.15.0;
            gms_token_require_privilege MANAGE_ACCESS_TOKENS;
            proxy_pass http://gms;
        }

        location /v1.2/ {
            gms_datahub_version 1.2.0;
            proxy_pass http://gms;
        }
SERVER
my $redis = $e->redis;
my $gms = GmsTest::GraphQL->start(
    token => $SECRET,
    tokens => [ GmsTest::Tool::listed('alice-token', actor => $alice),
                GmsTest::Tool::listed('bob-token', actor => $bob) ]);
my $token_file = gms_account($SECRET);
my $sub = GmsTest::Subscriber->new($redis, 'gms:invalidate');

sub sync {
    my (@args) = @_;
    return run_tool(undef, 'sync', gms_args($gms->url, $token_file),
                    '--prune', '--privileges', 'off', @args,
                    '--redis', '127.0.0.1:' . $redis->port);
}

sub users_line {
    my ($res) = @_;
    my ($line) = grep { /^checked=/ } split /\n/, $res->{out};
    return $line // '';
}

sub answers {
    my ($token) = @_;
    return join ' ', map { $e->get($_, $token)->{status} }
                     qw(/v0.15/x /v1.2/x /entities/x);
}

$redis->cmd(SADD => "gms:actor:$bob", 'MANAGE_ACCESS_TOKENS');
$redis->cmd(SADD => "gms:actor:$alice", 'MANAGE_ACCESS_TOKENS');

my $res = sync('--inactive', 'mark');
is($res->{rc}, 0, 'mark: sync exit 0') or diag($res->{err});
is(answers('bob-token'), '200 200 200', 'bob active: 200 by every release');
$sub->messages;

$gms->users({ $bob => { status => 'SUSPENDED' } });
$res = sync('--inactive', 'mark');
is($res->{rc}, 0, 'bob suspended: sync exit 0') or diag($res->{err});
is(users_line($res),
   'checked=2 inactive=1 newly=1 reactivated=0 dropped=0 unknown=0',
   'bob found inactive: into gms:inactive, no token dropped');
is_deeply($redis->cmd(SMEMBERS => 'gms:inactive'), [$bob],
          'bob in gms:inactive');
ok($redis->cmd(EXISTS => key_of('bob-token')), "bob's token still cached");
is_deeply([$sub->messages], [$bob], "bob's URN published on gms:invalidate");
is(answers('bob-token'), '403 401 200',
   "at once, ttl 300 s notwithstanding: 403 for 0.15's privilege check, "
   . '401 for 1.2, GMS answers the rest');
is(answers('alice-token'), '200 200 200', 'alice unaffected');
like(run_tool(undef, 'show', datahub_id('bob-token'),
              '--redis', '127.0.0.1:' . $redis->port)->{out},
     qr/"privileges":\["MANAGE_ACCESS_TOKENS"\],"inactive":true\}$/,
     "gms-token show: what the edge's lookup sees, the flag with it");
unlike(run_tool(undef, 'show', datahub_id('alice-token'),
                '--redis', '127.0.0.1:' . $redis->port)->{out},
       qr/inactive/, 'and nothing for an active user');

$res = sync('--inactive', 'mark');
ok($redis->cmd(EXISTS => key_of('bob-token')),
   'the next token cycle keeps caching his token');
is(users_line($res),
   'checked=2 inactive=1 newly=0 reactivated=0 dropped=0 unknown=0',
   'still inactive, nothing new');
is_deeply([$sub->messages], [], 'nothing published');

$gms->users({ $bob => { status => 'ACTIVE' } });
$res = sync('--inactive', 'mark');
is(users_line($res),
   'checked=2 inactive=0 newly=0 reactivated=1 dropped=0 unknown=0',
   'bob active again: out of the set');
is_deeply([$sub->messages], [$bob], 'his URN published again');
is(answers('bob-token'), '200 200 200', 'bob: 200 again by every release');

# from mark to refuse: the tokens leave the cache, 401 everywhere
$gms->users({ $bob => { status => 'SUSPENDED' } });
$res = sync();
is(users_line($res),
   'checked=2 inactive=1 newly=1 reactivated=0 dropped=1 unknown=0',
   '--inactive refuse: his token dropped');
is(answers('bob-token'), '401 401 401', 'refuse: 401 whatever the release');

# and back to mark: the next token cycle caches it again
sync('--inactive', 'mark');
ok($redis->cmd(EXISTS => key_of('bob-token')),
   'mark again: his token cached again');
is(answers('bob-token'), '403 401 200', 'answered by release again');

# hard-deleted: in gms:inactive and gms:deleted, served by 0.15's GMS
my $carol = 'urn:li:corpuser:carol';
$gms->users({ $bob => { status => 'ACTIVE' }, $carol => { deleted => 1 } });
$gms->tokens([ GmsTest::Tool::listed('alice-token', actor => $alice),
               GmsTest::Tool::listed('bob-token', actor => $bob),
               GmsTest::Tool::listed('carol-token', actor => $carol) ]);
$redis->cmd(SADD => "gms:actor:$carol", 'MANAGE_ACCESS_TOKENS');
$res = sync('--inactive', 'mark');
is($res->{rc}, 0, 'carol hard-deleted: sync exit 0') or diag($res->{err});
is_deeply($redis->cmd(SMEMBERS => 'gms:deleted'), [$carol],
          'carol in gms:deleted');
is_deeply([sort @{ $redis->cmd(SMEMBERS => 'gms:inactive') }], [$carol],
          'and in gms:inactive; bob out');
is(answers('carol-token'), '200 401 200',
   "carol: 0.15's GMS serves her (no existence check), 1.2's refuses");
$gms->users({ $carol => { deleted => 0, status => 'SUSPENDED' } });
$res = sync('--inactive', 'mark');
is_deeply($redis->cmd(SMEMBERS => 'gms:deleted'), [],
          'carol provisioned again but suspended: out of gms:deleted');
is(answers('carol-token'), '403 401 200',
   'her URN published: refused by both at once');
$res = sync('--inactive', 'keep');
is_deeply([$redis->cmd(EXISTS => 'gms:inactive', 'gms:deleted')], [0],
          '--inactive keep: both sets deleted');
$gms->users({ $carol => { status => 'ACTIVE' } });

# follow --inactive mark: the same, by its mirror's thread
$gms->users({ $bob => { status => 'ACTIVE' } });
sync('--inactive', 'mark');
is(answers('bob-token'), '200 200 200', 'follow: bob active');
my $f = GmsTest::Tool::start_follow(
    gms_args($gms->url, $token_file), '--interval', '1s',
    '--privileges', 'off', '--privileges-interval', '1s',
    '--inactive', 'mark', '--redis', '127.0.0.1:' . $redis->port);
ok(GmsTest::wait_until(sub { GmsTest::Tool::ok_lines($f) >= 1 }, 10),
   'follow --inactive mark: a token cycle');
$gms->users({ $bob => { status => 'SUSPENDED' } });
ok(GmsTest::wait_until(sub { answers('bob-token') eq '403 401 200' }, 10),
   'follow: bob suspended, answered by release within a mirror');
ok($redis->cmd(EXISTS => key_of('bob-token')),
   "follow: bob's token still cached");
$gms->users({ $bob => { status => 'ACTIVE' } });
ok(GmsTest::wait_until(sub { answers('bob-token') eq '200 200 200' }, 10),
   'follow: reactivated, 200 again');
is(GmsTest::Tool::stop_follow($f, 'TERM'), 0, 'follow: exit 0 on SIGTERM');


# --- DataHub's OAuth users --------------------------------------------------

SKIP: {
    skip 'no openssl command', 1 unless GmsTest::in_path('openssl');

    my $ISS = 'https://idp.example.test/realms/dh';
    my $OAUTH = 'urn:li:corpuser:__oauth_idp_example_test_realms_dh_carl';
    my $dir = GmsTest::tempdir();
    my $rsa = GmsTest::JWT::rsa_key("$dir/k1.pem");
    GmsTest::write_file("$dir/jwks.json", GmsTest::JWT::jwks([$rsa, 'k1']));
    my $oauth = GmsTest::JWT::rs256($rsa, 'k1',
                                    { iss => $ISS, aud => 'api://datahub',
                                      sub => 'carl', exp => time() + 600,
                                      iat => time() });

    my $o = GmsTest::Edge->start(
        search => GmsTest::Stub::search_cluster(),
        http => "gms_datahub_version 1.3.0;\n"
                . "gms_token_oauth issuer=$ISS audience=api://datahub "
                . "jwks_file=$dir/jwks.json;");
    $o->grant($OAUTH, 'GET_ES_TASK_STATUS_PRIVILEGE');
    my $oredis = $o->redis;
    my $inactive = sub {
        return grep { $_ eq $OAUTH } @{ $oredis->cmd(SMEMBERS =>
                                                     'gms:inactive') };
    };

    $gms->users({ $OAUTH => { oauth => $ISS } });
    is(ask_task_status($o, $oauth)->{status}, 200,
       'an OAuth user, active: getEsTaskStatus 200');

    my $f = GmsTest::Tool::start_follow(
        gms_args($gms->url, $token_file), '--interval', '1s',
        '--privileges', 'off', '--privileges-interval', '1s',
        '--redis', '127.0.0.1:' . $oredis->port);
    ok(GmsTest::wait_until(sub { GmsTest::Tool::ok_lines($f) >= 1 }, 10),
       'follow: a token cycle');

    $gms->users({ $OAUTH => { oauth => $ISS, status => 'SUSPENDED' } });
    ok(GmsTest::wait_until(sub { $inactive->() }, 10),
       'follow: the OAuth user, suspended in DataHub, into gms:inactive '
       . '(no token of theirs listed)');
    answered(ask_task_status($o, $oauth), 500, $INACTIVE_500,
             'their OAuth token at getEsTaskStatus: Rest.li 500, as 1.3.0 '
             . "(OperationContext's ActorAccessException)");

    $gms->users({ $OAUTH => { oauth => $ISS, status => 'ACTIVE' } });
    ok(GmsTest::wait_until(sub { !$inactive->() }, 10),
       'follow: reactivated, out of gms:inactive');
    is(ask_task_status($o, $oauth)->{status}, 200,
       'their OAuth token served again');

    $gms->users({ $OAUTH => { oauth => $ISS, removed => 1 } });
    ok(GmsTest::wait_until(sub { $inactive->() }, 10),
       'follow: soft-removed (listed with includeSoftDeleted), into '
       . 'gms:inactive');
    is(ask_task_status($o, $oauth)->{status}, 500, 'refused again');

    $gms->users({ $OAUTH => { oauth => $ISS, deleted => 1 } });
    ok(GmsTest::wait_until(sub {
           $oredis->cmd(SISMEMBER => 'gms:deleted', $OAUTH) }, 10),
       'hard-deleted: checked as a member of the set, into gms:deleted');
    is(ask_task_status($o, $oauth)->{status}, 200,
       'served: GMS makes the user again with its next token '
       . '(ensureServiceAccountExists)');
    is(GmsTest::Tool::stop_follow($f, 'TERM'), 0, 'follow: exit 0');

    $gms->users({});
    $o->nginx->stop;
    is_deeply([$o->nginx->bad_log_lines], [], 'no alerts or crashes');
}

is(run_tool(undef, 'sync', gms_args($gms->url, $token_file),
            '--inactive', 'forget',
            '--redis', '127.0.0.1:' . $redis->port)->{rc}, 2,
   'an unknown --inactive mode: usage error');

$e->nginx->stop;
is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');

done_testing();

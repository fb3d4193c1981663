#!/usr/bin/perl

# gms_datahub_version: one edge per DataHub release, and every answer that
# changed between releases, each expected answer named with the DataHub
# file (at the release's tag, or the commit) it was read from.  The open
# paths are the shipped include files, conf-examples/open-paths/, one per
# release range, each passed by 'nginx -t' and by real requests.  The
# table is docs/directives.md#gms_datahub_version; src/lib/gms_release.c
# holds it in C.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use Test::More;

use GmsTest;
use GmsTest::Messages qw($INVALID_TOKEN $INSUFFICIENT_SCOPE
                         $EXPIRED_TOKEN $CANNOT_VERIFY $UNAUTHORIZED
                         $ES_UNAUTHORIZED $GMS_UNAUTHORIZED
                         refused);
use GmsTest::Edge;

GmsTest::need_module();
GmsTest::need_redis();

my $ROOT = abs_path(dirname(__FILE__) . '/..');
my $OPEN = "$ROOT/conf-examples/open-paths";
my $dir = GmsTest::scratch_dir();

my $SYSTEM = '__datahub_system';
my $SECRET = 'plain-secret';
my $COLON_SECRET = 'John:Snow:';

GmsTest::write_file("$dir/secret", "$SECRET\n");
GmsTest::write_file("$dir/colon-secret", "$COLON_SECRET\n");


# --- what each release answers ----------------------------------------------

# Every path some release serves without a credential, and the first
# release that does (authentication.excludedPaths in metadata-service/
# configuration/src/main/resources/application.yaml from v1.0.0; before,
# the servlets outside the AuthenticationFilter: web.xml at v0.13.0,
# WebApplicationInitializer.java at v0.14.1 and v0.15.0), and the health
# checks HealthStatusAuthenticator lets in, in every release.
my @OPEN_PATHS = (
    ['/health',                                    '0.13.0'],
    ['/config',                                    '0.13.0'],
    ['/config/search/export',                      '0.13.0'],
    ['/schema-registry/api/subjects',              '0.13.0'],
    ['/openapi/check/ready',                       '0.13.0'],
    ['/openapi/up/',                               '0.13.0'],
    ['/public-iceberg/v1/config',                  '1.0.0'],
    ['/actuator/prometheus',                       '1.2.0'],
    ['/health/live',                               '1.3.0'],
    ['/health/detailed',                           '1.5.0'],
    ['/openapi/operations/dev/featureFlags',       '1.5.0'],
    ['/openapi/operations/dev/featureFlags/x',     '1.5.0'],
);

# release => [the open-path file, forbidden status, MANAGE_SYSTEM_OPERATIONS
# grants getEsTaskStatus, the expired token's message, a ':' in the
# system secret, SERVICE_ACCOUNT tokens]
#
# - forbidden: OperationsResource (Rest.li) at v0.13.0 throws
#   S_401_UNAUTHORIZED; from 0.13.1 S_403_FORBIDDEN (f9e64d03, PR 10066)
# - MANAGE_SYSTEM_OPERATIONS: OperationsResource.getTaskStatus calls
#   isAPIAuthorized(GET_ES_TASK_STATUS_PRIVILEGE) up to v0.14.1,
#   AuthUtil.isAPIOperationsAuthorized (adds MANAGE_SYSTEM_OPERATIONS)
#   from v0.15.0 (5ad15a7b, PR 11549)
# - expired: AuthenticationFilter at v0.13.0 sends the
#   TokenExpiredException's message; at v0.14.0 to v1.0.0 "Unauthorized
#   to perform this action." (b544c0a3, PR 11091); at v1.1.0 and v1.2.0
#   "... due to expired auth." (f11d7f92, PR 13035); from v1.3.0
#   AuthenticationEnforcementFilter's "Unauthorized to perform this
#   action." (fa0edcd9, PR 14292).  Where GMS says the token expired the
#   edge says so in its words ($EXPIRED_TOKEN)
# - colon: DataHubSystemAuthenticator split(":") before v1.4.0,
#   split(":", 2) from v1.4.0 (317d1292, PR 15023)
# - service accounts: TokenType has SERVICE_ACCOUNT from v1.4.0 (PR
#   15972); before, StatelessTokenService's TokenType.valueOf fails:
#   DataHubTokenAuthenticator's 401 "Unable to verify the provided token."
my %RELEASES = (
    '0.13.0' => ['datahub-0.13.conf', 401, 0, $EXPIRED_TOKEN,    0, 0],
    '0.13.1' => ['datahub-0.13.conf', 403, 0, $EXPIRED_TOKEN,    0, 0],
    '0.14.1' => ['datahub-0.13.conf', 403, 0, $GMS_UNAUTHORIZED, 0, 0],
    '0.15.0' => ['datahub-0.13.conf', 403, 1, $GMS_UNAUTHORIZED, 0, 0],
    '1.0.0'  => ['datahub-1.0.conf',  403, 1, $GMS_UNAUTHORIZED, 0, 0],
    '1.2.0'  => ['datahub-1.2.conf',  403, 1, $EXPIRED_TOKEN,    0, 0],
    '1.3.0'  => ['datahub-1.3.conf',  403, 1, $GMS_UNAUTHORIZED, 0, 0],
    '1.4.0'  => ['datahub-1.3.conf',  403, 1, $GMS_UNAUTHORIZED, 1, 1],
    '1.7.0'  => ['datahub-1.5.conf',  403, 1, $GMS_UNAUTHORIZED, 1, 1],
    '1.7.0.1' => ['datahub-1.5.conf', 403, 1, $GMS_UNAUTHORIZED, 1, 1],
);

# 1.7.0 and 1.7.0.1 (updating-datahub.md, sections v1.7.0 and v1.7.0.1;
# master of 2026-07-23, which 1.7.0 was cut after): OperationsResource
# still refuses with S_403_FORBIDDEN and isAPIOperationsAuthorized
# (AuthUtil); AuthenticationEnforcementFilter's 401 is unchanged;
# DataHubSystemAuthenticator still split(":", 2) (1.7.0.1 only drops the
# default secret, #18886); TokenType, moved to metadata-auth/auth-api,
# still has SERVICE_ACCOUNT; authentication.excludedPaths in
# application.yaml is 1.5.0's.

sub version_cmp {
    my ($x, $y) = @_;
    my @x = (split(/\./, $x), 0, 0);
    my @y = (split(/\./, $y), 0, 0);
    return $x[0] <=> $y[0] || $x[1] <=> $y[1] || $x[2] <=> $y[2]
           || $x[3] <=> $y[3];
}


sub ask_task_status {
    my ($e, $token) = @_;
    return $e->nginx->http(POST => '/operations?action=getEsTaskStatus',
                           { 'Content-Type' => 'application/json',
                             Authorization => "Bearer $token" },
                           '{"task":"known:1"}');
}


# --- nginx -t: the versions, the secret, the shipped open-path files -------

my $conf = <<'CONF';
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events { }
http {
    gms_token_salt "";
    %%HTTP%%
    upstream gms { server 127.0.0.1:1; }
    server {
        listen 127.0.0.1:1;
        gms_token_auth on;
        %%SERVER%%
        location / { proxy_pass http://gms; }
    }
}
CONF

sub nginx_t {
    my ($http, $server) = @_;
    $server //= '';
    return GmsTest::nginx_t($conf =~ s/%%HTTP%%/$http/r
                                  =~ s/%%SERVER%%/$server/r);
}

my $KNOWN = '0.13.0, 0.13.1, 0.13.2, 0.13.3, 0.14.0, 0.14.1, 0.15.0, '
          . '1.0.0, 1.1.0, 1.2.0, 1.3.0, 1.4.0, 1.5.0, 1.6.0, 1.7.0, '
          . '1.7.0.1';

subtest 'nginx -t: gms_datahub_version' => sub {
    for my $v (split /, /, $KNOWN) {
        my ($rc, $out) = nginx_t("gms_datahub_version $v;");
        is($rc, 0, "$v accepted") or diag($out);
    }

    my ($rc, $out) = nginx_t('gms_datahub_version 1.4;');
    is($rc, 0, 'X.Y accepted') or diag($out);

    ($rc, $out) = nginx_t('', 'location /x { gms_datahub_version 1.0.0; '
                              . 'proxy_pass http://gms; }');
    is($rc, 0, 'in a location') or diag($out);

    # "Next" (updating-datahub.md) is no release yet: no name for it
    for my $bad ('1.3.1', '0.12.1', '1.8.0', 'v1.0.0', '1', '1.0.0.1',
                 '1.7.0.2', '1.6.0.2', '1.7.0.1.1', '1.7.0.1.', '.1.7.0.1',
                 '1.7.1', 'next', 'latest')
    {
        ($rc, $out) = nginx_t("gms_datahub_version $bad;");
        isnt($rc, 0, "$bad refused");
        like($out, qr/\[emerg\] unknown DataHub release "\Q$bad\E": expected one of \Q$KNOWN\E/,
             "$bad: the error names the known releases");
    }

    ($rc, $out) = nginx_t("gms_datahub_version 1.0.0;\n"
                          . 'gms_datahub_version 1.0.0;');
    like($out, qr/"gms_datahub_version" directive is duplicate/,
         'a duplicate refused');
};

subtest "nginx -t: a ':' in the system client's secret" => sub {
    my $client = "gms_token_system_client $SYSTEM "
               . "secret_file=$dir/colon-secret;";

    for my $v (sort { version_cmp($a, $b) } keys %RELEASES) {
        my ($rc, $out) = nginx_t("gms_datahub_version $v; $client");
        if ($RELEASES{$v}[4]) {
            is($rc, 0, "$v: accepted (DataHubSystemAuthenticator "
                       . "split(\":\", 2), PR 15023)") or diag($out);
        } else {
            isnt($rc, 0, "$v: refused (DataHubSystemAuthenticator "
                         . 'split(":"))');
            like($out, qr/\[emerg\] the secret of gms_token_system_client holds a colon.*gms_datahub_version is \Q$v\E here/,
                 "$v: the error says why and names the release");
        }
    }

    my ($rc, $out) = nginx_t($client, 'location /old/ { gms_token_auth off; '
                                      . 'proxy_pass http://gms; }');
    isnt($rc, 0, 'refused for the default release, 0.13.0');

    ($rc, $out) = nginx_t("gms_datahub_version 1.4.0; $client",
                          'location /old/ { gms_datahub_version 1.3.0; '
                          . 'proxy_pass http://gms; }');
    isnt($rc, 0, 'refused where one location with the check is older');

    ($rc, $out) = nginx_t("gms_datahub_version 1.4.0; $client",
                          'location /old/ { gms_datahub_version 1.3.0; '
                          . 'gms_token_auth off; proxy_pass http://gms; }');
    is($rc, 0, 'not where that location checks nothing') or diag($out);
};

subtest 'nginx -t: each shipped open-path file' => sub {
    my @files = sort glob("$OPEN/*.conf");
    is(scalar @files, 5, 'five release ranges');

    for my $file (@files) {
        my ($rc, $out) = nginx_t('', "include $file;");
        is($rc, 0, "$file") or diag($out);
    }
};


# --- real requests, release by release --------------------------------------

for my $v (sort { version_cmp($a, $b) } keys %RELEASES) {
    my ($open_file, $forbidden, $manage, $expired, $colon, $svc)
        = @{ $RELEASES{$v} };

    subtest "DataHub $v" => sub {
        my $secret_file = $colon ? "$dir/colon-secret" : "$dir/secret";
        my $secret = $colon ? $COLON_SECRET : $SECRET;

        my $e = GmsTest::Edge->start(
            search => GmsTest::Stub::search_cluster(),
            http   => "gms_datahub_version $v;\n"
                    . "    gms_token_system_client $SYSTEM "
                    . "secret_file=$secret_file;",
            server => <<"SERVER",
        include $OPEN/$open_file;

        add_header X-Gms-Type \$gms_token_type always;

        # gms_token_forbidden_status set wins over the release
        location /forced401/ {
            gms_token_forbidden_status 401;
            gms_token_require_privilege MANAGE_ACCESS_TOKENS;
            proxy_pass http://gms;
        }
SERVER
        );

        $e->token('reader', actor => 'urn:li:corpuser:reader');
        $e->grant('urn:li:corpuser:reader', 'GET_ES_TASK_STATUS_PRIVILEGE');
        $e->token('sysops', actor => 'urn:li:corpuser:ops');
        $e->grant('urn:li:corpuser:ops', 'MANAGE_SYSTEM_OPERATIONS');
        $e->token('status', actor => 'urn:li:corpuser:status');
        $e->grant('urn:li:corpuser:status', 'VIEW_SYSTEM_STATUS');
        $e->token('nobody', actor => 'urn:li:corpuser:nobody');
        $e->token('expired', actor => 'urn:li:corpuser:reader',
                  expiresAt => 1000);
        $e->token('svc', actor => 'urn:li:corpuser:service_ingest',
                  type => 'SERVICE_ACCOUNT');

        # a missing privilege: OperationsResource (v0.13.0: 401; PR 10066)
        refused($e->get('/admin/x', 'nobody'), $forbidden,
                $INSUFFICIENT_SCOPE, $UNAUTHORIZED,
                "gms_token_require_privilege refused: $forbidden");
        refused(ask_task_status($e, 'nobody'), $forbidden,
                $INSUFFICIENT_SCOPE, $ES_UNAUTHORIZED,
                "getEsTaskStatus without a privilege: $forbidden");
        refused($e->get('/forced401/x', 'nobody'), 401, $INSUFFICIENT_SCOPE,
                $UNAUTHORIZED, 'gms_token_forbidden_status 401 wins');

        # getEsTaskStatus's privileges (OperationsResource, AuthUtil)
        is(ask_task_status($e, 'reader')->{status}, 200,
           'GET_ES_TASK_STATUS_PRIVILEGE: answered');
        my $res = ask_task_status($e, 'sysops');
        if ($manage) {
            is($res->{status}, 200, 'MANAGE_SYSTEM_OPERATIONS: answered '
                                    . '(isAPIOperationsAuthorized)');
        } else {
            refused($res, $forbidden, $INSUFFICIENT_SCOPE, $ES_UNAUTHORIZED,
                    'MANAGE_SYSTEM_OPERATIONS alone: refused '
                    . '(isAPIAuthorized(GET_ES_TASK_STATUS_PRIVILEGE))');
        }

        # VIEW_SYSTEM_STATUS (PoliciesConfig, "Next"): the messaging
        # status only (OperationsController's consumer lag); never
        # getEsTaskStatus, whose privileges are the release's
        refused(ask_task_status($e, 'status'), $forbidden, $INSUFFICIENT_SCOPE,
                $ES_UNAUTHORIZED, 'VIEW_SYSTEM_STATUS alone: getEsTaskStatus '
                                  . 'refused');

        # an expired token: 401, the message by release
        # (AuthenticationFilter, AuthenticationEnforcementFilter)
        refused($e->get('/entities/x', 'expired'), 401, $INVALID_TOKEN,
                $expired, "an expired token: '$expired'");
        is($e->get('/entities/x', 'expired')->{headers}{'x-gms-result'},
           'expired', '$gms_token_result is expired in every release');

        # a service-account token (TokenType)
        $res = $e->get('/entities/x', 'svc');
        if ($svc) {
            is($res->{status}, 200, 'a SERVICE_ACCOUNT token: accepted');
            is($res->{headers}{'x-gms-type'}, 'SERVICE_ACCOUNT',
               '$gms_token_type SERVICE_ACCOUNT');
        } else {
            refused($res, 401, $INVALID_TOKEN, $CANNOT_VERIFY,
                    'a SERVICE_ACCOUNT token: 401 (TokenType.valueOf)');
        }

        # the system client (DataHubSystemAuthenticator)
        $res = $e->get('/entities/x', undef,
                       Authorization => "Basic $SYSTEM:$secret");
        is($res->{status}, 200, 'the system client with its secret'
                                . ($colon ? " (holding ':')" : ''));
        is($res->{headers}{'x-gms-type'}, 'SYSTEM', '$gms_token_type SYSTEM');
        refused($e->get('/entities/x', undef,
                        Authorization => "Basic $SYSTEM:John"),
                401, $INVALID_TOKEN, $CANNOT_VERIFY,
                'the system client with part of the secret');

        # split(":") drops trailing empty parts before 1.4.0; from 1.4.0
        # they are the secret's
        $res = $e->get('/entities/x', undef,
                       Authorization => "Basic $SYSTEM:${secret}::");
        if ($colon) {
            is($res->{status}, 401, 'trailing colons: another secret');
        } else {
            is($res->{status}, 200, 'trailing colons dropped, as GMS '
                                    . 'drops them');
        }

        # the open paths: GMS's own list for the release, pinned
        for my $case (@OPEN_PATHS) {
            my ($path, $since) = @$case;
            $e->gms->clear_requests;
            $res = $e->get($path);

            if (version_cmp($v, $since) >= 0) {
                is($res->{status}, 200, "$path: open (since $since)");
                is_deeply([map { "$_->{method} $_->{uri}" }
                           @{ $e->gms->requests }], ["GET $path"],
                          "$path: GMS saw that path alone");
            } else {
                is($res->{status}, 401, "$path: a token needed before "
                                        . $since);
                is_deeply($e->gms->requests, [], "$path: nothing reached GMS");
            }
        }

        $e->gms->clear_requests;
        is($e->nginx->http(POST => '/health', {}, '')->{status}, 403,
           'POST /health: only reads are open');
        is($e->get('/health/../entities/x')->{status}, 401,
           'a dot segment does not leave the open path');
        is($e->get('/health%2F..%2Fentities/x')->{status}, 401,
           'nor an encoded one');
        is_deeply($e->gms->requests, [], 'none of them reached GMS');

        $e->nginx->stop;
        is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');
    };
}

done_testing();

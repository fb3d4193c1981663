#!/usr/bin/perl

# gms_token_guest on: a request without any credential goes on to GMS
# unchanged, where DataHub's guest user answers it
# (DataHubGuestAuthenticator, DataHub 1.0.0 and later, off by default:
# authentication.authenticators in metadata-service/configuration/src/
# main/resources/application.yaml, GUEST_AUTHENTICATION_ENABLED).
# $gms_token_result is "guest", $gms_token_type "GUEST", counted in the
# metrics; a bad credential is still 401, and where the edge itself
# checks a privilege a request without a credential is too.

use strict;
use warnings;

use Test::More;

use GmsTest;
use GmsTest::Messages qw($CHALLENGE $INVALID_TOKEN
                         $MISSING_TOKEN $UNKNOWN_TOKEN
                         refused);
use GmsTest::Edge;

GmsTest::need_module();
GmsTest::need_redis();


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
        gms_token_auth on;
        location / { }
    }
}
CONF

sub nginx_t {
    my ($http) = @_;
    return GmsTest::nginx_t($conf =~ s/%%HTTP%%/$http/r);
}

subtest 'nginx -t' => sub {
    for my $v ('1.0.0', '1.4.0', '1.7.0') {
        my ($rc, $out) = nginx_t("gms_datahub_version $v; gms_token_guest on;");
        is($rc, 0, "gms_token_guest on with DataHub $v") or diag($out);
    }

    for my $v ('0.13.0', '0.15.0') {
        my ($rc, $out) = nginx_t("gms_datahub_version $v; gms_token_guest on;");
        isnt($rc, 0, "refused with DataHub $v");
        like($out, qr/\[emerg\] gms_token_guest needs DataHub 1\.0\.0 or later \(DataHubGuestAuthenticator\), and gms_datahub_version is \Q$v\E here/,
             "$v: the error names the release");
    }

    my ($rc, $out) = nginx_t('gms_token_guest on;');
    isnt($rc, 0, 'refused with the default release, 0.13.0');

    ($rc, $out) = nginx_t('gms_token_guest off;');
    is($rc, 0, 'off with any release') or diag($out);

    ($rc, $out) = nginx_t('gms_token_guest maybe;');
    like($out, qr/invalid value "maybe"/, 'on or off only');
};


# --- requests ---------------------------------------------------------------

my $e = GmsTest::Edge->start(
    search => sub { [404, ['Content-Type' => 'application/json'], '{}'] },
    http   => 'gms_datahub_version 1.0.0;',
    server => <<'SERVER',
        gms_token_guest on;

        add_header X-Gms-Type $gms_token_type always;

        location = /metrics {
            gms_token_auth off;
            gms_token_metrics;
        }

        location /no-guest/ {
            gms_token_guest off;
            proxy_pass http://gms;
        }

        location /from-cookie/ {
            gms_token_source $cookie_token;
            proxy_pass http://gms;
        }
SERVER
);

$e->token('known', actor => 'urn:li:corpuser:alice', type => 'PERSONAL');
$e->token('expired', actor => 'urn:li:corpuser:alice', expiresAt => 1000);

sub metrics {
    my $res = $e->nginx->http(GET => '/metrics');
    my %m;
    for my $line (split /\n/, $res->{body} // '') {
        $m{$1} = $2 if $line =~ /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/;
    }
    return \%m;
}

subtest 'no credential: to GMS, as its guest' => sub {
    my $before = metrics()->{'gms_token_requests_total{result="guest"}'} // 0;
    $e->gms->clear_requests;

    my $res = $e->get('/entities/x', undef,
                      'X-DataHub-Actor' => 'urn:li:corpuser:admin');
    is($res->{status}, 200, 'passed');
    is($res->{headers}{'x-gms-result'}, 'guest', '$gms_token_result guest');
    is($res->{headers}{'x-gms-type'}, 'GUEST', '$gms_token_type GUEST');
    is($res->{headers}{'x-gms-actor'}, undef, 'no $gms_token_actor');

    my $seen = $e->gms->requests;
    is(scalar @$seen, 1, 'GMS asked once');
    is($seen->[0]{uri}, '/entities/x', 'the path unchanged');
    is($seen->[0]{header}{authorization}, undef, 'no Authorization');
    is($seen->[0]{header}{'x-datahub-actor'}, undef,
       "the client's X-DataHub-Actor dropped");

    is(metrics()->{'gms_token_requests_total{result="guest"}'} // 0,
       $before + 1, 'counted as guest');

    is($e->get('/api/gms/entities/x')->{status}, 200,
       'the frontend-proxy path form too');
};

subtest 'a credential is checked as without guests' => sub {
    my $res = $e->get('/entities/x', 'known');
    is($res->{status}, 200, 'a valid token: passed');
    is($res->{headers}{'x-gms-type'}, 'PERSONAL', '$gms_token_type PERSONAL');
    is($res->{headers}{'x-gms-result'}, 'ok', '$gms_token_result ok');

    $e->gms->clear_requests;
    refused($e->get('/entities/x', 'not-known'), 401, $INVALID_TOKEN,
            $UNKNOWN_TOKEN, 'an unknown token: 401, not a guest',
            'x-gms-result' => 'unknown');
    is($e->get('/entities/x', 'expired')->{status}, 401,
       'an expired token: 401');
    is($e->get('/entities/x', undef, Authorization => 'Bearer')->{status},
       401, 'an empty Bearer: 401');
    is($e->get('/entities/x', undef, Authorization => 'Basic a:b')->{status},
       401, 'Basic without a system client: 401');
    is_deeply($e->gms->requests, [], 'none reached GMS');
};

subtest 'where the edge checks a privilege: 401' => sub {
    $e->gms->clear_requests;
    refused($e->get('/admin/x'), 401, $CHALLENGE, $MISSING_TOKEN,
            'gms_token_require_privilege', 'x-gms-result' => 'missing');

    my $res = $e->nginx->http(POST => '/operations?action=getEsTaskStatus',
                              { 'Content-Type' => 'application/json' },
                              '{"task":"known:1"}');
    refused($res, 401, $CHALLENGE, $MISSING_TOKEN, 'getEsTaskStatus',
            'x-gms-result' => 'missing');
    is_deeply($e->gms->requests, [], 'nothing reached GMS');
};

subtest 'gms_token_source: an Authorization it does not read' => sub {
    my $res = $e->get('/from-cookie/x');
    is($res->{status}, 200, 'nothing at all: a guest');
    is($res->{headers}{'x-gms-result'}, 'guest', '$gms_token_result guest');

    $e->gms->clear_requests;
    refused($e->get('/from-cookie/x', 'known'), 401, $CHALLENGE, $MISSING_TOKEN,
            'an Authorization header: not a guest',
            'x-gms-result' => 'missing');
    is_deeply($e->gms->requests, [], 'nothing reached GMS');
};

subtest 'gms_token_guest off: 401' => sub {
    refused($e->get('/no-guest/x'), 401, $CHALLENGE, $MISSING_TOKEN,
            'no credential refused', 'x-gms-result' => 'missing');
};

$e->nginx->stop;
is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');

done_testing();

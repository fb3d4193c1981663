#!/usr/bin/perl

# gms_token_auth on in a location reached by a subrequest (auth_request
# here; SSI and other modules' subrequests alike): nginx runs no access
# phase in a subrequest, so the module checks it in the precontent phase.
# It passes only when the main request's token was checked and valid and
# has the location's privileges; otherwise the subrequest ends with 401
# (or gms_token_forbidden_status), which auth_request turns into a
# refusal.  Before, every such subrequest passed.

use strict;
use warnings;

use Test::More;
use GmsTest;
use GmsTest::Edge;

my $e = GmsTest::Edge->start(server => <<'S');
        # an open location asking a protected one: nothing checked its token
        location /ar-open/ {
            gms_token_auth off;
            auth_request /ar-check;
            proxy_pass http://gms;
        }

        # a protected location asking a protected one
        location /ar-on/ {
            auth_request /ar-check;
            proxy_pass http://gms;
        }

        location /ar-priv/ {
            auth_request /ar-check-priv;
            proxy_pass http://gms;
        }

        location = /ar-check {
            internal;
            proxy_pass http://gms/check;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
        }

        location = /ar-check-priv {
            internal;
            gms_token_require_privilege MANAGE_INGESTION;
            gms_token_forbidden_status 403;
            proxy_pass http://gms/check;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
        }
S

$e->token('alice-token', actor => 'urn:li:corpuser:alice');
$e->token('ingest-token', actor => 'urn:li:corpuser:ingest');
$e->grant('urn:li:corpuser:ingest', 'MANAGE_INGESTION');

sub gms_saw {
    my @uris = map { $_->{uri} } @{ $e->gms->requests };
    $e->gms->clear_requests;
    return \@uris;
}

gms_saw();

my $res = $e->get('/ar-open/x');
is($res->{status}, 401, 'open location, no token: the subrequest is refused');
is_deeply(gms_saw(), [], 'GMS saw neither the check nor the request');

$res = $e->get('/ar-open/x', 'alice-token');
is($res->{status}, 401,
   'open location, a token nobody checked: refused all the same');
is_deeply(gms_saw(), [], 'GMS saw nothing');

$res = $e->get('/ar-on/x', 'alice-token');
is($res->{status}, 200, 'a checked, valid token: the subrequest passes');
is_deeply(gms_saw(), ['/check', '/ar-on/x'], 'GMS saw the check, then the request');

$res = $e->get('/ar-on/x');
is($res->{status}, 401, 'no token: refused by the main request itself');

$res = $e->get('/ar-priv/x', 'alice-token');
is($res->{status}, 403,
   "the subrequest's location's privileges, and its refusal status");
is_deeply(gms_saw(), [], 'GMS saw nothing');

$res = $e->get('/ar-priv/x', 'ingest-token');
is($res->{status}, 200, 'with the privilege: 200');
is_deeply(gms_saw(), ['/check', '/ar-priv/x'], 'GMS saw both');

# the module's own getEsTaskStatus subrequest is not refused by this
$res = $e->nginx->http(POST => '/open/operations?action=getEsTaskStatus',
                       { 'Content-Type' => 'application/json' },
                       '{"task":"n:1"}');
is($res->{status}, 200, 'getEsTaskStatus from an open location still works');

$e->nginx->stop;
is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');

done_testing();

package GmsTest::Messages;

# Every refusal the tests compare against, word for word, in one place:
#
# - the edge's answers (src/ngx_http_gms_auth.c, src/ngx_http_gms_es_task.c)
#   in the metadata service's Rest.li error shape, and the challenges of
#   its 401s;
# - the metadata service's getEsTaskStatus messages, which the edge gives
#   as GMS does;
# - GMS's own refusals as gms-token meets them: Jetty's 401 from the
#   AuthenticationFilter and the GraphQL resolvers' errors (as recorded in
#   t/fixtures/datahub and answered by GmsTest::GraphQL).
#
#   use GmsTest::Messages qw($RESTLI_EXCEPTION $INVALID_TOKEN $UNKNOWN_TOKEN
#                            task_form);
#   is_deeply($body, { exceptionClass => $RESTLI_EXCEPTION, status => 401,
#                      message => $UNKNOWN_TOKEN });
#   refused($e->get('/entities/x', 'nope'), 401, $INVALID_TOKEN,
#           $UNKNOWN_TOKEN, 'an unknown token');
#
# The scalars are read-only; they interpolate, as in qr/^\Q$INVALID_JSON\E/.

use strict;
use warnings;

use Exporter qw(import);
use Test::More ();

use GmsTest ();

our (
    $RESTLI_EXCEPTION,
    $CHALLENGE, $INVALID_TOKEN, $INSUFFICIENT_SCOPE,
    $MISSING_TOKEN, $MALFORMED_HEADER, $UNKNOWN_TOKEN, $EXPIRED_TOKEN,
    $CANNOT_VERIFY, $UNAUTHORIZED, $ES_UNAUTHORIZED, $STORE_UNAVAILABLE,
    $BODY_TOO_LARGE,
    $EITHER, $ONLY_ONE, $NOT_OBJECT, $INVALID_JSON, $NODE_CHARS,
    $GMS_UNAUTHORIZED, $GRAPHQL_UNAUTHORIZED, $GRAPHQL_OTHER_ACTOR,
    $GRAPHQL_UNKNOWN,
);

our @EXPORT_OK = qw(
    $RESTLI_EXCEPTION
    $CHALLENGE $INVALID_TOKEN $INSUFFICIENT_SCOPE
    $MISSING_TOKEN $MALFORMED_HEADER $UNKNOWN_TOKEN $EXPIRED_TOKEN
    $CANNOT_VERIFY $UNAUTHORIZED $ES_UNAUTHORIZED $STORE_UNAVAILABLE
    $BODY_TOO_LARGE
    $EITHER $ONLY_ONE $NOT_OBJECT $INVALID_JSON $NODE_CHARS
    task_form node_chars must_be no_task_status
    $GMS_UNAUTHORIZED $GRAPHQL_UNAUTHORIZED $GRAPHQL_OTHER_ACTOR
    $GRAPHQL_UNKNOWN
    refused
);


# Makes $name a read-only scalar of this package holding $text.
sub _text {
    my ($name, $text) = @_;
    Internals::SvREADONLY($text, 1);
    no strict 'refs';
    *{__PACKAGE__ . "::$name"} = \$text;
}


# --- the edge ----------------------------------------------------------------

# The error body: {"exceptionClass": ..., "status": N, "message": ...}
_text(RESTLI_EXCEPTION =>
      'com.linkedin.restli.server.RestLiServiceException');

# WWW-Authenticate of a 401: no credentials; credentials refused; a
# privilege missing
_text(CHALLENGE => 'Bearer realm="DataHub"');
_text(INVALID_TOKEN => 'Bearer realm="DataHub", error="invalid_token"');
_text(INSUFFICIENT_SCOPE =>
      'Bearer realm="DataHub", error="insufficient_scope"');

# 401: no Authorization, one not "Bearer <token>", a token Redis does not
# have, a signed token past its exp, a signature or system secret that
# does not verify
_text(MISSING_TOKEN =>
      "Missing access token: send 'Authorization: Bearer <token>'");
_text(MALFORMED_HEADER =>
      "Malformed Authorization header: expected 'Bearer <token>'");
_text(UNKNOWN_TOKEN => 'Invalid or revoked access token');
_text(EXPIRED_TOKEN => 'Access token has expired');
_text(CANNOT_VERIFY => 'Unable to verify the provided credentials');

# 401 (or 403, gms_token_forbidden_status): a privilege the location
# requires, getEsTaskStatus's privilege
_text(UNAUTHORIZED => 'User is unauthorized to perform this action');
_text(ES_UNAUTHORIZED => 'User is unauthorized to get ES task status');

# 503: Redis failing
_text(STORE_UNAVAILABLE => 'Token store unavailable, try again later');

# 413: a getEsTaskStatus body over the limit
_text(BODY_TOO_LARGE => 'Request body too large');


# The edge's refusal $res, a subtest named $title: $status, the challenge
# $challenge (undef: none), the Rest.li error body with $message (undef:
# the body not read), and each header of %headers (lowercase) with its
# value ('x-gms-result' => 'unknown').
sub refused {
    my ($res, $status, $challenge, $message, $title, %headers) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;

    Test::More::subtest($title => sub {
        Test::More::is($res->{status}, $status, "status $status");
        Test::More::is($res->{headers}{'www-authenticate'}, $challenge,
                       'challenge');
        if (defined $message) {
            my $body = eval { GmsTest::json_decode($res->{body} // '') };
            Test::More::is_deeply($body,
                { exceptionClass => $RESTLI_EXCEPTION, status => $status,
                  message => $message }, 'the Rest.li error body');
        }
        Test::More::is($res->{headers}{$_}, $headers{$_}, $_)
            for sort keys %headers;
    });
}


# --- getEsTaskStatus's 400s, as GMS words them -------------------------------

_text(EITHER => 'Please specify either Node ID + task ID OR composite task '
               . 'parameters');
_text(ONLY_ONE => 'Please specify only one of Node ID + task ID OR composite '
                 . 'task parameters');
_text(NOT_OBJECT => 'Request body must be a JSON object');

# followed by ": " and the parser's reason
_text(INVALID_JSON => 'Invalid JSON in request body');

# followed by " (got <nodeId>)"
_text(NODE_CHARS =>
      "Node ID should contain only letters, digits, '-' and '_'");

sub task_form {
    return 'Task should be in the form nodeId:taskId e.g. '
           . "aB1cdEf2GHIJKLMnoPQr3S:123456 (got $_[0])";
}

sub node_chars {
    return "$NODE_CHARS (got $_[0])";
}

sub must_be {
    my ($param, $type) = @_;
    return "Parameter '$param' must be $type";
}

# The answer's value (200) for a task the search cluster does not have.
sub no_task_status {
    return "Could not get task status for $_[0]";
}


# --- GMS ---------------------------------------------------------------------

# Jetty's 401 for /api/* without a valid token (the AuthenticationFilter)
_text(GMS_UNAUTHORIZED => 'Unauthorized to perform this action.');

# GraphQL errors (HTTP 200): a resolver's 403 (listAccessTokens,
# createAccessToken, ... without the privilege), getGrantedPrivileges of
# another user (DataHub 0.13), any other exception
_text(GRAPHQL_UNAUTHORIZED => 'Unauthorized to perform this action. Please '
                             . 'contact your DataHub administrator.');
_text(GRAPHQL_OTHER_ACTOR =>
      'Unauthorized to get privileges for the given author.');
_text(GRAPHQL_UNKNOWN => 'An unknown error occurred.');

1;

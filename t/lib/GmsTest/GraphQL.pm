package GmsTest::GraphQL;

# Stands in for GMS, DataHub's metadata service, as far as gms-token sync
# talks to it: POST /api/graphql answering listAccessTokens, and for the
# privileges listPolicies, corpUser/corpGroup relationships and
# getGrantedPrivileges (entity.graphql at 289a484f, ListPoliciesResolver,
# PolicyInfoPolicyMapper, GetGrantedPrivilegesResolver; see policies(),
# memberships(), granted()).  Built on GmsTest::Stub.
#
#   my $gms = GmsTest::GraphQL->start(token => $pat, tokens => \@tokens);
#   run gms-token sync --gms $gms->url ...
#   $gms->requests;                  # what it was sent, bodies decoded
#   $gms->misbehave(page => 2, status => 500);
#   my $dead = GmsTest::GraphQL->dead_url;
#
# Where the shapes come from (t/fixtures/datahub/*.source.txt name the
# DataHub files and commits):
#
# - The query and its answer: DataHub's GraphQL schema
#   datahub-graphql-core/src/main/resources/auth.graphql
#   (listAccessTokens(input: ListAccessTokenInput!): ListAccessTokenResult!,
#   {start, count, total, tokens: [AccessTokenMetadata!]!}) and
#   ListAccessTokensResolver: start and count are the request's (count is
#   the size asked for, not the number of tokens returned), total is the
#   number of tokens matching the filters, tokens are sorted by expiresAt
#   descending, tokens without one last.  An answer carries exactly the
#   fields the query selects, in its order, as graphql-java writes them:
#   listAccessTokens-page.json is what this stand-in answers to
#   listAccessTokens-page.request.json, byte for byte.
# - GraphQL errors come with HTTP 200, data null:
#   graphql-error-listAccessTokens-unauthorized.json (a real answer, the
#   resolver's 403-coded "Unauthorized to perform this action. ...") and
#   graphql-error-revokeAccessToken-unknown-id.json (the 500-coded "An
#   unknown error occurred." of any other exception).
# - A missing or wrong Authorization is refused before GraphQL by GMS's
#   AuthenticationFilter on /api/*: Jetty's 401 error page, HTML
#   (gms-0.13-401-missing-token.http.json) or, to Accept: application/json,
#   Jetty's JSON variant (gms-0.13-401-revoked-token-accept-json.http.json);
#   other statuses (404, 405, a forced 500) use the same two layouts.
# - A body that is not JSON or has no query: 400, empty body
#   (gms-graphql-400-no-query.http.json).
# - Constructed here, from no fixture: the messages of 404, 405 and a
#   forced 500 (Jetty's reason phrases), graphql-java's validation error
#   for a field the schema lacks, and the catch-all "An unknown error
#   occurred." for an input without start or count (no defaults in
#   v0.13.0).  A dead GMS is a closed port (GmsTest::free_port()).
#
# Tokens are hashrefs with AccessTokenMetadata's fields: urn, id, actorUrn,
# ownerUrn, name, createdAt, expiresAt (undef: never), and optionally
# description; type is always ACCESS_TOKEN.  Filters of the input
# ({field, values}) are applied as the resolver's search would: a token
# matches when its field is one of the values.
#
# The stub's workers are forked at start, so everything they answer from
# (the token, the tokens, the misbehaviour) lives in a JSON file that each
# request reads again: tokens() and misbehave() act at once on a running
# stand-in.

use strict;
use warnings;

use sort 'stable';

use Cwd qw(abs_path);
use Digest::SHA qw(hmac_sha256);
use File::Basename qw(dirname);
use MIME::Base64 qw(encode_base64url);
use Time::HiRes ();

use GmsTest ();
use GmsTest::Messages qw($GMS_UNAUTHORIZED $GRAPHQL_UNKNOWN);
use GmsTest::Stub;

my $FIXTURES = abs_path(dirname(__FILE__) . '/../../fixtures/datahub');

# The fields of the schema's types this stand-in can answer (object fields
# such as AccessTokenMetadata.owner or relationships are not served).
my %FIELDS = (
    Query                 => [qw(listAccessTokens)],
    ListAccessTokenResult => [qw(start count total tokens)],
    AccessTokenMetadata   => [qw(urn type id name description actorUrn
                                 ownerUrn createdAt expiresAt)],
);

# A field whose type has fields, by "Type.field" (or by the field's name
# alone, as listAccessTokens and tokens are).
my %CHILD;

# listPolicies, relationships and getGrantedPrivileges (entity.graphql;
# Policy.resources and the resolved* fields of ActorFilter not served)
push @{ $FIELDS{Query} }, qw(listPolicies corpUser corpGroup
                             getGrantedPrivileges);
%FIELDS = (%FIELDS,
    ListPoliciesResult        => [qw(start count total policies)],
    Policy                    => [qw(urn type name state description
                                     privileges actors editable)],
    ActorFilter               => [qw(users groups roles resourceOwners
                                     resourceOwnersTypes allUsers allGroups)],
    CorpUser                  => [qw(urn type username relationships)],
    CorpGroup                 => [qw(urn type name relationships)],
    EntityRelationshipsResult => [qw(start count total relationships)],
    EntityRelationship        => [qw(type direction entity created)],
    Entity                    => [qw(urn type)],
    Privileges                => [qw(privileges)],
);
%CHILD = (%CHILD,
    'Query.listPolicies'                      => 'ListPoliciesResult',
    'ListPoliciesResult.policies'             => 'Policy',
    'Policy.actors'                           => 'ActorFilter',
    'Query.corpUser'                          => 'CorpUser',
    'Query.corpGroup'                         => 'CorpGroup',
    'CorpUser.relationships'                  => 'EntityRelationshipsResult',
    'CorpGroup.relationships'                 => 'EntityRelationshipsResult',
    'EntityRelationshipsResult.relationships' => 'EntityRelationship',
    'EntityRelationship.entity'               => 'Entity',
    'Query.getGrantedPrivileges'              => 'Privileges',
);


# Token management (gms-token create, revoke --gms, check-salt): DataHub's
# auth.graphql createAccessToken and revokeAccessToken (Mutation) and
# getAccessTokenMetadata (Query).
push @{ $FIELDS{Query} }, 'getAccessTokenMetadata';
push @{ $FIELDS{Mutation} }, qw(createAccessToken revokeAccessToken);
$FIELDS{AccessToken} = [qw(accessToken metadata)];

# DataHub's default token salt before v1.5 (application.yml
# authentication.tokenService.salt): the fixtures' ids are made with it
my $DEFAULT_SALT = 'ohDVbJBvHHVJh9S/UA4BYF9COuNnqqVhr9MLKEGXk1O=';

# AccessTokenUtil.mapDurationToMs; NO_EXPIRY: none
my %DURATION_MS = (ONE_HOUR => 3_600_000, ONE_DAY => 86_400_000,
                   ONE_WEEK => 7 * 86_400_000, ONE_MONTH => 30 * 86_400_000,
                   THREE_MONTHS => 90 * 86_400_000,
                   SIX_MONTHS => 180 * 86_400_000,
                   ONE_YEAR => 365 * 86_400_000, NO_EXPIRY => undef);


# start(token => $pat, tokens => \@tokens, workers => 2, salt => $salt,
#       caller => $urn)
#
# With token, every request must carry "Authorization: Bearer $pat"
# exactly, else 401; without (or undef), none is needed: GMS with
# METADATA_SERVICE_AUTH_ENABLED=false.  salt is GMS's token salt (default
# DataHub's own default), with which createAccessToken and
# getAccessTokenMetadata hash tokens; caller is the ownerUrn of the tokens
# createAccessToken makes (default urn:li:corpuser:datahub).  Tokens made
# or revoked by the stand-in are in tokens() at once.
sub start {
    my ($class, %opt) = @_;

    my $self = bless { owner => $$, dir => GmsTest::tempdir() }, $class;
    $self->{state_file} = "$self->{dir}/state.json";
    $self->{state} = { token => $opt{token}, tokens => $opt{tokens} // [],
                       misbehave => {}, salt => $opt{salt} // $DEFAULT_SALT,
                       caller => $opt{caller} // 'urn:li:corpuser:datahub' };
    $self->{state}{policies} = [ map { _policy($_) } @{ $opt{policies} // [] } ];
    $self->{state}{memberships} = $opt{memberships} // {};
    $self->{state}{granted} = $opt{granted} // {};
    $self->_save;

    my $file = $self->{state_file};
    $self->{stub} = GmsTest::Stub->start(
        workers => $opt{workers} // 2,
        port    => $opt{port},
        handler => sub { _answer($file, $_[0]) },
    );

    return $self;
}

# A URL where nothing listens: connections are refused.
sub dead_url {
    return 'http://127.0.0.1:' . GmsTest::free_port();
}

sub url {
    return 'http://127.0.0.1:' . $_[0]{stub}->port;
}

sub port {
    return $_[0]{stub}->port;
}

# Replaces the list of tokens; returns it.
sub tokens {
    my ($self, $tokens) = @_;
    $self->_load;
    if ($tokens) {
        $self->{state}{tokens} = $tokens;
        $self->_save;
    }
    return $self->{state}{tokens};
}

# Replaces the policies (listPolicies); returns them, as served.  Each a
# hashref: urn, privileges, and optionally type (default PLATFORM), state
# (ACTIVE), name, description, and actors {users, groups, roles (arrayrefs
# or undef), allUsers, allGroups, resourceOwners (true or false)}.
sub policies {
    my ($self, $policies) = @_;
    if ($policies) {
        $self->{state}{policies} = [ map { _policy($_) } @$policies ];
        $self->_save;
    }
    return $self->{state}{policies};
}

# Replaces the memberships the relationships answer from:
#   { URN => { IsMemberOfGroup => [group...], IsMemberOfNativeGroup => [...],
#              IsMemberOfRole => [role...] }, ... }
# for users and groups alike; URN => undef: corpUser (corpGroup) is null,
# as GMS answers for an entity it does not have.  Any other URN: an entity
# with no relationships.
sub memberships {
    my ($self, $memberships) = @_;
    if ($memberships) {
        $self->{state}{memberships} = $memberships;
        $self->_save;
    }
    return $self->{state}{memberships};
}

# Replaces what getGrantedPrivileges answers: { URN => [privilege...] }
# (anyone else: []), and with only_self => URN answers as DataHub before
# 1.0 does: any other actorUrn is refused
# (graphql-error-getGrantedPrivileges-other-actor.json).
sub granted {
    my ($self, $granted, %opt) = @_;
    $self->{state}{granted} = $granted;
    $self->{state}{only_self} = $opt{only_self};
    $self->_save;
}

# Replaces the misbehaviour; misbehave() alone behaves again.
#
#   page => N        what follows applies to the Nth page only (the request
#                    whose start is (N - 1) * count); else to every request
#   status => S      answer HTTP S with Jetty's error page, message =>
#                    its message (default: 401's of GMS, else Jetty's
#                    reason phrase)
#   graphql_error => 1 | MESSAGE
#                    HTTP 200 and a GraphQL error, data null: 1 is the
#                    resolver's own 403 (the fixture, byte for byte), a
#                    MESSAGE comes 500-coded as SERVER_ERROR
#   body => BYTES    HTTP 200 with these bytes (content_type => ...,
#                    default text/html)
#   token => {FIELD => VALUE, ...}
#                    the page's first token has these fields changed
#   delay => SECONDS the answer waits that long
#   total => N       every page, whatever page says, has total N
#   field => NAME    all of the above for queries of that root field only
#                    (listAccessTokens, listPolicies, corpUser, ...)
sub misbehave {
    my ($self, %how) = @_;
    $self->_load;
    $self->{state}{misbehave} = \%how;
    $self->_save;
}

# Every request received, oldest first: GmsTest::Stub's record (method, uri,
# headers, header, body) plus json, the body decoded (undef if it is not
# JSON).
sub requests {
    my ($self) = @_;
    return [ map {
        my $req = $_;
        $req->{json} = eval { GmsTest::json_decode($req->{body}) };
        $req;
    } @{ $self->{stub}->requests } ];
}

# The input variables of each listAccessTokens request: [start, count].
sub pages_asked {
    my ($self) = @_;
    return [ map {
        my $in = ref $_->{json} eq 'HASH' && ref $_->{json}{variables} eq 'HASH'
                 ? $_->{json}{variables}{input} : undef;
        ref $in eq 'HASH' ? [$in->{start}, $in->{count}] : undef;
    } @{ $self->requests } ];
}

sub clear_requests {
    $_[0]{stub}->clear_requests;
}

sub stop {
    $_[0]{stub}->stop;
}

sub fixture {
    my ($class, $name) = @_;
    my $bytes = GmsTest::slurp("$FIXTURES/$name");
    length $bytes or die "GmsTest::GraphQL: no fixture $FIXTURES/$name\n";
    return $bytes;
}

# the workers change the tokens (createAccessToken, revokeAccessToken)
sub _load {
    my ($self) = @_;
    $self->{state} = GmsTest::json_decode(GmsTest::slurp($self->{state_file}));
}

sub _save {
    my ($self) = @_;

    # JSON::PP writes a number used as a string since (a test's is() does
    # that) as a string: GMS's Longs are numbers
    my %state = %{ $self->{state} };
    $state{tokens} = [ map {
        my $t = { %$_ };
        for my $f (qw(createdAt expiresAt)) {
            $t->{$f} = 0 + $t->{$f} if _is_int($t->{$f});
        }
        $t;
    } @{ $state{tokens} } ];

    my $tmp = "$self->{state_file}.tmp";
    GmsTest::write_file($tmp, GmsTest::json_encode(\%state));
    rename $tmp, $self->{state_file}
        or die "GmsTest::GraphQL: cannot rename $tmp: $!\n";
}


# --- in the stub's workers ----------------------------------------------------

sub _answer {
    my ($file, $req) = @_;

    my $state = GmsTest::json_decode(GmsTest::slurp($file));
    $state->{_file} = $file;
    my $how = $state->{misbehave};

    # AuthenticationFilter, before any servlet (DataHubTokenAuthenticator
    # takes the header's value after "Bearer ")
    if (defined $state->{token}) {
        my $auth = $req->{header}{authorization};
        return _jetty($req, 401, $GMS_UNAUTHORIZED)
            unless defined $auth && $auth eq "Bearer $state->{token}";
    }

    return _jetty($req, 404, 'Not Found') if $req->{path} ne '/api/graphql';
    return _jetty($req, 405, 'Method Not Allowed') if $req->{method} ne 'POST';

    my $body = eval { GmsTest::json_decode($req->{body}) };
    return [400, [], '']
        unless ref $body eq 'HASH' && defined $body->{query}
               && !ref $body->{query};

    my $vars = ref $body->{variables} eq 'HASH' ? $body->{variables} : {};
    my $input = ref $vars->{input} eq 'HASH' ? $vars->{input} : {};
    my ($start, $count) = @$input{qw(start count)};

    my $page = _is_int($start) && _is_int($count) && $count > 0
               ? int($start / $count) + 1 : 0;
    my ($root) = $body->{query} =~ /\{\s*(\w+)/;
    $how = {} if defined $how->{field} && $how->{field} ne ($root // '');
    $how = { total => $how->{total} }
        if defined $how->{page} && $how->{page} != $page;

    my $res = _misbehaving($req, $how)
              // _root($state, $body->{query}, $vars, $how);
    $res->[3] = $how->{delay};

    return $res;
}

sub _misbehaving {
    my ($req, $how) = @_;

    if (defined $how->{status}) {
        my $status = $how->{status};
        my $message = $how->{message} // ($status == 401 ? $GMS_UNAUTHORIZED
                                          : _reason($status));
        return _jetty($req, $status, $message);
    }

    if (defined $how->{graphql_error}) {
        my $real = __PACKAGE__->fixture(
            'graphql-error-listAccessTokens-unauthorized.json');
        return _graphql($real =~ s/\n\z//r) if $how->{graphql_error} eq '1';
        return _graphql(_error_doc($how->{graphql_error}, 500, 'SERVER_ERROR'));
    }

    if (defined $how->{body}) {
        return [200, ['Content-Type' => $how->{content_type} // 'text/html'],
                $how->{body}];
    }

    return undef;
}

# The query's first root field chooses who answers it; one sub a field.
# A field with no answerer here is graphql-java's validation error, as GMS
# answers a field its schema lacks.
my %ROOT = (
    listAccessTokens => sub {
        my ($state, $query, $vars, $how) = @_;
        my $input = ref $vars->{input} eq 'HASH' ? $vars->{input} : {};
        return _list($state->{tokens}, $query, $input, $how);
    },
    createAccessToken      => \&_create,
    revokeAccessToken      => \&_revoke,
    getAccessTokenMetadata => \&_metadata,
);

%ROOT = (%ROOT,
    listPolicies         => \&_list_policies,
    corpUser             => sub { _relationships('corpUser', @_) },
    corpGroup            => sub { _relationships('corpGroup', @_) },
    getGrantedPrivileges => \&_granted,
);

sub _root {
    my ($state, $query, $vars, $how) = @_;

    my ($field) = $query =~ /\{\s*(\w+)/;
    my $answer = defined $field ? $ROOT{$field} : undef;

    return $answer->($state, $query, $vars, $how) if $answer;

    my $sel = eval { _selection($query) };
    return _graphql(_validation_error($@ =~ s/\n\z//r)) unless $sel;
    return _graphql(_validation_error("Field '$field' in type 'Query' is "
                                      . "undefined"));
}

# listAccessTokens as ListAccessTokensResolver answers it.
sub _list {
    my ($tokens, $query, $input, $how) = @_;

    my $sel = eval { _selection($query) };
    return _graphql(_validation_error($@ =~ s/\n\z//r)) unless $sel;

    my ($start, $count) = @$input{qw(start count)};

    # v0.13.0: no defaults; a missing one ends as the handler's catch-all
    return _graphql(_error_doc($GRAPHQL_UNKNOWN, 500, 'SERVER_ERROR'))
        unless _is_int($start) && _is_int($count) && $start >= 0 && $count >= 0;

    my @match = grep { _matches($_, $input->{filters}) } @$tokens;

    # expiresAt descending; Elasticsearch puts tokens without one last
    my @sorted = sort {
        defined $a->{expiresAt} && defined $b->{expiresAt}
            ? $b->{expiresAt} <=> $a->{expiresAt}
            : defined $b->{expiresAt} <=> defined $a->{expiresAt}
    } @match;

    my $last = $start + $count - 1 < $#sorted ? $start + $count - 1 : $#sorted;
    my @page = map { { %$_ } } @sorted[$start .. $last];

    if ($how->{token} && @page) {
        $page[0] = { %{ $page[0] }, %{ $how->{token} } };
    }

    my %result = (start => $start, count => $count,
                  total => $how->{total} // scalar @match,
                  __typename => 'ListAccessTokenResult');

    # graphql-java writes the fields in the order the query asks for them
    my $json = '{"data":{' . join(',', map {
        my ($name, $sub) = @$_;
        $name eq '__typename' ? '"__typename":"Query"'
        : '"' . $name . '":{' . join(',', map {
            my ($field, $tsub) = @$_;
            $field eq 'tokens'
                ? '"tokens":[' . join(',', map {
                      my $t = { %$_, type => 'ACCESS_TOKEN',
                                __typename => 'AccessTokenMetadata' };
                      '{' . join(',', map {
                          '"' . $_->[0] . '":'
                          . GmsTest::json_encode($t->{ $_->[0] })
                      } @$tsub) . '}'
                  } @page) . ']'
                : "\"$field\":" . GmsTest::json_encode($result{$field})
        } @$sub) . '}'
    } @$sel) . '},"extensions":{}}';

    return _graphql($json);
}

sub _matches {
    my ($token, $filters) = @_;
    for my $f (ref $filters eq 'ARRAY' ? @$filters : ()) {
        my $v = $token->{ $f->{field} // '' };
        return 0 unless defined $v
                        && grep { $_ eq $v } @{ $f->{values} // [] };
    }
    return 1;
}

# The query's selection, checked against the schema as far as this
# stand-in serves it: [[listAccessTokens, [[field, [[token field]]]...]]].
sub _selection {
    my ($query) = @_;

    (my $q = $query) =~ s/#[^\n]*//g;
    my @t = $q =~ /(\.\.\.|[_A-Za-z][_0-9A-Za-z]*|[{}():])/g;

    # the operation: "query NAME(VARIABLES)" or a bare selection set
    my $i = 0;
    while ($i < @t && $t[$i] ne '{') {
        $i = $t[$i] eq '(' ? _skip_parens(\@t, $i) : $i + 1;
    }
    die "Invalid Syntax : no selection set\n" if $i >= @t;

    my $sel = _selection_set(\@t, \$i, _operation_type(\@t), '');
    die "Validation error: more than one operation\n" if $i < @t;

    return $sel;
}

sub _selection_set {
    my ($t, $i, $type, $path) = @_;

    my %child = (listAccessTokens => 'ListAccessTokenResult',
                 tokens => 'AccessTokenMetadata',
                 createAccessToken => 'AccessToken',
                 metadata => 'AccessTokenMetadata',
                 getAccessTokenMetadata => 'AccessTokenMetadata');
    my @sel;

    $$i++;    # '{'
    while (1) {
        die "Invalid Syntax : unterminated selection set\n" if $$i >= @$t;
        my $name = $t->[$$i++];
        last if $name eq '}';
        die "Validation error: fragments are not served by the stand-in\n"
            if $name eq '...';
        die "Invalid Syntax : offending token '$name'\n"
            if $name =~ /^[{}():]$/;
        die "Validation error: aliases are not served by the stand-in\n"
            if ($t->[$$i] // '') eq ':';

        my $where = $path eq '' ? $name : "$path/$name";
        die "Validation error (FieldUndefined\@[$where]) : Field '$name' in "
            . "type '$type' is undefined\n"
            unless $name eq '__typename' || grep { $_ eq $name }
                                                 @{ $FIELDS{$type} };

        $$i = _skip_parens($t, $$i) if ($t->[$$i] // '') eq '(';

        my $child = $CHILD{"$type.$name"} // $child{$name};
        my $sub;
        if (($t->[$$i] // '') eq '{') {
            die "Validation error (SubselectionNotAllowed\@[$where]) : "
                . "Sub selection not allowed on leaf type of field $name\n"
                unless $child;
            $sub = _selection_set($t, $i, $child, $where);
        } elsif ($child) {
            die "Validation error (SubselectionRequired\@[$where]) : Sub "
                . "selection required for type $child of field $name\n";
        }

        push @sel, [$name, $sub];
    }

    return \@sel;
}

# "mutation ..." or else a query
sub _operation_type {
    my ($t) = @_;
    return @$t && $t->[0] eq 'mutation' ? 'Mutation' : 'Query';
}

sub _skip_parens {
    my ($t, $i) = @_;
    my $depth = 0;
    for (; $i < @$t; $i++) {
        $depth++ if $t->[$i] eq '(';
        $depth-- if $t->[$i] eq ')';
        return $i + 1 if $depth == 0;
    }
    die "Invalid Syntax : unbalanced parentheses\n";
}

sub _is_int {
    my ($v) = @_;
    return defined $v && !ref $v && $v =~ /^-?\d+\z/;
}

sub _error_doc {
    my ($message, $code, $type, $path) = @_;
    $path //= 'listAccessTokens';
    return '{"errors":[{"message":' . GmsTest::json_encode($message)
           . ',"locations":[{"line":2,"column":3}],"path":["' . $path . '"],'
           . '"extensions":{"code":' . $code . ',"type":"' . $type . '",'
           . '"classification":"DataFetchingException"}}],"data":null,'
           . '"extensions":{}}';
}

# graphql-java refuses the whole document before running it: no data
sub _validation_error {
    my ($message) = @_;
    return '{"errors":[{"message":' . GmsTest::json_encode($message)
           . ',"extensions":{"classification":"ValidationError"}}],'
           . '"extensions":{}}';
}

sub _graphql {
    my ($json) = @_;
    return [200, ['Content-Type' => 'application/json'], $json];
}

# Jetty 11's ErrorHandler, as GMS's filter's sendError() ends: an HTML page,
# or its JSON variant to a client accepting application/json (java.util.
# HashMap order of its four keys; status a string).
sub _jetty {
    my ($req, $status, $message) = @_;

    my $uri = $req->{path};
    my @headers = ('Cache-Control' => 'must-revalidate,no-cache,no-store');

    if (($req->{header}{accept} // '') =~ m{\b(?:application|text)/json\b}) {
        return [$status, [@headers, 'Content-Type' => 'application/json'],
                "{\n\"servlet\":\"apiServlet\",\n\"message\":"
                . GmsTest::json_encode($message) . ",\n\"url\":"
                . GmsTest::json_encode($uri) . ",\n\"status\":\"$status\"\n}"];
    }

    return [$status,
            [@headers, 'Content-Type' => 'text/html;charset=iso-8859-1'],
            "<html>\n<head>\n<meta http-equiv=\"Content-Type\" "
            . "content=\"text/html;charset=utf-8\"/>\n"
            . "<title>Error $status $message</title>\n</head>\n"
            . "<body><h2>HTTP ERROR $status $message</h2>\n<table>\n"
            . "<tr><th>URI:</th><td>$uri</td></tr>\n"
            . "<tr><th>STATUS:</th><td>$status</td></tr>\n"
            . "<tr><th>MESSAGE:</th><td>$message</td></tr>\n"
            . "<tr><th>SERVLET:</th><td>apiServlet</td></tr>\n</table>\n"
            . "<hr><a href=\"https://eclipse.org/jetty\">Powered by "
            . "Jetty:// 11.0.19</a><hr/>\n\n</body>\n</html>\n"];
}

sub _reason {
    my ($status) = @_;
    # Jetty's HttpStatus messages where they differ from the RFC's
    return { 500 => 'Server Error', 502 => 'Bad Gateway',
             503 => 'Service Unavailable', 404 => 'Not Found',
             403 => 'Forbidden', 400 => 'Bad Request' }->{$status}
           // 'Error';
}

# A policy as PolicyInfoPolicyMapper maps it: Boolean! fields true or false,
# lists absent from the policy null.
sub _policy {
    my ($p) = @_;
    my $a = $p->{actors} // {};
    my $bool = sub { $_[0] ? JSON::PP::true() : JSON::PP::false() };
    return {
        urn         => $p->{urn},
        type        => $p->{type} // 'PLATFORM',
        name        => $p->{name} // $p->{urn},
        state       => $p->{state} // 'ACTIVE',
        description => $p->{description},
        privileges  => $p->{privileges} // [],
        editable    => JSON::PP::true(),
        actors      => {
            users               => $a->{users},
            groups              => $a->{groups},
            roles               => $a->{roles},
            resourceOwners      => $bool->($a->{resourceOwners}),
            resourceOwnersTypes => undef,
            allUsers            => $bool->($a->{allUsers}),
            allGroups           => $bool->($a->{allGroups}),
            __typename          => 'ActorFilter',
        },
        __typename  => 'Policy',
    };
}

# listPolicies as ListPoliciesResolver answers it: start and count as asked
# (defaults 0 and 20), total the number of policies, policies in the order
# given (PolicyFetcher's search order).
sub _list_policies {
    my ($state, $query, $vars, $how) = @_;

    my $sel = eval { _selection($query) };
    return _graphql(_validation_error($@ =~ s/\n\z//r)) unless $sel;

    my $input = ref $vars->{input} eq 'HASH' ? $vars->{input} : {};
    my $start = $input->{start} // 0;
    my $count = $input->{count} // 20;
    return _graphql(_error_doc($GRAPHQL_UNKNOWN, 500, 'SERVER_ERROR'))
        unless _is_int($start) && _is_int($count) && $start >= 0
               && $count >= 0;

    my @all = @{ $state->{policies} // [] };
    my $last = $start + $count - 1 < $#all ? $start + $count - 1 : $#all;

    return _data($sel, { start => $start, count => $count,
                         total => $how->{total} // scalar @all,
                         policies => [ @all[$start .. $last] ],
                         __typename => 'ListPoliciesResult' });
}

# corpUser(urn) / corpGroup(urn) { relationships(input) }: the outgoing
# relationships of the asked types, in the order of the types asked, paged
# by start and count; entities typed from their URN.
sub _relationships {
    my ($field, $state, $query, $vars, $how) = @_;

    my $sel = eval { _selection($query) };
    return _graphql(_validation_error($@ =~ s/\n\z//r)) unless $sel;

    my $urn = $vars->{urn} // '';
    my $all = $state->{memberships} // {};
    return _data($sel, undef) if exists $all->{$urn} && !defined $all->{$urn};

    my $input = ref $vars->{input} eq 'HASH' ? $vars->{input} : {};
    my $start = $input->{start} // 0;
    my $count = $input->{count} // 100;
    my $mine = $all->{$urn} // {};

    my @rels;
    if (($input->{direction} // '') eq 'OUTGOING') {
        for my $type (@{ $input->{types} // [] }) {
            push @rels, map {
                my ($etype, $typename) =
                    /^urn:li:corpGroup:/ ? ('CORP_GROUP', 'CorpGroup')
                    : /^urn:li:dataHubRole:/ ? ('DATAHUB_ROLE', 'DataHubRole')
                    : ('CORP_USER', 'CorpUser');
                { type => $type, direction => 'OUTGOING', created => undef,
                  entity => { urn => $_, type => $etype,
                              __typename => $typename },
                  __typename => 'EntityRelationship' }
            } @{ $mine->{$type} // [] };
        }
    }

    my $last = $start + $count - 1 < $#rels ? $start + $count - 1 : $#rels;
    my $entity = {
        urn => $urn,
        type => $field eq 'corpUser' ? 'CORP_USER' : 'CORP_GROUP',
        __typename => $field eq 'corpUser' ? 'CorpUser' : 'CorpGroup',
        relationships => { start => $start, count => $count,
                           total => $how->{total} // scalar @rels,
                           relationships => [ @rels[$start .. $last] ],
                           __typename => 'EntityRelationshipsResult' },
    };

    return _data($sel, $entity);
}

# getGrantedPrivileges as GetGrantedPrivilegesResolver answers it.
sub _granted {
    my ($state, $query, $vars, $how) = @_;

    my $sel = eval { _selection($query) };
    return _graphql(_validation_error($@ =~ s/\n\z//r)) unless $sel;

    my $input = ref $vars->{input} eq 'HASH' ? $vars->{input} : {};
    my $actor = $input->{actorUrn} // '';

    if (defined $state->{only_self} && $actor ne $state->{only_self}) {
        return _graphql(__PACKAGE__->fixture(
            'graphql-error-getGrantedPrivileges-other-actor.json')
            =~ s/\n\z//r);
    }

    return _data($sel, { privileges => $state->{granted}{$actor} // [],
                         __typename => 'Privileges' });
}

# {"data":{FIELD: VALUE}} with exactly the fields selected, in their order.
sub _data {
    my ($sel, $value) = @_;
    my ($field, $sub) = @{ $sel->[0] };
    return _graphql('{"data":{"' . $field . '":' . _render($sub, $value)
                    . '},"extensions":{}}');
}

sub _render {
    my ($sel, $v) = @_;
    return GmsTest::json_encode($v) unless $sel;
    return 'null' unless defined $v;
    return '[' . join(',', map { _render($sel, $_) } @$v) . ']'
        if ref $v eq 'ARRAY';
    return '{' . join(',', map {
        my ($name, $sub) = @$_;
        "\"$name\":" . _render($sub, $v->{$name})
    } @$sel) . '}';
}



# --- token management ---------------------------------------------------------

# createAccessToken as CreateAccessTokenResolver and StatefulTokenService
# make one: a JWT (claims actorType, actorId, type, version, jti, sub, exp,
# iss), its id hash(token + salt), createdAt now, expiresAt createdAt plus
# the duration (none for NO_EXPIRY), ownerUrn the caller; the metadata is
# loaded again by its urn (GmsGraphQLEngine's AccessToken.metadata), so it
# carries every field.  The stand-in does not check the caller's
# privileges (MANAGE_ACCESS_TOKENS, or GENERATE_PERSONAL_ACCESS_TOKENS for
# oneself): misbehave(graphql_error => 1) gives their refusal.
sub _create {
    my ($state, $query, $vars, $how) = @_;

    my $sel = eval { _selection($query) };
    return _graphql(_validation_error($@ =~ s/\n\z//r)) unless $sel;

    my $in = $vars->{input};
    return _graphql(_validation_error(
        "Variable 'input' has an invalid value: CreateAccessTokenInput "
        . "needs type PERSONAL, actorUrn, duration (AccessTokenDuration) "
        . "and name"))
        unless ref $in eq 'HASH' && ($in->{type} // '') eq 'PERSONAL'
               && defined $in->{actorUrn} && !ref $in->{actorUrn}
               && defined $in->{name} && !ref $in->{name}
               && defined $in->{duration} && !ref $in->{duration}
               && exists $DURATION_MS{ $in->{duration} };

    my $now = int(Time::HiRes::time() * 1000);
    my $ms = $DURATION_MS{ $in->{duration} };
    my ($user) = $in->{actorUrn} =~ /^urn:li:corpuser:(.+)\z/;
    $user //= $in->{actorUrn};

    my $claims = '{"actorType":"USER","actorId":' . GmsTest::json_encode($user)
        . ',"type":"PERSONAL","version":"2","jti":"'
        . join('-', map { sprintf '%08x', int rand 0xffffffff } 1 .. 4)
        . '","sub":' . GmsTest::json_encode($user)
        . (defined $ms ? ',"exp":' . int(($now + $ms) / 1000) : '')
        . ',"iss":"datahub-metadata-service"}';
    my $signed = 'eyJhbGciOiJIUzI1NiJ9.' . encode_base64url($claims);
    my $jwt = $signed . '.'
              . encode_base64url(hmac_sha256($signed, 'gms-stand-in-key'));

    my $id = GmsTest::sha256_b64($jwt . $state->{salt});
    my $token = { urn => "urn:li:dataHubAccessToken:$id", id => $id,
                  actorUrn => $in->{actorUrn}, ownerUrn => $state->{caller},
                  name => $in->{name}, description => $in->{description},
                  createdAt => $now,
                  expiresAt => defined $ms ? $now + $ms : undef };

    push @{ $state->{tokens} }, $token;
    _store($state);

    return _graphql(_answer_json($sel, { createAccessToken => {
        accessToken => $jwt,
        metadata => { %$token, type => 'ACCESS_TOKEN' } } }));
}

# revokeAccessToken(tokenId) as RevokeAccessTokenResolver: true, or for an
# id GMS does not have the handler's catch-all (the fixture)
sub _revoke {
    my ($state, $query, $vars, $how) = @_;

    my $id = $vars->{tokenId};
    my @keep = grep { !(defined $id && $_->{id} eq $id) } @{ $state->{tokens} };

    return _graphql(__PACKAGE__->fixture(
        'graphql-error-revokeAccessToken-unknown-id.json') =~ s/\n\z//r)
        if !defined $id || ref $id || @keep == @{ $state->{tokens} };

    $state->{tokens} = \@keep;
    _store($state);

    return _graphql(__PACKAGE__->fixture('revokeAccessToken.json')
                    =~ s/\n\z//r);
}

# getAccessTokenMetadata(token) as GetAccessTokenMetadataResolver: the token
# hashed with GMS's salt, its entity loaded; a token GMS does not have ends
# in the handler's catch-all (batchLoad's null, then getData())
sub _metadata {
    my ($state, $query, $vars, $how) = @_;

    my $sel = eval { _selection($query) };
    return _graphql(_validation_error($@ =~ s/\n\z//r)) unless $sel;

    my $token = $vars->{token};
    my $id = defined $token && !ref $token
             ? GmsTest::sha256_b64($token . $state->{salt}) : '';
    my ($found) = grep { $_->{id} eq $id } @{ $state->{tokens} };

    return _graphql(_error_doc($GRAPHQL_UNKNOWN, 500,
                               'SERVER_ERROR', 'getAccessTokenMetadata'))
        unless $found;

    return _graphql(_answer_json($sel, { getAccessTokenMetadata => {
        %$found, type => 'ACCESS_TOKEN' } }));
}

# {"data":{...},"extensions":{}} with the selected fields, in the query's
# order, as graphql-java writes them
sub _answer_json {
    my ($sel, $data) = @_;
    return '{"data":' . _selected($data, $sel) . ',"extensions":{}}';
}

sub _selected {
    my ($v, $sel) = @_;
    return GmsTest::json_encode($v) unless $sel && defined $v;
    return '[' . join(',', map { _selected($_, $sel) } @$v) . ']'
        if ref $v eq 'ARRAY';
    return '{' . join(',', map {
        '"' . $_->[0] . '":' . _selected($v->{ $_->[0] }, $_->[1])
    } @$sel) . '}';
}

# the state file, from a worker: tmp and rename, as _save
sub _store {
    my ($state) = @_;
    my $file = $state->{_file};
    my %copy = %$state;
    delete $copy{_file};
    GmsTest::write_file("$file.$$.tmp", GmsTest::json_encode(\%copy));
    rename "$file.$$.tmp", $file
        or die "GmsTest::GraphQL: cannot rename $file.$$.tmp: $!\n";
}

1;

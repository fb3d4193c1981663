package GmsTest::GraphQL;

# Stands in for GMS, DataHub's metadata service, as far as gms-token talks
# to it: POST /api/graphql answering listAccessTokens, listPolicies,
# corpUser, corpGroup and role (their relationships, both directions),
# entityExists, getGrantedPrivileges and the token management of
# gms-token create, revoke and check-salt; GET /openapi/v1/events/poll,
# the Events API, serving the changes made to all of that (see "The
# Events API" below).  Built on GmsTest::Stub.
#
#   my $gms = GmsTest::GraphQL->start(token => $pat, tokens => \@tokens);
#   run gms-token sync --gms $gms->url ...
#   $gms->requests;                  # what it was sent, bodies decoded
#   $gms->count('corpUser');         # requests asking that root field
#   $gms->in_flight('gmsTokenUsers');  # most of them answered at once
#   $gms->misbehave(page => 2, status => 500);
#   my $dead = GmsTest::GraphQL->dead_url;
#
# A query is parsed and run as graphql-java runs it, as far as served
# here: several root fields in one request, aliases (e0: entityExists(urn:
# $u0) e1: entityExists(urn: $u1)), arguments as variables or literals
# (strings, numbers, enums, lists, input objects), __typename anywhere;
# each field of the answer in the query's order under its alias.  Not
# served: fragments, directives (skipped), more than one operation.
# GMS's query complexity limit (graphQL.query.complexityLimit, 2000 in
# application.yml since v0.13.0: graphql-java's MaxQueryComplexityInstrumen-
# tation, each field selected counts 1) refuses a bigger query whole.
#
# What it knows (each replaced at once on a running stand-in, see below):
#
#   tokens     the access tokens: AccessTokenMetadata's fields (urn, id,
#              actorUrn, ownerUrn, name, description, createdAt, expiresAt:
#              undef never) and
#                unlisted => 1   in the entity store, not in the search
#                                index (as after a reindex or a restore):
#                                missing from listAccessTokens and its
#                                total; entityExists, getAccessTokenMetadata
#                                and revokeAccessToken find it
#   users      corpUser's state: { URN => { status => 'ACTIVE'|'SUSPENDED',
#              removed => 1, deleted => 1, service_account => 1 } } (see
#              users())
#   memberships, policies, granted: the privileges' sources (see there)
#   delay      GMS's latency: every answer waits that long (seconds)
#
# Root fields and the DataHub source each follows (acryldata/datahub;
# t/fixtures/datahub/*.source.txt name files and commits of the older ones):
#
# - listAccessTokens(input: {start, count, filters}): auth.graphql,
#   ListAccessTokensResolver: start and count are the request's (count is
#   the size asked for, not the number of tokens returned), total is the
#   number of tokens matching the filters, tokens are sorted by expiresAt
#   descending, tokens without one last; a filter's condition (EQUAL, or
#   a range on a long: createdAt >= and <= a value) as _matches() says.
#   listAccessTokens-page.json is what this stand-in answers to
#   listAccessTokens-page.request.json, byte for byte.  With
#   start(max_result_window => N) a page reaching past the Nth token fails
#   as GMS does on Elasticsearch's index.max_result_window (10,000 by
#   default; DataHub sets no other: docs/api/graphql/getting-started.md
#   "only allows pagination through 10,000 entities"): the catch-all "An
#   unknown error occurred.".
# - entityExists(urn): EntityExistsResolver -> EntityService.exists(urns,
#   includeSoftDeleted true): the entity's key aspect in the entity store,
#   never the search index.  true for a token in tokens (listed or
#   unlisted), for a known corpuser (in users(), a token's actorUrn or
#   ownerUrn, the caller, in memberships) unless users() says deleted, for
#   a group or role the memberships or policies name; false for anything
#   else (a revoked token: RevokeAccessTokenResolver deletes the entity).
#   A soft-removed user still exists.
# - corpUser(urn) { urn type username status exists aspects(input:
#   {aspectNames: [...]}) { aspectName payload } relationships(input) }:
#   CorpUserType.batchLoad, CorpUserMapper, WeaklyTypedAspectsResolver,
#   EntityExistsResolver.  As GMS answers, corpUser is an object for every
#   corpuser URN, even one GMS never had or hard-deleted:
#   EntityServiceImpl.getEntitiesV2 always adds the key aspect, built from
#   the URN (alwaysIncludeKeyAspect, EntityClient.batchGetV2's default), so
#   username is there and aspects lists corpUserKey for every user (its
#   payload {"username":...}).  What tells a hard-deleted user is exists
#   (or entityExists): false.  ActorContext.isActive (DataHub 1.2+
#   StatelessTokenService.validateActor) reads the aspect store without
#   that addition: no corpUserKey there is the same entity as exists false.
#   users() drives the rest:
#     status => 'SUSPENDED' (or 'ACTIVE')
#                   CorpUser.status SUSPENDED (CorpUserStatusMapper) and
#                   the corpUserStatus aspect, payload {"status":
#                   "SUSPENDED","lastModified":{"actor":...,"time":...}};
#                   no status: CorpUser.status null, no such aspect;
#                   time => MS its lastModified.time (default: when
#                   users() was called), its actor the caller
#     removed => 1  the status aspect, payload {"removed":true} (removed
#                   => 0: {"removed":false}, a user restored)
#     deleted => 1  no aspect but the added key, status null, exists false,
#                   no relationships
#     service_account => 1
#                   a service account (DataHub 1.4+): the subTypes aspect,
#                   payload {"typeNames":["SERVICE_ACCOUNT"]}
#     oauth => ISSUER
#                   an external OAuth token's user (DataHub 1.3+,
#                   urn:li:corpuser:__oauth_...): the subTypes aspect
#                   {"typeNames":["SERVICE"]} and the origin aspect
#                   {"type":"EXTERNAL","externalType":ISSUER}, as
#                   ServiceAccountService.ensureServiceAccountExists
#                   (metadata-io) writes them
#     error => 1    CorpUserMapper throws for this user (a corpUserStatus
#                   the enum lacks: CorpUserStatusMapper's valueOf): as
#                   CorpUserType.batchLoad maps every user of a request in
#                   one call, every corpUser field of a request naming
#                   this user fails: null, "An unknown error occurred."
#                   under its alias
#   aspects are listed in the entity registry's order (corpUserKey,
#   corpUserStatus, status, origin, subTypes), only those asked for (all if no
#   aspectNames).  memberships { URN => undef } still makes corpUser null
#   (what the tests before entityExists called a user GMS lacks).
# - scrollAcrossEntities(input: {types, query, count, scrollId, orFilters,
#   searchFlags}) { nextScrollId count total searchResults { entity { urn
#   type } } }: search.graphql, ScrollAcrossEntitiesResolver (count 10
#   when not given), SearchRequestHandler (nextScrollId only when the page
#   is full, opaque).  Serves the corpusers of the search index: the users
#   of users() with a subTypes aspect (service_account, oauth), sorted by
#   URN, a hard-deleted one never, a soft-removed one only with
#   searchFlags {includeSoftDeleted: true}; types [CORP_USER] or none; an
#   orFilters' and-group matches a field typeNames (the subTypes' values,
#   EQUAL) and nothing else.  query is not read.
# - corpUser / corpGroup / role relationships(input: {types, direction,
#   start, count}): EntityRelationshipsResultResolver over the graph
#   service's RelatedEntitiesResult: OUTGOING from memberships' own lists,
#   INCOMING the entities whose lists name this one (a group's members by
#   IsMemberOfGroup and IsMemberOfNativeGroup, a role's users and groups by
#   IsMemberOfRole), in the order of the types asked, each type's entities
#   sorted by URN; start as asked, count the number returned (v0.13.0:
#   entityRelationships.getCount(), the graph's relationships.size();
#   v1.x: viewable.size()), total all of them; count null or above 10,000
#   is 5,000 (graphService.limit.results: apiDefault, max, not strict).
#   Entities carry urn and type (CORP_USER, CORP_GROUP, DATAHUB_ROLE).
# - entity(urn) { urn type relationships(input) }: entity.graphql's
#   entity(urn: String!): Entity (since 0.13.0), the URN's own loader
#   (DataHubRoleType for urn:li:dataHubRole:..., whose relationships field
#   GmsGraphQLEngine wires to EntityRelationshipsResultResolver).
# - role(urn) { urn type relationships(input) }: entity.graphql's
#   role(urn: String!): Role, RoleType.batchLoad (batchGetV2 adds the key
#   aspect: never null), RoleMapper (type ROLE).
# - listPolicies, getGrantedPrivileges: entity.graphql at 289a484f,
#   ListPoliciesResolver, PolicyInfoPolicyMapper,
#   GetGrantedPrivilegesResolver; see policies(), granted().
# - createAccessToken, revokeAccessToken, getAccessTokenMetadata:
#   auth.graphql and their resolvers (see _create, _revoke, _metadata).
# - Service accounts (DataHub 1.4+, auth.graphql at v1.4.0): a corpuser
#   urn:li:corpuser:service_<UUID> whose subTypes aspect names
#   SERVICE_ACCOUNT, made by createServiceAccount, deleted by
#   deleteServiceAccount (_create_service_account, _delete_service_
#   account); its tokens are createAccessToken(input: {type:
#   SERVICE_ACCOUNT, actorUrn: the account ...}), listed by
#   listAccessTokens like any other: no field of AccessTokenMetadata says
#   the token's type (DataHubAccessTokenInfo has none; only the JWT's type
#   claim does).  See _create.
#
# The Events API (DataHub 1.3+; GmsTest::Events names the DataHub files
# it follows): GET /openapi/v1/events/poll?topic=MetadataChangeLog_
# Versioned_v1&offsetId=&limit=&pollTimeoutSeconds= answers {offsetId,
# count, events: [{contentType, value}], errorMessage} from the same state
# the GraphQL side changes.  Every change appends its Metadata Change Log
# records (MetadataChangeLog.avsc in Avro's JSON encoding), on one of two
# partitions by the entity URN (Kafka's keyed producer):
#   createAccessToken        dataHubAccessTokenKey and dataHubAccessToken-
#                            Info UPSERT (DataHubAccessTokenInfo.pdl)
#   revokeAccessToken, revoke()
#                            DELETE of dataHubAccessTokenInfo and the key
#                            (EntityService.deleteUrn); revoke() does not
#                            check that the id exists
#   tokens() replaced        per difference: a token gone DELETE, a new one
#                            key + info, a changed one info UPSERT
#   users(), createServiceAccount, deleteServiceAccount
#                            per user, each aspect corpUser serves
#                            (corpUserStatus, status, origin, subTypes)
#                            that changed UPSERT, gone DELETE; corpUserKey
#                            UPSERT for a user new to users() or back,
#                            DELETE for one deleted
#   policies()               dataHubPolicyInfo UPSERT, or DELETE of it and
#                            dataHubPolicyKey for a policy gone
#   memberships()            groupMembership / nativeGroupMembership /
#                            roleMembership UPSERT per user or group whose
#                            list changed
# granted(), misbehave(), delay() append nothing (no DataHub change).  A
# poll without offsetId starts at the end; it answers when limit events
# came (limit default 100, at most 5000) or its pollTimeoutSeconds ran
# out (default 5, at most 10; 0 reads nothing): a poll with no events
# waits the whole timeout, in the stub's worker without blocking its other
# connections (GmsTest::Stub's waiting answers).  The same Authorization
# as /api/graphql; a bad offsetId or topic is the controller's 500
# {"errorMessage": "An unexpected error occurred: ..."}.
#
#   start(events_api => 'on' | '404' | '403')   default '404'; events_api()
#                    changes it: 'on' serves it, '404' a GMS without the
#                    API (before 1.3, EVENTS_API_ENABLED false), '403' a
#                    caller lacking GET_METADATA_CHANGE_LOG_EVENTS (empty
#                    body).  Off by default: the tests written for the
#                    polling follower stand for a GMS before 1.3 (follow
#                    --changes auto polls there, saying so once); a test
#                    of the stream asks for it
#   start(events_keep => N, events_max_age => SECONDS), retention(keep =>
#                    N, max_age => SECONDS)
#                    Kafka's retention: older events dropped; a kept offset
#                    before the earliest left is reset to it (the consumer's
#                    autoOffsetReset earliest): the answer skips ahead, a gap
#   inject_event($bytes, key => URN, count => N)
#                    an event whose value is any bytes (not JSON, an
#                    unknown aspect, 10 MB, a bad token id ...)
#   events           the events kept: {partition, offset, time, value, json}
#   polls            how many polls were received
#   misbehave(field => 'events', status => ...)
#                    the poll misbehaves (so does every request when the
#                    misbehaviour names no field)
#
# Answers and errors:
# - An answer carries exactly the fields the query selects, in its order,
#   as graphql-java writes them.  entityExists-batch.json,
#   corpUser-status-batch.json and corpGroup-members-incoming.json (their
#   .source.txt name the DataHub files) are what this stand-in answers to
#   their requests, byte for byte (t/02-graphql-stand-in.t).
# - GraphQL errors come with HTTP 200: graphql-error-listAccessTokens-
#   unauthorized.json (a real answer, the resolver's 403-coded
#   "Unauthorized to perform this action. ...") and graphql-error-
#   revokeAccessToken-unknown-id.json (the 500-coded "An unknown error
#   occurred." of any other exception).  A failed field is null in data
#   and its error's path names its alias; data is null when the field is
#   non-null in the schema (listAccessTokens, getAccessTokenMetadata,
#   revokeAccessToken).
# - A missing or wrong Authorization is refused before GraphQL by GMS's
#   AuthenticationFilter on /api/*: Jetty's 401 error page, HTML
#   (gms-0.13-401-missing-token.http.json) or, to Accept: application/json,
#   Jetty's JSON variant (gms-0.13-401-revoked-token-accept-json.http.json);
#   other statuses (404, 405, a forced 500) use the same two layouts.
# - A body that is not JSON or has no query: 400, empty body
#   (gms-graphql-400-no-query.http.json).
# - Constructed here, from no fixture: the messages of 404, 405 and a
#   forced 500 (Jetty's reason phrases), graphql-java's validation errors
#   (a field the schema lacks, a syntax error, the complexity limit), and
#   the catch-all "An unknown error occurred." for an input without start
#   or count (no defaults in v0.13.0).  A dead GMS is a closed port
#   (GmsTest::free_port()).
#
# Filters of listAccessTokens' input ({field, values}) are applied as the
# resolver's search would: a token matches when its field is one of the
# values.
#
# The stub's workers are forked at start, so everything they answer from
# (the token, the tokens, the misbehaviour) lives in a file (Storable) that
# each worker reads again when it changed (inode, size, mtime): tokens(),
# users(), misbehave() ... act at once on a running stand-in.  A worker
# keeps what it derives from it (the sorted listing, the members of each
# group) until the file changes: a page of 100,000 tokens is answered in
# a few milliseconds.

use strict;
use warnings;

use sort 'stable';

use Cwd qw(abs_path);
use Digest::SHA qw(hmac_sha256);
use Fcntl ();
use File::Basename qw(dirname);
use JSON::PP ();
use MIME::Base64 qw(encode_base64url);
use Storable ();
use Time::HiRes ();

use GmsTest ();
use GmsTest::Events;
use GmsTest::Messages qw($GMS_UNAUTHORIZED $GRAPHQL_UNKNOWN);
use GmsTest::Stub;

my $FIXTURES = abs_path(dirname(__FILE__) . '/../../fixtures/datahub');

# The fields of the schema's types this stand-in can answer (object fields
# such as AccessTokenMetadata.owner are not served).
my %FIELDS = (
    Query                     => [qw(listAccessTokens getAccessTokenMetadata
                                     listPolicies corpUser corpGroup role entity
                                     getGrantedPrivileges entityExists
                                     scrollAcrossEntities)],
    Mutation                  => [qw(createAccessToken revokeAccessToken
                                     createServiceAccount
                                     deleteServiceAccount)],
    ServiceAccount            => [qw(urn type name displayName description
                                     createdBy createdAt updatedAt)],
    ListAccessTokenResult     => [qw(start count total tokens)],
    AccessTokenMetadata       => [qw(urn type id name description actorUrn
                                     ownerUrn createdAt expiresAt)],
    AccessToken               => [qw(accessToken metadata)],
    ListPoliciesResult        => [qw(start count total policies)],
    Policy                    => [qw(urn type name state description
                                     privileges actors editable)],
    ActorFilter               => [qw(users groups roles resourceOwners
                                     resourceOwnersTypes allUsers allGroups)],
    CorpUser                  => [qw(urn type username status exists aspects
                                     relationships)],
    RawAspect                 => [qw(aspectName payload)],
    CorpGroup                 => [qw(urn type name exists relationships)],
    Role                      => [qw(urn type id relationships)],
    EntityRelationshipsResult => [qw(start count total relationships)],
    EntityRelationship        => [qw(type direction entity created)],
    Entity                    => [qw(urn type relationships)],
    Privileges                => [qw(privileges)],
    ScrollResults             => [qw(nextScrollId count total searchResults)],
    SearchResult              => [qw(entity)],
);
my %HAS = map {
    my $type = $_;
    ($type => { map { $_ => 1 } @{ $FIELDS{$type} } })
} keys %FIELDS;

# The type of a field whose type has fields, by "Type.field".
my %CHILD = (
    'Query.listAccessTokens'                  => 'ListAccessTokenResult',
    'ListAccessTokenResult.tokens'            => 'AccessTokenMetadata',
    'Query.getAccessTokenMetadata'            => 'AccessTokenMetadata',
    'Mutation.createAccessToken'              => 'AccessToken',
    'AccessToken.metadata'                    => 'AccessTokenMetadata',
    'Query.listPolicies'                      => 'ListPoliciesResult',
    'ListPoliciesResult.policies'             => 'Policy',
    'Policy.actors'                           => 'ActorFilter',
    'Query.corpUser'                          => 'CorpUser',
    'Query.corpGroup'                         => 'CorpGroup',
    'Query.role'                              => 'Role',
    'Query.entity'                            => 'Entity',
    'Entity.relationships'                    => 'EntityRelationshipsResult',
    'CorpUser.aspects'                        => 'RawAspect',
    'CorpUser.relationships'                  => 'EntityRelationshipsResult',
    'CorpGroup.relationships'                 => 'EntityRelationshipsResult',
    'Role.relationships'                      => 'EntityRelationshipsResult',
    'EntityRelationshipsResult.relationships' => 'EntityRelationship',
    'EntityRelationship.entity'               => 'Entity',
    'Query.getGrantedPrivileges'              => 'Privileges',
    'Mutation.createServiceAccount'           => 'ServiceAccount',
    'Query.scrollAcrossEntities'              => 'ScrollResults',
    'ScrollResults.searchResults'             => 'SearchResult',
    'SearchResult.entity'                     => 'Entity',
);

# Root fields whose type is non-null (auth.graphql): their error nulls the
# whole of data, as graphql-java propagates a null to the nearest nullable
# parent.
my %NON_NULL_ROOT = map { $_ => 1 }
    qw(listAccessTokens getAccessTokenMetadata revokeAccessToken
       createServiceAccount deleteServiceAccount);

# application.yml graphQL.query.complexityLimit (v0.13.0 .. v1.6)
my $COMPLEXITY_LIMIT = 2000;

# graphService.limit.results (application.yaml, v1.x): a count above max,
# or none, is apiDefault (strict false: replaced, not refused)
my ($GRAPH_MAX, $GRAPH_DEFAULT) = (10_000, 5_000);

# The state lives in one file a part, so that a change reads and writes
# only its part: conf (the token, salt, caller, delay, misbehaviour ...),
# the tokens as given, the changes the workers made to them (tokens
# added, ids revoked: a revocation among 100,000 tokens writes a few
# bytes), users, memberships, policies, granted.
my @PARTS = qw(conf tokens changes users memberships policies granted);

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
#       caller => $urn, users => \%users, policies => \@policies,
#       memberships => \%memberships, granted => \%granted,
#       delay => SECONDS, max_result_window => N)
#
# With token, every request must carry "Authorization: Bearer $pat"
# exactly, else 401; without (or undef), none is needed: GMS with
# METADATA_SERVICE_AUTH_ENABLED=false.  salt is GMS's token salt (default
# DataHub's own default), with which createAccessToken and
# getAccessTokenMetadata hash tokens; caller is the ownerUrn of the tokens
# createAccessToken makes (default urn:li:corpuser:datahub).  Tokens made
# or revoked by the stand-in are in tokens() at once.  delay: every
# answer waits that long (GMS's latency; delay() changes it).
# max_result_window: see listAccessTokens above (default none).
# access_tokens => { allowed => 'PT1H,P1D', allow_no_expiry => 0 }: GMS
# "Next" (PR 19222), whose createAccessToken takes durationIso and refuses
# a duration its allow-list lacks; {} is DataHub's defaults.  Without it,
# GMS up to 1.7.0.1: no durationIso, every AccessTokenDuration taken.
sub start {
    my ($class, %opt) = @_;

    my $self = bless { owner => $$, dir => GmsTest::tempdir() }, $class;
    $self->{state_dir} = "$self->{dir}/state";
    mkdir $self->{state_dir}
        or die "GmsTest::GraphQL: cannot mkdir $self->{state_dir}: $!\n";
    GmsTest::write_file("$self->{state_dir}/spans", '');
    $self->{state} = {
        conf => { token => $opt{token}, misbehave => {},
                  salt => $opt{salt} // $DEFAULT_SALT,
                  caller => $opt{caller} // 'urn:li:corpuser:datahub',
                  delay => $opt{delay} // 0,
                  max_result_window => $opt{max_result_window},
                  access_tokens => _access_tokens($opt{access_tokens}),
                  events_api => $opt{events_api} // '404',
                  users_time => int(Time::HiRes::time() * 1000) },
        tokens      => _numbers($opt{tokens} // []),
        changes     => { added => [], removed => {} },
        policies    => [ map { _policy($_) } @{ $opt{policies} // [] } ],
        memberships => $opt{memberships} // {},
        granted     => $opt{granted} // {},
        users       => $opt{users} // {},
    };
    $self->_save(@PARTS);
    GmsTest::Events::init($self->{state_dir}, keep => $opt{events_keep},
                          max_age => $opt{events_max_age});

    my $dir = $self->{state_dir};
    $self->{stub} = GmsTest::Stub->start(
        workers => $opt{workers} // 2,
        port    => $opt{port},
        handler => sub { _answer($dir, $_[0]) },
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

# Replaces the list of tokens; returns it (as the workers left it: tokens
# created or revoked through GMS included).
sub tokens {
    my ($self, $tokens) = @_;
    if ($tokens) {
        $self->_load(qw(tokens changes));
        my $old = _effective($self->{state}{tokens}, $self->{state}{changes});
        $self->{state}{tokens} = _numbers($tokens);
        $self->_emit(_token_events($old, $self->{state}{tokens}));
        $self->{state}{changes} = { added => [], removed => {} };
        $self->_save(qw(tokens changes));
    }
    $self->_load(qw(tokens changes));
    return _effective($self->{state}{tokens}, $self->{state}{changes});
}

# Revokes tokens by id, as revokeAccessToken does (an id the stand-in
# lacks is ignored): quicker than tokens() for 100,000 tokens, whose list
# it does not write again.
sub revoke {
    my ($self, @ids) = @_;
    $self->_load('changes');
    my $c = $self->{state}{changes};
    for my $id (@ids) {
        my $n = @{ $c->{added} };
        $c->{added} = [ grep { $_->{id} ne $id } @{ $c->{added} } ];
        $c->{removed}{$id} = 1 if $n == @{ $c->{added} };
    }
    $self->_save('changes');
    $self->_emit(map { GmsTest::Events::token_delete({ id => $_ }) } @ids);
}

# Replaces the users' state; returns it:
#   { URN => { status => 'ACTIVE' | 'SUSPENDED', removed => 1 | 0,
#              deleted => 1, service_account => 1, error => 1 }, ... }
# A user absent from it is active, and exists if the stand-in knows the
# URN otherwise (see entityExists above).  service_account => 1 makes the
# user a service account (createAccessToken type SERVICE_ACCOUNT accepts
# it as actor).
sub users {
    my ($self, $users) = @_;
    if ($users) {
        $self->_load(qw(conf users));
        my $old = $self->{state}{users};
        $self->{state}{users} = $users;
        $self->{state}{conf}{users_time} = int(Time::HiRes::time() * 1000);
        $self->_save(qw(users conf));
        $self->_emit(_user_events($self->{state}{conf}, $old, $users));
    }
    $self->_load('users');
    return $self->{state}{users};
}

# Sets GMS's latency: every answer waits SECONDS.
sub delay {
    my ($self, $seconds) = @_;
    $self->_load('conf');
    $self->{state}{conf}{delay} = $seconds // 0;
    $self->_save('conf');
}

# Replaces the policies (listPolicies); returns them, as served.  Each a
# hashref: urn, privileges, and optionally type (default PLATFORM), state
# (ACTIVE), name, description, and actors {users, groups, roles (arrayrefs
# or undef), allUsers, allGroups, resourceOwners (true or false)}.
sub policies {
    my ($self, $policies) = @_;
    if ($policies) {
        my $old = $self->{state}{policies};
        $self->{state}{policies} = [ map { _policy($_) } @$policies ];
        $self->_save('policies');
        $self->_emit(_policy_events($old, $self->{state}{policies}));
    }
    return $self->{state}{policies};
}

# Replaces the memberships the relationships answer from:
#   { URN => { IsMemberOfGroup => [group...], IsMemberOfNativeGroup => [...],
#              IsMemberOfRole => [role...] }, ... }
# for users and groups alike: URN's OUTGOING relationships, and the
# INCOMING ones of each group and role named.  URN => undef: corpUser
# (corpGroup) is null.  Any other URN: an entity with no relationships.
sub memberships {
    my ($self, $memberships) = @_;
    if ($memberships) {
        my $old = $self->{state}{memberships};
        $self->{state}{memberships} = $memberships;
        $self->_save('memberships');
        $self->_emit(_membership_events($old, $memberships));
    }
    return $self->{state}{memberships};
}

# Replaces what getGrantedPrivileges answers: { URN => [privilege...] }
# (anyone else: []), and with only_self => URN answers as DataHub before
# 1.0 does: any other actorUrn is refused
# (graphql-error-getGrantedPrivileges-other-actor.json).
sub granted {
    my ($self, $granted, %opt) = @_;
    $self->_load('conf');
    $self->{state}{granted} = $granted;
    $self->{state}{conf}{only_self} = $opt{only_self};
    $self->_save(qw(granted conf));
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
#   delay => SECONDS the answer waits that long (besides delay())
#   total => N       every page, whatever page says, has total N
#   ignore_start => 1
#                    listAccessTokens answers the first page's tokens
#                    whatever start is asked (start itself as asked): a
#                    GMS or a proxy that drops the offset
#   field => NAME    all of the above for queries holding that root field
#                    only (listAccessTokens, listPolicies, corpUser, ...)
sub misbehave {
    my ($self, %how) = @_;
    $self->_load('conf');
    $self->{state}{conf}{misbehave} = \%how;
    $self->_save('conf');
}

# The Events API (GET /openapi/v1/events/poll): 'on' serves it, '404' as
# a GMS without it (DataHub before 1.3, or EVENTS_API_ENABLED false: no
# ExternalEventsController), '403' as a GMS whose caller lacks
# GET_METADATA_CHANGE_LOG_EVENTS and GET_TOPIC_EVENTS (an empty body).
sub events_api {
    my ($self, $mode) = @_;
    $self->_load('conf');
    $self->{state}{conf}{events_api} = $mode;
    $self->_save('conf');
}

# The topic's retention, as Kafka's: keep => N (only the newest N events
# kept) and max_age => SECONDS (older events gone); undef: none.  Applied
# at once: a kept offset before what remains is reset to the earliest
# event kept, so the next poll skips ahead of it (a gap).
sub retention {
    my ($self, %opt) = @_;
    GmsTest::Events::retention($self->{state_dir}, %opt);
}

# Appends an event whose value is these bytes, whatever they are (not
# JSON, an aspect the follower does not know, 10 MB, a token URN that is
# no token id ...); key => URN puts it on that URN's partition (default
# the empty key's); count => N appends it N times at once.
sub inject_event {
    my ($self, $value, %opt) = @_;
    GmsTest::Events::append($self->{state_dir},
                            ([$opt{key} // '', $value]) x ($opt{count} // 1));
}

# The events kept, oldest first: { partition, offset, time (ms), value,
# json (value decoded, undef if it is not JSON) }.
sub events {
    my ($self) = @_;
    return [ map {
        my ($p, $o, $ms, $value) = @$_;
        { partition => $p, offset => $o, time => $ms, value => $value,
          json => scalar eval { GmsTest::json_decode($value) } };
    } @{ GmsTest::Events::read_log($self->{state_dir})->{log} } ];
}

# How many polls of the Events API were received (whatever their answer).
sub polls {
    my ($self) = @_;
    return scalar(() = GmsTest::slurp($self->{stub}{log})
                       =~ m{"uri":"/openapi/v1/events/poll}g);
}

sub _emit {
    my ($self, @events) = @_;
    GmsTest::Events::append($self->{state_dir}, @events);
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

# How many HTTP requests asked root field FIELD (once each, however many
# aliases of it the query holds); without FIELD, how many requests (the
# log's lines, nothing decoded: quick enough to call at each line of a
# follower).
sub count {
    my ($self, $field) = @_;

    return scalar(() = GmsTest::slurp($self->{stub}{log}) =~ /\n/g)
        unless defined $field;

    my $n = 0;
    for my $req (@{ $self->{stub}->requests }) {
        next if index($req->{body}, $field) < 0;
        my $body = eval { GmsTest::json_decode($req->{body}) };
        next unless ref $body eq 'HASH' && defined $body->{query}
                    && !ref $body->{query};
        $n++ if grep { $_ eq $field } _root_fields($body->{query});
    }
    return $n;
}

# The root fields a GraphQL document asks, in its order (not their
# aliases); none if it does not parse.
sub root_fields {
    my ($class, $query) = @_;
    return _root_fields($query);
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

# The most requests of the operation NAME (the query's "query NAME(...)")
# GMS had in hand at once: each from its arrival to its answer's due time
# (delay() and misbehave(delay => ...)), as the workers noted them; those
# of a wait (the Events API's poll) are not noted.  A client that sends a
# request only once the one before is answered scores 1.
sub in_flight {
    my ($self, $name) = @_;

    my @edges;
    for my $line (split /\n/, GmsTest::slurp("$self->{state_dir}/spans")) {
        my ($op, $from, $to) = split / /, $line;
        push @edges, [$from, 1], [$to, -1] if $op eq $name;
    }

    # an answer due when the next request arrives is over by then
    my ($now, $most) = (0, 0);
    for my $edge (sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } @edges)
    {
        $now += $edge->[1];
        $most = $now if $now > $most;
    }
    return $most;
}

sub clear_requests {
    $_[0]{stub}->clear_requests;
    GmsTest::write_file("$_[0]{state_dir}/spans", '');
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

# the workers change the tokens (createAccessToken, revokeAccessToken) and
# the users (createServiceAccount, deleteServiceAccount)
sub _load {
    my ($self, @parts) = @_;
    $self->{state}{$_} = Storable::retrieve("$self->{state_dir}/$_")
        for @parts;
}

sub _save {
    my ($self, @parts) = @_;
    _write("$self->{state_dir}/$_", $self->{state}{$_}) for @parts;
}

# a number used as a string since (a test's is() does that) is stored as a
# string: GMS's Longs are numbers
sub _numbers {
    my ($tokens) = @_;
    return [ map {
        my $t = { %$_ };
        for my $f (qw(createdAt expiresAt)) {
            $t->{$f} = 0 + $t->{$f} if _is_int($t->{$f});
        }
        $t;
    } @$tokens ];
}

# The tokens GMS has: those given, less those revoked, then those created.
sub _effective {
    my ($tokens, $changes) = @_;
    my $removed = $changes->{removed} // {};
    return [ (%$removed ? grep { !$removed->{ $_->{id} } } @$tokens
                        : @$tokens),
             @{ $changes->{added} // [] } ];
}

# a part's file, whole: tmp and rename, so that a worker never reads half
sub _write {
    my ($file, $data) = @_;
    my $tmp = "$file.$$.tmp";
    Storable::store($data, $tmp)
        or die "GmsTest::GraphQL: cannot write $tmp\n";
    rename $tmp, $file
        or die "GmsTest::GraphQL: cannot rename $tmp: $!\n";
}


# --- in the stub's workers ----------------------------------------------------

# The state a worker answers from: each part read again when its file
# changed (inode, size, mtime: its key); state is conf's fields and the
# other parts by name; memo holds what is derived from them (_memo).
my %CONTEXT;

sub _context {
    my ($dir) = @_;

    my $ctx = $CONTEXT{$dir} //= { dir => $dir, keys => {}, parts => {},
                                   memo => {} };
    my $changed;
    for my $part (@PARTS) {
        my $key = _key("$dir/$part");
        next if ($ctx->{keys}{$part} // '') eq $key;
        $ctx->{parts}{$part} = Storable::retrieve("$dir/$part");
        $ctx->{keys}{$part} = $key;
        $changed = 1;
    }
    $ctx->{state} = { %{ $ctx->{parts}{conf} },
                      map { $_ => $ctx->{parts}{$_} } @PARTS[1 .. $#PARTS] }
        if $changed;

    return $ctx;
}

sub _key {
    my @st = Time::HiRes::stat($_[0]);
    return join ':', @st[1, 7, 9];
}

# What make() derives from the parts named, kept until one of them changes.
sub _memo {
    my ($ctx, $name, $parts, $make) = @_;
    my $key = join '|', map { $ctx->{keys}{$_} } @$parts;
    my $memo = $ctx->{memo}{$name};
    return $memo->[1] if $memo && $memo->[0] eq $key;
    my $value = $make->();
    $ctx->{memo}{$name} = [$key, $value];
    return $value;
}

# A part changed by a worker, written; the worker's own key follows.
sub _store {
    my ($ctx, $part) = @_;
    my $file = "$ctx->{dir}/$part";
    _write($file, $ctx->{parts}{$part});
    $ctx->{keys}{$part} = _key($file);
}

sub _answer {
    my ($dir, $req) = @_;

    my $ctx = _context($dir);
    my ($res, $how) = _respond($ctx, $req);

    my $delay = ($ctx->{state}{delay} // 0) + ($how->{delay} // 0);
    if (ref $res eq 'CODE' && $delay > 0) {
        # a poll that waits: GMS's latency comes on top of its wait
        my $wait = $res;
        $res = sub {
            my $r = $wait->() or return undef;
            $r->[3] = $delay;
            return $r;
        };
    } elsif (ref $res eq 'ARRAY' && $delay > 0) {
        $res->[3] = $delay;
    }

    _span($dir, $req, $delay) if ref $res eq 'ARRAY';

    return $res;
}

# a request's operation, arrival and answer's due time, for in_flight()
sub _span {
    my ($dir, $req, $delay) = @_;

    my ($op) = $req->{body} =~ /"query"\s*:\s*"\s*(?:query|mutation)\s+(\w+)/;
    return unless defined $op;

    my $now = Time::HiRes::time();
    open my $fh, '>>', "$dir/spans" or die "cannot append to $dir/spans: $!\n";
    flock $fh, Fcntl::LOCK_EX();
    printf $fh "%s %.6f %.6f\n", $op, $now, $now + $delay;
    close $fh;
}

sub _respond {
    my ($ctx, $req) = @_;

    my $state = $ctx->{state};
    my $how = $state->{misbehave} // {};

    # AuthenticationFilter, before any servlet (DataHubTokenAuthenticator
    # takes the header's value after "Bearer ")
    if (defined $state->{token}) {
        my $auth = $req->{header}{authorization};
        return _jetty($req, 401, $GMS_UNAUTHORIZED), {}
            unless defined $auth && $auth eq "Bearer $state->{token}";
    }

    return _events_poll($ctx, $req, $how)
        if $req->{path} eq '/openapi/v1/events/poll';
    return _jetty($req, 404, 'Not Found'), {}
        if $req->{path} ne '/api/graphql';
    return _jetty($req, 405, 'Method Not Allowed'), {}
        if $req->{method} ne 'POST';

    my $body = eval { GmsTest::json_decode($req->{body}) };
    return [400, [], ''], {}
        unless ref $body eq 'HASH' && defined $body->{query}
               && !ref $body->{query};

    my $vars = ref $body->{variables} eq 'HASH' ? $body->{variables} : {};
    my $op = eval { _parse($body->{query}) };
    my $error = $@;

    # the page the misbehaviour counts: the first root field's input
    my $input = ref $vars->{input} eq 'HASH' ? $vars->{input} : {};
    if ($op) {
        my ($first) = grep { $_->{name} ne '__typename' } @{ $op->{sel} };
        my $in = $first ? _bind($first->{args}{input}, $vars, $op) : undef;
        $input = $in if ref $in eq 'HASH';
    }
    my ($start, $count) = @$input{qw(start count)};
    my $page = _is_int($start) && _is_int($count) && $count > 0
               ? int($start / $count) + 1 : 0;

    my @roots = $op ? map { $_->{name} } @{ $op->{sel} }
                    : $body->{query} =~ /\{\s*(\w+)/;
    $how = {} if defined $how->{field} && !grep { $_ eq $how->{field} } @roots;
    $how = { total => $how->{total} }
        if defined $how->{page} && $how->{page} != $page;

    my $res = _misbehaving($req, $how)
              // ($op ? _run($ctx, $op, $vars, $how)
                      : _graphql(_validation_error($error =~ s/\n\z//r)));

    return $res, $how;
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

# GET /openapi/v1/events/poll, past GMS's AuthenticationFilter: see
# GmsTest::Events.  misbehave() applies to it when it names no field or
# field => 'events'.
sub _events_poll {
    my ($ctx, $req, $how) = @_;

    my $mode = $ctx->{state}{events_api} // 'on';
    return _jetty($req, 404, 'Not Found'), {} if $mode eq '404';
    return _jetty($req, 405, 'Method Not Allowed'), {}
        if $req->{method} ne 'GET';
    return [403, [], ''], {} if $mode eq '403';

    $how = {} if defined $how->{field} && $how->{field} ne 'events'
                 || defined $how->{page};
    my $res = defined $how->{status} || defined $how->{body}
              ? _misbehaving($req, $how)
              : GmsTest::Events::poll($ctx->{dir}, $req);
    return $res, $how;
}

# The events of tokens() replacing the tokens: each token gone deleted,
# each new one made, each changed one's info written again.
sub _token_events {
    my ($old, $new) = @_;
    my %was = map { $_->{id} => $_ } @$old;
    my %is = map { $_->{id} => $_ } @$new;
    my @f = qw(name actorUrn ownerUrn createdAt expiresAt description);
    my $same = sub {
        my ($a, $b) = @_;
        return !grep { ($a->{$_} // "\0") ne ($b->{$_} // "\0") } @f;
    };
    return ((map { GmsTest::Events::token_delete($_) }
             grep { !$is{ $_->{id} } } @$old),
            (map { GmsTest::Events::token_put($_, new => !$was{ $_->{id} }) }
             grep { !$was{ $_->{id} } || !$same->($was{ $_->{id} }, $_) }
             @$new));
}

# The events of users changing (users(), createServiceAccount,
# deleteServiceAccount): per user, each aspect of _user_aspects written
# (UPSERT) or gone (DELETE); the key aspect corpUserKey UPSERT for a user
# new or back, DELETE for one deleted (EntityService.deleteUrn).  A
# corpUserStatus whose status stays is no change (its lastModified is the
# call's time).
sub _user_events {
    my ($conf, $old, $new) = @_;
    my @events;
    my %all = (%{ $old // {} }, %{ $new // {} });
    for my $urn (sort keys %all) {
        my ($o, $n) = ($old->{$urn}, $new->{$urn});
        my %e = (type => 'corpuser', urn => $urn);
        my %was = map { $_->[0] => _aspect_value($_) }
                      _user_aspects($conf, $o);
        my @is = _user_aspects($conf, $n);
        my $gone = $n && $n->{deleted} && !($o && $o->{deleted});
        my $back = !($n && $n->{deleted}) && (!$o || $o->{deleted});
        my ($name) = $urn =~ /^urn:li:corpuser:(.*)\z/s;

        push @events, GmsTest::Events::mcl(%e, change => 'UPSERT',
            aspect_name => 'corpUserKey',
            aspect => { username => $name // $urn })
            if $back && $n;
        for my $aspect (@is) {
            my $v = delete $was{ $aspect->[0] };
            next if defined $v && $v eq _aspect_value($aspect);
            push @events, GmsTest::Events::mcl(%e, change => 'UPSERT',
                aspect_name => $aspect->[0], aspect => $aspect->[1]);
        }
        push @events, GmsTest::Events::mcl(%e, change => 'DELETE',
                                           aspect_name => $_)
            for sort keys %was;
        push @events, GmsTest::Events::mcl(%e, change => 'DELETE',
            aspect_name => 'corpUserKey',
            previous => { username => $name // $urn })
            if $gone;
    }
    return @events;
}

sub _aspect_value {
    my ($aspect) = @_;
    my ($name, $payload) = @$aspect;
    return $payload->{status} if $name eq 'corpUserStatus';
    return GmsTest::json_encode($payload);
}

# The events of policies() (dataHubPolicyInfo, DataHubPolicyInfo.pdl's
# fields): a policy new or changed UPSERT, a policy gone DELETE of its
# info and key.
sub _policy_events {
    my ($old, $new) = @_;
    my %was = map { $_->{urn} => GmsTest::json_encode($_) } @{ $old // [] };
    my %is = map { $_->{urn} => 1 } @$new;
    my @events;
    for my $p (@$new) {
        next if ($was{ $p->{urn} } // '') eq GmsTest::json_encode($p);
        my $a = $p->{actors};
        my $info = {
            displayName => $p->{name}, type => $p->{type},
            state => $p->{state}, privileges => $p->{privileges},
            editable => $p->{editable},
            actors => { map { defined $a->{$_} ? ($_ => $a->{$_}) : () }
                        qw(users groups roles resourceOwners allUsers
                           allGroups) } };
        $info->{description} = $p->{description}
            if defined $p->{description};
        push @events, GmsTest::Events::mcl(type => 'dataHubPolicy',
            urn => $p->{urn}, change => 'UPSERT',
            aspect_name => 'dataHubPolicyInfo', aspect => $info);
    }
    for my $urn (grep { !$is{$_} } map { $_->{urn} } @{ $old // [] }) {
        push @events, GmsTest::Events::mcl(type => 'dataHubPolicy',
            urn => $urn, change => 'DELETE', aspect_name => $_)
            for qw(dataHubPolicyInfo dataHubPolicyKey);
    }
    return @events;
}

# The events of memberships(): per user or group whose lists changed,
# groupMembership {groups}, nativeGroupMembership {nativeGroups} or
# roleMembership {roles} (GroupMembership.pdl, NativeGroupMembership.pdl,
# RoleMembership.pdl), on a corpuser or a corpGroup as the URN says.
sub _membership_events {
    my ($old, $new) = @_;
    my @kinds = ([IsMemberOfGroup => groupMembership => 'groups'],
                 [IsMemberOfNativeGroup => nativeGroupMembership =>
                  'nativeGroups'],
                 [IsMemberOfRole => roleMembership => 'roles']);
    my @events;
    my %all = (%{ $old // {} }, %{ $new // {} });
    for my $urn (sort keys %all) {
        my ($o, $n) = (($old // {})->{$urn} // {}, $new->{$urn} // {});
        my $type = $urn =~ /^urn:li:corpGroup:/ ? 'corpGroup' : 'corpuser';
        for (@kinds) {
            my ($rel, $aspect, $field) = @$_;
            my @is = @{ $n->{$rel} // [] };
            next if join("\0", @{ $o->{$rel} // [] }) eq join("\0", @is);
            push @events, GmsTest::Events::mcl(type => $type, urn => $urn,
                change => 'UPSERT', aspect_name => $aspect,
                aspect => { $field => \@is });
        }
    }
    return @events;
}

# --- the query: parsed, checked, run ------------------------------------------

# GraphQL's lexical tokens: [kind, text], kind w (name), s (string value),
# n (number), p (punctuator); commas and comments are ignored.
sub _lex {
    my ($q) = @_;
    my @t;

    pos($q) = 0;
    while (1) {
        $q =~ /\G(?:[\s,]+|#[^\n\r]*)+/gc;
        last if pos($q) >= length $q;

        if ($q =~ /\G"""(.*?)"""/gcs) {
            push @t, [s => $1];
        } elsif ($q =~ /\G"((?:[^"\\\n\r]|\\.)*)"/gc) {
            push @t, [s => GmsTest::json_decode(qq("$1"))];
        } elsif ($q =~ /\G(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)/gc) {
            push @t, [n => $1];
        } elsif ($q =~ /\G([_A-Za-z][_0-9A-Za-z]*)/gc) {
            push @t, [w => $1];
        } elsif ($q =~ /\G(\.\.\.|[!\$&()\:=@\[\]{|}])/gc) {
            push @t, [p => $1];
        } else {
            die "Invalid Syntax : offending token '"
                . substr($q, pos($q), 1) . "'\n";
        }
    }
    return \@t;
}

# The operation: { type => Query | Mutation, defaults => {VAR => AST},
# sel => [field...] }; a field { name, alias, args => {NAME => AST},
# sel }; an argument's AST [var => NAME], [lit => VALUE], [list => [AST]],
# [obj => {NAME => AST}].
sub _parse {
    my ($query) = @_;

    my $p = { t => _lex($query), i => 0 };
    my %op = (type => 'Query', defaults => {});

    my $tok = $p->{t}[0] // die "Invalid Syntax : no selection set\n";
    if ($tok->[0] eq 'w') {
        $op{type} = { query => 'Query', mutation => 'Mutation' }->{$tok->[1]}
            // die "Invalid Syntax : offending token '$tok->[1]'\n";
        $p->{i}++;
        $p->{i}++ if _at($p, 'w');
        if (_at($p, 'p', '(')) {
            $p->{i}++;
            until (_at($p, 'p', ')')) {
                _expect($p, '$');
                my $name = _name($p);
                _expect($p, ':');
                _type($p);
                if (_at($p, 'p', '=')) {
                    $p->{i}++;
                    $op{defaults}{$name} = _value($p, 1);
                }
            }
            $p->{i}++;
        }
        _directives($p);
    }

    die "Invalid Syntax : no selection set\n" unless _at($p, 'p', '{');
    $op{sel} = _set($p);
    die "Validation error: more than one operation\n"
        if $p->{i} < @{ $p->{t} };

    return \%op;
}

sub _set {
    my ($p) = @_;
    my @sel;

    _expect($p, '{');
    until (_at($p, 'p', '}')) {
        my $tok = $p->{t}[ $p->{i}++ ]
            // die "Invalid Syntax : unterminated selection set\n";
        die "Validation error: fragments are not served by the stand-in\n"
            if $tok->[0] eq 'p' && $tok->[1] eq '...';
        die "Invalid Syntax : offending token '$tok->[1]'\n"
            unless $tok->[0] eq 'w';

        my %f = (name => $tok->[1], args => {});
        if (_at($p, 'p', ':')) {
            $p->{i}++;
            $f{alias} = $f{name};
            $f{name} = _name($p);
        }
        if (_at($p, 'p', '(')) {
            $p->{i}++;
            until (_at($p, 'p', ')')) {
                my $arg = _name($p);
                _expect($p, ':');
                $f{args}{$arg} = _value($p, 0);
            }
            $p->{i}++;
        }
        _directives($p);
        $f{sel} = _set($p) if _at($p, 'p', '{');
        push @sel, \%f;
    }
    $p->{i}++;

    return \@sel;
}

sub _value {
    my ($p, $const) = @_;

    my $tok = $p->{t}[ $p->{i}++ ] // die "Invalid Syntax : no value\n";
    my ($kind, $text) = @$tok;

    if ($kind eq 'p' && $text eq '$' && !$const) {
        return [var => _name($p)];
    }
    return [lit => $text] if $kind eq 's';
    return [lit => 0 + $text] if $kind eq 'n';
    if ($kind eq 'w') {
        return [lit => JSON::PP::true()] if $text eq 'true';
        return [lit => JSON::PP::false()] if $text eq 'false';
        return [lit => undef] if $text eq 'null';
        return [lit => $text];    # an enum value
    }
    if ($kind eq 'p' && $text eq '[') {
        my @list;
        push @list, _value($p, $const) until _at($p, 'p', ']');
        $p->{i}++;
        return [list => \@list];
    }
    if ($kind eq 'p' && $text eq '{') {
        my %obj;
        until (_at($p, 'p', '}')) {
            my $name = _name($p);
            _expect($p, ':');
            $obj{$name} = _value($p, $const);
        }
        $p->{i}++;
        return [obj => \%obj];
    }
    die "Invalid Syntax : offending token '$text'\n";
}

sub _type {
    my ($p) = @_;
    if (_at($p, 'p', '[')) {
        $p->{i}++;
        _type($p);
        _expect($p, ']');
    } else {
        _name($p);
    }
    $p->{i}++ if _at($p, 'p', '!');
}

sub _directives {
    my ($p) = @_;
    while (_at($p, 'p', '@')) {
        $p->{i}++;
        _name($p);
        next unless _at($p, 'p', '(');
        $p->{i}++;
        until (_at($p, 'p', ')')) {
            _name($p);
            _expect($p, ':');
            _value($p, 0);
        }
        $p->{i}++;
    }
}

sub _at {
    my ($p, $kind, $text) = @_;
    my $tok = $p->{t}[ $p->{i} ]
        // die "Invalid Syntax : the query ends too soon\n";
    return $tok->[0] eq $kind && (!defined $text || $tok->[1] eq $text);
}

sub _expect {
    my ($p, $text) = @_;
    my $tok = $p->{t}[ $p->{i}++ ]
        // die "Invalid Syntax : the query ends too soon\n";
    die "Invalid Syntax : offending token '$tok->[1]'\n"
        unless $tok->[0] eq 'p' && $tok->[1] eq $text;
}

sub _name {
    my ($p) = @_;
    my $tok = $p->{t}[ $p->{i}++ ]
        // die "Invalid Syntax : the query ends too soon\n";
    die "Invalid Syntax : offending token '$tok->[1]'\n"
        unless $tok->[0] eq 'w';
    return $tok->[1];
}

# An argument's value, its variables replaced (a variable not given: its
# default, else null).
sub _bind {
    my ($ast, $vars, $op) = @_;
    return undef unless $ast;

    my ($kind, $v) = @$ast;
    if ($kind eq 'var') {
        return $vars->{$v} if exists $vars->{$v};
        return _bind($op->{defaults}{$v}, $vars, $op);
    }
    return $v if $kind eq 'lit';
    return [ map { _bind($_, $vars, $op) } @$v ] if $kind eq 'list';
    return { map { $_ => _bind($v->{$_}, $vars, $op) } keys %$v };
}

# The root fields a query asks (not their aliases); none if it does not
# parse.
sub _root_fields {
    my ($query) = @_;
    my $op = eval { _parse($query) } or return ();
    return map { $_->{name} } @{ $op->{sel} };
}

# graphql-java's validation, as far as this stand-in serves the schema:
# the fields exist, objects have a selection and leaves none.  Returns
# the query's complexity (each field 1).
sub _check {
    my ($sel, $type, $path) = @_;
    my $complexity = 0;

    for my $f (@$sel) {
        my $name = $f->{name};
        my $where = $path eq '' ? $name : "$path/$name";

        die "Validation error (FieldUndefined\@[$where]) : Field '$name' in "
            . "type '$type' is undefined\n"
            unless $name eq '__typename' || $HAS{$type}{$name};

        my $child = $CHILD{"$type.$name"};
        if ($f->{sel}) {
            die "Validation error (SubselectionNotAllowed\@[$where]) : "
                . "Sub selection not allowed on leaf type of field $name\n"
                unless $child;
            $complexity += _check($f->{sel}, $child, $where);
        } elsif ($child) {
            die "Validation error (SubselectionRequired\@[$where]) : Sub "
                . "selection required for type $child of field $name\n";
        }
        $complexity++;
    }

    return $complexity;
}

# Root fields and who answers each: a resolver gets the context (state,
# misbehaviour) and the field's arguments, and returns the field's value
# (hashes, arrays, scalars; a code ref for a field with arguments of its
# own), _failed(...) for a field error, or _whole(JSON) for an answer that
# replaces the document (graphql-java's input validation).
my %ROOT = (
    listAccessTokens       => \&_list,
    createAccessToken      => \&_create,
    revokeAccessToken      => \&_revoke,
    getAccessTokenMetadata => \&_metadata,
    listPolicies           => \&_list_policies,
    corpUser               => \&_corp_user,
    corpGroup              => \&_corp_group,
    role                   => \&_role,
    entity                 => \&_entity,
    getGrantedPrivileges   => \&_granted,
    entityExists           => \&_entity_exists,
    scrollAcrossEntities   => \&_scroll,
    createServiceAccount   => \&_create_service_account,
    deleteServiceAccount   => \&_delete_service_account,
);

sub _failed {
    my (%error) = @_;
    return bless \%error, 'GmsTest::GraphQL::Failed';
}

sub _whole {
    my ($json) = @_;
    return bless { json => $json }, 'GmsTest::GraphQL::Whole';
}

sub _run {
    my ($ctx, $op, $vars, $how) = @_;

    my $complexity = eval { _check($op->{sel}, $op->{type}, '') };
    return _graphql(_validation_error($@ =~ s/\n\z//r))
        unless defined $complexity;

    # MaxQueryComplexityInstrumentation: an AbortExecutionException,
    # before any field runs
    return _graphql('{"errors":[{"message":"maximum query complexity '
                    . "exceeded $complexity > $COMPLEXITY_LIMIT\","
                    . '"extensions":{"classification":"ExecutionAborted"}}],'
                    . '"extensions":{}}')
        if $complexity > $COMPLEXITY_LIMIT;

    _bind_args($op->{sel}, $vars, $op);

    my (@errors, %value, $null_data);
    my @fields = @{ $op->{sel} };

    # GMS loads the users of one request in one batchLoad (a DataLoader
    # per entity type): CorpUserMapper throwing for one fails them all
    my $users = $ctx->{state}{users} // {};
    local $ctx->{failing} = grep {
        $_->{name} eq 'corpUser' && !ref $_->{args}{urn}
        && ($users->{ $_->{args}{urn} // '' } // {})->{error}
    } @fields;

    for my $f (@fields) {
        my $key = $f->{alias} // $f->{name};
        if ($f->{name} eq '__typename') {
            $value{$key} = $op->{type};
            next;
        }

        my $v = $ROOT{ $f->{name} }->($ctx, $f->{args}, $how);

        return _graphql($v->{json}) if ref $v eq 'GmsTest::GraphQL::Whole';

        if (ref $v eq 'GmsTest::GraphQL::Failed') {
            # an error of a fixture, byte for byte, when alone
            return _graphql(__PACKAGE__->fixture($v->{fixture}) =~ s/\n\z//r)
                if $v->{fixture} && @fields == 1 && !defined $f->{alias};
            push @errors, _error_json($v, $key);
            $null_data = 1 if $NON_NULL_ROOT{ $f->{name} };
            $value{$key} = undef;
            next;
        }

        $value{$key} = $v;
    }

    my $data = $null_data ? 'null' : '{' . join(',', map {
        my $key = $_->{alias} // $_->{name};
        "\"$key\":" . _render($_->{sel}, $value{$key})
    } @fields) . '}';

    return _graphql((@errors ? '{"errors":[' . join(',', @errors) . '],'
                             : '{')
                    . '"data":' . $data . ',"extensions":{}}');
}

sub _bind_args {
    my ($sel, $vars, $op) = @_;
    for my $f (@$sel) {
        $f->{args} = { map { $_ => _bind($f->{args}{$_}, $vars, $op) }
                       keys %{ $f->{args} } };
        _bind_args($f->{sel}, $vars, $op) if $f->{sel};
    }
}

# One error of errors[], its path the field's key: a fixture's (its first
# error) or DataHubDataFetcherExceptionHandler's.
sub _error_json {
    my ($e, $key) = @_;

    if ($e->{fixture}) {
        my $doc = GmsTest::json_decode(__PACKAGE__->fixture($e->{fixture}));
        %$e = (message => $doc->{errors}[0]{message},
               code => $doc->{errors}[0]{extensions}{code},
               type => $doc->{errors}[0]{extensions}{type});
    }

    return '{"message":' . GmsTest::json_encode($e->{message})
           . ',"locations":[{"line":2,"column":3}],"path":['
           . GmsTest::json_encode($key) . '],"extensions":{"code":'
           . $e->{code} . ',"type":"' . $e->{type} . '",'
           . '"classification":"DataFetchingException"}}';
}

# A value with exactly the fields selected, in their order, under their
# aliases; a field's code ref is called with the field's arguments.
sub _render {
    my ($sel, $v) = @_;

    return GmsTest::json_encode($v) unless $sel;
    return 'null' unless defined $v;
    return '[' . join(',', map { _render($sel, $_) } @$v) . ']'
        if ref $v eq 'ARRAY';
    return '{' . join(',', map {
        my $f = $_;
        my $x = $v->{ $f->{name} };
        $x = $x->($f->{args}) if ref $x eq 'CODE';
        '"' . ($f->{alias} // $f->{name}) . '":' . _render($f->{sel}, $x)
    } @$sel) . '}';
}

sub _is_int {
    my ($v) = @_;
    return defined $v && !ref $v && $v =~ /^-?\d+\z/;
}

sub _bool {
    return $_[0] ? JSON::PP::true() : JSON::PP::false();
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


# --- tokens -------------------------------------------------------------------

# listAccessTokens as ListAccessTokensResolver answers it.
sub _list {
    my ($ctx, $args, $how) = @_;

    my $input = ref $args->{input} eq 'HASH' ? $args->{input} : {};
    my ($start, $count) = @$input{qw(start count)};

    # v0.13.0: no defaults; a missing one ends as the handler's catch-all
    return _failed(message => $GRAPHQL_UNKNOWN, code => 500,
                   type => 'SERVER_ERROR')
        unless _is_int($start) && _is_int($count) && $start >= 0
               && $count >= 0;

    # Elasticsearch refuses from + size past index.max_result_window
    my $window = $ctx->{state}{max_result_window};
    return _failed(message => $GRAPHQL_UNKNOWN, code => 500,
                   type => 'SERVER_ERROR')
        if defined $window && $start + $count > $window;

    my $sorted = _listed($ctx, $input->{filters});

    # a GMS (or a proxy) that ignores start: the first page, every time
    my $from = $how->{ignore_start} ? 0 : $start;
    my $last = $from + $count - 1 < $#$sorted ? $from + $count - 1
                                              : $#$sorted;
    my @page = map { { %$_, type => 'ACCESS_TOKEN',
                       __typename => 'AccessTokenMetadata' } }
               @$sorted[$from .. $last];

    if ($how->{token} && @page) {
        $page[0] = { %{ $page[0] }, %{ $how->{token} } };
    }

    return { start => $start, count => $count,
             total => $how->{total} // scalar @$sorted, tokens => \@page,
             __typename => 'ListAccessTokenResult' };
}

# A FacetFilterInput as ResolverUtils.criterionFromFilter and ESUtils
# apply it: condition EQUAL (the default) matches one of the values; a
# range condition compares the field, a long (createdAt, expiresAt), with
# the first value, and a token without the field matches none of them.
my %RANGE = (GREATER_THAN             => sub { $_[0] >  $_[1] },
             GREATER_THAN_OR_EQUAL_TO => sub { $_[0] >= $_[1] },
             LESS_THAN                => sub { $_[0] <  $_[1] },
             LESS_THAN_OR_EQUAL_TO    => sub { $_[0] <= $_[1] });

# The tokens the search index lists (not the unlisted ones) that match the
# filters, expiresAt descending, those without one last (Elasticsearch's
# missing values), equal ones in the order given.  Kept until the tokens
# change; a revocation or a new token among 100,000 costs a pass over the
# sorted list, not a sort.
sub _listed {
    my ($ctx, $filters) = @_;

    my @filters = ref $filters eq 'ARRAY' ? grep { ref $_ eq 'HASH' }
                                                 @$filters
                                          : ();
    my $all = _memo($ctx, 'listed', [qw(tokens changes)], sub {
        my $base = _memo($ctx, 'listed base', ['tokens'], sub {
            [ sort { _later($a, $b) }
              grep { !$_->{unlisted} } @{ $ctx->{parts}{tokens} } ];
        });
        _changed($base, $ctx->{parts}{changes});
    });
    return $all unless @filters;

    # by urn or id: the few tokens named, in the listing's order
    my ($by) = grep { ($_->{field} // '') =~ /^(?:urn|id)\z/ } @filters;
    if ($by) {
        my $rank = _memo($ctx, "rank $by->{field}", [qw(tokens changes)],
                         sub { my $i = 0;
                               +{ map { $_->{ $by->{field} } => $i++ }
                                  @$all } });
        my @named = sort { $a <=> $b } grep { defined }
                    map { $rank->{$_} } @{ $by->{values} // [] };
        return [ grep { _matches($_, \@filters) } @$all[@named] ];
    }

    # a span of createdAt (or another long): binary searches in the
    # tokens sorted by that field, the span's tokens in the listing's order
    my ($span) = grep { $RANGE{ $_->{condition} // 'EQUAL' } } @filters;
    if ($span && !grep { ($_->{field} // '') ne $span->{field} } @filters) {
        my $field = $span->{field};
        my ($lo, $hi) = _bounds(\@filters) or return [];
        my $index = _memo($ctx, "by $field", [qw(tokens changes)], sub {
            my @by = sort { $a->[0] <=> $b->[0] }
                     grep { _is_int($_->[0]) }
                     map { [ $all->[$_]{$field}, $_ ] } 0 .. $#$all;
            [ [ map { $_->[0] } @by ], [ map { $_->[1] } @by ] ];
        });
        my ($values, $ranks) = @$index;
        my $from = _first_at_least($values, $lo);
        my $to = _first_at_least($values, $hi + 1) - 1;
        return [ @$all[ sort { $a <=> $b } @$ranks[$from .. $to] ] ];
    }

    my $memo = $ctx->{memo};
    delete @$memo{ grep { /^filtered / } keys %$memo } if keys %$memo > 100;
    return _memo($ctx, 'filtered ' . GmsTest::json_encode(\@filters),
                 [qw(tokens changes)],
                 sub { [ grep { _matches($_, \@filters) } @$all ] });
}

# the listing's order: a sorts after b (1), before (-1), or equal
sub _later {
    my ($a, $b) = @_;
    return defined $a->{expiresAt} && defined $b->{expiresAt}
           ? $b->{expiresAt} <=> $a->{expiresAt}
           : defined $b->{expiresAt} <=> defined $a->{expiresAt};
}

# the sorted listing less the tokens revoked, with those created (listed
# after the equal ones)
sub _changed {
    my ($sorted, $changes) = @_;

    my $removed = $changes->{removed} // {};
    my @list = %$removed ? grep { !$removed->{ $_->{id} } } @$sorted
                         : @$sorted;

    for my $t (grep { !$_->{unlisted} } @{ $changes->{added} // [] }) {
        my ($lo, $hi) = (0, scalar @list);
        while ($lo < $hi) {
            my $mid = int(($lo + $hi) / 2);
            if (_later($t, $list[$mid]) < 0) {
                $hi = $mid;
            } else {
                $lo = $mid + 1;
            }
        }
        splice @list, $lo, 0, $t;
    }

    return \@list;
}

# every token GMS has, listed or not, by id
sub _token_ids {
    my ($ctx) = @_;
    return _memo($ctx, 'ids', [qw(tokens changes)], sub {
        +{ map { $_->{id} => $_ }
           @{ _effective($ctx->{parts}{tokens}, $ctx->{parts}{changes}) } };
    });
}

# The range filters' bounds, both inclusive (longs); none when a bound is
# not a long (no token matches).
sub _bounds {
    my ($filters) = @_;
    my ($lo, $hi) = (-9**18, 9**18);
    for my $f (@$filters) {
        my $bound = (ref $f->{values} eq 'ARRAY' ? $f->{values}[0] : undef)
                    // $f->{value};
        return () unless _is_int($bound);
        my $c = $f->{condition};
        $lo = _max($lo, $bound + ($c eq 'GREATER_THAN' ? 1 : 0))
            if $c =~ /^GREATER_THAN/;
        $hi = _min($hi, $bound - ($c eq 'LESS_THAN' ? 1 : 0))
            if $c =~ /^LESS_THAN/;
    }
    return ($lo, $hi);
}

sub _max { $_[0] > $_[1] ? $_[0] : $_[1] }
sub _min { $_[0] < $_[1] ? $_[0] : $_[1] }

# the index of the first value at least $v in a sorted list (its length
# if none)
sub _first_at_least {
    my ($values, $v) = @_;
    my ($lo, $hi) = (0, scalar @$values);
    while ($lo < $hi) {
        my $mid = int(($lo + $hi) / 2);
        if ($values->[$mid] < $v) {
            $lo = $mid + 1;
        } else {
            $hi = $mid;
        }
    }
    return $lo;
}

sub _matches {
    my ($token, $filters) = @_;
    for my $f (ref $filters eq 'ARRAY' ? @$filters : ()) {
        my $v = $token->{ $f->{field} // '' };
        my $range = $RANGE{ $f->{condition} // 'EQUAL' };
        if ($range) {
            my $bound = (ref $f->{values} eq 'ARRAY' ? $f->{values}[0] : undef)
                        // $f->{value};
            return 0 unless defined $v && _is_int($bound)
                            && $range->($v, $bound);
            next;
        }
        return 0 unless defined $v
                        && grep { $_ eq $v } @{ $f->{values} // [] };
    }
    return 1;
}


# --- entities: existence, users, groups, roles --------------------------------

# entityExists as EntityExistsResolver answers it (see the top).
sub _entity_exists {
    my ($ctx, $args) = @_;
    my $urn = $args->{urn};
    return _failed(message => $GRAPHQL_UNKNOWN, code => 500,
                   type => 'SERVER_ERROR')
        unless defined $urn && !ref $urn && $urn =~ /^urn:li:\w+:./;
    return _bool(_exists($ctx, $urn));
}

sub _exists {
    my ($ctx, $urn) = @_;

    if ($urn =~ /^urn:li:dataHubAccessToken:(.+)\z/s) {
        my $token = _token_ids($ctx)->{$1};
        return $token && $token->{urn} eq $urn ? 1 : 0;
    }

    my $user = $ctx->{state}{users}{$urn};
    return 0 if $user && $user->{deleted};
    return 1 if _memo($ctx, 'known', [qw(conf users memberships policies)],
                      sub { _known($ctx->{state}) })->{$urn};
    return _memo($ctx, 'holders', [qw(tokens changes)], sub {
        +{ map { (($_->{actorUrn} // '') => 1, ($_->{ownerUrn} // '') => 1) }
           @{ _effective($ctx->{parts}{tokens}, $ctx->{parts}{changes}) } };
    })->{$urn} ? 1 : 0;
}

# The URNs of entities the stand-in has besides tokens and their holders:
# the caller, users, memberships and the policies' actors.
sub _known {
    my ($state) = @_;
    my %known = ($state->{caller} => 1);

    $known{$_} = 1 for keys %{ $state->{users} // {} };

    my $m = $state->{memberships} // {};
    for my $urn (keys %$m) {
        next unless defined $m->{$urn};
        $known{$urn} = 1;
        $known{$_} = 1 for map { @{ $_ // [] } } values %{ $m->{$urn} };
    }
    for my $p (@{ $state->{policies} // [] }) {
        $known{$_} = 1
            for map { @{ $p->{actors}{$_} // [] } } qw(users groups roles);
    }

    return \%known;
}

# corpUser(urn) as CorpUserType.batchLoad and CorpUserMapper answer it,
# with its aspects, exists and relationships (see the top).
sub _corp_user {
    my ($ctx, $args, $how) = @_;

    return _failed(message => $GRAPHQL_UNKNOWN, code => 500,
                   type => 'SERVER_ERROR')
        if $ctx->{failing};

    my $urn = $args->{urn} // '';
    my $m = $ctx->{state}{memberships} // {};
    return undef if exists $m->{$urn} && !defined $m->{$urn};

    my $user = $ctx->{state}{users}{$urn} // {};
    my ($name) = $urn =~ /^urn:li:corpuser:(.+)\z/s;
    my $status = $user->{deleted} ? undef : $user->{status};

    return {
        urn           => $urn,
        type          => 'CORP_USER',
        username      => $name // $urn,
        status        => $status,
        exists        => _bool(_exists($ctx, $urn)),
        aspects       => sub { _aspects($ctx, $urn, $name // $urn, $_[0]) },
        relationships => sub {
            $user->{deleted} ? _related($ctx, '', $_[0]{input}, $how)
                             : _related($ctx, $urn, $_[0]{input}, $how);
        },
        __typename    => 'CorpUser',
    };
}

# WeaklyTypedAspectsResolver: the aspects asked for that the user has, in
# the entity registry's order; corpUserKey always (the key GMS adds).
# Payloads as JacksonDataCodec writes the record (the .pdl's field order).
sub _aspects {
    my ($ctx, $urn, $name, $args) = @_;

    my $input = ref $args->{input} eq 'HASH' ? $args->{input} : {};
    my $names = ref $input->{aspectNames} eq 'ARRAY' ? $input->{aspectNames}
                                                      : [];
    my %want = map { $_ => 1 } @$names;
    my @have = ([corpUserKey => { username => $name }],
                _user_aspects($ctx->{state}, $ctx->{state}{users}{$urn}));

    return [ map {
        my ($aspect, $payload) = @$_;
        { aspectName => $aspect, __typename => 'RawAspect',
          payload => _payload($payload) }
    } grep { !@$names || $want{ $_->[0] } } @have ];
}

# A user's aspects but its key, [name, payload] each, in the entity
# registry's order: none for a deleted user (or none in users()).
sub _user_aspects {
    my ($state, $user) = @_;
    $user //= {};
    return () if $user->{deleted};

    my @have;
    push @have, [corpUserStatus => {
                     status => $user->{status},
                     lastModified => {
                         actor => $state->{caller},
                         time  => $user->{time}
                                  // $state->{users_time} // 0 } }]
        if defined $user->{status};
    push @have, [status => { removed => _bool($user->{removed}) }]
        if exists $user->{removed};
    push @have, [origin => { type => 'EXTERNAL',
                             externalType => $user->{oauth} }]
        if $user->{oauth};
    push @have, [subTypes => { typeNames => [_sub_types($user)] }]
        if _sub_types($user);
    return @have;
}

# the subTypes' typeNames of a user: createServiceAccount's, or
# ServiceAccountService's (metadata-io) for an OAuth user
sub _sub_types {
    my ($user) = @_;
    return $user->{service_account} ? ('SERVICE_ACCOUNT')
         : $user->{oauth}           ? ('SERVICE')
         :                            ();
}

# scrollAcrossEntities over the users' search index (see the top)
sub _scroll {
    my ($ctx, $args) = @_;

    my $in = ref $args->{input} eq 'HASH' ? $args->{input} : {};
    my $flags = ref $in->{searchFlags} eq 'HASH' ? $in->{searchFlags} : {};
    my $count = $in->{count} // 10;
    my $types = ref $in->{types} eq 'ARRAY' ? $in->{types} : [];
    my $from = 0;

    if (defined $in->{scrollId}) {
        ($from) = (MIME::Base64::decode_base64url($in->{scrollId}) // '')
                  =~ /^\{"sort":\[(\d+)\]\}\z/;
        return _failed(message => $GRAPHQL_UNKNOWN, code => 500,
                       type => 'SERVER_ERROR')
            unless defined $from;
    }

    my $users = $ctx->{state}{users} // {};
    my @urns = grep {
        my $user = $users->{$_};
        !$user->{deleted} && _sub_types($user)
        && (!$user->{removed} || ($flags->{includeSoftDeleted} // 0))
        && (!@$types || grep { $_ eq 'CORP_USER' } @$types)
        && _scroll_match($in->{orFilters}, [_sub_types($user)])
    } sort keys %$users;

    my @page = grep { defined } @urns[$from .. $from + $count - 1];

    return {
        nextScrollId  => @page && @page == $count
                         ? encode_base64url('{"sort":[' . ($from + $count)
                                            . ']}')
                         : undef,
        count         => scalar @page,
        total         => scalar @urns,
        searchResults => [ map {
            { entity => { urn => $_, type => 'CORP_USER',
                          __typename => 'CorpUser' },
              __typename => 'SearchResult' }
        } @page ],
        __typename    => 'ScrollResults',
    };
}

# orFilters: any and-group whose every filter is typeNames, EQUAL, one of
# its values among the user's sub-types
sub _scroll_match {
    my ($or, $sub_types) = @_;
    return 1 unless ref $or eq 'ARRAY' && @$or;
    my %have = map { $_ => 1 } @$sub_types;
    for my $and (@$or) {
        my @filters = @{ ref $and eq 'HASH' && $and->{and} || [] };
        return 1 unless grep {
            ($_->{field} // '') ne 'typeNames'
            || ($_->{condition} // 'EQUAL') ne 'EQUAL'
            || !grep { $have{$_} } @{ $_->{values} // [] }
        } @filters;
    }
    return 0;
}

# a record as JSON, its fields in the .pdl's order (status before
# lastModified, actor before time; the others have one field)
sub _payload {
    my ($v) = @_;
    return GmsTest::json_encode($v) unless ref $v eq 'HASH';
    my %rank = (status => 1, lastModified => 2, actor => 3, time => 4,
                type => 1, externalType => 2);
    return '{' . join(',', map {
        GmsTest::json_encode($_) . ':' . _payload($v->{$_})
    } sort { ($rank{$a} // 9) <=> ($rank{$b} // 9) || $a cmp $b } keys %$v)
    . '}';
}

# corpGroup(urn) as CorpGroupType and CorpGroupMapper answer it.
sub _corp_group {
    my ($ctx, $args, $how) = @_;

    my $urn = $args->{urn} // '';
    my $m = $ctx->{state}{memberships} // {};
    return undef if exists $m->{$urn} && !defined $m->{$urn};

    my ($name) = $urn =~ /^urn:li:corpGroup:(.+)\z/s;
    return {
        urn           => $urn,
        type          => 'CORP_GROUP',
        name          => $name // $urn,
        exists        => _bool(_exists($ctx, $urn)),
        relationships => sub { _related($ctx, $urn, $_[0]{input}, $how) },
        __typename    => 'CorpGroup',
    };
}

# role(urn) as RoleType.batchLoad and RoleMapper answer it: never null.
sub _role {
    my ($ctx, $args, $how) = @_;

    my $urn = $args->{urn} // '';
    my ($id) = $urn =~ /^urn:li:\w+:(.+)\z/s;
    return {
        urn           => $urn,
        type          => 'ROLE',
        id            => $id // $urn,
        relationships => sub { _related($ctx, $urn, $_[0]{input}, $how) },
        __typename    => 'Role',
    };
}

# entity(urn) as EntityResolver answers it: the loader of the URN's
# entity type (EntityTypeResolver; DataHubRoleType for a dataHubRole),
# here only the Entity interface's urn, type and relationships.
sub _entity {
    my ($ctx, $args, $how) = @_;

    my $urn = $args->{urn} // '';
    my %type = (corpuser => ['CORP_USER', 'CorpUser'],
                corpGroup => ['CORP_GROUP', 'CorpGroup'],
                dataHubRole => ['DATAHUB_ROLE', 'DataHubRole']);
    my ($kind) = $urn =~ /^urn:li:(\w+):./s;
    my $t = $type{ $kind // '' };
    return _failed(message => $GRAPHQL_UNKNOWN, code => 500,
                   type => 'SERVER_ERROR') unless $t;
    return {
        urn           => $urn,
        type          => $t->[0],
        relationships => sub { _related($ctx, $urn, $_[0]{input}, $how) },
        __typename    => $t->[1],
    };
}

# relationships(input) as EntityRelationshipsResultResolver answers it
# from the graph (see the top).
sub _related {
    my ($ctx, $urn, $input, $how) = @_;

    $input = {} unless ref $input eq 'HASH';
    my $start = _is_int($input->{start}) ? $input->{start} : 0;
    my $count = _is_int($input->{count}) && $input->{count} <= $GRAPH_MAX
                ? $input->{count} : $GRAPH_DEFAULT;
    my $direction = $input->{direction} // '';
    my $types = ref $input->{types} eq 'ARRAY' ? $input->{types} : [];

    my $graph = $direction eq 'INCOMING'
                ? _memo($ctx, 'incoming', [qw(memberships users)],
                        sub { _incoming($ctx->{state}) })
                : $ctx->{state}{memberships} // {};
    my $mine = $graph->{$urn} // {};

    my @all = map {
        my $type = $_;
        map { [$type, $_] } @{ $mine->{$type} // [] };
    } @$types;

    my $last = $start + $count - 1 < $#all ? $start + $count - 1 : $#all;
    my @page = map {
        my ($type, $other) = @$_;
        my ($etype, $typename) =
            $other =~ /^urn:li:corpGroup:/ ? ('CORP_GROUP', 'CorpGroup')
            : $other =~ /^urn:li:dataHubRole:/ ? ('DATAHUB_ROLE', 'DataHubRole')
            : ('CORP_USER', 'CorpUser');
        { type => $type, direction => $direction, created => undef,
          entity => { urn => $other, type => $etype,
                      __typename => $typename },
          __typename => 'EntityRelationship' }
    } @all[$start .. $last];

    return { start => $start, count => scalar @page,
             total => $how->{total} // scalar @all, relationships => \@page,
             __typename => 'EntityRelationshipsResult' };
}

# The memberships turned around: { GROUP or ROLE => { TYPE => [member
# URN...] } }, members sorted, a user deleted in users() no member.
sub _incoming {
    my ($state) = @_;
    my $m = $state->{memberships} // {};
    my %in;

    for my $member (sort keys %$m) {
        next unless defined $m->{$member};
        my $user = ($state->{users} // {})->{$member};
        next if $user && $user->{deleted};
        for my $type (keys %{ $m->{$member} }) {
            push @{ $in{$_}{$type} }, $member for @{ $m->{$member}{$type} // [] };
        }
    }

    return \%in;
}


# --- policies and privileges --------------------------------------------------

# A policy as PolicyInfoPolicyMapper maps it: Boolean! fields true or false,
# lists absent from the policy null.
sub _policy {
    my ($p) = @_;
    my $a = $p->{actors} // {};
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
            resourceOwners      => _bool($a->{resourceOwners}),
            resourceOwnersTypes => undef,
            allUsers            => _bool($a->{allUsers}),
            allGroups           => _bool($a->{allGroups}),
            __typename          => 'ActorFilter',
        },
        __typename  => 'Policy',
    };
}

# listPolicies as ListPoliciesResolver answers it: start and count as asked
# (defaults 0 and 20), total the number of policies, policies in the order
# given (PolicyFetcher's search order).
sub _list_policies {
    my ($ctx, $args, $how) = @_;

    my $input = ref $args->{input} eq 'HASH' ? $args->{input} : {};
    my $start = $input->{start} // 0;
    my $count = $input->{count} // 20;
    return _failed(message => $GRAPHQL_UNKNOWN, code => 500,
                   type => 'SERVER_ERROR')
        unless _is_int($start) && _is_int($count) && $start >= 0
               && $count >= 0;

    my @all = @{ $ctx->{state}{policies} // [] };
    my $last = $start + $count - 1 < $#all ? $start + $count - 1 : $#all;

    return { start => $start, count => $count,
             total => $how->{total} // scalar @all,
             policies => [ @all[$start .. $last] ],
             __typename => 'ListPoliciesResult' };
}

# getGrantedPrivileges as GetGrantedPrivilegesResolver answers it.
sub _granted {
    my ($ctx, $args) = @_;

    my $state = $ctx->{state};
    my $input = ref $args->{input} eq 'HASH' ? $args->{input} : {};
    my $actor = $input->{actorUrn} // '';

    return _failed(fixture =>
                   'graphql-error-getGrantedPrivileges-other-actor.json')
        if defined $state->{only_self} && $actor ne $state->{only_self};

    return { privileges => $state->{granted}{$actor} // [],
             __typename => 'Privileges' };
}


# --- token management ---------------------------------------------------------

# createAccessToken as CreateAccessTokenResolver and StatefulTokenService
# make one: a JWT (claims actorType, actorId, type, version, jti, sub, exp,
# iss), its id hash(token + salt), createdAt now, expiresAt createdAt plus
# the duration (none for NO_EXPIRY), ownerUrn the caller; the metadata is
# loaded again by its urn (GmsGraphQLEngine's AccessToken.metadata), so it
# carries every field.  The stand-in does not check the caller's
# privileges (MANAGE_ACCESS_TOKENS, or GENERATE_PERSONAL_ACCESS_TOKENS for
# oneself, MANAGE_SERVICE_ACCOUNTS): misbehave(graphql_error => 1) gives
# their refusal.
#
# type SERVICE_ACCOUNT (DataHub 1.4+, commit 61dda29b "feat(service
# accounts)", PR 15972): the actor must be a service account, a corpuser
# whose subTypes aspect names SERVICE_ACCOUNT (users({URN =>
# {service_account => 1}}) or createServiceAccount), else the resolver's
# IllegalArgumentException, 400-coded BAD_REQUEST "The specified URN is not
# a service account: URN"; the JWT's type claim is SERVICE_ACCOUNT (its
# actorType USER, TokenType.SERVICE_ACCOUNT).  DataHubAccessTokenInfo has
# no type: listAccessTokens lists the token as any other (actorUrn the
# service account, ownerUrn the caller); tokens() marks it token_type =>
# 'SERVICE_ACCOUNT', which nothing serves.
#
# With access_tokens (start), GMS "Next" (PR 19222, "feat(auth): disable
# non-expiring access tokens by default"; auth.graphql's
# CreateAccessTokenInput gains durationIso: String and its duration is no
# longer required): exactly one of duration and durationIso, resolved by
# AccessTokenDurationPolicy against AccessTokenConfiguration
# (authentication.accessTokens: allowedDurations, default
# PT1H,P1D,P7D,P30D,P90D,P180D,P365D compared in milliseconds, and
# allowNoExpiry, default false); a refusal is its IllegalArgumentException,
# DataHubDataFetcherExceptionHandler's 400 BAD_REQUEST with the message
# (the shapes of datahub-project/datahub's AccessTokenDurationPolicy.java,
# AccessTokenConfiguration.java and IsoDurationParserTest.java).  Without
# it, a durationIso is graphql-java's ValidationError, as GMS up to
# 1.7.0.1 answers.
sub _create {
    my ($ctx, $args) = @_;

    my $state = $ctx->{state};
    my $in = $args->{input};
    my $policy = $state->{access_tokens};

    # graphql-java's coercion of the variable: an input field the schema
    # lacks (ValuesResolver: InputMapDefinesTooManyFieldsException) is
    # named before any resolver runs; durationIso is in the schema from
    # "Next" on
    for my $field (sort keys %{ ref $in eq 'HASH' ? $in : {} }) {
        next if $field =~ /^(?:type|actorUrn|duration|name|description)\z/
                || ($policy && $field eq 'durationIso');
        return _whole(_validation_error(
            "Variable 'input' has an invalid value: The variables input "
            . "contains a field name '$field' that is not defined for input "
            . "object type 'CreateAccessTokenInput' "));
    }

    return _whole(_validation_error(
        "Variable 'input' has an invalid value: CreateAccessTokenInput "
        . "needs type PERSONAL or SERVICE_ACCOUNT, actorUrn, duration "
        . "(AccessTokenDuration) and name"))
        unless ref $in eq 'HASH'
               && ($in->{type} // '') =~ /^(?:PERSONAL|SERVICE_ACCOUNT)\z/
               && defined $in->{actorUrn} && !ref $in->{actorUrn}
               && defined $in->{name} && !ref $in->{name}
               && (defined $in->{duration} || $policy)
               && (!defined $in->{duration}
                   || (!ref $in->{duration}
                       && exists $DURATION_MS{ $in->{duration} }))
               && !ref $in->{durationIso};

    if ($in->{type} eq 'SERVICE_ACCOUNT') {
        my $account = $state->{users}{ $in->{actorUrn} } // {};
        return _failed(message => 'The specified URN is not a service '
                                  . "account: $in->{actorUrn}",
                       code => 400, type => 'BAD_REQUEST')
            unless $account->{service_account} && !$account->{deleted};
    }

    my $ms = $DURATION_MS{ $in->{duration} // '' };
    if ($policy) {
        my $refused;
        ($ms, $refused) = _token_duration($policy, $in->{duration},
                                          $in->{durationIso});
        return _failed(message => $refused, code => 400,
                       type => 'BAD_REQUEST')
            if defined $refused;
    }

    my $now = int(Time::HiRes::time() * 1000);
    my ($user) = $in->{actorUrn} =~ /^urn:li:corpuser:(.+)\z/;
    $user //= $in->{actorUrn};

    my $claims = '{"actorType":"USER","actorId":' . GmsTest::json_encode($user)
        . ',"type":"' . $in->{type} . '","version":"2","jti":"'
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
    $token->{token_type} = 'SERVICE_ACCOUNT'
        if $in->{type} eq 'SERVICE_ACCOUNT';

    push @{ $ctx->{parts}{changes}{added} }, $token;
    _store($ctx, 'changes');
    GmsTest::Events::append($ctx->{dir},
                            GmsTest::Events::token_put($token, new => 1));

    return { accessToken => $jwt, __typename => 'AccessToken',
             metadata => { %$token, type => 'ACCESS_TOKEN',
                           __typename => 'AccessTokenMetadata' } };
}

# authentication.accessTokens of application.yaml ("Next", PR 19222):
# AccessTokenConfiguration's defaults, or the test's
sub _access_tokens {
    my ($opt) = @_;
    return undef unless $opt;
    my $allowed = $opt->{allowed} // 'PT1H,P1D,P7D,P30D,P90D,P180D,P365D';
    return { allowed => [ split /,/, $allowed ],
             allow_no_expiry => $opt->{allow_no_expiry} ? 1 : 0 };
}

# DataHub's IsoDurationParser.parseToMillis, as its tests
# (IsoDurationParserTest) show it: P[nY][nM][nW][nD][T[nH][nM][nS]],
# either case, a month 30 days, a year 365; blank, zero or anything else
# an IllegalArgumentException (its message is this stand-in's: the
# parser's source is not stored)
sub _iso_ms {
    my ($iso) = @_;
    my @m = ($iso // '') =~ /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?
                              (?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?\z/xi
        or return;
    return if !grep { defined } @m;
    my @secs = (365 * 86400, 30 * 86400, 7 * 86400, 86400, 3600, 60, 1);
    my $ms = 0;
    $ms += 1000 * ($m[$_] // 0) * $secs[$_] for 0 .. $#secs;
    return $ms || undef;
}

# AccessTokenDurationPolicy.resolveExpiresInMs: (milliseconds or undef for
# never, undef) or (undef, the IllegalArgumentException's message), its
# messages as at datahub-project/datahub 75bb3500 (the list is
# List.toString's)
sub _token_duration {
    my ($policy, $duration, $iso) = @_;
    my $list = '[' . join(', ', @{ $policy->{allowed} }) . ']';
    my %allowed = map { (_iso_ms($_) // 0) => 1 } @{ $policy->{allowed} };

    return (undef, 'Exactly one of duration or durationIso must be provided '
                   . 'when creating an access token')
        if defined $duration == defined $iso;

    if (defined $iso) {
        my $ms = _iso_ms($iso);
        return (undef, "Invalid ISO-8601 duration: '$iso'") unless $ms;
        return (undef, "Access token duration '$iso' is not allowed. Choose "
                       . 'a value from ACCESS_TOKEN_ALLOWED_DURATIONS '
                       . "(currently: $list).")
            unless $allowed{$ms};
        return ($ms, undef);
    }

    if ($duration eq 'NO_EXPIRY') {
        return (undef, undef) if $policy->{allow_no_expiry};
        return (undef, 'Never-expiring access tokens (NO_EXPIRY) cannot be '
                       . 'created because ACCESS_TOKEN_ALLOW_NO_EXPIRY is '
                       . 'false. Use a finite duration from '
                       . "ACCESS_TOKEN_ALLOWED_DURATIONS (currently: $list), "
                       . 'or set ACCESS_TOKEN_ALLOW_NO_EXPIRY=true to allow '
                       . 'NO_EXPIRY. Existing never-expire tokens continue to '
                       . 'work.');
    }

    my $ms = $DURATION_MS{$duration};
    return (undef, "Access token duration $duration is not allowed. Choose "
                   . 'a value from ACCESS_TOKEN_ALLOWED_DURATIONS '
                   . "(currently: $list).")
        unless $allowed{$ms};
    return ($ms, undef);
}

# createServiceAccount(input: {displayName, description}) as
# CreateServiceAccountResolver (DataHub 1.4+): a corpuser
# urn:li:corpuser:service_<UUID> with corpUserKey, corpUserInfo and the
# subTypes aspect [SERVICE_ACCOUNT]; the answer's name is that username
# (buildServiceAccount), type CORP_USER, createdBy the caller.
sub _create_service_account {
    my ($ctx, $args) = @_;

    my $state = $ctx->{state};
    my $in = ref $args->{input} eq 'HASH' ? $args->{input} : {};
    my $id = 'service_' . join '-', map { sprintf '%0*x', $_, int rand 16**$_ }
                                        8, 4, 4, 4, 12;
    my $urn = "urn:li:corpuser:$id";
    my $now = int(Time::HiRes::time() * 1000);

    $state->{users}{$urn} = { service_account => 1,
                              displayName => $in->{displayName} // $id,
                              description => $in->{description} };
    _store($ctx, 'users');
    GmsTest::Events::append($ctx->{dir}, _user_events($state, {},
                            { $urn => $state->{users}{$urn} }));

    return { urn => $urn, type => 'CORP_USER', name => $id,
             displayName => $in->{displayName},
             description => $in->{description},
             createdBy => $state->{caller}, createdAt => $now,
             updatedAt => undef, __typename => 'ServiceAccount' };
}

# deleteServiceAccount(urn) as DeleteServiceAccountResolver: a service
# account's entity deleted (users() marks it deleted: entityExists false,
# ActorContext.isActive false); its tokens stay listed.  Anything else is
# the resolver's 400 "The specified URN is not a service account: URN".
sub _delete_service_account {
    my ($ctx, $args) = @_;

    my $urn = $args->{urn} // '';
    my $account = $ctx->{state}{users}{$urn};
    return _failed(message => "The specified URN is not a service account: "
                              . $urn,
                   code => 400, type => 'BAD_REQUEST')
        unless $account && $account->{service_account}
               && !$account->{deleted};

    my $was = { %$account };
    $account->{deleted} = 1;
    _store($ctx, 'users');
    GmsTest::Events::append($ctx->{dir}, _user_events($ctx->{state},
                            { $urn => $was }, { $urn => $account }));

    return JSON::PP::true();
}

# revokeAccessToken(tokenId) as RevokeAccessTokenResolver: true, or for an
# id GMS does not have the handler's catch-all (the fixture)
sub _revoke {
    my ($ctx, $args) = @_;

    my $id = $args->{tokenId};
    return _failed(fixture => 'graphql-error-revokeAccessToken-unknown-id.json')
        if !defined $id || ref $id || !_token_ids($ctx)->{$id};
    my @events = GmsTest::Events::token_delete(_token_ids($ctx)->{$id});

    my $changes = $ctx->{parts}{changes};
    my $n = @{ $changes->{added} };
    $changes->{added} = [ grep { $_->{id} ne $id } @{ $changes->{added} } ];
    $changes->{removed}{$id} = 1 if $n == @{ $changes->{added} };
    _store($ctx, 'changes');
    GmsTest::Events::append($ctx->{dir}, @events);

    return JSON::PP::true();
}

# getAccessTokenMetadata(token) as GetAccessTokenMetadataResolver: the token
# hashed with GMS's salt, its entity loaded (listed in the search index or
# not); a token GMS does not have ends in the handler's catch-all
# (batchLoad's null, then getData())
sub _metadata {
    my ($ctx, $args) = @_;

    my $state = $ctx->{state};
    my $token = $args->{token};
    my $id = defined $token && !ref $token
             ? GmsTest::sha256_b64($token . $state->{salt}) : '';
    my $found = _token_ids($ctx)->{$id};

    return _failed(message => $GRAPHQL_UNKNOWN, code => 500,
                   type => 'SERVER_ERROR')
        unless $found;

    return { %$found, type => 'ACCESS_TOKEN',
             __typename => 'AccessTokenMetadata' };
}


1;

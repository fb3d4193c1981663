#!/usr/bin/perl

# The stand-in GMS itself (t/lib/GmsTest/GraphQL.pm), where no test of
# gms-token reaches it: several root fields and aliases in one query,
# arguments as literals, entityExists against the entity store (a token
# unlisted by the search index, a revoked one, users), corpUser's status,
# exists and aspects as GMS answers them, relationships INCOMING to a
# group and a role, paged, service accounts and their tokens (DataHub
# 1.4+), OAuth users scrolled by their sub-type (1.3+), a GMS that ignores start, Elasticsearch's result window, the
# complexity limit, the request counter and GMS's latency; the Events
# API (GmsTest::Events): the MCL events each change appends, offsets,
# limit, a poll that waits without holding up its worker, retention's
# gap, a bad offsetId or topic, 401, 403 and 404.  Without nginx or
# Redis: raw HTTP to the stand-in.

use strict;
use warnings;

use JSON::PP ();
use MIME::Base64 qw(decode_base64url);
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::GraphQL;
use GmsTest::HTTP;

my $ALICE = 'urn:li:corpuser:alice';
my $BOB   = 'urn:li:corpuser:bob';
my $CAROL = 'urn:li:corpuser:carol';
my $GONE  = 'urn:li:corpuser:gone';
my $GROUP = 'urn:li:corpGroup:eng';
my $ROLE  = 'urn:li:dataHubRole:Editor';

sub token {
    my ($id, %more) = @_;
    return { urn => "urn:li:dataHubAccessToken:$id", id => $id,
             actorUrn => $ALICE, ownerUrn => $ALICE, name => $id,
             createdAt => 1_000, expiresAt => 2_000_000_000_000, %more };
}

my $gms = GmsTest::GraphQL->start(
    tokens => [ token('listed'), token('hidden', unlisted => 1),
                token('bobs', actorUrn => $BOB, ownerUrn => $BOB) ],
    users => { $BOB => { status => 'SUSPENDED' }, $CAROL => { removed => 1 },
               $GONE => { deleted => 1 } },
    memberships => {
        $ALICE => { IsMemberOfGroup => [$GROUP], IsMemberOfRole => [$ROLE] },
        $BOB   => { IsMemberOfNativeGroup => [$GROUP] },
        $CAROL => { IsMemberOfGroup => [$GROUP] },
        $GONE  => { IsMemberOfGroup => [$GROUP] },
        $GROUP => { IsMemberOfRole => [$ROLE] },
    });

# POSTs a query; the answer decoded (and the raw body, the time it took)
sub ask_at {
    my ($stand_in, $query) = @_;
    my $res = GmsTest::HTTP::request(
        $stand_in->port, 'POST', '/api/graphql',
        { 'Content-Type' => 'application/json',
          Authorization => 'Bearer pat' },
        GmsTest::json_encode({ query => $query, variables => {} }));
    return eval { GmsTest::json_decode($res->{body}) };
}

sub uri {
    my ($s) = @_;
    $s =~ s/([^A-Za-z0-9_.~-])/sprintf '%%%02X', ord $1/ge;
    return $s;
}

sub ask {
    my ($query, $vars) = @_;
    my $t0 = time;
    my $res = GmsTest::HTTP::request(
        $gms->port, 'POST', '/api/graphql',
        { 'Content-Type' => 'application/json' },
        GmsTest::json_encode({ query => $query, variables => $vars // {} }));
    my $doc = eval { GmsTest::json_decode($res->{body}) };
    return wantarray ? ($doc, $res->{body}, time - $t0) : $doc;
}


subtest 'several root fields, aliases, variables and literals' => sub {
    my ($doc, $body) = ask(
        'query($u0: String!, $u1: String!) { e0: entityExists(urn: $u0) '
        . 'e1: entityExists(urn: $u1) __typename '
        . 'list: listAccessTokens(input: {start: 0, count: 5, filters: []}) '
        . '{ total tokens { id } } }',
        { u0 => $ALICE, u1 => 'urn:li:corpuser:nobody' });
    is($body, '{"data":{"e0":true,"e1":false,"__typename":"Query",'
              . '"list":{"total":2,"tokens":[{"id":"listed"},{"id":"bobs"}]}},'
              . '"extensions":{}}',
       'each field under its alias, in the order asked');

    ($doc, $body) = ask('{ bad: entityExists(urn: "no urn") '
                        . 'good: entityExists(urn: "urn:li:corpuser:alice") }');
    is_deeply($doc->{data}, { bad => undef, good => JSON::PP::true() },
              'a failed field is null, the others answered');
    is_deeply($doc->{errors}[0]{path}, ['bad'], "the error's path: the alias");

    $doc = ask('{ nosuch }');
    like($doc->{errors}[0]{message}, qr/FieldUndefined\@\[nosuch\]/,
         'a field the schema lacks: the validation error, no data');
    ok(!exists $doc->{data}, '... no data');
};


subtest 'entityExists: the entity store, not the search index' => sub {
    my %want = (
        'urn:li:dataHubAccessToken:listed'  => 1,
        'urn:li:dataHubAccessToken:hidden'  => 1,
        'urn:li:dataHubAccessToken:missing' => 0,
        $ALICE => 1, $BOB => 1, $CAROL => 1, $GONE => 0, $GROUP => 1,
        'urn:li:corpuser:nobody' => 0,
    );
    my @urns = sort keys %want;
    my $doc = ask('query(' . join(', ', map { "\$u$_: String!" } 0 .. $#urns)
                  . ') { ' . join(' ', map { "e$_: entityExists(urn: \$u$_)" }
                                  0 .. $#urns) . ' }',
                  { map { ("u$_" => $urns[$_]) } 0 .. $#urns });
    is_deeply({ map { $urns[$_] => $doc->{data}{"e$_"} ? 1 : 0 } 0 .. $#urns },
              \%want, 'tokens listed or not, known users unless deleted');

    $doc = ask('{ listAccessTokens(input: {start: 0, count: 10}) '
               . '{ total tokens { id } } }');
    is_deeply([ map { $_->{id} } @{ $doc->{data}{listAccessTokens}{tokens} } ],
              [qw(listed bobs)], 'an unlisted token is not listed');
    is($doc->{data}{listAccessTokens}{total}, 2, '... nor counted');

    $gms->revoke('listed');
    $doc = ask('{ a: entityExists(urn: "urn:li:dataHubAccessToken:listed") '
               . 'listAccessTokens(input: {start: 0, count: 10}) '
               . '{ total } }');
    ok(!$doc->{data}{a}, 'revoke(): the token is gone from the store');
    is($doc->{data}{listAccessTokens}{total}, 1, '... and from the listing');
    is_deeply([ sort map { $_->{id} } @{ $gms->tokens } ], [qw(bobs hidden)],
              '... and from tokens()');
    $gms->tokens([ token('listed'), token('hidden', unlisted => 1),
                   token('bobs', actorUrn => $BOB, ownerUrn => $BOB) ]);
};


subtest 'corpUser: status, exists, aspects' => sub {
    my $sel = '{ urn username status exists aspects(input: {aspectNames: '
              . '["corpUserKey", "corpUserStatus", "status"]}) '
              . '{ aspectName payload } }';
    my $doc = ask("query(\$a: String!, \$b: String!, \$c: String!, "
                  . "\$d: String!) { a: corpUser(urn: \$a) $sel "
                  . "b: corpUser(urn: \$b) $sel c: corpUser(urn: \$c) $sel "
                  . "d: corpUser(urn: \$d) $sel }",
                  { a => $ALICE, b => $BOB, c => $CAROL, d => $GONE });
    my %aspects = map {
        my $u = $doc->{data}{$_};
        ($_ => { map { $_->{aspectName} => GmsTest::json_decode($_->{payload}) }
                 @{ $u->{aspects} } })
    } qw(a b c d);

    is_deeply([ @{ $doc->{data}{a} }{qw(username status)} ], ['alice', undef],
              'an active user: no status');
    is_deeply($aspects{a}, { corpUserKey => { username => 'alice' } },
              '... only the key aspect');
    is($doc->{data}{b}{status}, 'SUSPENDED', 'suspended: CorpUser.status');
    is($aspects{b}{corpUserStatus}{status}, 'SUSPENDED',
       '... and the corpUserStatus aspect');
    ok(exists $aspects{b}{corpUserStatus}{lastModified}{time},
       '... with its lastModified');
    is_deeply($aspects{c}{status}, { removed => JSON::PP::true() },
              'removed: the status aspect says so');
    ok($doc->{data}{c}{exists}, '... and the user still exists');
    ok(defined $doc->{data}{d}, 'deleted: corpUser is still an object');
    ok(!$doc->{data}{d}{exists}, '... whose exists is false');
    is_deeply($aspects{d}, { corpUserKey => { username => 'gone' } },
              '... and whose only aspect is the key GMS adds');
    is_deeply([ map { $_->{aspectName} } @{ $doc->{data}{b}{aspects} } ],
              [qw(corpUserKey corpUserStatus)],
              "aspects in the registry's order");

    my $users = $gms->users;
    $gms->users({ %$users, $CAROL => { error => 1 } });
    my $two = '{ a: corpUser(urn: "urn:li:corpuser:alice") { urn } '
              . 'c: corpUser(urn: "urn:li:corpuser:carol") { urn } }';
    $doc = ask($two);
    is_deeply($doc->{data}, { a => undef, c => undef },
              'a user the mapper fails on: every user of the request null');
    is_deeply([ map { $_->{path}[0] } @{ $doc->{errors} } ], [qw(a c)],
              '... an error each');
    is(ask('{ a: corpUser(urn: "urn:li:corpuser:alice") { urn } }')
       ->{data}{a}{urn}, $ALICE, '... asked alone, the others answer');
    $gms->users($users);
};


subtest 'OAuth users: their aspects, scrollAcrossEntities by sub-type' => sub {
    my $users = $gms->users;
    my $iss = 'https://idp.example.test';
    my @oauth = map { "urn:li:corpuser:__oauth_idp_example_test_$_" }
                qw(a b c d);
    $gms->users({ %$users, $oauth[0] => { oauth => $iss },
                  $oauth[1] => { oauth => $iss, status => 'SUSPENDED' },
                  $oauth[2] => { oauth => $iss, removed => 1 },
                  $oauth[3] => { oauth => $iss, deleted => 1 },
                  'urn:li:corpuser:service_1' => { service_account => 1 } });

    my $doc = ask('{ corpUser(urn: "' . $oauth[0] . '") { aspects(input: '
                  . '{aspectNames: ["origin", "subTypes"]}) '
                  . '{ aspectName payload } } }');
    is_deeply([ map { [ $_->{aspectName}, $_->{payload} ] }
                @{ $doc->{data}{corpUser}{aspects} } ],
              [ [origin => '{"type":"EXTERNAL","externalType":"' . $iss
                           . '"}'],
                [subTypes => '{"typeNames":["SERVICE"]}'] ],
              "ServiceAccountService's origin and subTypes");

    my $q = 'query($s: String, $soft: Boolean) { scrollAcrossEntities('
            . 'input: {types: [CORP_USER], query: "*", count: 2, '
            . 'scrollId: $s, orFilters: [{and: [{field: "typeNames", '
            . 'values: ["SERVICE"]}]}], searchFlags: {includeSoftDeleted: '
            . '$soft}}) { nextScrollId count total searchResults { entity '
            . '{ urn type } } } }';
    my $page = ask($q, { soft => JSON::PP::true() })
               ->{data}{scrollAcrossEntities};
    is_deeply([ map { $_->{entity}{urn} } @{ $page->{searchResults} } ],
              [ @oauth[0, 1] ], 'a full page: the first two, by URN');
    is($page->{total}, 3, 'total: the hard-deleted one is not indexed');
    ok(defined $page->{nextScrollId}, '... and a scroll id');
    $page = ask($q, { s => $page->{nextScrollId},
                      soft => JSON::PP::true() })->{data}{scrollAcrossEntities};
    is_deeply([ map { $_->{entity}{urn} } @{ $page->{searchResults} } ],
              [ $oauth[2] ], 'the next: the soft-removed one');
    ok(!defined $page->{nextScrollId}, '... short: no scroll id');
    $page = ask($q, {})->{data}{scrollAcrossEntities};
    is($page->{total}, 2, 'without includeSoftDeleted: not the removed one');
    ok(ask($q, { s => 'bogus' })->{errors}, 'a bad scroll id: an error');
    $gms->users($users);
};


subtest 'relationships INCOMING to a group and a role, paged' => sub {
    my $rel = 'relationships(input: {types: $types, direction: INCOMING, '
              . 'start: $start, count: 2}) { start count total '
              . 'relationships { type entity { urn type } } }';
    my @seen;
    for my $start (0, 2) {
        my $doc = ask('query($g: String!, $types: [String!]!, $start: Int) '
                      . "{ corpGroup(urn: \$g) { $rel } }",
                      { g => $GROUP, start => $start,
                        types => [qw(IsMemberOfGroup IsMemberOfNativeGroup)] });
        my $page = $doc->{data}{corpGroup}{relationships};
        is($page->{total}, 3, "start $start: total 3 (gone is not a member)");
        push @seen, map { "$_->{type} $_->{entity}{urn}" }
                    @{ $page->{relationships} };
    }
    is_deeply(\@seen, [ "IsMemberOfGroup $ALICE", "IsMemberOfGroup $CAROL",
                        "IsMemberOfNativeGroup $BOB" ],
              "the group's members, type by type, each sorted");

    my $doc = ask('{ role(urn: "urn:li:dataHubRole:Editor") { urn type '
                  . 'relationships(input: {types: ["IsMemberOfRole"], '
                  . 'direction: INCOMING}) { total relationships '
                  . '{ entity { urn type } } } } }');
    is($doc->{data}{role}{type}, 'ROLE', 'role(urn): a Role');
    is_deeply([ map { "$_->{entity}{type} $_->{entity}{urn}" }
                @{ $doc->{data}{role}{relationships}{relationships} } ],
              [ "CORP_GROUP $GROUP", "CORP_USER $ALICE" ],
              "the role's members: groups and users");
};


subtest 'service accounts and their tokens (DataHub 1.4+)' => sub {
    my $doc = ask('mutation { createServiceAccount(input: {displayName: '
                  . '"ingest"}) { urn type name } }');
    my $account = $doc->{data}{createServiceAccount};
    like($account->{urn}, qr/^urn:li:corpuser:service_[0-9a-f-]{36}\z/,
         'createServiceAccount: a corpuser service_<UUID>');

    my $create = 'mutation($input: CreateAccessTokenInput!) '
                 . '{ createAccessToken(input: $input) { accessToken '
                 . 'metadata { id actorUrn ownerUrn type } } }';
    my %input = (type => 'SERVICE_ACCOUNT', actorUrn => $account->{urn},
                 duration => 'ONE_DAY', name => 'ingest');
    $doc = ask($create, { input => \%input });
    my $made = $doc->{data}{createAccessToken};
    is($made->{metadata}{actorUrn}, $account->{urn}, 'a token of the account');
    my ($claims) = $made->{accessToken} =~ /^[^.]+\.([^.]+)\./;
    is(GmsTest::json_decode(decode_base64url($claims))->{type},
       'SERVICE_ACCOUNT', "the JWT's type claim");
    my ($listed) = grep { $_->{id} eq $made->{metadata}{id} }
                   @{ ask('{ listAccessTokens(input: {start: 0, count: 10}) '
                          . '{ tokens { id type } } }')
                      ->{data}{listAccessTokens}{tokens} };
    is_deeply($listed, { id => $made->{metadata}{id}, type => 'ACCESS_TOKEN' },
              'listed as any other token');

    $doc = ask($create, { input => { %input, actorUrn => $ALICE } });
    is($doc->{errors}[0]{extensions}{code}, 400,
       'a personal user is no service account: 400');
    is($doc->{data}{createAccessToken}, undef, '... no token');

    $doc = ask('mutation($u: String!) { deleteServiceAccount(urn: $u) }',
               { u => $account->{urn} });
    ok($doc->{data}{deleteServiceAccount}, 'deleteServiceAccount');
    ok(!ask('query($u: String!) { entityExists(urn: $u) }',
            { u => $account->{urn} })->{data}{entityExists},
       '... the account no longer exists');
    ok(grep({ $_->{id} eq $made->{metadata}{id} } @{ $gms->tokens }),
       '... its token is still there');
    $gms->tokens([ token('listed'), token('hidden', unlisted => 1),
                   token('bobs', actorUrn => $BOB, ownerUrn => $BOB) ]);
};


subtest 'paging: start ignored, spans of createdAt, the result window, the complexity limit' => sub {
    my $page = sub {
        ask('query($s: Int) { listAccessTokens(input: {start: $s, count: 1}) '
            . '{ start total tokens { id } } }', { s => $_[0] })
    };
    $gms->misbehave(ignore_start => 1, total => 1_000_000_000);
    is_deeply($page->(5)->{data}{listAccessTokens},
              { start => 5, total => 1_000_000_000,
                tokens => [ { id => 'listed' } ] },
              'ignore_start: the first page at any start, the total claimed');
    $gms->misbehave;

    my $small = GmsTest::GraphQL->start(tokens => [ token('x') ],
                                        max_result_window => 10);
    my $res = GmsTest::HTTP::request(
        $small->port, 'POST', '/api/graphql',
        { 'Content-Type' => 'application/json' },
        GmsTest::json_encode({ query => '{ listAccessTokens(input: '
                               . '{start: 9, count: 2}) { total } }' }));
    like($res->{body}, qr/"An unknown error occurred\."/,
         'max_result_window: a page past it fails');
    $small->stop;

    # spans of createdAt, as gms-token lists past Elasticsearch's window:
    # the tokens of the span, in the listing's order (expiresAt descending)
    my @many = map { token("t$_", createdAt => 1_000 + $_ % 7 * 10,
                           expiresAt => 5_000_000 - $_) } 1 .. 40;
    my $spans = GmsTest::GraphQL->start(tokens => \@many);
    for my $span ([1_010, 1_030, 'GREATER_THAN_OR_EQUAL_TO',
                   'LESS_THAN_OR_EQUAL_TO'],
                  [1_010, 1_030, 'GREATER_THAN', 'LESS_THAN'],
                  [0, 1_000, 'GREATER_THAN', 'LESS_THAN_OR_EQUAL_TO']) {
        my ($lo, $hi, $from, $to) = @$span;
        my $ok = { GREATER_THAN => sub { $_[0] > $lo },
                   GREATER_THAN_OR_EQUAL_TO => sub { $_[0] >= $lo } }->{$from};
        my $under = { LESS_THAN => sub { $_[0] < $hi },
                      LESS_THAN_OR_EQUAL_TO => sub { $_[0] <= $hi } }->{$to};
        my @want = map { $_->{id} }
                   sort { $b->{expiresAt} <=> $a->{expiresAt} }
                   grep { $ok->($_->{createdAt}) && $under->($_->{createdAt}) }
                   @many;
        my $res = GmsTest::HTTP::request(
            $spans->port, 'POST', '/api/graphql',
            { 'Content-Type' => 'application/json' },
            GmsTest::json_encode({
                query => 'query($in: ListAccessTokenInput!) { '
                         . 'listAccessTokens(input: $in) { total tokens '
                         . '{ id } } }',
                variables => { in => { start => 0, count => 100, filters => [
                    { field => 'createdAt', values => ["$lo"],
                      condition => $from },
                    { field => 'createdAt', values => ["$hi"],
                      condition => $to } ] } } }));
        my $got = GmsTest::json_decode($res->{body})->{data}{listAccessTokens};
        is_deeply([ map { $_->{id} } @{ $got->{tokens} } ], \@want,
                  "createdAt $from $lo, $to $hi: " . scalar(@want)
                  . ' tokens, in the listing\'s order');
    }
    $spans->stop;

    my $big = 'query { ' . join(' ', map {
        "c$_: corpUser(urn: \"urn:li:corpuser:u$_\") { urn username status "
        . 'exists aspects { aspectName payload } }'
    } 1 .. 300) . ' }';
    like(ask($big)->{errors}[0]{message},
         qr/^maximum query complexity exceeded \d+ > 2000\z/,
         "a query above GMS's complexity limit is refused whole");
};


subtest 'the fixtures: what GMS answers, byte for byte' => sub {
    my $page = GmsTest::json_decode(
        GmsTest::GraphQL->fixture('listAccessTokens-page.json'));
    my %by = map { $_->{name} => $_ }
             @{ $page->{data}{listAccessTokens}{tokens} };
    my $datahub = GmsTest::GraphQL->start(
        tokens => [ $by{'ci-pipeline'},
                    { %{ $by{'ingestion-prod'} }, unlisted => 1 } ],
        users => { $BOB => { status => 'SUSPENDED',
                             time => 1_790_812_800_000 },
                   $CAROL => { removed => 1 },
                   'urn:li:corpuser:dave' => { deleted => 1 } },
        memberships => {
            (map { $_ => { IsMemberOfGroup => [$GROUP] } }
                 $ALICE, $BOB, $CAROL),
            'urn:li:corpuser:erin' => { IsMemberOfNativeGroup => [$GROUP] },
        });

    for my $name (qw(entityExists-batch corpUser-status-batch
                     corpGroup-members-incoming)) {
        my $res = GmsTest::HTTP::request(
            $datahub->port, 'POST', '/api/graphql',
            { 'Content-Type' => 'application/json' },
            GmsTest::json_encode(GmsTest::json_decode(
                GmsTest::GraphQL->fixture("$name.request.json"))));
        is("$res->{body}\n", GmsTest::GraphQL->fixture("$name.json"),
           "$name.request.json: $name.json");
    }
    $datahub->stop;
};


subtest 'count and delay' => sub {
    $gms->clear_requests;
    ask('{ a: corpUser(urn: "urn:li:corpuser:alice") { urn } '
        . 'b: corpUser(urn: "urn:li:corpuser:bob") { urn } }');
    ask('{ entityExists(urn: "urn:li:corpuser:alice") }');
    is($gms->count('corpUser'), 1, 'count: requests holding the field');
    is($gms->count('entityExists'), 1, '... each field its own');
    is($gms->count, 2, '... and all requests');

    $gms->delay(0.4);
    my (undef, undef, $took) = ask('{ entityExists(urn: "urn:li:x:y") }');
    cmp_ok($took, '>=', 0.4, 'delay: every answer waits');
    note(sprintf 'answered in %.3f s', $took);

    # in_flight: a named operation's requests in the stand-in's hands at
    # once, from arrival to their answers' due time
    $gms->clear_requests;
    ask('query one { entityExists(urn: "urn:li:x:y") }') for 1 .. 2;
    is($gms->in_flight('one'), 1, 'in_flight: one after the other, 1');
    $gms->delay(1);
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        ask('query two { entityExists(urn: "urn:li:x:y") }');
        POSIX::_exit(0);
    }
    GmsTest::wait_until(sub { $gms->count('entityExists') == 3 });
    ask('query two { entityExists(urn: "urn:li:x:z") }');
    waitpid $pid, 0;
    is($gms->in_flight('two'), 2, '... two asked at once, 2');
    is($gms->in_flight('three'), 0, '... none asked, 0');
    $gms->delay(0);
};

# --- the Events API ----------------------------------------------------------

my $TOPIC = 'MetadataChangeLog_Versioned_v1';

subtest 'Events API' => sub {
    # one worker: a poll that waits must not hold up its other requests
    my $dh = GmsTest::GraphQL->start(
        token => 'pat', workers => 1, events_api => 'on',
        tokens => [ token('old', expiresAt => undef) ],
        policies => [ { urn => 'urn:li:dataHubPolicy:p',
                        privileges => ['MANAGE_ACCESS_TOKENS'],
                        actors => { users => [$ALICE] } } ]);
    my $auth = { Authorization => 'Bearer pat' };

    # GET poll; the answer decoded, and the time it took
    my $poll = sub {
        my ($query, $headers) = @_;
        my $t0 = time;
        my $res = GmsTest::HTTP::request($dh->port, 'GET',
            "/openapi/v1/events/poll?topic=$TOPIC&$query", $headers // $auth,
            undef, timeout => 20);
        $res->{doc} = eval { GmsTest::json_decode($res->{body}) };
        $res->{took} = time - $t0;
        return $res;
    };
    my $offsets = sub {
        GmsTest::json_decode(MIME::Base64::decode_base64($_[0]{doc}{offsetId}))
    };
    my $mcl = sub {
        [ map { GmsTest::json_decode($_->{value}) } @{ $_[0]{doc}{events} } ]
    };

    my $end = $poll->('pollTimeoutSeconds=1');
    is($end->{status}, 200, 'no offsetId: 200');
    is_deeply([ sort keys %{ $end->{doc} } ], [qw(count events offsetId)],
              '... offsetId, count, events (no null errorMessage)');
    is_deeply([ @{ $end->{doc} }{qw(count events)} ], [0, []],
              '... no event, from the end: count 0');
    is_deeply($offsets->($end), { "$TOPIC-0" => 0, "$TOPIC-1" => 0 },
              '... offsetId: base64 of {"<topic>-<partition>": next}');
    cmp_ok($end->{took}, '>=', 1, '... after the whole poll timeout');

    # a token made and revoked through GraphQL
    my $doc = ask_at($dh, 'mutation { createAccessToken(input: {type: '
        . 'PERSONAL, actorUrn: "' . $ALICE . '", duration: ONE_HOUR, name: '
        . '"n"}) { metadata { id } } }');
    my $id = $doc->{data}{createAccessToken}{metadata}{id};
    ask_at($dh, 'mutation { revokeAccessToken(tokenId: "' . $id . '") }');

    my $four = $poll->("pollTimeoutSeconds=5&limit=4&offsetId="
                       . uri($end->{doc}{offsetId}));
    is($four->{doc}{count}, 4, 'limit 4 of 4 events: answered at once');
    my @e = @{ $mcl->($four) };
    is_deeply([ map { [ $_->{entityType}, $_->{entityUrn}{string},
                        $_->{changeType}, $_->{aspectName}{string} ] } @e ],
              [ [ 'dataHubAccessToken', "urn:li:dataHubAccessToken:$id",
                  'UPSERT', 'dataHubAccessTokenKey' ],
                [ 'dataHubAccessToken', "urn:li:dataHubAccessToken:$id",
                  'UPSERT', 'dataHubAccessTokenInfo' ],
                [ 'dataHubAccessToken', "urn:li:dataHubAccessToken:$id",
                  'DELETE', 'dataHubAccessTokenInfo' ],
                [ 'dataHubAccessToken', "urn:li:dataHubAccessToken:$id",
                  'DELETE', 'dataHubAccessTokenKey' ] ],
              'createAccessToken: key and info UPSERT; revokeAccessToken: '
              . 'DELETE of both (Avro JSON unions)');
    my $generic = $e[1]{aspect}{'com.linkedin.pegasus2avro.mxe.GenericAspect'};
    is($generic->{contentType}, 'application/json',
       'the aspect: GenericAspect');
    my $info = GmsTest::json_decode($generic->{value});
    is_deeply([ @$info{qw(actorUrn ownerUrn name)} ],
              [ $ALICE, 'urn:li:corpuser:datahub', 'n' ],
              '... its value DataHubAccessTokenInfo as JSON text');
    ok($info->{expiresAt} > $info->{createdAt}
       && $e[1]{created}{'com.linkedin.pegasus2avro.common.AuditStamp'}{time}
          > 0,
       '... createdAt, expiresAt, and the record\'s created time');
    is($e[2]{aspect}, undef, 'a DELETE has no aspect');
    is($four->{doc}{events}[0]{contentType}, 'application/json',
       'each event {contentType, value}');
    my $moved = $offsets->($four);
    is($moved->{"$TOPIC-0"} + $moved->{"$TOPIC-1"}, 4,
       '... the offsets moved by the events read (a partition per URN)');

    # a poll waits; its worker answers others meanwhile; an event that
    # comes during the wait is in its answer
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        my $r = $poll->("pollTimeoutSeconds=10&limit=1&offsetId="
                        . uri($four->{doc}{offsetId}));
        POSIX::_exit(($r->{doc}{count} // -1) == 1
                     && $r->{took} < 10 ? 0 : 1);
    }
    sleep 0.3;
    my $res = GmsTest::HTTP::request($dh->port, 'POST', '/api/graphql',
        { %$auth, 'Content-Type' => 'application/json' },
        GmsTest::json_encode({ query => '{ entityExists(urn: "x") }' }));
    ok($res->{status} == 200 && waitpid($pid, POSIX::WNOHANG()) == 0,
       'a poll waiting: the same worker answers a GraphQL request');
    $dh->revoke('old');
    waitpid $pid, 0;
    is($?, 0, '... and the poll answers the event that came (limit 1)');

    # the other changes
    my $from = $poll->('pollTimeoutSeconds=0');
    is($from->{doc}{count}, 0, 'pollTimeoutSeconds 0: nothing read');
    $dh->users({ $ALICE => { status => 'SUSPENDED' },
                 $GONE => { deleted => 1 } });
    $dh->policies([]);
    $dh->memberships({ $BOB => { IsMemberOfGroup => [$GROUP] } });
    my $rest = $poll->("pollTimeoutSeconds=1&offsetId="
                       . uri($from->{doc}{offsetId}));
    my %seen = map {
        my $a = $_->{aspect}
                ? $_->{aspect}{'com.linkedin.pegasus2avro.mxe.GenericAspect'}
                : undef;
        ("$_->{entityUrn}{string} $_->{changeType} $_->{aspectName}{string}"
         => $a ? GmsTest::json_decode($a->{value}) : undef)
    } @{ $mcl->($rest) };
    is($seen{"$ALICE UPSERT corpUserStatus"}{status}, 'SUSPENDED',
       'users(): corpUserStatus SUSPENDED');
    ok(exists $seen{"$GONE DELETE corpUserKey"},
       '... a user deleted: corpUserKey DELETE');
    ok(exists $seen{'urn:li:dataHubPolicy:p DELETE dataHubPolicyInfo'},
       'policies(): a policy gone, dataHubPolicyInfo DELETE');
    is_deeply($seen{"$BOB UPSERT groupMembership"}, { groups => [$GROUP] },
              'memberships(): groupMembership');

    # partitions: by the entity URN (Kafka's murmur2 of the key)
    my %part;
    push @{ $part{ $_->{json}{entityUrn}{string} } }, $_->{partition}
        for grep { $_->{json} } @{ $dh->events };
    ok(!grep({ my %p = map { $_ => 1 } @$_; keys %p > 1 } values %part)
       && (grep { $_->[0] == 0 } values %part)
       && (grep { $_->[0] == 1 } values %part),
       'each URN on one partition; both partitions used');

    # limit, retention and its gap
    $dh->inject_event("x$_") for 1 .. 3;
    my $two = $poll->("pollTimeoutSeconds=5&limit=2&offsetId="
                      . uri($rest->{doc}{offsetId}));
    is_deeply([ map { $_->{value} } @{ $two->{doc}{events} } ], [qw(x1 x2)],
              'inject_event: its bytes as the value; limit 2 of 3');
    $dh->inject_event("y$_") for 1 .. 3;
    $dh->retention(keep => 2);
    my $gap = $poll->("pollTimeoutSeconds=1&offsetId="
                      . uri($two->{doc}{offsetId}));
    is_deeply([ map { $_->{value} } @{ $gap->{doc}{events} } ], [qw(y2 y3)],
              'retention keep 2: the kept offset reset to the earliest left');
    my ($was, $now) = ($offsets->($two), $offsets->($gap));
    cmp_ok($now->{"$TOPIC-0"} + $now->{"$TOPIC-1"} - $was->{"$TOPIC-0"}
           - $was->{"$TOPIC-1"}, '>', $gap->{doc}{count},
           '... the offsets moved further than the events read: a gap');
    $dh->retention(max_age => 0);
    is(scalar @{ $dh->events }, 0, 'retention max_age 0: every event gone');
    $dh->retention;

    $dh->inject_event('z', count => 5001);
    my $capped = $poll->("pollTimeoutSeconds=10&limit=9999&offsetId="
                         . uri($gap->{doc}{offsetId}));
    is($capped->{doc}{count}, 5000, 'limit capped at 5000: answered at once');

    # refusals
    my $bad = $poll->('offsetId=' . uri('bm90IGpzb24='));
    is($bad->{status}, 500, 'an offsetId not base64 JSON: 500');
    is_deeply($bad->{doc}, { errorMessage => 'An unexpected error occurred: '
              . 'Failed to decode and parse offsetId: bm90IGpzb24=' },
              '... ExternalEventsOffsetCodec\'s message, alone');
    is($poll->('offsetId=%21%21')->{status}, 500, '... not base64 either');
    my $other = GmsTest::HTTP::request($dh->port, 'GET',
        '/openapi/v1/events/poll?topic=Nope', $auth);
    like($other->{body}, qr/"errorMessage":"An unexpected error occurred: (?x:
        )Unsupported events topic provided: Nope"/, 'an unknown topic: 500');
    is($poll->('pollTimeoutSeconds=1', {})->{status}, 401,
       'no Authorization: 401, as for /api/graphql');
    $dh->events_api('403');
    my $refused = $poll->('pollTimeoutSeconds=1');
    is_deeply([ $refused->{status}, $refused->{body} ], [403, ''],
              "events_api '403': 403, no body");
    $dh->events_api('404');
    is($poll->('pollTimeoutSeconds=1')->{status}, 404,
       "events_api '404': a GMS without the Events API");
    is(GmsTest::HTTP::request($gms->port, 'GET',
           "/openapi/v1/events/poll?topic=$TOPIC", {})->{status}, 404,
       '... the stand-in\'s default');
    is(ask_at($dh, '{ entityExists(urn: "urn:li:corpuser:nobody") }')
       ->{data}{entityExists},
       JSON::PP::false(), '... GraphQL as ever');
    cmp_ok($dh->polls, '>=', 12, 'polls(): the polls received');
    $dh->stop;
};

done_testing();

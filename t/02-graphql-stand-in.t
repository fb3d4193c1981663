#!/usr/bin/perl

# The stand-in GMS itself (t/lib/GmsTest/GraphQL.pm), where no test of
# gms-token reaches it: several root fields and aliases in one query,
# arguments as literals, entityExists against the entity store (a token
# unlisted by the search index, a revoked one, users), corpUser's status,
# exists and aspects as GMS answers them, relationships INCOMING to a
# group and a role, paged, service accounts and their tokens (DataHub
# 1.4+), OAuth users scrolled by their sub-type (1.3+), a GMS that ignores start, Elasticsearch's result window, the
# complexity limit, the request counter and GMS's latency.  Without
# nginx or Redis: raw HTTP to the stand-in.

use strict;
use warnings;

use MIME::Base64 qw(decode_base64url);
use Test::More;
use Time::HiRes qw(time);

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
    $gms->delay(0);
};

done_testing();

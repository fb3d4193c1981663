#!/usr/bin/perl

# gms-token create (personal tokens, and DataHub 1.4's service accounts'
# with --type SERVICE_ACCOUNT), revoke --gms, list and check-salt:
# DataHub's own token API (createAccessToken, revokeAccessToken,
# listAccessTokens, getAccessTokenMetadata; GmsTest::GraphQL stands in
# for GMS, its shapes
# from DataHub's auth.graphql and resolvers and t/fixtures/datahub) with
# the cache kept in step, on a real redis-server.  What a user sees: the
# token once on stdout and nowhere else, the hash the edge will read, the
# id published on <prefix>invalidate (seen by a subscriber of the test's
# own), the answers of check-salt and list, and every failure (GraphQL
# errors, 401, a dead GMS, a wrong salt) as one line, a defined exit code
# and Redis as it was.  With nginx and the module built, a created token
# passes a real edge at once.

use strict;
use warnings;

use Test::More;
use IO::Select;
use IO::Socket::INET;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Edge;
use GmsTest::GraphQL;
use GmsTest::HTTP;
use GmsTest::Messages qw($GRAPHQL_UNAUTHORIZED $GRAPHQL_UNKNOWN);
use GmsTest::Tool qw(run_tool gms_account hash_of refused_run);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $redis = GmsTest::Redis->start;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

my $dir = GmsTest::tempdir();

# the account's token (Manage All Access Tokens) and GMS's salt
my $SIGNATURE = 'c2VjcmV0LWdtcy1tYW5hZ2Utc2lnbmF0dXJlLTQ0';
my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnbXMtdG9rZW4tNDQifQ.'
             . $SIGNATURE;
my $token_file = gms_account($SECRET, $dir);

my $SALT = 'edge-and-gms-salt-44';
my $salt_file = "$dir/salt";
GmsTest::write_file($salt_file, "$SALT\n");

my $alice = 'urn:li:corpuser:alice';
my $bob = 'urn:li:corpuser:bob';

my $gms = GmsTest::GraphQL->start(token => $SECRET, salt => $SALT);
my $dead = GmsTest::GraphQL->dead_url;

my @printed;    # every token the tool printed: never on stderr, argv

# The account's options, for the stand-in unless another $url is given.
sub gms_args {
    my ($url) = @_;
    return GmsTest::Tool::gms_args($url // $gms->url, $token_file);
}

sub create {
    my (%o) = @_;
    my $res = run_tool('', 'create', gms_args($o{gms}),
                       '--actor', $o{actor} // $alice,
                       '--name', $o{name} // 'ci-pipeline',
                       ($o{type} ? ('--type', $o{type}) : ()),
                       ($o{duration} ? ('--duration', $o{duration}) : ()),
                       ($o{description}
                        ? ('--description', $o{description}) : ()),
                       @{ $o{salt} // ['--salt-file', $salt_file] },
                       @{ $o{redis} // \@at });
    push @printed, $res->{out} =~ /^(\S+)\n\z/ if $res->{rc} == 0;
    return $res;
}

sub id_of {
    my ($token, $salt) = @_;
    return GmsTest::sha256_b64($token . ($salt // $SALT));
}

sub graphql_asked {
    return [ map { my ($f) = ($_->{json}{query} // '') =~ /\{\s*(\w+)/; $f }
             @{ $gms->requests } ];
}

# A raw subscriber of <prefix>invalidate: RESP by hand.
sub subscriber {
    my ($port, $channel) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                  Timeout => 5)
        or die "subscribe: $!\n";
    $s->autoflush(1);
    print $s "*2\r\n\$9\r\nSUBSCRIBE\r\n\$" . length($channel) . "\r\n"
             . "$channel\r\n";
    my $sub = { sock => $s, buf => '' };
    my ($kind) = _messages($sub, 1, 5);
    die "subscribe: no confirmation\n"
        unless $kind && $kind->[0] eq 'subscribe';
    return $sub;
}

# The messages published since the last call: [kind, channel, payload]...
sub _messages {
    my ($sub, $want, $timeout) = @_;
    my @out;
    my $sel = IO::Select->new($sub->{sock});
    my $end = time + $timeout;
    while (1) {
        while ($sub->{buf}
               =~ s/\A\*3\r\n((?:\$(\d+)\r\n.*?\r\n|:\d+\r\n){3})//s)
        {
            my $body = $1;
            my @f;
            while ($body =~ /\G(?:\$(\d+)\r\n|:(\d+)\r\n)/gc) {
                if (defined $1) {
                    push @f, substr($body, pos($body), $1);
                    pos($body) += $1 + 2;
                } else {
                    push @f, $2;
                }
            }
            push @out, \@f;
        }
        last if @out >= $want;
        my $left = $end - time;
        last if $left <= 0 || !$sel->can_read($left);
        my $n = sysread($sub->{sock}, my $chunk, 65536);
        last unless $n;
        $sub->{buf} .= $chunk;
    }
    return @out;
}

sub published {
    my ($sub) = @_;
    # a PING through the same server after the tool ended: what was
    # published before it has arrived when PING's answer has
    $redis->cmd('PING');
    return [ map { $_->[2] } grep { $_->[0] eq 'message' }
             _messages($sub, 1_000_000, 0.3) ];
}

my $sub = subscriber($redis->port, 'gms:invalidate');


# --- usage and help ---------------------------------------------------------

{
    my $res = run_tool('', '--help');
    like($res->{out}, qr/^  create .*^  list .*^  check-salt /ms,
         'gms-token --help names create, list and check-salt');

    for my $cmd (qw(create list check-salt revoke)) {
        $res = run_tool('', $cmd, '--help');
        is($res->{rc}, 0, "$cmd --help: exit 0");
        like($res->{out}, qr/--gms URL/, "$cmd --help: names --gms");
    }
    like(run_tool('', 'list', '--help')->{out},
         qr/ID  MARK  ACTOR  EXPIRES_AT  NAME/, 'list --help: the format');

    my $before = $redis->dump_all;
    $gms->clear_requests;

    refused_run(run_tool('', 'create', gms_args(), '--actor', $alice, @at), 2,
                qr/--name/, 'create without --name');
    refused_run(run_tool('', 'create', gms_args(), '--name', 'x', @at), 2,
                qr/--actor/, 'create without --actor');
    refused_run(create(duration => 'TWO_WEEKS'), 2, qr/--duration: 'TWO_WEEKS'/,
                'create with a duration DataHub does not have');
    refused_run(create(type => 'SESSION'), 2,
                qr/--type: 'SESSION' is neither PERSONAL nor SERVICE_ACCOUNT/,
                'create --type SESSION: DataHub makes no such token');
    refused_run(run_tool('', 'create', '--actor', $alice, '--name', 'x', @at),
                2, qr/--gms URL is required/, 'create without --gms');
    refused_run(run_tool('', 'create', gms_args(), '--actor', 'alice',
                         '--name', 'x', @at), 2, qr/not a user URN/,
                'create for something not a URN');
    refused_run(run_tool('', 'check-salt', gms_args()), 2, qr/--token-stdin/,
                'check-salt without --token-stdin');
    refused_run(run_tool('', 'revoke', '--gms', $gms->url, 'not-an-id', @at), 2,
                qr/not a token id/, 'revoke --gms of something not an id');

    is_deeply($gms->requests, [], 'GMS was asked nothing');
    $redis->unchanged($before, 'Redis unchanged');
}


# --- create -----------------------------------------------------------------

my $made;

{
    $gms->clear_requests;
    published($sub);

    my $t0 = int(time * 1000);
    my $res = create(duration => 'ONE_MONTH',
                     description => 'Used by the nightly CI job');
    my $t1 = int(time * 1000) + 1;

    is($res->{rc}, 0, 'create: exit 0') or diag($res->{err});
    is($res->{err}, '', 'create: nothing on stderr');
    like($res->{out}, qr/\A[A-Za-z0-9_.-]+\n\z/,
         'create: stdout is the token, one line, nothing else');

    ($made) = $res->{out} =~ /^(\S+)/;
    my $id = id_of($made);

    my $reqs = $gms->requests;
    is(scalar @$reqs, 1, 'create: one request to GMS');
    is($reqs->[0]{header}{authorization}, "Bearer $SECRET",
       "create: with the account's token");
    like($reqs->[0]{json}{query}, qr/^mutation createAccessToken\(/,
         'create: the createAccessToken mutation');
    is_deeply($reqs->[0]{json}{variables},
              { input => { type => 'PERSONAL', actorUrn => $alice,
                           duration => 'ONE_MONTH', name => 'ci-pipeline',
                           description => 'Used by the nightly CI job' } },
              'create: the input of CreateAccessTokenInput');

    my ($listed) = grep { $_->{id} eq $id } @{ $gms->tokens };
    ok($listed, "create: GMS's id is the one the salt gives");
    $listed //= {};

    is_deeply(hash_of($redis, "gms:token:$id"),
              { actor => $alice, type => 'PERSONAL',
                expiresAt => $listed->{expiresAt},
                createdAt => hash_of($redis, "gms:token:$id")->{createdAt} },
              "create: cached: actor, type PERSONAL, DataHub's expiresAt");
    my $created = hash_of($redis, "gms:token:$id")->{createdAt} // 0;
    ok($created >= $t0 && $created <= $t1,
       'create: createdAt is now (for sync --prune\'s grace)');
    is($redis->cmd(PEXPIRETIME => "gms:token:$id"), $listed->{expiresAt},
       'create: the key expires with the token');
    is_deeply(published($sub), [$id],
              'create: the id published on gms:invalidate');

    # NO_EXPIRY, for another user
    $res = create(actor => $bob, name => 'laptop', duration => 'NO_EXPIRY');
    is($res->{rc}, 0, 'create NO_EXPIRY: exit 0');
    my ($forever) = $res->{out} =~ /^(\S+)/;
    is_deeply(hash_of($redis, 'gms:token:' . id_of($forever // '')),
              { actor => $bob, type => 'PERSONAL',
                createdAt => hash_of($redis, 'gms:token:'
                                     . id_of($forever // ''))->{createdAt} },
              'create NO_EXPIRY: no expiresAt');
    is($redis->cmd(PEXPIRETIME => 'gms:token:' . id_of($forever // '')), -1,
       'create NO_EXPIRY: the key never expires');
    ok(!exists $gms->requests->[-1]{json}{variables}{input}{description},
       'create: no description, none sent');

    # ONE_MONTH is the default
    $res = create(name => 'default');
    is($gms->requests->[-1]{json}{variables}{input}{duration}, 'ONE_MONTH',
       'create: ONE_MONTH by default');
}


# --- create refused: nothing printed, nothing cached, nothing left at GMS ---

{
    my $before = $redis->dump_all;
    my $tokens = scalar @{ $gms->tokens };
    $gms->clear_requests;
    published($sub);

    my $res = create(salt => ['--salt', 'not-the-salt']);
    my $why = 'the salt gives the new token the id \S+, GMS gives it \S+: '
              . "the edge's salt is not GMS's.*revoked at GMS and is not "
              . 'printed';
    refused_run($res, 2, qr/$why/, 'create with the wrong salt');
    is_deeply(graphql_asked(), [qw(createAccessToken revokeAccessToken)],
              'wrong salt: the new token revoked at once');
    my $reqs = $gms->requests;
    ok(defined $reqs->[1]{json}{variables}{tokenId}
       && !grep({ $_->{id} eq $reqs->[1]{json}{variables}{tokenId} }
                @{ $gms->tokens }),
       "wrong salt: revoked by GMS's id");
    is(scalar @{ $gms->tokens }, $tokens, 'wrong salt: GMS has no new token');
    $redis->unchanged($before, 'wrong salt: Redis unchanged');
    is_deeply(published($sub), [], 'wrong salt: nothing published');

    my @cases = (
        [ 'a GraphQL error (the resolver\'s 403)', { graphql_error => 1 },
          qr/GraphQL error: \Q$GRAPHQL_UNAUTHORIZED\E/ ],
        [ 'HTTP 401', { status => 401 }, qr/HTTP 401/ ],
        [ 'a body that is not JSON', { body => '<html>oops</html>' },
          qr/not a JSON object/ ],
    );
    for my $case (@cases) {
        my ($what, $how, $like) = @$case;
        $gms->misbehave(%$how);
        refused_run(create(), 4, $like, "create: $what");
        $gms->misbehave;
    }
    refused_run(create(gms => $dead), 4, qr/api\/graphql: .*(?i:connect)/,
                'create: a dead GMS');

    $gms->clear_requests;
    refused_run(create(redis => ['--redis',
                                '127.0.0.1:' . GmsTest::free_port()]),
                3, qr/cannot connect/, 'create: Redis down');
    is_deeply($gms->requests, [], 'Redis down: GMS was not asked to make '
              . 'a token nobody could use');

    is(scalar @{ $gms->tokens }, $tokens, 'refused: GMS has no new token');
    $redis->unchanged($before, 'refused: Redis unchanged');
    is_deeply(published($sub), [], 'refused: nothing published');
}


# --- create --duration ISO-8601: durationIso (DataHub "Next", PR 19222) ----

{
    # GMS "Next": durationIso, and AccessTokenConfiguration's defaults
    # (PT1H,P1D,P7D,P30D,P90D,P180D,P365D; no NO_EXPIRY)
    my $next = GmsTest::GraphQL->start(token => $SECRET, salt => $SALT,
                                       access_tokens => {});

    my $t0 = int(time * 1000);
    my $res = create(gms => $next->url, duration => 'P30D');
    is($res->{rc}, 0, 'P30D to GMS Next: exit 0') or diag($res->{err});
    is($res->{err}, '', 'P30D: nothing on stderr');
    my ($token) = $res->{out} =~ /^(\S+)\n\z/;
    is_deeply($next->requests->[-1]{json}{variables}{input},
              { type => 'PERSONAL', actorUrn => $alice, name => 'ci-pipeline',
                durationIso => 'P30D' },
              'P30D: sent as durationIso, without duration');
    my ($listed) = grep { $_->{id} eq id_of($token // '') } @{ $next->tokens };
    ok($listed && $listed->{expiresAt} >= $t0 + 30 * 86_400_000,
       'P30D: GMS made a token of 30 days');
    is($redis->cmd(PEXPIRETIME => 'gms:token:' . id_of($token // '')),
       ($listed // {})->{expiresAt}, 'P30D: cached, expiring with it');

    $res = create(gms => $next->url, duration => 'pt1h');
    is($res->{rc}, 0, 'pt1h (either case) to GMS Next: exit 0')
        or diag($res->{err});

    # GMS's allow-list: one line, GMS's exit status, nothing made or kept
    my $before = $redis->dump_all;
    my $tokens = scalar @{ $next->tokens };
    published($sub);

    refused_run(create(gms => $next->url, duration => 'PT12H'), 4,
                qr/--duration PT12H: GMS does not allow it \(ACCESS_TOKEN_ALLOWED_DURATIONS, ACCESS_TOKEN_ALLOW_NO_EXPIRY\): Access token duration 'PT12H' is not allowed\. Choose a value from ACCESS_TOKEN_ALLOWED_DURATIONS \(currently: \[PT1H, P1D, P7D, P30D, P90D, P180D, P365D\]\)\.$/,
                'PT12H to GMS Next: not in its allowed durations');
    refused_run(create(gms => $next->url, duration => 'NO_EXPIRY'), 4,
                qr/--duration NO_EXPIRY: GMS does not allow it .*ACCESS_TOKEN_ALLOW_NO_EXPIRY is false/,
                'NO_EXPIRY to GMS Next: never-expiring tokens off by default');
    refused_run(create(gms => $next->url, duration => 'P2D'), 4,
                qr/--duration P2D: GMS does not allow it/,
                'P2D to GMS Next: refused');

    is(scalar @{ $next->tokens }, $tokens, 'refused: GMS Next made nothing');
    $redis->unchanged($before, 'refused: Redis unchanged');
    is_deeply(published($sub), [], 'refused: nothing published');

    # the allow-list is GMS's, not the tool's
    my $open = GmsTest::GraphQL->start(token => $SECRET, salt => $SALT,
                                       access_tokens => {
                                           allowed => 'PT12H',
                                           allow_no_expiry => 1 });
    $res = create(gms => $open->url, duration => 'PT12H');
    is($res->{rc}, 0, 'PT12H where GMS allows it: exit 0') or diag($res->{err});
    $res = create(gms => $open->url, duration => 'NO_EXPIRY');
    is($res->{rc}, 0, 'NO_EXPIRY where ACCESS_TOKEN_ALLOW_NO_EXPIRY=true: '
                      . 'exit 0') or diag($res->{err});
    is($open->requests->[-1]{json}{variables}{input}{duration}, 'NO_EXPIRY',
       'NO_EXPIRY: sent as the AccessTokenDuration');
    $open->stop;

    # GMS up to 1.7.0.1: no durationIso; the AccessTokenDuration of the same
    # length instead, else one line
    $gms->clear_requests;
    $res = create(duration => 'P1W');
    is($res->{rc}, 0, 'P1W to GMS 1.7.0.1: exit 0') or diag($res->{err});
    is($res->{err}, '', 'P1W: nothing on stderr');
    my $reqs = $gms->requests;
    is_deeply([ map { $_->{json}{variables}{input} } @$reqs ],
              [ { type => 'PERSONAL', actorUrn => $alice,
                  name => 'ci-pipeline', durationIso => 'P1W' },
                { type => 'PERSONAL', actorUrn => $alice,
                  name => 'ci-pipeline', duration => 'ONE_WEEK' } ],
              'P1W: durationIso refused by the schema, then ONE_WEEK');

    $before = $redis->dump_all;
    $tokens = scalar @{ $gms->tokens };
    $gms->clear_requests;
    refused_run(create(duration => 'P2D'), 4,
                qr/--duration P2D: this GMS takes no ISO-8601 duration \(durationIso: DataHub after 1\.7\.0\.1\) and no AccessTokenDuration is that long/,
                'P2D to GMS 1.7.0.1: no AccessTokenDuration that long');
    is(scalar @{ $gms->requests }, 1, 'P2D: GMS asked once');
    is(scalar @{ $gms->tokens }, $tokens, 'P2D: GMS made nothing');
    $redis->unchanged($before, 'P2D: Redis unchanged');

    # what is no ISO-8601 duration never reaches GMS
    $next->clear_requests;
    for my $bad ('P', 'PT', 'P0D', 'PT0S', '30D', 'P1D1Y', 'PT1S1H', 'P1.5D',
                 'P-1D', 'P1DT', 'P99999999999999999D', 'THREE_YEARS')
    {
        refused_run(create(gms => $next->url, duration => $bad), 2,
                    qr/--duration: '\Q$bad\E' is neither one of ONE_HOUR, .* nor an ISO-8601 duration such as P30D or PT12H/,
                    "--duration $bad: refused before GMS is asked");
    }
    is_deeply($next->requests, [], 'none of them reached GMS');

    $next->stop;
}


# --- service accounts (DataHub 1.4+) ----------------------------------------

{
    my $svc = 'urn:li:corpuser:service_9f3c2a10-4b7e-4d2a-9c1e-0a5b6c7d8e9f';
    $gms->users({ $svc => { service_account => 1 } });
    $gms->clear_requests;
    published($sub);

    my $res = create(type => 'SERVICE_ACCOUNT', actor => $svc,
                     name => 'ingestion', duration => 'ONE_YEAR');
    is($res->{rc}, 0, 'create --type SERVICE_ACCOUNT: exit 0')
        or diag($res->{err});
    like($res->{out}, qr/\A[A-Za-z0-9_.-]+\n\z/, '... the token printed');
    my ($token) = $res->{out} =~ /^(\S+)/;
    my $id = id_of($token // '');

    is_deeply($gms->requests->[0]{json}{variables}{input},
              { type => 'SERVICE_ACCOUNT', actorUrn => $svc,
                duration => 'ONE_YEAR', name => 'ingestion' },
              '... asked of GMS as CreateAccessTokenInput type '
              . 'SERVICE_ACCOUNT');
    my ($listed) = grep { $_->{id} eq $id } @{ $gms->tokens };
    ok($listed && ($listed->{token_type} // '') eq 'SERVICE_ACCOUNT',
       "... GMS made a service account's token, GMS's id");
    my $h = hash_of($redis, "gms:token:$id");
    is_deeply([ @$h{qw(actor type)} ], [$svc, 'SERVICE_ACCOUNT'],
              '... cached: the service account, type SERVICE_ACCOUNT');
    is_deeply(published($sub), [$id], '... its id published');

    # DataHub refuses a token of that type for anyone else
    my $before = $redis->dump_all;
    my $tokens = scalar @{ $gms->tokens };
    refused_run(create(type => 'SERVICE_ACCOUNT', actor => $bob), 4,
                qr/The specified URN is not a service account: \Q$bob\E/,
                'create --type SERVICE_ACCOUNT for a user: GMS refuses');
    $redis->unchanged($before, '... Redis unchanged');
    is(scalar @{ $gms->tokens }, $tokens, '... GMS has no new token');

    # revoked like any other
    $res = run_tool('', 'revoke', gms_args(), $id, @at);
    is($res->{rc}, 0, "revoke --gms of a service account's token: exit 0")
        or diag($res->{err});
    ok(!grep({ $_->{id} eq $id } @{ $gms->tokens }), '... GMS revoked it');
    is($redis->cmd(EXISTS => "gms:token:$id"), 0, '... no longer cached');
    is_deeply(published($sub), [$id], '... its id published');
}


# --- check-salt -------------------------------------------------------------

{
    my $id = id_of($made);
    $gms->clear_requests;

    my $res = run_tool("$made\n", 'check-salt', gms_args(), '--token-stdin',
                       '--salt-file', $salt_file);
    is($res->{rc}, 0, 'check-salt, right salt: exit 0') or diag($res->{err});
    is($res->{out}, "salt right: the token's id is $id, as GMS's (token of "
                    . "$alice)\n", 'check-salt, right salt: says so');
    is($res->{err}, '', 'check-salt: nothing on stderr');
    my $req = $gms->requests->[0];
    like($req->{json}{query}, qr/^query getAccessTokenMetadata\(/,
         'check-salt: asks getAccessTokenMetadata');
    is_deeply($req->{json}{variables}, { token => $made },
              'check-salt: of the token read on stdin');

    $res = run_tool("$made\n", 'check-salt', gms_args(), '--token-stdin');
    my $wrong = id_of($made, '');
    is($res->{rc}, 1, 'check-salt, wrong salt: exit 1');
    is($res->{out}, "salt wrong: it gives the id $wrong, GMS's is $id: the "
                    . "edge refuses every token; give it GMS's salt "
                    . "(authentication.tokenService.salt)\n",
       'check-salt, wrong salt: both ids');

    refused_run(run_tool("eyJub3QiOiJhIHRva2VuIn0.abc.def\n", 'check-salt',
                         gms_args(), '--token-stdin', '--salt', $SALT), 4,
                qr/GraphQL error: \Q$GRAPHQL_UNKNOWN\E/,
                'check-salt of a token GMS does not have');
    refused_run(run_tool("$made\n", 'check-salt', gms_args($dead),
                         '--token-stdin', '--salt', $SALT), 4, qr/graphql/,
                'check-salt: a dead GMS');
    refused_run(run_tool("not a token\n", 'check-salt', gms_args(),
                         '--token-stdin'), 2, qr/not a token/,
                'check-salt: not a token on stdin');

    # the stand-in as the fixture says GMS answers
    my $fx = GmsTest::GraphQL->start(
        tokens => GmsTest::json_decode(GmsTest::GraphQL->fixture(
            'listAccessTokens-page.json'))->{data}{listAccessTokens}{tokens});
    for my $name ('getAccessTokenMetadata',
                  'graphql-error-getAccessTokenMetadata-unknown-token',
                  'revokeAccessToken',
                  'graphql-error-revokeAccessToken-unknown-id')
    {
        my $r = GmsTest::HTTP::request(
            $fx->port, 'POST', '/api/graphql',
            [['Content-Type' => 'application/json']],
            GmsTest::GraphQL->fixture("$name.request.json"));
        is("$r->{status} $r->{body}\n",
           '200 ' . GmsTest::GraphQL->fixture("$name.json"),
           "stand-in: $name.request.json answered with $name.json");
    }
    $fx->stop;
}


# --- revoke --gms -----------------------------------------------------------

{
    my $id = id_of($made);
    $gms->clear_requests;
    published($sub);

    my $res = run_tool('', 'revoke', gms_args(), $id, @at);
    is($res->{rc}, 0, 'revoke --gms: exit 0') or diag($res->{err});
    is("$res->{out}$res->{err}", '', 'revoke --gms: silent');
    is_deeply([ map { [$_->{json}{query} =~ /^mutation (\w+)/,
                       $_->{json}{variables}] } @{ $gms->requests } ],
              [[ 'revokeAccessToken', { tokenId => $id } ]],
              'revoke --gms: GMS told, revokeAccessToken(tokenId: ID)');
    ok(!grep({ $_->{id} eq $id } @{ $gms->tokens }),
       'revoke --gms: GMS no longer has it');
    is($redis->cmd(EXISTS => "gms:token:$id"), 0,
       'revoke --gms: the key deleted');
    is_deeply(published($sub), [$id], 'revoke --gms: the id published');

    # GMS no longer knows it, the cache still has it: left as it was
    $redis->cmd(HSET => "gms:token:$id", actor => $alice);
    my $before = $redis->dump_all;

    refused_run(run_tool('', 'revoke', gms_args(), $id, @at), 4,
                qr/GraphQL error: \Q$GRAPHQL_UNKNOWN\E/,
                'revoke --gms of an id GMS does not have');
    refused_run(run_tool('', 'revoke', gms_args($dead), $id, @at), 4,
                qr/graphql/, 'revoke --gms: a dead GMS');
    $gms->misbehave(status => 401);
    refused_run(run_tool('', 'revoke', gms_args(), $id, @at), 4, qr/HTTP 401/,
                'revoke --gms: 401');
    $gms->misbehave;
    $redis->unchanged($before, 'GMS refused: the key is still there');
    is_deeply(published($sub), [], 'GMS refused: nothing published');

    # without --gms: Redis only, as before
    $gms->clear_requests;
    $res = run_tool('', 'revoke', $id, @at);
    is($res->{rc}, 0, 'revoke without --gms: exit 0');
    is($redis->cmd(EXISTS => "gms:token:$id"), 0,
       'revoke without --gms: the key deleted');
    is_deeply(published($sub), [$id], 'revoke without --gms: published');
    is_deeply($gms->requests, [], 'revoke without --gms: GMS not asked');
    refused_run(run_tool('', 'revoke', $id, @at), 1, qr/is not cached/,
                'revoke without --gms of a token not cached: exit 1');
}


# --- list -------------------------------------------------------------------

{
    my $now = int(time * 1000);
    my $day = 86_400_000;

    my $n = 0;
    my $listed = sub {
        my ($name, $actor, $expires) = @_;
        my $id = id_of("token-of-$name");
        return { urn => "urn:li:dataHubAccessToken:$id", id => $id,
                 actorUrn => $actor, ownerUrn => $actor, name => $name,
                 createdAt => $now - $day + $n++, expiresAt => $expires };
    };

    my %t = (
        ok      => $listed->('ok', $alice, $now + 9 * $day),
        missing => $listed->('missing', $bob, $now + 8 * $day),
        stale   => $listed->('stale', $alice, $now + 7 * $day),
        later   => $listed->('later', $alice, $now + 6 * $day),
        expired => $listed->('expired', $bob, $now - $day),
        never   => $listed->("never\tever \\ after", $alice, undef),
    );
    $gms->tokens([ values %t ]);

    $redis->cmd('FLUSHALL');
    my $cache = sub {
        my ($t, %f) = @_;
        $redis->cmd(HSET => "gms:token:$t->{id}",
                    actor => $f{actor} // $t->{actorUrn},
                    defined $t->{expiresAt}
                    ? (expiresAt => $f{expiresAt} // $t->{expiresAt}) : ());
    };
    $cache->($t{ok});
    $cache->($t{stale}, actor => $bob);
    $cache->($t{later}, expiresAt => $now + 60 * $day);
    $cache->($t{never});
    my $before = $redis->dump_all;

    $gms->clear_requests;
    my $res = run_tool('', 'list', gms_args(), '--page-size', 2, @at);
    is($res->{rc}, 0, 'list: exit 0') or diag($res->{err});
    is($res->{err}, '', 'list: nothing on stderr');

    my $line = sub {
        my ($t, $mark, $name) = @_;
        return join("\t", $t->{id}, $mark, $t->{actorUrn},
                    $t->{expiresAt} // 'never', $name // $t->{name}) . "\n";
    };
    is($res->{out},
       $line->($t{ok}, 'ok') . $line->($t{missing}, 'missing')
       . $line->($t{stale}, 'stale') . $line->($t{later}, 'stale')
       . $line->($t{expired}, 'expired')
       . $line->($t{never}, 'ok', 'never\x09ever \\\\ after'),
       "list: DataHub's order, each token marked; the name escaped");
    is_deeply($gms->pages_asked, [[0, 2], [2, 2], [4, 2]],
              'list: page after page');
    $redis->unchanged($before, 'list: Redis unchanged');

    $res = run_tool('', 'list', gms_args(), '--actor', $bob, @at);
    is($res->{out}, $line->($t{missing}, 'missing')
                    . $line->($t{expired}, 'expired'),
       "list --actor: that user's tokens");
    is_deeply($gms->requests->[-1]{json}{variables}{input}{filters},
              [{ field => 'actorUrn', values => [$bob] }],
              'list --actor: a filter on actorUrn');

    $gms->misbehave(graphql_error => 1);
    refused_run(run_tool('', 'list', gms_args(), @at), 4,
                qr/GraphQL error: \Q$GRAPHQL_UNAUTHORIZED\E/,
                'list: a GraphQL error');
    $gms->misbehave(page => 2, status => 500);
    refused_run(run_tool('', 'list', gms_args(), '--page-size', 2, @at), 4,
                qr/HTTP 500/, 'list: a failed second page, nothing printed');
    $gms->misbehave(token => { id => 'nope' });
    refused_run(run_tool('', 'list', gms_args(), @at), 4, qr/has no id/,
                'list: a token without an id');
    $gms->misbehave;
    refused_run(run_tool('', 'list', gms_args($dead), @at), 4, qr/graphql/,
                'list: a dead GMS');
    $redis->unchanged($before, 'list refused: Redis unchanged');
}


# --- the token passes a real edge at once -----------------------------------

SKIP: {
    skip 'nginx or the module not built (make module)', 5
        unless -x GmsTest::nginx_bin() && -f GmsTest::module_path();

    # service accounts' tokens: DataHub 1.4.0 and later (TokenType)
    my $e = GmsTest::Edge->start(salt => $SALT,
                                 http => 'gms_datahub_version 1.4.0;');
    my $to_edge = ['--redis', '127.0.0.1:' . $e->redis->port];

    my $res = create(name => 'edge', redis => $to_edge);
    is($res->{rc}, 0, 'edge: created') or diag($res->{err});
    my ($token) = $res->{out} =~ /^(\S+)/;

    my $r = $e->get('/entities/x', $token);
    is($r->{status}, 200, 'edge: the new token passes at once');
    is($r->{headers}{'x-gms-actor'}, $alice, 'edge: as its user');

    run_tool('', 'revoke', gms_args(), id_of($token), @$to_edge);
    is($e->get('/entities/x', $token)->{status}, 401,
       'edge: revoked with --gms, refused at once');

    my $svc = 'urn:li:corpuser:service_edge';
    $gms->users({ $svc => { service_account => 1 } });
    $res = create(name => 'svc-edge', type => 'SERVICE_ACCOUNT',
                  actor => $svc, redis => $to_edge);
    ($token) = $res->{out} =~ /^(\S+)/;
    $r = $e->get('/entities/x', $token // '');
    is_deeply([ $r->{status}, $r->{headers}{'x-gms-actor'} ], [200, $svc],
              "edge: a service account's token passes at once, as the "
              . 'account');

    $e->nginx->stop;
}


# --- the token is printed once, on stdout, and nowhere else -----------------

{
    my @leaks;
    for my $run (GmsTest::Tool::runs()) {
        my ($args, $res) = @$run;
        for my $secret ($SIGNATURE, @printed) {
            push @leaks, $args if index($res->{err}, $secret) >= 0;
        }
    }
    is_deeply(\@leaks, [], 'no token on any stderr');
    ok(scalar @printed >= 3, 'tokens were printed');
}

$gms->stop;

done_testing;

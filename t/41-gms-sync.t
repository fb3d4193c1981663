#!/usr/bin/perl

# gms-token sync --gms: the tool asks GMS itself for the list of access
# tokens (POST <gms>/api/graphql, listAccessTokens, page after page) instead
# of reading pages on stdin, against a real redis-server and a stand-in GMS
# (GmsTest::GraphQL, whose shapes come from DataHub's schema and resolver
# and from t/fixtures/datahub).  What GMS receives (the query, the
# variables, the Bearer token), the counts, the hashes with createdAt,
# --prune and its grace for tokens younger than a minute that GMS's entity
# store could not confirm gone (DataHub's search index lags behind a new
# token), none for one it says is gone, and every failure (401, a GraphQL
# error, a bad second page, a timeout, a dead port, a body that is not JSON)
# refused in one line with Redis left byte for byte as it was; a list
# short of its total prunes only what GMS's entity store says is gone.  TLS to GMS (nginx in front of the stand-in): a certificate the
# system's CAs or --gms-ca-file do not verify, or for another name, is
# refused before the token is sent.  The GMS token is never printed nor
# put on a command line.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(time);

use GmsTest;
use GmsTest::Certs;
use GmsTest::GraphQL;
use GmsTest::HTTP;
use GmsTest::Messages qw($GMS_UNAUTHORIZED $GRAPHQL_UNAUTHORIZED
                         $GRAPHQL_UNKNOWN);
use GmsTest::Nginx;
use GmsTest::Tool qw(gms_account gms_args datahub_id listed now_ms hash_of
                     normalized refused_run);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $redis = GmsTest::Redis->start;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

my $dir = GmsTest::tempdir();

# The account's token, as GMS mints them (a JWT); its signature is the part
# that must never leak.
my $SIGNATURE = 'c2VjcmV0LWdtcy1zeW5jLXNpZ25hdHVyZS00MQ';
my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnbXMtdG9rZW4tc3luYyJ9.'
             . $SIGNATURE;
my $token_file = gms_account($SECRET, $dir);

my $now = now_ms();
my $future = $now + 30 * 86_400_000;
my $alice = 'urn:li:corpuser:alice';
my $bob = 'urn:li:corpuser:bob';

# Runs the tool (stdin empty: with --gms nothing is read there); $watch, if
# given, is called with the tool's pid while it runs.  {rc, out, err, took,
# users}: the line of counts of the users' status that sync --gms ends
# with (t/51-inactive-users.t's) is taken out of out into users.
sub run_tool {
    my ($watch, @args) = @_;
    my $t0 = time;
    my $res = GmsTest::Tool::finish_tool(GmsTest::Tool::start_tool('', @args),
                                         $watch);
    $res->{took} = time - $t0;
    $res->{users} = $1 if $res->{out} =~ s/^(checked=[^\n]*\n)//m;
    return $res;
}

# The requests of a stand-in that asked for listAccessTokens (not the
# entityExists of --prune, nor the users' status).
sub listings {
    my ($gms) = @_;
    return [ grep { ($_->{json}{query} // '') =~ /\blistAccessTokens\b/ }
             @{ $gms->requests } ];
}

# Users' privileges are t/42's: here sync --gms leaves them alone.
my @off = ('--privileges', 'off');

# sync from the stand-in, with the account's token, on the test's Redis.
sub sync_from {
    my ($gms, @args) = @_;
    return run_tool(undef, 'sync', gms_args($gms->url, $token_file), @off,
                    @args, @at);
}

sub counts {
    my (%c) = @_;
    return join(' ', map { "$_=" . ($c{$_} // 0) }
                     qw(tokens added updated unchanged expired pruned kept))
           . "\n";
}

sub key_of { return "gms:token:$_[0]{id}" }

# The hash a listed token is cached as.
sub cached_as {
    my ($t) = @_;
    my %h = (actor => $t->{actorUrn}, createdAt => $t->{createdAt});
    $h{expiresAt} = $t->{expiresAt} if defined $t->{expiresAt};
    return \%h;
}

# Every key as DUMP has it, to put the dataset back as it was between
# cases, so that one case's damage does not hide the next one's.
sub snapshot {
    return [ map { [ $_, $redis->cmd(DUMP => $_),
                     $redis->cmd(PEXPIRETIME => $_) ] }
             @{ $redis->cmd(KEYS => '*') } ];
}

sub restore {
    my ($snap) = @_;
    $redis->cmd('FLUSHALL');
    for (@$snap) {
        my ($key, $bytes, $at) = @$_;
        $redis->cmd(RESTORE => $key, $at > 0 ? ($at, $bytes, 'ABSTTL')
                                             : (0, $bytes));
    }
}

sub no_secret {
    my ($res, $title) = @_;
    my $all = $res->{out} . $res->{err};
    ok(index($all, $SECRET) < 0 && index($all, $SIGNATURE) < 0, $title);
}

# a refused run: the GMS token not shown
my $NO_SECRET = sub { no_secret($_[0], 'the GMS token not shown') };

my $fixture_request =
    GmsTest::json_decode(GmsTest::GraphQL->fixture(
        'listAccessTokens-page.request.json'));
my $QUERY = $fixture_request->{query};
my $fixture_page = GmsTest::GraphQL->fixture('listAccessTokens-page.json');
my $fixture_tokens =
    GmsTest::json_decode($fixture_page)->{data}{listAccessTokens}{tokens};

# What GMS received: each a POST of the query with the variables of
# [start, count] pages, JSON, with the account's token (or none).
sub received {
    my ($gms, $pages, $auth, $title) = @_;
    subtest $title => sub {
        my $reqs = listings($gms);
        is_deeply([ map { [ @{ $_->{json}{variables}{input} }{qw(start
                                                                   count)} ] }
                    @$reqs ],
                  $pages, 'the pages asked, in order');
        for my $r (@$reqs) {
            my $what = 'request ' . ($r->{json}{variables}{input}{start}
                                     // '?');
            is("$r->{method} $r->{uri}", 'POST /api/graphql',
               "$what: POST /api/graphql");
            like($r->{header}{'content-type'} // '',
                 qr{^application/json(?:;\s*charset=utf-8)?\z}i,
                 "$what: Content-Type: application/json");
            is($r->{header}{authorization}, $auth, "$what: Authorization");
            is(normalized($r->{json}{query} // ''), normalized($QUERY),
               "$what: the query of the fixture");
            is_deeply([sort keys %{ $r->{json} // {} }],
                      [qw(query variables)], "$what: query and variables");
        }
        is_deeply([ map { $_->{json}{variables} } @$reqs ],
                  [ map { { input => { start => $_->[0], count => $_->[1],
                                       filters => [] } } } @$pages ],
                  'variables: {input: {start, count, filters: []}}');
    };
}


# --- the stand-in answers as the fixtures say GMS does ----------------------

{
    my $gms = GmsTest::GraphQL->start(token => $SECRET,
                                      tokens => [reverse @$fixture_tokens]);
    my $body = GmsTest::json_encode($fixture_request);
    my @json = ('Content-Type' => 'application/json');
    my $post = sub {
        GmsTest::HTTP::request($gms->port, 'POST', '/api/graphql',
                               [@_], $body);
    };

    my $r = $post->([Authorization => "Bearer $SECRET"], [@json]);
    is($r->{status}, 200, 'stand-in: 200');
    is("$r->{body}\n", $fixture_page,
       'stand-in: the fixture request, the fixture page (tokens sorted by '
       . 'expiresAt, count as asked)');

    my $missing = GmsTest::json_decode(GmsTest::GraphQL->fixture(
        'gms-0.13-401-missing-token.http.json'))->{response};
    $r = $post->([@json], [Accept => '*/*']);
    is_deeply([$r->{status}, $r->{headers}{'content-type'}, $r->{body}],
              [401, $missing->{headers}{'Content-Type'}, $missing->{body}],
              "stand-in: no Authorization, Jetty's 401 page");
    $r = $post->([Authorization => 'Bearer nope'], [@json],
                 [Accept => 'application/json']);
    is($r->{status}, 401, 'stand-in: a wrong token, 401');
    is_deeply(GmsTest::json_decode($r->{body}),
              { servlet => 'apiServlet', url => '/api/graphql',
                status => '401',
                message => $GMS_UNAUTHORIZED },
              "stand-in: to Accept: application/json, Jetty's JSON variant");

    $gms->misbehave(graphql_error => 1);
    $r = $post->([Authorization => "Bearer $SECRET"]);
    is("$r->{status} $r->{body}\n",
       '200 ' . GmsTest::GraphQL->fixture(
           'graphql-error-listAccessTokens-unauthorized.json'),
       "stand-in: the resolver's GraphQL error, as the fixture");
    $gms->misbehave;

    $r = GmsTest::HTTP::request($gms->port, 'POST', '/api/graphql',
                                [[Authorization => "Bearer $SECRET"]],
                                '{"variables":{}}');
    is("$r->{status} '$r->{body}'", "400 ''",
       'stand-in: no query, 400 with an empty body');

    $gms->stop;
}


# --- the fixture's page, synced from the stand-in ---------------------------

my $gms = GmsTest::GraphQL->start(token => $SECRET, tokens => $fixture_tokens);

{
    $redis->cmd(SADD => "gms:actor:$alice", 'MANAGE_ACCESS_TOKENS');

    my $res = sync_from($gms);
    is_deeply([@$res{qw(rc out err)}],
              [0, counts(tokens => 4, added => 3, expired => 1), ''],
              "the fixture's page: 4 tokens, 3 added, carol's expired")
        or diag(explain($res));

    received($gms, [[0, 100]], "Bearer $SECRET",
             'one request: start 0, count 100 (the default), the token '
             . 'from the file without its newline');

    for my $t (@$fixture_tokens) {
        my $key = key_of($t);
        if (defined $t->{expiresAt} && $t->{expiresAt} <= $now) {
            is($redis->cmd(EXISTS => $key), 0, "$t->{name}: expired, "
                                                . 'not cached');
            next;
        }
        is_deeply(hash_of($redis, $key), cached_as($t),
                  "$t->{name}: actor, createdAt, expiresAt; no type");
        is($redis->cmd(PEXPIRETIME => $key), $t->{expiresAt} // -1,
           "$t->{name}: the key expires with the token");
    }

    is_deeply($redis->cmd(SMEMBERS => "gms:actor:$alice"),
              ['MANAGE_ACCESS_TOKENS'], 'privileges untouched');
}


# --- 250 tokens, page after page --------------------------------------------

my @all = map {
    my $i = $_;
    listed("sync-$i", actor => 'urn:li:corpuser:user' . $i % 10,
           owner   => $i % 5 == 0 ? 'urn:li:corpuser:datahub' : undef,
           created => $now - 86_400_000 - $i * 1000,
           expires => $i == 249 ? $now - 60_000
                      : $i % 3 == 0 ? undef : $future + $i)
} 0 .. 249;

{
    $redis->cmd('FLUSHALL');
    $redis->cmd(SADD => "gms:actor:$alice", 'MANAGE_ACCESS_TOKENS');
    $gms->tokens(\@all);
    $gms->clear_requests;

    my $res = sync_from($gms);
    is_deeply([@$res{qw(rc out err)}],
              [0, counts(tokens => 250, added => 249, expired => 1), ''],
              '250 tokens in three pages: counts');
    received($gms, [[0, 100], [100, 100], [200, 100]], "Bearer $SECRET",
             'pages at 0, 100, 200, then no more (250 = total)');

    my (%got, %want);
    for my $t (@all[0 .. 248]) {
        $got{$t->{name}} = [ hash_of($redis, key_of($t)),
                             $redis->cmd(PEXPIRETIME => key_of($t)) ];
        $want{$t->{name}} = [ cached_as($t), $t->{expiresAt} // -1 ];
    }
    is_deeply(\%got, \%want, 'every token cached: actor, createdAt, '
                             . 'expiresAt, the key expiry');
    is($redis->cmd(EXISTS => key_of($all[249])), 0, 'the expired one not');
    is($redis->cmd('DBSIZE'), 250, '249 tokens and one privilege set');

    my $state = $redis->dump_all;
    $gms->clear_requests;
    $res = sync_from($gms);
    is($res->{out}, counts(tokens => 250, unchanged => 249, expired => 1),
       'again: every token unchanged');
    $redis->unchanged($state, 'again: Redis as it was');

    $gms->clear_requests;
    $res = sync_from($gms, '--page-size', 60);
    is($res->{out}, counts(tokens => 250, unchanged => 249, expired => 1),
       '--page-size 60: the same tokens');
    received($gms, [ map { [$_ * 60, 60] } 0 .. 4 ], "Bearer $SECRET",
             '--page-size 60: five pages');
    $redis->unchanged($state, '--page-size 60: Redis as it was');

    GmsTest::write_file("$dir/no-newline.token", $SECRET);
    $gms->clear_requests;
    $res = run_tool(undef, 'sync',
                    gms_args($gms->url, "$dir/no-newline.token"), @off, @at);
    is($res->{rc}, 0, 'a token file without a newline');
    is($gms->requests->[0]{header}{authorization}, "Bearer $SECRET",
       'without a newline: the token as it is');

    my $open = GmsTest::GraphQL->start(tokens => \@all);
    $res = run_tool(undef, 'sync', '--gms', $open->url, @off, @at);
    is($res->{out}, counts(tokens => 250, unchanged => 249, expired => 1),
       'no --gms-token-file, GMS without authentication: synced');
    my @auth = grep { exists $_->{header}{authorization} }
               @{ $open->requests };
    is(scalar @auth, 0, 'no --gms-token-file: no Authorization header');
    is(scalar @{ listings($open) }, 3, 'no --gms-token-file: three pages');
    $open->stop;
}


# --- put writes createdAt ---------------------------------------------------

my $put_id = datahub_id('put-just-now');

{
    my $t0 = int(time * 1000);
    my $res = run_tool(undef, 'put', '--id', $put_id, '--actor', $bob, @at);
    my $t1 = int(time * 1000) + 1;
    is($res->{rc}, 0, 'put');
    my $h = hash_of($redis, "gms:token:$put_id");
    ok(defined $h->{createdAt} && $h->{createdAt} =~ /^\d+\z/
       && $h->{createdAt} >= $t0 && $h->{createdAt} <= $t1,
       'put: createdAt is the time of the put, in ms')
        or diag(explain($h));
}


# --- --prune, and its grace for tokens younger than a minute ----------------
#
# The grace is for tokens nothing confirmed gone: entityExists failing
# here (the users' status that sync reads after the tokens asks
# entityExists too: it fails, exit 4, once the tokens are done).  Once
# GMS's entity store answers that they are gone, the young ones are
# pruned too.

{
    my @kept = (@all[5 .. 249],
                listed('brand-new', created => int(time * 1000) - 5_000));
    $gms->tokens(\@kept);

    my $ms = int(time * 1000);
    my %fresh = (
        'ten-seconds'  => [actor => $bob, createdAt => $ms - 10_000],
        'two-minutes'  => [actor => $bob, createdAt => $ms - 120_000],
        'no-createdAt' => [actor => $bob, expiresAt => $future],
    );
    $redis->cmd(HSET => 'gms:token:' . datahub_id($_), @{ $fresh{$_} })
        for sort keys %fresh;
    $redis->cmd(PEXPIREAT => 'gms:token:' . datahub_id('no-createdAt'),
                $future);

    my %before = map { ($_ => hash_of($redis, "gms:token:$_")) }
                 $put_id, datahub_id('ten-seconds');

    $gms->misbehave(field => 'entityExists', status => 500);
    my $res = sync_from($gms, '--prune');
    is_deeply([@$res{qw(rc out err)}],
              [4, counts(tokens => 246, added => 1, unchanged => 244,
                         expired => 1, pruned => 7, kept => 2),
               'gms-token: sync: ' . $gms->url . "/api/graphql: HTTP 500\n"],
              'sync --prune, entityExists failing: 5 unlisted tokens, 2 old '
              . 'ones pruned, 2 younger than a minute kept')
        or diag(explain($res));

    is_deeply({ map { ($_ => hash_of($redis, "gms:token:$_")) } keys %before },
              \%before, 'the tokens put 10 s ago and just now: kept as '
                        . 'they were');
    is($redis->cmd(EXISTS => 'gms:token:' . datahub_id('two-minutes')), 0,
       'a token created 2 minutes ago, not listed: pruned');
    is($redis->cmd(EXISTS => 'gms:token:' . datahub_id('no-createdAt')), 0,
       'a token without createdAt, not listed: pruned');
    is($redis->cmd(EXISTS => key_of($all[$_])), 0,
       "sync-$_, no longer listed: pruned") for 0 .. 4;
    is_deeply(hash_of($redis, key_of($kept[-1])), cached_as($kept[-1]),
              'a new listed token: added');
    is_deeply($redis->cmd(SMEMBERS => "gms:actor:$alice"),
              ['MANAGE_ACCESS_TOKENS'], 'privileges are not pruned');

    my $state = $redis->dump_all;
    $res = sync_from($gms, '--prune');
    is($res->{out}, counts(tokens => 246, unchanged => 245, expired => 1,
                           kept => 2), 'again: nothing pruned, 2 kept');
    $redis->unchanged($state, 'again: Redis as it was');

    $gms->misbehave;
    $res = sync_from($gms, '--prune');
    is($res->{out}, counts(tokens => 246, unchanged => 245, expired => 1,
                           pruned => 2),
       'entityExists answering: GMS has neither young token, both pruned '
       . 'however young');
    is($redis->cmd(EXISTS => "gms:token:$_"), 0, "... $_ gone")
        for $put_id, datahub_id('ten-seconds');
}


# --- failures: nothing written, nothing pruned ------------------------------

{
    # a successful sync --prune would change all of these
    # (tokens sorted by expiresAt: sync-248 and not-yet-cached come on
    # page 1, sync-10 on page 2)
    my @listing = map { { %$_ } } grep { $_->{name} ne 'sync-20' }
                                  @{ $gms->tokens };
    $_->{actorUrn} = 'urn:li:corpuser:mallory'
        for grep { $_->{name} =~ /^sync-(?:10|248)\z/ } @listing;
    push @listing, listed('not-yet-cached', expires => $future + 10_000);
    $gms->tokens(\@listing);
    $redis->cmd(HSET => 'gms:token:' . datahub_id('stale'), actor => $bob,
                createdAt => $now - 86_400_000);

    my $n = scalar @listing;

    my $first = GmsTest::HTTP::request($gms->port, 'POST', '/api/graphql',
        [['Authorization', "Bearer $SECRET"]],
        GmsTest::json_encode({ query => $QUERY, variables => { input => {
            start => 0, count => 100, filters => [] } } }));
    my %on_page_1 = map { ($_->{name} => 1) } @{ GmsTest::json_decode(
        $first->{body})->{data}{listAccessTokens}{tokens} };
    ok($on_page_1{'sync-248'} && $on_page_1{'not-yet-cached'},
       'page 1 has changes that writing it alone would show');

    my @gms = ('--gms', $gms->url);
    my @with_token = ('--gms-token-file', $token_file);
    GmsTest::write_file("$dir/wrong.token", "not-the-token\n");

    # [title, arguments, misbehaviour, stderr, pages asked]
    my @cases = (
        [ '401: a wrong token', [@gms, '--gms-token-file', "$dir/wrong.token"],
          [], qr/HTTP 401/, [[0, 100]] ],
        [ '401: no token given', [@gms], [], qr/HTTP 401/, [[0, 100]] ],
        [ "a GraphQL error (the resolver's 403)", undef,
          [graphql_error => 1],
          qr/\Q$GRAPHQL_UNAUTHORIZED\E/,
          [[0, 100]] ],
        [ 'HTTP 500 on page 2', undef, [page => 2, status => 500],
          qr/HTTP 500/, [[0, 100], [100, 100]] ],
        [ 'a GraphQL error on page 2', undef,
          [page => 2, graphql_error => $GRAPHQL_UNKNOWN],
          qr/\Q$GRAPHQL_UNKNOWN\E/, [[0, 100], [100, 100]] ],
        [ 'a token that fails the checks on page 3', undef,
          [page => 3, token => { id => 'abc' }],
          qr/tokens\[0\]: id 'abc' is not base64 of 32 bytes/,
          [[0, 100], [100, 100], [200, 100]] ],
        [ 'not JSON', undef,
          [body => "<html><body>Bad Gateway</body></html>\n"],
          qr/JSON/, [[0, 100]] ],
        [ 'page 2 not JSON', undef,
          [page => 2, body => '{"data":{"listAcc',
           content_type => 'application/json'],
          qr/JSON/, [[0, 100], [100, 100]] ],
        [ '--gms not the base URL: 404',
          ['--gms', $gms->url . '/x', @with_token], [], qr/HTTP 404/,
          [[0, 100]] ],
        [ 'GMS down (a closed port)',
          ['--gms', GmsTest::GraphQL->dead_url, @with_token], [],
          qr/connect/i, [] ],
        [ 'a missing --gms-token-file',
          [@gms, '--gms-token-file', "$dir/missing.token"], [],
          qr/missing\.token/, [] ],
        # nothing but one line of visible characters goes into a header
        [ 'a token file with a second line',
          [@gms, '--gms-token-file', "$dir/two-lines.token"], [],
          qr/two-lines\.token holds more than one line/, [] ],
        [ 'an empty token file',
          [@gms, '--gms-token-file', "$dir/empty.token"], [],
          qr/empty\.token: empty/, [] ],
    );

    GmsTest::write_file("$dir/two-lines.token", "$SECRET\nX-Injected: yes\n");
    GmsTest::write_file("$dir/empty.token", "\n");

    my $snap = snapshot();
    my $before = $redis->dump_all;

    for my $c (@cases) {
        my ($title, $args, $how, $re, $pages) = @$c;
        $gms->misbehave(@$how);
        $gms->clear_requests;
        restore($snap);

        my $res = run_tool(undef, 'sync', @{ $args // [@gms, @with_token] },
                           '--prune', @at);
        refused_run($res, undef, $re, "sync --prune refused: $title",
                    redis => $redis, before => $before, also => $NO_SECRET);
        is_deeply([ grep { defined } @{ $gms->pages_asked } ], $pages,
                  "$title: the pages asked");
    }

    # slow: the timeout, and meanwhile no process shows the token
    for my $page (undef, 2) {
        $gms->misbehave(delay => 4, defined $page ? (page => $page) : ());
        restore($snap);
        my @shown;
        my $res = run_tool(sub {
            for my $f (glob '/proc/[0-9]*/cmdline') {
                my $cmd = GmsTest::slurp($f);
                push @shown, $cmd =~ s/\0/ /gr
                    if index($cmd, $SIGNATURE) >= 0;
            }
        }, 'sync', gms_args($gms->url, $token_file), '--gms-timeout', '1s',
           '--prune', @at);

        my $what = defined $page ? 'page 2 slow' : 'slow';
        refused_run($res, undef, qr/tim(?:ed |e)?out/i,
                    "sync --prune refused: $what, --gms-timeout 1s",
                    redis => $redis, before => $before, also => $NO_SECRET);
        ok($res->{took} < (defined $page ? 3.5 : 2.5),
           sprintf '%s: gave up after %.1f s', $what, $res->{took});
        is_deeply(\@shown, [], "$what: no command line shows the token");
    }

    $gms->misbehave;

    # with --prune, a list short of its total (a token revoked while the
    # pages were read) prunes what GMS's entity store says is gone: each
    # cached token the list lacks is asked (entityExists), not refused
    restore($snap);
    $gms->misbehave(total => 400);
    $gms->clear_requests;
    my $short = sync_from($gms, '--prune');
    is_deeply([@$short{qw(rc out err)}],
              [0, counts(tokens => $n, added => 1, updated => 2,
                         unchanged => $n - 4, expired => 1, pruned => 2),
               ''],
              'total larger than the tokens, --prune: synced, the two '
              . 'tokens GMS no longer has pruned')
        or diag(explain($short));
    ok(!$redis->cmd(EXISTS => 'gms:token:' . datahub_id($_)), "$_ pruned")
        for qw(stale sync-20);
    my @asked = grep { GmsTest::json_encode($_->{json}{variables} // {})
                       =~ /urn:li:dataHubAccessToken:/ }
                @{ $gms->requests };
    is(scalar @asked, 1, '... asked of the entity store, in one request');

    # without --prune an incomplete list is still a sync
    restore($snap);
    $redis->unchanged($before, 'the dataset put back as it was');
    $gms->misbehave(total => 400);
    my $res = sync_from($gms);
    is_deeply([@$res{qw(rc out err)}],
              [0, counts(tokens => $n, added => 1, updated => 2,
                         unchanged => $n - 4, expired => 1), ''],
              'total larger than the tokens, no --prune: synced');
    is_deeply([ map { $redis->cmd(HGET => 'gms:token:' . datahub_id($_),
                                  'actor') } qw(sync-10 sync-248) ],
              [ ('urn:li:corpuser:mallory') x 2 ], 'the updated tokens');
    ok($redis->cmd(EXISTS => 'gms:token:' . datahub_id('stale')),
       'no --prune: nothing pruned');
    $gms->misbehave;
}


# --- TLS to GMS: --gms https://..., --gms-ca-file ---------------------------

{
    # nginx in front of the stand-in, TLS with GmsTest::Certs' server
    # certificate (127.0.0.1 and localhost, not 127.0.0.2)
    my $certs = GmsTest::Certs->new;
    my $front = GmsTest::Nginx->new(no_module => 1);
    my %vars = (GMS => $gms->port, CERT => $certs->{server_cert},
                KEY => $certs->{server_key});
    $front->start(<<'EOF', vars => \%vars);
server {
    listen 127.0.0.1:%%PORT%% ssl;
    listen 127.0.0.2:%%PORT%% ssl;
    ssl_certificate %%CERT%%;
    ssl_certificate_key %%KEY%%;
    location / {
        proxy_pass http://127.0.0.1:%%GMS%%;
    }
}
EOF
    my $https = 'https://127.0.0.1:' . $front->port;
    my $other = 'https://127.0.0.2:' . $front->port;

    my @tls = map { listed("tls-$_") } 1 .. 3;
    $gms->tokens(\@tls);
    my $before = $redis->dump_all;

    # [title, --gms, --gms-ca-file, what stderr says]: libcurl's words,
    # "SSL certificate problem: <OpenSSL's reason>" (libcurl 7.88, 8.14),
    # "SSL certificate OpenSSL verify result: <reason> (20)" (8.22,
    # Debian testing)
    my $no_issuer = qr/SSL\ certificate\ (?:problem|OpenSSL\ verify\ result):
                       \ unable\ to\ get\ local\ issuer\ certificate/x;
    my @cases = (
        [ "the system's CAs: the test CA is not one of them", $https, undef,
          $no_issuer ],
        [ 'a CA that did not sign the certificate', $https,
          $certs->{wrong_ca}, $no_issuer ],
        [ 'the right CA, a name the certificate does not hold', $other,
          $certs->{ca}, qr/\b127\.0\.0\.2\b/ ],
    );

    for my $c (@cases) {
        my ($title, $url, $ca, $re) = @$c;
        $gms->clear_requests;
        my $res = run_tool(undef, 'sync', gms_args($url, $token_file),
                           defined $ca ? ('--gms-ca-file', $ca) : (),
                           '--prune', @at);
        is($res->{rc}, 4, "TLS refused, $title: exit 4");
        refused_run($res, undef, $re, "TLS refused, $title", redis => $redis,
                    before => $before, also => $NO_SECRET);
        is_deeply($gms->requests, [], "$title: the token never sent");
    }

    $gms->clear_requests;
    my $res = run_tool(undef, 'sync', gms_args($https, $token_file),
                       '--gms-ca-file', $certs->{ca}, @off, @at);
    is_deeply([@$res{qw(rc out err)}], [0, counts(tokens => 3, added => 3), ''],
              'TLS with --gms-ca-file: synced') or diag(explain($res));
    is_deeply([ map { hash_of($redis, key_of($_)) } @tls ],
              [ map { cached_as($_) } @tls ], 'the tokens cached');
    is_deeply([ map { $_->{header}{authorization} } @{ $gms->requests } ],
              [ ("Bearer $SECRET") x @{ $gms->requests } ],
              'the account token went through TLS');
    is(scalar @{ listings($gms) }, 1, '... one listing');

    $front->stop;
    is_deeply([$front->bad_log_lines], [], 'the TLS front: no alert');
}


# --- the token never shown --------------------------------------------------

{
    my @leaks = grep {
        index($_->[1]{out} . $_->[1]{err}, $SIGNATURE) >= 0
    } GmsTest::Tool::runs();
    is_deeply([ map { $_->[0] } @leaks ], [],
              'no run printed the GMS token ('
              . scalar(GmsTest::Tool::runs()) . ' runs)');
}

done_testing();

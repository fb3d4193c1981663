#!/usr/bin/perl

# gms-token, the tool that fills the cache, against a real redis-server and
# the module itself: ids as DataHub computes them, every command, a token
# put by the tool accepted by nginx, revoked and refused, a sync of 10,000
# tokens, --prune, and bad input that changes nothing.

use strict;
use warnings;

use Test::More;
use Digest::SHA qw(sha256);
use Time::HiRes qw(time);

use GmsTest;
use GmsTest::Edge;
use GmsTest::Messages qw($UNKNOWN_TOKEN $GMS_UNAUTHORIZED);
use GmsTest::Tool qw(run_tool datahub_id refused_run);

GmsTest::Tool::need_tool();

my $e = GmsTest::Edge->start;
my $redis = $e->redis;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

my $dir = GmsTest::tempdir();

# The tool on the test's redis-server.
sub gms    { run_tool(undef, @_, @at) }
sub gms_in { my $stdin = shift; run_tool($stdin, @_, @at) }

# A token's hash without createdAt (which 'put' sets to the time of the put).
sub fields {
    my ($key) = @_;
    my %h = @{ $redis->cmd(HGETALL => $key) };
    delete $h{createdAt};
    return \%h;
}

my $alice = 'urn:li:corpuser:alice';
my $bob = 'urn:li:corpuser:bob';

# --- ids ----------------------------------------------------------------------

{
    my $res = run_tool('secret-token', 'id');
    is_deeply($res, { rc => 0, err => '',
                      out => "kwu9xRtq7VwqVnj9bije56BeiktkPPwLRCfD77hsDZQ=\n" },
              'id of the README example');

    my $jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJhY3RvclR5cGUiOiJVU0VSIiwiYWN0b3JJZCI6'
            . 'ImFsaWNlIiwidHlwZSI6IlBFUlNPTkFMIiwidmVyc2lvbiI6IjIifQ.c2lnbmF0'
            . 'dXJl-_~+/==';
    my $salt = "s\xc3\xa4lt-\xe2\x82\xac-\x01";
    GmsTest::write_file("$dir/salt", "$salt\n");

    for my $case (['secret-token', ''], [$jwt, ''], [$jwt, 'pepper'],
                  [$jwt, $salt], ['a', "x\ny"])
    {
        my ($token, $s) = @$case;
        my @opt = length $s ? ('--salt', $s) : ();
        my $out = run_tool("$token\n", 'id', @opt)->{out};
        chomp $out;
        my $what = substr($token, 0, 12) . (length $s ? ' salted' : '');
        is($out, GmsTest::sha256_b64($token . $s), "id = openssl's: $what");
        is($out, datahub_id($token, $s), "id = DataHub's formula: $what");
    }

    is(run_tool('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl', 'id',
                '--salt', 'pepper')->{out},
       "reQefooOtH8XiJ8eIgdj3OJMmvO5eEznReKdZRDUUUw=\n",
       'the worked example of docs/redis-contract.md');

    is(run_tool($jwt, 'id', '--salt-file', "$dir/salt")->{out},
       datahub_id($jwt, $salt) . "\n",
       '--salt-file: the file without its trailing newline');
    is(run_tool("$jwt\r\n", 'id')->{out}, datahub_id($jwt) . "\n",
       'a CRLF line end is dropped');

    my $before = $redis->dump_all;
    refused_run(run_tool('', 'id'), 2, 'stdin: no token', 'empty stdin',
                redis => $redis, before => $before);
    refused_run(run_tool("two words\n", 'id'), 2, 'stdin:1: not a token',
                'a token with a space', redis => $redis, before => $before);
    refused_run(run_tool("one\ntwo\n", 'id'), 2, 'stdin:1: not a token',
                'two lines', redis => $redis, before => $before);
    refused_run(run_tool('a' x 4097, 'id'), 2, 'longer than 4096',
                'a token over 4096 bytes', redis => $redis, before => $before);
    is(run_tool('a' x 4096, 'id')->{out}, datahub_id('a' x 4096) . "\n",
       'a token of 4096 bytes');
    refused_run(run_tool('x', 'id', '--salt', 'a', '--salt-file', "$dir/salt"),
                2, 'not both', '--salt and --salt-file', redis => $redis,
                before => $before);
}

# --- put, then the module ----------------------------------------------------

my $now = int(time * 1000);

{
    my $res = gms_in("alice-token\n", 'put', '--token-stdin', '--actor', $alice,
                     '--expires-in', '30d', '--type', 'PERSONAL');
    my $id = datahub_id('alice-token');
    is_deeply($res, { rc => 0, out => "$id\n", err => '' },
              'put --token-stdin prints the id');

    my $key = "gms:token:$id";
    my %h = @{ $redis->cmd(HGETALL => $key) };
    my $exp = $h{expiresAt};
    is_deeply([sort keys %h], [qw(actor createdAt expiresAt type)],
              'exactly the fields');
    ok($h{createdAt} >= $now && $h{createdAt} < $now + 60_000,
       'createdAt: now (for sync --prune\'s grace period)');
    is($h{actor}, $alice, 'actor');
    is($h{type}, 'PERSONAL', 'type');
    ok($exp >= $now + 30 * 86_400_000 && $exp < $now + 30 * 86_400_000 + 60_000,
       '--expires-in 30d: 30 days from now');
    is($redis->cmd(PEXPIRETIME => $key), $exp,
       'the key expires with the token');

    my $get = $e->get('/entities/x', 'alice-token');
    is($get->{status}, 200, 'the module accepts a token put by the tool');
    is($get->{headers}{'x-gms-actor'}, $alice, 'with its actor');
    is($get->{headers}{'x-gms-id'}, $id, 'under the id the tool printed');

    is(gms('grant', $alice, 'GENERATE_PERSONAL_ACCESS_TOKENS',
           'GET_ES_TASK_STATUS_PRIVILEGE')->{rc}, 0, 'grant');
    is($e->get('/admin/tokens', 'alice-token')->{status}, 200,
       'a privilege granted by the tool is seen by the module');
    is_deeply(gms('privileges', $alice),
              { rc => 0, err => '', out => "GENERATE_PERSONAL_ACCESS_TOKENS\n"
                                           . "GET_ES_TASK_STATUS_PRIVILEGE\n" },
              'privileges, sorted');

    is_deeply(GmsTest::json_decode(gms('show', $id)->{out}),
              { id => $id, actor => $alice, expiresAt => 0 + $exp,
                type => 'PERSONAL',
                privileges => ['GENERATE_PERSONAL_ACCESS_TOKENS',
                               'GET_ES_TASK_STATUS_PRIVILEGE'] },
              'show: the token and its privileges');
    like(gms('show', $id)->{out},
         qr/^\{"id":"[^"]+","actor":"[^"]+","expiresAt":\d+,"type":"PERSONAL",
            "privileges":\["[A-Z_]+","[A-Z_]+"\]\}\n\z/x,
         'show: one line, fields in order');

    is(gms('deny', $alice, 'GENERATE_PERSONAL_ACCESS_TOKENS')->{rc}, 0,
       'deny');
    is($e->get('/admin/tokens', 'alice-token')->{headers}{'x-gms-result'},
       'forbidden', 'a privilege denied by the tool is gone for the module');
    is(gms('privileges', $alice)->{out}, "GET_ES_TASK_STATUS_PRIVILEGE\n",
       'privileges after deny');
    is_deeply(gms('privileges', 'urn:li:corpuser:nobody'),
              { rc => 0, out => '', err => '' }, 'a user without privileges');

    # a re-put is exact: no field, no expiry left from before
    is(gms('put', '--id', $id, '--actor', $bob)->{rc}, 0, 're-put with --id');
    is_deeply(fields($key), { actor => $bob },
              're-put: only the fields given');
    is($redis->cmd(PEXPIRETIME => $key), -1, 're-put: no expiry left');
    is_deeply(GmsTest::json_decode(gms('show', $id)->{out}),
              { id => $id, actor => $bob, expiresAt => undef, type => undef,
                privileges => [] }, 'show: expiresAt and type null');
    is($e->get('/entities/x', 'alice-token')->{headers}{'x-gms-actor'}, $bob,
       'the module sees the re-put');

    my $at = $now + 3_600_000;
    is(gms('put', '--id', $id, '--actor', $alice, '--expires-at', $at,
           '--type', 'SESSION')->{out}, "$id\n", 'put --expires-at');
    is_deeply(fields($key),
              { actor => $alice, expiresAt => $at, type => 'SESSION' },
              'expiresAt as given');
    is($redis->cmd(PEXPIRETIME => $key), $at, 'PEXPIREAT to expiresAt');

    is(gms('put', '--id', $id, '--actor', $alice, '--expires-at', 0)->{rc}, 0,
       'put --expires-at 0');
    is_deeply(fields($key), { actor => $alice },
              '--expires-at 0: never expires, no expiresAt field');

    # revoke, then 401
    is_deeply(gms('revoke', $id), { rc => 0, out => '', err => '' }, 'revoke');
    my $r = $e->get('/entities/x', 'alice-token');
    is($r->{status}, 401, 'revoked: 401');
    is($r->{headers}{'x-gms-result'}, 'unknown',
       'revoked: unknown to the module');
    is(GmsTest::json_decode($r->{body})->{message}, $UNKNOWN_TOKEN,
       'revoked: the message');

    $r = gms('revoke', $id);
    is($r->{rc}, 1, 'revoke of a token not cached: exit code 1');
    like($r->{err}, qr/^gms-token: revoke: token id \Q$id\E is not cached\n\z/,
         'revoke: says so');
    is(gms('show', $id)->{rc}, 1, 'show of a token not cached: exit code 1');

    # expiring with the token: gone from Redis, refused by the module
    gms_in('short-lived', 'put', '--token-stdin', '--actor', $bob,
           '--expires-in', '1s');
    is($e->get('/entities/x', 'short-lived')->{status}, 200,
       'a token of one second: accepted at first');
    ok(GmsTest::wait_until(sub {
           !$redis->cmd(EXISTS => 'gms:token:' . datahub_id('short-lived'))
       }, 3), 'its key expires with it');
    is($e->get('/entities/x', 'short-lived')->{status}, 401, 'then 401');
}

# --- grant: no more privileges than the edge accepts ------------------------

{
    my $many = 'urn:li:corpuser:many';
    my @p = map { sprintf 'PRIVILEGE_%03d', $_ } 1 .. 256;
    gms_in("many-token\n", 'put', '--token-stdin', '--actor', $many);

    is(gms('grant', $many, @p[0 .. 199])->{rc}, 0, 'grant 200 privileges');
    is(gms('grant', $many, @p[150 .. 255], $p[0])->{rc}, 0,
       'grant up to 256, some held already, one named twice');
    is($redis->cmd(SCARD => "gms:actor:$many"), 256, '256 in the set');

    my $before = $redis->dump_all;
    refused_run(gms('grant', $many, $p[0], 'ONE_MORE'), 2,
                "\Q$many\E would have 257 privileges, more than the edge "
                . 'accepts \(256\): nothing granted', 'grant past 256: refused',
                redis => $redis, before => $before);
    is($e->get('/entities/x', 'many-token')->{status}, 200,
       'the edge still answers the user');
    is(gms('grant', $many, $p[0])->{rc}, 0, 'grant of one it holds: fine');
    is(gms('deny', $many, $p[0])->{rc}, 0, 'deny one');
    is(gms('grant', $many, 'ONE_MORE')->{rc}, 0, 'then there is room');

    $before = $redis->dump_all;
    refused_run(gms('deny', $many, 'P' x 129), 2,
                "'P+\\.\\.\\.' is not a privilege name: .* 1 to 128 of them",
                'a name of 129 bytes', redis => $redis, before => $before);
    is(gms('grant', $many, 'P' x 128)->{rc}, 2, 'one of 128: refused, full');
}

# --- usage, bad input and Redis errors --------------------------------------

{
    gms_in('kept-token', 'put', '--token-stdin', '--actor', $alice);
    my $id = datahub_id('kept-token');
    my $before = $redis->dump_all;

    for my $cmd (qw(id put revoke show grant deny privileges sync)) {
        my $res = run_tool(undef, $cmd, '--help');
        ok($res->{rc} == 0 && $res->{out} =~ /^Usage: gms-token \Q$cmd\E /
           && $res->{err} eq '', "$cmd --help");
    }
    like(run_tool(undef, '--help')->{out}, qr/^Usage: gms-token COMMAND/,
         '--help');

    refused_run(gms('frobnicate'), 2, "unknown command 'frobnicate'",
                'unknown command', redis => $redis, before => $before);
    refused_run(run_tool(undef), 2, 'no command', 'no command', redis => $redis,
                before => $before);
    refused_run(gms('show', $id, '--colour'), 2, "unknown option '--colour'",
                'unknown option', redis => $redis, before => $before);
    refused_run(gms('show', $id, '--prune'), 2,
                '--prune is not an option of show',
                'an option of another command', redis => $redis,
                before => $before);
    refused_run(gms('show'), 2, 'missing arguments', 'missing argument',
                redis => $redis, before => $before);
    refused_run(gms('show', $id, $id), 2, 'too many arguments',
                'too many arguments', redis => $redis, before => $before);
    refused_run(gms('put', '--actor', $alice), 2,
                'one of --id and --token-stdin', 'put without an id',
                redis => $redis, before => $before);
    refused_run(gms('put', '--id', $id), 2, '--actor is required',
                'put without an actor', redis => $redis, before => $before);
    refused_run(gms('put', '--id', 'abc', '--actor', $alice), 2,
                "'abc' is not a token id", 'put: an id too short',
                redis => $redis, before => $before);
    refused_run(gms('put', '--id', unpack('H*', sha256('x')),
                    '--actor', $alice),
                2, 'is not a token id', 'put: a hex digest for an id',
                redis => $redis, before => $before);
    refused_run(gms('put', '--id', 'A' x 42 . '==', '--actor', $alice), 2,
                'is not a token id', 'put: base64 of 31 bytes', redis => $redis,
                before => $before);
    refused_run(gms('put', '--id', $id, '--actor', 'alice'), 2,
                "'alice' is not a user URN", 'put: an actor not a URN',
                redis => $redis, before => $before);
    refused_run(gms('put', '--id', $id, '--actor', "urn:li:corpuser:a\r\nX: y"),
                2, 'is not a user URN', 'put: an actor with CRLF',
                redis => $redis, before => $before);
    refused_run(gms('put', '--id', $id, '--actor', $alice, '--expires-at',
                    $now - 1000), 2, 'already past', 'put: a past expiry',
                redis => $redis, before => $before);
    refused_run(gms('put', '--id', $id, '--actor', $alice,
                    '--expires-in', '0s'),
                2, 'already past', 'put: --expires-in 0s', redis => $redis,
                before => $before);
    refused_run(gms('put', '--id', $id, '--actor', $alice, '--expires-at',
                    '2026-01-01'), 2, 'not a number of milliseconds',
                'put: a date for --expires-at', redis => $redis,
                before => $before);
    for my $d ('30', '3w', 'h', '-1d', '1.5h', '99999999999999999999d') {
        refused_run(gms('put', '--id', $id, '--actor', $alice,
                        '--expires-in', $d),
                    2, 'is not a duration', "put: --expires-in $d",
                    redis => $redis, before => $before);
    }
    refused_run(gms('put', '--id', $id, '--actor', $alice,
                    '--expires-in', '1d', '--expires-at', $now + 10_000),
                2, 'not both', 'put: two expiries', redis => $redis,
                before => $before);
    refused_run(gms('put', '--id', $id, '--actor', $alice,
                    '--type', 'personal'),
                2, 'neither PERSONAL nor SESSION', 'put: a bad type',
                redis => $redis, before => $before);
    refused_run(gms_in("bad token\n", 'put', '--token-stdin',
                       '--actor', $alice),
                2, 'stdin:1: not a token', 'put: a bad token on stdin',
                redis => $redis, before => $before);
    refused_run(gms('revoke', 'urn:li:dataHubAccessToken:x'), 2,
                'is not a token id', 'revoke: a URN for an id', redis => $redis,
                before => $before);
    refused_run(gms('grant', $alice, 'GOOD_ONE', 'BAD ONE'), 2,
                "'BAD ONE' is not a privilege name",
                'grant: a privilege name with a space changes nothing',
                redis => $redis, before => $before);
    refused_run(gms('deny', $alice, "BAD\tONE"), 2, 'is not a privilege name',
                'deny: a privilege name with a tab', redis => $redis,
                before => $before);
    refused_run(gms('grant', 'corpuser:alice', 'X'), 2, 'is not a user URN',
                'grant: not a URN', redis => $redis, before => $before);
    refused_run(gms('show', $id, '--db', 'two'), 2, 'not a database number',
                'a bad --db', redis => $redis, before => $before);
    refused_run(run_tool(undef, 'show', $id, '--redis', 'localhost'), 2,
                "--redis: 'localhost' is neither host:port", 'a bad --redis',
                redis => $redis, before => $before);

    my $closed = GmsTest::free_port();
    my $res = run_tool(undef, 'show', $id, '--redis', "127.0.0.1:$closed");
    is($res->{rc}, 3, 'Redis unreachable: exit code 3');
    like($res->{err},
         qr/^gms-token: show: redis 127\.0\.0\.1:$closed: cannot connect: .+\n\z/,
         'Redis unreachable: one line');

    $redis->cmd(SET => "gms:actor:urn:li:corpuser:odd", 'x');
    $res = gms('privileges', 'urn:li:corpuser:odd');
    is($res->{rc}, 3, 'an error reply: exit code 3');
    like($res->{err}, qr/^gms-token: privileges: redis .*WRONGTYPE.*\n\z/,
         'the error reply, in one line');
    $redis->cmd(SET => 'gms:token:' . datahub_id('odd'), 'x');
    is(gms('show', datahub_id('odd'))->{rc}, 3,
       'show of a key of another type');
    $redis->cmd(DEL => "gms:actor:urn:li:corpuser:odd",
                'gms:token:' . datahub_id('odd'));
}

# --- sync ---------------------------------------------------------------------

sub page {
    my ($tokens, %o) = @_;
    return GmsTest::json_encode({ data => { listAccessTokens => {
        start  => $o{start} // 0,
        count  => scalar @$tokens,
        total  => $o{total} // scalar @$tokens,
        tokens => $tokens,
    } } }) . "\n";
}

# A token as listAccessTokens lists it.
sub listed {
    my ($token, $actor, $expires, $salt) = @_;
    my $id = datahub_id($token, $salt);
    return { urn => "urn:li:dataHubAccessToken:$id", id => $id,
             name => "token $token", description => undef,
             actorUrn => $actor, ownerUrn => $actor,
             createdAt => $now - 86_400_000, expiresAt => $expires,
             type => 'DATAHUB_ACCESS_TOKEN',
             __typename => 'AccessTokenMetadata' };
}

my $N = 10_000;
my $future = $now + 86_400_000;
my @all = map {
    listed("sync-token-$_", "urn:li:corpuser:user" . $_ % 100,
           $_ % 3 == 0 ? undef : $_ % 3 == 1 ? 0 : $future + $_)
} 0 .. $N - 1;

sub token_keys {
    my ($cursor, %keys) = (0);
    do {
        my $r = $redis->cmd(SCAN => $cursor, MATCH => 'gms:token:*',
                            COUNT => 1000);
        $cursor = $r->[0];
        $keys{$_} = 1 for @{ $r->[1] };
    } while ($cursor ne '0');
    return \%keys;
}

{
    my $before_keys = keys %{ token_keys() };
    my $t0 = time;
    my $res = gms_in(page(\@all), 'sync');
    my $took = time - $t0;

    is_deeply($res, { rc => 0, err => '',
                      out => "tokens=$N added=$N updated=0 unchanged=0 "
                             . "expired=0 pruned=0 kept=0\n" },
              "sync of $N tokens in one go");
    diag(sprintf 'gms-token sync of %d tokens in one go: %.3f s', $N, $took);

    is(scalar keys %{ token_keys() }, $before_keys + $N, "$N keys more");

    for my $i (0, 1, 2, 9_998) {
        my $id = datahub_id("sync-token-$i");
        my $key = "gms:token:$id";
        my %want = (actor => "urn:li:corpuser:user" . $i % 100,
                    createdAt => $now - 86_400_000);
        $want{expiresAt} = $future + $i if $i % 3 == 2;
        is_deeply({ @{ $redis->cmd(HGETALL => $key) } }, \%want,
                  "token $i: the fields");
        is($redis->cmd(PEXPIRETIME => $key), $i % 3 == 2 ? $future + $i : -1,
           "token $i: the key's expiry");
        my $r = $e->get('/entities/x', "sync-token-$i");
        is($r->{status}, 200, "token $i: accepted by the module");
        is($r->{headers}{'x-gms-actor'}, $want{actor}, "token $i: its actor");
    }

    my $state = $redis->dump_all;
    $t0 = time;
    $res = gms_in(page(\@all), 'sync');
    diag(sprintf 'gms-token sync of the same %d tokens again: %.3f s', $N,
         time - $t0);
    is($res->{out}, "tokens=$N added=0 updated=0 unchanged=$N expired=0 "
                    . "pruned=0 kept=0\n", 'again: every token unchanged');
    $redis->unchanged($state, 'again: Redis as it was (idempotent)');
}

# several pages, one a line, a token listed twice, an update, an expired one
{
    my @pages = map { [ @all[$_ * 2500 .. $_ * 2500 + 2499] ] } 0 .. 3;
    push @{ $pages[1] }, $all[0];
    $pages[2][0] = listed('sync-token-5000', $bob, $future);
    push @{ $pages[3] }, listed('expired-token', $bob, $now - 1000);
    $redis->cmd(HSET => 'gms:token:' . datahub_id('expired-token'),
                actor => $bob);

    my $input = join '', map { page($pages[$_], start => $_ * 2500,
                                    total => $N + 1) } 0 .. 3;
    my $res = gms_in($input, 'sync');
    is($res->{out}, 'tokens=' . ($N + 1) . ' added=0 updated=1 unchanged='
                    . ($N - 1) . " expired=1 pruned=0 kept=0\n",
       'pages one a line: counts');
    is($redis->cmd(HGET => 'gms:token:' . datahub_id('sync-token-5000'),
                   'actor'), $bob, 'the updated token');
    is($redis->cmd(EXISTS => 'gms:token:' . datahub_id('expired-token')), 0,
       'an expired token is deleted, not cached');
}

# --prune
{
    my @kept = @all[0 .. 8_999];
    push @kept, listed('new-token', $bob, undef);
    my $keys = token_keys();
    my %listed = map { ("gms:token:$_->{id}" => 1) } @kept;
    my @stale = grep { !$listed{$_} } keys %$keys;
    ok(@stale >= 1_000, scalar(@stale) . ' cached tokens are not in the list');

    # put by hand a moment ago (createdAt recent): spared by the grace
    # period, since DataHub's list may not have them yet.  Their createdAt
    # is made now: a slow (sanitized) run may have spent the minute since
    my $clock = int(time * 1000);
    my @recent = grep {
        my $c = $redis->cmd(HGET => $_, 'createdAt');
        defined $c && $c > $clock - 60_000
    } @stale;
    $redis->cmd(HSET => $_, createdAt => $clock) for @recent;
    ok(@recent >= 1, scalar(@recent) . ' of them created in the last minute');
    my $stale = @stale - @recent;

    my $before = $redis->dump_all;
    my @pages = map { [ @kept[$_ * 1000 .. ($_ * 1000 + 999 < $#kept
                                            ? $_ * 1000 + 999 : $#kept)] ] }
                0 .. 9;
    my $first = page($pages[0], total => scalar @kept);
    refused_run(gms_in($first, 'sync', '--prune'), 2,
                'stdin: 1000 tokens, but listAccessTokens has a total of 9001: '
                . 'the list is incomplete, refusing to --prune',
                'sync --prune with one page of ten', redis => $redis,
                before => $before);

    my $input = join '', map { page($pages[$_], start => $_ * 1000,
                                    total => scalar @kept) } 0 .. 9;
    my $t0 = time;
    my $res = gms_in($input, 'sync', '--prune');
    diag(sprintf 'gms-token sync --prune of %d tokens, %d pruned: %.3f s',
         scalar @kept, $stale, time - $t0);
    # sync-token-5000 changed hands above and is listed as it was at first
    is($res->{out}, 'tokens=9001 added=1 updated=1 unchanged=8999 expired=0 '
                    . "pruned=$stale kept=" . @recent . "\n",
       'sync --prune: counts');
    is_deeply([sort keys %{ token_keys() }], [sort keys %listed, @recent],
              'exactly the listed tokens are cached, and the recent ones');
    is($e->get('/entities/x', 'sync-token-9500')->{status}, 401,
       'a pruned token: 401');
    is($e->get('/entities/x', 'new-token')->{status}, 200, 'a new one: 200');
    is(gms('privileges', $alice)->{out}, "GET_ES_TASK_STATUS_PRIVILEGE\n",
       'privileges are not pruned');

    $before = $redis->dump_all;
    is(gms_in($input, 'sync', '--prune')->{out}, 'tokens=9001 added=0 '
       . "updated=0 unchanged=9001 expired=0 pruned=0 kept=" . @recent . "\n",
       'again: nothing');
    $redis->unchanged($before, 'again: Redis as it was');
}

# bad input: the line, and nothing written, not even the good pages before
{
    my $good = page([ listed('fresh-1', $alice, undef),
                      listed('fresh-2', $alice, $future) ]);
    my $before = $redis->dump_all;

    my $t = sub {
        my %o = @_;
        return +{ %{ listed('bad', $alice, undef) }, %o };
    };
    my $without = sub { my $x = $t->(); delete $x->{$_[0]}; $x };

    my @cases = (
        [ "{\"data\":{\"listAccessTokens\":{\"tokens\":[{\"id\":\n",
          'stdin:2: malformed JSON', 'truncated JSON' ],
        [ "not json\n", 'stdin:2: malformed JSON', 'not JSON' ],
        [ page([ $t->(), $without->('actorUrn') ]),
          'stdin:2: tokens\[1\]: actorUrn is missing', 'a missing actorUrn' ],
        [ page([ $without->('id') ]), 'stdin:2: tokens\[0\]: id is missing',
          'a missing id' ],
        [ page([ $without->('expiresAt') ]),
          'stdin:2: tokens\[0\]: expiresAt is missing', 'a missing expiresAt' ],
        [ page([ $t->(id => 'abc') ]),
          "stdin:2: tokens\\[0\\]: id 'abc' is not base64 of 32 bytes",
          'an id too short' ],
        [ page([ $t->(id => unpack('H*', sha256('bad'))) ]),
          'is not base64 of 32 bytes', 'a hex digest for an id' ],
        [ page([ $t->(id => $t->()->{urn}) ]), 'is not base64 of 32 bytes',
          'the urn for the id' ],
        [ page([ $t->(id => 1234) ]), 'id is not a string', 'a number for id' ],
        [ page([ $t->(expiresAt => "$future") ]),
          'expiresAt is neither milliseconds since the epoch nor null',
          'expiresAt as a string' ],
        [ page([ $t->(expiresAt => -5) ]), 'expiresAt is neither',
          'a negative expiresAt' ],
        [ page([ $t->(actorUrn => 'alice') ]),
          "actorUrn 'alice' is not a user URN", 'an actor not a URN' ],
        [ page([ $t->(actorUrn => undef) ]), 'actorUrn is not a string',
          'a null actor' ],
        [ GmsTest::json_encode({ data => undef, errors => [
              { message => $GMS_UNAUTHORIZED } ] })
          . "\n", 'stdin:2: the page carries GraphQL errors: Unauthorized',
          'a GraphQL error' ],
        [ "{\"data\":{}}\n", 'stdin:2: not a listAccessTokens page',
          'another query' ],
        [ "[]\n", 'stdin:2: not a listAccessTokens page', 'an array' ],
        [ page([ listed('fresh-1', $bob, undef) ]),
          'stdin:2: tokens\[0\]: id \S+ is also in stdin:1 \(tokens\[0\]\) '
          . 'with another actorUrn', 'one id, two users' ],
        [ "{\"data\":{\"listAccessTokens\":{\"tokens\":[],\"tokens\":[]}}}\n",
          'stdin:2: malformed JSON: duplicate object key', 'a duplicate key' ],
    );

    for my $c (@cases) {
        my ($bad, $re, $title) = @$c;
        refused_run(gms_in($good . $bad, 'sync'), 2, $re, "sync: $title",
                    redis => $redis, before => $before);
    }

    refused_run(gms_in('', 'sync'), 2, 'stdin: no listAccessTokens page',
                'sync: empty input', redis => $redis, before => $before);
    refused_run(gms_in("\n\n", 'sync', '--prune'), 2,
                'no listAccessTokens page',
                'sync --prune: blank input prunes nothing', redis => $redis,
                before => $before);
    refused_run(gms_in($good . "\n\n" . page([ $t->(id => 'x') ]), 'sync'), 2,
                'stdin:4: tokens\[0\]', 'line numbers count blank lines',
                redis => $redis, before => $before);

    my $pretty = "{\n  \"data\": {\n    \"listAccessTokens\": {\n"
               . "      \"total\": 1, \"tokens\": [\n        {\"id\": \"x\"\n"
               . "      ]\n    }\n  }\n}\n";
    refused_run(gms_in($good . $pretty, 'sync'), 2, 'stdin:7: malformed JSON',
                'malformed JSON: the line of the fault', redis => $redis,
                before => $before);

    $pretty =~ s/\{"id": "x"\n/{"id": "x"}\n/;
    refused_run(gms_in($good . $pretty, 'sync'), 2,
                "stdin:2: tokens\\[0\\]: id 'x' is not base64",
                'a pretty-printed page: the line where it starts',
                redis => $redis, before => $before);
}

# --- another prefix (with glob characters), a salt ---------------------------

{
    my $salt = "p\xc3\xa9pper-\x01";
    my $prefix = 'edge*[1]:';
    my $e2 = GmsTest::Edge->start(salt => $salt, prefix => $prefix);
    my $r2 = $e2->redis;
    my @at2 = ('--redis', '127.0.0.1:' . $r2->port, '--prefix', $prefix);
    GmsTest::write_file("$dir/salt2", $salt);

    my $res = run_tool('salted-token', 'put', '--token-stdin', '--salt-file',
                       "$dir/salt2", '--actor', $alice, @at2);
    my $id = datahub_id('salted-token', $salt);
    is($res->{out}, "$id\n", 'put with a salt: the salted id');
    ok($r2->cmd(EXISTS => "${prefix}token:$id"), 'under the prefix');
    is($e2->get('/entities/x', 'salted-token')->{status}, 200,
       'a salted token under another prefix: accepted by the module');
    is(run_tool(undef, 'grant', $alice, 'MANAGE_ACCESS_TOKENS', @at2)->{rc}, 0,
       'grant under the prefix');
    is($e2->get('/admin/x', 'salted-token')->{status}, 200,
       'the privilege under the prefix');

    # an unescaped pattern edge*[1]:token:* would match this key too
    my $other = "edge-other1:token:$id";
    $r2->cmd(HSET => $other, actor => $bob);

    # put a minute and more ago: past the grace period
    $r2->cmd(HSET => "${prefix}token:$id", createdAt => $now - 61_000);

    $res = run_tool(page([ listed('listed-token', $bob, undef, $salt) ]),
                    'sync',
                    '--prune', @at2);
    is($res->{out}, "tokens=1 added=1 updated=0 unchanged=0 expired=0 "
                    . "pruned=1 kept=0\n",
       'sync --prune under a prefix with * and [');
    ok(!$r2->cmd(EXISTS => "${prefix}token:$id"), 'the unlisted token pruned');
    ok($r2->cmd(EXISTS => $other), 'a key outside the prefix untouched');
    is($e2->get('/entities/x', 'listed-token')->{status}, 200,
       'the listed token accepted');

    $e2->nginx->stop;
    is_deeply([$e2->nginx->bad_log_lines], [], 'second edge: no alerts');
}

# --- Redis on a unix socket, with a password and a database ------------------

SKIP: {
    my $sock = "$dir/redis.sock";
    my $pid = GmsTest::spawn([GmsTest::redis_bin('server'), '--port', '0',
                              '--unixsocket', $sock, '--save', '',
                              '--appendonly', 'no', '--dir', $dir,
                              '--requirepass', 'pass word'],
                             "$dir/unix-redis.out");
    skip 'redis-server on a unix socket did not start', 9
        unless GmsTest::wait_until(sub { -S $sock }, 5);

    GmsTest::write_file("$dir/password", "pass word\n");
    my @u = ('--redis', "unix:$sock", '--db', 3);

    my $res = run_tool(undef, 'put', '--id', datahub_id('u'), '--actor',
                       $alice, @u, '--password-file', "$dir/password");
    is($res->{rc}, 0, 'unix socket, --password-file, --db')
        or diag($res->{err});

    my $cli = sub {
        open my $fh, '-|', GmsTest::redis_bin('cli'), '-s', $sock, '--no-auth-warning',
            '-a', 'pass word', @_ or die "redis-cli: $!";
        local $/;
        my $out = <$fh>;
        close $fh;
        return $out;
    };
    is($cli->('-n', 3, 'HGET', 'gms:token:' . datahub_id('u'), 'actor'),
       "$alice\n", 'written to database 3');
    is($cli->('-n', 0, 'DBSIZE'), "0\n", 'not to database 0');

    {
        local $ENV{GMS_REDIS_PASSWORD} = 'pass word';
        is(run_tool(undef, 'show', datahub_id('u'), @u)->{rc}, 0,
           'the password from GMS_REDIS_PASSWORD');
    }

    $res = run_tool(undef, 'show', datahub_id('u'), @u);
    is($res->{rc}, 3, 'no password: exit code 3');
    like($res->{err}, qr/^gms-token: show: redis unix:.*NOAUTH.*\n\z/,
         'no password: the error');

    GmsTest::write_file("$dir/wrong", "nope\n");
    $res = run_tool(undef, 'show', datahub_id('u'), @u, '--password-file',
                    "$dir/wrong");
    is($res->{rc}, 3, 'a wrong password: exit code 3');
    unlike($res->{err}, qr/nope|pass word/, 'the password is never printed');

    refused_run(run_tool(undef, 'show', datahub_id('u'), @u, '--password-file',
                         "$dir/missing"), 2, 'cannot open',
                'a missing password file', redis => $redis,
                before => $redis->dump_all);

    kill 'TERM', $pid;
    waitpid $pid, 0;
}

$e->nginx->stop;
is_deeply([$e->nginx->bad_log_lines], [],
          'no alerts, crashes or leaked sockets');

done_testing();

#!/usr/bin/perl

# gms-token sync --gms --prune (and follow's token cycle) when GMS's search
# index and GMS disagree or GMS misbehaves, against a real redis-server and
# the stand-in GMS (GmsTest::GraphQL): a listing emptied or halved by a
# reindex (tokens flagged unlisted: in the entity store, not the index)
# prunes nothing GMS still has, asked with entityExists in batches of 100,
# with a warning that gives the numbers (stderr, follow's <prefix>sync);
# tokens GMS no longer has are pruned; --max-prune bounds what is pruned
# while GMS cannot confirm; a live token offset paging skipped is kept; a
# GMS that ignores start under a total of 10^9, or pages past its first
# total, fails the sync at once with one line, nothing written; a
# createdAt in the future changes nothing of a revocation GMS confirms,
# and spares a token it cannot confirm a minute of the follower's clock,
# not until that time; SERVICE_ACCOUNT tokens are listed, cached, pruned
# and created as personal ones; the tokens of users in <prefix>inactive
# are not cached, and are again once the user leaves the set; past the
# search index's 10,000 tokens, the listing asked by spans of createdAt.

use strict;
use warnings;

use Test::More;
use POSIX ();
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::GraphQL;
use GmsTest::Subscriber;
use GmsTest::Tool qw(start_follow gms_account gms_args datahub_id key_of
                     listed now_ms hash_of);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $redis = GmsTest::Redis->start;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

my $dir = GmsTest::tempdir();

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzeW5jLXNhZmV0eSJ9.'
             . 'c2VjcmV0LXN5bmMtc2FmZXR5LXNpZ25hdHVyZS00OQ';
my $token_file = gms_account($SECRET, $dir);

my $now = now_ms();
my $alice = 'urn:li:corpuser:alice';
my $bob = 'urn:li:corpuser:bob';

my $gms = GmsTest::GraphQL->start(token => $SECRET);
my @gms = gms_args($gms->url, $token_file);
my @sync = ('sync', @gms, '--privileges', 'off', '--prune');

sub cached { return $redis->cmd(EXISTS => key_of($_[0])) }

# A run to its end: {rc, out, err, users}, the line of counts of the
# users' status that sync --gms ends with (t/51-inactive-users.t's) taken
# out of out into users.
sub run_tool {
    my $res = GmsTest::Tool::run_tool(@_);
    $res->{users} = $1 if $res->{out} =~ s/^(checked=[^\n]*\n)//m;
    return $res;
}

sub counts {
    my (%c) = @_;
    my $line = join ' ', map { "$_=" . ($c{$_} // 0) }
                         qw(tokens added updated unchanged expired pruned
                            kept);
    $line .= " held=$c{held}" if $c{held};
    $line .= " inactive=$c{inactive}" if $c{inactive};
    return "$line\n";
}

# The names cached, of those given.
sub cached_of { return [ grep { cached($_) } @_ ] }

# A fresh start: Redis empty, these tokens listed and cached.
sub cache_all {
    my (@tokens) = @_;
    $redis->cmd('FLUSHDB');
    $gms->misbehave;
    $gms->tokens(\@tokens);
    my $res = run_tool('', @sync, @at);
    is($res->{out}, counts(tokens => scalar @tokens,
                           added => scalar @tokens),
       scalar(@tokens) . ' tokens cached') or diag(explain($res));
}

# The tokens' urns asked with entityExists since clear_requests, per
# request (the users' status asks entityExists too, for users).
sub asked {
    return [ grep { @$_ }
             map { [ sort grep { /^urn:li:dataHubAccessToken:/ }
                     values %{ $_->{json}{variables} // {} } ] }
             grep { ($_->{json}{query} // '') =~ /\bentityExists\s*\(/ }
             @{ $gms->requests } ];
}

sub urn_of { return 'urn:li:dataHubAccessToken:' . datahub_id($_[0]) }

# The warning line of a sync's stderr, its numbers picked out.
my $SHRINK = qr/^gms-token: sync: warning: the listing lacks (\d+) of the (?x:
               )(\d+) tokens cached \((\d+) listed; GMS's search index (?x:
               )reindexed or restored\?\): (\d+) kept, GMS still has them; (?x:
               )(\d+) pruned; (\d+) held back/;


# --- a createdAt in the future: the grace counts on our clock -------------
#
# Started first, finished last: the minute of grace runs meanwhile.  A GMS
# of its own, a database of its own (the rest empties database 0).  The
# grace is for a token GMS cannot confirm gone: entityExists fails (and so
# does the users' status after the tokens, exit 4: the tokens' line is
# what is checked).

my $future_gms = GmsTest::GraphQL->start(token => $SECRET);
my @future = ('sync', gms_args($future_gms->url, $token_file),
              '--privileges', 'off', '--prune', '--db', 1, @at);
my ($future_t0, $future_t1);

{
    $future_gms->tokens([ listed('ahead-gone', created => $now + 3_600_000) ]);
    my $res = run_tool('', @future);
    is($res->{out}, counts(tokens => 1, added => 1),
       'createdAt an hour ahead: cached');
    $future_gms->tokens([]);
    $res = run_tool('', @future);
    is($res->{out}, counts(pruned => 1),
       'revoked at once, GMS says it is gone: pruned, no grace');
}

{
    $future_gms->tokens([ listed('ahead', created => $now + 3_600_000) ]);
    $future_t0 = int(time * 1000);
    my $res = run_tool('', @future);
    $future_t1 = int(time * 1000) + 1;
    is($res->{out}, counts(tokens => 1, added => 1),
       'createdAt an hour ahead: cached');
    $redis->cmd(SELECT => 1);
    my $c = $redis->cmd(HGET => key_of('ahead'), 'createdAt');
    $redis->cmd(SELECT => 0);
    ok($c >= $future_t0 && $c <= $future_t1,
       'its createdAt is the time of the sync, not the hour ahead')
        or diag("createdAt $c, sync from $future_t0 to $future_t1");

    $future_gms->tokens([]);
    $future_gms->misbehave(field => 'entityExists', status => 500);
    $res = run_tool('', @future);
    is($res->{out}, counts(kept => 1),
       'revoked at once, entityExists failing: kept for now, younger than '
       . 'a minute');
}


# --- the listing emptied: nothing pruned that GMS still has ---------------

my @twenty = map { listed("reindexed-$_") } 1 .. 20;

{
    cache_all(@twenty);
    my $sub = GmsTest::Subscriber->new($redis, 'gms:invalidate');
    my $before = $redis->dump_all;

    $gms->tokens([ map { { %$_, unlisted => 1 } } @twenty ]);
    $gms->clear_requests;
    my $res = run_tool('', @sync, @at);
    is_deeply([@$res{qw(rc out)}], [0, counts(kept => 20)],
              'an empty listing, GMS still has all 20: none pruned, 20 kept')
        or diag(explain($res));
    $redis->unchanged($before, '... Redis as it was');
    is_deeply([$sub->messages], [], '... nothing published');
    like($res->{err}, qr/\A$SHRINK\n\z/, '... one warning line on stderr');
    my @n = $res->{err} =~ $SHRINK;
    is_deeply(\@n, [20, 20, 0, 20, 0, 0],
              '... lacks 20 of 20 cached, 0 listed, 20 kept, 0 pruned, '
              . '0 held back');
    is_deeply(asked(), [ [ sort map { urn_of($_->{name}) } @twenty ] ],
              '... the 20 asked of GMS by urn in one entityExists request');
    my ($request) = grep { ($_->{json}{variables}{v0} // '')
                           =~ /^urn:li:dataHubAccessToken:/ }
                    @{ $gms->requests };
    like($request->{json}{query} // '',
         qr/^query \w+\(\$v0: String!, \$v1: String!.*\) \{ (?x:
            )a0: entityExists\(urn: \$v0\) a1: entityExists\(urn: \$v1\) /s,
         '... as aliases, the urns as variables');
}


# --- half the listing missing, some tokens truly revoked ------------------

{
    my @all = map { listed("half-$_") } 1 .. 300;
    cache_all(@all);
    my $sub = GmsTest::Subscriber->new($redis, 'gms:invalidate');

    # 150 gone from the index but not from GMS, 10 revoked (gone from both)
    my @unlisted = @all[0 .. 149];
    my @revoked = @all[150 .. 159];
    my @listed = @all[160 .. 299];
    $gms->tokens([ (map { { %$_, unlisted => 1 } } @unlisted), @listed ]);
    $gms->clear_requests;

    my $res = run_tool('', @sync, @at);
    is_deeply([@$res{qw(rc out)}],
              [0, counts(tokens => 140, unchanged => 140, pruned => 10,
                         kept => 150)],
              '160 of 300 unlisted: the 10 revoked pruned, 150 kept')
        or diag(explain($res));
    is_deeply(cached_of(map { $_->{name} } @all),
              [ map { $_->{name} } @unlisted, @listed ],
              '... exactly the 290 GMS has are cached');
    is_deeply([ sort $sub->messages ], [ sort map { $_->{id} } @revoked ],
              '... the 10 pruned published');
    my @n = $res->{err} =~ $SHRINK;
    is_deeply(\@n, [160, 300, 140, 150, 10, 0],
              '... a warning: lacks 160 of 300, 140 listed, 150 kept, '
              . '10 pruned');
    my $asked = asked();
    is_deeply([ map { scalar @$_ } @$asked ], [100, 60],
              '... 160 asked in 2 entityExists requests: 100, then 60');
    is_deeply([ sort map { @$_ } @$asked ],
              [ sort map { urn_of($_->{name}) } @unlisted, @revoked ],
              '... each unlisted token once');

    # back in the index: nothing to ask, no warning
    $gms->tokens([ @unlisted, @listed ]);
    $gms->clear_requests;
    $res = run_tool('', @sync, @at);
    is_deeply([@$res{qw(rc out err)}],
              [0, counts(tokens => 290, unchanged => 290), ''],
              'the index back: 290 listed, unchanged, no warning');
    is_deeply(asked(), [], '... entityExists not asked');
}


# --- a live token that offset paging skipped ------------------------------
#
# listAccessTokens pages by offset over an index that changes meanwhile: a
# token deleted on a page already read while another is created moves a
# live token past the pages read, the total still matching.  Page 2 of the
# stand-in lists a new token in place of the live 'skipped'.

{
    my @live = map { listed($_) } qw(race-1 race-2 skipped);
    cache_all(@live);

    $gms->misbehave(page => 2, token => listed('race-new'));
    $gms->clear_requests;
    my $res = run_tool('', @sync, '--page-size', 2, @at);
    is_deeply([@$res{qw(rc out err)}],
              [0, counts(tokens => 3, added => 1, unchanged => 2,
                         kept => 1), ''],
              'a live token the listing skipped: kept, GMS has it');
    ok(cached('skipped'), '... still cached');
    is_deeply(asked(), [ [ urn_of('skipped') ] ],
              '... asked for with entityExists');

    # revoked: missing from the listing and from GMS
    $gms->misbehave;
    $gms->tokens([ @live[0, 1] ]);
    $res = run_tool('', @sync, '--page-size', 2, @at);
    is($res->{out}, counts(tokens => 2, unchanged => 2, pruned => 2),
       'revoked (and the phantom): GMS has neither, pruned in this sync');
    ok(!cached('skipped') && !cached('race-new'), '... deleted');
}


# --- --max-prune while GMS cannot confirm ---------------------------------
#
# entityExists failing with HTTP 500: the users' status that sync asks
# after the tokens (entityExists too) fails on it as well, and the sync
# ends with exit 4 once the tokens are done; what is checked here is the
# tokens' line and the cache.

{
    my @all = map { listed("bound-$_") } 1 .. 100;
    cache_all(@all);

    # five revoked, entityExists failing: under 10% of 100, pruned
    $gms->tokens([ @all[5 .. 99] ]);
    $gms->misbehave(field => 'entityExists', status => 500);
    $gms->clear_requests;
    my $res = run_tool('', @sync, @at);
    is($res->{out}, counts(tokens => 95, unchanged => 95, pruned => 5),
       'entityExists failing, 5 of 100 unlisted: within the default 10%, '
       . 'pruned') or diag(explain($res));
    unlike($res->{err}, qr/warning/, '... no warning');
    is(scalar @{ asked() }, 1, '... entityExists was asked');

    # thirty more revoked: over 10%, none pruned
    my @kept = @all[35 .. 99];
    $gms->tokens(\@kept);
    my $before = $redis->dump_all;
    $res = run_tool('', @sync, @at);
    is($res->{out}, counts(tokens => 65, unchanged => 65, held => 30),
       '30 of 95 unlisted, not confirmed: over 10%, none pruned, held=30')
        or diag(explain($res));
    $redis->unchanged($before, '... Redis as it was');
    like($res->{err}, qr/^gms-token: sync: warning: 30 unlisted tokens not (?x:
                         )confirmed gone \(entityExists: [^\n]*HTTP 500[^\n]*\), (?x:
                         )more than --max-prune 10 of 95 cached: none (?x:
                         )pruned$/m,
         '... a warning: 30 not confirmed, HTTP 500, the bound 10 of 95');

    $res = run_tool('', @sync, '--max-prune', '29', @at);
    is($res->{out}, counts(tokens => 65, unchanged => 65, held => 30),
       '--max-prune 29: still held');
    $res = run_tool('', @sync, '--max-prune', '30%', @at);
    is($res->{out}, counts(tokens => 65, unchanged => 65, held => 30),
       '--max-prune 30% (29 of 95): still held');
    $redis->unchanged($before, '... Redis as it was');

    # GMS confirms again: all 30 pruned, whatever the bound
    $gms->misbehave;
    $res = run_tool('', @sync, '--max-prune', '0', @at);
    is_deeply([@$res{qw(rc out err)}],
              [0, counts(tokens => 65, unchanged => 65, pruned => 30), ''],
              'entityExists answering: the 30 confirmed gone pruned, '
              . '--max-prune 0 or not');

    # --max-prune 0: not even one without GMS's word
    $gms->tokens([ @kept[1 .. $#kept] ]);
    $gms->misbehave(field => 'entityExists', status => 500);
    $res = run_tool('', @sync, '--max-prune', '0', @at);
    is($res->{out}, counts(tokens => 64, unchanged => 64, held => 1),
       '--max-prune 0, entityExists failing: one revocation held');
    $res = run_tool('', @sync, '--max-prune', '1', @at);
    is($res->{out}, counts(tokens => 64, unchanged => 64, pruned => 1),
       '--max-prune 1: pruned');
    $gms->misbehave;

    # from stdin there is no GMS to ask: no bound unless one is given
    my $page = GmsTest::json_encode({ data => { listAccessTokens => {
        total => 1, tokens => [ $kept[1] ] } } });
    $before = $redis->dump_all;
    $res = run_tool("$page\n", 'sync', '--prune', '--max-prune', '10%', @at);
    is_deeply([@$res{qw(rc out)}],
              [0, counts(tokens => 1, unchanged => 1, held => 63)],
              'stdin, --max-prune 10%: 63 of 64 unlisted held');
    like($res->{err}, qr/\(stdin: no GMS to ask\)/, '... the warning says why');
    $redis->unchanged($before, '... Redis as it was');
    $res = run_tool("$page\n", 'sync', '--prune', @at);
    is($res->{out}, counts(tokens => 1, unchanged => 1, pruned => 63),
       'stdin without --max-prune: pruned, as always');

    # usage
    for my $bad ('101%', '-1', 'ten', '10%%', '', '5x') {
        $res = run_tool('', @sync, '--max-prune', $bad, @at);
        is_deeply([ $res->{rc}, $res->{err} =~ /--max-prune: '\Q$bad\E' is (?x:
                                               )neither a count of tokens/ ],
                  [2, 1], "--max-prune '$bad': usage error");
    }
    $res = run_tool('', 'sync', @gms, '--max-prune', '5', @at);
    is_deeply([ $res->{rc}, $res->{err} ],
              [2, "gms-token: sync: --max-prune needs --prune\n"],
              '--max-prune without --prune: usage error');
}


# --- a GMS whose pages never end -------------------------------------------

# The tool's peak resident memory in kB, run under GNU time if there is one.
sub peak_kb {
    my (@args) = @_;
    return undef unless -x '/usr/bin/time';
    my $out = GmsTest::tempdir() . '/time';
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', $out;
        exec('/usr/bin/time', '-f', 'peak %M', GmsTest::Tool::bin(), @args)
            or POSIX::_exit(127);
    }
    waitpid $pid, 0;
    my ($kb) = GmsTest::slurp($out) =~ /^peak (\d+)$/m;
    return $kb;
}

{
    my @all = map { listed("paged-$_") } 1 .. 250;
    cache_all(@all[0 .. 199]);
    $gms->tokens([ @all[50 .. 249] ]);
    my $before = $redis->dump_all;

    # a GMS, or a proxy in front of it, that drops start: page 1 again and
    # again, under a total of 10^9
    $gms->misbehave(ignore_start => 1, total => 10**9);
    $gms->clear_requests;
    my $t0 = time;
    my $res = run_tool('', @sync, @at);
    my $took = time - $t0;
    is($res->{rc}, 4, 'start ignored, total 10^9: exit 4');
    like($res->{err}, qr/\Agms-token: sync: \S+: page 2 \(start 100\) lists (?x:
                         )only tokens of the pages before \(GMS, or a proxy (?x:
                         )in front of it, ignores start; or tokens come (?x:
                         )faster than the pages\): the listing is (?x:
                         )refused\n\z/, '... one line saying so');
    is($res->{out}, '', '... nothing on stdout');
    is($gms->count('listAccessTokens'), 2, '... after 2 pages');
    ok($took < 10, sprintf '... within seconds (%.2f s)', $took);
    note(sprintf 'start ignored, total 10^9: refused in %.2f s', $took);
    $redis->unchanged($before, '... nothing written, nothing pruned');

    my $kb = peak_kb(@sync, @at);
    SKIP: {
        skip 'no /usr/bin/time to measure the peak memory', 1
            unless defined $kb;
        ok($kb < 64 * 1024, "... its memory bounded: peak $kb kB");
    }

    # tokens made while the listing runs: the first page says 200 tokens,
    # the next ones 400, 200 of them new (expiring first: listed last); no
    # more pages than 200 allows (4 of 50), and two more.  Page 1 waits 2 s
    # on its way back: the new tokens come meanwhile.
    $gms->misbehave(page => 1, delay => 2);
    $gms->clear_requests;
    my $run = GmsTest::Tool::start_tool('', @sync, '--page-size', 50, @at);
    ok(GmsTest::wait_until(sub { $gms->count('listAccessTokens') >= 1 }, 5),
       'page 1 asked');
    sleep 0.5;
    $gms->tokens([ @all[50 .. 249],
                   map { listed("paged-new-$_",
                                expires => $now + 10 * 86_400_000 + $_) }
                       1 .. 200 ]);
    $res = GmsTest::Tool::finish_tool($run);
    $res->{users} = $1 if $res->{out} =~ s/^(checked=[^\n]*\n)//m;
    is($res->{rc}, 4, 'a total of 200 at first, then 400: exit 4');
    like($res->{err}, qr/\Agms-token: sync: \S+: page 6 and the listing (?x:
                         )goes on, past the 6 pages its first total \(200 (?x:
                         )tokens\) allows: the listing is refused\n\z/,
         '... one line saying so') or diag(explain($res));
    is($gms->count('listAccessTokens'), 6, '... after 6 pages of 50');
    $redis->unchanged($before, '... nothing written, nothing pruned');

    $gms->tokens([ @all[50 .. 249] ]);
    $gms->misbehave;
    $gms->clear_requests;
    $res = run_tool('', @sync, '--page-size', 50, @at);
    is($res->{out}, counts(tokens => 200, added => 50, unchanged => 150,
                           pruned => 50),
       'GMS behaving: synced');
    is($gms->count('listAccessTokens'), 4, '... in 4 pages of 50');
}


# --- service accounts' tokens (DataHub 1.4+) -------------------------------

{
    my $svc = 'urn:li:corpuser:service_0b7e6a2c-52f1-4c3d-8e9a-1f2e3d4c5b6a';
    my @tokens = (listed('svc-ingest', actor => $svc),
                  listed('svc-ci', actor => $svc), listed('alice-own'));
    cache_all();
    $gms->users({ $svc => { service_account => 1 } });
    $gms->tokens(\@tokens);

    my $res = run_tool('', @sync, @at);
    is($res->{out}, counts(tokens => 3, added => 3),
       "a service account's tokens listed like any: cached");
    is(hash_of($redis, key_of('svc-ci'))->{actor}, $svc,
       '... as the service account');
    like($res->{users} // '', qr/^checked=2 inactive=0 /,
         '... the account a holder like any user');

    $gms->tokens([ @tokens[0, 2] ]);
    $res = run_tool('', @sync, @at);
    is($res->{out}, counts(tokens => 2, unchanged => 2, pruned => 1),
       'one revoked: pruned, GMS has it no more');
    ok(!cached('svc-ci') && cached('svc-ingest'), '... that one only');

    # the account deleted: DataHub 1.2+ refuses its tokens
    $gms->users({ $svc => { service_account => 1, deleted => 1 } });
    $res = run_tool('', @sync, @at);
    ok(!cached('svc-ingest'), 'the service account deleted: its token '
                              . 'dropped');
    $res = run_tool('', @sync, @at);
    is($res->{out}, counts(tokens => 2, unchanged => 1, inactive => 1),
       '... and not written again');
    $gms->users({});
}


# --- follow records the warning in <prefix>sync ---------------------------

{
    cache_all(@twenty);
    $gms->tokens([ map { { %$_, unlisted => 1 } } @twenty ]);

    my $f = start_follow(@gms, '--interval', '1s', '--privileges', 'off',
                         @at);
    my $h = {};
    ok(GmsTest::wait_until(sub {
        $h = { @{ $redis->cmd(HGETALL => 'gms:sync') } };
        ($h->{warning} // '') ne ''
    }, 15), 'follow, the listing emptied: gms:sync has a warning')
        or diag(explain($h));
    like($h->{warning} // '', qr/^the listing lacks 20 of the 20 tokens (?x:
                                )cached \(0 listed; .*\): 20 kept/,
         '... with the numbers');
    ok(($h->{warning_at} // 0) >= $now, '... and warning_at');
    is_deeply(cached_of(map { $_->{name} } @twenty),
              [ map { $_->{name} } @twenty ], '... nothing pruned');

    $gms->tokens(\@twenty);
    ok(GmsTest::wait_until(sub {
        ($redis->cmd(HGET => 'gms:sync', 'warning') // 'x') eq ''
    }, 15), 'the index back: the warning cleared');
    ok($redis->cmd(HGET => 'gms:sync', 'warning_at') >= $now,
       '... warning_at stays, as error_at does');

    kill 'TERM', $f->{pid};
    waitpid $f->{pid}, 0;
}


# --- users in <prefix>inactive --------------------------------------------
#
# The users' status (t/51-inactive-users.t) puts bob into gms:inactive at
# the end of a sync and takes him out at the end of another; the token
# cycle of the syncs in between writes none of his tokens.

{
    my @tokens = (listed('alice-1'), listed('bob-1', actor => $bob),
                  listed('bob-2', actor => $bob,
                         expires => $now - 1000));
    cache_all(@tokens[0, 1]);
    $gms->tokens(\@tokens);
    $gms->users({ $bob => { status => 'SUSPENDED' } });
    my $sub = GmsTest::Subscriber->new($redis, 'gms:invalidate');

    my $res = run_tool('', @sync, @at);
    is($res->{out}, counts(tokens => 3, unchanged => 2, expired => 1),
       'bob suspended, not yet in gms:inactive: his token written');
    is_deeply($redis->cmd(SMEMBERS => 'gms:inactive'), [$bob],
              '... then the users\' status put him there');
    ok(!cached('bob-1'), '... and dropped his token');
    $sub->messages;

    $res = run_tool('', @sync, @at);
    is_deeply([@$res{qw(rc out err)}],
              [0, counts(tokens => 3, unchanged => 1, expired => 1,
                         inactive => 1), ''],
              'bob in gms:inactive: his live token not written, counted '
              . 'inactive=1 (the expired one is expired)');
    ok(!cached('bob-1'), '... not cached');
    is_deeply([$sub->messages], [], '... nothing published');
    ok(cached('alice-1'), "alice's token stays");

    # from stdin, the same
    my $page = GmsTest::json_encode({ data => { listAccessTokens => {
        total => 2, tokens => [ @tokens[0, 1] ] } } });
    $res = run_tool("$page\n", 'sync', @at);
    is($res->{out}, counts(tokens => 2, unchanged => 1, inactive => 1),
       'from stdin too: not written');
    ok(!cached('bob-1'), '... not cached');

    # a token cached behind the follower's back: deleted and published
    $redis->cmd(HSET => key_of('bob-1'), actor => $bob);
    $res = run_tool("$page\n", 'sync', @at);
    is($res->{out}, counts(tokens => 2, unchanged => 1, inactive => 1),
       'bob\'s token found cached: inactive=1');
    ok(!cached('bob-1'), '... deleted');
    is_deeply([$sub->messages], [datahub_id('bob-1')], '... its id published');

    # active again: out of the set at the end of a sync, and his tokens
    # written back by the same check (listed by actorUrn), not a sync later
    $gms->users({});
    $res = run_tool('', @sync, @at);
    is($res->{out}, counts(tokens => 3, unchanged => 1, expired => 1,
                           inactive => 1),
       'bob active again: still in the set for this token cycle');
    is_deeply($redis->cmd(SMEMBERS => 'gms:inactive'), [],
              '... then out of it');
    is(hash_of($redis, key_of('bob-1'))->{actor}, $bob,
       '... and his token cached again by the same sync');
    is_deeply([$sub->messages], [datahub_id('bob-1')], '... published');
    $res = run_tool('', @sync, @at);
    is($res->{out}, counts(tokens => 3, unchanged => 2, expired => 1),
       '... found unchanged by the next sync');

    $redis->cmd(SET => 'gms:inactive', 'not a set');
    my $before = $redis->dump_all;
    $res = run_tool("$page\n", 'sync', @at);
    is($res->{rc}, 3, '<prefix>inactive not a set: a Redis error, exit 3');
    like($res->{err}, qr/WRONGTYPE/, '... saying so');
    $redis->unchanged($before, '... nothing written');
    $redis->cmd(DEL => 'gms:inactive');
}


# --- the createdAt in the future, a minute of our clock later -------------

{
    my $wait = $future_t1 + 61_000 - int(time * 1000);
    note(sprintf 'waiting %.1f s for the minute of grace to pass',
         $wait / 1000) if $wait > 0;
    sleep($wait / 1000) if $wait > 0;
    my $res = run_tool('', @future);
    is($res->{out}, counts(pruned => 1),
       'createdAt an hour ahead, a minute later on our clock: pruned');
    $future_gms->stop;
}


# --- past the search index's 10,000 ------------------------------------------

# GMS pages listAccessTokens through Elasticsearch, which refuses a page
# past index.max_result_window (10,000: DataHub keeps the default): past
# that, sync asks by spans of createdAt, each within the window.
{
    my $big = GmsTest::GraphQL->start(token => $SECRET,
                                      max_result_window => 10_000);
    my @big_sync = ('sync', gms_args($big->url, $token_file),
                    '--privileges', 'off', '--prune', '--inactive', 'keep');
    my $day = 86_400_000;

    # 25,000 tokens made over a year, a few an hour
    my @tokens = map { listed("window-$_", created => $now - 365 * $day
                                                    + $_ * 1_261_000) }
                 1 .. 25_000;
    $big->tokens(\@tokens);
    $redis->cmd('FLUSHDB');

    my $res = run_tool('', @big_sync, '--page-size', 1000, @at);
    is($res->{rc}, 0, '25,000 tokens, a window of 10,000: exit 0')
        or diag($res->{err});
    is($res->{out}, counts(tokens => 25_000, added => 25_000),
       '... every token listed and cached');
    is($redis->cmd('DBSIZE'), 25_000, '... 25,000 keys in Redis');

    my @pages = grep { defined } @{ $big->pages_asked };
    my @past = grep { $_->[0] + $_->[1] > 10_000 } @pages;
    is(scalar @past, 0, '... no page asked past the 10,000th token');
    my $asked = $big->count('listAccessTokens');
    ok($asked < 25 + 3 * 54,
       "... in $asked requests (25 pages of 1,000 and the halvings)");
    note("25,000 tokens listed in $asked listAccessTokens requests");

    # 10,001 tokens made in the same millisecond cannot be paged through
    my $at = $now - $day;
    $big->tokens([ map { listed("same-ms-$_", created => $at) }
                   1 .. 10_001 ]);
    my $before = $redis->dump_all;
    $res = run_tool('', @big_sync, '--page-size', 1000, @at);
    is($res->{rc}, 4, '10,001 tokens made in one millisecond: exit 4');
    like($res->{err}, qr/\Agms-token: sync: \S+: more than 10000 tokens (?x:
                         )were created at $at ms: they cannot be listed (?x:
                         )page by page \(the search index's (?x:
                         )max_result_window\)\n\z/, '... one line saying so')
        or diag(explain($res));
    $redis->unchanged($before, '... nothing written, nothing pruned');
    $big->stop;
}

done_testing();

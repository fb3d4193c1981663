#!/usr/bin/perl

# gms-token follow: sync --prune from GMS every --interval, against a real
# redis-server and the stand-in GMS (GmsTest::GraphQL).  A token DataHub
# starts listing is cached, one it stops listing (revoked) is deleted, and
# each is published on <prefix>invalidate; a cycle is one line with its
# counts; <prefix>sync holds the last success and the last error; a failed
# listing prunes nothing and is retried later and later (fewer requests to
# GMS); a Redis outage is survived; SIGTERM and SIGINT end it with exit 0,
# in its wait or in a slow GMS request; bad options are usage errors.
# The privileges mirror runs in its own thread, every
# --privileges-interval: a revocation is pruned within an interval while
# the mirror is stuck in a slow GMS request (measured and printed).
# Also what one 'sync' publishes, the systemd unit example and the
# container's way of running follow, checked against 'follow --help'.
# Two followers sharing one Redis (the lease): t/48-follow-lease.t.

use strict;
use warnings;

use Test::More;
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::GraphQL;
use GmsTest::Subscriber;
use GmsTest::Tool qw(run_tool start_follow stop_follow out_lines err_lines
                     ok_lines gms_account gms_args datahub_id key_of listed
                     now_ms);

my $repo = abs_path(dirname(__FILE__) . '/..');
my $bin = GmsTest::Tool::bin();

GmsTest::Tool::need_tool();
GmsTest::need_redis();

# glibc fills what malloc returns with this byte: a field the tool reads
# before it wrote it (a token's "changed", once) shows as a token published
# that did not change
$ENV{MALLOC_PERTURB_} //= 165;

my $redis = GmsTest::Redis->start;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

my $dir = GmsTest::tempdir();

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmb2xsb3cifQ.'
             . 'c2VjcmV0LWdtcy1mb2xsb3ctc2lnbmF0dXJlLTQz';
my $token_file = gms_account($SECRET, $dir);

my $now = now_ms();
my $future = $now + 30 * 86_400_000;
my $alice = 'urn:li:corpuser:alice';

sub cached { return $redis->cmd(EXISTS => key_of($_[0])) }
sub health { return { @{ $redis->cmd(HGETALL => 'gms:sync') } } }

my $TIME = qr/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/;
my $OK_LINE = qr/^gms-token follow: $TIME ok tokens=(\d+) added=(\d+) (?x:
                 )updated=(\d+) unchanged=(\d+) expired=(\d+) pruned=(\d+) (?x:
                 )kept=(\d+)(?: spans=\d+\/\d+)? in \d+ms\z/;
my $PRIVILEGES_LINE = qr/^gms-token follow: $TIME privileges ok (?x:
                         )users=(\d+) changed=(\d+) removed=(\d+) (?x:
                         )skipped=(\d+) checked=(\d+) inactive=(\d+) (?x:
                         )newly=(\d+) reactivated=(\d+) dropped=(\d+) (?x:
                         )unknown=(\d+) in (\d+)ms\z/;
my $FAILED_LINE = qr/^gms-token follow: $TIME failed \((GMS|Redis)\): (.+); (?x:
                     )next try in (\d+\.\d)s\z/;
my $LEASE_TAKEN = qr/^gms-token follow: $TIME lease taken: (\S+) works\z/;
my $LEASE_RELEASED = qr/^gms-token follow: $TIME lease released: (\S+)\z/;

sub privileges_lines {
    return grep { $_ =~ $PRIVILEGES_LINE } out_lines($_[0]);
}

# The dataset but for the follower's own keys: the lease, and its name in
# gms:sync (a follower takes the lease before it asks GMS anything)
sub tokens_dump {
    return join "\n", grep { !/^gms:(?:lease|sync) / } split /\n/,
                                                          $redis->dump_all;
}

my $gms = GmsTest::GraphQL->start(token => $SECRET);
my @gms = gms_args($gms->url, $token_file);


# --- sync publishes what it changes -------------------------------------------

{
    my $sub = GmsTest::Subscriber->new($redis, 'gms:invalidate');

    $gms->tokens([ listed('new'), listed('same'), listed('moved'),
                   listed('expired-cached', expires => $now - 1000),
                   listed('expired-not-cached', expires => $now - 1000) ]);

    $redis->cmd(HSET => key_of('same'), actor => $alice,
                expiresAt => $future, createdAt => $now - 86_400_000);
    $redis->cmd(HSET => key_of('moved'), actor => 'urn:li:corpuser:bob',
                expiresAt => $future);
    $redis->cmd(HSET => key_of('expired-cached'), actor => $alice);
    $redis->cmd(HSET => key_of('revoked'), actor => $alice,
                createdAt => $now - 86_400_000);
    $redis->cmd(HSET => 'gms:token:not-an-id', actor => $alice);

    my $res = run_tool('', 'sync', @gms, '--prune',
                       '--privileges', 'off', @at);
    is_deeply([@$res{qw(rc out err)}],
              [0, "tokens=5 added=1 updated=1 unchanged=1 expired=2 "
                  . "pruned=2 kept=0\n"
                  . "checked=1 inactive=0 newly=0 reactivated=0 dropped=0 "
                  . "unknown=0\n", ''],
              'sync --prune: its line as before, then the users\' status');
    is_deeply([sort $sub->messages],
              [sort map { datahub_id($_) }
                        qw(new moved expired-cached revoked)],
              'published: the ids of the token added, the one changed, the '
              . 'expired one deleted and the one pruned; not the unchanged '
              . 'one, the expired one that was not cached, nor a key that '
              . 'holds no id');
    is($redis->cmd(EXISTS => 'gms:token:not-an-id'), 0,
       'the key that holds no id: pruned all the same');

    $res = run_tool('', 'sync', @gms, '--prune',
                       '--privileges', 'off', @at);
    is($res->{rc}, 0, 'again');
    is_deeply([$sub->messages], [], 'again: nothing changed, nothing '
                                    . 'published');

    my $page = GmsTest::json_encode({ data => { listAccessTokens => {
        total => 1, tokens => [ listed('from-stdin') ] } } });
    $res = run_tool("$page\n", 'sync', @at);
    is($res->{rc}, 0, 'sync from stdin');
    is_deeply([$sub->messages], [datahub_id('from-stdin')],
              'sync from stdin publishes as well');

    my $other = GmsTest::Subscriber->new($redis, 'edge/7:invalidate');
    $res = run_tool('', 'sync', @gms, '--prefix', 'edge/7:', @at);
    is($res->{rc}, 0, '--prefix edge/7:');
    is_deeply([sort $other->messages],
              [sort map { datahub_id($_) } qw(new same moved)],
              "--prefix: published on the prefix's channel");
    is_deeply([$sub->messages], [], '--prefix: nothing on gms:invalidate');

    $redis->cmd('FLUSHALL');
}


# --- --prune asks GMS's entity store for the tokens its listing misses ------

{
    # listAccessTokens pages by offset over a search index: a token deleted
    # on a page already read and another created meanwhile leave the total
    # right and move a live token past the pages read.  The stand-in's page
    # 2 lists a new token in place of the live 'skipped'.  (The entity
    # store's answers in full: t/49-sync-safety.t.)
    my @live = map { listed($_) } qw(race-1 race-2 skipped);
    my @sync = ('sync', @gms, '--prune', '--privileges', 'off',
                '--page-size', '2', @at);
    my $urn = sub { "urn:li:dataHubAccessToken:" . datahub_id($_[0]) };
    # the URNs each entityExists request asked about
    my $asked = sub {
        [ grep { @$_ }
          map { [ sort grep { /^urn:li:dataHubAccessToken:/ }
                  values %{ $_->{json}{variables} // {} } ] }
          grep { ($_->{json}{query} // '') =~ /\bentityExists\s*\(\s*urn/ }
          @{ $gms->requests } ]
    };

    $gms->tokens(\@live);
    my $res = run_tool('', @sync);
    like($res->{out}, qr/^tokens=3 added=3 updated=0 unchanged=0 expired=0 (?x:
                         )pruned=0 kept=0\n/, 'race: the three tokens cached');

    $gms->misbehave(page => 2, token => listed('race-new'));
    $gms->clear_requests;
    $res = run_tool('', @sync);
    is($res->{rc}, 0, 'a live token the listing skipped: exit 0');
    like($res->{out}, qr/^tokens=3 added=1 updated=0 unchanged=2 (?x:
                         )expired=0 pruned=0 kept=1\n/,
         '... kept: the entity store has it');
    ok(cached('skipped'), '... still cached');
    is_deeply($asked->(), [ [ $urn->('skipped') ] ],
              '... asked of entityExists, in one request');

    # revoked: missing from the listing and from the entity store
    $gms->misbehave;
    $gms->tokens([ @live[0, 1] ]);
    $gms->clear_requests;
    $res = run_tool('', @sync);
    like($res->{out}, qr/^tokens=2 added=0 updated=0 unchanged=2 expired=0 (?x:
                         )pruned=2 kept=0\n/,
         'revoked (and the phantom): gone from the entity store, pruned in '
         . 'this sync');
    ok(!cached('skipped') && !cached('race-new'), '... deleted');
    is_deeply($asked->(), [ [ sort map { $urn->($_) } qw(skipped race-new) ] ],
              '... both asked of entityExists, in one request');

    $redis->cmd('FLUSHALL');
}


# --- usage errors --------------------------------------------------------------

{
    $gms->clear_requests;
    my $before = $redis->dump_all;
    my @cases = (
        [ [@gms, '--interval', '0s'], qr/--interval: '0s'/ ],
        [ [@gms, '--interval', '500ms'], qr/--interval: '500ms'/ ],
        [ [@gms, '--interval', 'soon'], qr/--interval: 'soon'/ ],
        [ [@gms, '--interval', '2d'], qr/--interval: '2d'/ ],
        [ [@gms, '--privileges-interval', '0s'],
          qr/--privileges-interval: '0s' is not a time from 1s to 1d/ ],
        [ [@gms, '--privileges-interval', '900ms'],
          qr/--privileges-interval: '900ms'/ ],
        [ [@gms, '--privileges-interval', '2d'],
          qr/--privileges-interval: '2d'/ ],
        [ [@gms, '--max-prune', '200%'], qr/--max-prune: '200%'/ ],
        [ [@gms, '--inactive', 'maybe'],
          qr/--inactive: 'maybe' is not refuse, keep or mark/ ],
        [ [@gms, '--privileges', 'all'], qr/--privileges: 'all'/ ],
        [ [@gms, '--page-size', '0'], qr/--page-size: '0'/ ],
        [ [@gms, '--prune'], qr/--prune is not an option of follow/ ],
        [ ['--interval', '1s'], qr/--gms URL is required/ ],
        # an unset GMS_URL in the unit's settings: a usage error, no retries
        [ ['--gms', '', '--gms-token-file', $token_file],
          qr/--gms: '' is not an http:\/\/ or https:\/\/ URL/ ],
        [ ['--gms', 'datahub-gms:8080', '--gms-token-file', $token_file],
          qr/--gms: 'datahub-gms:8080' is not an http/ ],
        [ [@gms, 'extra'], qr/too many arguments/ ],
    );
    for my $c (@cases) {
        my ($args, $re) = @$c;
        my $shown = join ' ', 'follow', grep { $_ ne $gms->url
                                               && $_ ne $token_file } @$args;
        my $res = run_tool('', 'follow', @$args, @at);
        is_deeply([$res->{rc}, $res->{out}], [2, ''],
                  "$shown: exit 2, nothing on stdout");
        like($res->{err}, qr/^gms-token: follow: [^\n]*$re[^\n]*\n\z/,
             "$shown: one line naming the fault");
    }
    for my $c ([ ['--redis', 'nowhere'], qr/--redis: 'nowhere' is neither/ ],
               [ ['--password-file', "$dir/missing"],
                 qr/--password-file: cannot open \S*missing/ ]) {
        my ($args, $re) = @$c;
        my $res = run_tool('', 'follow', @gms, @at, @$args);
        is_deeply([$res->{rc}, $res->{out}], [2, ''],
                  "follow $args->[0] $args->[1]: exit 2 at once");
        like($res->{err}, qr/^gms-token: follow: $re[^\n]*\n\z/,
             "follow $args->[0]: one line naming the fault");
    }
    is($redis->dump_all, $before, 'usage errors: Redis untouched');
    is_deeply($gms->requests, [], 'usage errors: GMS not asked');

    my $help = run_tool('', 'follow', '--help');
    like($help->{out}, qr/--interval TIME.*--privileges-interval TIME(?x:
                          ).*--privileges MODE/s,
         'follow --help names --interval, --privileges-interval and '
         . '--privileges');
    like($help->{out}, qr/between mirrors: 60s \(default\); at least 1s/,
         '... with the default and the least of --privileges-interval');
    like(run_tool('', '--help')->{out}, qr/^  follow  /m,
         'gms-token --help lists follow');
}


# --- a follower: new tokens, revocations, health ------------------------------

my @tokens = map { listed("follow-$_") } 1 .. 5;

{
    $gms->tokens([@tokens[0 .. 2]]);
    my $sub = GmsTest::Subscriber->new($redis, 'gms:invalidate');

    my $t0 = int(time * 1000);
    my $f = start_follow(@gms, '--interval', '1s', '--privileges', 'off',
                         '--page-size', '2', @at);

    ok(GmsTest::wait_until(sub { ok_lines($f) >= 1 }, 10),
       'the first cycle at once: an ok line');
    # the token cycle's line; the users' check prints its own, before or
    # after it
    my ($taken) = out_lines($f);
    my ($first) = ok_lines($f);
    like($taken // '', $LEASE_TAKEN, 'first, the lease taken: one line');
    my ($me) = ($taken // '') =~ $LEASE_TAKEN;
    like($me // '', qr/^[^:\s]+:$f->{pid}:[0-9a-f]{16}\z/,
         '... naming the follower: host:pid:nonce');
    like($first // '', $OK_LINE, 'the line: time, counts, duration');
    my @n = ($first // '') =~ $OK_LINE;
    is_deeply([@n[0 .. 6]], [3, 3, 0, 0, 0, 0, 0],
              'first cycle: 3 tokens, 3 added');
    is_deeply([ grep { $_ } map { cached("follow-$_") } 1 .. 3 ], [1, 1, 1],
              'the three tokens cached');

    my $h = health();
    ok($h->{at} >= $t0 && $h->{at} <= int(time * 1000),
       'gms:sync at: the time of the sync') or diag(explain($h));
    is_deeply([@$h{qw(tokens error failures interval holder)}],
              [3, '', 0, 1000, $me],
              'gms:sync: tokens 3, error "", failures 0, interval 1000, '
              . 'holder: the follower');
    ok(GmsTest::wait_until(sub { privileges_lines($f) >= 1 }, 10),
       "--privileges off: the second thread's line all the same (the "
       . "users' status)");
    like((privileges_lines($f))[0] // '',
         qr/ privileges ok users=0 changed=0 removed=0 skipped=0 checked=1 /,
         '... no privileges mirrored, alice checked');
    is(health()->{users}, 0, 'gms:sync users: 0');
    is($redis->cmd(GET => 'gms:lease'), $me, 'gms:lease: its value');
    my $pttl = $redis->cmd(PTTL => 'gms:lease');
    ok($pttl > 0 && $pttl <= 4000,
       "... for 2 intervals and 2 s at most: PTTL $pttl ms");
    is_deeply([sort $sub->messages],
              [sort map { $_->{id} } @tokens[0 .. 2]],
              'the new tokens published');

    # DataHub lists a new token; it stops listing a revoked one
    $gms->tokens([@tokens[1 .. 3]]);
    ok(GmsTest::wait_until(sub { cached('follow-4') && !cached('follow-1') },
                           10),
       'a token DataHub now lists is cached, a revoked one deleted');
    is_deeply([sort $sub->messages],
              [sort map { $_->{id} } @tokens[0, 3]],
              'both published: the new one and the revoked one');
    my $at = health()->{at};
    ok(GmsTest::wait_until(sub { health()->{at} > $at }, 10),
       'gms:sync at moves on with each cycle');
    is_deeply([$sub->messages], [], 'a cycle that changes nothing '
                                    . 'publishes nothing');

    # the listing fails on its second page: nothing pruned, nothing written
    # (failing first: a cycle between the two must not see the new list)
    $gms->misbehave(page => 2, status => 500);
    $gms->tokens([@tokens[2 .. 4]]);
    ok(GmsTest::wait_until(sub { health()->{error} }, 10),
       'GMS failing: the error recorded');
    my $failed = health();
    like($failed->{error}, qr/HTTP 500/, 'gms:sync error: the HTTP 500');
    ok($failed->{error_at} >= $failed->{at}, 'gms:sync error_at');
    is($failed->{tokens}, 3, 'gms:sync tokens: the last success');
    ok(cached('follow-2') && cached('follow-3') && !cached('follow-5'),
       'no prune after a failed listing, and nothing of page 1 written');

    ok(GmsTest::wait_until(sub {
        (grep { $_ =~ $FAILED_LINE } err_lines($f)) >= 2
    }, 10), 'two failed cycles');
    $gms->clear_requests;
    my @failed = grep { $_ =~ $FAILED_LINE } err_lines($f);
    my @waits = map { ($_ =~ $FAILED_LINE)[2] } @failed;
    like($failed[0], qr/failed \(GMS\): \S+: HTTP 500; next try/,
         'a failed line: GMS, and what it said');
    ok($waits[0] >= 1.8 && $waits[0] <= 2.2 && $waits[1] >= 3.6
       && $waits[1] <= 4.4, "waits after failures double: @waits[0, 1] s");
    is(health()->{failures}, 2, 'gms:sync failures: 2 in a row');
    sleep 3;
    my $asked = @{ $gms->requests };
    ok($asked <= 1, "backing off: $asked request(s) in 3 s at an interval "
                    . 'of 1 s');
    is_deeply([$sub->messages], [], 'the failures published nothing');

    $gms->misbehave;
    my $oks = ok_lines($f);
    ok(GmsTest::wait_until(sub { ok_lines($f) > $oks }, 10),
       'GMS back: a cycle succeeds');
    ok(!cached('follow-2') && cached('follow-5'), 'then pruned and added');
    is_deeply([@{ health() }{qw(error failures)}], ['', 0],
              'gms:sync: error "" and failures 0 again');
    is_deeply([sort $sub->messages],
              [sort map { $_->{id} } @tokens[1, 4]], 'and published');

    # Redis goes away (losing its data) and comes back
    $redis->stop;
    ok(GmsTest::wait_until(sub {
        grep { /failed \(Redis\): .*redis 127\.0\.0\.1:\d+/ } err_lines($f)
    }, 10), 'Redis down: a failed (Redis) line');
    $redis->start_again;
    $oks = ok_lines($f);
    ok(GmsTest::wait_until(sub { ok_lines($f) > $oks }, 15),
       'Redis back: a cycle succeeds on a new connection');
    ok(cached('follow-3') && cached('follow-4') && cached('follow-5'),
       'the tokens cached again');
    is(health()->{tokens}, 3, 'gms:sync written again');
    is(health()->{holder}, $me, '... the holder too');
    my @again = grep { /lease taken again/ } err_lines($f);
    is(scalar @again, 1, 'Redis lost the lease with its data: taken again, '
                         . 'one line on stderr');
    like($again[0] // '', qr/^gms-token follow: $TIME lease taken again: (?x:
                             )it had expired \(/, '... saying it had expired');

    is(stop_follow($f, 'TERM'), 0, 'SIGTERM: exit 0');
    my @out = out_lines($f);
    like($out[-1], qr/^gms-token follow: \S+ stopped by SIGTERM\z/,
         'the last line says so');
    like($out[-2], $LEASE_RELEASED, '... after the lease released');
    is($redis->cmd(EXISTS => 'gms:lease'), 0, '... deleted from Redis');
    is(health()->{holder}, '', '... gms:sync holder: "", nobody works');
    is_deeply([ grep { $_ !~ $OK_LINE && $_ !~ $PRIVILEGES_LINE }
                @out[1 .. $#out - 2] ], [],
              'every other line on stdout is a cycle of either thread');
    is_deeply([ grep { $_ !~ $FAILED_LINE } err_lines($f) ],
              [ grep { /lease taken again/ } err_lines($f) ],
              'every line on stderr is a failed cycle, but one');
    ok(index(GmsTest::slurp($f->{out}) . GmsTest::slurp($f->{err}),
             $SECRET) < 0, 'the GMS token never shown');
}


# --- a set larger than the edge accepts: skipped, the cycle ok -------------

{
    $gms->tokens([ $tokens[0] ]);
    $gms->policies([ { urn => 'urn:li:dataHubPolicy:many',
                       privileges => [ map { "PRIVILEGE_$_" } 1 .. 257 ],
                       actors => { users => [$alice] } } ]);
    $redis->cmd(DEL => "gms:actor:$alice");

    $gms->clear_requests;
    my $f = start_follow(@gms, '--interval', '1h', @at);
    ok(GmsTest::wait_until(sub { privileges_lines($f) >= 1 }, 10),
       '257 privileges for alice: the mirror is ok');
    is(scalar(grep { ($_->{json}{query} // '') =~ /\{\s*listAccessTokens\b/
                     && !@{ $_->{json}{variables}{input}{filters} } }
              @{ $gms->requests }), 1,
       'the mirror lists no token: the token cycle listed them once (and '
       . 'asked by urn for those it pruned) and handed their holders over');
    like((privileges_lines($f))[0] // '',
         qr/ privileges ok users=1 changed=0 removed=0 skipped=1 checked=1 /,
         '... alice skipped, counted on the line of the mirror');
    is_deeply([err_lines($f)],
              ['gms-token: follow: ' . $gms->url . ": $alice has 257 "
               . 'privileges, more than the edge accepts (256): the set '
               . 'left as it was'],
              '... one line on stderr');
    is($redis->cmd(EXISTS => "gms:actor:$alice"), 0, '... no set written');
    is_deeply([@{ health() }{qw(failures users privileges_error
                               privileges_failures privileges_interval)}],
              [0, 1, '', 0, 60000],
              '... no failure recorded; gms:sync: users 1, '
              . 'privileges_interval 60000 (the default)');
    ok(health()->{privileges_at} >= health()->{at} - 5000,
       'gms:sync privileges_at: the time of the mirror');
    is(stop_follow($f, 'TERM', 5), 0, 'stopped');
    $gms->policies([]);
}


# --- a revocation never waits for the privileges mirror ---------------------

{
    # GMS takes 10 s to answer listPolicies: the mirror, in its thread, is
    # stuck in that request; the token cycle goes on every second.  Before
    # the mirror had a thread of its own, a cycle was tokens then mirror:
    # a token revoked just after a token cycle waited for the mirror, 10 s.
    my $slow = GmsTest::GraphQL->start(token => $SECRET, workers => 4,
        tokens => [ listed('slow-kept'), listed('slow-revoked') ],
        policies => [ { urn => 'urn:li:dataHubPolicy:tokens',
                        privileges => ['MANAGE_ACCESS_TOKENS'],
                        actors => { users => [$alice] } } ]);
    my $delay = 10;
    my $interval = 1;
    $slow->misbehave(field => 'listPolicies', delay => $delay);

    my $f = start_follow(gms_args($slow->url, $token_file), '--interval',
                         "${interval}s", '--privileges-interval', '1s',
                         @at);
    ok(GmsTest::wait_until(sub { cached('slow-revoked') }, 10),
       'slow mirror: the tokens cached by the first token cycle');
    my $asked_policies = sub {
        grep { ($_->{json}{query} // '') =~ /\{\s*listPolicies\b/ }
             @{ $slow->requests }
    };
    ok(GmsTest::wait_until(sub { $asked_policies->() >= 1 }, 10),
       '... the mirror asked for the policies: stuck for 10 s');

    my $sub = GmsTest::Subscriber->new($redis, 'gms:invalidate');
    my $oks = ok_lines($f);
    ok(GmsTest::wait_until(sub { ok_lines($f) > $oks }, 5),
       '... the token cycles go on meanwhile');

    # revoked right after a token cycle ended: the worst case of the
    # serial cycle, and the next token cycle an interval away here
    $slow->tokens([ listed('slow-kept') ]);
    my $t0 = time;
    ok(GmsTest::wait_until(sub { !cached('slow-revoked') }, 15),
       'the revoked token is deleted from Redis');
    my $took = time - $t0;
    ok($took < $interval + 4,
       "... within the interval and 4 s, the mirror still stuck: "
       . sprintf('%.2f s', $took));
    note sprintf 'revocation with the mirror stuck in a %d s request: '
                 . '%.2f s from the revoke to the token gone from Redis '
                 . '(--interval %d s)', $delay, $took, $interval;
    is_deeply([$sub->messages], [datahub_id('slow-revoked')],
              '... and its id published on gms:invalidate');
    is(scalar(privileges_lines($f)), 0,
       '... while the mirror had not ended once');
    ok(cached('slow-kept'), 'the other token kept');

    my $t1 = time;
    is(stop_follow($f, 'TERM', 5), 0,
       'SIGTERM with the mirror in a slow request: exit 0');
    my $stopped = time - $t1;
    ok($stopped < 3, sprintf('... at once (%.2f s): the mirror\'s request '
                             . 'abandoned', $stopped));
    is_deeply([err_lines($f)], [], '... no failure logged');
    like((out_lines($f))[-1], qr/ stopped by SIGTERM\z/, '... stopped');

    # the mirror, fast again: its own line, its own cadence
    $slow->misbehave;
    $f = start_follow(gms_args($slow->url, $token_file), '--interval', '1h',
                      '--privileges-interval', '1s', @at);
    ok(GmsTest::wait_until(sub { privileges_lines($f) >= 3 }, 10),
       '--privileges-interval 1s: a mirror every second, --interval 1h');
    is(scalar(ok_lines($f)), 1, '... and one token cycle');
    my @p = (privileges_lines($f))[0] =~ $PRIVILEGES_LINE;
    is_deeply([@p[0 .. 3]], [1, 1, 0, 0],
              "the mirror's line: alice, her set written (no mirror had "
              . 'ended before)');
    is(stop_follow($f, 'TERM', 5), 0, 'stopped');
    $slow->stop;
    $redis->cmd('FLUSHALL');
}


# --- stopping: in the wait, and in a slow request -----------------------------

{
    my $f = start_follow(@gms, '--interval', '1h', '--privileges', 'off',
                         @at);
    ok(GmsTest::wait_until(sub { ok_lines($f) >= 1 }, 10), 'a follower '
                                                           . 'waiting 1h');
    is(stop_follow($f, 'TERM', 5), 0, 'SIGTERM in the wait: exit 0 at once');

    # docker stop: the image's STOPSIGNAL
    $f = start_follow(@gms, '--interval', '1h', '--privileges', 'off', @at);
    ok(GmsTest::wait_until(sub { ok_lines($f) >= 1 }, 10), 'another one');
    is(stop_follow($f, 'QUIT', 5), 0, 'SIGQUIT: exit 0 at once');
    like((out_lines($f))[-1], qr/ stopped by SIGQUIT\z/, 'stopped by SIGQUIT');

    $gms->misbehave(delay => 30);
    $gms->clear_requests;
    my $before = tokens_dump();
    $f = start_follow(@gms, '--interval', '1s', '--privileges', 'off',
                      '--gms-timeout', '1m', @at);
    ok(GmsTest::wait_until(sub { @{ $gms->requests } >= 1 }, 10),
       'a follower waiting for a slow GMS');
    is(stop_follow($f, 'INT', 5), 0, 'SIGINT in a request: exit 0 at once');
    is_deeply([err_lines($f)], [], 'the abandoned cycle is no failure');
    like((out_lines($f))[-1], qr/ stopped by SIGINT\z/, 'stopped by SIGINT');
    is(tokens_dump(), $before, 'Redis untouched, but for the lease');
    is($redis->cmd(EXISTS => 'gms:lease'), 0, '... released');
    $gms->misbehave;
}


# --- the systemd unit example and the container ---------------------------------

my %follow_options = map { ($_ => 1) } '--help',
                     run_tool('', 'follow', '--help')->{out} =~ /(--[a-z-]+)/g;

# the options of every 'gms-token follow' command line in $text
sub follow_options_in {
    my ($text) = @_;
    my @lines;
    (my $joined = $text) =~ s/\\\n\s*/ /g;
    for my $line (split /\n/, $joined) {
        next unless $line =~ /gms-token follow\b(.*)/;
        push @lines, [ $1 =~ /(--[a-z-]+)/g ];
    }
    return @lines;
}

{
    my $unit = GmsTest::slurp("$repo/conf-examples/gms-token-follow.service");
    my ($exec) = $unit =~ /^ExecStart=((?:[^\n]*\\\n)*[^\n]*)/m;
    ok(defined $exec, 'the unit has an ExecStart');
    my @lines = follow_options_in($exec // '');
    is(scalar @lines, 1, 'ExecStart runs gms-token follow');
    is_deeply([ grep { !$follow_options{$_} } map { @$_ } @lines ], [],
              "ExecStart's options are follow's");
    like($unit, qr/^Restart=on-failure$/m, 'Restart=on-failure');
    like($unit, qr/^LoadCredential=gms-token:/m,
         'the GMS token as a credential');
    like($exec // '', qr/--gms-token-file \$\{CREDENTIALS_DIRECTORY\}\//,
         'read from the credentials directory');

    # the settings, in a conffile of the Debian package
    like($unit, qr{^EnvironmentFile=/etc/default/gms-token-follow$}m,
         'the settings from /etc/default/gms-token-follow');
    my $settings = GmsTest::slurp(
                       "$repo/conf-examples/gms-token-follow.default");
    my @vars = grep { $_ ne 'CREDENTIALS_DIRECTORY' }
               ($exec // '') =~ /\$\{?([A-Z_]+)/g;
    is_deeply([ grep { $settings !~ /^#?$_=/m } @vars ], [],
              "each variable of ExecStart is in the settings' file");
    is_deeply([ grep { !$follow_options{$_} }
                $settings =~ /(--[a-z-]+)/g ], [],
              "the settings' file names follow's options");

  SKIP: {
        skip 'systemd-analyze not found', 1
            unless grep { -x "$_/systemd-analyze" } split /:/, $ENV{PATH};
        # the unit as installed, with the tool where 'make install' puts it
        (my $copy = $unit) =~ s{/usr/local/bin/gms-token}{$bin}g;
        GmsTest::write_file("$dir/gms-token-follow.service", $copy);
        # --man=no: Documentation= names the man page of the package
        my $out = `systemd-analyze verify --man=no \\
                       $dir/gms-token-follow.service 2>&1`;
        my @complaints = grep { /gms-token-follow\.service/ }
                         split /\n/, $out;
        is_deeply(\@complaints, [], 'systemd-analyze verify: no complaint '
                                    . 'about the unit');
    }

    my $readme = join "", map { GmsTest::slurp("$repo/$_") }
                     qw(README.md docs/gms-token.md docs/operations.md);
    my @readme = follow_options_in($readme);
    ok(@readme >= 2, 'the docs show gms-token follow command lines');
    is_deeply([ grep { !$follow_options{$_} } map { @$_ } @readme ], [],
              "the docs' follow command lines use follow's options");
    like($readme, qr/docker run[^\n]*(?:\\\n[^\n]*)*gms-token follow/,
         'docs: follow as a container of the image');

    # the image's entry point runs anything else as given
    local $ENV{PATH} = dirname($bin) . ":$ENV{PATH}";
    my $res = `sh $repo/docker/entrypoint.sh gms-token follow --help`;
    like($res, qr/^Usage: gms-token follow/,
         "the entry point runs 'gms-token follow' as given");
    # the runtime stage installs the release's packages of what the
    # module and gms-token link (libcurl4 or libcurl4t64, ...)
    my $dockerfile = GmsTest::slurp("$repo/Dockerfile");
    like($dockerfile, qr{objdump -p [^\n]*\bbuild/gms-token\b},
         'the image has the libraries gms-token links');
    like($dockerfile, qr{^\s+nginx \$\(cat /tmp/runtime-packages\)}m,
         'installed in the runtime stage');
}

done_testing();

#!/usr/bin/perl

# Redis without scripts (issue 37, item 2): a server that refuses scripts
# to the edge's user, by an ACL that denies @scripting (ACL SETUSER gms
# ... -@scripting: -NOPERM) or with EVAL, EVALSHA and SCRIPT renamed away
# (-ERR unknown command), answers every lookup as a server that runs the
# lookup script does: the same requests, the same statuses, the same
# headers, side by side.  The worker says it once, and counts it.  Then
# lookup and follower test files of the suite run again with every Redis
# they start refusing scripts (GMS_TEST_NOSCRIPT, GmsTest::Redis): the
# edge's verdicts, gms-token's sync, prune, revocation and the users'
# status hold.

use strict;
use warnings;

use Test::More;

use GmsTest;
use GmsTest::Edge;
use GmsTest::Tool qw(run_tool);

GmsTest::need_module();
GmsTest::need_redis();
GmsTest::Tool::need_tool();

my @TOKENS = qw(alice-token bob-token carol-token dave-token expired-token
                unknown-token);

# the same entries in each server: active, inactive, hard-deleted, one
# without privileges, one expired
sub fill {
    my ($r) = @_;

    my ($alice, $bob, $carol, $dave) =
        map { "urn:li:corpuser:$_" } qw(alice bob carol dave);

    GmsTest::Edge::seed($r, 'alice-token', actor => $alice,
                        type => 'PERSONAL', expiresAt => '9999999999999');
    GmsTest::Edge::seed($r, 'bob-token', actor => $bob);
    GmsTest::Edge::seed($r, 'carol-token', actor => $carol);
    GmsTest::Edge::seed($r, 'dave-token', actor => $dave);
    GmsTest::Edge::seed($r, 'expired-token', actor => $alice,
                        expiresAt => '1000');

    $r->cmd(SADD => 'gms:actor:' . $_, 'MANAGE_ACCESS_TOKENS')
        for $alice, $bob, $carol;
    $r->cmd(SADD => 'gms:inactive', $bob, $carol);
    $r->cmd(SADD => 'gms:deleted', $carol);
}

my $SERVER = <<'CONF';
    add_header X-Gms-Result $gms_token_result always;
    add_header X-Gms-Actor $gms_token_actor always;
    add_header X-Gms-Privileges $gms_token_privileges always;
    location /priv/ {
        gms_token_require_privilege MANAGE_ACCESS_TOKENS;
        alias %%TESTDIR%%/;
    }
CONF

# each token's answers: status and the module's variables, /ok and /priv/
sub answers {
    my ($n) = @_;

    my @seen;

    for my $token (@TOKENS) {
        for my $path ('/ok', '/priv/ok') {
            my $res = $n->http(GET => $path,
                               { Authorization => "Bearer $token" });
            push @seen, join ' ', $token, $path, $res->{status},
                 map { $res->{headers}{$_} // '-' }
                     qw(x-gms-result x-gms-actor x-gms-privileges);
        }
    }

    return \@seen;
}

sub metric {
    my ($n, $name) = @_;

    my $text = $n->http(GET => '/metrics')->{body};
    return $text =~ /^\Q$name\E(?:\{[^}]*\})? (\d+)$/m ? $1 : undef;
}


# --- the reference: a server that runs the script ----------------------------

my ($scripted, $seen);

{
    local $ENV{GMS_TEST_NOSCRIPT};

    $scripted = GmsTest::Redis->start;
    fill($scripted);

    my $n = GmsTest::Edge->topology(redis => $scripted, server => $SERVER);
    $seen = answers($n);
    is(metric($n, 'gms_redis_scriptless_lookups_total'), 0,
       'with scripts: no lookup without them');
    $n->stop;
    is_deeply([$n->bad_log_lines], [], 'with scripts: no alerts');
}

like(join("\n", @$seen), qr/^alice-token \/priv\/ok 200 /m,
     'the reference answers (alice may, the others not)');


# --- an ACL user denied @scripting -------------------------------------------

{
    local $ENV{GMS_TEST_NOSCRIPT};

    my $r = GmsTest::Redis->start;
    $r->cmd(ACL => 'SETUSER', 'gms', 'on', '>gms-password', '~*', '&*',
            '+@all', '-@scripting');
    fill($r);

    my $dir = GmsTest::tempdir();
    GmsTest::write_file("$dir/password", "gms-password\n");

    my $n = GmsTest::Edge->topology(
        redis => $r, server => $SERVER,
        options => "user=gms password_file=$dir/password");

    is_deeply(answers($n), $seen,
              'ACL without @scripting: every answer as with the script');
    is_deeply(answers($n), $seen, '... and from the cache the same');

    ok(metric($n, 'gms_redis_scriptless_lookups_total') >= @TOKENS,
       'the lookups counted as made of plain commands');
    is(metric($n, 'gms_redis_script_refusals_total'), 1,
       'the switch counted once');
    is(metric($n, 'gms_redis_scriptless_workers'), 1,
       'the worker shown without scripts');

    my $info = $r->cmd(INFO => 'commandstats');
    my ($calls) = $info =~ /^cmdstat_exec:calls=(\d+)/m;
    ok($calls, "MULTI/EXEC read the users' part: $calls");

    $n->stop;
    my @refused = grep { /refuses scripts \("NOPERM/ }
                  split /\n/, $n->error_log;
    is(scalar @refused, 1, 'the switch logged once, with the reason')
        or diag(join "\n", @refused);
    like($refused[0] // '', qr/\[warn\].*redis at 127\.0\.0\.1:\d+ (?x:
                               )refuses scripts .*two round trips/,
         '... a warning naming the server');
    is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');
}


# --- EVAL, EVALSHA and SCRIPT renamed away ------------------------------------

{
    local $ENV{GMS_TEST_NOSCRIPT} = 'renamed';

    my $r = GmsTest::Redis->start;
    fill($r);

    my $n = GmsTest::Edge->topology(redis => $r, server => $SERVER);

    is_deeply(answers($n), $seen,
              'scripts renamed away: every answer as with the script');

    # gms-token show: the module's lookup, as the module makes it here
    for my $token (qw(alice-token carol-token unknown-token)) {
        my $id = GmsTest::sha256_b64($token);
        my @shown = map {
            my $res = run_tool(undef, 'show', $id,
                               '--redis', '127.0.0.1:' . $_->port);
            "$res->{rc} $res->{out}";
        } $scripted, $r;

        is($shown[1], $shown[0], "gms-token show $token: as with the script");
    }

    $n->stop;
    ok(grep({ /refuses scripts \("ERR unknown command/ }
            split /\n/, $n->error_log),
       'the switch logged with the reason');
    is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');
}


# --- Valkey 9.1 without its Lua engine ----------------------------------------
#
# Valkey 9.1 moved Lua into a module (valkey-io/valkey#2858): without it,
# SCRIPT LOAD answers -ERR Could not find scripting engine 'lua' and
# EVALSHA -NOSCRIPT (src/eval.c).  Run where the server has that module
# loaded (make test-matrix MATRIX=forky-valkey): it is unloaded here.

SKIP: {
    local $ENV{GMS_TEST_NOSCRIPT};

    my $r = GmsTest::Redis->start;
    my $modules = $r->cmd(MODULE => 'LIST');
    my @modules = ref $modules eq 'ARRAY' ? @$modules : ();
    my ($lua) = grep { defined }
                map { my %m = @$_; $m{name} && $m{name} =~ /lua/i
                                   ? $m{name} : undef }
                grep { ref eq 'ARRAY' } @modules;

    skip 'no Lua engine module loaded in this server (Valkey 9.1 has one)', 3
        unless defined $lua;

    my $unloaded = $r->cmd(MODULE => 'UNLOAD', $lua);
    skip "the Lua engine module would not unload: $unloaded", 3
        unless !ref $unloaded && $unloaded eq 'OK';

    fill($r);
    my $n = GmsTest::Edge->topology(redis => $r, server => $SERVER);

    is_deeply(answers($n), $seen,
              'no Lua engine: every answer as with the script');

    $n->stop;
    ok(grep({ /refuses scripts \("ERR Could not find scripting engine/ }
            split /\n/, $n->error_log),
       'the switch logged with the reason');
    is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');
}


# --- the suite's lookup and follower tests, every Redis refusing scripts -----
#
# Chosen for what they check of the lookup (entries, headers, users'
# status) and of gms-token (sync, prune, revocation, follow), within about
# a minute; left out: the files that count the script's calls
# (Edge->lookups: 10, 19, 47), check the script itself (10's and 67's
# -NOSCRIPT, 48's MONITOR of the lease's script, 60's and 64's
# EVALSHA_RO on replicas), or take minutes (49, 58).

my @FILES = qw(t/15-redis-entries.t t/16-actor-header.t t/53-guest.t
               t/51-inactive-users.t t/41-gms-sync.t t/43-gms-follow.t
               t/68-revocation-holes.t);

for my $file (@FILES) {
    local $ENV{GMS_TEST_NOSCRIPT} = 'acl';

    my $out = `$^X -I t/lib $file 2>&1`;
    my $rc = $? >> 8;
    my @failed = $out =~ /^(not ok \d+ .*)$/mg;

    is($rc, 0, "$file, Redis refusing scripts: passes")
        or diag(join "\n", @failed[0 .. ($#failed < 9 ? $#failed : 9)]);
}

done_testing();

#!/usr/bin/perl

# Inactive users refused (issue 25, item 4): DataHub 1.2 and later answer
# 401 to the token of a user who is suspended, soft-removed or
# hard-deleted (StatelessTokenService.validateActor, ActorContext.isActive).
# gms-token sync --gms reads each holder's status from the stand-in GMS
# (entityExists and corpUser's status and corpUserStatus aspects, batched
# with aliases), keeps gms:inactive equal to the inactive holders, deletes
# their cached tokens at once and publishes each id on gms:invalidate: the
# real edge in front (ttl 300 s) refuses them.  Active again, a user gets
# their tokens back at the next token cycle.  --inactive keep (DataHub
# before 1.2) leaves them; a GMS that fails changes nothing.

use strict;
use warnings;

use Test::More;

use GmsTest;
use GmsTest::Edge;
use GmsTest::GraphQL;
use GmsTest::Subscriber;
use GmsTest::Tool qw(run_tool gms_account gms_args datahub_id key_of);

GmsTest::Tool::need_tool();

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJpbmFjdGl2ZSJ9.c2VjcmV0LTUx';

my ($alice, $bob, $carol, $dave) =
    map { "urn:li:corpuser:$_" } qw(alice bob carol dave);

my %holder = ('alice-token' => $alice, 'bob-token' => $bob,
              'bob-laptop' => $bob, 'carol-token' => $carol,
              'dave-token' => $dave);

sub listed {
    my ($name, $actor) = @_;
    return GmsTest::Tool::listed($name, actor => $actor);
}

my $e = GmsTest::Edge->start(
    workers => 2,
    http => 'gms_token_cache zone=tokens:1m ttl=300s negative_ttl=300s;');
my $redis = $e->redis;
my $gms = GmsTest::GraphQL->start(
    token => $SECRET,
    tokens => [ map { listed($_, $holder{$_}) } sort keys %holder ]);

my $token_file = gms_account($SECRET);
my @at = ('--redis', '127.0.0.1:' . $redis->port);
my $sub = GmsTest::Subscriber->new($redis, 'gms:invalidate');

# a sync as follow's cycles do it: tokens (pruned), privileges, users
sub sync {
    my (@args) = @_;
    return run_tool(undef, 'sync', gms_args($gms->url, $token_file),
                    '--prune', @args, @at);
}

# the users' line of a sync
sub users_line {
    my ($res) = @_;
    my ($line) = grep { /^checked=/ } split /\n/, $res->{out};
    return $line // '';
}

sub answer {
    my ($token) = @_;
    my $res = $e->get('/entities/x', $token);
    return $res->{status};
}

sub cached   { $redis->cmd(EXISTS => key_of($_[0])) }
sub inactive { join ' ', sort @{ $redis->cmd(SMEMBERS => 'gms:inactive') } }

sub published {
    my %got = map { $_ => 1 } $sub->messages;
    return join ' ', grep { $got{ datahub_id($_) } } sort keys %holder;
}

# --- all active --------------------------------------------------------------

my ($res, $before);

$res = sync();
is($res->{rc}, 0, 'sync: exit 0') or diag($res->{err});
is(users_line($res),
   'checked=4 inactive=0 newly=0 reactivated=0 dropped=0 unknown=0',
   "every holder's status read: none inactive");
is(join(' ', map { answer($_) } sort keys %holder), '200 200 200 200 200',
   'every token passes the edge');
is(inactive(), '', 'gms:inactive empty');
$sub->messages;

# --- suspended ---------------------------------------------------------------

$gms->users({ $bob => { status => 'SUSPENDED' } });
$res = sync();
is($res->{rc}, 0, 'bob suspended: sync exit 0') or diag($res->{err});
is(users_line($res),
   'checked=4 inactive=1 newly=1 reactivated=0 dropped=2 unknown=0',
   'bob found inactive, his two tokens dropped');
is(inactive(), $bob, 'bob in gms:inactive');
ok(!cached('bob-token') && !cached('bob-laptop'),
   "bob's tokens gone from Redis");
is(published(), 'bob-laptop bob-token',
   'each id published on gms:invalidate');
is(answer('bob-token'), 401,
   "bob's token: 401 at the edge, as DataHub 1.2 answers, ttl 300 s "
   . 'notwithstanding');
is(answer('bob-laptop'), 401, 'his other token too');
is(answer('alice-token'), 200, "alice's token still passes");

$res = sync();
is(users_line($res),
   'checked=4 inactive=1 newly=0 reactivated=0 dropped=0 unknown=0',
   'the next sync: bob still inactive, and the token cycle wrote none of '
   . 'his tokens');
is(answer('bob-token'), 401, 'bob still refused');

# --- reactivated -------------------------------------------------------------

$gms->users({ $bob => { status => 'ACTIVE' } });
$res = sync();
is(users_line($res),
   'checked=4 inactive=0 newly=0 reactivated=1 dropped=0 unknown=0',
   'bob active again: out of gms:inactive');
is(inactive(), '', 'gms:inactive empty');
sync();
ok(cached('bob-token') && cached('bob-laptop'),
   'the next token cycle wrote his tokens back');
is(answer('bob-token'), 200, "bob's token: 200 again at the edge");
is(answer('bob-laptop'), 200, 'his other token too');
$sub->messages;

# --- soft-removed and hard-deleted -------------------------------------------

$gms->users({ $carol => { removed => 1 }, $dave => { deleted => 1 } });
$res = sync();
is(users_line($res),
   'checked=4 inactive=2 newly=2 reactivated=0 dropped=2 unknown=0',
   'carol soft-removed (status.removed) and dave hard-deleted (no key '
   . 'aspect): both inactive');
is(inactive(), "$carol $dave", 'both in gms:inactive');
ok(!cached('carol-token') && !cached('dave-token'), 'their tokens gone');
is(published(), 'carol-token dave-token', 'both ids published');
is(answer('carol-token'), 401, "carol's token: 401 at the edge");
is(answer('dave-token'), 401, "dave's token: 401 at the edge");

$gms->users({ $carol => { removed => 0 } });
$res = sync();
is(users_line($res),
   'checked=4 inactive=0 newly=0 reactivated=2 dropped=0 unknown=0',
   'carol restored, dave provisioned again: both active');
sync();
is(answer('carol-token'), 200, "carol's token: 200 again");
is(answer('dave-token'), 200, "dave's token: 200 again");

# --- a GMS that fails changes nothing ----------------------------------------

$gms->users({ $bob => { status => 'SUSPENDED' } });
sync();
is(inactive(), $bob, 'bob suspended again');

$gms->users({ $carol => { status => 'SUSPENDED' } });
$gms->misbehave(field => 'corpUser', graphql_error => 'boom');
$res = sync('--privileges', 'graphql');
isnt($res->{rc}, 0, 'corpUser failing: sync fails');
like($res->{err}, qr/boom/, "with GMS's error");
is(users_line($res), '', 'no users line');
is(inactive(), $bob,
   'gms:inactive as it was: bob not let out, carol not put in');
ok(!cached('bob-token'), "bob's tokens not brought back");
ok(cached('carol-token'), "carol's token not deleted");
is(answer('carol-token'), 200, 'carol passes until GMS answers');

$gms->misbehave();
$res = sync();
is(users_line($res),
   'checked=4 inactive=1 newly=1 reactivated=1 dropped=1 unknown=0',
   'GMS answering again: bob out, carol in');
is(answer('carol-token'), 401, 'carol refused');

# --- GMS failing on one user leaves that user as it was ----------------------

# users({URN => {error => 1}}): corpUser fails for that user alone, as
# GMS's does when CorpUserMapper throws (a corpUserStatus the enum lacks):
# null under its alias, "An unknown error occurred." naming the alias

$gms->users({ $carol => { status => 'SUSPENDED', error => 1 },
              $bob => { error => 1 },
              $dave => { status => 'SUSPENDED' } });
$before = $gms->count('corpUser');
$res = sync('--privileges', 'graphql');
is($res->{rc}, 0, 'corpUser failing for carol and bob only: sync exit 0')
    or diag($res->{err});
is(users_line($res),
   'checked=4 inactive=1 newly=1 reactivated=0 dropped=1 unknown=2',
   'dave read and refused; carol and bob unknown');
like($res->{err},
     qr/2 of 4 users left as they were.*\Q$bob\E: .*An unknown error/,
     'a warning names the first user GMS failed on and why');
is(inactive(), "$carol $dave",
   'carol still in gms:inactive (not let out), bob still out (not put in)');
ok(!cached('carol-token'), "carol's token not brought back");
ok(cached('bob-token'), "bob's token not deleted");
note('the request asked again in halves down to each failing user: '
     . ($gms->count('corpUser') - $before) . ' requests');

$gms->users({ $carol => { status => 'SUSPENDED' } });
$res = sync('--privileges', 'graphql');
is(users_line($res),
   'checked=4 inactive=1 newly=0 reactivated=1 dropped=0 unknown=0',
   'GMS answering for them: dave active again');

# --- --inactive keep ---------------------------------------------------------

$res = sync('--inactive', 'keep');
is($res->{rc}, 0, '--inactive keep: exit 0') or diag($res->{err});
is(users_line($res),
   'checked=4 inactive=1 newly=0 reactivated=0 dropped=0 unknown=0',
   'carol counted as inactive, nothing else');
is($redis->cmd(EXISTS => 'gms:inactive'), 0, 'gms:inactive emptied');
sync('--inactive', 'keep');
ok(cached('carol-token'),
   "the next token cycle wrote carol's token back: DataHub before 1.2 "
   . 'accepts it');
is(answer('carol-token'), 200, 'carol passes the edge');

$res = sync('--inactive', 'refuse');
like(users_line($res), qr/^checked=4 inactive=1 newly=1 .* dropped=1 /,
     '--inactive refuse again: carol refused');
is(answer('carol-token'), 401, 'carol refused at the edge');

$res = run_tool(undef, 'sync', gms_args($gms->url, $token_file),
                '--inactive', 'sometimes', @at);
is($res->{rc}, 2, '--inactive sometimes: usage error');
like($res->{err}, qr/--inactive: 'sometimes' is not refuse, keep or mark/,
     'saying why');
$res = run_tool('', 'sync', '--inactive', 'keep', @at);
is($res->{rc}, 2, '--inactive without --gms: usage error');

# --- batched -----------------------------------------------------------------

my @many = map { sprintf 'user%03d', $_ } 1 .. 120;
$gms->tokens([ (map { listed($_, $holder{$_}) } sort keys %holder),
               (map { listed("$_-token", "urn:li:corpuser:$_") } @many) ]);
$gms->users({ $carol => { status => 'SUSPENDED' },
              map { ("urn:li:corpuser:$many[$_ * 17]" =>
                     { status => 'SUSPENDED' }) } 0 .. 6 });
$before = $gms->count('corpUser');
$res = sync('--privileges', 'graphql');
my $asked = $gms->count('corpUser') - $before;
is(users_line($res),
   'checked=124 inactive=8 newly=7 reactivated=0 dropped=7 unknown=0',
   '124 users read, 7 more suspended: their tokens dropped, the others '
   . 'kept');
ok($asked >= 1 && $asked <= 3,
   "in $asked requests (aliases, at most 50 users a request)");
note("124 users' status in $asked GraphQL requests");
is(scalar @{ $redis->cmd(SMEMBERS => 'gms:inactive') }, 8,
   '8 users in gms:inactive');
is(answer("$many[17]-token"), 401, 'one of them refused at the edge');
is(answer("$many[18]-token"), 200, 'the next user passes');

done_testing;

#!/usr/bin/perl

# The users' check asks GMS several requests at once (issue 34): gms-token
# sync --gms (and follow's privileges cycle) reads each token holder's
# status GMS_USERS_BATCH (50) users a request, GMS_USERS_PARALLEL (8)
# requests in flight at once, from a stand-in GMS that answers each
# request 0.3 s late.  The stand-in notes when each request came and when
# its answer was due (in_flight): more than one of the users' requests was
# in its hands at once, never more than 8, and the outcome is the one
# requests sent one after the other would have: the suspended users'
# tokens deleted, the others' kept, the counts exact; a request GMS
# answers with a GraphQL error for one user leaves that user as it was
# (the request asked again in halves), the others decided; HTTP 500 to
# the users' requests fails the sync with one line, nothing changed; a
# follower's SIGTERM abandons the requests in flight at once.  Following
# the change stream, a policy's change made while a whole run reads the
# users is mirrored between two waves, not after the run.

use strict;
use warnings;

use Test::More;

use GmsTest;
use GmsTest::GraphQL;
use GmsTest::Tool qw(run_tool start_follow stop_follow err_lines
                     gms_account gms_args key_of listed);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwYXJhbGxlbCJ9.c2VjcmV0LTcx';

# 600 holders: 12 requests of 50 users, two waves (8 and 4)
my @names = map { sprintf 'user%03d', $_ } 1 .. 600;
my %urn = map { $_ => "urn:li:corpuser:$_" } @names;

my $redis = GmsTest::Redis->start;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

my $gms = GmsTest::GraphQL->start(
    token => $SECRET,
    tokens => [ map { listed("$_-token", actor => $urn{$_}) } @names ]);
my $token_file = gms_account($SECRET);

sub sync {
    return run_tool(undef, 'sync', gms_args($gms->url, $token_file),
                    '--prune', @at);
}

sub users_line {
    my ($res) = @_;
    my ($line) = grep { /^checked=/ } split /\n/, $res->{out};
    return $line // '';
}

sub cached   { $redis->cmd(EXISTS => key_of("$_[0]-token")) }
sub inactive { join ' ', sort @{ $redis->cmd(SMEMBERS => 'gms:inactive') } }

# the users whose tokens are cached, of those named
sub kept { scalar grep { cached($_) } @_ }

# one user suspended in each request of 50: the 1st, 51st, ... 551st
my @suspended = map { $names[$_ * 50] } 0 .. 11;
my %active = map { $_ => 1 } @names;
delete @active{@suspended};

# the users' requests answered 0.3 s late (the others at once)
$gms->misbehave(field => 'corpUser', delay => 0.3);

# --- 600 users, 8 requests at once ----------------------------------------

$gms->users({ map { ($urn{$_} => { status => 'SUSPENDED' }) } @suspended });
$gms->clear_requests;

my $res = sync();
is($res->{rc}, 0, 'sync: exit 0') or diag($res->{err});
is(users_line($res),
   'checked=600 inactive=12 newly=12 reactivated=0 dropped=12 unknown=0',
   '600 users read, the 12 suspended put in gms:inactive, their tokens '
   . 'dropped');
my $most = $gms->in_flight('gmsTokenUsers');
ok($most > 1, "GMS had $most users' requests in hand at once");
ok($most <= 8, 'never more than 8');
is($gms->count('corpUser'), 12, 'in 12 requests of 50 users');
is(inactive(), join(' ', sort map { $urn{$_} } @suspended),
   'gms:inactive: the 12 suspended users');
is(kept(@suspended), 0, "the suspended users' tokens deleted");
is(kept(keys %active), 588, "every other user's token kept");

# --- a GraphQL error for one user among the parallel requests -------------

# user101 (suspended, in the 3rd request) fails in corpUser, user151
# (suspended, the 4th) is active again, user302 (the 7th) newly suspended
my ($failing, $back, $newly) = @names[100, 150, 301];
$gms->users({ (map { ($urn{$_} => { status => 'SUSPENDED' }) }
                   grep { $_ ne $back } @suspended, $newly),
              $urn{$failing} => { status => 'SUSPENDED', error => 1 } });
$gms->clear_requests;
$res = sync();
is($res->{rc}, 0, 'GMS failing on one user: exit 0') or diag($res->{err});
is(users_line($res),
   'checked=600 inactive=11 newly=1 reactivated=1 dropped=1 unknown=1',
   'that user unknown, the other 599 decided');
like($res->{err}, qr/1 of 600 users left as they were.*\Q$urn{$failing}\E/,
     'a warning names the user');
ok($gms->in_flight('gmsTokenUsers') > 1, 'with requests in flight at once');
ok($gms->count('corpUser') > 12,
   'the failing request asked again in halves (' . $gms->count('corpUser')
   . ' requests)');
like(inactive(), qr/\Q$urn{$failing}\E/,
     'the failing user left in gms:inactive');
ok(!cached($failing), "and its token not brought back");
unlike(inactive(), qr/\Q$urn{$back}\E/, 'the user active again let out');
ok(cached($back), 'its token written back');
ok(!cached($newly), "the newly suspended user's token deleted");

# --- HTTP 500 to the users' requests ----------------------------------------

$gms->users({});
$gms->misbehave(field => 'corpUser', status => 500, delay => 0.3);
my $before = inactive();
$gms->clear_requests;
$res = sync();
isnt($res->{rc}, 0, "HTTP 500 to the users' requests: sync fails");
my @err = grep { !/^\s*$/ } split /\n/, $res->{err};
is(scalar @err, 1, 'with one line') or diag($res->{err});
like($err[0], qr{/api/graphql: HTTP 500}, 'saying HTTP 500');
ok($gms->in_flight('gmsTokenUsers') > 1, 'the requests were in flight at once');
is(users_line($res), '', 'no users line');
is(inactive(), $before, 'gms:inactive as it was');
ok(!cached($failing), 'no token of an inactive user brought back');

# --- follow stopped while the users' requests are in flight -----------------

# GMS answering the users 30 s late: the follower's SIGTERM abandons the
# eight requests of the wave at once (the stop flag, through libcurl's
# progress callback), as it abandons a request alone
$gms->misbehave(field => 'corpUser', delay => 30);
$gms->clear_requests;
my $f = start_follow(gms_args($gms->url, $token_file), '--interval', '1h',
                     '--gms-timeout', '1m', @at);
ok(GmsTest::wait_until(sub { $gms->count('corpUser') >= 2 }, 20),
   "a follower waiting for GMS's answers about the users");
ok($gms->in_flight('gmsTokenUsers') > 1, 'with requests in flight at once');
is(stop_follow($f, 'TERM', 5), 0, 'SIGTERM in the requests: exit 0 at once');
is_deeply([err_lines($f)], [], 'the abandoned check is no failure');
is(inactive(), $before, 'gms:inactive untouched');

# --- a policy changed on the stream while the users are read ----------------

# follow on DataHub's change stream: its first whole run reads the 600
# users in two waves, GMS answering each 4 s late; a policy deleted while
# the first wave waits is mirrored between the two waves (its "(mirror)"
# line, user001's set emptied), not after the whole run
$gms->misbehave;
$gms->events_api('on');
my $policy = { urn => 'urn:li:dataHubPolicy:tokens',
               privileges => ['MANAGE_ACCESS_TOKENS'],
               actors => { users => [ $urn{user001} ] } };
$gms->policies([$policy]);
$gms->misbehave(field => 'corpUser', delay => 4);
$gms->clear_requests;
my $actor = "gms:actor:$urn{user001}";
$f = start_follow(gms_args($gms->url, $token_file), '--changes', 'stream',
                  '--interval', '60s', '--full-interval', '1h',
                  '--privileges-interval', '1h', @at);
ok(GmsTest::wait_until(sub {
       (grep { /changes: stream/ } GmsTest::Tool::out_lines($f))
       && $gms->count('corpUser') >= 1
       && @{ $redis->cmd(SMEMBERS => $actor) } }, 20),
   'follow on the stream: its first whole run mirrored user001\'s '
   . 'privilege and reads the users');
$gms->policies([]);
ok(GmsTest::wait_until(sub { !@{ $redis->cmd(SMEMBERS => $actor) } }, 20),
   'the policy deleted in DataHub: user001\'s set emptied');
my @lines = GmsTest::Tool::out_lines($f);
my ($mirror) = grep { $lines[$_] =~ / privileges ok \(mirror\) / } 0 .. $#lines;
my ($whole) = grep { $lines[$_] =~ / privileges ok users=/ } 0 .. $#lines;
ok(defined $mirror && (!defined $whole || $mirror < $whole),
   '... by a mirror between the two waves, before the whole run\'s line')
    or diag(join "\n", @lines);
is(stop_follow($f, 'TERM', 10), 0, 'stopped');
$gms->misbehave;

done_testing;

#!/usr/bin/perl

# Several gms-token follow processes against one Redis: the lease
# <prefix>lease (docs/redis-contract.md) lets exactly one work.  The other
# stands by: it logs one line naming the holder and sends Redis nothing
# but its tries for the lease (seen with MONITOR).  The holder killed
# with SIGKILL, the standby takes over once the lease runs out, within
# two intervals and the margin (measured and printed), and <prefix>sync
# names it; a holder stopped with SIGTERM releases the lease, which the
# next standby takes at its next try, well before it would have run out;
# a holder that finds another's value in the lease stops working.  The
# lease keeper: a holder whose token cycles take longer than its lease
# (a slow listAccessTokens) keeps it throughout, with PX still two
# intervals and 2 s, and stops at once on SIGTERM; a holder whose Redis
# stops answering (SIGSTOP) gives the lease up before it could run out.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::GraphQL;
use GmsTest::Tool qw(start_follow stop_follow out_lines err_lines ok_lines
                     gms_account gms_args key_of listed);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $redis = GmsTest::Redis->start;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJsZWFzZSJ9.'
             . 'c2VjcmV0LWdtcy1sZWFzZS1zaWduYXR1cmUtNDg';
my $token_file = gms_account($SECRET);
my $alice = 'urn:li:corpuser:alice';

my $gms = GmsTest::GraphQL->start(token => $SECRET, workers => 4,
    tokens => [ listed('lease-1') ],
    policies => [ { urn => 'urn:li:dataHubPolicy:tokens',
                    privileges => ['MANAGE_ACCESS_TOKENS'],
                    actors => { users => [$alice] } } ]);

# the followers' interval, and their lease: two intervals and 2 s
my $INTERVAL = 1;
my $PX = 2 * $INTERVAL + 2;

my @followers;

END {
    local $?;
    kill 'KILL', map { $_->{pid} } @followers;
}

sub follower {
    my $f = start_follow(gms_args($gms->url, $token_file), '--interval',
                         "${INTERVAL}s", '--privileges-interval', '1s', @at);
    push @followers, $f;
    return $f;
}

my $TIME = qr/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/;

# the values a follower took the lease as, one per line that says so
sub taken {
    return map { /^gms-token follow: $TIME lease taken: (\S+) works\z/
                 ? $1 : () } out_lines($_[0]);
}

# the holders a standby named, one per line
sub standing_by {
    return map { /^gms-token follow: $TIME lease held by (\S+); (?x:
                  )standing by\z/ ? $1 : () } out_lines($_[0]);
}

sub mirrors { return grep { / privileges ok / } out_lines($_[0]) }
sub holder  { return $redis->cmd(HGET => 'gms:sync', 'holder') }
sub cached  { return $redis->cmd(EXISTS => key_of($_[0])) }

# Every command Redis runs, from a MONITOR connection (GmsTest::Redis's
# RESP reader, as GmsTest::Subscriber): lines() returns those run since
# the last call, up to a marker command of its own.
{
    package Monitor;

    sub new {
        my ($class, $redis) = @_;
        my $conn = bless { owner => $$, port => $redis->port,
                           host => $redis->host, opt => $redis->{opt} },
                         'GmsTest::Redis';
        $conn->_connect;
        my $ok = $conn->_call('MONITOR');
        die "MONITOR: $ok\n" unless ($ok // '') eq 'OK';
        return bless { conn => $conn, redis => $redis, marks => 0 }, $class;
    }

    sub lines {
        my ($self) = @_;
        my $mark = 'lease-test-mark-' . ++$self->{marks};
        $self->{redis}->cmd(ECHO => $mark);
        my @got;
        while (1) {
            my $line = $self->{conn}->_read_reply;
            last if index($line, $mark) >= 0;
            push @got, $line;
        }
        return @got;
    }
}


# --- one works, the other stands by and writes nothing ---------------------

my $one = follower();
ok(GmsTest::wait_until(sub { ok_lines($one) >= 1 && mirrors($one) >= 1 }, 10),
   'a follower alone: a token cycle and a mirror');
my ($one_value) = taken($one);
like($one_value // '', qr/^[^:\s]+:$one->{pid}:[0-9a-f]{16}\z/,
     'it took the lease: one line, host:pid:nonce');
is($redis->cmd(GET => 'gms:lease'), $one_value, 'gms:lease holds its value');
my $pttl = $redis->cmd(PTTL => 'gms:lease');
ok($pttl > 0 && $pttl <= $PX * 1000,
   "... for $PX s at most (two intervals and 2 s): PTTL $pttl ms");
is(holder(), $one_value, 'gms:sync holder names it');

my $monitor = Monitor->new($redis);
my $two = follower();
ok(GmsTest::wait_until(sub { standing_by($two) >= 1 }, 10),
   'a second follower stands by');
my $one_oks = ok_lines($one);
sleep 3.5 * $INTERVAL;
my @commands = $monitor->lines;

is_deeply([standing_by($two)], [$one_value],
          '... one line naming the holder, not one a cycle');
is_deeply([taken($two), ok_lines($two), mirrors($two), err_lines($two)], [],
          '... no lease taken, no token cycle, no mirror, no failure');
ok(ok_lines($one) >= $one_oks + 2, 'the holder works on meanwhile');
is(holder(), $one_value, 'gms:sync holder: still the first');

# the standby's connection: the one whose lease script carries its pid
my $pid = $two->{pid};
my %standby = map { /^\S+ \[\d+ (\S+)\] "EVAL" .*"[^"]*:$pid:[0-9a-f]{16}"/
                    ? ($1 => 1) : () } @commands;
my @from_standby = grep { /^\S+ \[\d+ (\S+)\]/ && $standby{$1} } @commands;
ok(@from_standby >= 3, 'the standby tries for the lease at each of its '
                       . 'cycles: ' . scalar(@from_standby) . ' tries');
is_deeply([ grep { !/ "EVAL" "local v = redis\.call\('GET', KEYS\[1\]\)/
                   || !/ "gms:lease" "gms:sync" / } @from_standby ], [],
          '... and sends Redis nothing else: no token, no set, no health');


# --- the holder killed: the standby takes over once the lease runs out -----

my $left = $redis->cmd(PTTL => 'gms:lease');
kill 'KILL', $one->{pid};
waitpid $one->{pid}, 0;
my $t0 = time;
ok(GmsTest::wait_until(sub { taken($two) >= 1 }, 2 * $PX),
   'the holder killed (SIGKILL): the standby takes the lease');
my $took = time - $t0;
my ($two_value) = taken($two);
like($two_value // '', qr/^[^:\s]+:$two->{pid}:[0-9a-f]{16}\z/,
     '... one line naming it');
ok($took < 2 * $INTERVAL + 2 + 2,
   sprintf('... within two intervals and the margin, and 2 s: %.2f s',
           $took));
ok($took > $left / 1000 - 0.3,
   sprintf('... not before the lease ran out (%.2f s after the kill)',
           $left / 1000));
note sprintf 'takeover: %.2f s after the holder was killed, its lease '
             . 'having %.2f s left (--interval %d s, lease %d s)',
             $took, $left / 1000, $INTERVAL, $PX;
is(holder(), $two_value, 'gms:sync holder names the new holder');

$gms->tokens([ listed('lease-1'), listed('lease-2') ]);
ok(GmsTest::wait_until(sub { cached('lease-2') }, 10),
   'it works: a token DataHub lists is cached');
ok(GmsTest::wait_until(sub { mirrors($two) >= 1 }, 10), '... and it mirrors');


# --- the holder stopped: it releases the lease, a standby takes it at once --

my $three = follower();
ok(GmsTest::wait_until(sub { standing_by($three) >= 1 }, 10),
   'a third follower stands by');
is_deeply([standing_by($three)], [$two_value], '... naming the holder');

$t0 = time;
is(stop_follow($two, 'TERM', 5), 0, 'the holder stopped by SIGTERM: exit 0');
my @out = out_lines($two);
like($out[-2] // '', qr/^gms-token follow: $TIME lease released: (?x:
                        )\Q$two_value\E\z/, '... the lease released: a line');
ok(GmsTest::wait_until(sub { taken($three) >= 1 }, $PX),
   'the standby takes it');
$took = time - $t0;
ok($took < $PX - 1,
   sprintf('... at its next try, not when the lease would have run out '
           . '(%d s): %.2f s', $PX, $took));
note sprintf 'takeover after SIGTERM: %.2f s', $took;
my ($three_value) = taken($three);
ok(GmsTest::wait_until(sub { ok_lines($three) >= 1 }, 15), '... and works');
is(holder(), $three_value, 'gms:sync holder names it');


# --- another's value in the lease: the holder stops working ----------------

# as if the holder had stalled longer than its lease and another had
# taken over meanwhile
my $other = 'elsewhere:4242:0123456789abcdef';
$redis->cmd(SET => 'gms:lease', $other, 'PX', 60_000);
ok(GmsTest::wait_until(sub { grep { / lease lost to / } err_lines($three) },
                       5),
   'the lease holds another value: the holder says it lost it');
is_deeply([ grep { / lease lost to / } err_lines($three) ],
          [ grep { /^gms-token follow: $TIME lease lost to \Q$other\E; (?x:
                    )standing by\z/ } err_lines($three) ],
          '... naming the other, on stderr');
# a mirror's Redis writes under way when the lease was lost are finished
sleep 0.5;
my $oks = ok_lines($three);
my $mirrored = mirrors($three);
sleep 2.5 * $INTERVAL;
is_deeply([scalar ok_lines($three), scalar mirrors($three)], [$oks, $mirrored],
          '... and runs no token cycle, no mirror since');
is($redis->cmd(GET => 'gms:lease'), $other, '... the lease left alone');

$redis->cmd(DEL => 'gms:lease');
ok(GmsTest::wait_until(sub { taken($three) >= 2 }, 5),
   'the lease gone: taken again at the next try');
ok(GmsTest::wait_until(sub { ok_lines($three) > $oks }, 5), '... and works');

is(stop_follow($three, 'TERM', 5), 0, 'stopped: exit 0');
is($redis->cmd(EXISTS => 'gms:lease'), 0, 'the lease released');
is(holder(), '', 'gms:sync holder: "", nobody works');


# --- a token cycle longer than the lease: the holder keeps it -------------

# every listAccessTokens answer waits $SLOW s, longer than the lease: the
# lease keeper renews it while the token cycle waits for GMS
my $SLOW = 6;
$gms->misbehave(field => 'listAccessTokens', delay => $SLOW);

my $four = follower();
ok(GmsTest::wait_until(sub { taken($four) >= 1 }, 5),
   "GMS answers listAccessTokens in $SLOW s: a follower takes the lease");
my ($four_value) = taken($four);
my $five = follower();
ok(GmsTest::wait_until(sub { standing_by($five) >= 1 }, 5),
   '... another stands by');

# the lease and gms:sync, watched through two slow token cycles
my ($samples, $max_pttl, @other) = (0, 0);
my $until = time + 2.5 * ($SLOW + $INTERVAL);
while (time < $until) {
    my $value = $redis->cmd(GET => 'gms:lease') // '(none)';
    my $pttl = $redis->cmd(PTTL => 'gms:lease');
    my $named = holder() // '(none)';
    push @other, "lease $value, holder $named"
        if $value ne $four_value || $named ne $four_value;
    $max_pttl = $pttl if $pttl > $max_pttl;
    $samples++;
    sleep 0.2;
}
is_deeply(\@other, [], "the lease and gms:sync holder name the slow holder "
                       . "throughout ($samples samples)");
ok($max_pttl <= $PX * 1000,
   "... the lease kept at $PX s, not stretched: PTTL at most $max_pttl ms");
my @slow = map { / in (\d+)ms\z/ ? $1 : () } ok_lines($four);
ok(@slow >= 1 && !grep({ $_ < $SLOW * 1000 } @slow),
   "... its token cycles longer than the lease: @slow ms");
note "slow token cycles: @slow ms, the lease ${PX} s";
is_deeply([ grep { / lease / } err_lines($four) ], [],
          '... no lease lost, taken again or given up');
is_deeply([taken($five), ok_lines($five), mirrors($five)], [],
          'the standby took no lease, ran no cycle, no mirror');
is_deeply([standing_by($five)], [$four_value], '... one line, the holder');

# stopped in the middle of a slow listing: at once, the lease released
$gms->misbehave();
ok(GmsTest::wait_until(sub { ok_lines($four) > @slow }, 2 * $SLOW),
   'GMS fast again: the holder works on');
my $lists = $gms->count('listAccessTokens');
$gms->misbehave(field => 'listAccessTokens', delay => $SLOW);
ok(GmsTest::wait_until(sub { $gms->count('listAccessTokens') > $lists },
                       2 * $INTERVAL + 1),
   '... a slow listing under way');
sleep 0.5;
$t0 = time;
is(stop_follow($four, 'TERM', 5), 0,
   'stopped by SIGTERM during a slow listing: exit 0');
my $stopped = time - $t0;
ok($stopped < 2.5, sprintf('... in %.2f s, the listing abandoned', $stopped));
like((out_lines($four))[-2] // '', qr/ lease released: \Q$four_value\E\z/,
     '... the lease released');
$gms->misbehave();
ok(GmsTest::wait_until(sub { taken($five) >= 1 }, 2 * $INTERVAL + 1),
   'the standby takes it at its next try');
ok(GmsTest::wait_until(sub { ok_lines($five) >= 1 }, 15), '... and works');
is(stop_follow($five, 'TERM', 5), 0, 'stopped: exit 0');


# --- Redis silent longer than the lease: the holder gives it up ------------

# SIGSTOP: the keeper's renewal waits on a connection that never answers;
# past PX a standby could have taken the lease, so the holder stops first
my $six = follower();
ok(GmsTest::wait_until(sub { taken($six) >= 1 && ok_lines($six) >= 1 }, 5),
   'a follower works');
$redis->pause;
$t0 = time;
my $gave = GmsTest::wait_until(
    sub { grep { / lease given up: / } err_lines($six) }, 2 * $PX);
my $after = time - $t0;
$redis->resume;
ok($gave, 'Redis stopped (SIGSTOP): the holder gives the lease up');
ok($after < $PX, sprintf('... before it could run out: %.2f s after Redis '
                         . 'stopped (lease %d s)', $after, $PX));
note sprintf 'lease given up %.2f s after Redis stopped', $after;
my ($given) = grep { / lease given up: / } err_lines($six);
like($given // '', qr/^gms-token follow: $TIME lease given up: not (?x:
                     )renewed for \d+ms \(Redis did not answer\); (?x:
                     )standing by\z/, '... one line, on stderr');
my $six_oks = ok_lines($six);
ok(GmsTest::wait_until(sub { taken($six) >= 2 }, 2 * $PX),
   'Redis back: it takes the lease again');
ok(GmsTest::wait_until(sub { ok_lines($six) > $six_oks }, 5), '... and works');
is(stop_follow($six, 'TERM', 5), 0, 'stopped: exit 0');
is($redis->cmd(EXISTS => 'gms:lease'), 0, 'the lease released');

done_testing();

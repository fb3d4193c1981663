#!/usr/bin/perl

# The whole loop: DataHub (the stand-in GMS) -> gms-token follow -> Redis
# -> <prefix>invalidate -> the edge.  The edge caches for 300 s (ttl and
# negative_ttl); a token revoked in DataHub, a privilege taken away by a
# policy and a token created after it was refused are each seen at the
# edge within 2 s of the follow cycle that saw them (the token cycle's, or
# for the privilege the mirror's, each a thread of its own, every second
# here): measured from the cycle's log line to the edge's answer, and
# printed.

use strict;
use warnings;

use POSIX qw(WNOHANG);
use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Edge;
use GmsTest::GraphQL;
use GmsTest::Tool ();

my $bin = GmsTest::Tool::bin();

GmsTest::Tool::need_tool();

my $alice = 'urn:li:corpuser:alice';
my $bob = 'urn:li:corpuser:bob';
my $now = int(time() * 1000);

# a token as listAccessTokens lists it; made a day ago (no prune grace)
sub listed {
    my ($token, $actor) = @_;
    return GmsTest::Tool::listed($token, actor => $actor,
                                 created => $now - 86_400_000,
                                 expires => $now + 86_400_000);
}

my $admin = { urn => 'urn:li:dataHubPolicy:admins', type => 'PLATFORM',
              privileges => ['MANAGE_ACCESS_TOKENS'],
              actors => { users => [$alice] } };

my $e = GmsTest::Edge->start(
    workers => 2,
    http => 'gms_token_cache zone=tokens:1m ttl=300s negative_ttl=300s;');
my $gms = GmsTest::GraphQL->start(token => 'follower-token',
                                  tokens => [ listed('alice-token', $alice) ],
                                  policies => [$admin]);

my $dir = GmsTest::tempdir();
GmsTest::write_file("$dir/gms-token", "follower-token\n");

my $pid = fork // die "fork: $!\n";
if ($pid == 0) {
    open STDOUT, '>', "$dir/follow.out" or POSIX::_exit(127);
    open STDERR, '>', "$dir/follow.err" or POSIX::_exit(127);
    exec { $bin } $bin, 'follow', '--gms', $gms->url,
        '--gms-token-file', "$dir/gms-token",
        '--redis', '127.0.0.1:' . $e->redis->port, '--interval', '1s',
        '--privileges-interval', '1s'
        or POSIX::_exit(127);
}

sub answer {
    my ($path, $token) = @_;
    my $res = $e->get($path, $token);
    return $res->{headers}{'x-gms-result'} // $res->{status};
}

# the lines follow has written so far: cycles of both threads, the lease
sub cycles { scalar(() = GmsTest::slurp("$dir/follow.out") =~ /\n/g) }

# Waits for a line after the first $before ones that matches $re (a token
# cycle's or a mirror's), then for the edge to give $want; returns the
# seconds from the one to the other (undef: never).
sub latency {
    my ($re, $path, $token, $want) = @_;
    my $seen;
    GmsTest::wait_until(sub {
        GmsTest::slurp("$dir/follow.out") =~ $re and $seen = time() }, 10)
        or return undef;
    GmsTest::wait_until(sub { answer($path, $token) eq $want }, 10)
        or return undef;
    return time() - $seen;
}

ok(GmsTest::wait_until(sub { answer('/entities/x', 'alice-token') eq 'ok' },
                       10),
   'follow cached the token DataHub lists: 200 at the edge');
# the privileges come from the second thread, just after the token
ok(GmsTest::wait_until(sub { answer('/admin/x', 'alice-token') eq 'ok' }, 10),
   "and the policy's privilege: alice may manage tokens");
is(answer('/entities/x', 'bob-token'), 'unknown',
   'bob has no token yet: refused, and cached as unknown for 300 s');

# --- a token revoked in DataHub ----------------------------------------------

my $before = cycles();
$gms->tokens([]);
my $t = latency(qr/(?:.*\n){$before}.* ok tokens=0 .*pruned=1/,
                '/entities/x', 'alice-token', 'unknown');
ok(defined $t && $t < 2,
   'revoked in DataHub: refused by the edge within 2 s of the cycle that '
   . 'pruned it, ttl 300 s notwithstanding');
diag(sprintf 'revocation: %.3f s from the cycle to the edge', $t // -1);

# --- a privilege taken away by a policy --------------------------------------

$gms->tokens([ listed('alice-token', $alice), listed('bob-token', $bob) ]);
ok(GmsTest::wait_until(sub { answer('/entities/x', 'alice-token') eq 'ok' },
                       10),
   'alice back');
# the mirror has a thread and a cadence of its own: her privilege comes
# back with a mirror of its own, which must not be taken for the next one
ok(GmsTest::wait_until(sub { answer('/admin/x', 'alice-token') eq 'ok' }, 10),
   'and her privilege');

$before = cycles();
$gms->policies([]);
$t = latency(qr/(?:.*\n){$before}.* privileges\ ok\ users=\d+
                 \ (?:changed=[1-9]|.*removed=[1-9])/x,
             '/admin/x', 'alice-token', 'forbidden');
ok(defined $t && $t < 2,
   "the policy deleted: alice's privilege gone at the edge within 2 s");
diag(sprintf 'privilege removal: %.3f s from the cycle to the edge', $t // -1);

# --- a token created after it was refused ------------------------------------

is(answer('/entities/x', 'bob-token'), 'ok',
   'bob listed since: his negative entry was dropped when follow added it');

kill 'TERM', $pid;
ok(GmsTest::wait_until(sub { waitpid($pid, WNOHANG) == $pid }, 5)
   && $? == 0, 'follow stopped by SIGTERM, exit 0');

# the revocation emptied the listing: a warning (a reindex looks the
# same), and nothing else (but the line saying that the follower polls:
# the stand-in serves no Events API, as a GMS before 1.3)
is_deeply([ grep { !/^gms-token follow: \S+ warning: the listing lacks 1 (?x:
                     )of the 1 tokens cached / }
            grep { !/^gms-token follow: \S+ changes: polling every / }
            split /\n/, GmsTest::slurp("$dir/follow.err") ], [],
          'no failed cycle');

done_testing;

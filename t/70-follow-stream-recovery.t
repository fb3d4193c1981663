#!/usr/bin/perl

# gms-token follow resumed at the stream's kept offset (issue 34): it
# lists no token, yet the privileges thread works at once, from the token
# holders the cache has (gms_sync_tokens_holders_cached), so that a policy
# changed after the restart reaches the edge by the stream's kick, long
# before the next whole listing (--full-interval 1h here); and gms:sync
# at, which the edges' sync age reads, moves with the stream's polls.
# The stand-in GMS serves the Events API (GmsTest::Events); the edge
# caches for 300 s.  Answers the follower cannot use: the same offset
# asked for half as many events each time, then, at one event, the offset
# given up (from the end, and one whole listing).

use strict;
use warnings;

use Test::More;

use GmsTest;
use GmsTest::Edge;
use GmsTest::GraphQL;
use GmsTest::Tool qw(start_follow stop_follow out_lines err_lines
                     gms_account gms_args listed hash_of);

GmsTest::Tool::need_tool();

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZXN1bWUifQ.'
             . 'c2VjcmV0LWdtcy1yZXN1bWUtc2lnbmF0dXJlLTY5';
my $token_file = gms_account($SECRET);
my $alice = 'urn:li:corpuser:alice';
my $TIME = qr/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/;

my $admin = { urn => 'urn:li:dataHubPolicy:admins',
              privileges => ['MANAGE_ACCESS_TOKENS'],
              actors => { users => [$alice] } };

my $e = GmsTest::Edge->start(
    workers => 2,
    http => 'gms_token_cache zone=tokens:1m ttl=300s negative_ttl=300s;');
my $redis = $e->redis;

my $gms = GmsTest::GraphQL->start(token => $SECRET, workers => 4,
                                  events_api => 'on',
                                  tokens => [ listed('alice-token') ],
                                  policies => [$admin]);

my @follow = (gms_args($gms->url, $token_file), '--changes', 'stream',
              '--redis', '127.0.0.1:' . $redis->port, '--interval', '60s',
              '--full-interval', '1h', '--privileges-interval', '1h');

my @pids;

END {
    local $?;
    kill 'KILL', @pids;
}

sub answer {
    my $res = $e->get('/admin/x', 'alice-token');
    return $res->{headers}{'x-gms-result'} // $res->{status};
}

sub streaming {
    my ($f, $how) = @_;
    return GmsTest::wait_until(sub {
        grep { /^gms-token follow: $TIME changes: stream \(\Q$how\E\)/ }
             out_lines($f)
    }, 15);
}

sub listings {
    return scalar grep {
        my $in = $_->{json}{variables}{input};
        $_->{json}{query} =~ /\{\s*listAccessTokens\b/
        && ref $in eq 'HASH' && !@{ $in->{filters} // [] };
    } grep { ref $_->{json} eq 'HASH' && ref $_->{json}{variables} eq 'HASH' }
      @{ $gms->requests };
}

my $f = start_follow(@follow);
push @pids, $f->{pid};
ok(streaming($f, 'from the end'), 'the stream runs, from the end');
ok(GmsTest::wait_until(sub { answer() eq 'ok' }, 10),
   "the reconciliation cached alice's token and privilege");
is(stop_follow($f, 'TERM'), 0, 'stopped');
ok(hash_of($redis, 'gms:sync')->{stream_offset}, 'the offset kept');

$gms->clear_requests;
$f = start_follow(@follow);
push @pids, $f->{pid};
ok(streaming($f, 'resumed at the kept offset'),
   'restarted: resumed at the kept offset');
ok(GmsTest::wait_until(sub {
    grep { / privileges ok users=1 / } out_lines($f) }, 10),
   '... the privileges thread mirrors at once, from the cached holders');

$gms->policies([]);
ok(GmsTest::wait_until(sub { answer() eq 'forbidden' }, 10),
   "the policy deleted after the restart: alice's privilege gone at the "
   . 'edge (the stream kicked the mirror)');
is(listings(), 0, '... and no whole listing');

# the edges' gms_token_sync_age_seconds reads gms:sync at: the stream's
# polls move it, with no token cycle before --full-interval
my $at = hash_of($redis, 'gms:sync')->{at} // 0;
ok(GmsTest::wait_until(sub {
    (hash_of($redis, 'gms:sync')->{at} // 0) > $at }, 10),
   'gms:sync at moves with the stream\'s polls');
is(scalar(grep { / ok tokens=/ } out_lines($f)), 0, '... no token cycle');

is(stop_follow($f, 'TERM'), 0, 'stopped again');
is_deeply([err_lines($f)], [], 'no failure');

# --- answers the follower cannot use: the limit halved, then the end ------
# (--interval 1s: the backoff after a failure is short)

# (unusable from the first poll: a follower resuming asks for the most,
# 1000, as a backlog may wait; quiet, it asks for 1 and gives up at once)
$gms->clear_requests;
$gms->misbehave(field => 'events', body => '{"offsetId": 42}',
                content_type => 'application/json');
$f = start_follow(@follow, '--interval', '1s');
push @pids, $f->{pid};
ok(GmsTest::wait_until(sub {
    grep { /^gms-token follow: $TIME stream gap: .* at limit=1; one whole (?x:
            )listing\z/ } err_lines($f) }, 20),
   'unusable answers: "stream gap: ... at limit=1; one whole listing"');
$gms->misbehave();

my @polls = grep { $_->{uri} =~ m{^/openapi/v1/events/poll\?} }
            @{ $gms->requests };
my ($one) = grep { $polls[$_]{uri} =~ /[?&]limit=1(?:&|\z)/ } 0 .. $#polls;
my @limits = map { $polls[$_]{uri} =~ /[?&]limit=(\d+)/ ? $1 : 0 }
             0 .. ($one // 0);
is_deeply(\@limits, [1000, 500, 250, 125, 62, 31, 15, 7, 3, 1],
          '... the same offset asked for half as many events each time')
    or diag(explain([ map { $_->{uri} } @polls ]));
ok(defined $one
   && !(grep { $polls[$_]{uri} !~ /[?&]offsetId=/ } 0 .. $one),
   '... each with the kept offset');
ok(defined $one && $one < $#polls
   && $polls[$one + 1]{uri} !~ /[?&]offsetId=/,
   '... then the offset given up: asked from the end');

$gms->clear_requests;
ok(GmsTest::wait_until(sub {
    (grep { /changes: stream \(from the end\)/ } out_lines($f)) }, 20),
   'GMS answering again: the stream from the end');
ok(GmsTest::wait_until(sub { listings() >= 1 }, 10),
   '... and one whole listing (the reconciliation)');
$gms->revoke(GmsTest::Tool::datahub_id('alice-token'));
ok(GmsTest::wait_until(sub {
    grep { / stream ok events=\d+ revoked=[1-9]/ } out_lines($f) }, 10),
   '... a revocation comes by the stream again')
    or diag(join "\n", out_lines($f), err_lines($f));
is(stop_follow($f, 'TERM'), 0, 'stopped');

# --- a reconciliation owed survives its holder ------------------------------
# The offset kept from the end needs a whole listing; the holder dies in
# it (GMS slow: 3 s an answer), so gms:sync stream_reconcile still counts
# it, and the next holder, resumed at that offset, lists once and pays.

$redis->cli('HDEL', 'gms:sync', 'stream_offset');
$gms->delay(3);
$f = start_follow(@follow);
push @pids, $f->{pid};
ok(GmsTest::wait_until(sub {
    (grep { /changes: stream \(from the end\)/ } out_lines($f)) }, 20),
   'from the end again, GMS slow');
is(hash_of($redis, 'gms:sync')->{stream_reconcile}, 1,
   '... the reconciliation counted as owed in gms:sync stream_reconcile');
kill 'KILL', $f->{pid};
waitpid $f->{pid}, 0;
ok(hash_of($redis, 'gms:sync')->{stream_offset},
   'the holder killed in its whole listing: the offset kept');
# its lease would last 2 intervals and 2 s: taken as expired
$redis->cli('DEL', 'gms:lease');

$gms->delay(0);
$gms->clear_requests;
$f = start_follow(@follow);
push @pids, $f->{pid};
ok(streaming($f, 'resumed at the kept offset'), 'the next holder resumes');
ok(GmsTest::wait_until(sub {
    listings() >= 1
    && (hash_of($redis, 'gms:sync')->{stream_reconcile} // '') eq '0' }, 15),
   '... lists once, the reconciliation owed, and pays it (0)');
is(listings(), 1, '... exactly one whole listing');
is(stop_follow($f, 'TERM'), 0, 'stopped');

done_testing();

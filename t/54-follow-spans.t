#!/usr/bin/perl

# gms-token follow between two whole listings, against a real redis-server
# and the stand-in GMS (GmsTest::GraphQL, Elasticsearch's range filters on
# createdAt): the listing kept in spans of createdAt, every span counted in
# one request, only those whose count changed (and the last, open-ended
# one) listed again.  A revocation in an old span is pruned and published
# at the next cycle, asking one span and the entity store; a new token is
# cached from the last span; a token that comes late into an old span is
# found by its count; Redis flushed (the listing's epoch gone from
# gms:sync) makes the next listing whole; --full-interval bounds how long a
# change the counts cannot see (one token gone and one come in a span)
# lives; --full-interval 0 reads every listing whole.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::GraphQL;
use GmsTest::Subscriber;
use GmsTest::Tool qw(run_tool start_follow stop_follow ok_lines gms_account
                     gms_args datahub_id key_of listed now_ms);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $redis = GmsTest::Redis->start;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmb2xsb3ctc3BhbnMifQ.'
             . 'c2VjcmV0LWZvbGxvdy1zcGFucy1zaWduYXR1cmUtNTQ';
my $token_file = gms_account($SECRET);

# 1,000 tokens made 10 s apart until a day ago: 100 a page, so spans of
# 100; the 30 of the last five minutes of createdAt in the last span
my $N = 1000;
my $day_ago = now_ms() - 86_400_000;
my @tokens = map { listed("span-$_", created => $day_ago - ($N - $_) * 10_000) }
             0 .. $N - 1;

my $gms = GmsTest::GraphQL->start(token => $SECRET, tokens => \@tokens);
my @follow = (gms_args($gms->url, $token_file), @at, '--interval', '1s',
              '--page-size', 100, '--privileges', 'off', '--inactive', 'keep',
              '--privileges-interval', '1h');

sub cached { return $redis->cmd(EXISTS => key_of($_[0])) }

# The token cycles' lines once there are $n of them (undef: not in 30 s).
sub lines_by {
    my ($f, $n) = @_;
    my @lines;
    GmsTest::wait_until(sub { (@lines = ok_lines($f)) >= $n }, 30)
        or return;
    return @lines;
}

# A line's counts: {tokens, added, ..., listed, spans} (listed and spans
# undef: a whole listing).
sub counts_of {
    my ($line) = @_;
    my %c = ($line // '') =~ /\b(tokens|added|updated|unchanged|expired|(?x:
                               )pruned|kept)=(\d+)/g;
    @c{qw(listed spans)} = ($line // '') =~ / spans=(\d+)\/(\d+) in /;
    return \%c;
}

# The requests of the one cycle whose line is the next after $n lines:
# cleared, then read once that line came.
sub next_cycle {
    my ($f, $n) = @_;
    $gms->clear_requests;
    my @lines = lines_by($f, $n + 1);
    return (counts_of($lines[$n]), @{ $gms->requests });
}

sub fields_of { return GmsTest::GraphQL->root_fields($_[0]{json}{query} // '') }

my $sub = GmsTest::Subscriber->new($redis, 'gms:invalidate');
my $f = start_follow(@follow);

my @lines = lines_by($f, 1);
my $c = counts_of($lines[0]);
is_deeply([ @$c{qw(tokens added listed)} ], [ $N, $N, undef ],
          'the first cycle lists the tokens whole: no spans= on its line')
    or diag($lines[0]);
is(scalar(() = $sub->messages), $N, '... each token published');

# --- a cycle with nothing changed: one request of counts, the last span --

my ($quiet, @req) = next_cycle($f, 1);
my $spans = $quiet->{spans} // 0;
ok($spans >= 9 && $spans <= 11,
   "the next cycle by spans: $spans spans of about 100 tokens")
    or diag(explain($quiet));
is($quiet->{listed}, 1, '... only the last span listed again');
is_deeply([ @$quiet{qw(tokens added updated unchanged pruned)} ],
          [ $N, 0, 0, $N, 0 ], '... every token as before, none written');
is(scalar @req, 2, '... two requests: the counts, the last span');
is_deeply([ fields_of($req[0]) ], [ ('listAccessTokens') x ($spans - 1) ],
          '... the counts: one listAccessTokens a span but the last, '
          . 'as aliases of one query');
like($req[0]{json}{query} // '', qr/^query spans\(\$v0: (?x:
                                    )ListAccessTokenInput!.*a0: (?x:
                                    )listAccessTokens\(input: \$v0\) (?x:
                                    )\{ total \}/s,
     '... each asking only the total');
is_deeply($req[0]{json}{variables}{v0},
          { start => 0, count => 1,
            filters => [ { field => 'createdAt', values => ['1'],
                           condition => 'GREATER_THAN_OR_EQUAL_TO' },
                         { field => 'createdAt',
                           values => [ $tokens[100]{createdAt} - 1 . '' ],
                           condition => 'LESS_THAN_OR_EQUAL_TO' } ] },
          '... the first span: createdAt from 1 ms to the 101st token\'s');
is_deeply([ $sub->messages ], [], '... nothing published');

# --- a revocation in an old span ------------------------------------------

my $revoked = $tokens[150];
$gms->revoke($revoked->{id});
my $t0 = time;
my $n = () = ok_lines($f);
my ($rev, @asked) = next_cycle($f, $n);
# the revocation may fall after the counts of a cycle under way
($rev, @asked) = next_cycle($f, $n + 1) unless $rev->{pruned};
is_deeply([ @$rev{qw(tokens pruned listed)} ], [ $N - 1, 1, 2 ],
          'revoked in DataHub: pruned at the next cycle, two spans listed '
          . 'again (its own, the last)') or diag(explain($rev));
ok(!cached('span-150'), '... gone from Redis');
is_deeply([ $sub->messages ], [ $revoked->{id} ], '... its id published');
is_deeply([ map { [ fields_of($_) ] } @asked[1 .. $#asked] ],
          [ ['listAccessTokens'], ['listAccessTokens'], ['entityExists'] ],
          '... its span and the last listed, then the entity store asked');
is_deeply([ values %{ $asked[-1]{json}{variables} } ], [ $revoked->{urn} ],
          '... for the revoked token only');
cmp_ok(time - $t0, '<', 3, sprintf '... within the interval and 2 s (%.2f s)',
       time - $t0);

# --- a new token, and a token come late into an old span ------------------

my @now = ((grep { $_->{id} ne $revoked->{id} } @tokens),
           listed('fresh', created => int(time * 1000)),
           listed('late', created => $tokens[300]{createdAt} + 500));
$gms->tokens(\@now);
$n = () = ok_lines($f);
my ($new) = next_cycle($f, $n);
($new) = next_cycle($f, $n + 1) unless $new->{added};
is_deeply([ @$new{qw(tokens added pruned listed)} ], [ $N + 1, 2, 0, 2 ],
          'a new token and one indexed late in an old span: both cached, '
          . 'two spans listed again') or diag(explain($new));
ok(cached('fresh') && cached('late'), '... both in Redis');
is_deeply([ sort $sub->messages ],
          [ sort map { datahub_id($_) } qw(fresh late) ],
          '... both published (an edge forgets its "no such token")');

# --- Redis flushed: the next listing is whole -----------------------------

$redis->cmd('FLUSHDB');
$n = () = ok_lines($f);
@lines = lines_by($f, $n + 1);
$c = counts_of($lines[$n]);
# a cycle under way may have read the epoch before the flush
if (defined $c->{spans}) {
    @lines = lines_by($f, $n + 2);
    $c = counts_of($lines[$n + 1]);
}
is_deeply([ @$c{qw(tokens added spans)} ], [ $N + 1, $N + 1, undef ],
          'Redis flushed: the listing\'s epoch gone, the next listing whole, '
          . 'every token cached again') or diag($lines[-1]);
ok(cached('span-0') && cached('fresh'), '... in Redis');
like($redis->cmd(HGET => 'gms:sync', 'listing_epoch') // '', qr/^\S+$/,
     '... gms:sync listing_epoch written again');

is(stop_follow($f, 'TERM'), 0, 'stopped');

# --- what the counts cannot see, until the next whole listing ------------

{
    my @swap = grep { $_->{id} ne $tokens[420]{id} } @now;
    push @swap, listed('swapped-in', created => $tokens[420]{createdAt} + 1);
    my $f2 = start_follow(@follow, '--full-interval', '4s');
    lines_by($f2, 2) or fail('a follower with --full-interval 4s');

    $gms->tokens(\@swap);
    my $t1 = time;
    ok(GmsTest::wait_until(sub { cached('swapped-in')
                                 && !cached('span-420') }, 15),
       'one token gone and one come in the same span: the counts do not '
       . 'change, the whole listing (--full-interval 4s) finds both');
    my $took = time - $t1;
    cmp_ok($took, '<', 4 + 1 + 3, sprintf '... within the full interval '
           . 'and a cycle (%.1f s)', $took);
    my @whole = grep { !defined counts_of($_)->{spans} } ok_lines($f2);
    cmp_ok(scalar @whole, '>=', 2, '... whole listings on their lines: '
           . 'no spans=');
    is(stop_follow($f2, 'TERM'), 0, 'stopped');
}

# --- --full-interval 0: every listing whole --------------------------------

{
    my $f3 = start_follow(@follow, '--full-interval', '0');
    my @three = lines_by($f3, 3);
    is_deeply([ map { counts_of($_)->{spans} } @three ], [ undef, undef, undef ],
              '--full-interval 0: three cycles, each listing whole');
    is(stop_follow($f3, 'TERM'), 0, 'stopped');
}

for my $bad ('soon', '500ms', '2d') {
    my $res = run_tool(undef, 'follow', @follow, '--full-interval', $bad);
    is($res->{rc}, 2, "--full-interval $bad: exit 2");
    like($res->{err}, qr/^gms-token: follow: --full-interval: '\Q$bad\E' (?x:
                         )is not a time from 1s to 1d/,
         '... one line naming it');
}

done_testing();

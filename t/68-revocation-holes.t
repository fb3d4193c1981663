#!/usr/bin/perl

# A revocation in DataHub reaches the edge at the follower's next cycles,
# however young the token, in polling mode: DataHub (the stand-in GMS,
# GmsTest::GraphQL) -> gms-token follow --interval 1s -> Redis ->
# <prefix>invalidate -> an edge caching for 300 s.  Each case caches a
# token (200 at the edge), revokes it in DataHub, then waits for the
# edge's 401 (unknown) for at most 5 token cycles:
#
#  - a token made a second before it was listed, cached by a cycle by
#    spans (the default --full-interval 10m) and by a whole listing
#    (--full-interval 0): GMS's entity store says it is gone
#    (entityExists false), no young-token grace keeps it;
#  - the same with a createdAt an hour ahead (GMS's clock ahead of the
#    follower's);
#  - a token the listing lost while GMS still had it (a reindex: kept),
#    revoked later: a cycle by spans asks it again, as a whole listing
#    would, rather than forget it until the next whole listing;
#  - a user suspended then active again: every token of theirs back at
#    the edge, those of the spans no cycle lists again included.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(time);

use GmsTest;
use GmsTest::Edge;
use GmsTest::GraphQL;
use GmsTest::Tool qw(start_follow stop_follow ok_lines gms_account gms_args
                     listed);

GmsTest::Tool::need_tool();

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZXZvY2F0aW9uLWhvbGVzIn0.'
             . 'c2VjcmV0LXJldm9jYXRpb24taG9sZXMtc2lnbmF0dXJlLTY4';
my $token_file = gms_account($SECRET);

# 20 tokens made a minute apart a day ago, 5 a page: spans of 5
my $day_ago = int(time * 1000) - 86_400_000;
my @old = map { listed("old-$_", created => $day_ago + $_ * 60_000) } 1 .. 20;

my $e = GmsTest::Edge->start(
    workers => 2,
    http => 'gms_token_cache zone=tokens:1m ttl=300s negative_ttl=300s;');
my $gms = GmsTest::GraphQL->start(token => $SECRET, tokens => \@old);
my @follow = (gms_args($gms->url, $token_file),
              '--redis', '127.0.0.1:' . $e->redis->port, '--interval', '1s',
              '--page-size', 5, '--privileges', 'off', '--inactive', 'keep',
              '--privileges-interval', '1h');

# the edge's word on a token: ok, unknown ...
sub answer {
    my $res = $e->get('/entities/x', $_[0]);
    return $res->{headers}{'x-gms-result'} // $res->{status};
}

# Waits for the edge to answer $want for $token, for no more than $cycles
# token cycles of $f from now; true if it did.
sub within_cycles {
    my ($f, $token, $want, $cycles) = @_;
    my $n = ok_lines($f);
    GmsTest::wait_until(sub { answer($token) eq $want
                              || ok_lines($f) > $n + $cycles }, 120);
    return answer($token) eq $want;
}

# The follower's token cycle lines after the first $n.
sub lines_after {
    my ($f, $n) = @_;
    my @lines = ok_lines($f);
    return @lines[$n .. $#lines];
}

# A token listed, cached by the follower, used at the edge, then revoked:
# refused within 5 cycles.  $mode spans: the cycle that cached it went by
# spans; whole: it read the listing whole.
sub revoked_young {
    my ($f, $mode, $name, $created, $what) = @_;
    my $tok = listed($name, created => $created);
    my $n = ok_lines($f);

    $gms->tokens([ @old, $tok ]);
    ok(within_cycles($f, $name, 'ok', 5),
       "$mode: a token $what, listed: 200 at the edge");
    my ($added) = grep { / added=1 / } lines_after($f, $n);
    my $by = $mode eq 'spans' ? qr/ spans=\d+\/\d+ / : qr/^(?!.*spans=)/;
    like($added // '', $by, '... cached by a cycle '
                            . ($mode eq 'spans' ? 'by spans' : 'listing whole'))
        or diag($added);

    $gms->revoke($tok->{id});
    my $t0 = time;
    ok(within_cycles($f, $name, 'unknown', 5),
       "$mode: revoked in DataHub: 401 at the edge within 5 cycles, "
       . 'no grace for a token GMS says is gone');
    diag(sprintf '%s, %s: %.2f s from the revocation to the 401', $mode,
         $what, time - $t0);
}

# --- cycles by spans (--full-interval 10m, the default) -----------------

my $f = start_follow(@follow);
GmsTest::wait_until(sub { ok_lines($f) >= 2 }, 30)
    or BAIL_OUT('follow: no second token cycle');
like((ok_lines($f))[1], qr/ spans=\d+\/\d+ /,
     'spans: the second cycle goes by spans');

revoked_young($f, 'spans', 'young-spans', int(time * 1000) - 1000,
              'made a second before');
revoked_young($f, 'spans', 'ahead-spans', int(time * 1000) + 3_600_000,
              'made an hour ahead (GMS\'s clock)');

# a token the search index lost (a reindex) while GMS still has it: kept,
# and asked again at each cycle until it is listed or gone
{
    my $tok = listed('reindexed', created => $day_ago + 90_000);
    $gms->tokens([ @old, $tok ]);
    ok(within_cycles($f, 'reindexed', 'ok', 5),
       'spans: a token listed in an old span: 200 at the edge');

    my $n = ok_lines($f);
    $gms->tokens([ @old, { %$tok, unlisted => 1 } ]);
    GmsTest::wait_until(sub { grep { / kept=[1-9]/ } lines_after($f, $n) }, 30);
    ok((grep { / kept=[1-9]/ } lines_after($f, $n)),
       '... unlisted, GMS still has it: kept') or diag(ok_lines($f));
    is(answer('reindexed'), 'ok', '... 200 at the edge');

    $gms->tokens(\@old);
    ok(within_cycles($f, 'reindexed', 'unknown', 5),
       '... then revoked in DataHub: 401 at the edge within 5 cycles '
       . '(asked again though no span lists it)');
}

is(stop_follow($f, 'TERM'), 0, 'spans: stopped');

# --- every listing whole (--full-interval 0) ------------------------------

$f = start_follow(@follow, '--full-interval', '0');
GmsTest::wait_until(sub { ok_lines($f) >= 1 }, 30)
    or BAIL_OUT('follow --full-interval 0: no token cycle');

revoked_young($f, 'whole', 'young-whole', int(time * 1000) - 1000,
              'made a second before');
revoked_young($f, 'whole', 'ahead-whole', int(time * 1000) + 3_600_000,
              'made an hour ahead (GMS\'s clock)');

is(stop_follow($f, 'TERM'), 0, 'whole: stopped');

is_deeply([ grep { !/ warning: / } GmsTest::Tool::err_lines($f) ], [],
          'no failed cycle');

# --- a user suspended, then active again: every token of theirs back ------
# With --inactive refuse (the default) a suspended user's tokens leave the
# cache; once active again, the users' check writes them back at once: a
# cycle by spans writes only the tokens of the spans it lists again, so
# old-1's (the first span) would wait for the next whole listing.

$gms->tokens(\@old);
$f = start_follow(gms_args($gms->url, $token_file),
                  '--redis', '127.0.0.1:' . $e->redis->port,
                  '--interval', '1s', '--page-size', 5, '--privileges', 'off',
                  '--privileges-interval', '1s');
GmsTest::wait_until(sub { ok_lines($f) >= 2 }, 30)
    or BAIL_OUT('follow: no second token cycle');
ok(within_cycles($f, 'old-1', 'ok', 5), 'users: old-1 at the edge');

$gms->users({ 'urn:li:corpuser:alice' => { status => 'SUSPENDED' } });
ok(GmsTest::wait_until(sub { answer('old-1') ne 'ok' }, 30),
   'alice suspended: old-1 refused at the edge');
$gms->users({});
ok(GmsTest::wait_until(sub { answer('old-1') eq 'ok' }, 30),
   'alice active again: old-1 (a span no cycle lists again) back at the '
   . 'edge, long before the next whole listing');
is(stop_follow($f, 'TERM'), 0, 'users: stopped');

done_testing();

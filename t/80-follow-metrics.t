#!/usr/bin/perl

# gms-token follow --metrics-file: the follower's own metrics in
# Prometheus's text format, in a file rewritten whole at each cycle
# (node_exporter's textfile collector's convention; docs/gms-token.md).
# Two followers against one Redis and the stand-in GMS with its Events
# API (every cycle a second apart, --full-interval included, so that the
# token cycle runs beside the stream): the file of each passes `promtool
# check metrics` (Debian's prometheus package: this test fails, never
# skips, without it), and its
# values move as the follower works: the holder's token cycle counted,
# the tokens it mirrored equal to those the stand-in lists, its lease 1,
# GMS's requests timed by API, the stream running and its events counted
# after a revocation; the standby's lease 0 and no token cycle; a failing
# listAccessTokens counted as a token cycle's error and a GMS request's;
# the holder stopped, its file says lease 0 and the standby's, once it
# takes over, 1.  No temporary file is left beside them.  A path that
# cannot be written is refused at start.

use strict;
use warnings;

use Test::More;

use GmsTest;
use GmsTest::GraphQL;
use GmsTest::Tool qw(start_follow stop_follow out_lines run_tool
                     gms_account gms_args listed datahub_id);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $redis = GmsTest::Redis->start;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtZXRyaWNzIn0.'
             . 'c2VjcmV0LWdtcy1tZXRyaWNzLXNpZ25hdHVyZS04MA';
my $token_file = gms_account($SECRET);
my $alice = 'urn:li:corpuser:alice';

my $gms = GmsTest::GraphQL->start(token => $SECRET, workers => 4,
    events_api => 'on',
    tokens => [ map { listed("metrics-$_") } 1 .. 7 ],
    policies => [ { urn => 'urn:li:dataHubPolicy:tokens',
                    privileges => ['MANAGE_ACCESS_TOKENS'],
                    actors => { users => [$alice] } } ]);

my $dir = GmsTest::tempdir();
my @followers;

END {
    local $?;
    kill 'KILL', map { $_->{pid} } @followers;
}

sub follower {
    my ($file) = @_;
    my $f = start_follow(gms_args($gms->url, $token_file), '--interval', '1s',
                         '--full-interval', '1s', '--privileges-interval',
                         '1s', '--changes', 'auto', '--metrics-file', $file,
                         @at);
    push @followers, $f;
    return $f;
}

# the file's samples: 'name{labels}' => value (undef: no file yet)
sub metrics {
    my ($file) = @_;
    open my $fh, '<', $file or return undef;
    my %m;
    while (<$fh>) {
        next if /^#/;
        $m{$1} = $2 if /^(\S+) (\S+)$/;
    }
    return \%m;
}

sub value {
    my ($file, $name) = @_;
    my $m = metrics($file) or return undef;
    return $m->{$name};
}

sub cycles {
    my ($file, $kind, $outcome) = @_;
    return value($file, "gms_follow_cycles_total{kind=\"$kind\","
                        . "outcome=\"$outcome\"}") // 0;
}

# promtool check metrics on the file: its exit code and what it said
sub promtool {
    my ($file) = @_;
    my $out = `promtool check metrics < '$file' 2>&1`;
    return ($? >> 8, $out);
}

sub passes_promtool {
    my ($file, $title) = @_;
    my ($rc, $out) = promtool($file);
    is($rc, 0, "promtool check metrics: $title") or diag($out);
    is($out, '', "promtool finds nothing to fix: $title");
}

ok(GmsTest::in_path('promtool'),
   'promtool is installed (Debian: prometheus; tools/install-deps.sh)');

# --- a path that cannot be written: refused at start -----------------------

my $res = run_tool(undef, 'follow', gms_args($gms->url, $token_file), @at,
                   '--metrics-file', "$dir/none/follow.prom");
is($res->{rc}, 2, 'an unwritable --metrics-file is a usage error');
like($res->{err}, qr{^gms-token:[ ]follow:[ ]--metrics-file:[ ]cannot[ ]write[ ]
                     \Q$dir\E/none/follow\.prom:[ ]No[ ]such[ ]file[ ]or[ ]
                     directory$}mx, 'the error names the file and why');
is($res->{out}, '', 'nothing done: no lease taken');

# --- the holder -----------------------------------------------------------

my $one = "$dir/one.prom";
my $two = "$dir/two.prom";
my $holder = follower($one);

ok(GmsTest::wait_until(sub {
       cycles($one, 'tokens', 'ok') >= 1
       && cycles($one, 'privileges', 'ok') >= 1
       && (value($one, 'gms_follow_stream_running') // 0) == 1
       && cycles($one, 'stream', 'ok') >= 1 }, 15),
   'the holder counted a token cycle, a mirror and a poll of the stream')
    or diag(GmsTest::slurp($holder->{out}), GmsTest::slurp($holder->{err}));

passes_promtool($one, 'the holder');

my $m = metrics($one);
is($m->{gms_follow_tokens}, scalar @{ $gms->tokens },
   'gms_follow_tokens: as many as the stand-in lists (7)');
is($m->{gms_follow_lease_held}, 1, 'the holder: lease_held 1');
cmp_ok($m->{gms_follow_invalidations_total}, '>=', 7,
       'the 7 tokens added were published');
cmp_ok($m->{'gms_follow_gms_request_duration_seconds_count{api="graphql"}'},
       '>=', 2, 'GMS GraphQL requests timed (the listing, the policies)');
cmp_ok($m->{'gms_follow_gms_request_duration_seconds_count{api="openapi"}'},
       '>=', 1, 'the Events API polls timed');
is($m->{'gms_follow_gms_request_duration_seconds_bucket{api="graphql",'
        . 'le="+Inf"}'},
   $m->{'gms_follow_gms_request_duration_seconds_count{api="graphql"}'},
   'the +Inf bucket holds every request');
cmp_ok($m->{'gms_follow_last_success_timestamp_seconds{kind="tokens"}'},
       '>', time - 600, 'the last token cycle: a time of today');
is($m->{gms_follow_users}, 1, 'gms_follow_users: alice, mirrored');

# --- the standby ------------------------------------------------------------

my $standby = follower($two);

ok(GmsTest::wait_until(sub {
       grep { /lease held by \S+; standing by$/ } out_lines($standby) }, 10),
   'the second follower stands by');
ok(GmsTest::wait_until(sub { defined value($two, 'gms_follow_lease_held') },
                       10),
   'the standby wrote its file');
passes_promtool($two, 'the standby');
is(value($two, 'gms_follow_lease_held'), 0, 'the standby: lease_held 0');
is(cycles($two, 'tokens', 'ok'), 0, 'the standby ran no token cycle');

# --- the stream: a revocation -----------------------------------------------

my $events = value($one, 'gms_follow_stream_events_total');
$gms->revoke(datahub_id('metrics-1'));

ok(GmsTest::wait_until(sub {
       value($one, 'gms_follow_stream_events_total') > $events }, 10),
   'a revocation on the stream: its events counted');
cmp_ok(value($one, 'gms_follow_stream_lag_seconds'), '>=', 0,
       'the stream lag: seconds, never negative');

# --- a failing GMS: errors counted ------------------------------------------

my $errors = cycles($one, 'tokens', 'error');
my $failed = value($one, 'gms_follow_gms_request_errors_total{api="graphql"}');
$gms->misbehave(status => 500, field => 'listAccessTokens');

ok(GmsTest::wait_until(sub { cycles($one, 'tokens', 'error') > $errors },
                       15),
   'a failing listAccessTokens: the token cycle counted as an error');
cmp_ok(value($one, 'gms_follow_gms_request_errors_total{api="graphql"}'),
       '>', $failed, 'and its request counted as failed');
passes_promtool($one, 'after errors');

$gms->misbehave();

# --- the holder stops, the standby takes over ---------------------------------

is(stop_follow($holder, 'TERM', 10), 0, 'the holder stops on SIGTERM');
is(value($one, 'gms_follow_lease_held'), 0,
   'its file says lease_held 0 once it is gone');

ok(GmsTest::wait_until(sub {
       (value($two, 'gms_follow_lease_held') // 0) == 1
       && cycles($two, 'tokens', 'ok') >= 1 }, 15),
   'the standby took over: lease_held 1, a token cycle counted');
is(value($two, 'gms_follow_tokens'), scalar @{ $gms->tokens },
   'its tokens: as many as the stand-in lists now (6)');

is(stop_follow($standby, 'TERM', 10), 0, 'the second follower stops');

opendir my $dh, $dir or die "$dir: $!\n";
is_deeply([ sort grep { !/^\./ } readdir $dh ], [ 'one.prom', 'two.prom' ],
          'no temporary file left beside the metrics');

done_testing;

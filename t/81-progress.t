#!/usr/bin/perl

# Progress on long work: sync, migrate and follow's first whole listing
# write one line on stderr, rewritten with a carriage return, while they
# count (tokens listed and written, keys copied: the count, the total when
# known, the rate), and wipe it before anything else is written, but only
# when stderr is a terminal (a few times a second at most).  Under a
# pseudo-terminal (util-linux's `script`, bsdutils, always installed:
# stdout and stderr both on it) the lines are there with their counts,
# and the progress is wiped before the counts' line; with stderr a file,
# nothing is written there at all.
# follow shows its first listing's progress, not the next cycles'.

use strict;
use warnings;

use Test::More;

use GmsTest;
use GmsTest::GraphQL;
use GmsTest::Tool qw(run_tool out_lines gms_account gms_args listed);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $redis = GmsTest::Redis->start;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwcm9ncmVzcyJ9.'
             . 'c2VjcmV0LWdtcy1wcm9ncmVzcy1zaWduYXR1cmUtODE';
my $token_file = gms_account($SECRET);
my $N = 25;

my $gms = GmsTest::GraphQL->start(token => $SECRET, workers => 2,
    tokens => [ map { listed("progress-$_") } 1 .. $N ],
    policies => [ { urn => 'urn:li:dataHubPolicy:tokens',
                    privileges => ['MANAGE_ACCESS_TOKENS'],
                    actors => { users => ['urn:li:corpuser:alice'] } } ]);

my $dir = GmsTest::tempdir();
my $bin = GmsTest::Tool::bin();

ok(GmsTest::in_path('script'), 'script (util-linux, bsdutils) is installed');

sub quoted { my $s = shift; $s =~ s/'/'\\''/g; return "'$s'" }

# gms-token under a pseudo-terminal: {rc, raw} (stdout and stderr as the
# terminal got them: its newlines are \r\n)
sub on_terminal {
    my (@args) = @_;
    my $cmd = join ' ', map { quoted($_) } $bin, @args;
    my $raw = `script -q -e -c @{[ quoted($cmd) ]} /dev/null < /dev/null`;
    return { rc => $? >> 8, raw => $raw };
}

# the progress lines of $command in what a terminal got: each rewrite
sub progress {
    my ($raw, $command) = @_;
    return $raw =~ m{\r(gms-token:\ $command:\ [a-z ]+\ \d+(?:/\d+)?
                       (?:,\ \d+/s)?)\ *(?=\r)}gx;
}

# --- sync --gms -------------------------------------------------------------

# each page a tenth of a second late: the listing's lines have a rate
$gms->delay(0.1);
my $res = on_terminal('sync', gms_args($gms->url, $token_file), '--page-size',
                      5, @at);
$gms->delay(0);
is($res->{rc}, 0, 'sync on a terminal');
my @shown = progress($res->{raw}, 'sync');
ok((grep { m{^gms-token: sync: tokens listed \d+/$N\b} } @shown),
   'sync: the tokens listed, of the total GMS gives')
    or diag(explain($res->{raw}));
ok((grep { m{^gms-token: sync: tokens listed \d+/$N, \d+/s$} } @shown),
   'sync: the listing\'s rate, once it lasted');
ok((grep { m{^gms-token: sync: tokens written $N/$N\b} } @shown),
   'sync: the tokens written, all of them in the end');
like($res->{raw}, qr/\r {20,}\rtokens=$N added=$N /,
     'the progress line wiped before the counts, which start a line');

$res = run_tool(undef, 'sync', gms_args($gms->url, $token_file),
                '--page-size', 5, @at);
is($res->{rc}, 0, 'sync with stderr a file');
is($res->{err}, '', 'nothing on stderr: no progress off a terminal');
like($res->{out}, qr/^tokens=$N added=0 updated=0 unchanged=$N /,
     'the counts as ever');

# --- migrate ----------------------------------------------------------------

my $to = GmsTest::Redis->start;
my @to = ('--redis', '127.0.0.1:' . $to->port);

$res = on_terminal('migrate', '--from-redis', '127.0.0.1:' . $redis->port,
                   @to);
is($res->{rc}, 0, 'migrate on a terminal');
ok((grep { /^gms-token: migrate: keys copied \d+/ }
    progress($res->{raw}, 'migrate')), 'migrate: the keys copied')
    or diag(explain($res->{raw}));
like($res->{raw}, qr/\r +\rtokens=$N /, 'wiped before its counts');

$res = run_tool(undef, 'migrate', '--from-redis', '127.0.0.1:' . $redis->port,
                @to);
is($res->{rc}, 0, 'migrate with stderr a file');
is($res->{err}, '', 'nothing on stderr');

# --- follow: its first listing only -----------------------------------------

# follow on a terminal, in the background: its pid written by the shell
# that becomes it
my $pidfile = "$dir/follow.pid";
my $out = "$dir/follow.out";
my $cmd = 'echo $$ > ' . quoted($pidfile) . '; exec '
          . join ' ', map { quoted($_) } $bin, 'follow',
            gms_args($gms->url, $token_file), '--interval', '1s',
            '--changes', 'poll', '--page-size', 5, @at;

my $pid = fork // die "fork: $!\n";
if ($pid == 0) {
    open STDIN, '<', '/dev/null' or POSIX::_exit(127);
    open STDOUT, '>', $out or POSIX::_exit(127);
    exec 'script', '-q', '-e', '-c', $cmd, '/dev/null' or POSIX::_exit(127);
}

my $cycles = sub { my @l = GmsTest::slurp($out) =~ / ok tokens=/g;
                   return scalar @l };

ok(GmsTest::wait_until(sub { -s $pidfile && $cycles->() >= 3 }, 20),
   'follow on a terminal: three token cycles');
my $follow = GmsTest::slurp($pidfile);
chomp $follow;
kill 'TERM', $follow;
waitpid $pid, 0;

my $raw = GmsTest::slurp($out);
my @listed = grep { m{^gms-token: follow: tokens listed \d+/$N\b} }
             progress($raw, 'follow');
ok(@listed, 'follow: its first listing shown') or diag(explain($raw));
my ($before, $after) = split / ok tokens=/, $raw, 2;
ok(!progress($after, 'follow'), 'and no later cycle\'s');

my $plain = GmsTest::Tool::start_follow(gms_args($gms->url, $token_file),
                                        '--interval', '1s', '--changes',
                                        'poll', '--page-size', 5, @at);
ok(GmsTest::wait_until(sub { (() = GmsTest::slurp($plain->{out})
                              =~ / ok tokens=/g) >= 1 }, 20),
   'follow with stderr a file: a token cycle');
GmsTest::Tool::stop_follow($plain, 'TERM', 10);
is(GmsTest::slurp($plain->{err}), '', 'nothing on its stderr');

done_testing;

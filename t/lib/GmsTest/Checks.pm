package GmsTest::Checks;

# Checks on an edge (a GmsTest::Nginx) whose configuration has a location
# /ok that needs a token and /metrics with gms_token_metrics, as the edges
# of t/25 and t/26 have:
#
#   use GmsTest::Checks qw(status metric no_crash);
#   is(status($n, 'secret'), 200);
#   is(metric($n, 'gms_redis_tls_handshake_failures_total'), 0);
#   no_crash($n);
#
# and, for the Redis failure tests (t/26, t/62 to t/64):
#
#   my @got = watch($n, 'secret', 3);        statuses, every 0.25 s
#   calls($redis, 'evalsha_ro');             the server's count of a command
#   diag gms_lines($n);                      the module's errors and warnings
#   my $loop = request_loop($n->port, 'secret', 3);
#   $loop->{count}->(); my $count = $loop->{stop}->();   { status => n }
#   my $rows = request_rows($n->port, tokens => ['secret', 'nope'],
#                           pause => 0.02)->{stop}->();  [time, token, status]

use strict;
use warnings;

use Exporter 'import';
use POSIX ();
use Time::HiRes ();

use GmsTest ();
use GmsTest::HTTP;
use Test::More ();

our @EXPORT_OK = qw(status metric no_crash watch calls gms_lines
                    request_loop request_rows);

# The status of GET /ok with $token as a bearer token ('none': no answer).
sub status {
    my ($n, $token) = @_;
    my $res = $n->http(GET => '/ok', { Authorization => "Bearer $token" },
                       undef, timeout => 5);
    return $res->{status} // 'none';
}

# The value of an unlabelled series on /metrics (undef: not there).
sub metric {
    my ($n, $name) = @_;
    my $text = $n->http(GET => '/metrics')->{body} // '';
    return $text =~ /^\Q$name\E (\S+)$/m ? $1 : undef;
}

# Stops nginx and asserts its error log has no alerts or crashes; $allow:
# bad lines that are expected (nginx's own classification).
sub no_crash {
    my ($n, $allow) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    $n->stop;
    my @bad = $n->bad_log_lines;
    @bad = grep { !/$allow/ } @bad if $allow;
    Test::More::is_deeply(\@bad, [], 'no alerts or crashes');
}

# The statuses of $token for $seconds, a request every 0.25 s.
sub watch {
    my ($n, $token, $seconds) = @_;
    my @got;
    my $end = Time::HiRes::time() + $seconds;
    while (Time::HiRes::time() < $end) {
        push @got, status($n, $token);
        Time::HiRes::sleep(0.25);
    }
    return @got;
}

# How many times $redis (a GmsTest::Redis) ran $command (INFO
# commandstats, lowercase: 'evalsha_ro').
sub calls {
    my ($redis, $command) = @_;
    my $info = $redis->cmd(INFO => 'commandstats');
    return $info =~ /^cmdstat_\Q$command\E:calls=(\d+)/m ? $1 : 0;
}

# The first eight of the module's error and warning lines, for a diag.
sub gms_lines {
    my ($n) = @_;
    my @lines = grep { /\[(?:error|warn)\].*gms: / } split /\n/, $n->error_log;
    return join "\n", @lines[0 .. ($#lines < 7 ? $#lines : 7)];
}

# A process asking GET $opt{path} (/ok) on $port, one request after the
# other and $opt{pause} s apart (none), with the tokens of $opt{tokens} in
# turn, for $opt{seconds} s (60) or until stopped; each answer written
# down as [time, token, status] (none: no answer within $opt{timeout} s,
# 5), but with from_answer => 1 those before the first answer (the loop
# may start before nginx listens).  count: the answers so far; stop: ends
# the loop and returns the rows; wait: waits for its end, the rows.
sub request_rows {
    my ($port, %opt) = @_;

    my $file = GmsTest::tempdir() . '/loop';
    my $stop = "$file.stop";
    my @tokens = @{ $opt{tokens} };
    my $pid = fork // die "fork: $!\n";

    if ($pid == 0) {
        open my $out, '>', $file or POSIX::_exit(1);
        $out->autoflush(1);
        my $end = Time::HiRes::time() + ($opt{seconds} // 60);
        my ($i, $answered) = (0, !$opt{from_answer});
        while (!-e $stop && Time::HiRes::time() < $end) {
            my $token = $tokens[$i++ % @tokens];
            my $res = GmsTest::HTTP::request($port,
                GET => $opt{path} // '/ok',
                { Authorization => "Bearer $token" }, undef,
                timeout => $opt{timeout} // 5);
            my $status = $res->{status};
            if (!$answered && !defined $status) {
                Time::HiRes::sleep(0.005);
                next;
            }
            $answered = 1;
            printf $out "%.3f %s %s\n", Time::HiRes::time(), $token,
                        $status // 'none';
            Time::HiRes::sleep($opt{pause}) if $opt{pause};
        }
        close $out;
        POSIX::_exit(0);
    }

    my $rows = sub {
        waitpid $pid, 0;
        return [ map { [split ' '] } split /\n/, GmsTest::slurp($file) ];
    };

    return {
        count => sub { scalar(() = GmsTest::slurp($file) =~ /\n/g) },
        stop  => sub { GmsTest::write_file($stop, ''); $rows->() },
        wait  => $rows,
    };
}

# $children request_rows() asking GET /ok with $token on $port from the
# first answer on, 10 s for each answer.  count: the answers so far;
# stop: ends the loops and returns { status => how many }.
sub request_loop {
    my ($port, $token, $children) = @_;

    my @loops = map { request_rows($port, tokens => [$token], timeout => 10,
                                   from_answer => 1) } 1 .. $children;

    return {
        count => sub {
            my $n = 0;
            $n += $_->{count}->() for @loops;
            return $n;
        },
        stop => sub {
            my %count;
            for my $loop (@loops) {
                $count{ $_->[2] }++ for @{ $loop->{stop}->() };
            }
            return \%count;
        },
    };
}

1;

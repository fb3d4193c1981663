package Instructions;

# make bench's instruction counts (issue 28): user-space instructions per
# request of the measured nginx, which do not move with the machine's
# noise as CPU time does.
#
# One front's nginx (a configuration of its own, its own ports) runs in
# the foreground as one process ("daemon off; master_process off;") under
# valgrind's cachegrind (--cache-sim=no: the instructions only), and is
# sent, on one keep-alive connection, a warm-up (each token once: the
# shared cache filled where there is one) and then N requests; QUIT ends
# it and cachegrind prints the instructions it ran ("I refs").  Twice,
# with N = a and N = b: start-up, warm-up and shutdown are the same in
# both runs, so (I(b) - I(a)) / (b - a) is what one more request costs.
# It leaves out the kernel's share of a request (the system calls'
# work), which the CPU time column has.
#
#   my $per = Instructions::per_request(
#       pin => [ 'taskset', '-c', 0 ],
#       cmd => [ 'nginx', '-p', $dir, '-c', $conf ],
#       port => $port, requests => \@raw_requests, warm => 1000,
#       counts => [500, 2500], dir => $dir, name => 'C');
#
# returns { per_request, low, high, seconds }, or dies saying why.
#
# Core Perl only.

use strict;
use warnings;

use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

sub per_request {
    my (%o) = @_;

    my ($a, $b) = @{ $o{counts} };
    my $t0 = time;

    $o{tool} //= 'cachegrind';
    my $low = _run(%o, n => $a, tag => "$o{name}-$a");
    my $high = _run(%o, n => $b, tag => "$o{name}-$b");

    return { per_request => ($high - $low) / ($b - $a), low => $low,
             high => $high, seconds => time - $t0 };
}

# One nginx under cachegrind: its instructions after warm + n requests.
sub _run {
    my (%o) = @_;

    my $log = "$o{dir}/cachegrind-$o{tag}.log";
    my $pid = fork // die "instructions: fork: $!\n";

    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', $log;
        open STDERR, '>&', \*STDOUT;
        exec @{ $o{pin} // [] }, 'valgrind', _tool(%o),
             @{ $o{cmd} }, '-g', 'daemon off; master_process off;'
            or POSIX::_exit(127);
    }

    my $sock;
    for (1 .. 600) {
        last if waitpid($pid, WNOHANG) == $pid;
        $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => $o{port}, Proto => 'tcp');
        last if $sock;
        sleep 0.05;
    }

    if (!$sock) {
        kill 'KILL', $pid;
        waitpid $pid, 0;
        die "instructions: $o{name}: nginx under valgrind did not listen:\n"
            . _slurp($log);
    }

    my $reqs = $o{requests};
    my $total = $o{warm} + $o{n};

    # a front that finds its Redis after the start (a cluster's slot map)
    # answers 503 until then: the first request is tried again for up to
    # 10 s (a few requests more in one run than in the other: some tens of
    # instructions a request at most, in 2,000)
    for (1 .. 200) {
        my $status = _exchange($sock, $reqs->[0]);
        last if !defined $status || $status !~ /^503$/;
        sleep 0.05;
    }

    for my $i (0 .. $total - 1) {
        my $status = _exchange($sock, $reqs->[$i % @$reqs]);
        if (!defined $status || $status !~ /^2/) {
            kill 'KILL', $pid;
            waitpid $pid, 0;
            die "instructions: $o{name}: request $i answered "
                . ($status // 'nothing') . "\n";
        }
    }

    close $sock;
    kill 'QUIT', $pid;
    waitpid $pid, 0;

    my ($refs) = _slurp($log) =~ /I\s+refs:\s+([\d,]+)/
        or die "instructions: $o{name}: no 'I refs' from cachegrind:\n"
               . _slurp($log);
    $refs =~ tr/,//d;

    return $refs;
}

# cachegrind counts; callgrind (BENCH_CALLGRIND=1) counts the same and
# keeps a profile of each run, $dir/callgrind.out.<front>-<n>: the
# difference of the two runs' functions is one request's profile
# (bench/profile-diff.pl).
sub _tool {
    my (%o) = @_;

    return ('--tool=callgrind', '--dump-instr=yes',
            "--callgrind-out-file=$o{dir}/callgrind.out.$o{tag}")
        if $o{tool} eq 'callgrind';

    return ('--tool=cachegrind', '--cache-sim=no',
            "--cachegrind-out-file=$o{dir}/cachegrind.out.$o{tag}");
}

# One request on the connection, its answer read whole (Content-Length or
# chunked); the status, or undef.
sub _exchange {
    my ($sock, $req) = @_;

    print {$sock} $req or return;

    my $head = '';
    while ($head !~ /\r\n\r\n/) {
        my $n = sysread($sock, $head, 4096, length $head) or return;
    }

    my ($top, $body) = split /\r\n\r\n/, $head, 2;
    my ($status) = $top =~ m{^HTTP/1\.\d (\d{3})} or return;

    if ($top =~ /^Content-Length:\s*(\d+)/mi) {
        my $len = $1;
        while (length $body < $len) {
            sysread($sock, $body, $len - length $body, length $body) or return;
        }
        return $status;
    }

    if ($top =~ /^Transfer-Encoding:\s*chunked/mi) {
        while ($body !~ /(?:^|\r\n)0\r\n\r\n\z/) {
            sysread($sock, $body, 4096, length $body) or return;
        }
        return $status;
    }

    return $status;
}

sub _slurp {
    my ($path) = @_;
    open my $fh, '<', $path or return '';
    local $/;
    return scalar <$fh>;
}

1;

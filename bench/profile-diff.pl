#!/usr/bin/perl
#
# One request's profile from make bench's two callgrind runs of a front
# (BENCH_CALLGRIND=1: $dir/callgrind.out.<front>-<n>, after a warm-up and
# n requests): each function's instructions in the larger run less those
# in the smaller, over the difference in requests.  Start-up, warm-up and
# shutdown cancel, as in the instruction counts (bench/Instructions.pm).
#
#   perl bench/profile-diff.pl [--inclusive] [--top N] DIR FRONT [BASE]
#
# e.g. perl bench/profile-diff.pl /tmp/gms-bench.XXXXXX C A
#
# With BASE, what FRONT's request costs over BASE's, function by function.
# Prints the functions' instructions per request, largest first (self
# cost, or with --inclusive the cost of the calls they made too), from
# callgrind_annotate's tables.
#
# Core Perl only.

use strict;
use warnings;

my $inclusive = 0;
my $top = 30;

while (@ARGV && $ARGV[0] =~ /^--/) {
    my $opt = shift;
    if ($opt eq '--inclusive') {
        $inclusive = 1;
    } elsif ($opt eq '--top') {
        $top = shift // die "--top takes a number\n";
    } else {
        die "unknown option $opt\n";
    }
}

my ($dir, $front, $base) = @ARGV;
defined $front
    or die "usage: $0 [--inclusive] [--top N] DIR FRONT [BASE]\n";

my %per = %{ per_request($front) };
my $total;

if (defined $base) {
    my $b = per_request($base);
    $per{$_} = ($per{$_} // 0) - $b->{$_} for keys %$b;
    $front .= " over $base";
}

$total = 0;
$total += $_ for values %per;

printf "front %s: %s instructions per request, %s\n", $front,
       $inclusive ? '(inclusive)' : sprintf('%.0f', $total),
       $inclusive ? 'with their calls' : 'self';

my $i = 0;
for my $fn (sort { abs($per{$b}) <=> abs($per{$a}) } keys %per) {
    last if ++$i > $top;
    printf "%9.0f  %s\n", $per{$fn}, $fn;
}

# function => instructions per request of a front
sub per_request {
    my ($front) = @_;

    my %runs;
    for my $f (glob "$dir/callgrind.out.$front-*") {
        $runs{$1} = $f if $f =~ /-(\d+)$/;
    }

    my @n = sort { $a <=> $b } keys %runs;
    @n == 2 or die "want two runs of front $front in $dir, found "
                   . scalar(@n) . "\n";

    my ($low, $high) = map { functions($runs{$_}) } @n;
    my $requests = $n[1] - $n[0];
    my %per;

    for my $fn (keys %$high) {
        $per{$fn} = ($high->{$fn} - ($low->{$fn} // 0)) / $requests;
    }

    for my $fn (keys %$low) {
        $per{$fn} //= -$low->{$fn} / $requests;
    }

    return \%per;
}

# function => instructions, from callgrind_annotate's table
sub functions {
    my ($file) = @_;

    my @cmd = ('callgrind_annotate', '--threshold=100', '--auto=no',
               $inclusive ? '--inclusive=yes' : (), $file);
    # its warnings about lines it cannot place are of no use here
    open my $fh, '-|', join(' ', map { quotemeta } @cmd) . ' 2>/dev/null'
        or die "callgrind_annotate: $!\n";

    my %f;
    while (my $line = <$fh>) {
        next unless $line =~ /^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)\s*$/;
        my ($ir, $fn) = ($1, $2);
        next if $fn =~ /PROGRAM TOTALS|^Ir\b/;
        # the object, for functions without a name: [.../libcrypto.so.3]
        $fn =~ s{\s*\[(?:[^\]]*/)?([^\]/]*)\]$}{ [$1]};
        $fn =~ s{ \[[^\]]*\]$}{} if $fn !~ /^\?\?\?:0x/;
        $ir =~ tr/,//d;
        $f{$fn} += $ir;
    }

    close $fh;

    return \%f;
}

#!/usr/bin/perl

# Runs the C unit tests (t/unit/*.c, built by 'make unit'): each prints
# TAP, which this file passes on as subtests.  First, that src/lib, what
# the module, gms-token, the unit tests and the fuzzers share, needs no
# nginx: its files include system headers and each other, nothing else.

use strict;
use warnings;

use Test::More;
use File::Basename qw(basename);
use FindBin;

my $lib = "$FindBin::Bin/../src/lib";

subtest 'src/lib includes no nginx header' => sub {
    my @files = sort glob("$lib/*.[ch]");
    ok(@files, 'src/lib has C files');

    my %own = map { basename($_) => 1 } @files;
    my @bad;

    for my $file (@files) {
        open(my $fh, '<', $file) or die "cannot read $file: $!";
        while (my $line = <$fh>) {
            next unless $line =~ /^\s*#\s*include\s*([<"])([^>"]+)[>"]/;
            my ($quote, $name) = ($1, $2);
            push @bad, basename($file) . ":$.: $name"
                if $name =~ m{(?:^|/)ngx_} || ($quote eq '"' && !$own{$name});
        }
        close($fh);
    }

    is_deeply(\@bad, [], 'every #include names a system header or one of '
              . 'src/lib') or diag(join("\n", @bad));
};

my $dir = $ENV{GMS_UNIT_DIR} || 'build/unit';
my @bins = sort grep { -x } glob("$dir/*");

SKIP: {
    skip "no unit test binaries in $dir (run 'make unit')", 1 unless @bins;

    for my $bin (@bins) {
        subtest basename($bin) => sub {
            open(my $fh, '-|', $bin) or die "cannot run $bin: $!";
            my $planned;
            while (my $line = <$fh>) {
                chomp $line;
                if ($line =~ /^(not )?ok \d+ - (.*)$/) {
                    ok(!$1, $2);
                } elsif ($line =~ /^1\.\.(\d+)$/) {
                    $planned = $1;
                } elsif ($line =~ /^#/) {
                    diag($line);
                }
            }
            close($fh);
            is($? >> 8, 0, "$bin exited cleanly");
            ok($planned, "$bin printed its plan");
        };
    }
}

done_testing();

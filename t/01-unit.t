#!/usr/bin/perl

# Runs the C unit tests (t/unit/*.c, built by 'make unit'): each prints
# TAP, which this file passes on as subtests.

use strict;
use warnings;

use Test::More;
use File::Basename qw(basename);

my $dir = $ENV{GMS_UNIT_DIR} || 'build/unit';
my @bins = sort grep { -x } glob("$dir/*");

plan skip_all => "no unit test binaries in $dir (run 'make unit')"
    unless @bins;

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

done_testing();

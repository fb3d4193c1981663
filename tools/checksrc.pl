#!/usr/bin/perl
#
# tools/checksrc.pl: the house's conventions, checked (in the spirit of
# curl's scripts/checksrc.pl).  t/76-conventions.t runs it; so can you:
#
#   perl tools/checksrc.pl [--check NAME] [TOP]
#
# Checks (each prints one line per finding, "NAME: file: what"):
#
#   calls    calls go down CONTRIBUTING.md's Layout: within each group
#            (src/, src/lib/, src/tool/), a file uses only the functions
#            of the files listed after it; src/lib is below the module and
#            the tool.  The Layout's order is the allow-list: a call that
#            goes up is either moved down or the Layout reordered, with a
#            reason, never allowed here.
#   prefix   every function a .c exports starts with its file's name
#            (ngx_http_gms_cache.c: ngx_http_gms_cache_...), or with the
#            one short name %ALIAS gives the file; main() excepted.
#   headers  each .c has its own .h, which declares every function the .c
#            exports, and no function another file defines.
#   issues   no "issue N" in the code (src/, fuzz/, t/unit/, Makefile,
#            config): the tracker is not where a reader of the code looks;
#            say why in the comment itself.
#
# Exit status: 0 when nothing was found, 1 otherwise.

use strict;
use warnings;

use File::Basename qw(basename dirname);
use Getopt::Long qw(GetOptions);

my @CHECKS = qw(calls prefix headers issues);

# a file whose exported names take a shorter prefix than its own name
my %ALIAS = (
    'src/ngx_http_gms_redis_conn.c' => 'ngx_http_gms_rconn',
);

my $only;
GetOptions('check=s' => \$only) or die "usage: $0 [--check NAME] [TOP]\n";
die "checksrc: no check '$only' (@CHECKS)\n"
    if defined $only && !grep { $_ eq $only } @CHECKS;

my $top = shift // dirname(dirname(__FILE__));
chdir $top or die "checksrc: $top: $!\n";

my @found;
my %layout = layout();
my %exports = map { $_ => [ exported($_) ] } map { @$_ } values %layout;

for my $check (@CHECKS) {
    next if defined $only && $only ne $check;
    no strict 'refs';
    &{"check_$check"}();
}

print "$_\n" for @found;
exit(@found ? 1 : 0);


# CONTRIBUTING.md's Layout: each group's .c files, in order
sub layout {
    my ($block) = slurp('CONTRIBUTING.md') =~ /^## Layout\n(.*?)^## /ms;
    die "checksrc: CONTRIBUTING.md has no Layout\n" unless defined $block;

    my (%groups, $dir);
    for my $line (split /\n/, $block) {
        if ($line =~ /^ {4}(\S+)/) {
            my $word = $1;
            $dir = $word =~ m{^src/(?:lib/|tool/)?$} ? $word : undef;
        } elsif (defined $dir && $line =~ /^ {6}(\S+\.c)\s/) {
            push @{ $groups{$dir} }, "$dir$1";
        }
    }
    return %groups;
}

# the functions a .c defines without static, in nginx's style: the type
# on one line, the name at the start of the next
sub exported {
    my ($file) = @_;
    my @lines = split /\n/, slurp($file);
    my @names;

    for my $i (1 .. $#lines) {
        next unless $lines[$i] =~ /^([A-Za-z_]\w*)\(/;
        my $j = $i - 1;
        $j-- while $j > 0 && $lines[$j] =~ /^\s*$/;
        next if $lines[$j] =~ /^(?:static\b|#|\s|\/|\*)/;
        push @names, $1;
    }
    return @names;
}

sub check_calls {
    my %below;     # file -> its group's files listed after it
    my %owner;     # function -> file

    for my $dir (keys %layout) {
        my @files = @{ $layout{$dir} };
        for my $i (0 .. $#files) {
            $below{ $files[$i] } = { map { $_ => 1 } @files[$i + 1 .. $#files] };
            $owner{$_} = $files[$i] for @{ $exports{ $files[$i] } };
        }
    }

    for my $file (sort keys %below) {
        my $code = code($file);
        my %seen;
        while ($code =~ /\b([A-Za-z_]\w*)\b/g) {
            my $callee = $owner{$1} // next;
            next if $callee eq $file || $seen{$1}++;
            next if dirname($callee) ne dirname($file);    # down a group
            next if $below{$file}{$callee};
            push @found, "calls: $file: uses $1 of $callee, listed above it";
        }
    }
}

sub check_prefix {
    for my $file (sort keys %exports) {
        my $base = $ALIAS{$file} // basename($file, '.c');
        for my $name (@{ $exports{$file} }) {
            next if $name eq 'main' || $name eq $base
                    || index($name, "${base}_") == 0;
            push @found, "prefix: $file: $name does not start with ${base}_";
        }
    }
}

sub check_headers {
    my %declared;  # function -> header declaring it

    for my $file (sort keys %exports) {
        next if "@{ $exports{$file} }" eq "main";   # nothing calls it
        (my $h = $file) =~ s/\.c$/.h/;
        if (!-e $h) {
            push @found, "headers: $file: no $h";
            next;
        }
        my $text = code($h);
        $declared{$_} = $h for $text =~ /\b([A-Za-z_]\w*)\s*\(\s*(?:void|[A-Za-z_][\w\s\*]*[\s\*]\w+\s*[,)])/g;
        for my $name (@{ $exports{$file} }) {
            next if $name eq 'main';
            push @found, "headers: $h: does not declare $name"
                unless $text =~ /\b\Q$name\E\s*\(/;
        }
    }

    my %defined_in;
    for my $file (keys %exports) {
        $defined_in{$_} = $file for @{ $exports{$file} };
    }
    for my $file (sort keys %exports) {
        (my $h = $file) =~ s/\.c$/.h/;
        next unless -e $h;
        my $text = code($h);
        # a prototype: a name and '(' after a type, ending in ');'
        while ($text =~ /^[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)\(\s*[^;{]*?\)\s*;/mg) {
            my $where = $defined_in{$1} // next;
            push @found, "headers: $h: declares $1, which $where defines"
                if $where ne $file;
        }
    }
}

sub check_issues {
    my @files = (glob('src/*.[ch]'), glob('src/lib/*.[ch]'),
                 glob('src/tool/*.[ch]'), glob('fuzz/*.c'),
                 glob('t/unit/*.[ch]'), 'Makefile', 'config');
    for my $file (@files) {
        my $n = 0;
        for my $line (split /\n/, slurp($file)) {
            $n++;
            push @found, "issues: $file:$n: names an issue ($1)"
                if $line =~ /\b(issues? \d+)/i;
        }
    }
}

# a C file without its comments and string literals (kept as "")
sub code {
    my ($file) = @_;
    my $text = slurp($file);
    $text =~ s{/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'}
              {substr($&, 0, 1) eq '"' ? '""' : ' '}gse;
    return $text;
}

sub slurp {
    my ($file) = @_;
    open my $fh, '<', $file or die "checksrc: $file: $!\n";
    local $/;
    return scalar <$fh>;
}

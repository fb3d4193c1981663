#!/usr/bin/perl

# t/README.md, the index from each directive and each gms-token command to
# its tests, against the tree: every directive of the module's
# ngx_command_t tables (every src/*.c: a module of the .so may have its
# own) and every command of gms-token's table (src/tool/gms_tool_main.c,
# each command's name in its gms_tool_command_t) has its row; no row
# names one that is gone; a row's files exist, and one of them, or a
# GmsTest module it uses, mentions the name.  And each t/unit/*.c is
# named after the file it tests, each src/lib/*.c tested by one.

use strict;
use warnings;

use File::Basename qw(basename dirname);
use FindBin;
use Test::More;

use GmsTest ();

my $ROOT = dirname($FindBin::Bin);

sub slurp {
    my ($path) = @_;
    -r $path or die "$path: cannot be read\n";
    return GmsTest::slurp($path);
}

# The rows of the table under "## $section": { name => [files] }.
sub rows {
    my ($text, $section) = @_;

    my ($body) = $text =~ /^## \Q$section\E\n(.*?)(?=^## |\z)/ms
        or die "t/README.md: no section '$section'\n";

    my %rows;
    for my $line (split /\n/, $body) {
        my ($name, $files) = $line =~ /^\| `([^`]+)` \| (.*) \|$/
            or next;
        $rows{$name} = [ $files =~ /`(t\/[^`]+\.t)`/g ];
    }
    return \%rows;
}

# The directives of every ngx_command_t table in src/*.c.
sub directives {
    my %names;
    for my $file (glob "$ROOT/src/*.c") {
        my $text = slurp($file);
        while ($text =~ /\bngx_command_t\s+\w+\[\]\s*=\s*\{(.*?)
                         ngx_null_command/gsx)
        {
            my $table = $1;
            $names{$1} = 1 while $table =~ /\{\s*ngx_string\("(\w+)"\)/g;
        }
    }
    return sort keys %names;
}

# gms-token's commands: the table of gms_tool_main.c, each entry's name
# the first member of the gms_tool_command_t it points to.
sub commands {
    my $main = slurp("$ROOT/src/tool/gms_tool_main.c");
    my ($table) = $main =~ /gms_tool_command_t\s+\*\w+\[\]\s*=\s*\{(.*?)\};/s
        or die "gms_tool_main.c: no command table\n";
    my @vars = $table =~ /&(\w+)/g;

    my $all = join '', map { slurp($_) } glob "$ROOT/src/tool/*.c";
    return map {
        $all =~ /gms_tool_command_t\s+\Q$_\E\s*=\s*\{\s*"([^"]+)"/
            ? $1 : die "no gms_tool_command_t $_\n"
    } @vars;
}

# The text of a test file and of the GmsTest modules it uses.
my %seen_text;
sub test_text {
    my ($file) = @_;
    return $seen_text{$file} //= do {
        my $text = slurp("$ROOT/$file");
        my @mods = ('GmsTest', $text =~ /^use (GmsTest(?:::\w+)*)/mg);
        join "\n", $text, map {
            (my $p = $_) =~ s{::}{/}g;
            -f "$ROOT/t/lib/$p.pm" ? slurp("$ROOT/t/lib/$p.pm") : ''
        } @mods;
    };
}

my $index = slurp("$ROOT/t/README.md");

for my $kind (['Directives', [directives()]],
              ["gms-token's commands", [commands()]])
{
    my ($section, $names) = @$kind;
    my $rows = rows($index, $section);

    subtest $section => sub {
        ok(@$names > 5, scalar(@$names) . ' in the source');

        my @missing = grep { !$rows->{$_} } @$names;
        is_deeply(\@missing, [], 'each has its row')
            or diag "add to t/README.md's $section: @missing";

        my %real = map { $_ => 1 } @$names;
        my @gone = grep { !$real{$_} } sort keys %$rows;
        is_deeply(\@gone, [], 'no row for one that is gone');

        my @bad;
        for my $name (sort keys %$rows) {
            my @files = @{ $rows->{$name} };
            push @bad, "$name: no test file" unless @files;
            push @bad, map { "$name: no $_" } grep { !-f "$ROOT/$_" } @files;
            my $re = $section eq 'Directives' ? qr/\b\Q$name\E\b/
                                              : qr/['"]\Q$name\E['"]/;
            push @bad, "$name: none of @files mentions it"
                if @files && !grep { -f "$ROOT/$_" && test_text($_) =~ $re }
                                   @files;
        }
        is_deeply(\@bad, [], 'each row names files that test it')
            or diag join "\n", @bad;
    };
}

subtest 'features' => sub {
    my ($body) = $index =~ /^## Features\n(.*?)(?=^## )/ms;
    my @files = $body =~ /`(t\/[^`]+\.t)`/g;
    my @absent = grep { !-f "$ROOT/$_" } @files;
    is_deeply(\@absent, [], 'the files named exist');

    my %named = map { $_ => 1 } @files;
    my @unnamed = grep { !$named{$_} }
                  map { 't/' . basename($_) } glob "$ROOT/t/*.t";
    is_deeply(\@unnamed, [], 'every test file has its feature')
        or diag "add to t/README.md's Features: @unnamed";
};

subtest 'C unit tests named after their source' => sub {
    my %source = map { basename($_, '.c') => 1 }
                 glob("$ROOT/src/lib/*.c"), glob("$ROOT/src/tool/*.c");
    my @units = map { basename($_, '.c') } glob "$ROOT/t/unit/*.c";
    ok(@units, 't/unit has tests');

    my @stray = grep {
        my $u = $_;
        !grep { $u eq $_ || index($u, "${_}_") == 0 } keys %source
    } @units;
    is_deeply(\@stray, [], 'each t/unit/*.c is named after a source file')
        or diag "rename: @stray";

    # a comment names a file it tests beside the one it is named after
    my $comments = join "\n", map { slurp($_) =~ m{/\*(.*?)\*/}s }
                                  glob "$ROOT/t/unit/*.c";
    my %unit = map { $_ => 1 } @units;
    my @untested = grep { !$unit{$_} && $comments !~ /\b\Q$_\E\.c\b/ }
                   map { basename($_, '.c') } glob "$ROOT/src/lib/*.c";
    is_deeply(\@untested, [], 'each src/lib/*.c has a unit test')
        or diag "no unit test for: @untested";
};

done_testing();

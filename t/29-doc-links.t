#!/usr/bin/perl

# Every relative link in the docs resolves: README.md, CONTRIBUTING.md,
# docs/*.md, bench/README.md and bench/results/*.md.  A link names a file
# or directory that exists, and its #fragment, if any, is a heading of
# that file under GitHub's anchor rules (lowercased; spaces to '-';
# punctuation but '-' and '_' dropped; a repeated heading gets -1, -2 ...).
# Links inside code (fenced blocks, `spans`) are not links.  The README
# links every doc.  No nginx needed.

use strict;
use warnings;
use utf8;

use Test::More;
use File::Basename qw(dirname);
use File::Spec;
use File::Temp qw(tempdir);
use Cwd qw(abs_path);

my $repo = abs_path(dirname(__FILE__) . '/..');

sub slurp {
    my ($path) = @_;
    open my $fh, '<:encoding(UTF-8)', $path or die "$path: $!\n";
    local $/;
    return scalar <$fh>;
}

# The text outside fenced code blocks, line for line (a fenced line is
# kept empty, so line numbers still match).
sub unfenced_lines {
    my ($text) = @_;
    my @out;
    my $fence;
    for my $line (split /\n/, $text, -1) {
        if (defined $fence) {
            $fence = undef if $line =~ /^ {0,3}\Q$fence\E[`~]*\s*$/;
            push @out, '';
        } elsif ($line =~ /^ {0,3}(`{3,}|~{3,})/) {
            $fence = $1;
            push @out, '';
        } else {
            push @out, $line;
        }
    }
    return @out;
}

# GitHub's anchor for a heading's text.
sub slug {
    my ($text) = @_;
    $text =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;      # a link: its text
    # inline HTML goes, but not what a code span shows (`<prefix>`)
    $text = join '', map { /^`/ ? $_ : s/<[^>]+>//gr }
                     split /(`+.*?`+)/, $text;
    $text = lc $text;
    $text =~ s/[^\w\- ]//g;
    $text =~ tr/ /-/;
    return $text;
}

my %anchors_of;

sub anchors {
    my ($path) = @_;
    return $anchors_of{$path} if $anchors_of{$path};
    my @lines = unfenced_lines(slurp($path));
    my (%seen, %anchors);
    for my $i (0 .. $#lines) {
        my $line = $lines[$i];
        my $heading;
        if ($line =~ /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/) {
            $heading = $1;
        } elsif ($i < $#lines && $line =~ /\S/ && $line !~ /^\s*[|>-]/
                 && $line !~ /^ {4}/
                 && $lines[$i + 1] =~ /^ {0,3}(?:=+|-+)\s*$/
                 && ($i == 0 || $lines[$i - 1] !~ /\S/)) {
            $heading = $line;                   # setext
        }
        $anchors{$1} = 1 while $line =~ /<a\s+(?:name|id)="([^"]+)"/g;
        next unless defined $heading;
        my $slug = slug($heading);
        my $n = $seen{$slug}++;
        $anchors{$n ? "$slug-$n" : $slug} = 1;
    }
    return $anchors_of{$path} = \%anchors;
}

# [text](target), ![alt](target) and [label]: target, outside code.
sub links {
    my ($path) = @_;
    my @lines = unfenced_lines(slurp($path));
    my @links;
    for my $i (0 .. $#lines) {
        push @links, [ $1, $i + 1 ]
            if $lines[$i] =~ /^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)/;
    }
    my $text = join "\n", @lines;
    # code spans are not links (a span may hold "](")
    $text =~ s/(`+)(.+?)\1/' ' x length($2) . '  '/gse;
    while ($text =~ /\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"]*")?\s*\)/g) {
        my $target = $1;
        my $line = 1 + (substr($text, 0, $-[0]) =~ tr/\n//);
        push @links, [ $target, $line ];
    }
    return @links;
}

# What is wrong with one link of $from, or undef.
sub problem {
    my ($from, $target) = @_;
    return undef if $target =~ m{^[a-z][a-z0-9+.-]*:}i;   # http:, mailto: ...
    return undef if $target =~ m{^//};
    my ($file, $fragment) = $target =~ /^([^#]*)(?:#(.*))?$/;
    $file =~ s/%([0-9A-Fa-f]{2})/chr hex $1/ge;
    my $path = $file eq ''
        ? $from
        : File::Spec->catfile(dirname($from), $file);
    return "no such file $file" unless -e $path;
    return undef unless defined $fragment;
    return "#$fragment: $file is not a markdown file"
        unless -f $path && $path =~ /\.md$/;
    return "no heading for #$fragment in " . ($file eq '' ? 'this file' : $file)
        unless anchors($path)->{$fragment};
    return undef;
}

sub check_file {
    my ($path) = @_;
    my @problems;
    for my $link (links($path)) {
        my ($target, $line) = @$link;
        my $why = problem($path, $target);
        push @problems, "line $line: ($target): $why" if defined $why;
    }
    return @problems;
}

# --- the checker itself, on files of its own ---------------------------------

{
    is(slug("gms-token's connection"), 'gms-tokens-connection', 'slug: quote');
    is(slug('gms_token_redis_ssl_trusted_certificate, _verify, _name'),
       'gms_token_redis_ssl_trusted_certificate-_verify-_name',
       'slug: underscores and commas');
    is(slug('`<prefix>invalidate`: a <em>channel</em>'),
       'prefixinvalidate-a-channel', 'slug: code, HTML and punctuation');
    is(slug('Revocation latency: push invalidation'),
       'revocation-latency-push-invalidation', 'slug: colon');

    my $dir = tempdir(CLEANUP => 1);
    mkdir "$dir/sub" or die "$dir/sub: $!\n";
    open my $fh, '>:encoding(UTF-8)', "$dir/sub/other.md" or die $!;
    print $fh "# Other\n\n## Twice\n\n## Twice\n\nSetext\n------\n\n"
            . "```\n## Not a heading\n```\n";
    close $fh;
    open $fh, '>:encoding(UTF-8)', "$dir/a.md" or die $!;
    print $fh <<'MD';
# A

## Here: and `there`

[ok](sub/other.md) [ok](sub/other.md#twice) [ok](sub/other.md#twice-1)
[ok](#here-and-there) [ok](sub/) [ok](https://example.com/x#y)
[ok, over
two lines](sub/other.md#setext) [`code` ok](#a)
`[in code](nowhere.md)`

```
[in a fence](nowhere.md)
```

[bad file](missing.md)
[bad anchor](sub/other.md#twice-2)
[bad anchor, two
lines](#nowhere)
[fenced heading](sub/other.md#not-a-heading)
[bad anchor here](#here-there)

[ref]: sub/gone.md
MD
    close $fh;

    my @problems = check_file("$dir/a.md");
    is_deeply([ map { /^line (\d+): \(([^)]*)\)/ ? "$1 $2" : $_ } @problems ],
              [ '22 sub/gone.md', '15 missing.md', '16 sub/other.md#twice-2',
                '17 #nowhere', '19 sub/other.md#not-a-heading',
                '20 #here-there' ],
              'the checker finds exactly the broken links')
        or diag(join "\n", @problems);
}

# --- the docs ----------------------------------------------------------------------

my @docs = ('README.md', 'CONTRIBUTING.md',
            (map { s{^\Q$repo\E/}{}r } glob("$repo/docs/*.md")),
            'bench/README.md',
            (map { s{^\Q$repo\E/}{}r } glob("$repo/bench/results/*.md")));

for my $doc (@docs) {
    my $path = "$repo/$doc";
    ok(-f $path, "$doc exists") or next;
    my @links = links($path);
    my @problems = check_file($path);
    is_deeply(\@problems, [], "$doc: its " . scalar(@links)
                              . ' relative links resolve')
        or diag(join "\n", map { "$doc $_" } @problems);
}

{
    my %linked = map { my $t = $_->[0]; $t =~ s/#.*//; ($t => 1) }
                 links("$repo/README.md");
    for my $doc (grep { $_ ne 'README.md' } @docs) {
        ok($linked{$doc}, "README.md links $doc");
    }
    my $lines = () = slurp("$repo/README.md") =~ /\n/g;
    cmp_ok($lines, '<', 400, 'README.md is under 400 lines');
}

# --- CONTRIBUTING.md's Layout and the tree ----------------------------------------

# Each path in the Layout's listing exists, and each source file of the
# module, src/lib and the tool is in it.  A line at the block's first
# indent names a path from the top (a directory ends in '/', and the
# lines indented under it name its files); the first word is the path.
{
    my $text = slurp("$repo/CONTRIBUTING.md");
    my ($block) = $text =~ /^## Layout\n(.*?)^## /ms;
    ok(defined $block, 'CONTRIBUTING.md has a Layout section');
    $block //= '';

    my (%listed, @missing, $dir);
    for my $line (split /\n/, $block) {
        if ($line =~ /^ {4}(\S+)/) {
            my $word = $1;
            $dir = $word =~ m{/$} ? $word : undef;
            for my $p (split /,\s*/, $line =~ s/^\s+//r =~ s/\s{2,}.*//r) {
                $listed{$p} = 1;
                push @missing, $p unless -e "$repo/$p";
            }
        } elsif ($line =~ /^ {6}(\S+\.[ch])\s/ && defined $dir) {
            my $p = "$dir$1";
            $listed{$p} = 1;
            push @missing, $p unless -e "$repo/$p";
        }
    }
    is_deeply(\@missing, [], 'every path the Layout lists exists')
        or diag("not in the tree: @missing");

    my @sources = map { s{^\Q$repo\E/}{}r }
                  (glob("$repo/src/*.c"), glob("$repo/src/lib/*.c"),
                   glob("$repo/src/tool/*.c"));
    # a header without a .c of its own is listed as itself
    for my $h (glob("$repo/src/lib/*.h")) {
        (my $c = $h) =~ s/\.h$/.c/;
        push @sources, $h =~ s{^\Q$repo\E/}{}r unless -e $c;
    }
    my @unlisted = grep { !$listed{$_} } sort @sources;
    ok(@sources > 40, scalar(@sources) . ' source files found');
    is_deeply(\@unlisted, [], 'the Layout lists every source file')
        or diag("not in CONTRIBUTING.md's Layout: @unlisted");
}

done_testing();

#!/usr/bin/perl

# The house's conventions, as tools/checksrc.pl checks them: calls go down
# CONTRIBUTING.md's Layout (its order is the allow-list), each exported
# function starts with its file's name, each .c's header declares exactly
# its functions, and the code names no issue of the tracker.  Each check
# is a test of its own, its findings shown.  A broken rule is also shown
# to be caught: the checker runs on a copy of the tree with a call up the
# Layout, a misnamed function and an issue number added.  No nginx needed.

use strict;
use warnings;

use Test::More;
use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use Cwd qw(abs_path);

my $repo = abs_path(dirname(__FILE__) . '/..');
my $checksrc = "$repo/tools/checksrc.pl";

sub run_check {
    my ($top, $check) = @_;
    my @out = `$^X $checksrc --check $check $top 2>&1`;
    chomp @out;
    return ($? >> 8, @out);
}

for my $check (qw(calls prefix headers issues)) {
    my ($rc, @out) = run_check($repo, $check);
    is($rc, 0, "$check: nothing found") or diag(join("\n", @out));
}

# the checker catches each rule broken (a copy of what it reads)
{
    my $dir = tempdir(CLEANUP => 1);
    for my $d (qw(src src/lib src/tool fuzz t/unit)) {
        make_path("$dir/$d");
        copy($_, "$dir/$d/") or die "$_: $!\n"
            for glob("$repo/$d/*.[ch]");
    }
    copy("$repo/$_", "$dir/$_") or die "$_: $!\n"
        for qw(CONTRIBUTING.md Makefile config);

    # a file low in the module's Layout calls the access handler
    my $bottom = 'src/ngx_http_gms_cache.c';
    open my $fh, '>>', "$dir/$bottom" or die;
    print $fh "\nvoid\nngx_http_gms_cache_up(void)\n{\n"
              . "    (void) ngx_http_gms_auth_access_handler;\n}\n";
    print $fh "\nvoid\nngx_http_gms_misnamed(void)\n{\n}\n";
    print $fh "/* see issue 12 */\n";
    close $fh;

    my ($rc, @out) = run_check($dir, 'calls');
    ok($rc && grep(/uses ngx_http_gms_auth_access_handler/, @out),
       'a call up the Layout is caught') or diag(join("\n", @out));
    ($rc, @out) = run_check($dir, 'prefix');
    ok($rc && grep(/ngx_http_gms_misnamed/, @out),
       'a function named after another file is caught')
        or diag(join("\n", @out));
    ($rc, @out) = run_check($dir, 'headers');
    ok($rc && grep(/does not declare ngx_http_gms_cache_up/, @out),
       'a function its header does not declare is caught')
        or diag(join("\n", @out));
    ($rc, @out) = run_check($dir, 'issues');
    ok($rc && grep(/cache\.c:\d+: names an issue/, @out),
       'an issue number in the code is caught') or diag(join("\n", @out));
}

done_testing();

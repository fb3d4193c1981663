#!/usr/bin/perl

# config, the addon file, read by nginx's own configure for a static build
# (--add-module) and a dynamic one (--add-dynamic-module): both get the two
# modules, each of which installs a filter.  Their postconfiguration must
# come after the write and header filters': those start the chains
# afresh, and a filter installed before them is lost (a static build then
# answered every getEsTaskStatus task with the failure value, and never
# remembered GMS's 401 to a signed token Redis did not have).  Both are
# HTTP_AUX_FILTERs: ngx_http_gms_module also after limit_req and
# limit_conn (gms_token_phase preaccess runs before their handlers), and
# where a dynamic build loads it, last; ngx_http_gms_es_task_module before
# the copy filter.  Configured, not built: the tree is nginx-dev's
# (NGINX_SRC, as the Makefile's), nginx's configure and headers.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use Test::More;
use GmsTest;

my $repo = abs_path(dirname(__FILE__) . '/..');
my $src = $ENV{NGINX_SRC} // '/usr/share/nginx/src';

GmsTest::skip_all("no nginx tree to configure: $src/configure")
    unless -x "$src/configure";

# $src configured in a copy with @args: its objs/ directory
sub configured {
    my (@args) = @_;

    my $dir = GmsTest::tempdir();
    my $log = "$dir/configure.log";

    is(GmsTest::run(['cp', '-a', "$src/.", "$dir/nginx"], $log), 0,
       "nginx's tree copied");

    my $rc = GmsTest::run(['sh', '-c', 'cd "$0" && ./configure "$@"',
                           "$dir/nginx", @args], $log);
    is($rc, 0, "configure @args")
        or diag(GmsTest::slurp($log));

    return "$dir/nginx/objs";
}

# the C strings of the array $array in $file, in order
sub strings {
    my ($file, $array) = @_;
    my ($body) = GmsTest::slurp($file)
                 =~ /\b\Q$array\E\[\] = \{\n(.*?)\n\};/s;
    return [ ($body // '') =~ /"([^"]+)"/g ];
}

sub index_of {
    my ($name, $list) = @_;
    my ($i) = grep { $list->[$_] eq $name } 0 .. $#$list;
    return $i // -1;
}


# --- static: the modules in nginx's own list ---------------------------------

{
    my $objs = configured("--add-module=$repo");
    my $names = strings("$objs/ngx_modules.c", 'ngx_module_names');

    my %at = map { $_ => index_of($_, $names) }
             qw(ngx_http_limit_req_module ngx_http_limit_conn_module
                ngx_http_write_filter_module ngx_http_header_filter_module
                ngx_http_headers_filter_module ngx_http_copy_filter_module
                ngx_http_gms_module ngx_http_gms_es_task_module);

    ok($at{ngx_http_gms_module} > $at{ngx_http_limit_req_module}
       && $at{ngx_http_gms_module} > $at{ngx_http_limit_conn_module},
       'static: the token check after limit_req and limit_conn');

    for my $m (qw(ngx_http_gms_module ngx_http_gms_es_task_module)) {
        ok($at{$m} > $at{ngx_http_write_filter_module}
           && $at{$m} > $at{ngx_http_header_filter_module}
           && $at{$m} > $at{ngx_http_headers_filter_module},
           "static: $m after the write and header filters")
            or diag("@$names");
    }

    ok($at{ngx_http_gms_module} < $at{ngx_http_gms_es_task_module},
       'static: the token check first');

    ok($at{ngx_http_gms_es_task_module} >= 0
       && $at{ngx_http_gms_es_task_module}
          < $at{ngx_http_copy_filter_module},
       'static: getEsTaskStatus before the copy filter');
}


# --- dynamic: one .so, both modules, the filter's place named ----------------

{
    my $objs = configured("--add-dynamic-module=$repo");
    my $file = "$objs/ngx_http_gms_module_modules.c";
    my $modules = strings($file, 'ngx_module_names');

    is_deeply($modules, [qw(ngx_http_gms_module ngx_http_gms_es_task_module)],
              'dynamic: one .so with both modules, the token check first');

    my $order = strings($file, 'ngx_module_order');

    is_deeply($order, [qw(ngx_http_gms_es_task_module
                          ngx_http_copy_filter_module)],
              'dynamic: getEsTaskStatus placed before the copy filter, '
              . 'the token check after every module loaded before it');
}

done_testing();

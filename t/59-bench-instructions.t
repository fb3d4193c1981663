#!/usr/bin/perl

# make bench's instruction counter (bench/Instructions.pm), on a real nginx
# (without the module: test-asan's is built for ASan, which valgrind
# cannot run): it counts (cachegrind's "I refs" of a foreground nginx),
# the count grows with the requests sent, and what one more request costs
# comes out of two runs.  No timing: how fast anything is stays make
# bench's.

use strict;
use warnings;

use Test::More;
use Cwd qw(abs_path);
use File::Basename qw(dirname);

use GmsTest;

my $repo = abs_path(dirname(__FILE__) . '/..');
require "$repo/bench/Instructions.pm";

GmsTest::in_path('valgrind')
    or BAIL_OUT('valgrind is missing: sh tools/install-deps.sh installs it');

my $dir = GmsTest::tempdir();
my $port = GmsTest::free_port();
my $user = $> == 0 ? 'user root;' : '';

GmsTest::write_file("$dir/nginx.conf", <<"CONF");
$user
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { }
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    server {
        listen 127.0.0.1:$port;
        location / { return 200 "ok\\n"; }
        location = /missing { return 404; }
    }
}
CONF

my @requests = map { "GET /r$_ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" } 1 .. 4;

my $r = Instructions::per_request(
    cmd => [ GmsTest::nginx_bin(), '-p', "$dir/", '-c', "$dir/nginx.conf" ],
    port => $port, requests => \@requests, warm => 4, counts => [10, 110],
    dir => $dir, name => 'count');

cmp_ok($r->{low}, '>', 1_000_000,
       "cachegrind counted nginx's instructions: $r->{low} for 10 requests");
cmp_ok($r->{high}, '>', $r->{low},
       "more for 110 requests: $r->{high}");
cmp_ok($r->{per_request}, '>', 1_000,
       "one more request: $r->{per_request} instructions");
cmp_ok($r->{per_request}, '<', 1_000_000, '... not a whole start-up\'s');

# an answer that is not 2xx stops the count: a front that refuses is not
# measured
eval {
    Instructions::per_request(
        cmd => [ GmsTest::nginx_bin(), '-p', "$dir/", '-c', "$dir/nginx.conf" ],
        port => $port,
        requests => [ "GET /missing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" ],
        warm => 0, counts => [1, 2], dir => $dir, name => 'refused');
};
like($@, qr/^instructions: refused: request 0 answered 404/,
     'a 404 stops it, saying so');

done_testing();

#!/usr/bin/perl

# Secret files at work (docs/directives.md, Secret files): a Redis that
# requires a password and Sentinels that require their own, the edge given
# both as files (password_file=, sentinel_password_file=), written as a
# Kubernetes Secret or an editor leaves them (a CRLF, a LF at the end).
# A token is answered from Redis through the master the Sentinels name;
# a wrong Sentinel password file makes the lookups fail closed (503).

use strict;
use warnings;

use Test::More;
use GmsTest;
use GmsTest::Nginx;
use GmsTest::Redis;
use GmsTest::Sentinel;
use GmsTest::HTTP;
use Time::HiRes qw(sleep);

GmsTest::need_redis();

my $m = GmsTest::Redis->start(password => 'master-pw');
my $s = GmsTest::Sentinel->start(master => $m, name => 'gms',
                                 sentinel_password => 'sentinel-pw');

my $dir = GmsTest::scratch_dir();
GmsTest::write_file("$dir/redis-password", "master-pw\r\n");
GmsTest::write_file("$dir/sentinel-password", "sentinel-pw\n");
GmsTest::write_file("$dir/wrong-sentinel-password", "not-it\n");

my $id = GmsTest::sha256_b64('secret-file-token');
$m->cmd(HSET => "gms:token:$id", actor => 'urn:li:corpuser:alice');

sub edge {
    my ($sentinel_file) = @_;
    my $n = GmsTest::Nginx->new(log_level => 'info');
    GmsTest::write_file($n->dir . '/ok', "ok\n");
    my $addresses = join ' ', $s->addresses;
    $n->start(<<"CONF");
    gms_token_redis_sentinel $addresses master=gms
        password_file=$dir/redis-password
        sentinel_password_file=$sentinel_file;
    gms_token_redis_timeout 500ms;
    gms_token_key_prefix gms:;
    gms_token_salt "";

    server {
        listen 127.0.0.1:%%PORT%%;
        gms_token_auth on;
        location / { root %%TESTDIR%%; }
    }
CONF
    return $n;
}

sub status {
    my ($n) = @_;
    my $res = GmsTest::HTTP::request($n->port, GET => '/ok',
        { Authorization => 'Bearer secret-file-token' });
    return $res->{status} // 0;
}

{
    my $n = edge("$dir/sentinel-password");
    ok(GmsTest::wait_until(sub { status($n) == 200 }, 10),
       'both passwords from files: the token answered through the '
       . 'Sentinels\' master');
    my $log = $n->error_log;
    unlike($log, qr/master-pw|sentinel-pw/, 'no password in the error log');
    $n->stop;
}

{
    my $n = edge("$dir/wrong-sentinel-password");
    my @st = map { sleep 0.2; status($n) } 1 .. 5;
    is_deeply([ grep { $_ != 503 } @st ], [],
              'a wrong Sentinel password file: 503, never 200 or 401');
    $n->stop;
}

# What the one parser of the Redis directives refuses, each with its
# message (ngx_http_gms_redis_conf.c's table of parameters)
{
    my @bad = (
        [ "gms_token_redis 127.0.0.1:6379 password=x password_file=$dir/redis-password;",
          qr/"password=" and "password_file=" are exclusive/ ],
        [ "gms_token_redis_sentinel 127.0.0.1:1 master=m sentinel_password=x "
          . "sentinel_password_file=$dir/sentinel-password;",
          qr/"sentinel_password=" and "sentinel_password_file=" are exclusive/ ],
        [ "gms_token_redis_sentinel 127.0.0.1:1 master=m sentinel_password_file=;",
          qr/invalid "sentinel_password_file="/ ],
        [ "gms_token_redis_cluster 127.0.0.1:1 "
          . "sentinel_password_file=$dir/sentinel-password;",
          qr/invalid parameter "sentinel_password_file=/ ],
        [ 'gms_token_redis 127.0.0.1:6379 master=m;',
          qr/invalid parameter "master=m"/ ],
        [ 'gms_token_redis 127.0.0.1:6379 replica=prefer;',
          qr/invalid parameter "replica=prefer"/ ],
        [ 'gms_token_redis 127.0.0.1:6379 127.0.0.1:6380;',
          qr/invalid parameter "127\.0\.0\.1:6380"/ ],
        [ 'gms_token_redis_cluster 127.0.0.1:1 db=1;',
          qr/"db=1": a Redis Cluster has only db 0/ ],
        [ 'gms_token_redis_cluster unix:/tmp/r.sock;',
          qr/invalid cluster node "unix:\/tmp\/r\.sock"/ ],
        [ 'gms_token_redis_sentinel 127.0.0.1:1 master=m replica=maybe;',
          qr/invalid parameter "replica=maybe"/ ],
        [ 'gms_token_redis_sentinel 127.0.0.1:1;',
          qr/needs "master=NAME"/ ],
        [ 'gms_token_redis_sentinel master=m;',
          qr/needs at least one Sentinel address/ ],
        [ 'gms_token_redis_cluster user=u;',
          qr/needs at least one node's address/ ],
        [ 'gms_token_redis 127.0.0.1:6379 user=;',
          qr/invalid parameter "user="/ ],
        [ 'gms_token_redis 127.0.0.1:1; gms_token_redis_cluster 127.0.0.1:2;',
          qr/"gms_token_redis_cluster" directive cannot be used with "gms_token_redis"/ ],
        [ 'gms_token_redis_sentinel 127.0.0.1:1 master=m; gms_token_redis_sentinel 127.0.0.1:2 master=m;',
          qr/"gms_token_redis_sentinel" directive is duplicate/ ],
    );
    for my $case (@bad) {
        my ($directive, $error) = @$case;
        my ($rc, $out) = GmsTest::nginx_t(
            "load_module %%MODULE%%;\nevents { }\nhttp {\n"
            . "    $directive\n    gms_token_salt \"\";\n"
            . "    gms_token_key_prefix {gms}:;\n"
            . "    server { listen 127.0.0.1:1; }\n}\n");
        isnt($rc, 0, "refused: $directive");
        like($out, $error, 'saying why');
        unlike($out, qr/master-pw|sentinel-pw/, 'no password shown');
    }
}

done_testing();

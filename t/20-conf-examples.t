#!/usr/bin/perl

# Every configuration in conf-examples/ passes 'nginx -t' with the built
# module, and the directives refuse what they should, naming the value.

use strict;
use warnings;

use Test::More;
use GmsTest;

GmsTest::need_module();

my @examples = glob('conf-examples/*.conf');

my $example_salt = GmsTest::scratch_dir() . '/example-salt';
GmsTest::write_file($example_salt, "a salt\n");
ok(@examples >= 2, 'there are examples to check');

for my $file (@examples) {
    open my $fh, '<', $file or die "$file: $!";
    my $conf = do { local $/; <$fh> };

    # the examples load the installed module; check the one just built
    $conf =~ s{^load_module\s+\S+;}{load_module %%MODULE%%;}m
        or fail("$file has no load_module line");

    # and read a salt, a signing key, a system client's secret mounted
    # as secrets: files of the test's
    $conf =~ s{^(\s*gms_token_salt_file)\s+\S+;}{$1 $example_salt;}mg;
    $conf =~ s{^(\s*gms_token_signing_key_file)\s+\S+;}{$1 $example_salt;}mg;
    $conf =~ s{secret_file=\S+;}{secret_file=$example_salt;}mg;
    $conf =~ s{password_file=\S+}{password_file=$example_salt}mg;

    my ($rc, $out) = GmsTest::nginx_t($conf);
    is($rc, 0, "nginx -t $file") or diag($out);
}

my $main = <<'CONF';
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events { }
http {
    %%HTTP%%
    server {
        listen 127.0.0.1:1;
        location / { %%LOCATION%% }
    }
}
CONF

my @bad = (
    [ 'gms_token_redis localhost;', '', qr/invalid redis address "localhost"/ ],
    [ 'gms_token_redis localhost:6379;', '',
      qr/the redis address "localhost:6379" is a host name: it needs a "resolver" at the http level/ ],
    [ 'gms_token_redis redis.example.com:6379;', '',
      qr/"redis\.example\.com:6379" is a host name: it needs a "resolver"/ ],
    [ 'gms_token_redis 10.0.0.256:6379;', '', qr/"10\.0\.0\.256:6379" is a host name/ ],
    [ 'server { listen 127.0.0.1:2; resolver 127.0.0.2; }
      gms_token_redis_sentinel redis.example.com:26379 master=gms;', '',
      qr/"redis\.example\.com:26379" is a host name: it needs a "resolver"/ ],
    [ 'gms_token_redis [::1];', '', qr/invalid redis address "\[::1\]": a port is required/ ],
    [ 'gms_token_redis [::1:6379;', '', qr/invalid redis address "\[::1:6379"/ ],
    [ 'gms_token_redis 127.0.0.1:6379 tls;
      gms_token_redis_ssl_certificate /nonexistent.crt;', '',
      qr/no "gms_token_redis_ssl_certificate_key" for "gms_token_redis_ssl_certificate"/ ],
    [ 'gms_token_redis 127.0.0.1:6379 tls;
      gms_token_redis_ssl_trusted_certificate /nonexistent/ca.pem;', '',
      qr{/nonexistent/ca\.pem} ],
    [ 'gms_token_redis_cluster 10.128.0.5:6379 tls;', '',
      qr/the nodes' certificates are checked against a name, and "10\.128\.0\.5:6379" is an address: set "gms_token_redis_ssl_name"/ ],
    [ 'gms_token_redis_sentinel 127.0.0.1:26379;', '',
      qr/"gms_token_redis_sentinel" directive needs "master=NAME"/ ],
    [ 'gms_token_redis_sentinel master=gms;', '',
      qr/"gms_token_redis_sentinel" directive needs at least one Sentinel address/ ],
    [ 'gms_token_redis_sentinel 127.0.0.1:26379 master=gms replica=always;', '',
      qr/invalid parameter "replica=always"/ ],
    [ 'gms_token_redis 127.0.0.1:6379;
      gms_token_redis_sentinel 127.0.0.1:26379 master=gms;', '',
      qr/"gms_token_redis_sentinel" directive cannot be used with "gms_token_redis"/ ],
    [ 'gms_token_redis 127.0.0.1:99999;', '', qr/invalid port/ ],
    [ 'gms_token_redis 127.0.0.1:6379 db=x;', '', qr/invalid redis db "db=x"/ ],
    [ 'gms_token_redis 127.0.0.1:6379 pass=x;', '',
      qr/invalid parameter "pass=x"/ ],
    [ 'gms_token_redis_timeout soon;', '', qr/"gms_token_redis_timeout" directive invalid value/ ],
    [ 'gms_token_redis_timeout 0;', '',
      qr/"gms_token_redis_timeout" directive must be more than 0/ ],
    [ '', 'gms_token_require_privilege "BAD NAME";',
      qr/invalid privilege name "BAD NAME"/ ],
    [ 'gms_token_cache zone=t:1m ttl=0;', '',
      qr/invalid parameter "ttl=0"/ ],
    [ 'gms_token_cache zone=t:1m stale=soon;', '',
      qr/invalid parameter "stale=soon"/ ],
    [ 'gms_token_cache zone=t:1m color=blue;', '',
      qr/invalid parameter "color=blue"/ ],
    [ 'gms_token_cache ttl=5s;', '',
      qr/"gms_token_cache" must have "zone" parameter/ ],
    [ '', 'gms_token_auth maybe;', qr/invalid value "maybe"/ ],
    [ '', 'gms_es_task_status _es_tasks;',
      qr/"_es_tasks" must start with "\/"/ ],
    [ '', 'gms_token_redis 127.0.0.1:6379;',
      qr/"gms_token_redis" directive is not allowed here/ ],
    [ 'gms_token_salt "";', 'gms_token_forbidden_status 402;',
      qr/invalid status "402": expected 401 or 403/ ],
    [ '', 'gms_es_task_status /t/ privilege=VIEW_ANALYTICS,bad/name;',
      qr/invalid privilege name "bad\/name"/ ],
    [ '', 'gms_es_task_status /t/ privilege=A,,B;',
      qr/invalid privilege name "" in "A,,B"/ ],
    [ '', 'gms_es_task_status /t/ privileges=A;',
      qr/invalid parameter "privileges=A"/ ],

    # no salt: every id written from DataHub's records would miss
    [ '', 'gms_token_auth on;',
      qr/gms_token_auth\ is\ on,\ but\ no\ gms_token_salt\ is\ set:\ .*
         DATAHUB_TOKEN_SERVICE_SALT.*
         "ohDVbJBvHHVJh9S\/UA4BYF9COuNnqqVhr9MLKEGXk1O="/x ],
    [ 'gms_token_auth on;', '', qr/but no gms_token_salt is set/ ],
    [ 'gms_token_salt_file %%TESTDIR%%/no-such-salt;', '',
      qr/open\(\) ".*no-such-salt" failed/ ],
    [ 'gms_token_salt x; gms_token_salt_file /dev/null;', '',
      qr/"gms_token_salt_file" directive is duplicate/ ],
    [ 'gms_token_salt_file /dev;', '',
      qr/"\/dev" is not a file of at most 4096 bytes/ ],
);

# what passes: an explicit empty salt, a salt file, no salt where no
# location checks tokens
my $salt_file = GmsTest::scratch_dir() . '/salt';
GmsTest::write_file($salt_file, "ohDVbJBvHHVJh9S/UA4BYF9COuNnqqVhr9MLKEGXk1O=\n");

my @good = (
    [ 'gms_token_salt "";', 'gms_token_auth on;' ],
    [ "gms_token_salt_file $salt_file;", 'gms_token_auth on;' ],
    [ '', 'gms_token_auth off;' ],
    [ 'gms_token_salt "";', 'gms_token_auth on; gms_token_forbidden_status 403;'
      . ' gms_es_task_status /t/ privilege=off;' ],
    [ 'gms_token_salt "";', 'gms_token_auth on; gms_es_task_status /t/ '
      . 'privilege=GET_ES_TASK_STATUS_PRIVILEGE,MANAGE_SYSTEM_OPERATIONS;' ],
);

for my $case (@good) {
    my ($http, $location) = @$case;
    my $conf = $main =~ s/%%HTTP%%/$http/r =~ s/%%LOCATION%%/$location/r;
    my ($rc, $out) = GmsTest::nginx_t($conf);
    is($rc, 0, "accepted: $http $location") or diag($out);
}

for my $case (@bad) {
    my ($http, $location, $error) = @$case;
    my $conf = $main =~ s/%%HTTP%%/$http/r =~ s/%%LOCATION%%/$location/r;
    my ($rc, $out) = GmsTest::nginx_t($conf);
    isnt($rc, 0, "refused: $http$location");
    like($out, $error, 'with a message naming the value');
}

done_testing();

#!/usr/bin/perl

# Every configuration in conf-examples/ passes 'nginx -t' with the built
# module, and the directives refuse what they should, naming the value.

use strict;
use warnings;

use Test::More;
use GmsTest;

GmsTest::need_module();

my @examples = glob('conf-examples/*.conf');
ok(@examples >= 2, 'there are examples to check');

for my $file (@examples) {
    open my $fh, '<', $file or die "$file: $!";
    my $conf = do { local $/; <$fh> };

    # the examples load the installed module; check the one just built
    $conf =~ s{^load_module\s+\S+;}{load_module %%MODULE%%;}m
        or fail("$file has no load_module line");

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
    [ 'gms_token_redis 127.0.0.1:99999;', '', qr/invalid port/ ],
    [ 'gms_token_redis 127.0.0.1:6379 db=x;', '', qr/invalid redis db "db=x"/ ],
    [ 'gms_token_redis 127.0.0.1:6379 pass=x;', '',
      qr/invalid parameter "pass=x"/ ],
    [ 'gms_token_redis_timeout soon;', '', qr/"gms_token_redis_timeout" directive invalid value/ ],
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
);

for my $case (@bad) {
    my ($http, $location, $error) = @$case;
    my $conf = $main =~ s/%%HTTP%%/$http/r =~ s/%%LOCATION%%/$location/r;
    my ($rc, $out) = GmsTest::nginx_t($conf);
    isnt($rc, 0, "refused: $http$location");
    like($out, $error, 'with a message naming the value');
}

done_testing();

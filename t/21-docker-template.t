#!/usr/bin/perl

# The container's configuration, without Docker: docker/entrypoint.sh
# renders conf-examples/gms-edge.conf.template from the environment exactly
# as at the container's start, the result passes 'nginx -t' with the built
# module, and the entry point's own 'exec nginx' serves it in front of a
# real redis-server and stand-ins: 401s, a 200 with a salt and a Redis
# password full of what nginx's parser treats specially, getEsTaskStatus,
# /metrics, the includes, the health check of docker/healthcheck.sh; then
# Redis over TLS reached by a name through nginx's resolver, with the token
# in a header of its own, two signing keys and CORS preflights let
# through; then Redis behind a Sentinel named in the hosts file.  Every
# variable's directive is checked line by line, and passes 'nginx -t'.
# Bad settings are refused in one line by the variable's name, before
# nginx runs.  t/docker/smoke.sh checks the image itself.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Temp ();
use POSIX qw(WNOHANG);
use Test::More;

use GmsTest;
use GmsTest::Certs;
use GmsTest::DNS;
use GmsTest::HTTP;
use GmsTest::JWT;
use GmsTest::Redis;
use GmsTest::Sentinel;
use GmsTest::Stub;

GmsTest::need_module();
GmsTest::need_redis();

my $REPO = abs_path(dirname(__FILE__) . '/..');
my $ENTRY = "$REPO/docker/entrypoint.sh";
my $HEALTH = "$REPO/docker/healthcheck.sh";
my $TEMPLATE = "$REPO/conf-examples/gms-edge.conf.template";
my $OPEN_PATHS = "$REPO/conf-examples/open-paths";
my $MODULE = abs_path(GmsTest::module_path());
my $NGINX = abs_path(GmsTest::nginx_bin());

plan skip_all => 'envsubst not found (Debian package gettext-base)'
    unless grep { -x "$_/envsubst" } split /:/, $ENV{PATH} // '';

my $as_root = $> == 0;

# The entry point runs 'nginx' from PATH: first the directory of the nginx
# under test or, under GMS_NGINX_WRAPPER (make test-asan), a script that
# runs it through the wrapper as GmsTest::Nginx does.
my $BIN_DIR = dirname($NGINX);

if (my @wrapper = split ' ', $ENV{GMS_NGINX_WRAPPER} // '') {
    $BIN_DIR = File::Temp::tempdir('gms-docker-bin-XXXXXXXX', TMPDIR => 1,
                                   CLEANUP => 1);
    chmod 0755, $BIN_DIR;
    my $words = join ' ', map { "'" . s/'/'\\''/gr . "'" } @wrapper, $NGINX;
    open my $fh, '>', "$BIN_DIR/nginx" or die "$BIN_DIR/nginx: $!\n";
    print $fh "#!/bin/sh\nexec $words \"\$@\"\n";
    close $fh;
    chmod 0755, "$BIN_DIR/nginx";
}

my $PATH = "$BIN_DIR:/usr/bin:/bin:/usr/sbin:/sbin";

sub slurp {
    my ($path) = @_;
    open my $fh, '<:raw', $path or return undef;
    local $/;
    return scalar <$fh>;
}

sub spew {
    my ($path, $bytes) = @_;
    open my $fh, '>:raw', $path or die "$path: $!\n";
    print $fh $bytes;
    close $fh or die "$path: $!\n";
}

sub tempdir {
    my $dir = File::Temp::tempdir('gms-docker-XXXXXXXX', TMPDIR => 1,
                                  CLEANUP => !$ENV{TEST_GMS_LEAVE});
    # the workers (www-data) reach their temporary files under the run
    # directory, as under /run/gms-edge in the image
    chmod 0755, $dir;
    return $dir;
}

# A conf dir as /etc/gms-edge in the image: the template, and includes.
# $module: the template with its load_module line pointing at the built
# module (the image has it at /usr/lib/nginx/modules).
sub conf_dir {
    my (%opt) = @_;

    my $dir = tempdir();
    my $template = slurp($TEMPLATE);
    $template =~ s{^load_module\s+\S+;}{load_module $MODULE;}m
        if $opt{module};
    spew("$dir/nginx.conf.template", $template);

    for my $sub (qw(http.d server.d)) {
        mkdir "$dir/$sub" or die "$dir/$sub: $!\n";
        spew("$dir/$sub/test.conf", $opt{$sub}) if defined $opt{$sub};
    }

    # as the image has them (Dockerfile)
    mkdir "$dir/open-paths" or die "$dir/open-paths: $!\n";
    spew("$dir/open-paths/$_", slurp("$OPEN_PATHS/$_"))
        for map { s{.*/}{}r } glob "$OPEN_PATHS/*.conf";

    return $dir;
}

# The host's resolv.conf and hosts file differ from machine to machine:
# the entry point reads these instead (GMS_EDGE_RESOLV_CONF,
# GMS_EDGE_HOSTS) unless a case says otherwise.  In the hosts file
# localhost's IPv6 line comes first, as the IPv4 one must win; a name
# there is what 'docker run --add-host' writes.
my $NET = tempdir();
spew("$NET/resolv.conf", "# as Docker writes it
search example.test
"
     . "nameserver 192.0.2.53
nameserver 2001:db8::53
options ndots:0
");
spew("$NET/hosts", "::1	localhost ip6-localhost ip6-loopback
"
     . "127.0.0.1	localhost
"
     . "192.0.2.7 redis-v4.test Redis-Alias.test   # --add-host
"
     . "2001:db8::7 redis-v6.test
"
     . "192.0.2.8 sentinel.test
"
     . "127.0.0.1 sentinel.local.test
");
spew("$NET/empty", '');
my %net = (GMS_EDGE_RESOLV_CONF => "$NET/resolv.conf",
           GMS_EDGE_HOSTS => "$NET/hosts");
my $default_resolver = 'resolver 192.0.2.53 [2001:db8::53] valid=10s;';

# The entry point with only the given environment (and PATH, so that its
# 'exec nginx' finds the nginx under test; a variable given as undef is
# left out): returns its exit code, stdout and stderr.
my %required = (GMS_UPSTREAM => '127.0.0.1:8080',
                SEARCH_UPSTREAM => '127.0.0.1:9200',
                REDIS_ADDRESS => '127.0.0.1:6379',
                GMS_TOKEN_SALT => '');

sub entry {
    my ($env, @args) = @_;

    my $dir = tempdir();
    my %env = (PATH => $PATH,
               %$env);
    delete @env{ grep { !defined $env{$_} } keys %env };

    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        %ENV = %env;
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$dir/out";
        open STDERR, '>', "$dir/err";
        exec '/bin/sh', $ENTRY, @args or POSIX::_exit(127);
    }
    waitpid $pid, 0;

    return ($? >> 8, slurp("$dir/out") // '', slurp("$dir/err") // '');
}

sub render {
    my ($env, %opt) = @_;
    my $conf = $opt{conf_dir} // conf_dir();
    my $run = tempdir();
    my ($rc, $out, $err) = entry({ %net, GMS_EDGE_CONF_DIR => $conf,
                                   GMS_EDGE_RUN_DIR => $run, %$env },
                                 'gms-edge-render');
    return ($rc, $err, "$run/nginx.conf", $out);
}

# An nginx that only leaves a trace: a refusal must come before it runs.
my $TRAP = tempdir();
spew("$TRAP/nginx", "#!/bin/sh\necho \"\$@\" >> $TRAP/ran\n");
chmod 0755, "$TRAP/nginx";

# The container's command with the required settings and $env: refused
# with exit status 1 and one line on stderr matching $error, nothing
# written, nginx not run.
sub refused {
    my ($env, $error) = @_;

    my $run = tempdir();
    my ($rc, $out, $err) = entry({ %required, %net,
                                   GMS_EDGE_CONF_DIR => conf_dir(),
                                   GMS_EDGE_RUN_DIR => $run,
                                   PATH => "$TRAP:/usr/bin:/bin", %$env },
                                 'gms-edge');
    my $title = join ' ', map { "$_=" . ($env->{$_} // '(unset)') }
                          sort keys %$env;

    subtest "refused: $title" => sub {
        is($rc, 1, 'exit status 1');
        like($err, qr/\Agms-edge: [^\n]*\n\z/, 'one line on stderr');
        like($err, $error, 'naming the variable');
        ok(!-e "$run/nginx.conf", 'nothing written');
        ok(!-e "$TRAP/ran", 'nginx not run');
    };
}

# An nginx.conf for GmsTest::nginx_t: the built module in place of the
# image's
sub for_nginx_t {
    my ($conf) = @_;
    $conf =~ s{^load_module\s+\S+;}{load_module %%MODULE%%;}m
        or fail('a load_module line');
    return $conf;
}


# --- rendering ---------------------------------------------------------------

my $default_conf = '';

{
    # names of nginx's own variables in the environment change nothing
    my ($rc, $err, $path, $out) = render({ %required,
                                           host => 'EVIL', request_uri => 'EVIL',
                                           gms_token_actor => 'EVIL' });
    is($rc, 0, 'rendered with the three addresses and an empty salt only')
        or diag($err);
    is($out, "$path\n", 'gms-edge-render prints the path');

    my $conf = slurp($path) // '';
    $default_conf = $conf;
    is((stat $path)[2] & 0777, 0600, 'owner-only: it holds the secrets');
    unlike($conf =~ s/^\s*#.*$//mgr, qr/\$\{/, 'every ${...} substituted');
    unlike($conf, qr/EVIL/, "nginx's variables left alone");
    like($conf, qr/^\s*proxy_pass http:\/\/gms\$gms_stripped_uri;$/m,
         '$gms_stripped_uri kept');
    like($conf, qr/^\s*proxy_set_header X-DataHub-Actor \$gms_token_actor;$/m,
         '$gms_token_actor kept');
    like($conf, qr/^\s*~\^\/api\/gms\(\?<rest>\/\.\*\)\$  \$rest;$/m,
         'the map kept');
    like($conf, qr/^\s*gms_token_redis 127\.0\.0\.1:6379;$/m, 'Redis');
    like($conf, qr/^\s*server 127\.0\.0\.1:8080; $/m, 'GMS');
    like($conf, qr/^\s*listen 8000;$/m, 'port 8000 by default');
    like($conf, qr/^\s*gms_token_salt "";$/m, 'the empty salt, as set');
    like($conf, qr/^\s*gms_token_cache zone=gms_tokens:16m ttl=30s /m,
         'the cache by default');
    like($conf, qr/^\s*allow 127\.0\.0\.1; $/m, 'metrics from the loopback');
    like($conf, qr/^error_log stderr;$/m, 'errors to stderr');
    like($conf, qr/^\s*access_log \/dev\/stdout gms;$/m, 'access to stdout');
    like($conf, qr/^user www-data;$/m, 'workers as www-data')
        if $as_root;
    like($conf, qr/^\s*\Q$default_resolver\E$/m,
         "resolver: the resolv.conf's nameservers, IPv6 bracketed");
    like($conf, qr/^\s*# Redis without TLS \(REDIS_TLS=off\)$/m,
         'no TLS by default');
    unlike($conf, qr/^\s*gms_token_redis_ssl_/m, 'and no TLS directive');
    unlike($conf, qr/^\s*gms_token_source\b/m,
           'the token from Authorization by default');
    like($conf, qr/^\s*gms_token_preflight check;$/m, 'preflights checked');
    unlike($conf, qr/^\s*gms_token_signing_key_file\b/m, 'no signing key');

    $conf =~ s{^load_module\s+\S+;}{load_module %%MODULE%%;}m
        or fail('a load_module line');
    my ($t_rc, $t_out) = GmsTest::nginx_t($conf);
    is($t_rc, 0, 'nginx -t on the rendered configuration') or diag($t_out);
}

# GMS's signing key and the system client, from mounted files
my $credentials_conf = '';

{
    my $dir = tempdir();
    spew("$dir/signing-key", "k\n");
    spew("$dir/system-secret", "s\n");

    my ($rc, $err, $path) = render({
        %required,
        GMS_TOKEN_SIGNING_KEY_FILE => "$dir/signing-key",
        GMS_SYSTEM_CLIENT_SECRET_FILE => "$dir/system-secret",
    });
    is($rc, 0, 'rendered with a signing key and a system client')
        or diag($err);

    my $c = $credentials_conf = slurp($path) // '';
    like($c, qr/^\s*gms_token_signing_key_file \Q$dir\E\/signing-key;$/m,
         'GMS_TOKEN_SIGNING_KEY_FILE');
    my $system = "gms_token_system_client __datahub_system "
               . "secret_file=$dir/system-secret;";
    like($c, qr/^\s*\Q$system\E$/m,
         'GMS_SYSTEM_CLIENT_SECRET_FILE, DataHub\'s default client id');
    unlike($default_conf, qr/^\s*gms_token_(?:signing_key_file|system_client)/m,
           'neither without the files');

    $c =~ s{^load_module\s+\S+;}{load_module %%MODULE%%;}m;
    my ($t_rc, $t_out) = GmsTest::nginx_t($c);
    is($t_rc, 0, 'nginx -t on it') or diag($t_out);

    for my $case (
        [ { GMS_TOKEN_SIGNING_KEY_FILE => 'signing-key' },
          qr/GMS_TOKEN_SIGNING_KEY_FILE: 'signing-key' is not an absolute/ ],
        [ { GMS_TOKEN_SIGNING_KEY_FILE => '/nonexistent/key' },
          qr/GMS_TOKEN_SIGNING_KEY_FILE: cannot read '\/nonexistent\/key'/ ],
        [ { GMS_TOKEN_SIGNING_KEY_FILE => "$dir/k;x" },
          qr/GMS_TOKEN_SIGNING_KEY_FILE: '.*k;x': letters/ ],
        [ { GMS_SYSTEM_CLIENT_ID => 'svc' },
          qr/GMS_SYSTEM_CLIENT_ID is set without GMS_SYSTEM_CLIENT_SECRET/ ],
        [ { GMS_SYSTEM_CLIENT_ID => 'a b',
            GMS_SYSTEM_CLIENT_SECRET_FILE => "$dir/system-secret" },
          qr/GMS_SYSTEM_CLIENT_ID: 'a b'/ ],
    ) {
        my ($env, $error) = @$case;
        my ($bad_rc, $bad_err, $bad_path) = render({ %required, %$env });
        isnt($bad_rc, 0, 'refused: ' . join(' ', %$env));
        like($bad_err, $error, 'naming the variable');
        ok(!-e $bad_path, 'and nothing written');
    }
}

# --- each variable's directives ---------------------------------------------

my $certs = GmsTest::Certs->new;
my $KEY = 'the-signing-key-GMS-uses-now-0123456789';
my $OLD_KEY = 'the-signing-key-GMS-used-before-987654';
my $files = tempdir();
spew("$files/signing-key", "$KEY\n");
spew("$files/signing-key-previous", "$OLD_KEY\n");
spew("$files/sentinel-password", qq{s"3\\cr\$t\n});
spew("$files/resolv-scoped.conf",
     "nameserver fe80::1%eth0\nnameserver 192.0.2.54\n");

my $ca = $certs->{ca};
my %tls = (REDIS_TLS => 'on');
my %sentinels = (REDIS_ADDRESS => undef,
                 REDIS_SENTINELS => '127.0.0.1:26379',
                 REDIS_SENTINEL_MASTER => 'gms');

# title, the variables, the lines the rendered file must hold (each whole,
# apart from its indentation), optionally a pattern it must not hold and
# one stderr must hold.  Every rendering passes 'nginx -t'.
my @rendered = (
    [ 'REDIS_TLS=on: the system CA store, verified', { %tls },
      [ 'gms_token_redis 127.0.0.1:6379 tls;',
        'gms_token_redis_ssl_verify on;' ],
      absent => qr/^\s*gms_token_redis_ssl_(?!verify)/m ],
    [ 'REDIS_SSL_TRUSTED_CERTIFICATE',
      { %tls, REDIS_SSL_TRUSTED_CERTIFICATE => $ca },
      [ "gms_token_redis_ssl_trusted_certificate $ca;" ] ],
    [ 'REDIS_SSL_CERTIFICATE and _KEY: mutual TLS',
      { %tls, REDIS_SSL_CERTIFICATE => $certs->{client_cert},
        REDIS_SSL_CERTIFICATE_KEY => $certs->{client_key} },
      [ "gms_token_redis_ssl_certificate $certs->{client_cert};",
        "gms_token_redis_ssl_certificate_key $certs->{client_key};" ] ],
    [ 'REDIS_SSL_NAME', { %tls, REDIS_SSL_NAME => 'redis.example.com' },
      [ 'gms_token_redis_ssl_name redis.example.com;' ] ],
    [ 'REDIS_SSL_VERIFY=off', { %tls, REDIS_SSL_VERIFY => 'off' },
      [ 'gms_token_redis_ssl_verify off;' ],
      err => qr/^gms-edge: REDIS_SSL_VERIFY=off: Redis's certificate is not/m ],
    [ 'REDIS_TLS=off: as unset', { REDIS_TLS => 'off' },
      [ 'gms_token_redis 127.0.0.1:6379;',
        '# Redis without TLS (REDIS_TLS=off)' ] ],
    [ 'tls, password= and db= in the order of the syntax',
      { %tls, GMS_REDIS_PASSWORD => 'pw', REDIS_DB => 4 },
      [ 'gms_token_redis 127.0.0.1:6379 tls "password=pw" db=4;' ] ],

    [ 'REDIS_SENTINELS and REDIS_SENTINEL_MASTER',
      { %sentinels, REDIS_SENTINELS => '127.0.0.1:26379 [::1]:26380',
        REDIS_SENTINEL_MASTER => 'gms-master.1' },
      [ 'gms_token_redis_sentinel 127.0.0.1:26379 [::1]:26380 '
        . 'master=gms-master.1;' ],
      absent => qr/^\s*gms_token_redis\s/m ],
    [ 'Sentinel with every parameter',
      { %sentinels, GMS_REDIS_PASSWORD => 'p"w',
        GMS_REDIS_SENTINEL_PASSWORD_FILE => "$files/sentinel-password",
        REDIS_DB => 2, %tls, REDIS_SSL_NAME => 'redis.test',
        REDIS_SSL_TRUSTED_CERTIFICATE => $ca, REDIS_REPLICA => 'prefer' },
      [ 'gms_token_redis_sentinel 127.0.0.1:26379 master=gms '
        . '"password=p\"w" sentinel_password_file=' . "$files/sentinel-password"
        . ' db=2 tls '
        . 'replica=prefer;',
        'gms_token_redis_ssl_name redis.test;' ] ],
    [ 'GMS_REDIS_SENTINEL_PASSWORD, REDIS_REPLICA=off',
      { %sentinels, GMS_REDIS_SENTINEL_PASSWORD => 'sp',
        REDIS_REPLICA => 'off' },
      [ 'gms_token_redis_sentinel 127.0.0.1:26379 master=gms '
        . '"sentinel_password=sp" replica=off;' ] ],
    [ 'Sentinel with TLS, verification off: no name needed',
      { %sentinels, %tls, REDIS_SSL_VERIFY => 'off' },
      [ 'gms_token_redis_sentinel 127.0.0.1:26379 master=gms tls;' ] ],
    [ 'Sentinels by name: the hosts file, else the resolver',
      { %sentinels, REDIS_SENTINELS => 'sentinel.test:26379 '
            . 'localhost:26380 sentinel-dns.test:26381' },
      [ 'gms_token_redis_sentinel 192.0.2.8:26379 127.0.0.1:26380 '
        . 'sentinel-dns.test:26381 master=gms;', $default_resolver ],
      err => qr/^gms-edge: REDIS_SENTINELS: sentinel\.test is 192\.0\.2\.8 \(from \S+\/hosts\)$/m ],

    [ 'a name in REDIS_ADDRESS: for nginx\'s resolver',
      { REDIS_ADDRESS => 'redis.test:6379' },
      [ 'gms_token_redis redis.test:6379;', $default_resolver ] ],
    [ 'RESOLVER', { REDIS_ADDRESS => 'redis.test:6379',
                    RESOLVER => '127.0.0.1:5353 [::1]:5353 valid=1s ipv6=off' },
      [ 'resolver 127.0.0.1:5353 [::1]:5353 valid=1s ipv6=off;' ] ],
    [ 'a nameserver with a zone index left out, saying so',
      { GMS_EDGE_RESOLV_CONF => "$files/resolv-scoped.conf" },
      [ 'resolver 192.0.2.54 valid=10s;' ],
      err => qr/nameserver fe80::1%eth0 left out/ ],
    [ 'a name from the hosts file: its address',
      { REDIS_ADDRESS => 'redis-v4.test:6379' },
      [ 'gms_token_redis 192.0.2.7:6379;' ],
      err => qr/^gms-edge: REDIS_ADDRESS: redis-v4\.test is 192\.0\.2\.7 \(from \S+\/hosts\)$/m ],
    [ 'the hosts file\'s names without regard to case',
      { REDIS_ADDRESS => 'redis-alias.test:6379' },
      [ 'gms_token_redis 192.0.2.7:6379;' ] ],
    [ 'an IPv6 address from the hosts file, bracketed',
      { REDIS_ADDRESS => 'redis-v6.test:6380' },
      [ 'gms_token_redis [2001:db8::7]:6380;' ] ],
    [ 'localhost: its IPv4 address, listed after the IPv6 one',
      { REDIS_ADDRESS => 'localhost:6379' },
      [ 'gms_token_redis 127.0.0.1:6379;' ] ],
    [ 'no nameserver: a comment, enough for names in the hosts file',
      { REDIS_ADDRESS => 'localhost:6379',
        GMS_EDGE_RESOLV_CONF => "$NET/empty" },
      [ 'gms_token_redis 127.0.0.1:6379;',
        "# no resolver: no RESOLVER, no nameserver in $NET/empty" ],
      absent => qr/^\s*resolver\s/m ],

    [ 'GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE: a second key',
      { GMS_TOKEN_SIGNING_KEY_FILE => "$files/signing-key",
        GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE => "$files/signing-key-previous" },
      [ "gms_token_signing_key_file $files/signing-key;\n"
        . "    gms_token_signing_key_file $files/signing-key-previous;" ] ],
    [ 'GMS_TOKEN_SOURCE, a cookie',
      { GMS_TOKEN_SOURCE => '$cookie_gms_token' },
      [ 'gms_token_source $cookie_gms_token;' ] ],
    [ 'GMS_TOKEN_SOURCE, a header', { GMS_TOKEN_SOURCE => '$http_x_gms_token' },
      [ 'gms_token_source $http_x_gms_token;' ] ],
    [ 'GMS_TOKEN_PREFLIGHT=pass', { GMS_TOKEN_PREFLIGHT => 'pass' },
      [ 'gms_token_preflight pass;' ] ],
    [ 'GMS_TOKEN_PREFLIGHT=check', { GMS_TOKEN_PREFLIGHT => 'check' },
      [ 'gms_token_preflight check;' ] ],
    [ 'GMS_DATAHUB_VERSION unset: 0.13.0', {},
      [ 'gms_datahub_version 0.13.0;' ] ],
    [ 'GMS_DATAHUB_VERSION=1.4.0', { GMS_DATAHUB_VERSION => '1.4.0' },
      [ 'gms_datahub_version 1.4.0;' ] ],
    [ 'GMS_DATAHUB_VERSION=1.4', { GMS_DATAHUB_VERSION => '1.4' },
      [ 'gms_datahub_version 1.4;' ] ],
    [ 'GMS_DATAHUB_VERSION=1.7.0.1, a patch release',
      { GMS_DATAHUB_VERSION => '1.7.0.1' },
      [ 'gms_datahub_version 1.7.0.1;' ] ],
    [ 'GMS_TOKEN_UNKNOWN_SIGNED unset: the module\'s default',
      { GMS_TOKEN_SIGNING_KEY_FILE => "$files/signing-key" },
      [ '# gms_token_unknown_signed: the default' ] ],
    [ 'GMS_TOKEN_UNKNOWN_SIGNED=refuse', { GMS_TOKEN_UNKNOWN_SIGNED => 'refuse' },
      [ 'gms_token_unknown_signed refuse;' ] ],
    [ 'GMS_TOKEN_UNKNOWN_SIGNED=pass, a signing key and the cache',
      { GMS_TOKEN_UNKNOWN_SIGNED => 'pass',
        GMS_TOKEN_SIGNING_KEY_FILE => "$files/signing-key" },
      [ 'gms_token_unknown_signed pass;' ] ],
);

for my $case (@rendered) {
    my ($title, $env, $lines, %opt) = @$case;

    subtest $title => sub {
        my ($rc, $err, $path) = render({ %required, %$env });
        is($rc, 0, 'rendered') or diag($err);
        my $conf = slurp($path) // '';

        for my $line (@$lines) {
            like($conf, qr/^[ ]*\Q$line\E$/m, $line =~ s/\n\s*/ \/ /r);
        }
        unlike($conf, $opt{absent}, "nothing matching $opt{absent}")
            if $opt{absent};
        like($err, $opt{err}, 'saying so on stderr') if $opt{err};

        my ($t_rc, $t_out) = GmsTest::nginx_t(for_nginx_t($conf));
        is($t_rc, 0, 'nginx -t') or diag($t_out);
    };
}

# GMS's open paths by its release: the shipped include file of the range
# (conf-examples/open-paths/, t/52-datahub-releases.t tests each)
for my $case (['0.13.0', '0.13'], ['0.15.0', '0.13'], ['1.0.0', '1.0'],
              ['1.1.0', '1.0'], ['1.2.0', '1.2'], ['1.3.0', '1.3'],
              ['1.4', '1.3'], ['1.5.0', '1.5'], ['1.7.0', '1.5'],
              ['1.7.0.1', '1.5'])
{
    my ($version, $file) = @$case;
    my ($rc, $err, $path) = render({ %required,
                                     GMS_DATAHUB_VERSION => $version });
    like(slurp($path) // '',
         qr{^[ ]*include [^ ;]+/open-paths/datahub-\Q$file\E\.conf;$}m,
         "GMS_DATAHUB_VERSION=$version: the open paths of $file");
}

# without GMS_EDGE_RESOLV_CONF and GMS_EDGE_HOSTS: the system's files
SKIP: {
    my @servers;
    for (split /\n/, slurp('/etc/resolv.conf') // '') {
        my ($ns) = /^nameserver\s+(\S+)/ or next;
        push @servers, $ns =~ /^[0-9.]+$/ ? $ns
                     : $ns =~ /^[0-9A-Fa-f:.]+$/ ? "[$ns]" : ();
    }
    my ($local) = map { /^\s*(\d+\.\d+\.\d+\.\d+)\s.*\blocalhost\b/ ? $1 : () }
                  split /\n/, slurp('/etc/hosts') // '';
    skip 'no nameserver in /etc/resolv.conf', 2 unless @servers;
    skip 'no IPv4 localhost in /etc/hosts', 2 unless defined $local;

    my ($rc, $err, $path) = render({ %required,
                                     REDIS_ADDRESS => 'localhost:6379',
                                     GMS_EDGE_RESOLV_CONF => undef,
                                     GMS_EDGE_HOSTS => undef });
    my $conf = slurp($path) // '';
    like($conf, qr/^\s*\Qresolver @servers valid=10s;\E$/m,
         'the nameservers of /etc/resolv.conf');
    like($conf, qr/^\s*\Qgms_token_redis $local:6379;\E$/m,
         'localhost from /etc/hosts');
}

{
    # the template is gms-edge.conf for a container: same locations, same
    # module directives (in the rendered file: the cache is a variable;
    # the credentials' directives when their files are given)
    my $example = slurp("$REPO/conf-examples/gms-edge.conf");
    my $template = $credentials_conf
                   =~ s{^\s*include\s+\S+/open-paths/(\S+);}
                       {slurp("$OPEN_PATHS/$1")}mer;

    for my $loc ($example =~ /^\s*(location\s+[^{]+?)\s*\{/mg) {
        like($template, qr/^\s*\Q$loc\E\s*\{/m, "the container has '$loc'");
    }

    my %directives = map { $_ => 1 } $example =~ /^\s*(gms_\w+)/mg;
    for my $d (sort keys %directives) {
        like($template, qr/^\s*\Q$d\E\b/m, "the container uses $d");
    }
}

{
    my $conf = conf_dir();
    my ($rc, $err, $path) = render({
        %required,
        LISTEN_PORT => 18001,
        GMS_UPSTREAM => 'gms-1:8080 10.0.0.2:8080',
        SEARCH_UPSTREAM => 'unix:/run/search.sock',
        REDIS_ADDRESS => 'unix:/run/redis/redis.sock',
        GMS_REDIS_PASSWORD => 'p"w\\d$x',
        REDIS_DB => 2,
        REDIS_TIMEOUT => '1s',
        GMS_TOKEN_KEY_PREFIX => 'edge:',
        GMS_TOKEN_CACHE => 'off',
        WORKER_PROCESSES => 3,
        METRICS_ALLOW => '127.0.0.1 10.0.0.0/8',
    }, conf_dir => $conf);
    is($rc, 0, 'rendered with every setting') or diag($err);

    my $c = slurp($path) // '';
    like($c, qr/^\s*listen 18001;$/m, 'LISTEN_PORT');
    like($c, qr/^\s*server gms-1:8080; server 10\.0\.0\.2:8080; $/m,
         'GMS_UPSTREAM: two servers');
    like($c, qr/^\s*server unix:\/run\/search\.sock; $/m,
         'SEARCH_UPSTREAM: a unix socket');
    my $redis_line = q{gms_token_redis unix:/run/redis/redis.sock }
                   . q{"password=p\"w\\\\d$x" db=2;};
    like($c, qr/^\s*\Q$redis_line\E$/m,
         'REDIS_ADDRESS, password quoted for nginx, db');
    like($c, qr/^\s*gms_token_redis_timeout 1s;$/m, 'REDIS_TIMEOUT');

    my ($rc6, $err6, $path6) = render({ %required,
                                        REDIS_ADDRESS => '[::1]:6380' });
    is($rc6, 0, 'REDIS_ADDRESS as [ipv6]:port') or diag($err6);
    like(slurp($path6) // '', qr/^\s*gms_token_redis \[::1\]:6380;$/m,
         'passed to the module as it is');
    like($c, qr/^\s*gms_token_key_prefix "edge:";$/m, 'GMS_TOKEN_KEY_PREFIX');
    unlike($c, qr/^\s*gms_token_cache /m, 'GMS_TOKEN_CACHE=off');
    like($c, qr/^worker_processes 3;$/m, 'WORKER_PROCESSES');
    like($c, qr/^\s*allow 127\.0\.0\.1; allow 10\.0\.0\.0\/8; $/m,
         'METRICS_ALLOW');
    like($c, qr/^\s*include \Q$conf\E\/http\.d\/\*\.conf;$/m, 'http.d');
    like($c, qr/^\s*include \Q$conf\E\/server\.d\/\*\.conf;$/m, 'server.d');
}

# FRONTEND_UPSTREAM: the layout of datahub-one-hostname.conf (served by
# t/28-one-hostname.t); without it, none of it
{
    my $example = slurp("$REPO/conf-examples/datahub-one-hostname.conf");
    my ($rc, $err, $path) = render({
        %required,
        FRONTEND_UPSTREAM => 'localhost:9002 10.0.0.3:9002',
    });
    is($rc, 0, 'rendered with FRONTEND_UPSTREAM') or diag($err);
    like($err, qr/; frontend localhost:9002 10\.0\.0\.3:9002$/m,
         'saying so');

    my $c = slurp($path) // '';
    like($c, qr/^\s*upstream\ frontend\ \{\n\s*server\ localhost:9002;
                \ server\ 10\.0\.0\.3:9002;\ \n\s*keepalive\ 32;/mx,
         'FRONTEND_UPSTREAM: two servers');
    unlike($c, qr/^#@/m, 'no block markers left');
    unlike($c =~ s/^\s*#.*$//mgr, qr/\$\{/, 'every ${...} substituted');

    # the same locations as datahub-one-hostname.conf, and the container's
    # /healthz; the frontend's location the same directives
    my @locations = sort grep { $_ ne 'location = /healthz' }
                    $c =~ /^\s*(location\s+[^{]+?)\s*\{/mg;
    is_deeply(\@locations, [sort $example =~ /^\s*(location\s+[^{]+?)\s*\{/mg],
              "datahub-one-hostname.conf's locations");
    my ($fe) = $c =~ /^(\s*)location \/ \{\n(.*?)^\1\}/ms ? ($2) : ('');
    my ($ex) = $example =~ /^(\s*)location \/ \{\n(.*?)^\1\}/ms ? ($2) : ('');
    my $directives = sub {
        return [ grep { /\S/ && !/^#/ } map { s/^\s+|\s+$//gr }
                 split /\n/, $_[0] ];
    };
    ok(@{ $directives->($ex) } > 5, "the example's frontend location read");
    is_deeply($directives->($fe), $directives->($ex),
              "the frontend's location as datahub-one-hostname.conf's");
    like($c, qr/^\s*large_client_header_buffers 4 32k;$/m,
         "the frontend's header size");

    $c =~ s{^load_module\s+\S+;}{load_module %%MODULE%%;}m;
    my ($t_rc, $t_out) = GmsTest::nginx_t($c);
    is($t_rc, 0, 'nginx -t on it') or diag($t_out);

    unlike($default_conf, qr/^#@/m, 'without it: no block markers left');
    unlike($default_conf =~ s/^\s*#.*$//mgr, qr/frontend|large_client/,
           'and nothing of the frontend');
    like($default_conf, qr/^\s*proxy_pass http:\/\/gms;$/m,
         'GMS at the root');

    my ($empty_rc, $empty_err, $empty_path) = render({ %required,
                                                       FRONTEND_UPSTREAM => '' });
    is($empty_rc, 0, 'FRONTEND_UPSTREAM set and empty') or diag($empty_err);
    # the same file but for the run and conf directories
    my $dirs = sub {
        my ($conf) = @_;
        my ($run) = $conf =~ m{^pid (\S+)/nginx\.pid;$}m;
        my ($etc) = $conf =~ m{^\s*include (\S+)/http\.d/}m;
        return '' unless defined $run && defined $etc;
        return $conf =~ s/\Q$run\E/RUN/gr =~ s/\Q$etc\E/ETC/gr;
    };
    is($dirs->(slurp($empty_path) // ''), $dirs->($default_conf),
       'is the same as unset');

    # a template of one's own without the blocks: refused, not ignored
    my $old = conf_dir();
    my $text = slurp("$old/nginx.conf.template");
    $text =~ s/^#@.*\n//mg;
    spew("$old/nginx.conf.template", $text);
    my ($old_rc, $old_err, $old_path) = render({ %required,
        FRONTEND_UPSTREAM => 'fe:9002' }, conf_dir => $old);
    isnt($old_rc, 0, 'FRONTEND_UPSTREAM with a template that has no blocks');
    like($old_err, qr/FRONTEND_UPSTREAM is set, but .* has no '#\@with FRONTEND_UPSTREAM' block/,
         'refused, naming the variable');
    ok(!-e $old_path, 'and nothing written');
}

{
    my ($rc, $err) = render({});
    isnt($rc, 0, 'refused without the addresses');
    like($err, qr/not set: GMS_UPSTREAM SEARCH_UPSTREAM REDIS_ADDRESS/,
         'naming all three');

    my %no_salt = %required;
    delete $no_salt{GMS_TOKEN_SALT};
    ($rc, $err) = render(\%no_salt);
    isnt($rc, 0, 'refused without a salt');
    like($err, qr/GMS_TOKEN_SALT\ or\ GMS_TOKEN_SALT_FILE\ must\ be\ set\ .*
                  DATAHUB_TOKEN_SERVICE_SALT.*
                  ohDVbJBvHHVJh9S\/UA4BYF9COuNnqqVhr9MLKEGXk1O=/x,
         "naming GMS's setting and its default before 1.5");

    my @bad = (
        [ LISTEN_PORT => '70000', qr/LISTEN_PORT: '70000' is not a port/ ],
        [ LISTEN_PORT => '80;', qr/LISTEN_PORT: '80;' is not a port/ ],
        [ GMS_UPSTREAM => 'gms:8080; include /etc/passwd',
          qr/GMS_UPSTREAM: 'gms:8080;' is neither host:port/ ],
        [ SEARCH_UPSTREAM => 'search', qr/SEARCH_UPSTREAM: 'search' is neither/ ],
        [ FRONTEND_UPSTREAM => 'datahub-frontend-react',
          qr/FRONTEND_UPSTREAM: 'datahub-frontend-react' is neither/ ],
        [ FRONTEND_UPSTREAM => 'fe:9002; include /etc/passwd',
          qr/FRONTEND_UPSTREAM: 'fe:9002;' is neither host:port/ ],
        [ REDIS_ADDRESS => '[::1', qr/REDIS_ADDRESS: '\[::1' is neither/ ],
        [ REDIS_ADDRESS => '127.0.0.1:0', qr/REDIS_ADDRESS: '127\.0\.0\.1:0' is neither/ ],
        [ REDIS_DB => 'one', qr/REDIS_DB: 'one' is not a number/ ],
        [ REDIS_TIMEOUT => '1s;', qr/REDIS_TIMEOUT: '1s;' is not a time/ ],
        [ GMS_TOKEN_CACHE => 'zone=z:1m; x', qr/GMS_TOKEN_CACHE: 'zone=z:1m; x'/ ],
        [ WORKER_PROCESSES => '0', qr/WORKER_PROCESSES: '0' is neither/ ],
        [ METRICS_ALLOW => 'any', qr/METRICS_ALLOW: 'any' is not an address/ ],
        [ GMS_TOKEN_SALT_FILE => '/nonexistent/salt',
          qr/GMS_TOKEN_SALT_FILE: cannot read '\/nonexistent\/salt'/ ],
    );

    for my $case (@bad) {
        my ($name, $value, $error) = @$case;
        refused({ $name => $value }, $error);
    }

    my $dir = tempdir();
    spew("$dir/salt", 'x');
    ($rc, $err) = render({ %required, GMS_TOKEN_SALT => 'x',
                           GMS_TOKEN_SALT_FILE => "$dir/salt" });
    isnt($rc, 0, 'refused: both GMS_TOKEN_SALT and GMS_TOKEN_SALT_FILE');
    like($err, qr/GMS_TOKEN_SALT and GMS_TOKEN_SALT_FILE are both set/,
         'naming both');
}

# What the variables of Redis's TLS, Sentinel, names, keys, the token's
# source and preflights refuse: the variables, and the one line's pattern.
{
    my $dir = tempdir();
    spew("$dir/key", "$KEY\n");
    my $no_resolver = { GMS_EDGE_RESOLV_CONF => "$NET/empty" };

    my @refusals = (
        [ { REDIS_TLS => 'yes' },
          qr/^gms-edge: REDIS_TLS: 'yes' is neither on nor off$/ ],
        (map { [ { $_ => $ca },
                 qr/^gms-edge: $_: for TLS only, and REDIS_TLS is not on$/ ] }
             qw(REDIS_SSL_TRUSTED_CERTIFICATE REDIS_SSL_CERTIFICATE
                REDIS_SSL_CERTIFICATE_KEY)),
        [ { REDIS_SSL_NAME => 'redis.test' },
          qr/^gms-edge: REDIS_SSL_NAME: for TLS only/ ],
        [ { REDIS_TLS => 'off', REDIS_SSL_VERIFY => 'off' },
          qr/^gms-edge: REDIS_SSL_VERIFY: for TLS only/ ],
        [ { %tls, REDIS_SSL_TRUSTED_CERTIFICATE => 'ca.crt' },
          qr/^gms-edge: REDIS_SSL_TRUSTED_CERTIFICATE: 'ca\.crt' is not an absolute path$/ ],
        [ { %tls, REDIS_SSL_TRUSTED_CERTIFICATE => '/nonexistent/ca.crt' },
          qr/^gms-edge: REDIS_SSL_TRUSTED_CERTIFICATE: cannot read '\/nonexistent\/ca\.crt'$/ ],
        [ { %tls, REDIS_SSL_TRUSTED_CERTIFICATE => "$ca; include /etc/passwd" },
          qr/^gms-edge: REDIS_SSL_TRUSTED_CERTIFICATE: '.*; include \/etc\/passwd': letters/ ],
        [ { %tls, REDIS_SSL_CERTIFICATE => $certs->{client_cert} },
          qr/^gms-edge: REDIS_SSL_CERTIFICATE is set without REDIS_SSL_CERTIFICATE_KEY$/ ],
        [ { %tls, REDIS_SSL_CERTIFICATE_KEY => $certs->{client_key} },
          qr/^gms-edge: REDIS_SSL_CERTIFICATE_KEY is set without REDIS_SSL_CERTIFICATE$/ ],
        [ { %tls, REDIS_SSL_CERTIFICATE => $certs->{client_cert},
            REDIS_SSL_CERTIFICATE_KEY => '/nonexistent/client.key' },
          qr/^gms-edge: REDIS_SSL_CERTIFICATE_KEY: cannot read/ ],
        [ { %tls, REDIS_SSL_VERIFY => 'maybe' },
          qr/^gms-edge: REDIS_SSL_VERIFY: 'maybe' is neither on nor off$/ ],
        [ { %tls, REDIS_SSL_NAME => 'redis.test; x' },
          qr/^gms-edge: REDIS_SSL_NAME: 'redis\.test; x' is neither a host name/ ],

        [ { REDIS_SENTINELS => '127.0.0.1:26379', REDIS_SENTINEL_MASTER => 'gms' },
          qr/^gms-edge: REDIS_ADDRESS and REDIS_SENTINELS are both set/ ],
        [ { %sentinels, REDIS_SENTINEL_MASTER => undef },
          qr/^gms-edge: REDIS_SENTINEL_MASTER: not set: the name the Sentinels know/ ],
        [ { %sentinels, REDIS_SENTINEL_MASTER => 'my master' },
          qr/^gms-edge: REDIS_SENTINEL_MASTER: 'my master': letters, digits and \._- please$/ ],
        [ { %sentinels, REDIS_SENTINEL_MASTER => 'gms;' },
          qr/^gms-edge: REDIS_SENTINEL_MASTER: 'gms;'/ ],
        [ { %sentinels, REDIS_SENTINELS => 'sentinel' },
          qr/^gms-edge: REDIS_SENTINELS: 'sentinel' is not host:port$/ ],
        [ { %sentinels, REDIS_SENTINELS => '127.0.0.1:26379 s:2;' },
          qr/^gms-edge: REDIS_SENTINELS: 's:2;' is not host:port$/ ],
        [ { %sentinels, REDIS_SENTINELS => 'unix:/run/sentinel.sock' },
          qr/^gms-edge: REDIS_SENTINELS: 'unix:\/run\/sentinel\.sock': a Sentinel is host:port/ ],
        [ { %sentinels, REDIS_SENTINELS => '   ' },
          qr/^gms-edge: REDIS_SENTINELS is empty$/ ],
        (map { [ { $_ => 'x' },
                 qr/^gms-edge: $_: for Sentinel only, and REDIS_SENTINELS is not set/ ] }
             qw(REDIS_SENTINEL_MASTER REDIS_REPLICA GMS_REDIS_SENTINEL_PASSWORD)),
        [ { GMS_REDIS_SENTINEL_PASSWORD_FILE => "$files/sentinel-password" },
          qr/^gms-edge: GMS_REDIS_SENTINEL_PASSWORD_FILE: for Sentinel only/ ],
        [ { %sentinels, REDIS_REPLICA => 'always' },
          qr/^gms-edge: REDIS_REPLICA: 'always' is neither prefer nor off$/ ],
        [ { %sentinels, GMS_REDIS_SENTINEL_PASSWORD => 'x',
            GMS_REDIS_SENTINEL_PASSWORD_FILE => "$files/sentinel-password" },
          qr/^gms-edge: GMS_REDIS_SENTINEL_PASSWORD and GMS_REDIS_SENTINEL_PASSWORD_FILE are both set$/ ],
        [ { %sentinels, GMS_REDIS_SENTINEL_PASSWORD_FILE => '/nonexistent/pw' },
          qr/^gms-edge: GMS_REDIS_SENTINEL_PASSWORD_FILE: cannot read '\/nonexistent\/pw'$/ ],
        [ { %sentinels, %tls },
          qr/^gms-edge: REDIS_SSL_NAME: required with REDIS_SENTINELS and REDIS_TLS=on/ ],

        [ { %$no_resolver, REDIS_ADDRESS => 'redis.invalid:6379' },
          qr/^gms-edge: REDIS_ADDRESS: 'redis\.invalid' is a host name for nginx's resolver, and there is none: set RESOLVER/ ],
        [ { %$no_resolver, %sentinels,
            REDIS_SENTINELS => 'localhost:26379 sentinel.invalid:26379' },
          qr/^gms-edge: REDIS_SENTINELS: 'sentinel\.invalid' is a host name for nginx's resolver/ ],
        [ { RESOLVER => '127.0.0.1; include /etc/passwd' },
          qr/^gms-edge: RESOLVER: '127\.0\.0\.1; include \/etc\/passwd': the parameters of nginx's resolver/ ],
        [ { RESOLVER => 'valid=10s ipv6=off' },
          qr/^gms-edge: RESOLVER: 'valid=10s ipv6=off' names no server's address$/ ],

        [ { GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE => "$dir/key" },
          qr/^gms-edge: GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE is set without GMS_TOKEN_SIGNING_KEY_FILE/ ],
        [ { GMS_TOKEN_SIGNING_KEY_FILE => "$dir/key",
            GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE => 'old-key' },
          qr/^gms-edge: GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE: 'old-key' is not an absolute path$/ ],
        [ { GMS_TOKEN_SIGNING_KEY_FILE => "$dir/key",
            GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE => '/nonexistent/old-key' },
          qr/^gms-edge: GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE: cannot read/ ],

        (map { [ { GMS_TOKEN_SOURCE => $_ },
                 qr/^gms-edge: GMS_TOKEN_SOURCE: '\Q$_\E' is not an nginx variable such as \$cookie_gms_token/ ] }
             'cookie_gms_token', '$', '$cookie-gms', '$cookie_x;', '${cookie_x}',
             '$http_a $http_b', '$http_a"'),
        [ { GMS_TOKEN_PREFLIGHT => 'off' },
          qr/^gms-edge: GMS_TOKEN_PREFLIGHT: 'off' is neither check nor pass$/ ],
        (map { [ { GMS_DATAHUB_VERSION => $_ },
                 qr/^gms-edge: GMS_DATAHUB_VERSION: '\Q$_\E' is not a DataHub release such as 1\.4\.0$/ ] }
             'v1.4.0', '1', '1.4.', '.1.4', '1..4', '1.7.0.1.1', '1.4.0;',
             'latest'),
        [ { GMS_TOKEN_UNKNOWN_SIGNED => 'yes' },
          qr/^gms-edge: GMS_TOKEN_UNKNOWN_SIGNED: 'yes' is neither pass nor refuse$/ ],
        [ { GMS_TOKEN_UNKNOWN_SIGNED => 'pass' },
          qr/^gms-edge: GMS_TOKEN_UNKNOWN_SIGNED=pass needs GMS_TOKEN_SIGNING_KEY_FILE and a cache \(GMS_TOKEN_CACHE not off\)$/ ],
        [ { GMS_TOKEN_UNKNOWN_SIGNED => 'pass', GMS_TOKEN_CACHE => 'off',
            GMS_TOKEN_SIGNING_KEY_FILE => "$files/signing-key" },
          qr/^gms-edge: GMS_TOKEN_UNKNOWN_SIGNED=pass needs GMS_TOKEN_SIGNING_KEY_FILE and a cache \(GMS_TOKEN_CACHE not off\)$/ ],
    );

    refused(@$_) for @refusals;
}


# --- the entry point's nginx, end to end ----------------------------------

my $salt = qq{s"a\\l\$t; {x} 'y'};         # s"a\l$t; {x} 'y'
my $password = 'pa$s;{w}rd';
my $actor = 'urn:li:corpuser:alice';

my $redis = GmsTest::Redis->start(password => $password);
my $gms = GmsTest::Stub->echo;
my $search = GmsTest::Stub->start(handler => sub {
    my ($req) = @_;
    # a cluster trying to send the edge to GMS: the template ignores it
    return [200, ['Content-Type' => 'application/json',
                  'X-Accel-Redirect' => '/entities/urn:li:corpuser:x'],
            '{"completed":false,"task":{"node":"redirecting","id":1,'
            . '"type":"transport","action":"indices:data/write/reindex",'
            . '"start_time_in_millis":1,"cancellable":true,'
            . '"running_time_in_nanos":1}}']
        if $req->{path} eq '/_tasks/redirecting:1';
    return [404, ['Content-Type' => 'application/json'], '{"status":404}']
        unless $req->{path} eq '/_tasks/edgeNode:42';
    return [200, ['Content-Type' => 'application/json'],
            '{"completed":true,"task":{"node":"edgeNode","id":42,'
            . '"type":"transport","action":"indices:data/write/reindex",'
            . '"start_time_in_millis":1,"cancellable":true,'
            . '"status":{"total":3},"running_time_in_nanos":9}}'];
});

$redis->cmd(SELECT => 5);
my $id = GmsTest::sha256_b64("alice-token$salt");
$redis->cmd(HSET => "edge:token:$id", actor => $actor, type => 'PERSONAL');
$redis->cmd(SADD => "edge:actor:$actor", 'GET_ES_TASK_STATUS_PRIVILEGE');
$redis->cmd(HSET => 'edge:token:' . GmsTest::sha256_b64('unsalted-token'),
            actor => $actor);

my $port = GmsTest::free_port();
my $extra_port = GmsTest::free_port();

my $secrets = tempdir();
spew("$secrets/salt", "$salt\n");            # one trailing newline dropped
spew("$secrets/password", $password);

my $conf_dir = conf_dir(
    module => 1,
    'http.d' => "server { listen 127.0.0.1:$extra_port; return 204; }\n",
    'server.d' => "location = /from-server-d { gms_token_auth off; return 204; }\n",
);
my $run_dir = tempdir();
my $logs;

# The container's command with $env, besides PATH, directories of its own,
# one worker and a free port unless $env gives them: { pid, port, logs,
# run } once /healthz answers, or undef.
sub start_edge {
    my ($env) = @_;

    my %env = (PATH => $PATH,
               GMS_EDGE_CONF_DIR => conf_dir(module => 1),
               GMS_EDGE_RUN_DIR => tempdir(),
               LISTEN_PORT => GmsTest::free_port(),
               WORKER_PROCESSES => 1,
               %$env);
    my $logs = tempdir();

    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        %ENV = %env;
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$logs/stdout";
        open STDERR, '>', "$logs/stderr";
        exec '/bin/sh', $ENTRY, 'gms-edge' or POSIX::_exit(127);
    }

    my $up = GmsTest::wait_until(sub {
        return 0 if waitpid($pid, WNOHANG) != 0;
        my $res = GmsTest::HTTP::request($env{LISTEN_PORT}, GET => '/healthz');
        return defined $res->{status} && $res->{status} == 200;
    }, 10);
    diag("nginx did not start:\n" . (slurp("$logs/stderr") // '')) unless $up;

    return $up ? { pid => $pid, port => $env{LISTEN_PORT}, logs => $logs,
                   run => $env{GMS_EDGE_RUN_DIR} } : undef;
}

# SIGQUIT, as docker stop sends; the alerts and crashes on its stderr
sub stop_edge {
    my ($edge) = @_;
    kill 'QUIT', $edge->{pid};
    GmsTest::wait_until(sub { waitpid($edge->{pid}, WNOHANG) == $edge->{pid} },
                        10)
        or kill 'KILL', $edge->{pid};
    return grep { /\[(?:alert|emerg|crit)\]|exited on signal/ }
           split /\n/, slurp("$edge->{logs}/stderr") // '';
}

my %edge_env = (
    PATH => $PATH,
    GMS_EDGE_CONF_DIR => $conf_dir,
    GMS_EDGE_RUN_DIR => $run_dir,
    LISTEN_PORT => $port,
    GMS_UPSTREAM => '127.0.0.1:' . $gms->port,
    SEARCH_UPSTREAM => '127.0.0.1:' . $search->port,
    # from the hosts file, where localhost's ::1 comes first (the Redis
    # listens on 127.0.0.1 only); no nameserver is needed then
    REDIS_ADDRESS => 'localhost:' . $redis->port,
    GMS_EDGE_HOSTS => "$NET/hosts",
    GMS_EDGE_RESOLV_CONF => "$NET/empty",
    GMS_REDIS_PASSWORD_FILE => "$secrets/password",
    REDIS_DB => 5,
    GMS_TOKEN_KEY_PREFIX => 'edge:',
    GMS_TOKEN_SALT_FILE => "$secrets/salt",
    WORKER_PROCESSES => 2,
);

# the container's command: 'gms-edge' renders, then execs nginx as PID 1
# would run (stdout the access log, stderr the error log)
my $started = start_edge(\%edge_env);
my $up = defined $started;
my $edge = $up ? $started->{pid} : 0;
$logs = $started->{logs} if $up;

sub get {
    my ($path, %headers) = @_;
    return GmsTest::HTTP::request($port, GET => $path, \%headers);
}

ok($up, 'the entry point started nginx')
    or BAIL_OUT("nginx did not start:\n" . (slurp("$logs/stderr") // ''));

like(slurp("$logs/stderr"),
     qr/^gms-edge: REDIS_ADDRESS: localhost is 127\.0\.0\.1 \(from \Q$NET\E\/hosts\)$/m,
     'REDIS_ADDRESS: localhost from the hosts file, its IPv4 address');
is((stat "$run_dir/nginx.conf")[2] & 0777, 0600, 'rendered owner-only');
{
    # files are named, not inlined: nginx reads them (secret files' rule)
    my $rendered = slurp("$run_dir/nginx.conf");
    like($rendered, qr/\spassword_file=\Q$secrets\E\/password[\s;]/,
         'GMS_REDIS_PASSWORD_FILE: the file named (password_file=)');
    like($rendered, qr/^\s*gms_token_salt_file \Q$secrets\E\/salt;$/m,
         'GMS_TOKEN_SALT_FILE: the file named (gms_token_salt_file)');
    unlike($rendered, qr/\Q$password\E/,
           'the password is not in the rendered configuration');
    unlike($rendered, qr/\Q$salt\E/,
           'nor the salt');
}

{
    my $res = get('/healthz');
    is($res->{body}, "ok\n", '/healthz answered by nginx');

    local $ENV{LISTEN_PORT} = $port;
    is(system('/bin/bash', $HEALTH), 0, 'healthcheck: healthy');
    $ENV{LISTEN_PORT} = $extra_port;            # answers 204, not 200
    isnt(system("/bin/bash $HEALTH 2>/dev/null"), 0,
         'healthcheck: another status is unhealthy');
    $ENV{LISTEN_PORT} = GmsTest::free_port();   # nothing there
    isnt(system("/bin/bash $HEALTH 2>/dev/null"), 0,
         'healthcheck: nothing listening is unhealthy');
}

{
    my $entity = '/entities/urn%3Ali%3Acorpuser%3Aalice';

    my $res = get($entity);
    is($res->{status}, 401, 'no token: 401');
    like($res->{body}, qr/Missing access token/, 'in the GMS error shape');

    $res = get($entity, Authorization => 'Bearer unsalted-token');
    is($res->{status}, 401, 'a token cached without the salt: 401');

    $gms->clear_requests;
    $res = get($entity, Authorization => "Bearer alice-token",
               'X-DataHub-Actor' => 'urn:li:corpuser:admin');
    # the salt, the password, the db and the prefix all took effect, or
    # this could not be 200
    is($res->{status}, 200, 'valid token: 200') or diag($res->{body});
    my $saw = $gms->requests->[-1] // {};
    is($saw->{uri}, $entity, 'the request line unchanged');
    is($saw->{header}{'x-datahub-actor'}, $actor, "the token's user for GMS");
    is($saw->{header}{authorization}, 'Bearer alice-token', 'token forwarded');

    $res = get("/api/gms$entity", Authorization => 'Bearer alice-token');
    is($gms->requests->[-1]{uri}, $entity, '/api/gms/ stripped');

    $res = GmsTest::HTTP::request($port, POST =>
        '/operations?action=getEsTaskStatus',
        { Authorization => 'Bearer alice-token',
          'Content-Type' => 'application/json' },
        '{"task":"edgeNode:42"}');
    is($res->{status}, 200, 'getEsTaskStatus: 200');
    like($res->{body}, qr/\\"taskId\\":\\"edgeNode:42\\"/,
         'from SEARCH_UPSTREAM');

    $gms->clear_requests;
    $res = GmsTest::HTTP::request($port, POST =>
        '/operations?action=getEsTaskStatus',
        { Authorization => 'Bearer alice-token',
          'Content-Type' => 'application/json' },
        '{"task":"redirecting:1"}');
    like($res->{body}, qr/\\"taskId\\":\\"redirecting:1\\"/,
         "the cluster's X-Accel-Redirect ignored: its answer is the task");
    is_deeply([map { $_->{uri} } @{ $gms->requests }], [],
              'and GMS saw nothing');

    # GMS's open paths, pinned: crafted targets that nginx maps to an
    # open location reach GMS as that location's own path, never as the
    # raw target, and no method but GET gets through
    my @open = (
        [GET => '/health', '/health'],
        [GET => '/config', '/config'],
        [GET => '/config/search/export', '/config/search/export'],
        [GET => '/schema-registry/subjects', '/schema-registry/subjects'],
        [GET => '/openapi/up/', '/openapi/up/'],
        [GET => '/entities/x/%2e%2e/%2e%2e/health', '/health'],
        [GET => '/api/gms/entities/x%2F..%2F..%2F..%2F..%2Fhealth',
         '/health'],
        [GET => '/schema-registry/x/%2e%2e/y', '/schema-registry/y'],
        [POST => '/aspects%2F..%2Fhealth?action=ingestProposal', undef],
        [POST => '/health', undef],
        [DELETE => '/config', undef],
    );
    for my $case (@open) {
        my ($method, $target, $gms_path) = @$case;
        $gms->clear_requests;
        my $r = GmsTest::HTTP::request($port, $method => $target,
                                       { 'Content-Type' => 'application/json' },
                                       $method eq 'POST' ? '{"proposal":{}}'
                                                         : undef);
        my @saw = map { $_->{uri} =~ s/\?.*//r } @{ $gms->requests };
        if (defined $gms_path) {
            is($r->{status}, 200, "$method $target: open");
            is_deeply(\@saw, [$gms_path], "GMS saw only $gms_path");
        } else {
            is($r->{status}, 403, "$method $target: refused");
            is_deeply(\@saw, [], 'GMS saw nothing');
        }
    }

    $res = get('/metrics');
    is($res->{status}, 200, '/metrics from 127.0.0.1');
    like($res->{body}, qr/^gms_token_requests_total\{result="ok"\} [1-9]/m,
         'counting');

    is(get('/from-server-d')->{status}, 204, 'server.d included');
    is(GmsTest::HTTP::request($extra_port, GET => '/')->{status}, 204,
       'http.d included');
}

SKIP: {
    skip 'workers as www-data: not root', 1 unless $as_root;

    my @workers;
    for my $stat (glob '/proc/[0-9]*/status') {
        my $text = slurp($stat) // next;
        my ($ppid) = $text =~ /^PPid:\s*(\d+)/m;
        next unless defined $ppid && $ppid == $edge;
        my ($uid) = $text =~ /^Uid:\s*(\d+)/m;
        push @workers, $uid;
    }
    is_deeply(\@workers, [ (scalar getpwnam('www-data')) x 2 ],
              'two workers, as www-data');
}

# the master is the entry point's process (exec): SIGQUIT, as docker stop
# sends (STOPSIGNAL), ends it gracefully
kill 'QUIT', $edge;
my $gone = GmsTest::wait_until(sub { waitpid($edge, WNOHANG) == $edge }, 10);
ok($gone, 'SIGQUIT: nginx exits') or kill 'KILL', $edge;
is($?, 0, 'with status 0') if $gone;

like(slurp("$logs/stdout"),
     qr/"GET \/entities\/urn%3Ali%3Acorpuser%3Aalice HTTP\/1\.1" 200 token=\Q$id\E result=ok type=PERSONAL actor="\Q$actor\E"/,
     'the access log on stdout');
my @bad = grep { /\[(?:alert|emerg|crit)\]|exited on signal|open socket .* left/ }
          split /\n/, slurp("$logs/stderr") // '';
is_deeply(\@bad, [], 'no alerts on stderr');

# --- GMS_DATAHUB_VERSION: the open paths of that GMS, no others -----------

{
    my @common = (GMS_UPSTREAM => '127.0.0.1:' . $gms->port,
                  SEARCH_UPSTREAM => '127.0.0.1:' . $search->port,
                  REDIS_ADDRESS => '127.0.0.1:' . $redis->port,
                  GMS_EDGE_RESOLV_CONF => "$NET/empty",
                  GMS_EDGE_HOSTS => "$NET/hosts", GMS_TOKEN_SALT => '');
    my $old = start_edge({ @common });
    my $new = start_edge({ @common, GMS_DATAHUB_VERSION => '1.5.0' });

    # (application.yaml's authentication.excludedPaths at v1.5.0)
    for my $path ('/health/live', '/actuator/prometheus',
                  '/openapi/operations/dev/featureFlags', '/public-iceberg/v1/config')
    {
        $gms->clear_requests;
        my $r = GmsTest::HTTP::request($old->{port}, GET => $path);
        is($r->{status}, 401, "0.13.0 (the default): $path needs a token");
        is_deeply([ map { $_->{uri} } @{ $gms->requests } ], [],
                  '... GMS saw nothing');
        $r = GmsTest::HTTP::request($new->{port}, GET => $path);
        is($r->{status}, 200, "GMS_DATAHUB_VERSION=1.5.0: $path open");
        is_deeply([ map { $_->{uri} } @{ $gms->requests } ], [ $path ],
                  "... GMS saw $path");
    }
    is_deeply([ stop_edge($old), stop_edge($new) ], [],
              'both stopped, no alerts');
}

# --- more of the entry point's nginx: TLS, names, keys, the source ---------

SKIP: {
    my $tls_redis = GmsTest::Redis->start(tls => $certs);
    my $tls_port = $tls_redis->tls_port;
    my $dns = GmsTest::DNS->start(names => { 'redis.test' => '127.0.0.1' });

    my $pat = GmsTest::JWT::personal($KEY, 'alice');
    my $old_session = GmsTest::JWT::session($OLD_KEY, 'bob');
    my $forged = GmsTest::JWT::session('a-key-GMS-never-had-0123456789abcdef',
                                       'mallory');
    $tls_redis->cmd(HSET => 'gms:token:' . GmsTest::sha256_b64($pat),
                    actor => $actor, type => 'PERSONAL');

    my $edge = start_edge({
        GMS_UPSTREAM => '127.0.0.1:' . $gms->port,
        SEARCH_UPSTREAM => '127.0.0.1:' . $search->port,
        REDIS_ADDRESS => "redis.test:$tls_port",
        REDIS_TLS => 'on',
        REDIS_SSL_TRUSTED_CERTIFICATE => $certs->{ca},
        RESOLVER => '127.0.0.1:' . $dns->port . ' valid=1s ipv6=off',
        GMS_EDGE_RESOLV_CONF => "$NET/empty",
        GMS_EDGE_HOSTS => "$NET/hosts",
        GMS_TOKEN_SALT => '',
        GMS_TOKEN_SIGNING_KEY_FILE => "$files/signing-key",
        GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE => "$files/signing-key-previous",
        GMS_TOKEN_SOURCE => '$http_x_gms_token',
        GMS_TOKEN_PREFLIGHT => 'pass',
    });
    ok($edge, 'Redis over TLS by name, two keys, a header of its own: '
              . 'the entry point started nginx')
        or skip 'nginx did not start', 10;

    like(slurp("$edge->{run}/nginx.conf") // '',
         qr/^\s*gms_token_redis redis\.test:$tls_port tls;$/m,
         'the name left to nginx');

    my $get = sub {
        return GmsTest::HTTP::request($edge->{port}, GET => '/entities/x',
                                      {@_})->{status} // 0;
    };

    $gms->clear_requests;
    is($get->('X-GMS-Token' => $pat), 200,
       'a personal token in X-GMS-Token, found in Redis over TLS: 200');
    is(($gms->requests->[-1] // {})->{header}{authorization}, "Bearer $pat",
       'GMS gets it as Authorization');
    cmp_ok($dns->queries('redis.test'), '>=', 1,
           'redis.test asked of the resolver');
    is($get->('X-GMS-Token' => $old_session), 200,
       'a session token signed with the previous key: 200');
    is($get->('X-GMS-Token' => $forged), 401, 'one signed with another: 401');
    is($get->(Authorization => "Bearer $pat"), 401,
       'Authorization not looked at: 401');

    $gms->clear_requests;
    my $res = GmsTest::HTTP::request($edge->{port}, OPTIONS => '/entities/x',
        { Origin => 'https://datahub.example.com',
          'Access-Control-Request-Method' => 'GET' });
    is($res->{status}, 200, 'a CORS preflight: through without a token');
    is(scalar @{ $gms->requests }, 1, 'to GMS');
    is(GmsTest::HTTP::request($edge->{port}, OPTIONS => '/entities/x')
           ->{status}, 401, 'any other OPTIONS: 401');

    is_deeply([stop_edge($edge)], [], 'no alerts on stderr');
}

SKIP: {
    my $master = GmsTest::Redis->start(password => 'master-pw');
    my $token = 'token-behind-a-sentinel';
    $master->cmd(HSET => 'gms:token:' . GmsTest::sha256_b64($token),
                 actor => $actor, type => 'PERSONAL');
    my $sentinel = GmsTest::Sentinel->fake(master => $master->port);
    my ($sentinel_port) = $sentinel->addresses =~ /:(\d+)$/;

    my $edge = start_edge({
        GMS_UPSTREAM => '127.0.0.1:' . $gms->port,
        SEARCH_UPSTREAM => '127.0.0.1:' . $search->port,
        REDIS_SENTINELS => "sentinel.local.test:$sentinel_port",
        REDIS_SENTINEL_MASTER => 'gms',
        GMS_REDIS_PASSWORD => 'master-pw',
        GMS_EDGE_RESOLV_CONF => "$NET/empty",
        GMS_EDGE_HOSTS => "$NET/hosts",
        GMS_TOKEN_SALT => '',
    });
    ok($edge, 'a Sentinel named in the hosts file: the entry point started '
              . 'nginx')
        or skip 'nginx did not start', 4;

    like(slurp("$edge->{run}/nginx.conf") // '',
         qr/^\s*\Qgms_token_redis_sentinel 127.0.0.1:$sentinel_port master=gms "password=master-pw";\E$/m,
         'gms_token_redis_sentinel');
    my $status = sub {
        return GmsTest::HTTP::request($edge->{port}, GET => '/entities/x',
                   { Authorization => "Bearer $token" })->{status} // 0;
    };
    ok(GmsTest::wait_until(sub { $status->() == 200 }, 5),
       'a token in the master the Sentinel names: 200');
    ok((grep { /^SENTINEL get-master-addr-by-name gms$/i }
        $sentinel->commands), 'the Sentinel asked for master gms');

    is_deeply([stop_edge($edge)], [], 'no alerts on stderr');
}

SKIP: {
    skip 'unprivileged run: not root', 3 unless $as_root;
    skip 'setpriv not found', 3 unless -x '/usr/bin/setpriv';

    # 'docker run --user www-data': no user directive, nginx -t passes
    my $run = tempdir();
    my ($uid, $gid) = (getpwnam('www-data'))[2, 3];
    chown $uid, $gid, $run;

    # www-data reads the entry point and the module from copies: the
    # clone may be where only root can read (root's home directory), as
    # in the image they are under /usr
    my $shared = tempdir();
    spew("$shared/entrypoint.sh", slurp($ENTRY));
    spew("$shared/ngx_http_gms_module.so", slurp($MODULE));
    chmod 0755, "$shared/entrypoint.sh";
    chmod 0644, "$shared/ngx_http_gms_module.so";

    my $www_conf = tempdir();
    spew("$www_conf/nginx.conf.template",
         slurp($TEMPLATE) =~ s{^load_module\s+\S+;}
                             {load_module $shared/ngx_http_gms_module.so;}mr);
    for my $sub (qw(http.d server.d open-paths)) {
        mkdir "$www_conf/$sub" or die "$www_conf/$sub: $!\n";
        chmod 0755, "$www_conf/$sub";
    }
    for my $file (map { s{.*/}{}r } glob "$OPEN_PATHS/*.conf") {
        spew("$www_conf/open-paths/$file", slurp("$OPEN_PATHS/$file"));
        chmod 0644, "$www_conf/open-paths/$file";
    }
    chmod 0644, "$www_conf/nginx.conf.template";

    my %env = (%required, GMS_EDGE_CONF_DIR => $www_conf,
               GMS_EDGE_RUN_DIR => $run, LISTEN_PORT => GmsTest::free_port(),
               PATH => $edge_env{PATH});

    # nginx opens /dev/stdout as www-data: as in a container, where the
    # runtime gives the process's user its stdout and stderr
    spew("$logs/unprivileged", '');
    chown $uid, $gid, "$logs/unprivileged";

    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        %ENV = %env;
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', "$logs/unprivileged";
        open STDERR, '>&', \*STDOUT;
        exec '/usr/bin/setpriv', '--reuid=www-data', '--regid=www-data',
             '--clear-groups', '/bin/sh', "$shared/entrypoint.sh",
             'gms-edge', '-t'
            or POSIX::_exit(127);
    }
    waitpid $pid, 0;

    is($? >> 8, 0, 'as www-data: gms-edge -t')
        or diag(slurp("$logs/unprivileged"));
    my $c = slurp("$run/nginx.conf") // '';
    unlike($c, qr/^\s*user\b/m, 'without a user directive');
    like($c, qr/^# not started as root: the workers run as uid $uid$/m,
         'saying so');
}

# --- the run directory by default ---------------------------------------------

# The entry point with /run/gms-edge and /tmp/gms-edge moved under a
# directory of the test's own, so that the host's are never touched:
# gms-edge-render without GMS_EDGE_RUN_DIR prints where it wrote.
{
    my $base = tempdir();
    my $script = slurp($ENTRY);
    my $moved = ($script =~ s{/run/gms-edge\b}{$base/run/gms-edge}g)
                && ($script =~ s{/tmp/gms-edge\b}{$base/tmp/gms-edge}g);
    ok($moved, 'the entry point names /run/gms-edge and /tmp/gms-edge');
    spew("$base/entrypoint.sh", $script);
    chmod 0755, "$base/entrypoint.sh";
    mkdir "$base/$_" or die "$base/$_: $!\n" for qw(run tmp);
    chmod 0755, "$base/run";
    chmod 01777, "$base/tmp";
    my $conf = conf_dir();
    chmod 0644, "$conf/nginx.conf.template";

    my $www = getpwnam('www-data');
    my $can_switch = $as_root && -x '/usr/bin/setpriv' && defined $www;

    # the file it rendered, as this process's user or (as root) www-data
    my $rendered = sub {
        my ($as_www) = @_;
        my $dir = tempdir();
        my $pid = fork // die "fork: $!\n";
        if ($pid == 0) {
            %ENV = (%required, %net, PATH => $PATH,
                    GMS_EDGE_CONF_DIR => $conf);
            open STDIN, '<', '/dev/null';
            open STDOUT, '>', "$dir/out";
            open STDERR, '>', "$dir/err";
            my @as = $as_www ? ('/usr/bin/setpriv', '--reuid=www-data',
                                '--regid=www-data', '--clear-groups') : ();
            exec @as, '/bin/sh', "$base/entrypoint.sh", 'gms-edge-render'
                or POSIX::_exit(127);
        }
        waitpid $pid, 0;
        diag(slurp("$dir/err")) if $?;
        return slurp("$dir/out") // '';
    };

    is($rendered->(0), "$base/run/gms-edge/nginx.conf\n",
       '/run/gms-edge, created when it is not there');
    is($rendered->(0), "$base/run/gms-edge/nginx.conf\n",
       '/run/gms-edge when it is there and writable');

    SKIP: {
        skip 'another user: needs root and setpriv', 2 unless $can_switch;

        # the image's: the directory belongs to its user (uid 33)
        chown $www, $www, "$base/run/gms-edge";
        is($rendered->(1), "$base/run/gms-edge/nginx.conf\n",
           'www-data, its own /run/gms-edge: there');

        # docker run --user another uid: /run/gms-edge is not its
        chown 0, 0, "$base/run/gms-edge";
        is($rendered->(1), "$base/tmp/gms-edge/nginx.conf\n",
           'www-data, /run/gms-edge not writable: /tmp/gms-edge');
    }
    SKIP: {
        skip 'root writes anywhere', 1 if $as_root;
        chmod 0555, "$base/run/gms-edge";
        is($rendered->(0), "$base/tmp/gms-edge/nginx.conf\n",
           '/run/gms-edge not writable: /tmp/gms-edge');
        chmod 0755, "$base/run/gms-edge";
    }
}

done_testing();

#!/usr/bin/perl

# The container's configuration, without Docker: docker/entrypoint.sh
# renders conf-examples/gms-edge.conf.template from the environment exactly
# as at the container's start, the result passes 'nginx -t' with the built
# module, and the entry point's own 'exec nginx' serves it in front of a
# real redis-server and stand-ins: 401s, a 200 with a salt and a Redis
# password full of what nginx's parser treats specially, getEsTaskStatus,
# /metrics, the includes, the health check of docker/healthcheck.sh.  Bad
# settings are refused by the variable's name.  t/docker/smoke.sh checks
# the image itself.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Temp ();
use POSIX qw(WNOHANG);
use Test::More;

use GmsTest;
use GmsTest::HTTP;
use GmsTest::Redis;
use GmsTest::Stub;

GmsTest::need_module();
GmsTest::need_redis();

my $REPO = abs_path(dirname(__FILE__) . '/..');
my $ENTRY = "$REPO/docker/entrypoint.sh";
my $HEALTH = "$REPO/docker/healthcheck.sh";
my $TEMPLATE = "$REPO/conf-examples/gms-edge.conf.template";
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

    return $dir;
}

# The entry point with only the given environment (and PATH, so that its
# 'exec nginx' finds the nginx under test): returns its exit code and
# stdout, stderr in $out{err}.
my %required = (GMS_UPSTREAM => '127.0.0.1:8080',
                SEARCH_UPSTREAM => '127.0.0.1:9200',
                REDIS_ADDRESS => '127.0.0.1:6379',
                GMS_TOKEN_SALT => '');

sub entry {
    my ($env, @args) = @_;

    my $dir = tempdir();
    my %env = (PATH => $PATH,
               %$env);

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
    my ($rc, $out, $err) = entry({ GMS_EDGE_CONF_DIR => $conf,
                                   GMS_EDGE_RUN_DIR => $run, %$env },
                                 'gms-edge-render');
    return ($rc, $err, "$run/nginx.conf", $out);
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

{
    # the template is gms-edge.conf for a container: same locations, same
    # module directives (in the rendered file: the cache is a variable;
    # the credentials' directives when their files are given)
    my $example = slurp("$REPO/conf-examples/gms-edge.conf");
    my $template = $credentials_conf;

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
        [ REDIS_ADDRESS => 'redis.invalid:6379',
          qr/REDIS_ADDRESS: cannot resolve 'redis\.invalid'/ ],
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
        my ($rc, $err, $path) = render({ %required, $name => $value });
        isnt($rc, 0, "refused: $name=$value");
        like($err, $error, 'naming the variable and the value');
        ok(!-e $path, 'and nothing written');
    }

    my $dir = tempdir();
    spew("$dir/salt", 'x');
    ($rc, $err) = render({ %required, GMS_TOKEN_SALT => 'x',
                           GMS_TOKEN_SALT_FILE => "$dir/salt" });
    isnt($rc, 0, 'refused: both GMS_TOKEN_SALT and GMS_TOKEN_SALT_FILE');
    like($err, qr/GMS_TOKEN_SALT and GMS_TOKEN_SALT_FILE are both set/,
         'naming both');
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
my $logs = tempdir();

my %edge_env = (
    PATH => $PATH,
    GMS_EDGE_CONF_DIR => $conf_dir,
    GMS_EDGE_RUN_DIR => $run_dir,
    LISTEN_PORT => $port,
    GMS_UPSTREAM => '127.0.0.1:' . $gms->port,
    SEARCH_UPSTREAM => '127.0.0.1:' . $search->port,
    REDIS_ADDRESS => 'localhost:' . $redis->port,
    GMS_REDIS_PASSWORD_FILE => "$secrets/password",
    REDIS_DB => 5,
    GMS_TOKEN_KEY_PREFIX => 'edge:',
    GMS_TOKEN_SALT_FILE => "$secrets/salt",
    WORKER_PROCESSES => 2,
);

# the container's command: 'gms-edge' renders, then execs nginx as PID 1
# would run (stdout the access log, stderr the error log)
my $edge = fork // die "fork: $!\n";
if ($edge == 0) {
    %ENV = %edge_env;
    open STDIN, '<', '/dev/null';
    open STDOUT, '>', "$logs/stdout";
    open STDERR, '>', "$logs/stderr";
    exec '/bin/sh', $ENTRY, 'gms-edge' or POSIX::_exit(127);
}

sub get {
    my ($path, %headers) = @_;
    return GmsTest::HTTP::request($port, GET => $path, \%headers);
}

my $up = GmsTest::wait_until(sub {
    return 0 if waitpid($edge, WNOHANG) != 0;
    my $res = get('/healthz');
    return defined $res->{status} && $res->{status} == 200;
}, 10);

ok($up, 'the entry point started nginx')
    or BAIL_OUT("nginx did not start:\n" . (slurp("$logs/stderr") // ''));

like(slurp("$logs/stderr"), qr/gms-edge: REDIS_ADDRESS: localhost is 127\.0\.0\.1/,
     'REDIS_ADDRESS resolved by name');
is((stat "$run_dir/nginx.conf")[2] & 0777, 0600, 'rendered owner-only');

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
    for my $sub (qw(http.d server.d)) {
        mkdir "$www_conf/$sub" or die "$www_conf/$sub: $!\n";
        chmod 0755, "$www_conf/$sub";
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

done_testing();

#!/usr/bin/perl

# All of DataHub under one hostname, served by a real nginx with the module
# in front of a real redis-server and stand-ins for GMS and DataHub's
# frontend (each echoes what it received), twice with the same requests:
#
#   - conf-examples/datahub-one-hostname.conf as shipped: its http block
#     read from the file, with only the addresses (Redis, GMS, the search
#     cluster, the frontend, the listening port), the access log's path and
#     the secrets' paths replaced by the test's;
#   - the container's template rendered by docker/entrypoint.sh with
#     FRONTEND_UPSTREAM, run by the entry point's own 'exec nginx'.
#
# /api/gms/... needs a token and reaches GMS with the prefix stripped;
# every other path reaches the frontend exactly as the client sent it
# (request target, body, Cookie, Authorization), never GMS; crafted
# targets that nginx decodes out of /api/gms/ reach neither.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use POSIX qw(WNOHANG);
use Test::More;

use GmsTest;
use GmsTest::HTTP;
use GmsTest::Shipped;
use GmsTest::Redis;
use GmsTest::Stub;

GmsTest::need_module();
GmsTest::need_redis();

my $REPO = abs_path(dirname(__FILE__) . '/..');
my $FILE = "$REPO/conf-examples/datahub-one-hostname.conf";
my $ENTRY = "$REPO/docker/entrypoint.sh";
my $TEMPLATE = "$REPO/conf-examples/gms-edge.conf.template";

my $shipped = GmsTest::Shipped->load($FILE);
my $salt = $shipped->salt;

# GMS's signing key and the system client's secret, mounted as files
my $secrets = GmsTest::tempdir();
chmod 0755, $secrets;
my $key = 'one-hostname-signing-key';
GmsTest::write_file("$secrets/gms-signing-key", "$key\n");
GmsTest::write_file("$secrets/gms-system-client-secret", "sys-secret\n");

{
    # the whole file, as shipped but for the module's and secrets' paths
    my $conf = GmsTest::slurp($FILE);
    $conf =~ s{^load_module\s+\S+;}{load_module %%MODULE%%;}m;
    $conf =~ s{/etc/nginx/secrets/}{$secrets/}g;
    my ($rc, $out) = GmsTest::nginx_t($conf);
    is($rc, 0, 'nginx -t on datahub-one-hostname.conf') or diag($out);
}

my $redis = GmsTest::Redis->start;
my $gms = GmsTest::Stub->echo;
my $frontend = GmsTest::Stub->echo;
my $search = GmsTest::Stub->start(handler => sub {
    return [200, ['Content-Type' => 'application/json'],
            '{"completed":true,"task":{"node":"one","id":7,'
            . '"type":"transport","action":"indices:data/write/reindex",'
            . '"start_time_in_millis":1,"cancellable":true,'
            . '"status":{"total":1},"running_time_in_nanos":3}}'];
});

my $actor = 'urn:li:corpuser:alice';
my $pat = $shipped->personal_token($redis, $key, 'alice');

# what each stand-in received since the last call
sub saw {
    my ($stub) = @_;
    my $requests = $stub->requests;
    $stub->clear_requests;
    return $requests;
}

sub uris {
    return [ map { $_->{uri} } @{ $_[0] } ];
}

# the values of a header, in order, as the stand-in received them
sub header_values {
    my ($req, $name) = @_;
    return [ map { $_->[1] } grep { lc $_->[0] eq $name }
             @{ $req->{headers} } ];
}

my $cookie = 'PLAY_SESSION=eyJhbGciOiJIUzI1NiJ9.eyJkYXRhIjp7ImFjdG9yIjoi'
           . 'dXJuOmxpOmNvcnB1c2VyOmFsaWNlIn19.c2ln; '
           . 'actor=urn:li:corpuser:alice';
my $graphql = '{"query":"query me { me { corpUser { urn } } }",'
            . '"variables":{},"operationName":"me"}';

# [method, target, headers, body]: the frontend's paths (conf/routes of
# datahub-frontend), each to reach the frontend exactly as sent
my @frontend = (
    [GET => '/', { Cookie => $cookie }],
    [POST => '/api/v2/graphql',
     { Cookie => $cookie, 'Content-Type' => 'application/json',
       'X-DataHub-Actor' => 'urn:li:corpuser:admin' }, $graphql],
    # a script's own credential for the frontend's proxy: not checked here
    [POST => '/api/v2/graphql',
     { Authorization => 'Bearer not-a-token-this-edge-knows',
       'Content-Type' => 'application/json' }, $graphql],
    [GET => '/login?redirect_uri=%2Fsearch%3Fquery%3Da%2520b'],
    [POST => '/logIn', { 'Content-Type' => 'application/json' },
     '{"username":"alice","password":"p%40ss"}'],
    [GET => '/authenticate?redirect_uri=%2Fdataset%2Furn%3Ali%3Adataset'],
    [GET => '/callback/oidc?code=a%2Fb%2Bc&state=x%3D%3D',
     { Cookie => 'PLAY_SESSION=pac4j-state' }],
    [GET => '/logOut', { Cookie => $cookie }],
    [GET => '/assets/platforms/hivelogo.png'],
    [GET => '/manifest.json'],
    [GET => '/dataset/urn:li:dataset:(urn:li:dataPlatform:hive,db.t%2Fx,PROD)'
            . '/Schema?is_lineage_mode=false', { Cookie => $cookie }],
    [GET => '/openapi/v3/entity/dataset', { Cookie => $cookie }],
    [GET => '/health'],
    [GET => '/config'],
    [POST => '/track', { 'Content-Type' => 'application/json',
                         Authorization => 'Basic dXNlcjpwYXNz' },
     '{"type":"PageViewEvent"}'],
    # case matters to nginx, to Play's routes and to the frontend's
    # prefix match alike: its web app, not GMS's API
    [GET => '/API/GMS/entities/x'],
);

# [target, status]: crafted targets, with no token, reaching neither GMS
# nor the frontend.  404: nginx's decoded path leaves /api/gms/, but the
# frontend would send the raw target to GMS (mapPath); 401: nginx's decoded
# path is in /api/gms/, where the token is checked; 301: nginx's redirect
# to the prefix location's own path, /api/gms/.
my @crafted = (
    ['/api/gms%2F..%2Fentities', 404],
    ['/api/gms/%2E%2E/v2/graphql', 404],
    ['/api/gms/entities/x%2F..%2F..%2F..%2Fhealth', 404],
    ['/api/gmsentities/urn%3Ali%3Acorpuser%3Aalice', 404],
    ['/api/gms', 301],
    ['/x/..%2Fapi/gms/entities', 401],
    ['/%61pi/gms/entities/x', 401],
    ['/_es_tasks/one:7', 404],
);

sub check_edge {
    my ($name, $port) = @_;

    my $request = sub {
        my ($method, $target, $headers, $body) = @_;
        return GmsTest::HTTP::request($port, $method => $target,
                                      $headers // {}, $body);
    };

    saw($gms);
    saw($frontend);

    my $entity = '/entities/urn%3Ali%3Acorpuser%3Aalice';

    my $res = $request->(GET => "/api/gms$entity");
    is($res->{status}, 401, "$name: /api/gms/ without a token: 401");
    is_deeply(uris(saw($gms)), [], 'GMS saw nothing');
    is_deeply(uris(saw($frontend)), [], 'the frontend saw nothing');

    $res = $request->(GET => "/api/gms$entity",
                      { Authorization => "Bearer $pat", Cookie => $cookie,
                        'X-DataHub-Actor' => 'urn:li:corpuser:admin' });
    is($res->{status}, 200, "$name: /api/gms/ with a token: 200");
    my $saw = saw($gms);
    is_deeply(uris($saw), [$entity], 'GMS saw the prefix stripped, '
              . 'the URN as encoded');
    is_deeply(header_values($saw->[0] // {}, 'authorization'),
              ["Bearer $pat"], 'the token unchanged');
    is_deeply(header_values($saw->[0] // {}, 'x-datahub-actor'), [$actor],
              "GMS is told the token's user");
    is_deeply(uris(saw($frontend)), [], 'the frontend saw nothing');

    $res = $request->(POST => '/api/gms/operations?action=getEsTaskStatus',
                      { Authorization => "Bearer $pat",
                        'Content-Type' => 'application/json' },
                      '{"task":"one:7"}');
    is($res->{status}, 200, "$name: getEsTaskStatus under /api/gms/");
    like($res->{body}, qr/\\"taskId\\":\\"one:7\\"/,
         'answered from the search cluster');
    is_deeply(uris(saw($gms)), [], 'GMS saw nothing');

    for my $case (@frontend) {
        my ($method, $target, $headers, $body) = @$case;
        $headers //= {};

        $res = $request->($method, $target, $headers, $body);
        is($res->{status}, 200, "$name: $method $target: the frontend's");

        $saw = saw($frontend);
        is_deeply(uris($saw), [$target], 'the target as sent');
        my $req = $saw->[0] // {};
        is($req->{method}, $method, 'the method');
        is($req->{body}, $body // '', 'the body') if defined $body;
        for my $h (qw(cookie authorization)) {
            next unless grep { lc eq $h } keys %$headers;
            my ($v) = map { $headers->{$_} } grep { lc eq $h } keys %$headers;
            is_deeply(header_values($req, $h), [$v], "$h intact");
        }
        is_deeply(header_values($req, 'x-datahub-actor'), [],
                  'no X-DataHub-Actor');
        is_deeply(uris(saw($gms)), [], 'GMS saw nothing');
    }

    for my $case (@crafted) {
        my ($target, $status) = @$case;
        $res = $request->(GET => $target);
        is($res->{status}, $status, "$name: GET $target: $status");
        is_deeply(uris(saw($gms)), [], 'GMS saw nothing');
        is_deeply(uris(saw($frontend)), [], 'the frontend saw nothing');
    }

    # with a token, a target nginx decodes into /api/gms/ is GMS's, but
    # its raw form does not begin with /api/gms/: GMS's root, never the
    # raw target
    $res = $request->(GET => '/x/..%2Fapi/gms/entities',
                      { Authorization => "Bearer $pat" });
    is($res->{status}, 200, "$name: /x/..%2Fapi/gms/entities with a token");
    is_deeply(uris(saw($gms)), ['/'], "GMS saw its root");

    $res = $request->(GET => '/metrics');
    is($res->{status}, 200, "$name: /metrics from 127.0.0.1");
    like($res->{body}, qr/^gms_token_requests_total\{result="ok"\} [1-9]/m,
         'counting');
}


# --- the shipped file ------------------------------------------------------

my $n = $shipped->start(
    redis => $redis->port, gms => $gms->port, search => $search->port,
    access_log => 'one-access.log', secrets => $secrets,
    replace => { qr/server 127\.0\.0\.1:9002;/
                     => 'server 127.0.0.1:' . $frontend->port . ';' });

check_edge('shipped', $n->port);

$n->stop;
is_deeply([$n->bad_log_lines], [], 'shipped: no alerts or crashes');


# --- the container's template with FRONTEND_UPSTREAM ------------------------

SKIP: {
    skip 'envsubst not found (Debian package gettext-base)', 1
        unless grep { -x "$_/envsubst" } split /:/, $ENV{PATH} // '';
    skip 'under GMS_NGINX_WRAPPER: t/21 runs the entry point wrapped', 1
        if $ENV{GMS_NGINX_WRAPPER};

    my $conf_dir = GmsTest::tempdir();
    my $run_dir = GmsTest::tempdir();
    my $logs = GmsTest::tempdir();
    chmod 0755, $conf_dir, $run_dir;

    my $module = abs_path(GmsTest::module_path());
    GmsTest::write_file("$conf_dir/nginx.conf.template",
        GmsTest::slurp($TEMPLATE)
            =~ s{^load_module\s+\S+;}{load_module $module;}mr);
    for my $sub (qw(http.d server.d)) {
        mkdir "$conf_dir/$sub" or die "$conf_dir/$sub: $!\n";
    }

    my $port = GmsTest::free_port();
    my %env = (
        PATH => dirname(abs_path(GmsTest::nginx_bin()))
                . ':/usr/bin:/bin:/usr/sbin:/sbin',
        GMS_EDGE_CONF_DIR => $conf_dir,
        GMS_EDGE_RUN_DIR => $run_dir,
        LISTEN_PORT => $port,
        WORKER_PROCESSES => 1,
        GMS_UPSTREAM => '127.0.0.1:' . $gms->port,
        SEARCH_UPSTREAM => '127.0.0.1:' . $search->port,
        FRONTEND_UPSTREAM => '127.0.0.1:' . $frontend->port,
        REDIS_ADDRESS => '127.0.0.1:' . $redis->port,
        GMS_TOKEN_SALT => $salt,
        GMS_TOKEN_SIGNING_KEY_FILE => "$secrets/gms-signing-key",
    );

    my $edge = fork // die "fork: $!\n";
    if ($edge == 0) {
        %ENV = %env;
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$logs/stdout";
        open STDERR, '>', "$logs/stderr";
        exec '/bin/sh', $ENTRY, 'gms-edge' or POSIX::_exit(127);
    }

    my $up = GmsTest::wait_until(sub {
        return 0 if waitpid($edge, WNOHANG) != 0;
        my $res = GmsTest::HTTP::request($port, GET => '/healthz');
        return defined $res->{status} && $res->{status} == 200;
    }, 10);
    ok($up, 'the entry point started nginx with FRONTEND_UPSTREAM')
        or BAIL_OUT("nginx did not start:\n"
                    . GmsTest::slurp("$logs/stderr"));

    like(GmsTest::slurp("$logs/stderr"),
         qr/gms-edge: .*; frontend 127\.0\.0\.1:\d+$/m,
         'saying where the frontend is');

    check_edge('container', $port);

    kill 'QUIT', $edge;
    my $gone = GmsTest::wait_until(sub { waitpid($edge, WNOHANG) == $edge },
                                   10);
    ok($gone, 'SIGQUIT: nginx exits') or kill 'KILL', $edge;

    my @bad = grep { /\[(?:alert|emerg|crit)\]|exited on signal/ }
              split /\n/, GmsTest::slurp("$logs/stderr");
    is_deeply(\@bad, [], 'container: no alerts on stderr');
}

done_testing();

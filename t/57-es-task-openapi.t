#!/usr/bin/perl

# getEsTaskStatus's OpenAPI form answered at the edge (gms_es_task_status,
# src/ngx_http_gms_es_task.c): GET /openapi/operations/elasticSearch/
# getTaskStatus?task=<node>:<number>, and /api/gms/openapi/... as the
# frontend proxies it (datahub-frontend conf/routes, Application.mapPath),
# as DataHub's controller answers it: OperationsController.getTaskStatus
# in 0.13.0 to 0.15.0, ElasticsearchController.getTaskStatus from 1.0.0
# (metadata-service/openapi-servlet/.../operations/elastic/, the same
# method at v1.0.0, v1.3.0 and v1.6.0rc1).  Each expected body is a
# fixture, t/fixtures/search-cluster/datahub-openapi-getTaskStatus-*,
# whose .source.txt names the DataHub file and tags:
#   200 the bare org.json object (the Rest.li form's value, unwrapped);
#   400 "Task ID should be in the form ..." for a bad id;
#   403 "<urn> is not authorized to get ElasticSearch task status"
#       (GET_ES_TASK_STATUS_PRIVILEGE alone, every release: isAPIAuthorized,
#       never isAPIOperationsAuthorized);
#   500 "Could not get task status for <node>:<number>" when there is no
#       task (the cluster's 404, the cluster down or too slow);
#   500 {"error":"Internal server error occurred"} when the cluster answers
#       another error (GlobalControllerExceptionHandler, 1.0.0 on);
# all application/json.  What the edge cannot be sure of goes to GMS.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use POSIX ();
use Test::More;

use GmsTest;
use GmsTest::Edge;
use GmsTest::Redis;
use GmsTest::Shipped;
use GmsTest::Stub;

$ENV{GMS_MODULE} = abs_path($ENV{GMS_MODULE})
    if defined $ENV{GMS_MODULE} && -f $ENV{GMS_MODULE};

GmsTest::need_module();
GmsTest::need_redis();

my $REPO = abs_path(dirname(__FILE__) . '/..');

my $COMPLETED = GmsTest::fixture('datahub-openapi-getTaskStatus-completed.json');
my $NOT_FOUND = GmsTest::fixture('datahub-openapi-getTaskStatus-not-found.txt');
my $BAD_ID = GmsTest::fixture('datahub-openapi-getTaskStatus-bad-id.txt');
my $FORBIDDEN = GmsTest::fixture('datahub-openapi-getTaskStatus-forbidden.txt');
my $INTERNAL = GmsTest::fixture('datahub-openapi-getTaskStatus-cluster-error.json');

my $PATH = '/openapi/operations/elasticSearch/getTaskStatus';
my $SAMPLE_TASK = 'qhxGdzytQS-pQek8CwBCZg:54654';

# DataHub's published sample as the cluster sends it (t/30-es-task.t's)
my $DATAHUB_SAMPLE = <<'JSON';
{
  "completed" : true,
  "task" : {
    "node" : "qhxGdzytQS-pQek8CwBCZg",
    "id" : 54654,
    "type" : "transport",
    "action" : "indices:data/write/delete/byquery",
    "status" : {
      "total" : 0,
      "updated" : 0,
      "created" : 0,
      "deleted" : 0,
      "batches" : 0,
      "version_conflicts" : 0,
      "noops" : 0,
      "retries" : {
        "bulk" : 0,
        "search" : 0
      },
      "throttled_millis" : 0,
      "requests_per_second" : -1.0,
      "throttled_until_millis" : 0
    },
    "description" : "delete-by-query [datahub_usage_event]",
    "start_time_in_millis" : 1700000000000,
    "running_time_in_nanos" : 1179458,
    "cancellable" : true,
    "cancelled" : false,
    "headers" : { }
  },
  "response" : { "took" : 1, "failures" : [ ] }
}
JSON

my $JSON = ['Content-Type' => 'application/json; charset=UTF-8'];

# the search cluster: DataHub's sample task, a failing cluster, a slow one
my $SEARCH_CLUSTER = GmsTest::Stub::search_cluster(
    tasks => {
        $SAMPLE_TASK    => [200, $JSON, $DATAHUB_SAMPLE],
        'serverError:1' => [500, $JSON, '{"error":{"type":'
                                        . '"null_pointer_exception"},'
                                        . '"status":500}'],
        'tooMany:1'     => [429, $JSON, '{"status":429}'],
        'slow:1'        => [200, $JSON, $DATAHUB_SAMPLE, 2],
    },
    missing => [404, $JSON, GmsTest::fixture('not-found-404.constructed.json')]);

# The default test edge, and: a location on DataHub 1.4.0 (a prefix
# stripped by rewrite, as for GMS mounted elsewhere) and one on a GMS
# without REST API authorisation (privilege=off).
my $SERVER = <<'CONF';
        location = /openapi/operations/elasticSearch/getTaskStatus {
            gms_es_task_status /_es_tasks/;
            proxy_pass http://gms;
        }

        location /v14/ {
            gms_datahub_version 1.4.0;
            rewrite ^/v14(/.*)$ $1 break;
            gms_es_task_status /_es_tasks/;
            proxy_pass http://gms;
        }

        location /guest/ {
            gms_datahub_version 1.0.0;
            gms_token_guest on;
            rewrite ^/guest(/.*)$ $1 break;
            gms_es_task_status /_es_tasks/ privilege=off;
            proxy_pass http://gms;
        }

        location /guestp/ {
            gms_datahub_version 1.0.0;
            gms_token_guest on;
            rewrite ^/guestp(/.*)$ $1 break;
            gms_es_task_status /_es_tasks/;
            proxy_pass http://gms;
        }

        location /noauthz/ {
            rewrite ^/noauthz(/.*)$ $1 break;
            gms_es_task_status /_es_tasks/ privilege=off;
            proxy_pass http://gms;
        }
CONF

my $e = GmsTest::Edge->start(search => $SEARCH_CLUSTER, server => $SERVER);

my %who = (alice => ['GET_ES_TASK_STATUS_PRIVILEGE'],
           bob => [],
           carol => ['MANAGE_SYSTEM_OPERATIONS']);

for my $user (sort keys %who) {
    $e->token("$user-token", actor => "urn:li:corpuser:$user");
    $e->grant("urn:li:corpuser:$user", @{ $who{$user} }) if @{ $who{$user} };
}

sub get {
    my ($target, $user, %headers) = @_;
    $headers{Authorization} = "Bearer $user-token" if defined $user;
    return $e->nginx->http(GET => $target, \%headers);
}

sub restli {
    my ($path, $task, $user) = @_;
    return $e->nginx->http(POST => "$path?action=getEsTaskStatus",
                           { 'Content-Type' => 'application/json',
                             Authorization => "Bearer $user-token" },
                           GmsTest::json_encode({ task => $task }));
}

sub saw {
    my ($stub) = @_;
    my @uris = map { "$_->{method} $_->{uri}" } @{ $stub->requests };
    $stub->clear_requests;
    return \@uris;
}

# status, JSON type and the exact body; nothing reached GMS
sub answered {
    my ($res, $status, $body, $label) = @_;
    is($res->{status}, $status, "$label: $status");
    is($res->{headers}{'content-type'}, 'application/json',
       "$label: application/json");
    is($res->{body}, $body, "$label: the controller's body, byte for byte");
    is_deeply(saw($e->gms), [], "$label: GMS saw nothing");
}

# --- found: both forms on the same fixture ---------------------------------

my $res = get("$PATH?task=$SAMPLE_TASK", 'alice');
answered($res, 200, $COMPLETED, 'found');
is_deeply(saw($e->search), ["GET /_tasks/$SAMPLE_TASK"],
          'one bare GET of the task to the cluster');

$res = restli('/operations', $SAMPLE_TASK, 'alice');
is($res->{status}, 200, 'the Rest.li form on the same task: 200');
is_deeply(GmsTest::json_decode($res->{body}), { value => $COMPLETED },
          'its value is the OpenAPI body, wrapped (the same org.json text)');

$res = get("/api/gms$PATH?task=$SAMPLE_TASK", 'alice');
answered($res, 200, $COMPLETED, 'through the frontend prefix /api/gms');

$res = get("$PATH?x=1&task=qhxGdzytQS-pQek8CwBCZg%3A54654&y", 'alice',
           Accept => 'text/html,application/xhtml+xml,*/*;q=0.8');
answered($res, 200, $COMPLETED, 'percent-decoded, among other parameters, '
                                . "a browser's Accept");
saw($e->search);

# --- not found, the cluster's errors ---------------------------------------

$res = get("$PATH?task=oTUltX4IQMOUUVeiohTt8A:124", 'alice');
answered($res, 500, $NOT_FOUND, "the cluster's 404");

$res = restli('/operations', 'oTUltX4IQMOUUVeiohTt8A:124', 'alice');
is_deeply(GmsTest::json_decode($res->{body}),
          { value => qq({"error":"$NOT_FOUND"}) },
          'the Rest.li form: the same text, as its 200 error value');

$res = get("$PATH?task=oTUltX4IQMOUUVeiohTt8A:0124", 'alice');
answered($res, 500, $NOT_FOUND, 'the number read as a long (%d)');
is_deeply(saw($e->search), ['GET /_tasks/oTUltX4IQMOUUVeiohTt8A:124',
                            'GET /_tasks/oTUltX4IQMOUUVeiohTt8A:124',
                            'GET /_tasks/oTUltX4IQMOUUVeiohTt8A:124'],
          'the cluster asked for :124 each time');

$res = get("$PATH?task=slow:1", 'alice');
answered($res, 500, 'Could not get task status for slow:1',
         'the cluster slower than proxy_read_timeout');

for my $task (qw(serverError:1 tooMany:1)) {
    $res = get("$PATH?task=$task", 'alice');
    answered($res, 500, $INTERNAL, "the cluster answers an error ($task)");
}
saw($e->search);

# --- bad ids ---------------------------------------------------------------

$res = get("$PATH?task=oTUltX4IQMOUUVeiohTt8A-124", 'alice');
answered($res, 400, $BAD_ID, 'a task without a colon');

for my $case (['', 'empty'], ['n:0', 'number 0'],
              ['n:9223372036854775808', 'beyond a long'],
              ['a+b:1', 'a space (+)'], ['a%3Ab%3A1', 'two colons']) {
    my ($raw, $label) = @$case;
    (my $shown = $raw) =~ s/\+/ /g;
    $shown =~ s/%3A/:/g;
    $res = get("$PATH?task=$raw", 'alice');
    answered($res, 400, 'Task ID should be in the form nodeId:taskId e.g. '
             . "aB1cdEf2GHI-JKLMnoPQr3:123456 (got $shown)", "bad id: $label");
}
is_deeply(saw($e->search), [], 'the cluster saw no bad id');

# --- privileges -------------------------------------------------------------

$res = get("$PATH?task=$SAMPLE_TASK", 'bob');
answered($res, 403, $FORBIDDEN, 'no privilege');

$res = get("$PATH?task=not-a-task", 'bob');
answered($res, 403, $FORBIDDEN, 'no privilege and a bad id: the privilege '
                                . 'first');

$res = get("$PATH?task=$SAMPLE_TASK", 'carol');
answered($res, 403, 'urn:li:corpuser:carol is not authorized to get '
         . 'ElasticSearch task status', 'MANAGE_SYSTEM_OPERATIONS, 0.13.0');

$res = get("/v14$PATH?task=$SAMPLE_TASK", 'carol');
answered($res, 403, 'urn:li:corpuser:carol is not authorized to get '
         . 'ElasticSearch task status',
         'MANAGE_SYSTEM_OPERATIONS, 1.4.0: still not for this form');

$res = restli('/v14/operations', $SAMPLE_TASK, 'carol');
is($res->{status}, 200, 'while the Rest.li form takes it from 0.15.0 '
                        . '(isAPIOperationsAuthorized)');

$res = restli('/operations', $SAMPLE_TASK, 'bob');
is($res->{status}, 401, 'and in 0.13.0 refuses it with 401, where the '
                        . 'OpenAPI form says 403');

$res = get("/v14$PATH?task=$SAMPLE_TASK", 'alice');
answered($res, 200, $COMPLETED, 'GET_ES_TASK_STATUS_PRIVILEGE, 1.4.0');

$res = get("/noauthz$PATH?task=$SAMPLE_TASK", 'bob');
answered($res, 200, $COMPLETED, 'privilege=off: any valid token');
saw($e->search);

$res = get("$PATH?task=$SAMPLE_TASK");
is($res->{status}, 401, 'no token: 401');
is_deeply(saw($e->gms), [], 'GMS saw nothing');
is_deeply(saw($e->search), [], 'the cluster saw nothing');

# --- what GMS answers itself ------------------------------------------------

for my $case (
    [GET => "$PATH", 'no task (Spring: 400 from 1.0.0, 500 before)'],
    [GET => "$PATH?task=a:1&task=b:2", 'task twice (Spring joins them)'],
    [GET => "$PATH?task=n:1&x=%zz", 'a broken escape'],
    [GET => "$PATH?task=caf%C3%A9:1", 'beyond ASCII'],
    [POST => "$PATH?task=n:1", 'POST (405 from Spring)'],
    [HEAD => "$PATH?task=n:1", 'HEAD'],
    [GET => "$PATH?task=n:1", 'Accept without JSON (406 from Spring)',
     Accept => 'text/html'],
    [GET => "$PATH?task=n:1", 'an Accept the edge does not read',
     Accept => 'application/json;q=0'],
) {
    my ($method, $target, $label, %headers) = @$case;
    $res = $e->nginx->http($method => $target,
                           { Authorization => 'Bearer bob-token', %headers });
    is($res->{status}, 200, "$label: to GMS");
    is_deeply(saw($e->gms), ["$method $target"], "$label: GMS saw it as sent");
}

for my $target ("$PATH/?task=n:1", lc("$PATH") . '?task=n:1',
                "/api/gms/entities$PATH?task=n:1") {
    $res = get($target, 'bob');
    is_deeply(saw($e->gms), ["GET " . ($target =~ s{^/api/gms}{}r)],
              "$target: another path, GMS's");
}
is_deeply(saw($e->search), [], 'the cluster saw none of these');

# GMS's guest (gms_token_guest, 1.0.0 on): where the edge checks the
# privilege it does not know the guest's, 401 as for the Rest.li form;
# with privilege=off, what the guest gets is GMS's to say
$res = get("/guestp$PATH?task=$SAMPLE_TASK");
is($res->{status}, 401, 'a guest where the privilege is checked: 401');
$res = get("/guest$PATH?task=$SAMPLE_TASK");
is($res->{status}, 200, 'a guest, privilege=off: to GMS');
is_deeply(saw($e->gms), ["GET $PATH?task=$SAMPLE_TASK"],
          'a guest: GMS saw it');
$res = get("/guest$PATH?task=$SAMPLE_TASK", 'nobody');
is($res->{status}, 401, 'a bad token where guests pass: still 401');
is_deeply(saw($e->gms), [], 'GMS saw nothing');
$res = get("/guestp$PATH?task=$SAMPLE_TASK", 'bob');
answered($res, 403, $FORBIDDEN, 'a user where guests pass: the edge');
is_deeply(saw($e->search), [], 'the cluster saw none of these');

# a gms_token_auth off location: nothing answered there, the path pinned
$res = get("/open$PATH?task=$SAMPLE_TASK");
is($res->{status}, 200, '/open/ (gms_token_auth off): to GMS');
is_deeply(saw($e->gms), ["GET /open$PATH?task=$SAMPLE_TASK"],
          'GMS saw its own target, not an answer from the edge');
is_deeply(saw($e->search), [], 'the cluster saw nothing');

is_deeply([grep { /\[(?:alert|crit|emerg)\]/ }
           split /\n/, $e->nginx->error_log], [], 'no alerts');

# --- the cluster down --------------------------------------------------------

{
    my $down = GmsTest::Edge->start(server => $SERVER);   # a closed port
    $down->token('alice-token', actor => 'urn:li:corpuser:alice');
    $down->grant('urn:li:corpuser:alice', 'GET_ES_TASK_STATUS_PRIVILEGE');

    my $r = $down->nginx->http(GET => "$PATH?task=$SAMPLE_TASK",
                               { Authorization => 'Bearer alice-token' });
    is($r->{status}, 500, 'the cluster down: 500');
    is($r->{body}, "Could not get task status for $SAMPLE_TASK",
       'the cluster down: no task, as GMS (an IOException)');
    like($down->nginx->error_log, qr/search cluster request failed/,
         'the cluster down: logged');
    is_deeply(saw($down->gms), [], 'the cluster down: GMS saw nothing');
}

# --- the shipped configurations ---------------------------------------------

my $secrets = GmsTest::scratch_dir();
my $key = 'shipped-signing-key';
GmsTest::write_file("$secrets/gms-signing-key", "$key\n");
GmsTest::write_file("$secrets/gms-system-client-secret", "sys-secret\n");

my $redis = GmsTest::Redis->start;
my $gms = GmsTest::Stub->echo;
my $search = GmsTest::Stub->start(handler => $SEARCH_CLUSTER);

# [target, what GMS sees (undef: nothing, the edge's 401)] without a token
# at every gms_token_auth off location of gms-edge.conf (and the
# template's): none answers the task status, each pinned to its own path
my @OFF = (
    ["/schema-registry$PATH?task=n:1", "/schema-registry$PATH"],
    ["/openapi/check$PATH?task=n:1", "/openapi/check$PATH"],
    ["/openapi/up$PATH?task=n:1", "/openapi/up$PATH"],
    ["/health$PATH?task=n:1", undef],
    ["/config$PATH?task=n:1", undef],
    ["/config/search/export$PATH?task=n:1", undef],
    ["/metrics$PATH?task=n:1", undef],
    ['/openapi/up/..%2Foperations%2FelasticSearch%2FgetTaskStatus?task=n:1',
     undef],
    ['/schema-registry/%2E%2E/openapi/operations/elasticSearch/'
     . 'getTaskStatus?task=n:1', undef],
);

sub shipped {
    my ($label, $n, $pat) = @_;

    my $r = $n->http(GET => "$PATH?task=$SAMPLE_TASK",
                     { Authorization => "Bearer $pat" });
    is($r->{status}, 200, "$label: found");
    is($r->{body}, $COMPLETED, "$label: the bare task");
    is($r->{headers}{'content-type'}, 'application/json', "$label: JSON");

    my $p = $n->http(GET => "/api/gms$PATH?task=$SAMPLE_TASK",
                     { Authorization => "Bearer $pat" });
    is($p->{body}, $COMPLETED, "$label: /api/gms form, the same body");

    $r = $n->http(POST => '/operations?action=getEsTaskStatus',
                  { Authorization => "Bearer $pat",
                    'Content-Type' => 'application/json' },
                  qq({"task":"$SAMPLE_TASK"}));
    is_deeply(GmsTest::json_decode($r->{body}), { value => $COMPLETED },
              "$label: the Rest.li form, side by side");

    $r = $n->http(GET => "$PATH?task=nope", { Authorization => "Bearer $pat" });
    is($r->{status}, 400, "$label: a bad id 400");

    $r = $n->http(GET => "$PATH?task=$SAMPLE_TASK");
    is($r->{status}, 401, "$label: no token 401");
    is_deeply(saw($gms), [], "$label: GMS saw none of these");

    for my $case (@OFF) {
        my ($target, $pinned) = @$case;
        $r = $n->http(GET => $target);
        if (defined $pinned) {
            is($r->{status}, 200, "$label: $target: open, to GMS");
            is_deeply([map { s/\?.*//r } @{ saw($gms) }], ["GET $pinned"],
                      "$label: GMS saw only $pinned");
        } else {
            isnt($r->{status}, 200, "$label: $target: not answered");
            is_deeply(saw($gms), [], "$label: GMS saw nothing");
        }
    }
    is_deeply(saw($search), [("GET /_tasks/$SAMPLE_TASK") x 3],
              "$label: the cluster asked three times, for the valid ones");
}

{
    my $conf = GmsTest::Shipped->load('conf-examples/gms-edge.conf');
    my $pat = $conf->personal_token($redis, $key, 'alice');
    my $n = $conf->start(redis => $redis->port, gms => $gms->port,
                         search => $search->port, secrets => $secrets);
    shipped('gms-edge.conf', $n, $pat);
    $n->stop;
    is_deeply([$n->bad_log_lines], [], 'gms-edge.conf: no alerts');
}

# datahub-one-hostname.conf: /api/gms/openapi/... answered; /openapi/...
# at the root is the frontend's (its routes proxy it to GMS with the
# user's session), unchanged and without a token asked here
{
    my $conf =
        GmsTest::Shipped->load('conf-examples/datahub-one-hostname.conf');
    my $frontend = GmsTest::Stub->echo;
    $redis->cmd('FLUSHALL');
    my $pat = $conf->personal_token($redis, $key, 'alice');
    my $n = $conf->start(
        redis => $redis->port, gms => $gms->port, search => $search->port,
        secrets => $secrets,
        replace => { qr/server 127\.0\.0\.1:9002;/
                         => 'server 127.0.0.1:' . $frontend->port . ';' });

    my $r = $n->http(GET => "/api/gms$PATH?task=$SAMPLE_TASK",
                     { Authorization => "Bearer $pat" });
    is($r->{status}, 200, 'one hostname: /api/gms form found');
    is($r->{body}, $COMPLETED, 'one hostname: the bare task');

    $r = $n->http(GET => "/api/gms$PATH?task=$SAMPLE_TASK");
    is($r->{status}, 401, 'one hostname: /api/gms form without a token 401');
    is_deeply(saw($gms), [], 'one hostname: GMS saw none of these');

    $r = $n->http(GET => "$PATH?task=$SAMPLE_TASK",
                  { Cookie => 'PLAY_SESSION=x' });
    is($r->{status}, 200, "one hostname: /openapi/... to the frontend");
    is_deeply(saw($frontend), ["GET $PATH?task=$SAMPLE_TASK"],
              'one hostname: the frontend saw it as sent');
    is_deeply(saw($search), ["GET /_tasks/$SAMPLE_TASK"],
              'one hostname: the cluster asked once');
    $n->stop;
    is_deeply([$n->bad_log_lines], [], 'one hostname: no alerts');
}

SKIP: {
    skip 'envsubst not found (gettext-base)', 1
        unless grep { -x "$_/envsubst" } split /:/, $ENV{PATH} // '';

    # rendered by the container's entry point, then served as shipped
    my $conf_dir = GmsTest::scratch_dir();
    my $run_dir = GmsTest::scratch_dir();
    mkdir "$conf_dir/$_" for qw(http.d server.d open-paths);
    GmsTest::write_file("$conf_dir/nginx.conf.template",
                        GmsTest::slurp("$REPO/conf-examples/"
                                       . 'gms-edge.conf.template'));
    # the open paths by release, where the image has them (Dockerfile)
    for my $file (glob "$REPO/conf-examples/open-paths/*.conf") {
        GmsTest::write_file("$conf_dir/open-paths/" . ($file =~ s{.*/}{}r),
                            GmsTest::slurp($file));
    }
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        %ENV = (PATH => '/usr/bin:/bin:/usr/sbin:/sbin',
                GMS_EDGE_CONF_DIR => $conf_dir, GMS_EDGE_RUN_DIR => $run_dir,
                GMS_UPSTREAM => '127.0.0.1:8080',
                SEARCH_UPSTREAM => '127.0.0.1:9200',
                REDIS_ADDRESS => '127.0.0.1:6379', GMS_TOKEN_SALT => 'tsalt',
                GMS_EDGE_HOSTS => '/etc/hosts',
                GMS_EDGE_RESOLV_CONF => '/dev/null');
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', "$run_dir/err";
        exec '/bin/sh', "$REPO/docker/entrypoint.sh", 'gms-edge-render'
            or POSIX::_exit(127);
    }
    waitpid $pid, 0;
    is($?, 0, 'the template rendered')
        or diag(GmsTest::slurp("$run_dir/err"));

    my $conf = GmsTest::Shipped->load("$run_dir/nginx.conf");
    $redis->cmd('FLUSHALL');
    my $pat = $conf->personal_token($redis, $key, 'alice');
    # the harness's own temporary paths, not the run directory's
    my %temp = map { (qr/^\s*${_}_temp_path \S+;$/m => '') }
               qw(client_body proxy fastcgi uwsgi scgi);
    my $n = $conf->start(redis => $redis->port, gms => $gms->port,
                         search => $search->port, replace => \%temp);
    shipped('the template', $n, $pat);
    $n->stop;
    is_deeply([$n->bad_log_lines], [], 'the template: no alerts');
}

done_testing();

#!/usr/bin/perl

# getEsTaskStatus answered at the edge (src/ngx_http_gms_es_task.c): POST
# /operations?action=getEsTaskStatus (and /api/gms/operations?...) becomes
# a bare GET /_tasks/<node>:<number> to the search cluster, whose answer is
# mapped to the metadata service's Rest.li action answer
# {"value": "<JSON text>"}.  As OperationsResource.getTaskStatus builds it
# with org.json, the JSON text's "status" is itself a string: the
# cluster's status object as compact JSON text (the search client keeps it
# as raw bytes, RawTaskStatus), so a client parses it a second time.
#
# The stand-in search cluster (a GmsTest::Stub) stands for Elasticsearch /
# OpenSearch: it serves recorded _tasks answers by task id.  The recorded
# ones are t/fixtures/search-cluster/*.json, each with a .source.txt saying
# where it comes from: a running reindex from Elasticsearch 6 (a client log
# in elastic/elasticsearch#33764), a completed OpenSearch 2 reindex with a
# 400 KB "response" (Graylog's test resources), OpenSearch's 404 for a task
# whose node left the cluster, and constructed 404 / 400 error envelopes
# built from the servers' code.  The other answers below are constructed
# here from the documented task fields: Elasticsearch 8's cancellable,
# cancelled, parent_task_id and headers, OpenSearch 2's resource_stats, a
# sliced status (slices of objects and null), 64-bit integers, a failed
# task's "error", a task without status; and broken answers: 500, not
# JSON, truncated JSON, JSON that is no task (each member GMS's search
# client requires left out, a null status or description, members of
# the wrong type: all "no task" to GMS), larger than the edge's
# subrequest_output_buffer_size (8m) and slower than its
# proxy_read_timeout (1s).

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use JSON::PP ();
use Test::More;

use GmsTest;
use GmsTest::Messages qw($RESTLI_EXCEPTION $ES_UNAUTHORIZED $EITHER
                         $ONLY_ONE $NOT_OBJECT $INVALID_JSON $NODE_CHARS
                         task_form node_chars must_be no_task_status);
use GmsTest::Edge;

# nginx reads load_module relative to its -p prefix (a temporary
# directory), so a relative GMS_MODULE would not be found there.
$ENV{GMS_MODULE} = abs_path($ENV{GMS_MODULE})
    if defined $ENV{GMS_MODULE} && -f $ENV{GMS_MODULE};

GmsTest::need_module();
GmsTest::need_redis();


my $ACTION = '/operations?action=getEsTaskStatus';
my $PRIVILEGE = 'GET_ES_TASK_STATUS_PRIVILEGE';
my $BAD_JSON = qr/^\Q$INVALID_JSON\E/;


# The stand-in search cluster's answers, by task id.


my $RUNNING_ES6 = GmsTest::fixture('running-reindex-es6.json');
my $COMPLETED_OS2 =
    GmsTest::fixture('completed-reindex-opensearch2-with-failures.json');

my $ES8_DELETE_BY_QUERY = <<'JSON';
{"completed":true,"task":{"node":"oTUltX4IQMOUUVeiohTt8A","id":12345,
 "type":"transport","action":"indices:data/write/delete/byquery",
 "status":{"total":3,"updated":0,"created":0,"deleted":3,"batches":1,
  "version_conflicts":0,"noops":0,"retries":{"bulk":0,"search":0},
  "throttled_millis":0,"requests_per_second":-1.0,
  "throttled_until_millis":0},
 "description":"delete-by-query [datahub_usage_event]",
 "start_time_in_millis":1700000000000,"running_time_in_nanos":71200451,
 "cancellable":true,"cancelled":false,
 "parent_task_id":"oTUltX4IQMOUUVeiohTt8A:12340",
 "headers":{"X-Opaque-Id":"datahub-gms"}},
 "response":{"took":71,"timed_out":false,"total":3,"updated":0,"created":0,
  "deleted":3,"batches":1,"version_conflicts":0,"noops":0,
  "retries":{"bulk":0,"search":0},"throttled":"0s","throttled_millis":0,
  "requests_per_second":-1.0,"throttled_until":"0s",
  "throttled_until_millis":0,"failures":[]}}
JSON

my $OS2_RESOURCE_STATS = <<'JSON';
{"completed":false,"task":{"node":"Aq7Yd3PZTVeDL2iq4nqz1w","id":9001,
 "type":"transport","action":"indices:data/write/update/byquery",
 "status":{"total":10000,"updated":2500,"created":0,"deleted":0,
  "batches":3,"version_conflicts":0,"noops":0,
  "retries":{"bulk":0,"search":0},"throttled_millis":150,
  "requests_per_second":500.0,"throttled_until_millis":1200},
 "description":"update-by-query [graph_service_v1]",
 "start_time_in_millis":1717000000000,"running_time_in_nanos":5000000000,
 "cancellable":true,"cancelled":false,"headers":{},
 "resource_stats":{
  "average":{"cpu_time_in_nanos":1024,"memory_in_bytes":2048},
  "total":{"cpu_time_in_nanos":4096,"memory_in_bytes":8192},
  "min":{"cpu_time_in_nanos":512,"memory_in_bytes":1024},
  "max":{"cpu_time_in_nanos":2048,"memory_in_bytes":4096},
  "thread_info":{"thread_executions":4,"active_threads":1}}}}
JSON

my $BIG_INTEGERS = <<'JSON';
{"completed":false,"task":{"node":"bigIntegers","id":9223372036854775807,
 "type":"transport","action":"indices:data/write/reindex",
 "status":{"total":9007199254740993,"updated":9223372036854775807,
  "created":-9223372036854775808,"deleted":0,"batches":1,
  "version_conflicts":0,"noops":0,"retries":{"bulk":0,"search":0},
  "throttled_millis":0,"requests_per_second":-1.0,
  "throttled_until_millis":0},
 "start_time_in_millis":1700000000000,
 "running_time_in_nanos":9223372036854775806,"cancellable":true}}
JSON

my $SLICED = <<'JSON';
{"completed":false,"task":{"node":"slicedNode","id":77,"type":"transport",
 "action":"indices:data/write/reindex",
 "status":{"total":200,"updated":0,"created":120,"deleted":0,"batches":2,
  "version_conflicts":0,"noops":0,"retries":{"bulk":0,"search":0},
  "throttled_millis":0,"requests_per_second":-1.0,
  "throttled_until_millis":0,
  "slices":[{"slice_id":0,"total":100,"updated":0,"created":100,
             "deleted":0,"batches":1,"version_conflicts":0,"noops":0,
             "retries":{"bulk":0,"search":0},"throttled_millis":0,
             "requests_per_second":-1.0,"throttled_until_millis":0},
            null]},
 "start_time_in_millis":1700000000000,"running_time_in_nanos":42,
 "cancellable":true,"cancelled":false,"headers":{}}}
JSON

my $FAILED_WITH_ERROR = <<'JSON';
{"completed":true,"task":{"node":"failedNode","id":3,"type":"transport",
 "action":"indices:data/write/reindex",
 "status":{"total":0,"updated":0,"created":0,"deleted":0,"batches":0,
  "version_conflicts":0,"noops":0,"retries":{"bulk":0,"search":0},
  "throttled_millis":0,"requests_per_second":-1.0,
  "throttled_until_millis":0},
 "start_time_in_millis":1700000000000,
 "running_time_in_nanos":1179458,"cancellable":true,"cancelled":false,
 "headers":{}},
 "error":{"type":"index_not_found_exception","reason":"no such index [x]",
  "index":"x","index_uuid":"_na_"}}
JSON

my $NO_STATUS = <<'JSON';
{"completed":true,"task":{"node":"noStatusNode","id":5,"type":"transport",
 "action":"cluster:admin/snapshot/create","description":"",
 "start_time_in_millis":1,"running_time_in_nanos":1000,
 "cancellable":false,"headers":{}},
 "response":{"snapshot":{"snapshot":"s1","state":"SUCCESS"}}}
JSON

(my $NULL_STATUS = $NO_STATUS)
    =~ s/"noStatusNode","id":5,/"nullStatusNode","id":6,"status":null,/;

# A task with every member GMS's search client requires (TaskInfo.PARSER
# and GetTaskResponse.PARSER in OpenSearch's high-level REST client), as
# a running reindex has them; %change replaces members, undef leaves one
# out.  "completed" is the answer's, the others the task's.
my @TASK_MEMBERS = qw(node id type action status description
                      start_time_in_millis running_time_in_nanos cancellable);

sub task_answer {
    my ($node, %change) = @_;

    my %member = (node => qq("$node"), id => 1, type => '"transport"',
                  action => '"indices:data/write/reindex"',
                  status => '{"total":2,"created":1}',
                  description => '"reindex from [a] to [b]"',
                  start_time_in_millis => 1700000000000,
                  running_time_in_nanos => 5000, cancellable => 'true',
                  completed => 'false', %change);

    my $task = join ',', map { qq("$_":$member{$_}) }
                         grep { defined $member{$_} } @TASK_MEMBERS;
    my $completed = defined $member{completed}
                    ? qq("completed":$member{completed},) : '';

    return qq({$completed"task":{$task}});
}

# Each member the client requires, left out: GMS has no task status.
my @MISSING = map { ["no_$_", $_] }
              qw(completed node id type action start_time_in_millis
                 running_time_in_nanos cancellable);

# Members of a type the client's parser does not take.
my @MISTYPED = (
    ['nullDescription', description => 'null', 'a string'],
    ['nullType', type => 'null', 'a string'],
    ['numberAction', action => '7', 'a string'],
    ['nullStart', start_time_in_millis => 'null', 'an integer'],
    ['stringCancellable', cancellable => '"true"', 'a boolean'],
);

# DataHub's published sample (docs/api/restli/get-elastic-task-status.md),
# as the cluster would have sent it: pretty-printed, with a description
# and a response that GMS drops.  The edge's whole answer must equal
# t/fixtures/datahub/restli-getEsTaskStatus-completed.wire.constructed.json
# byte for byte.
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
  "response" : {
    "took" : 1, "timed_out" : false, "total" : 0, "deleted" : 0,
    "failures" : [ ]
  }
}
JSON

# Strings in a status, whitespace inside them kept, characters org.json
# escapes ("</", U+0080-U+009F, U+2000-U+20FF) and one it does not (é).
my $STRINGS = qq({"completed":false,"task":{"node":"stringsNode","id":8,)
    . qq("type":"transport","action":"indices:data/write/reindex",)
    . qq("status":{ "phase" : "copying { \\"a\\" : 1 }",)
    . qq( "note":"</script> caf\xc3\xa9 \xc2\x85 \xe2\x80\xa8 tab\\t end",)
    . qq( "n" : [ 1 , 2.50 , -0.0, 1e+3 ] },)
    . qq("start_time_in_millis":1,"running_time_in_nanos":1,)
    . qq("cancellable":true}});

my $SERVER_ERROR = '{"error":{"root_cause":[{"type":"null_pointer_exception",'
                   . '"reason":null}],"type":"null_pointer_exception",'
                   . '"reason":null},"status":500}';

# Reindex failures, as in the OpenSearch 2 fixture, to make answers just
# under and well over the edge's 8 MB subrequest buffer.
sub with_failures {
    my ($node, $size) = @_;

    my $failure = '{"index":"graylog_33",'
                  . '"id":"c4883153-4ee2-11ef-9469-02a5b2e81c4f",'
                  . '"cause":{"type":"index_not_found_exception",'
                  . '"reason":"no such index [graylog_33]",'
                  . '"index":"graylog_33","index_uuid":"_na_"},"status":404}';
    my $count = int($size / (length($failure) + 1)) + 1;

    return qq({"completed":true,"task":{"node":"$node","id":1,)
           . qq("type":"transport","action":"indices:data/write/reindex",)
           . qq("status":{"total":1,"created":0},)
           . qq("start_time_in_millis":1,"running_time_in_nanos":7,)
           . qq("cancellable":true},"response":{"failures":[)
           . join(',', ($failure) x $count) . ']}}';
}

my $LARGE = with_failures('large', 7 * 1024 * 1024);
my $OVERSIZED = with_failures('oversized', 9.5 * 1024 * 1024);

my $JSON_TYPE = ['Content-Type' => 'application/json; charset=UTF-8'];

my %CLUSTER = (
    'HI4YEIRMRuSdwsE4bCK7Bg:192'        => [200, $JSON_TYPE, $RUNNING_ES6],
    '2lG7ExELTKeUz-OkKvFabA:158087'     => [200, $JSON_TYPE, $COMPLETED_OS2],
    'oTUltX4IQMOUUVeiohTt8A:12345'      => [200, $JSON_TYPE,
                                            $ES8_DELETE_BY_QUERY],
    'Aq7Yd3PZTVeDL2iq4nqz1w:9001'       => [200, $JSON_TYPE,
                                            $OS2_RESOURCE_STATS],
    'bigIntegers:9223372036854775807'   => [200, $JSON_TYPE, $BIG_INTEGERS],
    'slicedNode:77'                     => [200, $JSON_TYPE, $SLICED],
    'failedNode:3'                      => [200, $JSON_TYPE,
                                            $FAILED_WITH_ERROR],
    'noStatusNode:5'                    => [200, $JSON_TYPE, $NO_STATUS],
    'nullStatusNode:6'                  => [200, $JSON_TYPE, $NULL_STATUS],
    'large:1'                           => [200, $JSON_TYPE, $LARGE],
    'qhxGdzytQS-pQek8CwBCZg:54654'      => [200, $JSON_TYPE,
                                            $DATAHUB_SAMPLE],
    'stringsNode:8'                     => [200, $JSON_TYPE, $STRINGS],

    'oTUltX4IQMOUUVeiohTt8A:124'        => [404, $JSON_TYPE,
                               GmsTest::fixture('not-found-404.constructed.json')],
    'l9jA-SSXRdm8rye9WK51dg:9575'       => [404, $JSON_TYPE,
                               GmsTest::fixture('node-not-found-404.json')],
    'malformedId:1'                     => [400, $JSON_TYPE,
                               GmsTest::fixture('malformed-id-400.constructed.json')],
    'serverError:1'                     => [500, $JSON_TYPE, $SERVER_ERROR],
    'unauthorized:1'                    => [401, $JSON_TYPE,
        '{"error":{"type":"security_exception","reason":"missing '
        . 'authentication credentials"},"status":401}'],
    'forbidden:1'                       => [403, $JSON_TYPE,
        '{"error":{"type":"security_exception","reason":"action '
        . '[cluster:monitor/task/get] is unauthorized"},"status":403}'],
    'tooMany:1'                         => [429, $JSON_TYPE,
        '{"error":{"type":"es_rejected_execution_exception"},"status":429}'],
    'unavailable:1'                     => [503, $JSON_TYPE,
        '{"error":{"type":"cluster_block_exception"},"status":503}'],
    'badGateway:1'                      => [502, ['Content-Type' =>
                                            'text/html'], "<html>502</html>"],
    'notJson:1'                         => [200,
        ['Content-Type' => 'text/html'],
        "<html><body><h1>It works!</h1></body></html>\n"],
    'emptyAnswer:1'                     => [200, $JSON_TYPE, ''],
    'truncated:1'                       => [200, $JSON_TYPE,
                                            substr($RUNNING_ES6, 0, 300)],
    'acknowledged:1'                    => [200, $JSON_TYPE,
                                            '{"acknowledged":true}'],
    'array:1'                           => [200, $JSON_TYPE,
                                            '[' . $RUNNING_ES6 . ']'],
    'idString:1'                        => [200, $JSON_TYPE,
        task_answer('idString', id => '"1"')],
    'statusString:1'                    => [200, $JSON_TYPE,
        task_answer('statusString', status => '"running"')],
    'completedString:1'                 => [200, $JSON_TYPE,
        task_answer('completedString', completed => '"true"')],
    'withDescription:1'                 => [200, $JSON_TYPE,
        task_answer('withDescription')],
    'noDescription:1'                   => [200, $JSON_TYPE,
        task_answer('noDescription', description => undef,
                    status => undef)],
    (map { ("$_->[0]:1" => [200, $JSON_TYPE,
                            task_answer($_->[0], $_->[1] => undef)]) }
         @MISSING),
    (map { ("$_->[0]:1" => [200, $JSON_TYPE,
                            task_answer($_->[0], $_->[1] => $_->[2])]) }
         @MISTYPED),
    'oversized:1'                       => [200, $JSON_TYPE, $OVERSIZED],
    # a cluster that tries to send the edge elsewhere: to GMS, token-less
    'redirectGms:1'                     => [200, [@$JSON_TYPE,
        'X-Accel-Redirect' => '/entities/urn:li:corpuser:datahub'],
        $RUNNING_ES6],
    'redirectOpen:1'                    => [200, [@$JSON_TYPE,
        'X-Accel-Redirect' => '/open/operations?action=restoreIndices'],
        $RUNNING_ES6],
    'slow:1'                            => [200, $JSON_TYPE,
                                            $RUNNING_ES6, 2],
);

# the search cluster: the recorded answers of %CLUSTER, and the cluster's
# 404 for any other task
my $SEARCH_CLUSTER = GmsTest::Stub::search_cluster(
    tasks   => \%CLUSTER,
    missing => sub {
        my ($req, $task) = @_;
        my $reason = "task [" . ($task // '') . "] isn't running and hasn't "
                     . 'stored its results';
        return [404, $JSON_TYPE, GmsTest::json_encode({
            error => {
                root_cause => [{ type => 'resource_not_found_exception',
                                 reason => $reason }],
                type => 'resource_not_found_exception',
                reason => $reason,
            },
            status => 404,
        })];
    });


# Requests and what to expect of them.

my $TOKEN = 'es-task-token';
my %AUTH = (Authorization => "Bearer $TOKEN");

sub ask {
    my ($e, $path, $body, %headers) = @_;
    return $e->nginx->http(POST => $path,
                           { 'Content-Type' => 'application/json', %headers },
                           $body);
}

sub task_body {
    my ($task) = @_;
    return GmsTest::json_encode({ task => $task });
}

# The Rest.li action answer: 200, JSON, {"value": "<JSON text>"}; returns
# the JSON text inside.
sub value_text {
    my ($res) = @_;

    is($res->{status}, 200, 'status 200');
    is($res->{headers}{'content-type'}, 'application/json', 'JSON');

    my $outer = eval { GmsTest::json_decode($res->{body}) };
    is(ref $outer, 'HASH', 'body is a JSON object') or return undef;
    is_deeply([sort keys %$outer], ['value'], 'with only a value');
    ok(defined $outer->{value} && !ref $outer->{value}, 'value is a string')
        or return undef;

    return $outer->{value};
}

# The value, parsed; its "status", a string of JSON text as GMS sends it,
# parsed a second time so that it compares with the cluster's object.
sub value_of {
    my ($res) = @_;
    my $text = value_text($res) // return undef;
    my $value = eval { JSON::PP->new->decode($text) }
        // return "not JSON: $text";

    if (ref $value eq 'HASH' && exists $value->{status}) {
        ok(!ref $value->{status}, 'status is a string') or return $value;
        $value->{status} = eval { JSON::PP->new->decode($value->{status}) }
                           // "not JSON: $value->{status}";
    }

    return $value;
}

sub not_found_value {
    my ($task) = @_;
    return { error => no_task_status($task) };
}

# A Rest.li error answer; $message is a string or a pattern; $todo marks
# a known module bug in the body.
sub is_restli_error {
    my ($res, $status, $message, $todo) = @_;

    is($res->{status}, $status, "status $status");
    is($res->{headers}{'content-type'}, 'application/json', 'JSON');

    my $body = eval { GmsTest::json_decode($res->{body}) } // {};

    local $TODO = $todo;

    if (ref $message eq 'Regexp') {
        like($body->{message} // '', $message, 'message');
        $message = $body->{message};
    }

    is_deeply($body, { exceptionClass => $RESTLI_EXCEPTION,
                       status => $status, message => $message },
              'Rest.li error body')
        or diag($res->{body});
}

# What the search cluster received since the last look: each request a
# bare GET of /_tasks/<task>, with nothing of the client's request.
sub cluster_saw {
    my ($e, @tasks) = @_;

    my $reqs = $e->search->requests;
    $e->search->clear_requests;

    is_deeply([sort map { "$_->{method} $_->{uri}" } @$reqs],
              [sort map { "GET /_tasks/$_" } @tasks],
              @tasks ? "cluster asked for @tasks" : 'cluster saw nothing');

    for my $req (@$reqs) {
        is($req->{body}, '', 'no body to the cluster');
        is($req->{header}{host}, 'search', 'to the search upstream');

        my @leaked = grep { /^(?:authorization|cookie|content-length
                                |transfer-encoding|content-type|x-client
                                |x-datahub-actor)/x }
                     map { lc $_->[0] } @{ $req->{headers} };
        is_deeply(\@leaked, [], 'no client header to the cluster');
    }
}

sub gms_saw_nothing {
    my ($e) = @_;
    my $reqs = $e->gms->requests;
    $e->gms->clear_requests;
    is_deeply([map { "$_->{method} $_->{uri}" } @$reqs], [],
              'GMS saw nothing');
}

# [error] lines nginx logged while $code ran, and $code's result.
sub errors_during {
    my ($e, $code) = @_;

    my $mark = length $e->nginx->error_log;
    my $result = $code->();
    my $new = substr $e->nginx->error_log, $mark;

    return ([grep { /\[error\]/ } split /\n/, $new], $result);
}

sub chunked {
    my ($body) = @_;
    my $out = '';
    $out .= sprintf("%x\r\n%s\r\n", length $1, $1)
        while $body =~ /\G(.{1,1000})/gs;
    return "${out}0\r\n\r\n";
}

# A getEsTaskStatus body of exactly $size bytes.
sub padded_body {
    my ($task, $size) = @_;
    my $head = qq({"task":"$task");
    return $head . (' ' x ($size - length($head) - 1)) . '}';
}


my $e = GmsTest::Edge->start(search => $SEARCH_CLUSTER);

$e->token($TOKEN, actor => 'urn:li:corpuser:alice');
$e->grant('urn:li:corpuser:alice', 'MANAGE_ACCESS_TOKENS', $PRIVILEGE);
$e->token('no-privilege', actor => 'urn:li:corpuser:bob');
$e->token('other-privileges', actor => 'urn:li:corpuser:carol');
$e->grant('urn:li:corpuser:carol', 'MANAGE_ACCESS_TOKENS',
          lc $PRIVILEGE, 'GET_ES_TASK_STATUS');
$e->token('expired', actor => 'urn:li:corpuser:alice', expiresAt => 1000);


# Tasks the cluster knows: the value holds completed, taskId, runTimeNanos
# and the whole task.status, nothing else of the answer.

sub status_of {
    my ($answer) = @_;
    return JSON::PP->new->utf8->decode($answer)->{task}{status};
}

my @FOUND = (
    { title => 'running reindex, Elasticsearch 6',
      task => 'HI4YEIRMRuSdwsE4bCK7Bg:192',
      value => { completed => JSON::PP::false,
                 taskId => 'HI4YEIRMRuSdwsE4bCK7Bg:192',
                 runTimeNanos => 16132017224,
                 status => status_of($RUNNING_ES6) },
      status_text => [qr/"requests_per_second":-1\.0[,}]/] },

    { title => 'completed reindex with 1000 failures, OpenSearch 2',
      task => '2lG7ExELTKeUz-OkKvFabA:158087',
      value => { completed => JSON::PP::true,
                 taskId => '2lG7ExELTKeUz-OkKvFabA:158087',
                 runTimeNanos => 330404765,
                 status => status_of($COMPLETED_OS2) },
      status_text => [qr/"requests_per_second":-1\.0[,}]/] },

    { title => 'completed delete_by_query, Elasticsearch 8 fields',
      task => 'oTUltX4IQMOUUVeiohTt8A:12345',
      value => { completed => JSON::PP::true,
                 taskId => 'oTUltX4IQMOUUVeiohTt8A:12345',
                 runTimeNanos => 71200451,
                 status => status_of($ES8_DELETE_BY_QUERY) } },

    { title => 'running update_by_query, OpenSearch 2 resource_stats',
      task => 'Aq7Yd3PZTVeDL2iq4nqz1w:9001',
      value => { completed => JSON::PP::false,
                 taskId => 'Aq7Yd3PZTVeDL2iq4nqz1w:9001',
                 runTimeNanos => 5000000000,
                 status => status_of($OS2_RESOURCE_STATS) },
      status_text => [qr/"requests_per_second":500\.0[,}]/] },

    { title => '64-bit integers stay exact',
      task => 'bigIntegers:9223372036854775807',
      value => { completed => JSON::PP::false,
                 taskId => 'bigIntegers:9223372036854775807',
                 runTimeNanos => '9223372036854775806',
                 status => status_of($BIG_INTEGERS) },
      text => [qr/"runTimeNanos":9223372036854775806[,}]/],
      status_text => [qr/"total":9007199254740993[,}]/,
                      qr/"updated":9223372036854775807[,}]/,
                      qr/"created":-9223372036854775808[,}]/] },

    { title => 'sliced status: slices of objects and null',
      task => 'slicedNode:77',
      value => { completed => JSON::PP::false, taskId => 'slicedNode:77',
                 runTimeNanos => 42, status => status_of($SLICED) } },

    { title => 'failed task: its error is not copied',
      task => 'failedNode:3',
      value => { completed => JSON::PP::true, taskId => 'failedNode:3',
                 runTimeNanos => 1179458,
                 status => status_of($FAILED_WITH_ERROR) } },

    { title => 'task without status',
      task => 'noStatusNode:5',
      value => { completed => JSON::PP::true, taskId => 'noStatusNode:5',
                 runTimeNanos => 1000 } },

    { title => 'every member the client requires, and a description',
      task => 'withDescription:1',
      value => { completed => JSON::PP::false, taskId => 'withDescription:1',
                 runTimeNanos => 5000,
                 status => { total => 2, created => 1 } } },

    { title => 'only the members the client requires: no status',
      task => 'noDescription:1',
      value => { completed => JSON::PP::false, taskId => 'noDescription:1',
                 runTimeNanos => 5000 } },

    { title => "DataHub's published sample, pretty-printed by the cluster",
      task => 'qhxGdzytQS-pQek8CwBCZg:54654',
      value => { completed => JSON::PP::true,
                 taskId => 'qhxGdzytQS-pQek8CwBCZg:54654',
                 runTimeNanos => 1179458,
                 status => status_of($DATAHUB_SAMPLE) },
      status_exact => '{"total":0,"updated":0,"created":0,"deleted":0,'
                      . '"batches":0,"version_conflicts":0,"noops":0,'
                      . '"retries":{"bulk":0,"search":0},'
                      . '"throttled_millis":0,"requests_per_second":-1.0,'
                      . '"throttled_until_millis":0}',
      wire => GmsTest::fixture('../datahub/'
                      . 'restli-getEsTaskStatus-completed.wire.constructed.json')
    },

    { title => 'strings in the status: kept as sent, escaped as org.json',
      task => 'stringsNode:8',
      value => { completed => JSON::PP::false, taskId => 'stringsNode:8',
                 runTimeNanos => 1, status => status_of($STRINGS) },
      text => [qr/<\\\/script>/, qr/\\u0085/, qr/\\u2028/,
               qr/caf\x{e9} /],
      status_text => [qr/"phase":"copying \{ \\"a\\" : 1 \}"/,
                      qr/\[1,2\.50,-0\.0,1e\+3\]/,
                      qr/ tab\\t end"/] },

    { title => '7 MB answer, under the subrequest buffer',
      task => 'large:1',
      value => { completed => JSON::PP::true, taskId => 'large:1',
                 runTimeNanos => 7, status => { total => 1, created => 0 } } },
);

# The value text as GMS writes it: its keys in the order completed,
# taskId, runTimeNanos, status, status a string holding compact JSON.
# Checks it against $want (status as a parsed object) and returns the
# status text, or undef.
sub task_value_ok {
    my ($text, $want) = @_;

    like($text, qr/^\{"completed":(?:true|false),"taskId":"[^"]*",
                    "runTimeNanos":-?\d+(?:,"status":"(?:[^"\\]|\\.)*")?
                    \}\z/x,
         'keys in the order GMS writes them');

    my $value = eval { JSON::PP->new->decode($text) };
    is(ref $value, 'HASH', 'the value is a JSON object') or return undef;

    my %want = %$want;
    my $want_status = delete $want{status};
    my $status_text = delete $value->{status};

    is_deeply($value, \%want, 'completed, taskId, runTimeNanos');

    if (!defined $want_status) {
        ok(!defined $status_text, 'no status');
        return undef;
    }

    ok(defined $status_text && !ref $status_text, 'status is a string')
        or return undef;

    (my $outside = $status_text) =~ s/"(?:[^"\\]|\\.)*"//g;
    unlike($outside, qr/\s/, 'status text compact: no whitespace outside '
                            . 'strings');

    my $status = eval { JSON::PP->new->decode($status_text) };
    is_deeply($status, $want_status, 'status, parsed a second time')
        or diag($status_text);

    return $status_text;
}

subtest 'tasks found' => sub {
    for my $case (@FOUND) {
        subtest $case->{title} => sub {
            my ($errors, $res) = errors_during($e, sub {
                ask($e, $ACTION, task_body($case->{task}), %AUTH);
            });

            my $text = value_text($res) // return;
            my $status_text = task_value_ok($text, $case->{value});

            like($text, $_, "exact in the value: $_")
                for @{ $case->{text} // [] };
            like($status_text // '', $_, "exact in the status text: $_")
                for @{ $case->{status_text} // [] };
            is($status_text, $case->{status_exact}, 'the status text')
                if defined $case->{status_exact};

            if (defined $case->{wire}) {
                (my $wire = $case->{wire}) =~ s/\n\z//;
                is($res->{body}, $wire, "the whole answer, byte for byte, "
                                        . "as DataHub's sample");
            }

            cluster_saw($e, $case->{task});
            is_deeply($errors, [], 'nothing logged as an error');
        };
    }

    gms_saw_nothing($e);
};


# The cluster answers, but with no task status: the value says so and
# the error log says why.

my @NOT_FOUND = (
    ['404, task neither running nor stored', 'oTUltX4IQMOUUVeiohTt8A:124',
     qr/\b404\b/],
    ['404, node left the cluster, no .tasks index',
     'l9jA-SSXRdm8rye9WK51dg:9575', qr/\b404\b/],
    ['404, a task nobody recorded', 'unknownNode:42', qr/\b404\b/],
    ['200, HTML', 'notJson:1', qr/JSON/],
    ['200, empty', 'emptyAnswer:1', qr/JSON/],
    ['200, truncated JSON', 'truncated:1', qr/JSON/],
    ['200, JSON but no task', 'acknowledged:1', qr/not a task/],
    ['200, an array holding a task', 'array:1', qr/not a task/],
    ['200, task id a string', 'idString:1',
     qr/not a task: "task\.id" not an integer/],
    ['200, status a string', 'statusString:1',
     qr/not a task: "task\.status" not an object/],
    ['200, status null', 'nullStatusNode:6',
     qr/not a task: "task\.status" not an object/],
    ['200, completed a string', 'completedString:1',
     qr/not a task: "completed" not a boolean/],
    (map { my ($node, $member) = @$_;
           my $where = $member eq 'completed' ? '' : 'task\.';
           ["200, no $member", "$node:1",
            qr/not a task: "$where$member" absent/] } @MISSING),
    (map { my ($node, $member, $value, $type) = @$_;
           ["200, $member $value", "$node:1",
            qr/not a task: "task\.$member" not \Q$type\E/] } @MISTYPED),
    ['9.5 MB answer, over the 8m subrequest buffer', 'oversized:1',
     qr/larger than subrequest_output_buffer_size/],
    ['2 s answer, over the 1 s proxy_read_timeout', 'slow:1',
     qr/timed out/],
    ['X-Accel-Redirect to a GMS path', 'redirectGms:1', qr/redirected/],
    ['X-Accel-Redirect to an open location', 'redirectOpen:1',
     qr/redirected/],
);

sub no_status_ok {
    my ($e, $title, $task, $reason, $bug) = @_;

    subtest $title => sub {
        my ($errors, $res) = errors_during($e, sub {
            ask($e, $ACTION, task_body($task), %AUTH);
        });

        TODO: {
            local $TODO = $bug;
            is_deeply(value_of($res), not_found_value($task),
                      'value: could not get task status')
                or diag(explain($res));
        }

        ok((grep { /\Q$task\E/ } @$errors), 'an [error] line names the task')
            or diag(explain($errors));
        ok((grep { /$reason/ } @$errors), "an [error] line says $reason");

        cluster_saw($e, $task) if $e->search;
    };
}

subtest 'no task status' => sub {
    for my $case (@NOT_FOUND) {
        my ($title, $task, $reason) = @$case;
        no_status_ok($e, $title, $task, $reason,
                     undef);
    }

    gms_saw_nothing($e);
};


# The cluster answers an error status other than 404: GMS's search client
# throws, and Rest.li answers 500 with its error body; the edge does the
# same, naming the cluster's status, and logs it.

my @CLUSTER_ERRORS = (
    ['400 malformed task id', 'malformedId:1', 400],
    ['401 security', 'unauthorized:1', 401],
    ['403 security', 'forbidden:1', 403],
    ['429 rejected execution', 'tooMany:1', 429],
    ['500 server error', 'serverError:1', 500],
    ['502 from a proxy in front of the cluster', 'badGateway:1', 502],
    ['503 cluster block', 'unavailable:1', 503],
);

subtest 'cluster error statuses: 500' => sub {
    for my $case (@CLUSTER_ERRORS) {
        my ($title, $task, $status) = @$case;
        subtest $title => sub {
            my ($errors, $res) = errors_during($e, sub {
                ask($e, $ACTION, task_body($task), %AUTH);
            });

            is_restli_error($res, 500, "Search cluster answered HTTP "
                            . "$status to the task status request for $task");
            is($res->{headers}{'x-restli-error-response'}, 'true',
               'X-RestLi-Error-Response');
            ok((grep { /\Q$task\E.*answered $status\b/ } @$errors),
               'an [error] line names the task and the status')
                or diag(explain($errors));
            cluster_saw($e, $task);
        };
    }

    gms_saw_nothing($e);
};


# Both request forms, both path forms, with or without auth: the same
# single request to the cluster.

my $KNOWN = 'HI4YEIRMRuSdwsE4bCK7Bg:192';
my $KNOWN_VALUE = $FOUND[0]{value};

my @FORMS = (
    ['composite task', $ACTION, qq({"task":"$KNOWN"}), 1],
    ['nodeId + taskId', $ACTION,
     '{"nodeId":"HI4YEIRMRuSdwsE4bCK7Bg","taskId":192}', 1],
    ['both, agreeing', $ACTION,
     qq({"task":"$KNOWN","nodeId":"HI4YEIRMRuSdwsE4bCK7Bg","taskId":192}), 1],
    ['null fields count as absent', $ACTION,
     qq({"task":"$KNOWN","nodeId":null,"taskId":null}), 1],
    ['nodeId + taskId, task null', $ACTION,
     '{"task":null,"nodeId":"HI4YEIRMRuSdwsE4bCK7Bg","taskId":192}', 1],
    ['taskId 0 is absent, task decides', $ACTION,
     qq({"task":"$KNOWN","nodeId":"other","taskId":0}), 1],
    ['taskId written as 192.0, coerced as Rest.li does', $ACTION,
     '{"nodeId":"HI4YEIRMRuSdwsE4bCK7Bg","taskId":192.0}', 1],
    ['taskId written as 1.92e2', $ACTION,
     '{"nodeId":"HI4YEIRMRuSdwsE4bCK7Bg","taskId":1.92e2}', 1],
    ['whitespace around', $ACTION, qq(\n {\t"task" : "$KNOWN" }\r\n), 1],
    ['frontend-proxy path', '/api/gms/operations?action=getEsTaskStatus',
     qq({"task":"$KNOWN"}), 1],
    ['other query arguments', '/operations?a=1&action=getEsTaskStatus&b=2',
     qq({"task":"$KNOWN"}), 1],
    ['auth off: no token needed', '/open/operations?action=getEsTaskStatus',
     qq({"task":"$KNOWN"}), 0],
);

subtest 'request forms and paths' => sub {
    for my $case (@FORMS) {
        my ($title, $path, $body, $auth) = @$case;
        subtest $title => sub {
            my $res = ask($e, $path, $body, $auth ? %AUTH : ());
            is_deeply(value_of($res), $KNOWN_VALUE, 'task status');
            cluster_saw($e, $KNOWN);
        };
    }

    subtest 'largest task number, both forms' => sub {
        my $task = 'abc:9223372036854775807';
        is_deeply(value_of(ask($e, $ACTION, task_body($task), %AUTH)),
                  not_found_value($task), 'composite');
        is_deeply(value_of(ask($e, $ACTION,
                      '{"nodeId":"abc","taskId":9223372036854775807}', %AUTH)),
                  not_found_value($task), 'nodeId + taskId');
        cluster_saw($e, $task, $task);
    };

    subtest "node with '-' and '_'" => sub {
        my $task = 'a-B_9-:1';
        is_deeply(value_of(ask($e, $ACTION, task_body($task), %AUTH)),
                  not_found_value($task), 'asked');
        cluster_saw($e, $task);
    };

    gms_saw_nothing($e);
};


# Refused before the cluster is asked: 400 with the metadata service's
# message, and neither the cluster nor GMS sees anything.


my @REFUSED = (
    # neither form
    { title => 'empty object', body => '{}', message => $EITHER },
    { title => 'empty body', body => '', message => $EITHER },
    { title => 'all null',
      body => '{"task":null,"nodeId":null,"taskId":null}',
      message => $EITHER },
    { title => 'nodeId alone', body => '{"nodeId":"abc"}',
      message => $EITHER },
    { title => 'taskId alone', body => '{"taskId":5}', message => $EITHER },
    { title => 'taskId 0 counts as absent',
      body => '{"nodeId":"abc","taskId":0}', message => $EITHER },
    { title => 'unknown fields only', body => '{"id":"abc:1"}',
      message => $EITHER },

    # both forms, disagreeing
    { title => 'both, other number',
      body => '{"task":"abc:1","nodeId":"abc","taskId":2}',
      message => $ONLY_ONE },
    { title => 'both, other node',
      body => '{"task":"abd:1","nodeId":"abc","taskId":1}',
      message => $ONLY_ONE },
    { title => 'both, number written differently',
      body => '{"task":"abc:01","nodeId":"abc","taskId":1}',
      message => $ONLY_ONE },

    # the composite form
    { title => 'no colon', body => '{"task":"foo"}',
      message => task_form('foo') },
    { title => 'no node', body => '{"task":":1"}',
      message => task_form(':1') },
    { title => 'no number', body => '{"task":"abc:"}',
      message => task_form('abc:') },
    { title => 'empty task', body => '{"task":""}',
      message => task_form('') },
    { title => 'two colons', body => '{"task":"a:b:1"}',
      message => task_form('a:b:1') },
    { title => 'number 0', body => '{"task":"abc:0"}',
      message => task_form('abc:0') },
    { title => 'number 00', body => '{"task":"abc:00"}',
      message => task_form('abc:00') },
    { title => 'negative number', body => '{"task":"abc:-1"}',
      message => task_form('abc:-1') },
    { title => 'plus sign', body => '{"task":"abc:+1"}',
      message => task_form('abc:+1') },
    { title => 'number beyond int64',
      body => '{"task":"abc:9223372036854775808"}',
      message => task_form('abc:9223372036854775808') },
    { title => 'number far beyond int64',
      body => '{"task":"abc:123456789012345678901234567890"}',
      message => task_form('abc:123456789012345678901234567890') },
    { title => 'hexadecimal number', body => '{"task":"abc:0x10"}',
      message => task_form('abc:0x10') },
    { title => 'dot in the node', body => '{"task":"a.b:1"}',
      message => task_form('a.b:1') },
    { title => 'non-ASCII node', body => '{"task":"\u00e4bc:1"}',
      message => task_form("\x{e4}bc:1") },
    { title => 'long task echoed whole',
      body => task_body('x' x 5000),
      message => task_form('x' x 5000) },

    # nodeId + taskId
    { title => 'nodeId with a dot', body => '{"nodeId":"a.b","taskId":1}',
      message => node_chars('a.b') },
    { title => 'nodeId with a colon', body => '{"nodeId":"a:1","taskId":1}',
      message => node_chars('a:1') },

    # types
    { title => 'taskId a string', body => '{"nodeId":"abc","taskId":"1"}',
      message => must_be('taskId', 'an integer') },
    { title => 'taskId a fraction', body => '{"nodeId":"abc","taskId":1.5}',
      message => must_be('taskId', 'an integer') },
    { title => 'taskId 124.5', body => '{"nodeId":"abc","taskId":124.5}',
      message => must_be('taskId', 'an integer') },
    { title => 'taskId 1e19, beyond a long',
      body => '{"nodeId":"abc","taskId":1e19}',
      message => must_be('taskId', 'an integer') },
    { title => 'taskId a boolean', body => '{"nodeId":"abc","taskId":true}',
      message => must_be('taskId', 'an integer') },
    { title => 'taskId an array', body => '{"nodeId":"abc","taskId":[1]}',
      message => must_be('taskId', 'an integer') },
    { title => 'taskId wrong beside a valid task',
      body => '{"task":"abc:1","taskId":"1"}',
      message => must_be('taskId', 'an integer') },
    { title => 'taskId beyond int64',
      body => '{"nodeId":"abc","taskId":9223372036854775808}',
      # jansson refuses integers beyond 64 bits while parsing, so this is
      # reported as invalid JSON, still a 400 naming the problem
      message => qr/^\Q$INVALID_JSON\E: too big integer/ },
    { title => 'nodeId a number', body => '{"nodeId":5,"taskId":1}',
      message => must_be('nodeId', 'a string') },
    { title => 'nodeId an object', body => '{"nodeId":{},"taskId":1}',
      message => must_be('nodeId', 'a string') },
    { title => 'task a number', body => '{"task":5}',
      message => must_be('task', 'a string') },
    { title => 'task an object', body => '{"task":{"nodeId":"abc"}}',
      message => must_be('task', 'a string') },
    { title => 'task an array', body => '{"task":["abc:1"]}',
      message => must_be('task', 'a string') },

    # not an object
    { title => 'array', body => '[]', message => $NOT_OBJECT },
    { title => 'array holding a task', body => '[{"task":"abc:1"}]',
      message => $NOT_OBJECT },
    { title => 'JSON string', body => '"abc:1"', message => $NOT_OBJECT,
    },
    { title => 'JSON number', body => '42', message => $NOT_OBJECT,
    },
    { title => 'JSON null', body => 'null', message => $NOT_OBJECT,
    },

    # not JSON
    { title => 'form encoded', body => 'task=abc:1',
      message => $BAD_JSON },
    { title => 'truncated', body => '{"task":"abc:1"',
      message => $BAD_JSON },
    { title => 'trailing garbage', body => '{"task":"abc:1"} x',
      message => $BAD_JSON },
    { title => 'invalid UTF-8', body => qq({"task":"\xff:1"}),
      message => $BAD_JSON },
    { title => 'single quotes', body => q({'task':'abc:1'}),
      message => $BAD_JSON },
);

# Bodies that try to steer the subrequest: path, query, fragment, host.
my @STEERING = (
    { title => 'dot segments', body => '{"task":"../x:1"}',
      message => task_form('../x:1') },
    { title => 'encoded slash', body => '{"task":"a%2Fb:1"}',
      message => task_form('a%2Fb:1') },
    { title => 'query', body => '{"task":"a:1?x"}',
      message => task_form('a:1?x') },
    { title => 'fragment', body => '{"task":"a:1#x"}',
      message => task_form('a:1#x') },
    { title => 'space', body => '{"task":"a b:1"}',
      message => task_form('a b:1') },
    { title => 'path after the number',
      body => '{"task":"a:1/../../_cluster/settings"}',
      message => task_form('a:1/../../_cluster/settings') },
    { title => 'CRLF and a header', body => '{"task":"a:1\r\nHost: evil"}',
      message => task_form("a:1\r\nHost: evil") },
    { title => 'trailing space', body => '{"task":"a:1 "}',
      message => task_form('a:1 ') },
    { title => 'leading slash', body => '{"task":"/a:1"}',
      message => task_form('/a:1') },
    { title => 'absolute URL', body => '{"task":"http://evil:1"}',
      message => task_form('http://evil:1') },
    { title => 'NUL then a path', body => '{"task":"a:1\u0000/../x"}',
      message => task_form("a:1\0/../x") },
    { title => 'nodeId climbing',
      body => '{"nodeId":"x/../../_cluster","taskId":1}',
      message => node_chars('x/../../_cluster') },
    { title => 'nodeId with a query', body => '{"nodeId":"a?b","taskId":1}',
      message => node_chars('a?b') },
    { title => 'nodeId with CRLF',
      body => '{"nodeId":"a\r\nHost: evil","taskId":1}',
      message => node_chars("a\r\nHost: evil") },
    { title => 'nodeId encoded dots', body => '{"nodeId":"%2e%2e","taskId":1}',
      message => node_chars('%2e%2e') },
    { title => 'nodeId with NUL', body => '{"nodeId":"a\u0000/x","taskId":1}',
      message => node_chars("a\0/x") },
    { title => 'nodeId empty', body => '{"nodeId":"","taskId":1}',
      message => qr/^(?:\Q$NODE_CHARS\E|\Q$EITHER\E)/ },
    { title => 'duplicate task fields',
      body => '{"task":"abc:1","task":"../x:1"}', message => qr/./ },
);

sub refused_ok {
    my ($e, $path, $case, %headers) = @_;

    subtest $case->{title} => sub {
        my $res = ask($e, $path, $case->{body}, %headers);
        is_restli_error($res, 400, $case->{message}, $case->{todo});
        is($res->{headers}{'x-restli-error-response'}, 'true',
           'X-RestLi-Error-Response');
        cluster_saw($e);
        gms_saw_nothing($e);
    };
}

subtest 'refused' => sub {
    refused_ok($e, $ACTION, $_, %AUTH) for @REFUSED;
};

subtest 'bodies cannot steer the subrequest' => sub {
    refused_ok($e, $ACTION, $_, %AUTH) for @STEERING;
};

subtest 'refused on the other paths' => sub {
    my %sample = map { $_ => 1 } ('empty object', 'both, other number',
                                  'no colon', 'nodeId with a dot',
                                  'taskId a string', 'array', 'truncated');
    my @sample = grep { $sample{ $_->{title} } } @REFUSED;
    is(scalar @sample, scalar keys %sample, 'samples found');

    refused_ok($e, '/api/gms/operations?action=getEsTaskStatus', $_, %AUTH)
        for @sample;
    refused_ok($e, '/open/operations?action=getEsTaskStatus', $_)
        for @sample;
};


# The body limit: 8192 bytes, whether the length is announced or not.

subtest 'body size' => sub {
    for my $case (['Content-Length', sub { ($_[0], ()) }],
                  ['chunked', sub { (chunked($_[0]),
                                     'Transfer-Encoding' => 'chunked') }])
    {
        my ($how, $framing) = @$case;

        subtest "$how, 8192 bytes" => sub {
            my ($body, %h) = $framing->(padded_body($KNOWN, 8192));
            is_deeply(value_of(ask($e, $ACTION, $body, %AUTH, %h)),
                      $KNOWN_VALUE, 'answered');
            cluster_saw($e, $KNOWN);
        };

        for my $size (8193, 100_000) {
            subtest "$how, $size bytes" => sub {
                my ($body, %h) = $framing->(padded_body($KNOWN, $size));
                my $res = ask($e, $ACTION, $body, %AUTH, %h);
                is($res->{status}, 413, 'status 413');
                is($res->{headers}{'content-type'}, 'application/json',
                   'JSON');
                my $err = eval { GmsTest::json_decode($res->{body}) } // {};
                is($err->{status}, 413, 'status in the body');
                is($err->{exceptionClass}, $RESTLI_EXCEPTION, 'Rest.li');
                cluster_saw($e);
            };
        }
    }

    gms_saw_nothing($e);
};


# A body without a length is refused once more than the limit arrived:
# the client here sends 9000 bytes of chunks and stops, with no last
# chunk; nginx would otherwise wait for the rest (client_body_timeout,
# 60 s) or read up to client_max_body_size.
subtest 'chunked body over the limit, refused before its end' => sub {
    my $chunk = padded_body($KNOWN, 9000);
    my $raw = $e->nginx->raw(
        "POST $ACTION HTTP/1.1\r\nHost: localhost\r\n"
        . "Authorization: Bearer $TOKEN\r\n"
        . "Content-Type: application/json\r\n"
        . "Transfer-Encoding: chunked\r\n\r\n"
        . sprintf("%x\r\n%s\r\n", length $chunk, $chunk),
        timeout => 5);
    my $res = GmsTest::HTTP::parse_response($raw // '', 'POST', 1) // {};
    # raw() gives up after 5 s: an answer at all means it did not wait
    is($res->{status}, 413, 'status 413, without the rest of the body');
    is(($res->{headers}{connection} // ''), 'close',
       'and the connection closed: the rest is not a next request');
    my $err = eval { GmsTest::json_decode($res->{body}) } // {};
    is($err->{exceptionClass}, $RESTLI_EXCEPTION, 'Rest.li error body');
    cluster_saw($e);
};


subtest 'only POST' => sub {
    my @cases = (
        [GET => '/open/operations?action=getEsTaskStatus'],
        [PUT => '/open/operations?action=getEsTaskStatus', task_body($KNOWN)],
        [DELETE => '/open/operations?action=getEsTaskStatus'],
        [GET => $ACTION, undef, \%AUTH],
        [GET => '/api/gms/operations?action=getEsTaskStatus', undef, \%AUTH],
        [PATCH => $ACTION, task_body($KNOWN), \%AUTH],
    );

    for my $case (@cases) {
        my ($method, $path, $body, $headers) = @$case;
        subtest "$method $path" => sub {
            my $res = $e->nginx->http($method, $path, $headers // {}, $body);
            is($res->{status}, 405, 'status 405');
            is($res->{headers}{allow}, 'POST', 'Allow: POST');
            my $err = eval { GmsTest::json_decode($res->{body}) } // {};
            is($err->{status}, 405, 'status in the body');
            cluster_saw($e);
        };
    }

    my $res = $e->nginx->http(HEAD =>
                              '/open/operations?action=getEsTaskStatus');
    is($res->{status}, 405, 'HEAD: status 405');
    is($res->{headers}{allow}, 'POST', 'HEAD: Allow: POST');

    cluster_saw($e);
    gms_saw_nothing($e);
};


subtest 'token and privilege' => sub {
    my $body = task_body($KNOWN);

    my @refused = (
        ['no token', {}],
        ['unknown token', { Authorization => 'Bearer nobody-has-this' }],
        ['expired token', { Authorization => 'Bearer expired' }],
        ['not a bearer token', { Authorization => "Basic $TOKEN" }],
    );
    for my $case (@refused) {
        my ($title, $headers) = @$case;
        subtest $title => sub {
            my $res = ask($e, $ACTION, $body, %$headers);
            is($res->{status}, 401, 'status 401');
            ok($res->{headers}{'www-authenticate'}, 'with a challenge');
            cluster_saw($e);
            gms_saw_nothing($e);
        };
    }

    my @unprivileged = (
        ['no privileges', 'no-privilege', $body],
        ['only look-alike privileges', 'other-privileges', $body],
        ['privilege checked before the body', 'no-privilege', '{'],
        ['on the frontend-proxy path', 'no-privilege', $body,
         '/api/gms/operations?action=getEsTaskStatus'],
    );
    for my $case (@unprivileged) {
        my ($title, $token, $request_body, $path) = @$case;
        subtest $title => sub {
            my $res = ask($e, $path // $ACTION, $request_body,
                          Authorization => "Bearer $token");
            is_restli_error($res, 401, $ES_UNAUTHORIZED);
            cluster_saw($e);
            gms_saw_nothing($e);
        };
    }

    subtest 'auth off: any Authorization is ignored' => sub {
        my $res = ask($e, '/open/operations?action=getEsTaskStatus', $body,
                      Authorization => 'Bearer nobody-has-this');
        is_deeply(value_of($res), $KNOWN_VALUE, 'answered');
        cluster_saw($e, $KNOWN);
    };
};


# Which privilege lets a token ask, per GMS release (gms_datahub_version;
# t/52-datahub-releases.t has every release): the default, 0.13.0, accepts
# GET_ES_TASK_STATUS_PRIVILEGE alone (OperationsResource at v0.13.0:
# MANAGE_SYSTEM_OPERATIONS alone no longer passes, as it did before the
# directive existed), 0.15.0 and later either it or
# MANAGE_SYSTEM_OPERATIONS (AuthUtil.isAPIOperationsAuthorized, PR 11549);
# privilege=off any valid token (GMS before 1.0.0 without
# REST_API_AUTHORIZATION_ENABLED), or a list of the operator's; a refusal
# is 401 in 0.13.0, 403 from 0.13.1, or gms_token_forbidden_status's.
subtest 'privilege rules by release' => sub {
    # each location strips its prefix: the edge answers on GMS's own
    # path only
    my $p = GmsTest::Edge->start(search => $SEARCH_CLUSTER, server => <<'S');
        location /rel013/ {
            rewrite ^/rel013(/operations)$ $1 break;
            gms_es_task_status /_es_tasks/ privilege=off;
            proxy_pass http://gms;
        }
        location /custom/ {
            rewrite ^/custom(/operations)$ $1 break;
            gms_es_task_status /_es_tasks/ privilege=VIEW_ANALYTICS,MANAGE_INGESTION;
            proxy_pass http://gms;
        }
        location /rel015/ {
            rewrite ^/rel015(/operations)$ $1 break;
            gms_datahub_version 0.15.0;
            gms_es_task_status /_es_tasks/;
            proxy_pass http://gms;
        }
        location /rel1/ {
            rewrite ^/rel1(/operations)$ $1 break;
            gms_datahub_version 1.0.0;
            gms_token_forbidden_status 403;
            gms_es_task_status /_es_tasks/;
            proxy_pass http://gms;

            location /rel1/admin/ {
                gms_token_require_privilege MANAGE_ACCESS_TOKENS;
                proxy_pass http://gms;
            }
        }
        location /outer/ {
            gms_es_task_status /_es_tasks/ privilege=off;
            proxy_pass http://gms;

            location /outer/inner/ {
                rewrite ^/outer/inner(/operations)$ $1 break;
                proxy_pass http://gms;
            }

            # its own directive without privilege=: the release's (the
            # default, 0.13.0: GET_ES_TASK_STATUS_PRIVILEGE alone), not the
            # enclosing location's privilege=off
            location /outer/own/ {
                rewrite ^/outer/own(/operations)$ $1 break;
                gms_es_task_status /_es_tasks/;
                proxy_pass http://gms;
            }
        }
S

    $p->token('task-reader', actor => 'urn:li:corpuser:tr');
    $p->grant('urn:li:corpuser:tr', $PRIVILEGE);
    $p->token('sysops', actor => 'urn:li:corpuser:ops');
    $p->grant('urn:li:corpuser:ops', 'MANAGE_SYSTEM_OPERATIONS');
    $p->token('analyst', actor => 'urn:li:corpuser:an');
    $p->grant('urn:li:corpuser:an', 'VIEW_ANALYTICS');
    $p->token('nobody', actor => 'urn:li:corpuser:nb');

    my $body = task_body($KNOWN);
    my @cases = (
        # path prefix, token, answered (1) or the refusal status
        ['', 'task-reader', 1],
        # 0.13.0: MANAGE_SYSTEM_OPERATIONS does not grant it
        ['', 'sysops', 401],
        ['', 'analyst', 401],
        ['', 'nobody', 401],
        ['/rel013', 'nobody', 1],
        ['/rel013', 'analyst', 1],
        ['/custom', 'analyst', 1],
        ['/custom', 'task-reader', 401],
        ['/rel015', 'sysops', 1],
        ['/rel015', 'task-reader', 1],
        ['/rel015', 'nobody', 403],
        ['/rel1', 'sysops', 1],
        ['/rel1', 'nobody', 403],
        ['/outer/inner', 'nobody', 1],
        ['/outer/own', 'nobody', 401],
        ['/outer/own', 'analyst', 401],
        ['/outer/own', 'sysops', 401],
        ['/outer/own', 'task-reader', 1],
    );

    for my $case (@cases) {
        my ($prefix, $token, $want) = @$case;
        subtest "$prefix/operations with '$token'" => sub {
            my $res = ask($p, "$prefix$ACTION", $body,
                          Authorization => "Bearer $token");

            if ($want == 1) {
                is_deeply(value_of($res), $KNOWN_VALUE, 'answered');
                cluster_saw($p, $KNOWN);
                return;
            }

            is_restli_error($res, $want, $ES_UNAUTHORIZED);
            like($res->{headers}{'www-authenticate'} // '',
                 qr/error="insufficient_scope"/, 'insufficient_scope');
            is($res->{headers}{'x-gms-result'}, 'forbidden',
               '$gms_token_result forbidden');
            cluster_saw($p);
        };
    }

    subtest 'an invalid token is 401 whatever the setting' => sub {
        my $res = ask($p, "/rel1$ACTION", $body,
                      Authorization => 'Bearer not-known');
        is($res->{status}, 401, 'status 401');
        cluster_saw($p);
    };

    subtest 'gms_token_forbidden_status 403 applies to '
            . 'gms_token_require_privilege too' => sub {
        my $res = $p->get('/rel1/admin/x', 'nobody');
        is($res->{status}, 403, 'status 403');
        like($res->{headers}{'www-authenticate'} // '',
             qr/error="insufficient_scope"/, 'insufficient_scope');
        is($p->get('/admin/x', 'nobody')->{status}, 401,
           'the default is 401');
    };

    $p->gms->clear_requests;
    $p->nginx->stop;
    is_deeply([$p->nginx->bad_log_lines], [], 'no alerts or crashes');
};


subtest 'nothing of the client request reaches the cluster' => sub {
    my %headers = (
        %AUTH,
        Cookie            => 'PLAY_SESSION=abc; actor=urn:li:corpuser:datahub',
        'X-Client-Secret' => 'do-not-forward',
        'X-Client-Host'   => 'evil.example',
    );

    for my $path ($ACTION, '/api/gms/operations?action=getEsTaskStatus') {
        is_deeply(value_of(ask($e, "$path&x=1", task_body($KNOWN),
                               %headers)),
                  $KNOWN_VALUE, "$path answered");
        cluster_saw($e, $KNOWN);
    }

    is_deeply(value_of(ask($e, '/open/operations?action=getEsTaskStatus',
                           task_body($KNOWN), %headers,
                           Host => 'evil.example')),
              $KNOWN_VALUE, 'another Host, auth off');
    cluster_saw($e, $KNOWN);

    gms_saw_nothing($e);
};


# Other actions and paths go to GMS as they came; the cluster sees none.

my $RESTORE = '{"aspect":"datasetProperties","start":0,"batchSize":10}';
my $TRUNCATE = '{"entityType":"dataset","aspect":"datasetProfile",'
               . '"endTimeMillis":1700000000000,"dryRun":true}';

my @PASSED = (
    ['/operations?action=restoreIndices', $RESTORE,
     '/operations?action=restoreIndices'],
    ['/operations?action=truncateTimeseriesAspect', $TRUNCATE,
     '/operations?action=truncateTimeseriesAspect'],
    ['/operations?action=getIndexSizes', '',
     '/operations?action=getIndexSizes'],
    ['/api/gms/operations?action=restoreIndices', $RESTORE,
     '/operations?action=restoreIndices'],
    ['/api/gms/operations?action=truncateTimeseriesAspect', $TRUNCATE,
     '/operations?action=truncateTimeseriesAspect'],
    ['/api/gms/operations?action=getIndexSizes', '',
     '/operations?action=getIndexSizes'],
    ['/operations?action=getEsTaskStatusNow', task_body($KNOWN),
     '/operations?action=getEsTaskStatusNow'],
    ['/operations?action=getestaskstatus', task_body($KNOWN),
     '/operations?action=getestaskstatus'],
    ['/operations?xaction=getEsTaskStatus', task_body($KNOWN),
     '/operations?xaction=getEsTaskStatus'],
    ['/operations', task_body($KNOWN), '/operations'],
    ['/entities?action=getEsTaskStatus', task_body($KNOWN),
     '/entities?action=getEsTaskStatus'],

    # only the operations resource, and Rest.li's parameter name exactly
    ['/api/gms/entities/x?action=getEsTaskStatus', task_body($KNOWN),
     '/entities/x?action=getEsTaskStatus'],
    ['/operations?Action=getEsTaskStatus', task_body($KNOWN),
     '/operations?Action=getEsTaskStatus'],
    ['/operations?ACTION=getEsTaskStatus', task_body($KNOWN),
     '/operations?ACTION=getEsTaskStatus'],
    ['/operations/x?action=getEsTaskStatus', task_body($KNOWN),
     '/operations/x?action=getEsTaskStatus'],
    ['/operationsX?action=getEsTaskStatus', task_body($KNOWN),
     '/operationsX?action=getEsTaskStatus'],
    ['/api/gms/operations/x?action=getEsTaskStatus', task_body($KNOWN),
     '/operations/x?action=getEsTaskStatus'],
    ['/operations?action=restoreIndices&action=getEsTaskStatus',
     task_body($KNOWN),
     '/operations?action=restoreIndices&action=getEsTaskStatus'],

    # a last segment "operations" is not the resource: GMS routes these to
    # the entities resource (key "operations") and the operations
    # resource's key "x"
    ['/api/gms/entities/operations?action=getEsTaskStatus', task_body($KNOWN),
     '/entities/operations?action=getEsTaskStatus'],
    ['/operations/x/operations?action=getEsTaskStatus', task_body($KNOWN),
     '/operations/x/operations?action=getEsTaskStatus'],
    ['/api/gms/operations/x/operations?action=getEsTaskStatus',
     task_body($KNOWN), '/operations/x/operations?action=getEsTaskStatus'],
    ['/operations/?action=getEsTaskStatus', task_body($KNOWN),
     '/operations/?action=getEsTaskStatus'],
);

subtest 'other actions go to GMS' => sub {
    for my $case (@PASSED) {
        my ($path, $body, $gms_uri) = @$case;
        subtest $path => sub {
            my $res = ask($e, $path, $body, %AUTH);
            is($res->{status}, 200, '200 from GMS');
            my $echo = eval { GmsTest::json_decode($res->{body}) } // {};
            is($echo->{method}, 'POST', 'POST');
            is($echo->{uri}, $gms_uri, 'uri');
            is($echo->{body}, $body, 'body unchanged');
            is(scalar @{ $e->gms->requests }, 1, 'GMS asked once');
            $e->gms->clear_requests;
            cluster_saw($e);
        };
    }

    subtest 'on the open location' => sub {
        my $res = ask($e, '/open/operations?action=restoreIndices', $RESTORE);
        my $echo = eval { GmsTest::json_decode($res->{body}) } // {};
        is($echo->{uri}, '/operations?action=restoreIndices',
           'uri, its prefix stripped');
        is($echo->{body}, $RESTORE, 'body unchanged');

        # not stripped: not GMS's operations resource
        $res = ask($e, '/open/x/operations?action=getEsTaskStatus',
                   task_body($KNOWN));
        $echo = eval { GmsTest::json_decode($res->{body}) } // {};
        is($echo->{uri}, '/open/x/operations?action=getEsTaskStatus',
           'a deeper path: to GMS');
        $e->gms->clear_requests;
        cluster_saw($e);
    };
};


subtest 'many at once, and keep-alive' => sub {
    my @tasks = map { $_->{task} } @FOUND[0 .. 5];
    my $all = $e->nginx->parallel([
        map { [POST => $ACTION, { %AUTH }, task_body($_)] } @tasks,
            'unknownNode:7'
    ]);
    is_deeply([map { value_of($_) } @$all],
              [(map { $_->{value} } @FOUND[0 .. 5]),
               not_found_value('unknownNode:7')],
              'each answer for its own task');
    cluster_saw($e, @tasks, 'unknownNode:7');

    my $open = '/open/operations?action=getEsTaskStatus';
    my $raw = $e->nginx->raw(join '',
        map { GmsTest::HTTP::build_request(POST => $open, @$_) }
        [{ Connection => 'keep-alive' }, task_body($KNOWN)],
        [{ Connection => 'keep-alive' }, '{"task":"nope"}'],
        [{ Connection => 'keep-alive' },
         '{"nodeId":"HI4YEIRMRuSdwsE4bCK7Bg","taskId":192}'],
        [{ Connection => 'keep-alive' }, undef],
        [{}, task_body('unknownNode:8')]);

    my @responses;
    while (length $raw) {
        my $res = GmsTest::HTTP::parse_response($raw, 'POST', 1) or last;
        push @responses, $res;
        my $end = index($raw, "\r\n\r\n") + 4 + length $res->{body};
        substr($raw, 0, $end, '');
    }

    is_deeply([map { $_->{status} } @responses], [200, 400, 200, 400, 200],
              'five pipelined requests, five answers');
    is_deeply(value_of($responses[0]), $KNOWN_VALUE, 'first');
    is_deeply(value_of($responses[2]), $KNOWN_VALUE, 'third');
    is_deeply(value_of($responses[4]), not_found_value('unknownNode:8'),
              'last');
    cluster_saw($e, $KNOWN, $KNOWN, 'unknownNode:8');
    gms_saw_nothing($e);
};


# nginx may keep a request body in a temporary file; the module must read
# it from there.
subtest 'request body in a file' => sub {
    my $f = GmsTest::Edge->start(search => $SEARCH_CLUSTER,
                                 server => 'client_body_in_file_only clean;');
    my $open = '/open/operations?action=getEsTaskStatus';
    my @te = ('Transfer-Encoding' => 'chunked');

    is_deeply(value_of(ask($f, $open, task_body($KNOWN))), $KNOWN_VALUE,
              'small body');
    is_deeply(value_of(ask($f, $open, chunked(padded_body($KNOWN, 8192)),
                           @te)),
              $KNOWN_VALUE, '8192 bytes, chunked');
    is_restli_error(ask($f, $open, '{"task":"foo"}'), 400, task_form('foo'));
    is(ask($f, $open, chunked(padded_body($KNOWN, 8193)), @te)->{status},
       413, '8193 bytes, chunked: status 413');
    cluster_saw($f, $KNOWN, $KNOWN);

    $f->nginx->stop;
    is_deeply([$f->nginx->bad_log_lines], [], 'no alerts or crashes');
};


subtest 'search cluster down' => sub {
    my $down = GmsTest::Edge->start;
    $down->token($TOKEN, actor => 'urn:li:corpuser:alice');
    $down->grant('urn:li:corpuser:alice', $PRIVILEGE);

    no_status_ok($down, 'closed port', $KNOWN, qr/connect\(\) failed/);

    subtest 'auth off' => sub {
        my $res = ask($down, '/open/operations?action=getEsTaskStatus',
                      '{"nodeId":"abc","taskId":5}');
        is_deeply(value_of($res), not_found_value('abc:5'), 'value');
    };

    is_deeply([map { "$_->{method} $_->{uri}" } @{ $down->gms->requests }],
              [], 'GMS saw nothing');

    $down->nginx->stop;
    is_deeply([$down->nginx->bad_log_lines], [], 'no alerts or crashes');
};


$e->nginx->stop;
is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');

done_testing();

#!/usr/bin/perl

# Hostile input, generated: over 3,000 cases sent over raw sockets to one
# nginx worker (about 12 s), in groups:
#
#   auth       Authorization headers: missing, empty, scheme only, wrong
#              scheme, tokens with spaces, several tokens in one header,
#              every byte value at every place of the header, UTF-8,
#              lengths from 1 byte to 64 KB, repeated headers
#   actor      X-DataHub-Actor sent by the client, in every spelling
#   body       getEsTaskStatus bodies: truncated at every byte, nested to
#              10,000 levels, huge numbers, duplicate keys, wrong types,
#              not UTF-8, control bytes, bytes around the JSON, empty
#   steering   every code point 0..255 inside the node, the number and
#              nodeId, and path, query and header tricks: the cluster may
#              only ever see GET /_tasks/<node>:<number> for a valid task
#   framing    chunked bodies (good and broken), sizes around the 8 KB
#              limit, bodies cut short, bodies and headers sent slowly
#   cluster    search-cluster answers chosen by the task id: truncated
#              at every few bytes, cut short on the wire, not JSON (every
#              byte value), not UTF-8, of the wrong shape, non-200,
#              enormous (8 MB boundary, 9.5 MB, a claimed terabyte, 10,000
#              digits, 10,000 levels), broken chunked encoding and header
#              sections, and a client gone while the cluster thinks
#
# Each case gets the answer README.md documents (or, where nginx itself
# refuses the bytes before the module runs, nginx's 4xx), and each group
# checks what reached GMS and the search cluster, that malformed headers
# cost no Redis lookup, and that the worker is still the same process.
# Cases run up to $PARALLEL at a time; every one has its own URI or task
# id so that what GMS and the cluster saw can be matched to it.

use strict;
use warnings;

use Cwd qw(abs_path);
use JSON::PP ();
use Test::More;
use Time::HiRes qw(time);

use GmsTest;
use GmsTest::Messages qw($RESTLI_EXCEPTION $CHALLENGE $INVALID_TOKEN
                         $MISSING_TOKEN $MALFORMED_HEADER $UNKNOWN_TOKEN
                         $BODY_TOO_LARGE $EITHER $ONLY_ONE $NOT_OBJECT
                         $INVALID_JSON task_form node_chars must_be
                         no_task_status);
use GmsTest::Edge;

# nginx reads load_module relative to its -p prefix (a temporary
# directory), so a relative GMS_MODULE would not be found there.
$ENV{GMS_MODULE} = abs_path($ENV{GMS_MODULE})
    if defined $ENV{GMS_MODULE} && -f $ENV{GMS_MODULE};

GmsTest::need_module();
GmsTest::need_redis();


my $PARALLEL = 32;

my $TOKEN = 'hostile-token';
my $ACTOR = 'urn:li:corpuser:alice';
my $SPOOFED_ACTOR = 'urn:li:corpuser:datahub';
my $COOKIE = 'PLAY_SESSION=hostile-cookie-value';
my $TOKEN_4096 = join '', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[$_ % 62] }
                          0 .. 4095;
my $TOKEN_1 = 'Z';

my $ACTION = '/operations?action=getEsTaskStatus';

my $BAD_JSON = qr/^\Q$INVALID_JSON\E: /;

sub hex_byte { sprintf '0x%02x', $_[0] }


# --- the stand-in search cluster --------------------------------------------

# The members of a task GMS's search client requires besides node, id and
# running_time_in_nanos (TaskInfo.PARSER), a comma after them.
my $TASK_INFO = '"type":"transport","action":"indices:data/write/reindex",'
                . '"start_time_in_millis":1,"cancellable":true,';

# A well-formed running task, and the value the module makes of it.
sub task_answer {
    my ($node, $number) = @_;
    return qq({"completed":false,"task":{"node":"$node","id":$number,)
           . $TASK_INFO . qq("status":{"total":10,"updated":3},)
           . qq("running_time_in_nanos":42}});
}

sub task_value {
    my ($task) = @_;
    return { completed => JSON::PP::false, taskId => $task,
             runTimeNanos => 42, status => { total => 10, updated => 3 } };
}

my $JSON_TYPE = ['Content-Type' => 'application/json; charset=UTF-8'];

# Hostile answers by task ("<node>:<number>"), filled below before the
# stub forks; any other task gets task_answer() for itself.
my %ANSWER;

# the search cluster: a case's answer (%ANSWER), else a running task of
# that node and number; 400 for anything but GET /_tasks/<node>:<number>
my $SEARCH_CLUSTER = GmsTest::Stub::search_cluster(
    tasks   => \%ANSWER,
    missing => sub {
        my ($req, $task) = @_;
        return [400, $JSON_TYPE, '{"error":"not a _tasks request"}']
            unless defined $task && $task =~ /^(.+):(\d+)\z/;
        return [200, $JSON_TYPE, task_answer($1, $2)];
    });


# --- the cases ---------------------------------------------------------------

# A case is one of GmsTest::HTTP::scripted() (segs, method, after, timeout;
# run_group sets the port) with: name, check (sub: response or undef -> ''
# or what is wrong), gms (URIs GMS should see), cluster (tasks the cluster
# should see), todo.


# --- what an answer should be ------------------------------------------------

sub body_json {
    my ($res) = @_;
    return eval { GmsTest::json_decode($res->{body}) };
}

# The module's refusal: status, JSON, the Rest.li error body with the
# message (a string or a pattern), and the challenge if given.
sub restli {
    my ($status, $message, $challenge) = @_;
    return sub {
        my ($res) = @_;
        return 'no response' unless $res;
        return "status $res->{status}, not $status"
            unless $res->{status} == $status;
        return 'not application/json'
            unless ($res->{headers}{'content-type'} // '') eq
                   'application/json';
        my $body = body_json($res);
        return 'body is not a JSON object' unless ref $body eq 'HASH';
        return 'not the Rest.li error shape'
            unless join(',', sort keys %$body) eq
                   'exceptionClass,message,status'
                   && $body->{exceptionClass} eq $RESTLI_EXCEPTION
                   && $body->{status} == $status;
        my $ok = ref $message ? $body->{message} =~ $message
                              : $body->{message} eq $message;
        return "message: $body->{message}" unless $ok;
        return 'challenge: ' . ($res->{headers}{'www-authenticate'} // '-')
            if defined $challenge
               && ($res->{headers}{'www-authenticate'} // '') ne $challenge;
        return '';
    };
}

sub missing   { restli(401, $MISSING_TOKEN, $CHALLENGE) }
sub malformed { restli(401, $MALFORMED_HEADER, $INVALID_TOKEN) }
sub unknown   { restli(401, $UNKNOWN_TOKEN, $INVALID_TOKEN) }
sub bad_body  { restli(400, $_[0]) }

# nginx's own refusal of the bytes, before the module runs: its HTML page
# with one of the given statuses (4xx unless said otherwise).
sub by_nginx {
    my @statuses = @_ ? @_ : (400);
    return sub {
        my ($res) = @_;
        return 'no response' unless $res;
        return "status $res->{status}, not nginx's @statuses"
            unless grep { $res->{status} == $_ } @statuses;
        return 'not nginx\'s own page'
            unless ($res->{headers}{'content-type'} // '') eq 'text/html';
        return '';
    };
}

# A request cut short: nginx answers nothing or 400, and never the module.
sub cut_short {
    return sub {
        my ($res) = @_;
        return '' unless $res;
        return "status $res->{status}" unless $res->{status} == 400;
        return '';
    };
}

# Proxied to GMS: the echo shows the client's Authorization as nginx read
# it and the module's X-DataHub-Actor only (none with auth off).
sub proxied {
    my ($authorization, $actor) = @_;
    return sub {
        my ($res) = @_;
        return 'no response' unless $res;
        return "status $res->{status}, not 200" unless $res->{status} == 200;
        my $echo = body_json($res);
        return 'not the echo of GMS' unless ref $echo eq 'HASH';
        my @actors = map { $_->[1] }
                     grep { lc($_->[0]) =~ /^x[-_]datahub[-_]actor$/ }
                     @{ $echo->{headers} };
        my $want = join '|', defined $actor ? ($actor) : ();
        return 'X-DataHub-Actor seen by GMS: ' . join('|', @actors)
            unless join('|', @actors) eq $want;
        my @auth = map { $_->[1] } grep { lc $_->[0] eq 'authorization' }
                   @{ $echo->{headers} };
        return 'Authorization seen by GMS: ' . join('|', @auth)
            if defined $authorization
               && join('|', @auth) ne $authorization;
        return '';
    };
}

my $DEEP_JSON = JSON::PP->new->utf8->canonical->allow_nonref->max_depth(4096);

# The Rest.li action answer: 200 and {"value": <JSON text>}; the text is
# compared decoded, or as text when given as a string.
sub value_is {
    my ($want) = @_;
    return sub {
        my ($res) = @_;
        return 'no response' unless $res;
        return "status $res->{status}, not 200: "
               . substr($res->{body} // '', 0, 200)
            unless $res->{status} == 200;
        return 'not application/json'
            unless ($res->{headers}{'content-type'} // '') eq
                   'application/json';
        my $outer = body_json($res);
        return 'not {"value": "..."}'
            unless ref $outer eq 'HASH'
                   && join(',', keys %$outer) eq 'value'
                   && defined $outer->{value} && !ref $outer->{value};
        my $text = $outer->{value};
        if (!ref $want) {
            return $text eq $want ? '' : 'value: ' . substr($text, 0, 200);
        }
        my $got = eval { $DEEP_JSON->decode($text) };
        return 'value is not JSON: ' . substr($text, 0, 200) unless $got;
        if (ref $got eq 'HASH' && exists $got->{status}) {
            # GMS's status is a string of JSON text, parsed a second time
            return 'status is not a string: ' . substr($text, 0, 200)
                if ref $got->{status};
            $got->{status} = eval { $DEEP_JSON->decode($got->{status}) }
                // return 'status is not JSON: ' . substr($text, 0, 200);
        }
        return $DEEP_JSON->encode($got) eq $DEEP_JSON->encode($want)
               ? '' : 'value: ' . substr($text, 0, 200);
    };
}

sub status_of { value_is(task_value($_[0])) }
sub failure_of { value_is({ error => no_task_status($_[0]) }) }

# A whole task, chunked, with the Content-Length the stand-in adds to
# every answer that has none: nginx 1.22 lets Transfer-Encoding win (RFC
# 9112, 6.3) and the task comes back; nginx 1.23.0 and later refuse the
# answer ("upstream sent "Content-Length" and "Transfer-Encoding" headers
# at the same time", ngx_http_upstream.c, nginx's commit d22157fad), a
# 502 for the subrequest, and the task's status is a failure.
sub chunked_with_length_of {
    my ($task) = @_;
    return GmsTest::nginx_at_least('1.23.0') ? failure_of($task)
                                             : status_of($task);
}


# --- requests -----------------------------------------------------------------

my @SPOOF_HEADERS = (
    ['Authorization', "Bearer $TOKEN"],
    ['Content-Type', 'application/json'],
    ['Cookie', $COOKIE],
    ['X-DataHub-Actor', $SPOOFED_ACTOR],
    ['Proxy-Authorization', 'Basic aG9zdGlsZTpzZWNyZXQ='],
);

# A getEsTaskStatus request with a body, framed by Content-Length unless
# other framing headers are given.
sub es_request {
    my ($body, @headers) = @_;
    return GmsTest::HTTP::build_request(POST => $ACTION,
                                        [@SPOOF_HEADERS, @headers], $body);
}

sub es_case {
    my ($name, $body, $check, %c) = @_;
    return raw_case($name, es_request($body, @{ delete $c{headers} // [] }),
                    method => 'POST', check => $check, %c);
}

# The body names a valid task: the cluster is asked for it and its status
# comes back.
sub es_ok {
    my ($name, $body, $task, %c) = @_;
    return es_case($name, $body, status_of($task), cluster => [$task], %c);
}

sub es_refused {
    my ($name, $body, $message, %c) = @_;
    return es_case($name, $body, bad_body($message), %c);
}

sub json_str {
    # a JSON string literal of bytes, every byte outside ASCII letters and
    # digits written as \u00XX
    my ($s) = @_;
    return '"' . join('', map { /[A-Za-z0-9]/ ? $_ : sprintf '\u%04x', ord }
                          split //, $s) . '"';
}

sub chunked {
    my ($body, $size, %o) = @_;
    my $out = '';
    for (my $at = 0; $at < length $body; $at += $size) {
        my $chunk = substr $body, $at, $size;
        $out .= sprintf($o{format} // '%x', length $chunk) . ($o{ext} // '')
                . "\r\n$chunk\r\n";
    }
    return $out . '0' . ($o{ext} // '') . "\r\n" . ($o{trailer} // '')
           . "\r\n";
}

sub padded_body {
    my ($task, $size) = @_;
    my $head = qq({"task":"$task");
    return $head . (' ' x ($size - length($head) - 1)) . '}';
}

my @CHUNKED = (['Transfer-Encoding', 'chunked']);

# === cluster: hostile answers from the search cluster ==========================

# Built before the edge starts: the stand-in cluster's workers are forked
# with %ANSWER filled.  The cases run last.

my @CLUSTER_CASES;

sub answer_case {
    my ($name, $task, $answer, $check) = @_;
    $ANSWER{$task} = $answer;
    push @CLUSTER_CASES, es_case("cluster: $name",
                                 qq({"task":"$task"}),
                                 $check // failure_of($task),
                                 cluster => [$task], timeout => 15);
}

{
    my $valid = task_answer('cutA', 1);

    # truncated JSON at every few bytes (nginx gets all that was sent)
    for (my $len = 0; $len < length $valid; $len += 3) {
        my $task = 'cutA:' . ($len + 1);
        answer_case("answer cut to $len bytes", $task,
                    [200, $JSON_TYPE, substr($valid, 0, $len)]);
    }

    # cut short on the wire: fewer bytes than the Content-Length says;
    # nginx waits for the rest until proxy_read_timeout (1s)
    for my $len (0, 1, 50, length($valid) - 1, length $valid) {
        my $task = 'wireA:' . ($len + 1);
        answer_case("Content-Length " . (length($valid) + 10)
                    . ", $len bytes sent", $task,
                    [200, [@$JSON_TYPE, 'Content-Length' => length($valid)
                                                            + 10],
                     substr(task_answer('wireA', $len + 1), 0, $len)]);
    }
    answer_case('a whole task, then 1 byte short of its Content-Length',
                'wireB:1', [200, [@$JSON_TYPE, 'Content-Length' =>
                                  length(task_answer('wireB', 1)) + 1],
                            task_answer('wireB', 1)]);
    answer_case('chunked and Content-Length', 'wireC:1',
                [200, [@$JSON_TYPE, 'Transfer-Encoding' => 'chunked'],
                 chunked(task_answer('wireC', 1), 10)],
                chunked_with_length_of('wireC:1'));
    answer_case('chunked, cut short', 'wireD:1',
                [200, [@$JSON_TYPE, 'Transfer-Encoding' => 'chunked',
                       'Content-Length' => 1000],
                 substr(chunked(task_answer('wireD', 1), 10), 0, 80)]);
    # a complete JSON document, then the connection closed before the
    # answer's end: incomplete, a failure, whatever the JSON looks like
    answer_case('chunked, a whole task but no last chunk', 'wireF:1',
                [200, [@$JSON_TYPE, 'Transfer-Encoding' => 'chunked'],
                 chunked(task_answer('wireF', 1), 10) =~ s/0\r\n\r\n\z//r]);
    answer_case('chunked, complete, with Connection: close', 'wireF:3',
                [200, [@$JSON_TYPE, 'Transfer-Encoding' => 'chunked',
                       'Connection' => 'close'],
                 chunked(task_answer('wireF', 3), 10)],
                chunked_with_length_of('wireF:3'));
    # the cluster closes the connection after it: the close is no end
    answer_case('chunked, a whole task, Connection: close, no last chunk',
                'wireF:4',
                [200, [@$JSON_TYPE, 'Transfer-Encoding' => 'chunked',
                       'Connection' => 'close'],
                 chunked(task_answer('wireF', 4), 10) =~ s/0\r\n\r\n\z//r]);
    answer_case('chunked, a whole task, last chunk cut', 'wireF:2',
                [200, [@$JSON_TYPE, 'Transfer-Encoding' => 'chunked'],
                 chunked(task_answer('wireF', 2), 10) =~ s/\r\n\z//r]);
    # Broken chunked encoding: nginx's upstream ends the subrequest with
    # NGX_ERROR; the client still gets 200 and the failure value.
    my $answer = task_answer('wireE', 1);
    answer_case('chunked, a size that is not hex', 'wireE:1',
                [200, [@$JSON_TYPE, 'Transfer-Encoding' => 'chunked'],
                 "zz\r\n$answer\r\n0\r\n\r\n"]);
    $answer = task_answer('wireE', 2);
    answer_case('chunked, data longer than its size', 'wireE:2',
                [200, [@$JSON_TYPE, 'Transfer-Encoding' => 'chunked'],
                 sprintf("%x\r\n%s  \r\n0\r\n\r\n", length $answer,
                         $answer)]);
    $answer = task_answer('wireE', 3);
    answer_case('chunked, a size beyond 64 bits', 'wireE:3',
                [200, [@$JSON_TYPE, 'Transfer-Encoding' => 'chunked'],
                 "10000000000000000" . sprintf('%x', length $answer)
                 . "\r\n$answer\r\n0\r\n\r\n"]);

    # not JSON: every single byte
    for my $b (0 .. 255) {
        answer_case('answer is the byte ' . hex_byte($b),
                    'byteA:' . ($b + 1), [200, $JSON_TYPE, chr $b]);
    }

    # every raw byte inside a string of a task: control bytes and bytes
    # that are not UTF-8 make it no JSON; the others are fine
    for my $b (0 .. 31, 0x22, 0x5c, 0x80 .. 0xff) {
        my $task = 'byteB:' . ($b + 1);
        (my $answer = task_answer('byteB', $b + 1))
            =~ s/"transport"/"trans${\ chr $b}port"/;
        answer_case('raw byte ' . hex_byte($b) . ' inside a string',
                    $task, [200, $JSON_TYPE, $answer]);
    }

    my @not_json = (
        ['HTML', "<html><body><h1>502 Bad Gateway</h1></body></html>\n"],
        ['plain text', "OK\n"],
        ['YAML', "completed: false\ntask:\n  node: x\n"],
        ['two JSON objects', task_answer('x', 1) . task_answer('x', 1)],
        ['a task then garbage', task_answer('x', 1) . 'garbage'],
        ['single quotes', "{'completed':false}"],
        ['a comment', '/* */' . task_answer('x', 1)],
        ['NaN', '{"completed":false,"task":{"node":"x","id":NaN}}'],
        ['UTF-16', join "\0", split //, task_answer('x', 1)],
        ['byte order mark', "\xef\xbb\xbf" . task_answer('x', 1)],
        ['NUL escape in the node',
         '{"completed":false,"task":{"node":"x\u0000y","id":1}}'],
        ['lone surrogate escape',
         '{"completed":false,"task":{"node":"x\ud800","id":1}}'],
        ['not UTF-8 in a key', "{\"completed\":false,\"\xff\":1,"
                               . '"task":{"node":"x","id":1}}'],
        ['JSON string', '"{\"completed\":false}"'],
        ['JSON null', 'null'], ['JSON number', '1'], ['JSON true', 'true'],
        ['white space only', " \r\n\t "],
        ['gzip bytes', "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"],
    );
    my $k = 0;
    answer_case("not JSON: $_->[0]", 'notJson:' . ++$k,
                [200, $JSON_TYPE, $_->[1]]) for @not_json;

    # JSON of the wrong shape
    my $task_with = sub {
        my (%f) = @_;
        my %t = (node => '"shape"', id => 1, type => '"transport"',
                 action => '"indices:data/write/reindex"',
                 start_time_in_millis => 1, cancellable => 'true',
                 status => '{"total":1}', running_time_in_nanos => 7, %f);
        return '{' . join(',', map { qq("$_":$t{$_}) }
                                grep { defined $t{$_} } sort keys %t) . '}';
    };
    my @shapes = (
        ['an empty object', '{}'],
        ['an array', '[]'],
        ['an array of a task', '[' . task_answer('x', 1) . ']'],
        ['the task alone', $task_with->()],
        ['a search error', '{"error":{"type":"x","reason":"y"},"status":500}'],
        ['acknowledged', '{"acknowledged":true}'],
        ['a list of nodes', '{"nodes":{"n1":{"tasks":{"n1:1":'
                            . $task_with->() . '}}}}'],
        (map { ["completed $_->[0]", qq({"completed":$_->[1],"task":)
                                     . $task_with->() . '}'] }
         ['a string', '"false"'], ['a number', '0'], ['null', 'null'],
         ['an array', '[]'], ['an object', '{}']),
        ['completed missing', '{"task":' . $task_with->() . '}'],
        (map { ["task $_->[0]", qq({"completed":false,"task":$_->[1]})] }
         ['missing', 'null'], ['a string', '"shape:1"'],
         ['a number', '1'], ['an array', '[' . $task_with->() . ']'],
         ['true', 'true']),
        ['task key missing', '{"completed":false}'],
        (map { ["node $_->[0]", '{"completed":false,"task":'
                                . $task_with->(node => $_->[1]) . '}'] }
         ['missing', undef], ['null', 'null'], ['a number', '1'],
         ['an array', '["shape"]'], ['an object', '{}'], ['true', 'true'],
         ['of 129 bytes', '"' . ('n' x 129) . '"']),
        (map { ["id $_->[0]", '{"completed":false,"task":'
                              . $task_with->(id => $_->[1]) . '}'] }
         ['missing', undef], ['null', 'null'], ['a string', '"1"'],
         ['a fraction', '1.5'], ['1e3', '1e3'], ['true', 'true'],
         ['an array', '[1]'], ['beyond int64', '9223372036854775808'],
         ['of 10,000 digits', '9' x 10_000]),
        (map { ["running_time_in_nanos $_->[0]", '{"completed":false,"task":'
                . $task_with->(running_time_in_nanos => $_->[1]) . '}'] }
         ['missing', undef], ['null', 'null'],
         ['a string', '"7"'], ['a fraction', '7.5'], ['true', 'true'],
         ['an array', '[7]'], ['an object', '{}'], ['1e400', '1e400'],
         ['beyond int64', '18446744073709551616']),
        (map { ["status $_->[0]", '{"completed":false,"task":'
                . $task_with->(status => $_->[1]) . '}'] }
         ['null', 'null'],
         ['a string', '"running"'], ['a number', '1'], ['true', 'true'],
         ['an array', '[{"total":1}]']),
        (map { my $member = $_;
               map { ["$member $_->[0]", '{"completed":false,"task":'
                      . $task_with->($member => $_->[1]) . '}'] }
               ['missing', undef], ['null', 'null'], ['an object', '{}']
             } qw(type action start_time_in_millis cancellable)),
        (map { ["description $_->[0]", '{"completed":false,"task":'
                . $task_with->(description => $_->[1]) . '}'] }
         ['null', 'null'], ['a number', '1'], ['an array', '["d"]']),
    );
    $k = 0;
    answer_case("wrong shape: $_->[0]", 'shape:' . ++$k,
                [200, $JSON_TYPE, $_->[1]]) for @shapes;

    # shapes that are still a task
    answer_case('node of 128 bytes', 'shapeOk:1',
                [200, $JSON_TYPE, task_answer('n' x 128, 1)],
                status_of(('n' x 128) . ':1'));
    answer_case('another task than asked for', 'shapeOk:2',
                [200, $JSON_TYPE, task_answer('other', 99)],
                status_of('other:99'));
    answer_case('unknown fields everywhere', 'shapeOk:3',
                [200, $JSON_TYPE, '{"x":[{}],"completed":false,"task":'
                 . '{"node":"shapeOk","id":3,"y":null,' . $TASK_INFO
                 . '"status":{"total":10,"updated":3},'
                 . '"running_time_in_nanos":42},"response":"z"}'],
                status_of('shapeOk:3'));
    answer_case('a status 2000 levels deep (jansson stops at 2048)',
                'deepOk:1',
                [200, $JSON_TYPE, '{"completed":true,"task":{"node":"deepOk",'
                 . '"id":1,' . $TASK_INFO
                 . '"running_time_in_nanos":7,"status":{"d":'
                 . ('[' x 2000) . (']' x 2000) . '}}}'],
                value_is('{"completed":true,"taskId":"deepOk:1",'
                         . '"runTimeNanos":7,"status":"{\\"d\\":'
                         . ('[' x 2000) . (']' x 2000) . '}"}'));

    # the client goes away while the cluster takes its time: nothing is
    # answered, the worker goes on
    for my $after ('close', 'shutdown') {
        for my $delay (0.2, 0.5, 1.5) {
            my $task = "goneA:" . ($after eq 'close' ? 1 : 2) . $delay * 10;
            $ANSWER{$task} = [200, $JSON_TYPE,
                              task_answer('goneA', ($task =~ /:(\d+)/)[0]),
                              $delay];
            # nginx takes a half close for a client gone (499) too, and
            # may drop the subrequest before it reached the cluster
            push @CLUSTER_CASES, es_case(
                "cluster: client gone ($after) during a ${delay} s answer",
                qq({"task":"$task"}), cut_short(),
                maybe_cluster => [$task], after => $after);
        }
    }

    # other statuses, each with a well-formed task: a success is read as
    # one (204 has no body: no task), 404 is "no task", and anything else
    # is what GMS's search client throws on, a 500 naming the status
    for my $status (201, 202, 203, 204, 206, 300, 301, 302, 304, 307, 400,
                    401, 403, 404, 405, 409, 410, 429, 500, 502, 503, 504,
                    599, 999) {
        my $task = "status:$status";
        my $check = $status == 204 || $status == 404 ? failure_of($task)
                  : $status < 300 ? status_of($task)
                  : restli(500, "Search cluster answered HTTP $status to the "
                                . "task status request for $task");
        answer_case("status $status with a task", $task,
                    [$status, $JSON_TYPE, task_answer('status', $status)],
                    $check);
    }

    # hostile header sections around a well-formed task
    my @headers = (
        ['a 16 KB header (over proxy_buffer_size)', ['X-Big' => 'x' x 16_384]],
        ['1000 headers', [map { ("X-H$_" => $_) } 1 .. 1000]],
        ['a NUL in a header', ['X-Nul' => "a\0b"]],
        ['a header without a name', ['' => 'x']],
        ['a space in a header name', ['X Bad' => 'x']],
        ['Content-Length twice, different',
         ['Content-Length' => 5, 'Content-Length' => 500]],
        ['Content-Length negative', ['Content-Length' => -1]],
        ['Content-Length not a number', ['Content-Length' => '12abc']],
    );
    $k = 0;
    for my $h (@headers) {
        my $task = 'headerA:' . ++$k;
        answer_case("header section: $h->[0]", $task,
                    [200, [@$JSON_TYPE, @{ $h->[1] }],
                     task_answer('headerA', $k)]);
    }

    # enormous (the edge's subrequest_output_buffer_size is 8m)
    my $limit = 8 << 20;
    my $head = task_answer('bigA', 1);
    answer_case('exactly 8 MB', 'bigA:1',
                [200, $JSON_TYPE, $head . (' ' x ($limit - length $head))],
                status_of('bigA:1'));
    $head = task_answer('bigB', 1);
    answer_case('8 MB + 1 byte', 'bigB:1',
                [200, $JSON_TYPE, $head . (' ' x ($limit + 1 - length $head))]);
    answer_case('9.5 MB of status', 'bigC:1',
                [200, $JSON_TYPE, '{"completed":false,"task":{"node":"bigC",'
                 . '"id":1,' . $TASK_INFO . '"running_time_in_nanos":1,'
                 . '"status":{"s":"' . ('x' x (9.5 * (1 << 20)))
                 . '"}}}']);
    answer_case('Content-Length of a terabyte, a task sent', 'bigD:1',
                [200, [@$JSON_TYPE, 'Content-Length' => 1 << 40],
                 task_answer('bigD', 1)]);
    answer_case('Content-Length beyond 64 bits', 'bigE:1',
                [200, [@$JSON_TYPE, 'Content-Length' => '9' x 30],
                 task_answer('bigE', 1)]);
    answer_case('status nested 10,000 deep', 'bigF:1',
                [200, $JSON_TYPE, '{"completed":false,"task":{"node":"bigF",'
                 . '"id":1,' . $TASK_INFO . '"running_time_in_nanos":1,'
                 . '"status":{"d":' . ('[' x 10_000) . (']' x 10_000)
                 . '}}}']);
    answer_case('10,000 levels, unclosed', 'bigG:1',
                [200, $JSON_TYPE, '[' x 10_000]);
    answer_case('a 1 MB string in the status', 'bigH:1',
                [200, $JSON_TYPE, '{"completed":false,"task":{"node":"bigH",'
                 . '"id":1,' . $TASK_INFO
                 . '"running_time_in_nanos":1,"status":{"s":"'
                 . ('y' x (1 << 20)) . '"}}}'],
                value_is({ completed => JSON::PP::false, taskId => 'bigH:1',
                           runTimeNanos => 1,
                           status => { s => 'y' x (1 << 20) } }));
    answer_case('20,000 keys in the status', 'bigI:1',
                [200, $JSON_TYPE, '{"completed":false,"task":{"node":"bigI",'
                 . '"id":1,' . $TASK_INFO
                 . '"running_time_in_nanos":1,"status":{'
                 . join(',', map { qq("k$_":$_) } 1 .. 20_000) . '}}}'],
                value_is({ completed => JSON::PP::false, taskId => 'bigI:1',
                           runTimeNanos => 1,
                           status => { map { ("k$_" => $_) } 1 .. 20_000 } }));
}

# --- running a group ---------------------------------------------------------

my $e;
my $n;
my @WORKERS;
my @ALL_CLUSTER_REQUESTS;
my $cases_run = 0;

sub run_group {
    my ($title, $cases, %opt) = @_;

    subtest $title => sub {
        $_->{port} //= $n->port for @$cases;

        $e->gms->clear_requests;
        $e->search->clear_requests;
        my $lookups = $e->lookups;
        my $t0 = time;

        GmsTest::HTTP::scripted($cases, parallel => $PARALLEL);

        for my $c (@$cases) {
            local $TODO = $c->{todo};
            my $why = $c->{connect_error} ? "connect: $c->{connect_error}"
                                          : $c->{check}->($c->{res});
            ok(!$why, $c->{name})
                or diag("$c->{name}: $why\n  got: "
                        . GmsTest::HTTP::describe_scripted($c));
        }
        $cases_run += @$cases;

        # GMS and the cluster are asked after nginx answered; a case cut
        # short may still be on its way
        my @want_gms = sort map { @{ $_->{gms} // [] } } @$cases;
        my @want_cluster = sort map { "GET /_tasks/$_" }
                           map { @{ $_->{cluster} // [] } } @$cases;
        GmsTest::wait_until(sub {
            @{ $e->gms->requests } >= @want_gms
            && @{ $e->search->requests } >= @want_cluster
        }, 2);
        select undef, undef, undef, 0.1;

        my $gms = $e->gms->requests;
        my $cluster = $e->search->requests;
        push @ALL_CLUSTER_REQUESTS, @$cluster;

        is_deeply([sort map { $_->{uri} } @$gms], \@want_gms,
                  'GMS saw exactly the requests that should reach it')
            or diag(explain([map { $_->{uri} } @$gms]));
        my %maybe = map { ("GET /_tasks/$_" => 1) }
                    map { @{ $_->{maybe_cluster} // [] } } @$cases;
        is_deeply([sort grep { !$maybe{$_} }
                   map { "$_->{method} $_->{uri}" } @$cluster],
                  \@want_cluster,
                  'the cluster saw exactly the tasks that should reach it')
            or diag(explain([map { "$_->{method} $_->{uri}" } @$cluster]));

        my $max_lookups = $opt{lookups} // 0;
        cmp_ok($e->lookups - $lookups, '<=', $max_lookups,
               "Redis lookups: at most $max_lookups");

        is_deeply([$n->worker_pids], \@WORKERS, 'same worker process');
        unlike($n->error_log, qr/exited on signal|\[alert\]|\[crit\]/,
               'no crash or alert so far');
        note(sprintf '%s: %d cases in %.1f s', $title, scalar @$cases,
             time - $t0);
    };
}

sub raw_case {
    my ($name, $bytes, %c) = @_;
    return { name => $name, segs => [[0, $bytes]], %c };
}


# === auth: the Authorization header ==========================================

# Requests carry the header last so that a stray LF or CR in the value
# shows what nginx makes of the rest of the line.
sub auth_request {
    my ($path, @lines) = @_;
    return "GET $path HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
           . join('', map { "$_\r\n" } @lines) . "\r\n";
}

my %SEEDED = map { $_ => 1 } $TOKEN, $TOKEN_4096, $TOKEN_1;

# What README.md promises for an Authorization value (as nginx passes it:
# leading and trailing spaces removed): "Bearer" case-insensitive, white
# space, a token68 of 1..4096 bytes (padding included), white space.
sub auth_verdict {
    my ($value) = @_;
    return 'missing' unless defined $value;
    $value =~ s/\A +//;
    $value =~ s/ +\z//;
    return 'malformed'
        unless $value =~ m{\A[Bb][Ee][Aa][Rr][Ee][Rr][ \t]+
                           ([A-Za-z0-9\-._~+/]+=*)[ \t]*\z}x
               && length $1 <= 4096;
    return $SEEDED{$1} ? 'ok' : 'unknown';
}

my $auth_seq = 0;

# One request with "Authorization: $value" (undef: no header); expected
# from the bytes: a NUL, or a CR not followed by CRs and an LF, is refused
# by nginx (400); an LF (or CRs and an LF) ends the header line there
# (nginx accepts a bare LF as a line end, and skips CRs before it), the rest being a header line of its own, which nginx refuses if
# its name has a space; a line over 8k (the default
# large_client_header_buffers, CRLF included) is refused by nginx.
sub auth_case {
    my ($name, $value, %opt) = @_;

    my $path = '/hostile/auth/' . ++$auth_seq;
    my $line = defined $value ? "Authorization: $value" : undef;
    my @lines = (@{ $opt{before} // [] }, $line // (),
                 @{ $opt{after} // [] });

    my ($check, $verdict);
    if (defined $value && ("$value\r\n" =~ /\0|\r(?!\r*\n)|\n[^:]* /
                           || length($line) + 2 > 8192)) {
        $check = by_nginx(400);
    } else {
        my $seen = defined $value ? (split /\r*\n/, "$value\r\n", 2)[0]
                                  : undef;
        $verdict = $opt{verdict} // auth_verdict($seen);
        (my $trimmed = $seen // '') =~ s/\A +|[ \t]+\z//g;
        $check = $verdict eq 'ok'      ? proxied($trimmed, $ACTOR)
               : $verdict eq 'missing' ? missing()
               : $verdict eq 'unknown' ? unknown()
               :                         malformed();
    }

    return raw_case("$name -> " . ($verdict // 'nginx 400'),
                    auth_request($path, @lines),
                    check => $check,
                    gms => ($verdict // '') eq 'ok' ? [$path] : [],
                    verdict => $verdict // 'nginx',
                    lookup => ($verdict // '') =~ /^(ok|unknown)\z/ ? 1 : 0);
}

sub lookups_of {
    my $count = 0;
    $count += $_->{lookup} // 0 for @{ $_[0] };
    return $count;
}

$e = GmsTest::Edge->start(search => $SEARCH_CLUSTER);
$e->token($_, actor => $ACTOR) for keys %SEEDED;
$e->grant($ACTOR, 'GET_ES_TASK_STATUS_PRIVILEGE');

$n = $e->nginx;
@WORKERS = $n->worker_pids;
is(scalar @WORKERS, 1, 'one worker');

my @shapes = (
    ['no Authorization header', undef],
    ['empty value', ''],
    ['spaces only', '   '],
    ['scheme only', 'Bearer'],
    ['scheme only, lower case', 'bearer'],
    ['scheme and a space', 'Bearer '],
    ['scheme and spaces', 'Bearer      '],
    ['scheme and a tab', "Bearer\t"],
    ['scheme, colon', "Bearer:$TOKEN"],
    ['scheme, equals', "Bearer=$TOKEN"],
    ['scheme glued to the token', "Bearer$TOKEN"],
    ['scheme misspelt', "Bearr $TOKEN"],
    ['scheme longer', "Bearers $TOKEN"],
    ['scheme quoted', qq("Bearer" $TOKEN)],
    ['Basic', 'Basic YWxpY2U6c2VjcmV0'],
    ['Basic with the token', "Basic $TOKEN"],
    ['Digest', 'Digest username="alice", realm="DataHub", nonce="x"'],
    ['Token scheme', "Token $TOKEN"],
    ['OAuth scheme', "OAuth $TOKEN"],
    ['JWT scheme', "JWT $TOKEN"],
    ['token alone', $TOKEN],
    ['token then scheme', "$TOKEN Bearer"],
    ['scheme twice', "Bearer Bearer $TOKEN"],
    ['two tokens, space', "Bearer $TOKEN $TOKEN"],
    ['two tokens, comma', "Bearer $TOKEN, $TOKEN"],
    ['two credentials, comma', "Bearer $TOKEN, Bearer $TOKEN"],
    ['bearer and basic', "Bearer $TOKEN, Basic YWxpY2U6c2VjcmV0"],
    ['token with a space', 'Bearer hostile token'],
    ['token with spaces around', "Bearer   $TOKEN   "],
    ['token quoted', qq(Bearer "$TOKEN")],
    ['token with a comma', "Bearer $TOKEN,"],
    ['token with a semicolon', "Bearer $TOKEN;"],
    ['auth-param form', "Bearer token=$TOKEN"],
    ['padding only', 'Bearer ==='],
    ['padding in the middle', 'Bearer abc=def'],
    ['padding then more', "Bearer $TOKEN==x"],
    ['valid', "Bearer $TOKEN"],
    ['valid, scheme upper case', "BEARER $TOKEN"],
    ['valid, scheme mixed case', "bEaReR $TOKEN"],
    ['valid, tab and spaces', "Bearer \t $TOKEN \t"],
    ['unknown token', 'Bearer no-such-token'],
    ['unknown token with padding', "Bearer ${TOKEN}=="],
    ['UTF-8 e acute in the token', "Bearer host\xc3\xa9ile"],
    ['UTF-8 emoji in the token', "Bearer hostile\xf0\x9f\x94\x91"],
    ['UTF-8 no-break space before the token', "Bearer\xc2\xa0$TOKEN"],
    ['UTF-8 ideographic space after the token', "Bearer $TOKEN\xe3\x80\x80"],
    ['UTF-8 BOM before the scheme', "\xef\xbb\xbfBearer $TOKEN"],
    ['UTF-8 fullwidth scheme', "\xef\xbc\xa2earer $TOKEN"],
    ['overlong UTF-8 slash', "Bearer host\xc0\xafile"],
    ['UTF-8 encoded surrogate', "Bearer host\xed\xa0\x80ile"],
    ['Latin-1 byte', "Bearer host\xe9ile"],
    ['Turkish dotless i in the scheme', "Bear\xc4\xb1er $TOKEN"],
    ['percent-encoded space', "Bearer%20$TOKEN"],
    ['token of 1 byte, seeded', "Bearer $TOKEN_1"],
    ['token of 4096 bytes, seeded', "Bearer $TOKEN_4096"],
    ['token of 4096 bytes, seeded, padding', "Bearer $TOKEN_4096="],
    ['token of 4097 bytes', 'Bearer ' . ('a' x 4097)],
    ['token of 4096 bytes and 1 of padding, unseeded',
     'Bearer ' . ('a' x 4095) . '='],
);

my @lengths = (1, 2, 100, 1000, 4095, 4096, 4097, 4100, 5000, 8000,
               8166 .. 8178, 8200, 16_384, 65_536);

subtest 'auth' => sub {
    my @cases = map { auth_case("auth: $_->[0]", $_->[1]) } @shapes;

    push @cases, map { auth_case("auth: unseeded token of $_ bytes",
                                 'Bearer ' . ('t' x $_)) } @lengths;
    push @cases, map { auth_case("auth: $_ bytes of garbage",
                                 'x' x $_) } @lengths;

    # every byte value inside the token
    for my $b (0 .. 255) {
        push @cases, auth_case('auth: byte ' . hex_byte($b)
                               . ' inside the token',
                               'Bearer hostile' . chr($b) . '-token');
    }

    # control bytes, DEL, some of the rest, at the other places
    my @bytes = (0 .. 32, 127, 128, 0xa0, 0xc3, 0xff,
                 map { ord } split //, q(=,;:"'\\/+-._~<>{}()[]@?));
    for my $b (@bytes) {
        my $c = chr $b;
        push @cases,
            auth_case('auth: byte ' . hex_byte($b) . ' before the scheme',
                      "${c}Bearer $TOKEN"),
            auth_case('auth: byte ' . hex_byte($b) . ' after the scheme',
                      "Bearer $c$TOKEN"),
            auth_case('auth: byte ' . hex_byte($b) . ' after the token',
                      "Bearer $TOKEN$c");
    }

    run_group('Authorization values', \@cases, lookups => lookups_of(\@cases));

    # the same refusals again, alone: not one Redis lookup between them
    my @again = grep { $_->{verdict} =~ /^(?:malformed|missing)\z/ }
                map { auth_case("auth again, no lookup: $_->[0]", $_->[1]) }
                @shapes;
    push @again, grep { $_->{verdict} eq 'malformed' }
                 map { auth_case('auth again, no lookup: byte '
                                 . hex_byte($_) . ' inside the token',
                                 'Bearer hostile' . chr($_) . '-token') }
                 0 .. 255;
    run_group('malformed Authorization: no Redis lookup', \@again,
              lookups => 0);

    # several Authorization headers: nginx refuses the duplicate
    my @several = (
        ['the same token twice', ["Authorization: Bearer $TOKEN"],
         ["Authorization: Bearer $TOKEN"]],
        ['valid then unknown', ["Authorization: Bearer $TOKEN"],
         ['Authorization: Bearer other']],
        ['unknown then valid', ['Authorization: Bearer other'],
         ["Authorization: Bearer $TOKEN"]],
        ['valid then empty', ["Authorization: Bearer $TOKEN"],
         ['Authorization:']],
        ['empty then valid', ['Authorization:'],
         ["Authorization: Bearer $TOKEN"]],
        ['lower-case name second', ["Authorization: Bearer $TOKEN"],
         ["authorization: Bearer $TOKEN"]],
        ['upper-case name second', ["Authorization: Bearer $TOKEN"],
         ["AUTHORIZATION: Basic YWxpY2U6c2VjcmV0"]],
        ['three headers', ["Authorization: Bearer $TOKEN",
                           "Authorization: Bearer $TOKEN"],
         ["Authorization: Bearer $TOKEN"]],
        ['one header between others', ["Authorization: Bearer $TOKEN",
                                       'X-Other: 1'],
         ['Authorization: Bearer other']],
    );
    my @dup = map {
        my ($title, $before, $after) = @$_;
        my $path = '/hostile/auth/' . ++$auth_seq;
        raw_case("several Authorization headers: $title -> nginx 400",
                 auth_request($path, @$before, @$after),
                 check => by_nginx(400));
    } @several;

    # headers that are not Authorization
    my @other = (
        ['Proxy-Authorization only', "Proxy-Authorization: Bearer $TOKEN"],
        ['X-Authorization only', "X-Authorization: Bearer $TOKEN"],
        ['Authorisation (British) only', "Authorisation: Bearer $TOKEN"],
        ['Authorization with an underscore', "Authori_zation: Bearer $TOKEN"],
        ['Cookie only', "Cookie: token=$TOKEN"],
    );
    push @dup, map {
        my ($title, $line) = @$_;
        my $path = '/hostile/auth/' . ++$auth_seq;
        raw_case("no Authorization: $title -> missing",
                 auth_request($path, $line), check => missing());
    } @other;

    # broken header syntax around Authorization
    my @syntax = (
        ['space before the colon', "Authorization : Bearer $TOKEN"],
        ['tab before the colon', "Authorization\t: Bearer $TOKEN"],
        ['folded onto a second line', "Authorization: Bearer\r\n $TOKEN"],
        ['folded with a tab', "Authorization: Bearer\r\n\t$TOKEN"],
        ['name with NUL', "Author\0ization: Bearer $TOKEN"],
    );
    push @dup, map {
        my ($title, $line) = @$_;
        my $path = '/hostile/auth/' . ++$auth_seq;
        raw_case("header syntax: $title -> nginx 400",
                 auth_request($path, $line), check => by_nginx(400));
    } @syntax;

    run_group('several, other and broken headers', \@dup, lookups => 0);
};


# === actor: a client cannot choose the X-DataHub-Actor GMS sees ==============

subtest 'actor' => sub {
    my @spoofs = (
        ['once', ["X-DataHub-Actor: $SPOOFED_ACTOR"]],
        ['lower case', ["x-datahub-actor: $SPOOFED_ACTOR"]],
        ['upper case', ["X-DATAHUB-ACTOR: $SPOOFED_ACTOR"]],
        ['twice', ["X-DataHub-Actor: $SPOOFED_ACTOR",
                   "X-DataHub-Actor: $SPOOFED_ACTOR"]],
        ['twice, other case', ["X-DataHub-Actor: $SPOOFED_ACTOR",
                               "x-DATAHUB-actor: $SPOOFED_ACTOR"]],
        ['empty', ['X-DataHub-Actor:']],
        ['the real actor', ["X-DataHub-Actor: $ACTOR"]],
        ['the real actor and another', ["X-DataHub-Actor: $ACTOR",
                                        "X-DataHub-Actor: $SPOOFED_ACTOR"]],
        ['a list', ["X-DataHub-Actor: $ACTOR, $SPOOFED_ACTOR"]],
        ['no space after the colon', ["X-DataHub-Actor:$SPOOFED_ACTOR"]],
        ['with underscores', ["X_DataHub_Actor: $SPOOFED_ACTOR"]],
        ['with underscores, lower case', ["x_datahub_actor: $SPOOFED_ACTOR"]],
        ['mixed dash and underscore', ["X-DataHub_Actor: $SPOOFED_ACTOR"]],
        ['with UTF-8', ["X-DataHub-Actor: urn:li:corpuser:d\xc3\xa4tahub"]],
        ['8000 bytes', ['X-DataHub-Actor: ' . ('a' x 8000)]],
        ['100 times', [("X-DataHub-Actor: $SPOOFED_ACTOR") x 100]],
    );

    my @cases;
    my $i = 0;
    for my $spoof (@spoofs) {
        my ($title, $lines) = @$spoof;
        for my $where (['/hostile/actor', "Authorization: Bearer $TOKEN",
                        $ACTOR],
                       ['/api/gms/hostile/actor',
                        "Authorization: Bearer $TOKEN", $ACTOR],
                       ['/open/hostile/actor', undef, undef])
        {
            my ($prefix, $auth, $actor) = @$where;
            $i++;
            my $path = "$prefix/$i";
            (my $gms_path = $path) =~ s{^/api/gms}{};
            for my $order ('before', 'after') {
                my @lines = $order eq 'before'
                            ? (@$lines, $auth // ())
                            : ($auth // (), @$lines);
                push @cases, raw_case(
                    "actor: $title, $order Authorization, $prefix",
                    auth_request("$path/$order", @lines),
                    check => proxied($auth ? "Bearer $TOKEN" : undef, $actor),
                    gms => ["$gms_path/$order"]);
            }
        }
    }

    # spoofing with a bad token gets nowhere
    for my $spoof (@spoofs[0 .. 3]) {
        my ($title, $lines) = @$spoof;
        for my $auth (['unknown token', 'Authorization: Bearer nobody',
                       unknown()],
                      ['malformed header', 'Authorization: Basic x',
                       malformed()],
                      ['no token', undef, missing()])
        {
            $i++;
            push @cases, raw_case(
                "actor: $title with $auth->[0]",
                auth_request("/hostile/actor/$i", @$lines, $auth->[1] // ()),
                check => $auth->[2]);
        }
    }

    run_group('client X-DataHub-Actor', \@cases, lookups => scalar @cases);
};


# === getEsTaskStatus bodies ====================================================

subtest 'body' => sub {
    my @cases;

    # truncated at every byte
    for my $full ('{"task":"truncA:1"}',
                  '{"nodeId":"truncB","taskId":2}',
                  qq({\n  "task" : "truncC:3"\n}\n)) {
        my ($task) = $full =~ /"(trunc[AC]:\d)"/;
        $task //= 'truncB:2';
        for my $len (0 .. length($full) - 1) {
            my $prefix = substr $full, 0, $len;
            my $name = 'body: ' . GmsTest::json_encode($full)
                       . " cut to $len bytes";
            push @cases,
                $prefix =~ /}\s*\z/ ? es_ok($name, $prefix, $task)  # all but \n
              : $len == 0           ? es_refused($name, $prefix, $EITHER)
              :                       es_refused($name, $prefix, $BAD_JSON);
        }
    }

    # nested: jansson stops at 2048 levels; 8 KB holds 4096 brackets
    for my $depth (100, 1000, 2047, 2048, 2049, 3000, 4000, 4096) {
        my $body = ('[' x $depth) . (']' x $depth);
        push @cases,
            es_refused("body: arrays nested $depth deep", $body,
                       $depth <= 2048 ? $NOT_OBJECT : $BAD_JSON),
            es_refused("body: arrays nested $depth deep, unclosed",
                       '[' x $depth, $BAD_JSON);
        next if $depth > 4000;
        push @cases,
            es_refused("body: task an array nested $depth deep",
                       qq({"task":$body}),
                       $depth < 2048 ? must_be('task', 'a string')
                                     : $BAD_JSON),
            es_refused("body: nodeId an array nested $depth deep",
                       qq({"nodeId":$body,"taskId":1}),
                       $depth < 2048 ? must_be('nodeId', 'a string')
                                     : $BAD_JSON);
    }
    for my $depth (100, 1000, 1300) {
        push @cases, es_refused("body: objects nested $depth deep",
                                ('{"":' x ($depth - 1)) . '{}'
                                . ('}' x ($depth - 1)),
                                $EITHER);
    }
    for my $pairs (1000, 1023, 1024, 1025, 1100) {
        push @cases, es_refused('body: objects and arrays nested '
                                . 2 * $pairs . ' deep',
                                ('{"":[' x $pairs) . (']}' x $pairs),
                                2 * $pairs <= 2048 ? $EITHER : $BAD_JSON);
    }
    # 10,000 levels cannot fit in 8 KB: the size limit answers first
    for my $nest (['[', ']'], ['{"a":', '}'], ['{"task":[', ']}']) {
        my ($open, $close) = @$nest;
        push @cases, es_case("body: '$open' nested 10,000 deep",
                             ($open x 10_000) . ($close x 10_000),
                             restli(413, $BODY_TOO_LARGE));
    }
    push @cases,
        es_case("body: '[' nested 10,000 deep, chunked",
                chunked(('[' x 10_000) . (']' x 10_000), 1000),
                restli(413, $BODY_TOO_LARGE), headers => \@CHUNKED);

    # huge numbers
    my $max = '9223372036854775807';
    push @cases,
        es_ok('body: taskId the largest int64',
              qq({"nodeId":"hugeA","taskId":$max}), "hugeA:$max"),
        es_ok('body: task number the largest int64',
              qq({"task":"hugeB:$max"}), "hugeB:$max"),
        es_refused('body: taskId int64 + 1',
                   '{"nodeId":"hugeC","taskId":9223372036854775808}',
                   qr/^\Q$INVALID_JSON\E: too big integer/),
        es_refused('body: taskId the smallest int64 - 1',
                   '{"nodeId":"hugeC","taskId":-9223372036854775809}',
                   qr/^\Q$INVALID_JSON\E: too big negative integer/),
        es_refused('body: taskId the smallest int64',
                   '{"nodeId":"hugeC","taskId":-9223372036854775808}',
                   $EITHER),
        es_refused('body: taskId of 5000 digits',
                   '{"nodeId":"hugeC","taskId":' . ('9' x 5000) . '}',
                   qr/^\Q$INVALID_JSON\E: too big integer/),
        es_refused('body: taskId 1e400',
                   '{"nodeId":"hugeC","taskId":1e400}',
                   qr/^\Q$INVALID_JSON\E: real number overflow/),
        es_refused('body: taskId -1e400',
                   '{"nodeId":"hugeC","taskId":-1e400}',
                   qr/^\Q$INVALID_JSON\E: real number overflow/),
        # too small for a double: jansson reads 0.0, an integral value,
        # and a taskId of 0 counts as absent
        es_refused('body: taskId 1e-400',
                   '{"nodeId":"hugeC","taskId":1e-400}', $EITHER),
        # integral numbers in other notations: a long, as Rest.li coerces
        es_ok('body: taskId 1e3', '{"nodeId":"hugeC","taskId":1e3}',
              'hugeC:1000'),
        es_ok('body: taskId 1.0', '{"nodeId":"hugeC","taskId":1.0}',
              'hugeC:1'),
        es_refused('body: taskId 1.5', '{"nodeId":"hugeC","taskId":1.5}',
                   must_be('taskId', 'an integer')),
        es_refused('body: taskId 2^63 as a real',
                   '{"nodeId":"hugeC","taskId":9.223372036854775808e18}',
                   must_be('taskId', 'an integer')),
        es_refused('body: taskId -1', '{"nodeId":"hugeC","taskId":-1}',
                   $EITHER),
        es_refused('body: taskId -0', '{"nodeId":"hugeC","taskId":-0}',
                   $EITHER),
        es_refused('body: taskId with a leading zero',
                   '{"nodeId":"hugeC","taskId":01}', $BAD_JSON),
        es_refused('body: taskId with a plus',
                   '{"nodeId":"hugeC","taskId":+1}', $BAD_JSON),
        es_refused('body: taskId NaN', '{"nodeId":"hugeC","taskId":NaN}',
                   $BAD_JSON),
        es_refused('body: taskId Infinity',
                   '{"nodeId":"hugeC","taskId":Infinity}', $BAD_JSON),
        es_refused('body: task number int64 + 1',
                   '{"task":"hugeD:9223372036854775808"}',
                   task_form('hugeD:9223372036854775808')),
        es_refused('body: task number of 5000 digits',
                   '{"task":"hugeD:' . ('9' x 5000) . '"}',
                   task_form('hugeD:' . ('9' x 5000))),
        es_refused('body: task number 1e3', '{"task":"hugeD:1e3"}',
                   task_form('hugeD:1e3'));

    # duplicate keys
    push @cases,
        es_refused('body: task twice, same value',
                   '{"task":"dupA:1","task":"dupA:1"}', $BAD_JSON),
        es_refused('body: task twice, other value',
                   '{"task":"dupA:1","task":"dupA:2"}', $BAD_JSON),
        es_refused('body: nodeId twice',
                   '{"nodeId":"dupB","nodeId":"dupC","taskId":1}',
                   $BAD_JSON),
        es_refused('body: taskId twice',
                   '{"nodeId":"dupB","taskId":1,"taskId":2}', $BAD_JSON),
        es_refused('body: unknown key twice',
                   '{"x":1,"x":2,"task":"dupA:1"}', $BAD_JSON),
        es_refused('body: duplicate keys in a nested object',
                   '{"x":{"a":1,"a":2},"task":"dupA:1"}', $BAD_JSON),
        es_refused('body: the same key, one escaped',
                   '{"task":"dupA:1","t\u0061sk":"dupA:1"}', $BAD_JSON),
        es_refused('body: task and a key with a NUL after it',
                   '{"task":"dupA:1","task\u0000":"x"}', $BAD_JSON),
        es_ok('body: an escaped key alone',
              '{"t\u0061sk":"dupD:1"}', 'dupD:1'),
        es_ok('body: keys differing in case',
              '{"task":"dupE:1","Task":"x:1","TASK":"y"}', 'dupE:1');

    # wrong types
    my @values = (['a number', '5'], ['a fraction', '5.5'],
                  ['true', 'true'], ['false', 'false'], ['an array', '[]'],
                  ['an object', '{}'], ['an array of a task', '["typeA:1"]'],
                  ['an object of a task', '{"task":"typeA:1"}']);
    for my $v (@values) {
        push @cases,
            es_refused("body: task $v->[0]", qq({"task":$v->[1]}),
                       must_be('task', 'a string')),
            es_refused("body: nodeId $v->[0]",
                       qq({"nodeId":$v->[1],"taskId":1}),
                       must_be('nodeId', 'a string'));
    }
    for my $v (['a string', '"1"'], ['a fraction', '1.5'], ['true', 'true'],
               ['an array', '[1]'], ['an object', '{"n":1}'],
               ['a word', '"typeB"'], ['a negative fraction', '-0.5'])
    {
        push @cases, es_refused("body: taskId $v->[0]",
                                qq({"nodeId":"typeB","taskId":$v->[1]}),
                                must_be('taskId', 'an integer'));
    }
    push @cases,
        es_refused('body: nodeId checked before taskId',
                   '{"nodeId":5,"taskId":"x"}', must_be('nodeId', 'a string')),
        es_refused('body: taskId checked before task',
                   '{"task":5,"taskId":"x"}', must_be('taskId', 'an integer')),
        map { es_refused("body: top level $_->[0]", $_->[1], $NOT_OBJECT) }
            (['array', '[]'], ['array of the body', '[{"task":"typeC:1"}]'],
             ['string', '"typeC:1"'], ['number', '7'], ['true', 'true'],
             ['false', 'false'], ['null', 'null'], ['fraction', '-1.5e3']);

    # bytes the JSON does not allow: raw control bytes and bytes that are
    # not UTF-8 inside the task string
    for my $b (0 .. 31, 0x80 .. 0xff) {
        push @cases, es_refused('body: raw byte ' . hex_byte($b)
                                . ' inside the task',
                                '{"task":"rawA' . chr($b) . 'x:1"}',
                                $BAD_JSON);
    }
    my @not_utf8 = (
        ['overlong slash', "\xc0\xaf"], ['overlong NUL', "\xc0\x80"],
        ['surrogate', "\xed\xa0\x80"], ['beyond U+10FFFF', "\xf4\x90\x80\x80"],
        ['truncated sequence', "\xe2\x82"], ['lone continuation', "\x80\x80"],
        ['five-byte form', "\xf8\x88\x80\x80\x80"], ['0xfe', "\xfe"],
    );
    for my $bad (@not_utf8) {
        push @cases,
            es_refused("body: not UTF-8 ($bad->[0]) in the task",
                       qq({"task":"rawB$bad->[1]:1"}), $BAD_JSON),
            es_refused("body: not UTF-8 ($bad->[0]) in a key",
                       qq({"x$bad->[1]":1,"task":"rawB:1"}), $BAD_JSON),
            es_refused("body: not UTF-8 ($bad->[0]) outside strings",
                       qq({"task":"rawB:1"}$bad->[1]), $BAD_JSON);
    }
    push @cases,
        es_refused('body: lone high surrogate escape',
                   '{"task":"rawC\ud800:1"}', $BAD_JSON),
        es_refused('body: lone low surrogate escape',
                   '{"task":"rawC\udc00:1"}', $BAD_JSON),
        es_refused('body: bad escape', '{"task":"rawC\x:1"}', $BAD_JSON),
        es_refused('body: short unicode escape', '{"task":"rawC\u12:1"}',
                   $BAD_JSON),
        es_refused('body: UTF-16', "\xff\xfe{\0\"\0t\0\"\0:\0\"\0x\0\"\0}\0",
                   $BAD_JSON),
        es_refused('body: UTF-8 byte order mark',
                   qq(\xef\xbb\xbf{"task":"rawD:1"}), $BAD_JSON);

    # every byte before and after a valid body: white space is fine,
    # anything else is not JSON
    for my $b (0 .. 255) {
        my $c = chr $b;
        my $ws = $c =~ /\A[ \t\r\n]\z/;
        my $task = 'aroundA:' . ($b + 1);
        push @cases, $ws
            ? es_ok('body: byte ' . hex_byte($b) . ' before the JSON',
                    qq($c\{"task":"$task"}), $task)
            : es_refused('body: byte ' . hex_byte($b) . ' before the JSON',
                         qq($c\{"task":"$task"}), $BAD_JSON);
        $task = 'aroundB:' . ($b + 1);
        push @cases, $ws
            ? es_ok('body: byte ' . hex_byte($b) . ' after the JSON',
                    qq({"task":"$task"}$c), $task)
            : es_refused('body: byte ' . hex_byte($b) . ' after the JSON',
                         qq({"task":"$task"}$c), $BAD_JSON);
    }

    # empty, or nothing but white space
    push @cases,
        es_refused('body: empty, Content-Length 0', '', $EITHER),
        raw_case('body: none, no Content-Length',
                 GmsTest::HTTP::build_request(POST => $ACTION,
                                              \@SPOOF_HEADERS, undef),
                 method => 'POST', check => bad_body($EITHER)),
        es_refused('body: a space', ' ', $BAD_JSON),
        es_refused('body: CRLF', "\r\n", $BAD_JSON),
        es_refused('body: a NUL', "\0", $BAD_JSON),
        es_refused('body: {} and a NUL', "{}\0", $BAD_JSON),
        es_refused('body: empty object', '{}', $EITHER),
        es_refused('body: comment', '/* */{"task":"x:1"}', $BAD_JSON),
        es_refused('body: single quotes', q({'task':'x:1'}), $BAD_JSON),
        es_refused('body: form encoded', 'task=x%3A1', $BAD_JSON),
        es_refused('body: two objects', '{"task":"x:1"}{"task":"y:1"}',
                   $BAD_JSON);

    run_group('getEsTaskStatus bodies', \@cases,
              lookups => scalar @cases);
};


# === steering: nothing in a task reference changes the subrequest's path ======

subtest 'steering' => sub {
    my @cases;

    for my $b (0 .. 255) {
        my $c = chr $b;
        my $valid_node = $c =~ /\A[A-Za-z0-9_-]\z/;
        my $num = $b + 1;

        my $task = "st${c}A:$num";
        push @cases, $valid_node
            ? es_ok('steering: ' . hex_byte($b) . ' inside the node',
                    '{"task":' . json_str($task) . '}', $task)
            : es_refused('steering: ' . hex_byte($b) . ' inside the node',
                         '{"task":' . json_str($task) . '}',
                         task_form($task));

        $task = "stB:1${c}$num";
        push @cases, $c =~ /\A[0-9]\z/
            ? es_ok('steering: ' . hex_byte($b) . ' inside the number',
                    '{"task":' . json_str($task) . '}', $task)
            : es_refused('steering: ' . hex_byte($b) . ' inside the number',
                         '{"task":' . json_str($task) . '}',
                         task_form($task));

        my $node = "st${c}C";
        push @cases, $valid_node
            ? es_ok('steering: ' . hex_byte($b) . ' inside nodeId',
                    '{"nodeId":' . json_str($node) . ",\"taskId\":$num}",
                    "$node:$num")
            : es_refused('steering: ' . hex_byte($b) . ' inside nodeId',
                         '{"nodeId":' . json_str($node) . ",\"taskId\":$num}",
                         node_chars($node));
    }

    my @tricks = (
        '../../_cluster/settings:1', '..:1', '.:1', 'a/b:1', '/a:1',
        'a\\b:1', '%2e%2e%2f:1', 'a%2Fb:1', 'a%00:1', 'stD:1?pretty',
        'stD:1&human', 'stD:1#x', 'stD:1/_cancel', 'stD:1/../../x',
        'stD:1;x', 'stD:1 HTTP/1.1', "stD:1\r\nHost: evil",
        "stD:1\r\n\r\nGET / HTTP/1.1", "stD:1\n", "stD\0:1", "stD:1\0/x",
        'http://evil:1', '//evil/x:1', 'stD:1@evil', 'stD:0x1', 'stD:1e3',
        'stD:-1', 'stD:+1', 'stD: 1', ' stD:1', 'stD :1', 'stD:1 ',
        "stD:\x{661}", "stD:\x{ff11}", "st\x{ff0f}D:1", "stD\x{ff1a}1",
        "st\x{2028}D:1", "st\x{202e}D:1", "stD:1\x{fffd}",
        "\x{1d400}:1", 'stD:' . ('1' x 20), ('n' x 129) . ':1', '::1',
        'stD::1', ':', '',
    );
    for my $t (@tricks) {
        (my $shown = $t) =~ s/([^\x20-\x7e])/sprintf '\\x{%x}', ord $1/ge;
        my $escaped = JSON::PP->new->ascii->allow_nonref->encode($t);
        push @cases, es_refused("steering: task '$shown'",
                                qq({"task":$escaped}), task_form($t));
    }

    for my $t ('../../_cluster', 'a/b', '.', '..', 'a?b', 'a#b', 'a%2F',
               "a\r\nHost: evil", "a\0", "a\0/x", 'a:1', 'a b', ' a',
               "a\x{2028}", "\x{ff41}", 'n' x 129, '')
    {
        (my $shown = $t) =~ s/([^\x20-\x7e])/sprintf '\\x{%x}', ord $1/ge;
        my $escaped = JSON::PP->new->ascii->allow_nonref->encode($t);
        push @cases, es_refused("steering: nodeId '$shown'",
                                qq({"nodeId":$escaped,"taskId":5}),
                                node_chars($t));
        push @cases, es_refused("steering: nodeId '$shown', task agreeing",
                                qq({"task":$escaped,"nodeId":$escaped,)
                                . '"taskId":5}',
                                node_chars($t));
    }

    push @cases,
        es_ok('steering: a node of 128 bytes', '{"task":"' . ('n' x 128)
              . ':1"}', ('n' x 128) . ':1'),
        es_ok('steering: nodeId of 128 bytes', '{"nodeId":"' . ('m' x 128)
              . '","taskId":1}', ('m' x 128) . ':1'),
        es_refused('steering: nodeId of 129 bytes', '{"nodeId":"' . ('m' x 129)
                   . '","taskId":1}', node_chars('m' x 129)),
        es_refused('steering: both forms, task steering',
                   '{"task":"../x:1","nodeId":"stE","taskId":1}', $ONLY_ONE),
        es_refused('steering: both forms, nodeId steering',
                   '{"task":"stE:1","nodeId":"../x","taskId":1}',
                   node_chars('../x'));

    # the request line and query cannot steer it either
    my $i = 0;
    for my $q ('&task=evil:1', '&nodeId=evil&taskId=1', '&uri=/_cluster',
               '&action=getEsTaskStatus', '&%2F..%2F=1', '&x=%0d%0aHost:evil',
               '&action=x') {
        push @cases, raw_case("steering: query '$q'",
            GmsTest::HTTP::build_request(POST => "$ACTION$q",
                                         \@SPOOF_HEADERS,
                                         '{"task":"stF:' . (++$i) . '"}'),
            method => 'POST', check => status_of("stF:$i"),
            cluster => ["stF:$i"]);
    }

    # nor the request line, Host or HTTP version
    my $auth = "Authorization: Bearer $TOKEN\r\nCookie: $COOKIE\r\n"
               . "X-DataHub-Actor: $SPOOFED_ACTOR\r\n";
    my $req = sub {
        my ($line, $headers, $task) = @_;
        my $body = qq({"task":"$task"});
        return "$line\r\n$headers${auth}Content-Length: " . length($body)
               . "\r\nConnection: close\r\n\r\n$body";
    };
    for my $r (
        ['HTTP/1.0 without Host', "POST $ACTION HTTP/1.0", ''],
        ['absolute-form target, another host',
         "POST http://evil.example:9200$ACTION HTTP/1.1",
         "Host: localhost\r\n"],
        ['Host of the cluster itself', "POST $ACTION HTTP/1.1",
         "Host: search\r\n"],
        ['X-Forwarded-Host and X-Original-URL', "POST $ACTION HTTP/1.1",
         "Host: localhost\r\nX-Forwarded-Host: evil.example\r\n"
         . "X-Original-URL: /_cluster/settings\r\n"
         . "X-Rewrite-URL: /_cluster/settings\r\n"])
    {
        my ($title, $line, $headers) = @$r;
        my $task = 'stH:' . ++$i;
        push @cases, raw_case("steering: $title",
                              $req->($line, $headers, $task),
                              method => 'POST', check => status_of($task),
                              cluster => [$task]);
    }
    push @cases, raw_case('steering: Host with a path -> nginx 400',
                          $req->("POST $ACTION HTTP/1.1",
                                 "Host: evil/_cluster/settings\r\n", 'stH:0'),
                          method => 'POST', check => by_nginx(400));
    push @cases,
        es_ok('steering: number with leading zeros', '{"task":"stG:007"}',
              'stG:7'),
        es_ok('steering: taskId with an exponent-free big value',
              '{"nodeId":"stG","taskId":1000000000000}', 'stG:1000000000000');

    run_group('task references', \@cases, lookups => scalar @cases);
};


# === framing: chunked, sizes, cut short, slow ==================================

subtest 'framing' => sub {
    my @cases;
    my $i = 0;

    # chunked
    for my $size (1, 2, 3, 7, 16, 1000) {
        my $task = 'chunkA:' . ++$i;
        push @cases, es_ok("chunked: chunks of $size bytes",
                           chunked(qq({"task":"$task"}), $size), $task,
                           headers => \@CHUNKED);
    }
    for my $v (['a chunk extension', { ext => ';name=value' }],
               ['a quoted extension', { ext => ';n="v;x"' }],
               ['upper-case hex', { format => '%X' }],
               ['leading zeros', { format => '%08x' }],
               ['a trailer', { trailer => "X-Trailer: 1\r\n" }],
               ['an Authorization trailer',
                { trailer => "Authorization: Bearer other\r\n" }])
    {
        my $task = 'chunkB:' . ++$i;
        push @cases, es_ok("chunked: $v->[0]",
                           chunked(qq({"task":"$task"}), 5, %{ $v->[1] }),
                           $task, headers => \@CHUNKED);
    }
    $i++;
    push @cases,
        es_ok('chunked: name in another case',
              chunked(qq({"task":"chunkC:$i"}), 4), "chunkC:$i",
              headers => [['Transfer-Encoding', 'Chunked']]),
        es_refused('chunked: empty', "0\r\n\r\n", $EITHER,
                   headers => \@CHUNKED),
        es_ok('chunked: 8192 bytes', chunked(padded_body('chunkD:1', 8192),
                                             1000),
              'chunkD:1', headers => \@CHUNKED),
        es_case('chunked: 8193 bytes', chunked(padded_body('chunkD:2', 8193),
                                               1000),
                restli(413, $BODY_TOO_LARGE), headers => \@CHUNKED),
        es_case('chunked: 100,000 bytes',
                chunked(padded_body('chunkD:3', 100_000), 4000),
                restli(413, $BODY_TOO_LARGE), headers => \@CHUNKED),
        es_case('chunked: 8193 bytes in 1-byte chunks',
                chunked(padded_body('chunkD:4', 8193), 1),
                restli(413, $BODY_TOO_LARGE), headers => \@CHUNKED),
        # the module refuses once 8 KB arrived, long before nginx's
        # client_max_body_size (1m) would
        es_case('chunked: 2 MB', chunked(padded_body('chunkD:5', 2 << 20),
                                         65536),
                restli(413, $BODY_TOO_LARGE), headers => \@CHUNKED);
    for my $bad (['a size that is not hex', "zz\r\n{}\r\n0\r\n\r\n"],
                 ['a negative size', "-2\r\n{}\r\n0\r\n\r\n"],
                 ['a size beyond 64 bits', "fffffffffffffffffff\r\n{}\r\n0"
                                           . "\r\n\r\n"],
                 ['no CRLF after the data', "2\r\n{}XX0\r\n\r\n"],
                 ['data longer than the size', "1\r\n{}\r\n0\r\n\r\n"],
                 ['a NUL in the size', "2\0\r\n{}\r\n0\r\n\r\n"])
    {
        push @cases, es_case("chunked: $bad->[0]", $bad->[1], by_nginx(400),
                             headers => \@CHUNKED);
    }
    # nginx reads white space after a size as the start of an extension
    push @cases,
        es_refused('chunked: a space in the size', "2 2\r\n{}\r\n0\r\n\r\n",
                   $EITHER, headers => \@CHUNKED),
        es_case('chunked and Content-Length', chunked('{}', 1),
                by_nginx(400),
                headers => [@CHUNKED, ['Content-Length', 7]]),
        es_case('Transfer-Encoding gzip, chunked', chunked('{}', 1),
                by_nginx(501),
                headers => [['Transfer-Encoding', 'gzip, chunked']]),
        es_case('Transfer-Encoding identity', '{}', by_nginx(501),
                headers => [['Transfer-Encoding', 'identity']]),
        es_case('Content-Length twice', '{}', by_nginx(400),
                headers => [['Content-Length', 2], ['Content-Length', 2]]),
        es_case('Content-Length negative', '{}', by_nginx(400),
                headers => [['Content-Length', -2]]),
        es_case('Content-Length beyond 64 bits', '{}', by_nginx(400),
                headers => [['Content-Length', '99999999999999999999']]),
        es_case('Content-Length not a number', '{}', by_nginx(400),
                headers => [['Content-Length', '2x']]),
        es_case('Content-Length of 2 GB, nothing sent', '',
                by_nginx(413),
                headers => [['Content-Length', 2 << 30]]);

    # Content-Length around the 8 KB limit
    for my $size (8190, 8191, 8192) {
        my $task = 'sizeA:' . $size;
        push @cases, es_ok("Content-Length: $size bytes",
                           padded_body($task, $size), $task);
    }
    for my $size (8193, 8194, 9000, 65_536, 1 << 20) {
        push @cases, es_case("Content-Length: $size bytes",
                             padded_body('sizeB:1', $size),
                             restli(413, $BODY_TOO_LARGE));
    }
    push @cases,
        es_case('Content-Length: 1 MB + 1 (client_max_body_size)',
                padded_body('sizeB:1', (1 << 20) + 1), by_nginx(413)),
        es_case('Content-Length 8193, 10 bytes sent, half closed',
                '{"task":"x', restli(413, $BODY_TOO_LARGE),
                headers => [['Content-Length', 8193]], after => 'shutdown');

    # cut short: announced, not all sent
    for my $sent (0, 1, 10, 20) {
        for my $after ('shutdown', 'close') {
            my $body = substr '{"task":"cutA:1"} and more', 0, $sent;
            push @cases, es_case("cut short: $sent of 40 bytes, then $after",
                                 $body, cut_short(),
                                 headers => [['Content-Length', 40]],
                                 after => $after);
        }
    }
    for my $after ('shutdown', 'close') {
        push @cases,
            es_case("cut short: chunked, no last chunk, then $after",
                    "5\r\n{\"tas\r\n", cut_short(), headers => \@CHUNKED,
                    after => $after),
            es_case("cut short: chunked, inside a chunk, then $after",
                    "20\r\n{\"task\"", cut_short(), headers => \@CHUNKED,
                    after => $after),
            es_case("cut short: chunked, no final CRLF, then $after",
                    "2\r\n{}\r\n0\r\n", cut_short(), headers => \@CHUNKED,
                    after => $after),
            raw_case("cut short: inside the headers, then $after",
                     "POST $ACTION HTTP/1.1\r\nHost: localhost\r\n"
                     . "Authorization: Bearer $TOKEN\r\nContent-Le",
                     method => 'POST', check => cut_short(),
                     after => $after);
    }

    # slow, well under client_body_timeout and client_header_timeout (60s)
    my @slow = (
        ['slow: body in 8 pieces, 150 ms apart', 8, 0.15,
         sub { es_request(qq({"task":"$_[0]"})) }, 'body'],
        ['slow: whole request 1 byte at a time, 3 ms apart', 0, 0.003,
         sub { es_request(qq({"task":"$_[0]"})) }, 'all'],
        ['slow: chunked body, one chunk per 200 ms', 6, 0.2,
         sub { es_request(chunked(qq({"task":"$_[0]"}), 4), @CHUNKED) },
         'body'],
        ['slow: 2 s between headers and body', 2, 2,
         sub { es_request(qq({"task":"$_[0]"})) }, 'body'],
        ['slow: 8192 bytes in 16 pieces, 100 ms apart', 16, 0.1,
         sub { es_request(padded_body($_[0], 8192)) }, 'body'],
    );
    for my $s (@slow) {
        my ($name, $pieces, $delay, $make, $what) = @$s;
        my $task = 'slowA:' . ++$i;
        my $request = $make->($task);
        my $at = $what eq 'all' ? 0 : index($request, "\r\n\r\n") + 4;
        my @segs = ([0, substr $request, 0, $at]);
        my $rest = substr $request, $at;
        my $size = $pieces ? int((length($rest) + $pieces - 1) / $pieces) : 1;
        push @segs, [$delay, $1] while $rest =~ /\G(.{1,$size})/gs;
        push @cases, { name => $name, segs => \@segs, method => 'POST',
                       check => status_of($task), cluster => [$task],
                       timeout => 20 };
    }
    {
        my $request = es_request(padded_body('slowB:1', 9000));
        my $at = index($request, "\r\n\r\n") + 4;
        push @cases,
            { name => 'slow: 9000 bytes announced, sent slowly',
              segs => [[0, substr $request, 0, $at],
                       map { [0.1, $_] } (substr $request, $at) =~ /(.{1,1000})/gs],
              method => 'POST', check => restli(413, $BODY_TOO_LARGE) };
        my $chunked = es_request(chunked(padded_body('slowB:2', 9000), 1000),
                                 @CHUNKED);
        $at = index($chunked, "\r\n\r\n") + 4;
        push @cases,
            { name => 'slow: 9000 bytes chunked, sent slowly',
              segs => [[0, substr $chunked, 0, $at],
                       map { [0.1, $_] } (substr $chunked, $at) =~ /(.{1,1000})/gs],
              method => 'POST', check => restli(413, $BODY_TOO_LARGE) };
        for my $after ('shutdown', 'close') {
            my $r = es_request('{"task":"slowC:1"}');
            push @cases,
                { name => "slow: half the body over 1 s, then $after",
                  segs => [[0, substr $r, 0, length($r) - 9],
                           [0.5, ''], [0.5, '']],
                  method => 'POST', check => cut_short(), after => $after };
        }
    }
    push @cases, raw_case('Expect: 100-continue',
        GmsTest::HTTP::build_request(POST => $ACTION,
            [@SPOOF_HEADERS, ['Expect', '100-continue']],
            '{"task":"expectA:1"}'),
        method => 'POST', check => status_of('expectA:1'),
        cluster => ['expectA:1']);

    run_group('framing, sizes, slow', \@cases, lookups => scalar @cases);
};


# === cluster: the answers built above =========================================

subtest 'cluster answers' => sub {
    run_group('hostile answers', \@CLUSTER_CASES,
              lookups => scalar @CLUSTER_CASES);
};


# === what the cluster never sees ================================================

subtest 'the cluster only ever sees GET /_tasks/<node>:<number>' => sub {
    my @bad = grep {
        $_->{method} ne 'GET'
        || $_->{uri} !~ m{\A/_tasks/[A-Za-z0-9_-]{1,128}:[1-9][0-9]{0,18}\z}
        || $_->{body} ne ''
    } @ALL_CLUSTER_REQUESTS;
    is_deeply([map { "$_->{method} $_->{uri}" } @bad], [],
              'every cluster request a bodiless GET of a task');
    cmp_ok(scalar @ALL_CLUSTER_REQUESTS, '>', 300, 'of many');

    is_deeply([grep { ($_->{header}{host} // '') ne 'search' }
               @ALL_CLUSTER_REQUESTS], [],
              'every one to the search upstream (Host: search)');

    my @leaks;
    for my $req (@ALL_CLUSTER_REQUESTS) {
        for my $h (@{ $req->{headers} }) {
            my ($name, $value) = (lc $h->[0], $h->[1]);
            push @leaks, "$req->{uri}: $h->[0]: $value"
                if $name =~ /^(?:authorization|proxy-authorization|cookie
                               |content-type|content-length
                               |transfer-encoding|expect)\z/x
                   || $value =~ /\Q$TOKEN\E|hostile-cookie|\Q$SPOOFED_ACTOR\E
                                 |aG9zdGlsZTpzZWNyZXQ/x;
        }
    }
    is_deeply(\@leaks, [], 'no client header, token or cookie in them');
};


note("$cases_run hostile cases");
cmp_ok($cases_run, '>=', 300, 'at least 300 generated cases');

is_deeply([$n->worker_pids], \@WORKERS, 'the worker never changed');
$n->stop;
is_deeply([$n->bad_log_lines], [], 'no alerts, crashes or leaked sockets');

done_testing();

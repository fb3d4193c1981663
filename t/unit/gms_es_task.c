
/* Unit tests of src/lib/gms_es_task.c: getEsTaskStatus. */


#include <stdlib.h>
#include <jansson.h>

#include "tap.h"


/* a recorded answer, whole: $GMS_FIXTURES, or t/fixtures/search-cluster */
#define fixture(name, len)                                                   \
    tap_slurp("GMS_FIXTURES", "t/fixtures/search-cluster", name, len)
#include "gms_es_task.h"
#include "gms_restli.h"


static char  msg[GMS_ES_TASK_BODY_MAX + 256];


/*
 * Every answer below mapped both ways: the value (OpenAPI's answer) and
 * the Rest.li body written in the same pass, which must be the value
 * wrapped by gms_restli_value_body(), byte for byte (checked at the end).
 */

static int  body_checked, body_differs;

static char *
value_and_body(const char *answer, size_t len, char *reason, size_t size)
{
    char  *value, *body, *wrapped, why[128];

    value = gms_es_task_value(answer, len, reason, size);
    body = gms_es_task_value_body(answer, len, why, sizeof(why));
    wrapped = value ? gms_restli_value_body(value) : NULL;

    body_checked++;

    if ((body == NULL) != (wrapped == NULL)
        || (body != NULL && strcmp(body, wrapped) != 0)
        || (body == NULL && strcmp(why, reason) != 0))
    {
        printf("#   value and body differ for: %.*s\n", (int) len,
               answer ? answer : "");
        body_differs++;
    }

    free(body);
    free(wrapped);

    return value;
}

#define gms_es_task_value  value_and_body


/* the members every task has, besides node, id and running time */
#define TASK_INFO                                                            \
    "\"type\":\"transport\",\"action\":\"indices:data/write/reindex\","      \
    "\"start_time_in_millis\":1700000000000,\"cancellable\":true"


static int
parse(const char *body, gms_es_task_ref_t *ref)
{
    int     rc;
    size_t  len;

    memset(ref, 0, sizeof(*ref));
    len = 0;

    rc = gms_es_task_request_parse(body, strlen(body), ref, msg,
                                   sizeof(msg) - 1, &len);
    msg[len] = '\0';

    return rc;
}


#define EITHER                                                               \
    "Please specify either Node ID + task ID OR composite task parameters"
#define ONLY_ONE                                                             \
    "Please specify only one of Node ID + task ID OR composite task "         \
    "parameters"
#define FORM(t)                                                              \
    "Task should be in the form nodeId:taskId e.g. "                          \
    "aB1cdEf2GHIJKLMnoPQr3S:123456 (got " t ")"


static void
test_request(void)
{
    gms_es_task_ref_t  ref;

    ok(parse("{\"task\": \"aB1-c_D:123\"}", &ref) == 0
       && strcmp(ref.node, "aB1-c_D") == 0 && ref.number == 123,
       "composite task");
    ok(parse("{\"nodeId\": \"abc\", \"taskId\": 9}", &ref) == 0
       && strcmp(ref.node, "abc") == 0 && ref.number == 9,
       "node id and task id");
    ok(parse("{\"nodeId\": \"abc\", \"taskId\": 9, \"task\": \"abc:9\"}",
             &ref) == 0 && ref.number == 9, "both forms, consistent");
    ok(parse("{\"task\": \"n:9223372036854775807\"}", &ref) == 0
       && ref.number == 9223372036854775807LL, "largest task number");

    ok(parse("{\"nodeId\": \"abc\", \"taskId\": 124.0}", &ref) == 0
       && ref.number == 124, "task id 124.0 coerced to a long, as Rest.li");
    ok(parse("{\"nodeId\": \"abc\", \"taskId\": 124.5}", &ref) != 0,
       "task id 124.5 refused");
    is_str(msg, "Parameter 'taskId' must be an integer", "124.5 message");
    ok(parse("{\"nodeId\": \"abc\", \"taskId\": 1e19}", &ref) != 0,
       "task id beyond a long refused");

    ok(parse("{}", &ref) != 0, "empty object refused");
    is_str(msg, EITHER, "empty object message");
    ok(parse("", &ref) != 0, "empty body refused");
    is_str(msg, EITHER, "empty body message");
    ok(parse("{\"nodeId\": \"abc\", \"taskId\": 0}", &ref) != 0,
       "task id 0 counts as absent");
    is_str(msg, EITHER, "task id 0 message");
    ok(parse("{\"nodeId\": \"abc\"}", &ref) != 0, "node id alone");
    is_str(msg, EITHER, "node id alone message");
    ok(parse("{\"task\": null, \"taskId\": 5}", &ref) != 0, "null task");
    is_str(msg, EITHER, "null counts as absent");

    ok(parse("{\"nodeId\": \"abc\", \"taskId\": 9, \"task\": \"abc:8\"}",
             &ref) != 0, "both forms, inconsistent");
    is_str(msg, ONLY_ONE, "both forms message");

    ok(parse("{\"task\": \"abc\"}", &ref) != 0, "task without colon");
    is_str(msg, FORM("abc"), "task without colon message");
    ok(parse("{\"task\": \"abc:0\"}", &ref) != 0, "task number 0");
    is_str(msg, FORM("abc:0"), "task number 0 message");
    ok(parse("{\"task\": \"a/b:1\"}", &ref) != 0, "slash in node");
    is_str(msg, FORM("a/b:1"), "slash in node message");
    ok(parse("{\"task\": \"../x:1\"}", &ref) != 0, "dots in node");
    ok(parse("{\"task\": \"abc:1?x=1\"}", &ref) != 0, "query in task");
    ok(parse("{\"task\": \"abc:1:2\"}", &ref) != 0, "two colons");
    ok(parse("{\"task\": \"abc:-1\"}", &ref) != 0, "negative number");
    ok(parse("{\"task\": \"n:9223372036854775808\"}", &ref) != 0,
       "task number beyond a signed 64-bit integer");
    is_str(msg, FORM("n:9223372036854775808"), "overflow message");

    ok(parse("{\"nodeId\": \"a/b\", \"taskId\": 1}", &ref) != 0,
       "node id with a slash");
    is_str(msg, "Node ID should contain only letters, digits, '-' and '_' "
           "(got a/b)", "node id message");
    ok(parse("{\"nodeId\": \"\", \"taskId\": 1}", &ref) != 0,
       "empty node id");

    ok(parse("{\"nodeId\": 5, \"taskId\": 1}", &ref) != 0, "numeric node");
    is_str(msg, "Parameter 'nodeId' must be a string", "numeric node message");
    ok(parse("{\"nodeId\": \"a\", \"taskId\": \"1\"}", &ref) != 0,
       "string task id");
    is_str(msg, "Parameter 'taskId' must be an integer",
           "string task id message");
    ok(parse("{\"nodeId\": \"a\", \"taskId\": 1.5}", &ref) != 0,
       "real task id");
    ok(parse("{\"task\": [\"a:1\"]}", &ref) != 0, "array task");
    is_str(msg, "Parameter 'task' must be a string", "array task message");
    ok(parse("{\"nodeId\": \"a\", \"taskId\": 99999999999999999999}", &ref)
       != 0, "task id beyond 64 bits");
    ok(strncmp(msg, "Invalid JSON in request body", 28) == 0,
       "task id beyond 64 bits message");

    ok(parse("{\"task\": \"a:1\\u0000/x\"}", &ref) != 0, "NUL in the task");
    ok(memcmp(msg, FORM("a:1"), sizeof(FORM("a:1")) - 2) == 0
       && memcmp(msg + sizeof(FORM("a:1")) - 2, "\0/x)", 4) == 0,
       "NUL in the task is echoed with what follows");
    ok(parse("42", &ref) != 0, "number body");
    is_str(msg, "Request body must be a JSON object", "number body message");
    ok(parse("[1]", &ref) != 0, "array body");
    is_str(msg, "Request body must be a JSON object", "array body message");
    ok(parse("\"a:1\"", &ref) != 0, "string body");
    ok(parse("{\"task\": \"a:1\"", &ref) != 0, "truncated JSON");
    ok(strncmp(msg, "Invalid JSON in request body", 28) == 0,
       "truncated JSON message");
    ok(parse("{\"task\": \"a:1\", \"task\": \"b:2\"}", &ref) != 0,
       "duplicate keys refused");
}


/*
 * The usual bodies are read without jansson, the rest by it: both
 * readings agree on every body, whichever reads it (the fuzzer
 * fuzz_es_request checks the same on its inputs).
 */

static void
test_request_fast(void)
{
    int                rc, rc_json;
    char               msg_json[GMS_ES_TASK_BODY_MAX + 256];
    size_t             i, len, len_json;
    gms_es_task_ref_t  ref, ref_json;

    static const char  *bodies[] = {
        "{\"task\":\"HI4YEIRMRuSdwsE4bCK7Bg:192\"}",
        " \r\n{ \"task\" :\t\"a-b_C:1\" }\n ",
        "{\"nodeId\":\"abc\",\"taskId\":9}",
        "{\"taskId\":9,\"nodeId\":\"abc\"}",
        "{\"nodeId\":\"abc\",\"taskId\":9,\"task\":\"abc:9\"}",
        "{\"nodeId\":\"abc\",\"taskId\":9,\"task\":\"abc:09\"}",
        "{\"nodeId\":\"abc\",\"taskId\":9,\"task\":\"abd:9\"}",
        "{\"nodeId\":\"abc\",\"task\":\"x:1\"}",
        "{\"taskId\":3,\"task\":\"x:1\"}",
        "{\"nodeId\":\"abc\"}",
        "{\"taskId\":7}",
        "{\"nodeId\":\"a:b\",\"taskId\":7}",
        "{\"nodeId\":\"abc\",\"taskId\":09}",
        "{\"nodeId\":\"abc\",\"taskId\":0}",
        "{\"nodeId\":\"abc\",\"taskId\":-3}",
        "{\"nodeId\":\"abc\",\"taskId\":9223372036854775807}",
        "{\"nodeId\":\"abc\",\"taskId\":9223372036854775808}",
        "{\"nodeId\":\"abc\",\"taskId\":12e1}",
        "{\"nodeId\":\"abc\",\"taskId\":12.0}",
        "{\"task\":\"abc:9223372036854775807\"}",
        "{\"task\":\"abc:9223372036854775808\"}",
        "{\"task\":\"abc:0\"}",
        "{\"task\":\"abc\"}",
        "{\"task\":\":1\"}",
        "{\"task\":\"a:1:2\"}",
        "{\"task\":\"a:1\",\"task\":\"a:1\"}",
        "{\"task\":\"a:1\",\"other\":1}",
        "{\"t\\u0061sk\":\"a:1\"}",
        "{\"task\":\"a\\u003a1\"}",
        "{\"task\":\"a:1\"} x",
        "{\"task\":\"a:1\",}",
        "{\"task\":\"a:1\"",
        "{\"task\":null}",
        "{}",
        "",
        "[]"
    };

    for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        memset(&ref, 0, sizeof(ref));
        memset(&ref_json, 0, sizeof(ref_json));
        len = 0;
        len_json = 0;

        rc = gms_es_task_request_parse(bodies[i], strlen(bodies[i]), &ref,
                                       msg, sizeof(msg), &len);
        rc_json = gms_es_task_request_json(bodies[i], strlen(bodies[i]),
                                           &ref_json, msg_json,
                                           sizeof(msg_json), &len_json);

        ok(rc == rc_json
           && (rc == 0 ? strcmp(ref.node, ref_json.node) == 0
                         && ref.number == ref_json.number
                       : len == len_json && memcmp(msg, msg_json, len) == 0),
           "fast and jansson readings agree on body %zu", i);
    }
}


/*
 * The scanner's own readings: the task's members found in the same pass
 * as the answer's (the last "task" counts, as in jansson), integers read
 * without jansson at the limits of a long long.
 */

static void
test_answer_scan(void)
{
    char         reason[128], *value;
    const char  *answer;

    answer = "{\"task\":{\"node\":\"old\",\"id\":1,\"x\":{\"node\":3}},"
             "\"completed\":true,\"task\":{\"node\":\"n\",\"id\":2,"
             TASK_INFO ",\"running_time_in_nanos\":3}}";
    value = gms_es_task_value(answer, strlen(answer), reason, sizeof(reason));
    is_str(value, "{\"completed\":true,\"taskId\":\"n:2\",\"runTimeNanos\":3}",
           "the last task counts, a nested node does not");
    free(value);

    answer = "{\"completed\":true,\"task\":{\"node\":\"n\",\"id\":1,"
             TASK_INFO "}, \"task\":{\"node\":\"n\",\"id\":2}}";
    ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
       == NULL, "members of an earlier task are forgotten");
    is_str(reason, "answer is not a task: \"task.type\" absent, wanted a "
           "string", "the last task's member missing");

    answer = "{\"completed\":true,\"task\":{\"node\":\"n\",\"id\":"
             "-9223372036854775808," TASK_INFO ",\"running_time_in_nanos\":"
             "-0}}";
    value = gms_es_task_value(answer, strlen(answer), reason, sizeof(reason));
    is_str(value, "{\"completed\":true,\"taskId\":"
           "\"n:-9223372036854775808\",\"runTimeNanos\":0}",
           "the smallest long, and -0");
    free(value);

    answer = "{\"completed\":true,\"task\":{\"node\":\"n\",\"id\":"
             "-9223372036854775809," TASK_INFO ",\"running_time_in_nanos\":"
             "1}}";
    ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
       == NULL, "below the smallest long: not an integer");
    is_str(reason, "answer is not a task: \"task.id\" not an integer",
           "reason names the id");

    answer = "{\"completed\":true,\"task\":{\"node\":\"n\\u00e9\\/\","
             "\"id\":1," TASK_INFO ",\"running_time_in_nanos\":1}}";
    value = gms_es_task_value(answer, strlen(answer), reason, sizeof(reason));
    is_str(value, "{\"completed\":true,\"taskId\":\"n\xc3\xa9/:1\","
           "\"runTimeNanos\":1}", "a node with escapes is unescaped");
    free(value);
}



/* compares JSON by value */
static int
json_same(const char *a, const char *b)
{
    int      same;
    json_t  *x, *y;

    x = json_loads(a, 0, NULL);
    y = json_loads(b, 0, NULL);
    same = (x != NULL && y != NULL && json_equal(x, y));
    json_decref(x);
    json_decref(y);

    return same;
}


static void
test_answer(void)
{
    char               reason[128], *answer, *value, *body;
    const char        *pretty;
    size_t             len;
    json_t            *v;
    gms_es_task_ref_t  ref;

    answer = fixture("running-reindex-es6.json", &len);
    ok(answer != NULL, "fixture running-reindex-es6.json");
    value = gms_es_task_value(answer, len, reason, sizeof(reason));
    is_str(value,
           "{\"completed\":false,\"taskId\":\"HI4YEIRMRuSdwsE4bCK7Bg:192\","
           "\"runTimeNanos\":16132017224,\"status\":\"{\\\"total\\\":6251,"
           "\\\"updated\\\":0,\\\"created\\\":0,\\\"deleted\\\":0,"
           "\\\"batches\\\":1,\\\"version_conflicts\\\":0,\\\"noops\\\":0,"
           "\\\"retries\\\":{\\\"bulk\\\":2,\\\"search\\\":0},"
           "\\\"throttled_millis\\\":0,\\\"requests_per_second\\\":-1.0,"
           "\\\"throttled_until_millis\\\":0}\"}",
           "running ES 6 reindex: org.json's order, status a compact string");
    free(value);
    free(answer);

    answer = fixture("datahub-getEsTaskStatus-completed.value.json", &len);
    ok(answer != NULL, "fixture datahub-getEsTaskStatus-completed.value.json");
    pretty =
        "{ \"completed\" : true,\n \"task\" : { \"node\" : "
        "\"qhxGdzytQS-pQek8CwBCZg\", \"id\" : 54654,\n"
        " \"type\" : \"transport\", \"action\" : "
        "\"indices:data/write/delete/byquery\", \"status\" : {\n"
        "  \"total\" : 0, \"updated\" : 0, \"created\" : 0, \"deleted\" : 0,"
        " \"batches\" : 0, \"version_conflicts\" : 0, \"noops\" : 0,\n"
        "  \"retries\" : { \"bulk\" : 0, \"search\" : 0 },"
        " \"throttled_millis\" : 0, \"requests_per_second\" : -1.0,"
        " \"throttled_until_millis\" : 0 },\n"
        " \"start_time_in_millis\" : 1700000000000,\n"
        " \"running_time_in_nanos\" : 1179458, \"cancellable\" : true } }\n";
    value = gms_es_task_value(pretty, strlen(pretty), reason, sizeof(reason));
    ok(value != NULL && answer != NULL
       && strlen(value) == len - (answer[len - 1] == '\n')
       && memcmp(value, answer, strlen(value)) == 0,
       "DataHub's published value, byte for byte, from a pretty answer");
    free(value);
    free(answer);

    answer = "{\"completed\":true,\"task\":{\"node\":\"n\",\"id\":1,"
             TASK_INFO ",\"running_time_in_nanos\":0,"
             "\"status\":{\"s\":\"</a> \xc2\x85 \xe2\x80\xa8 \xc3\xa9 "
             "\\\"x\\\" \\\\ \\n\"}}}";
    value = gms_es_task_value(answer, strlen(answer), reason, sizeof(reason));
    is_str(value,
           "{\"completed\":true,\"taskId\":\"n:1\",\"runTimeNanos\":0,"
           "\"status\":\"{\\\"s\\\":\\\"<\\/a> \\u0085 \\u2028 \xc3\xa9 "
           "\\\\\\\"x\\\\\\\" \\\\\\\\ \\\\n\\\"}\"}",
           "status strings quoted as org.json quotes them");
    free(value);

    answer = fixture("completed-reindex-opensearch2-with-failures.json", &len);
    value = gms_es_task_value(answer, len, reason, sizeof(reason));
    v = json_loads(value ? value : "", 0, NULL);
    ok(json_is_true(json_object_get(v, "completed")),
       "completed OpenSearch 2 task");
    is_str(json_string_value(json_object_get(v, "taskId")),
           "2lG7ExELTKeUz-OkKvFabA:158087", "task id from node and id");
    ok(json_object_get(v, "response") == NULL
       && json_object_get(v, "error") == NULL && json_object_size(v) == 4,
       "only the four members of the metadata service");
    free(value);
    json_decref(v);
    free(answer);

    value = gms_es_task_value(
        "{\"completed\":true,\"task\":{\"node\":\"n\",\"id\":9223372036854775807,"
        TASK_INFO ",\"running_time_in_nanos\":9223372036854775806,\"status\":"
        "{\"total\":9007199254740993,\"slices\":[{\"slice_id\":0,\"total\":1},"
        "null]}}}", 0, reason, sizeof(reason));
    ok(value == NULL, "length is honoured (0 bytes is no JSON)");

    answer = "{\"completed\":true,\"task\":{\"node\":\"n\",\"id\":"
             "9223372036854775807," TASK_INFO ",\"running_time_in_nanos\":"
             "9223372036854775806,\"status\":{\"total\":9007199254740993,"
             "\"slices\":[{\"slice_id\":0,\"total\":1},null]}}}";
    value = gms_es_task_value(answer, strlen(answer), reason, sizeof(reason));
    ok(value && strstr(value, "\"taskId\":\"n:9223372036854775807\"")
       && strstr(value, "\"runTimeNanos\":9223372036854775806")
       && strstr(value, "\\\"total\\\":9007199254740993"),
       "64-bit integers stay exact");
    ok(value && strstr(value, "\\\"slices\\\":[{\\\"slice_id\\\":0,"
                              "\\\"total\\\":1},null]"),
       "slices carried over");
    free(value);

    answer = "{\"completed\":false,\"task\":{\"node\":\"n\",\"id\":2,"
             TASK_INFO ",\"status\":null,\"running_time_in_nanos\":5}}";
    ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
       == NULL, "a null status is not a task: the client takes objects only");
    is_str(reason, "answer is not a task: \"task.status\" not an object",
           "reason names the status");

    answer = "{\"completed\":false,\"task\":{\"node\":\"n\",\"id\":1,"
             TASK_INFO ",\"running_time_in_nanos\":5}}";
    value = gms_es_task_value(answer, strlen(answer), reason, sizeof(reason));
    is_str(value, "{\"completed\":false,\"taskId\":\"n:1\",\"runTimeNanos\":5}",
           "a task without status omits it");
    free(value);

    /* the status is sliced, not re-parsed: the scanner is as strict as
     * jansson, or a client would get invalid JSON text in status */
#define TASK_WITH_STATUS(st)                                                 \
    "{\"completed\":true,\"task\":{\"node\":\"n\",\"id\":1," TASK_INFO       \
    ",\"running_time_in_nanos\":1,\"status\":" st "}}"

    answer = TASK_WITH_STATUS("{\"a\":01}");
    ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
       == NULL, "a leading zero is not JSON");
    answer = TASK_WITH_STATUS("{\"a\":\"\\ud83d\"}");
    ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
       == NULL, "a lone high surrogate is not JSON");
    answer = TASK_WITH_STATUS("{\"a\":\"\\ude00\"}");
    ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
       == NULL, "a lone low surrogate is not JSON");
    answer = TASK_WITH_STATUS("{\"a\":\"\\u0000\"}");
    ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
       == NULL, "an escaped NUL is refused, as jansson refuses it");
    answer = TASK_WITH_STATUS("{\"a\":1}");
    value = gms_es_task_value(answer, strlen(answer), reason, sizeof(reason));
    ok(value != NULL, "the same answer with a valid status is a task");
    free(value);

    answer = "{\"completed\":true,\"task\":{\"node\":\"n\",\"id\":1,"
             TASK_INFO ",\"running_time_in_nanos\":1,"
             "\"status\":{\"a\":\"\\ud83d\\ude00\",\"z\":-0.0e+1}}}";
    value = gms_es_task_value(answer, strlen(answer), reason, sizeof(reason));
    ok(value != NULL && strstr(value, "\\\"\\\\ud83d\\\\ude00\\\"")
       && strstr(value, "-0.0e+1"), "a surrogate pair and -0.0e+1 kept");
    free(value);

    ok(gms_es_task_value(NULL, 0, reason, sizeof(reason)) == NULL,
       "no output at all is no task");

    answer = fixture("not-found-404.constructed.json", &len);
    ok(gms_es_task_value(answer, len, reason, sizeof(reason)) == NULL,
       "404 body is not a task");
    is_str(reason, "answer is not a task: \"completed\" absent, wanted a "
           "boolean", "reason given");
    free(answer);

    ok(gms_es_task_value("{\"completed\":true,\"task\":{\"node\":\"n\","
                         "\"id\":\"1\"}}", 40, reason, sizeof(reason))
       == NULL, "string id is not a task");
    ok(gms_es_task_value("{\"completed\":tr", 15, reason, sizeof(reason))
       == NULL, "truncated answer");
    ok(strncmp(reason, "answer is not JSON", 18) == 0, "truncated reason");
    ok(gms_es_task_value("[]", 2, reason, sizeof(reason)) == NULL,
       "array answer");

    strcpy(ref.node, "XIAMx5WySACgg9XxBgaKmw");
    ref.number = 12587;
    value = gms_es_task_error_value(&ref);
    body = gms_restli_value_body(value);
    answer = fixture("datahub-getEsTaskStatus-not-found.json", &len);
    ok(json_same(body, answer), "failure object as the metadata service's");
    free(answer);
    free(body);
    free(value);
}


/*
 * What GMS's search client requires of a task (TaskInfo.PARSER and
 * GetTaskResponse.PARSER): each required member absent, and members of a
 * type its parser does not take, make an answer that is not a task.
 */

static void
test_answer_members(void)
{
    char         answer[512], reason[128], *value;
    size_t       i, j;
    const char  *want;

    static const char  *members[][2] = {
        { "node", "\"node\":\"n\"" },
        { "id", "\"id\":7" },
        { "type", "\"type\":\"transport\"" },
        { "action", "\"action\":\"indices:data/write/reindex\"" },
        { "start_time_in_millis", "\"start_time_in_millis\":1" },
        { "running_time_in_nanos", "\"running_time_in_nanos\":5" },
        { "cancellable", "\"cancellable\":false" }
    };

    static const char  *wrong[][3] = {
        { "\"description\":null", "task.description", "a string" },
        { "\"description\":1", "task.description", "a string" },
        { "\"type\":null", "task.type", "a string" },
        { "\"action\":[\"a\"]", "task.action", "a string" },
        { "\"status\":[]", "task.status", "an object" },
        { "\"start_time_in_millis\":1.5", "task.start_time_in_millis",
          "an integer" },
        { "\"running_time_in_nanos\":null", "task.running_time_in_nanos",
          "an integer" },
        { "\"cancellable\":\"true\"", "task.cancellable", "a boolean" },
        { "\"cancellable\":null", "task.cancellable", "a boolean" }
    };

    for (i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
        strcpy(answer, "{\"completed\":true,\"task\":{");

        for (j = 0; j < sizeof(members) / sizeof(members[0]); j++) {
            if (j != i) {
                strcat(answer, members[j][1]);
                strcat(answer, ",");
            }
        }

        strcat(answer, "\"description\":\"d\"}}");

        ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
           == NULL, "task without %s is not a task", members[i][0]);
        ok(strstr(reason, members[i][0]) != NULL
           && strstr(reason, "absent") != NULL, "reason names %s: %s",
           members[i][0], reason);
    }

    for (i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
        strcpy(answer, "{\"completed\":true,\"task\":{");

        for (j = 0; j < sizeof(members) / sizeof(members[0]); j++) {
            strcat(answer, members[j][1]);
            strcat(answer, ",");
        }

        /* the last of a repeated name counts, as in jansson */
        strcat(answer, wrong[i][0]);
        strcat(answer, "}}");

        ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
           == NULL, "%s is not a task", wrong[i][0]);
        ok(strstr(reason, wrong[i][1]) != NULL
           && strstr(reason, wrong[i][2]) != NULL, "reason: %s", reason);
    }

    want = "{\"completed\":true,\"taskId\":\"n:7\",\"runTimeNanos\":5}";

    strcpy(answer, "{\"task\":{");

    for (j = 0; j < sizeof(members) / sizeof(members[0]); j++) {
        strcat(answer, members[j][1]);
        strcat(answer, ",");
    }

    strcat(answer, "\"description\":\"d\",\"headers\":{}},\"completed\":true}");
    value = gms_es_task_value(answer, strlen(answer), reason, sizeof(reason));
    is_str(value, want, "every member there: a task, status absent");
    free(value);

    answer[strlen(answer) - sizeof(",\"completed\":true}") + 1] = '\0';
    strcat(answer, "}");
    ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
       == NULL, "without completed: not a task");
    is_str(reason, "answer is not a task: \"completed\" absent, wanted a "
           "boolean", "reason names completed");

    strcpy(answer, "{\"completed\":false,\"task\":null}");
    ok(gms_es_task_value(answer, strlen(answer), reason, sizeof(reason))
       == NULL, "a null task is not a task");
    is_str(reason, "answer is not a task: \"task\" not an object",
           "reason names task");
}


int
main(void)
{
    test_request();
    test_request_fast();
    test_answer();
    test_answer_scan();
    test_answer_members();

    ok(body_checked > 40 && body_differs == 0,
       "the Rest.li body is the value wrapped, for all %d answers",
       body_checked);

    return done_testing();
}

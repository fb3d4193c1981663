
/*
 * Unit tests of src/lib/gms_es_openapi.c, getEsTaskStatus's OpenAPI form:
 * GET /openapi/operations/elasticSearch/getTaskStatus?task=... as
 * ElasticsearchController (OperationsController before 1.0.0) answers it.
 */


#include <stdlib.h>

#include "tap.h"
#include "gms_es_task.h"
#include "gms_es_openapi.h"


static char    task[GMS_ES_OPENAPI_TASK_MAX + 1];
static size_t  task_len;


static int
query(const char *args)
{
    int  rc;

    task_len = 0;
    rc = gms_es_openapi_query(args, strlen(args), task, &task_len);
    task[rc == 0 ? task_len : 0] = '\0';

    return rc;
}


static int
accept(const char *value)
{
    return gms_es_openapi_accept(value, strlen(value));
}


static void
test_query(void)
{
    ok(query("task=abc:1") == 0 && strcmp(task, "abc:1") == 0, "task");
    ok(query("x=1&task=a-b_c%3A12&y") == 0 && strcmp(task, "a-b_c:12") == 0,
       "among others, percent-decoded");
    ok(query("t%61sk=n:1") == 0 && strcmp(task, "n:1") == 0,
       "the name decoded too");
    ok(query("task=a+b") == 0 && strcmp(task, "a b") == 0, "+ is a space");
    ok(query("task") == 0 && task_len == 0, "no '=': the empty value");
    ok(query("task=") == 0 && task_len == 0, "empty value");
    ok(query("task=a=b") == 0 && strcmp(task, "a=b") == 0,
       "the first '=' splits");

    ok(query("") != 0, "no query: GMS answers");
    ok(query("Task=n:1") != 0, "names are case-sensitive");
    ok(query("task=n:1&task=n:2") != 0, "repeated: GMS answers");
    ok(query("task=n:1&x=%zz") != 0, "a broken escape anywhere");
    ok(query("task=n:1%2") != 0, "a cut escape");
    ok(query("task=n%00:1") != 0, "a control byte");
    ok(query("task=caf%C3%A9:1") != 0, "beyond ASCII");
    ok(query("task=caf\xc3\xa9:1") != 0, "raw beyond ASCII");
}


static void
test_accept(void)
{
    ok(accept("*/*") == 1, "*/*");
    ok(accept("application/json") == 1, "application/json");
    ok(accept("Application/JSON") == 1, "case-insensitive");
    ok(accept("text/html, application/*;q=0.5") == 1, "application/*");
    ok(accept("text/html,application/xhtml+xml,application/xml;q=0.9,"
              "*/*;q=0.8") == 1, "a browser's");
    ok(accept("application/json;q=1.0") == 1, "q=1.0");
    ok(accept("text/html") == 0, "no JSON: Spring's 406");
    ok(accept("text/plain, text/*") == 0, "text only");
    ok(accept("application/json;q=0") == -1, "q=0: GMS decides");
    ok(accept("application/json;q=abc") == -1, "a bad quality");
    ok(accept("application/json;q=0.000") == -1, "q=0.000");
    ok(accept("application/json;q=0.001") == 1, "q=0.001");
    ok(accept("application/json;q=1.000") == 1, "q=1.000");
    ok(accept("application/json;q=1.5") == -1, "q=1.5");
    ok(gms_es_openapi_accept("*/*;q=0.5", 8) == -1,
       "the value's length, not its NUL: q=0. is cut");
    ok(accept("json") == -1, "not a media range");
    ok(accept("application/json, garbage") == -1, "one bad range");
    ok(accept("application/json;charset=\"utf-8\"") == -1,
       "a quoted parameter: GMS decides");
}


static void
test_task(void)
{
    gms_es_task_ref_t  ref;
    char               node[GMS_ES_NODE_MAX + 16];
    char              *s;

    ok(gms_es_openapi_task("aB1-c_D:007", 11, &ref) == 0
       && strcmp(ref.node, "aB1-c_D") == 0 && ref.number == 7,
       "valid; the number as a long");
    ok(gms_es_openapi_task("n:0", 3, &ref) < 0, "0 is invalid");
    ok(gms_es_openapi_task("n:9223372036854775808", 21, &ref) < 0,
       "beyond a long");
    ok(gms_es_openapi_task(":1", 2, &ref) < 0, "no node");
    ok(gms_es_openapi_task("a:b:1", 5, &ref) < 0, "two colons");
    ok(gms_es_openapi_task("a b:1", 5, &ref) < 0, "a space");
    ok(gms_es_openapi_task("", 0, &ref) < 0, "empty");

    memset(node, 'x', GMS_ES_NODE_MAX + 1);
    memcpy(node + GMS_ES_NODE_MAX + 1, ":5", 3);
    ok(gms_es_openapi_task(node, strlen(node), &ref) > 0,
       "a node longer than the edge takes: GMS answers");

    s = gms_es_openapi_bad_task("a b", 3);
    is_str(s, "Task ID should be in the form nodeId:taskId e.g. "
           "aB1cdEf2GHI-JKLMnoPQr3:123456 (got a b)", "400 text");
    free(s);

    s = gms_es_openapi_forbidden("urn:li:corpuser:bob", 19);
    is_str(s, "urn:li:corpuser:bob is not authorized to get ElasticSearch "
           "task status", "403 text");
    free(s);

    (void) gms_es_openapi_task("n:0124", 6, &ref);
    s = gms_es_openapi_not_found(&ref);
    is_str(s, "Could not get task status for n:124", "500 text");
    free(s);
}


int
main(void)
{
    test_query();
    test_accept();
    test_task();

    return done_testing();
}

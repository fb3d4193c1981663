
/*
 * The getEsTaskStatus request and answer mapping, kept free of nginx so
 * that unit tests and fuzzers can call them alone.
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <jansson.h>

#include "gms_es_task.h"
#include "gms_json_scan.h"


#define GMS_MSG_EITHER                                                       \
    "Please specify either Node ID + task ID OR composite task parameters"
#define GMS_MSG_ONLY_ONE                                                     \
    "Please specify only one of Node ID + task ID OR composite task "         \
    "parameters"
#define GMS_MSG_TASK_FORM                                                    \
    "Task should be in the form nodeId:taskId e.g. "                          \
    "aB1cdEf2GHIJKLMnoPQr3S:123456 (got "


/*
 * The members of the cluster's answer that gms_es_task_value() wants, in
 * the order of its lists: the answer's, and its "task"'s.
 */

enum {
    GMS_ES_ANSWER_COMPLETED = 0,
    GMS_ES_ANSWER_TASK,
    GMS_ES_ANSWER_N
};

enum {
    GMS_ES_TASK_NODE = 0,
    GMS_ES_TASK_ID,
    GMS_ES_TASK_TYPE,
    GMS_ES_TASK_ACTION,
    GMS_ES_TASK_DESCRIPTION,
    GMS_ES_TASK_STATUS,
    GMS_ES_TASK_START_TIME,
    GMS_ES_TASK_RUNNING_TIME,
    GMS_ES_TASK_CANCELLABLE,
    GMS_ES_TASK_N
};


static char *gms_es_task_map(const char *answer, size_t len, char *reason,
    size_t reason_size, unsigned restli, char *buf, size_t buf_size);
static char *gms_es_put(char *p, unsigned restli, const char *bare,
    const char *twice);
static char *gms_es_put_integer(char *p, json_int_t n);


/*
 * The bytes of a node's id, [A-Za-z0-9_-]: GMS_ES_NODE_CHAR; ':', which
 * parts it from the task's number in a task's reference: GMS_ES_COLON
 */

#define GMS_ES_NODE_CHAR  1
#define GMS_ES_COLON      2

static const unsigned char  gms_es_chars[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0,    /*  !"#$%&'()*+,-./ */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0, 0, 0, 0, 0,    /* 0123456789:;<=>? */
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* @ABCDEFGHIJKLMNO */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1,    /* PQRSTUVWXYZ[\]^_ */
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* `abcdefghijklmno */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0     /* pqrstuvwxyz{|}~  */
};


static int
gms_es_node_valid(const char *s, size_t len)
{
    size_t  i;

    if (len == 0 || len > GMS_ES_NODE_MAX) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (gms_es_chars[(unsigned char) s[i]] != GMS_ES_NODE_CHAR) {
            return 0;
        }
    }

    return 1;
}


/*
 * "<node>:<number>" as the metadata service's isTaskIdValid() sees it:
 * ^[a-zA-Z0-9-_]+:[0-9]+$ and a number that is a nonzero signed long.
 */

int
gms_es_task_string_parse(const char *s, size_t len, gms_es_task_ref_t *ref)
{
    size_t       i, colon;
    int64_t      n;

    /* the node's bytes, up to the first byte that is not one: the ':' */

    for (colon = 0;
         colon < len
         && gms_es_chars[(unsigned char) s[colon]] == GMS_ES_NODE_CHAR;
         colon++)
    {
        /* void */
    }

    if (colon == 0 || colon > GMS_ES_NODE_MAX || colon + 1 >= len
        || s[colon] != ':')
    {
        return -1;
    }

    n = 0;

    for (i = colon + 1; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }

        if (n > (INT64_MAX - (s[i] - '0')) / 10) {
            return -1;
        }

        n = n * 10 + (s[i] - '0');
    }

    if (n == 0) {
        return -1;
    }

    memcpy(ref->node, s, colon);
    ref->node[colon] = '\0';
    ref->number = n;

    return 0;
}


/*
 * The message for a 400: prefix, then the client's value byte for byte
 * (NULs included, as the metadata service echoes it), then suffix.
 */

static int
gms_es_task_fail(char *msg, size_t size, size_t *len, const char *prefix,
    const char *arg, size_t arg_len, const char *suffix)
{
    size_t       i, n, part_len;
    const char  *part[3];

    part[0] = prefix;
    part[1] = arg;
    part[2] = suffix;
    n = 0;

    for (i = 0; i < 3; i++) {
        if (part[i] == NULL) {
            continue;
        }

        part_len = (i == 1) ? arg_len : strlen(part[i]);

        if (part_len > size - n) {
            part_len = size - n;
        }

        memcpy(msg + n, part[i], part_len);
        n += part_len;
    }

    *len = n;

    return -1;
}


/*
 * A long as Rest.li coerces one from JSON: an integer, or a number
 * written with a fraction or exponent whose value is integral (124.0,
 * 1.24e2), within a signed 64-bit long.
 */

static int
gms_json_integral(json_t *v, json_int_t *n)
{
    double  d;

    if (json_is_integer(v)) {
        *n = json_integer_value(v);
        return 0;
    }

    if (!json_is_real(v)) {
        return -1;
    }

    d = json_real_value(v);

    /* -2^63 is exact as a double; 2^63 is the first value beyond a long */
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
        return -1;
    }

    *n = (json_int_t) d;

    return ((double) *n == d) ? 0 : -1;
}


static const char *
gms_es_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    {
        p++;
    }

    return p;
}


/*
 * The request body as clients send it, {"task": "<node>:<number>"} or
 * {"nodeId": "<node>", "taskId": <number>} (or both, agreeing), read
 * without jansson: 0 with the task, or -1 for anything else (another or
 * a repeated member, an escape, a null, a number written otherwise, a
 * task the metadata service refuses), which gms_es_task_request_json()
 * reads as before, with the metadata service's message.
 */

static int
gms_es_task_request_fast(const char *body, size_t len, gms_es_task_ref_t *ref)
{
    char          composite[GMS_ES_NODE_MAX + 32];
    size_t        key_len, node_len, task_len;
    int64_t       n;
    unsigned      seen;
    const char   *p, *end, *key, *node, *task, *start;

    enum {
        GMS_ES_FAST_TASK = 1,
        GMS_ES_FAST_NODE = 2,
        GMS_ES_FAST_NUMBER = 4
    };

    p = body;
    end = body + len;
    seen = 0;
    n = 0;
    node = NULL;
    task = NULL;
    node_len = 0;
    task_len = 0;

    p = gms_es_ws(p, end);

    if (p == end || *p++ != '{') {
        return -1;
    }

    for ( ;; ) {
        p = gms_es_ws(p, end);

        if (p == end || *p++ != '"') {
            return -1;
        }

        for (key = p;
             p < end && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'));
             p++)
        {
            /* void */
        }

        key_len = p - key;

        if (p == end || *p++ != '"') {
            return -1;
        }

        p = gms_es_ws(p, end);

        if (p == end || *p++ != ':') {
            return -1;
        }

        p = gms_es_ws(p, end);

        if (p == end) {
            return -1;
        }

        if (key_len == 6 && memcmp(key, "taskId", 6) == 0) {
            if ((seen & GMS_ES_FAST_NUMBER) || *p < '1' || *p > '9') {
                return -1;
            }

            seen |= GMS_ES_FAST_NUMBER;

            for ( /* void */ ; p < end && *p >= '0' && *p <= '9'; p++) {
                if (n > (INT64_MAX - (*p - '0')) / 10) {
                    return -1;
                }

                n = n * 10 + (*p - '0');
            }

        } else {
            if (key_len == 4 && memcmp(key, "task", 4) == 0) {
                if (seen & GMS_ES_FAST_TASK) {
                    return -1;
                }

                seen |= GMS_ES_FAST_TASK;

            } else if (key_len == 6 && memcmp(key, "nodeId", 6) == 0) {
                if (seen & GMS_ES_FAST_NODE) {
                    return -1;
                }

                seen |= GMS_ES_FAST_NODE;

            } else {
                return -1;
            }

            if (*p++ != '"') {
                return -1;
            }

            /*
             * what a task or a node can hold: nothing to unescape.  A
             * task's is checked below (an escape in it fails there), a
             * node's here.
             */

            start = p;

            if (key_len == 4) {
                p = memchr(p, '"', end - p);

                if (p == NULL) {
                    return -1;
                }

            } else {
                while (p < end && gms_es_chars[(unsigned char) *p] != 0) {
                    p++;
                }

                if (p == end || *p != '"') {
                    return -1;
                }
            }

            if (key_len == 4) {
                task = start;
                task_len = p - start;

            } else {
                node = start;
                node_len = p - start;
            }

            p++;
        }

        p = gms_es_ws(p, end);

        if (p == end) {
            return -1;
        }

        if (*p == '}') {
            break;
        }

        if (*p++ != ',') {
            return -1;
        }
    }

    if (gms_es_ws(p + 1, end) != end) {
        return -1;
    }

    if (!(seen & GMS_ES_FAST_NUMBER)) {
        /* a nodeId without a taskId is not a task: the task alone */
        node = NULL;
    }

    if (node != NULL) {
        if (!gms_es_node_valid(node, node_len)) {
            return -1;
        }

        if (task != NULL) {
            snprintf(composite, sizeof(composite), "%.*s:%" PRId64,
                     (int) node_len, node, n);

            if (task_len != strlen(composite)
                || memcmp(task, composite, task_len) != 0)
            {
                return -1;
            }
        }

        memcpy(ref->node, node, node_len);
        ref->node[node_len] = '\0';
        ref->number = n;

        return 0;
    }

    if (task == NULL) {
        return -1;
    }

    return gms_es_task_string_parse(task, task_len, ref);
}


/*
 * The request body: {"task": "<node>:<number>"} or
 * {"nodeId": "<node>", "taskId": <number>}, validated in the metadata
 * service's order and with its messages; on failure returns -1 with the
 * message for a 400.  JSON null counts as absent, as in Rest.li.
 */

int
gms_es_task_request_parse(const char *body, size_t len,
    gms_es_task_ref_t *ref, char *msg, size_t msg_size, size_t *msg_len)
{
    if (gms_es_task_request_fast(body, len, ref) == 0) {
        return 0;
    }

    return gms_es_task_request_json(body, len, ref, msg, msg_size, msg_len);
}


/* the same, by jansson: what the fast reading leaves, and its messages */

int
gms_es_task_request_json(const char *body, size_t len,
    gms_es_task_ref_t *ref, char *msg, size_t msg_size, size_t *msg_len)
{
    int            rc, by_node, by_task;
    char           composite[GMS_ES_NODE_MAX + 32];
    size_t         node_len, task_len;
    json_t        *doc, *node, *number, *task;
    const char    *node_str, *task_str;
    json_int_t     n;
    json_error_t   err;

    if (len == 0) {
        doc = json_object();

    } else {
        doc = json_loadb(body, len,
                         JSON_REJECT_DUPLICATES|JSON_DECODE_ANY|JSON_ALLOW_NUL,
                         &err);

        if (doc == NULL) {
            return gms_es_task_fail(msg, msg_size, msg_len,
                                    "Invalid JSON in request body: ",
                                    err.text, strlen(err.text), NULL);
        }
    }

    rc = -1;

    if (!json_is_object(doc)) {
        gms_es_task_fail(msg, msg_size, msg_len,
                         "Request body must be a JSON object", NULL, 0, NULL);
        goto done;
    }

    n = 0;
    node = json_object_get(doc, "nodeId");
    number = json_object_get(doc, "taskId");
    task = json_object_get(doc, "task");

    if (node != NULL && !json_is_null(node) && !json_is_string(node)) {
        gms_es_task_fail(msg, msg_size, msg_len,
                         "Parameter 'nodeId' must be a string", NULL, 0, NULL);
        goto done;
    }

    if (number != NULL && !json_is_null(number)
        && gms_json_integral(number, &n) != 0)
    {
        gms_es_task_fail(msg, msg_size, msg_len,
                         "Parameter 'taskId' must be an integer",
                         NULL, 0, NULL);
        goto done;
    }

    if (task != NULL && !json_is_null(task) && !json_is_string(task)) {
        gms_es_task_fail(msg, msg_size, msg_len,
                         "Parameter 'task' must be a string", NULL, 0, NULL);
        goto done;
    }

    node_str = json_is_string(node) ? json_string_value(node) : NULL;
    node_len = json_is_string(node) ? json_string_length(node) : 0;
    task_str = json_is_string(task) ? json_string_value(task) : NULL;
    task_len = json_is_string(task) ? json_string_length(task) : 0;

    by_task = (task_str != NULL);
    by_node = (node_str != NULL && n > 0);

    if (!by_task && !by_node) {
        gms_es_task_fail(msg, msg_size, msg_len, GMS_MSG_EITHER,
                         NULL, 0, NULL);
        goto done;
    }

    if (by_node) {
        if (!gms_es_node_valid(node_str, node_len)
            || strlen(node_str) != node_len)
        {
            gms_es_task_fail(msg, msg_size, msg_len,
                             "Node ID should contain only letters, digits, "
                             "'-' and '_' (got ", node_str, node_len, ")");
            goto done;
        }

        snprintf(composite, sizeof(composite), "%s:%" PRId64, node_str,
                 (int64_t) n);

        if (by_task
            && (task_len != strlen(composite)
                || memcmp(task_str, composite, task_len) != 0))
        {
            gms_es_task_fail(msg, msg_size, msg_len, GMS_MSG_ONLY_ONE,
                             NULL, 0, NULL);
            goto done;
        }
    }

    if (by_task && gms_es_task_string_parse(task_str, task_len, ref) != 0) {
        gms_es_task_fail(msg, msg_size, msg_len, GMS_MSG_TASK_FORM, task_str,
                         task_len, ")");
        goto done;
    }

    if (by_node) {
        memcpy(ref->node, node_str, node_len + 1);
        ref->number = n;
    }

    rc = 0;

done:

    json_decref(doc);

    return rc;
}


/*
 * A _tasks/<node>:<number> answer (Elasticsearch 6-8, OpenSearch 1-2) to
 * the metadata service's value, the text OperationsResource.getTaskStatus
 * returns: an org.json object written in the order completed, taskId,
 * runTimeNanos, status, where "status" is a string holding the cluster's
 * status object as compact JSON (the search client keeps it as raw bytes,
 * RawTaskStatus, and org.json writes it through toString()), its numbers
 * as the cluster wrote them.  An absent status leaves the member out, as
 * JSONObject.put(key, null) does.  The cluster's "response" and "error"
 * are not carried over.  Returns NULL, with the reason, for anything that
 * is not a task.
 *
 * What a task is, is what GMS's search client parses: GetTaskResponse's
 * and TaskInfo's ConstructingObjectParsers (client/rest-high-level/.../
 * tasks/GetTaskResponse.java and server/.../tasks/TaskInfo.java in
 * opensearch-project/OpenSearch, the same in Elasticsearch 7's client).
 * Their constructor arguments are required; declareString takes only a
 * string (not null), declareRawObject only an object (not null).  A
 * parse failure is an IOException (RestHighLevelClient's
 * performRequestAndParseOptionalEntity) to DataHub's getTaskStatus in
 * metadata-io/.../systemmetadata/ESSystemMetadataDAO.java, hence an
 * empty Optional, which OperationsResource answers as the error value.
 * The client also takes "1" and "true" for a long and a boolean; no
 * cluster writes them, and they are refused here.
 */

char *
gms_es_task_value(const char *answer, size_t len, char *reason,
    size_t reason_size)
{
    return gms_es_task_map(answer, len, reason, reason_size, 0, NULL, 0);
}


/*
 * The same value as the Rest.li action's body, {"value": "<the value>"}
 * (gms_restli_value_body() of it), written in the same pass.
 */

char *
gms_es_task_value_body(const char *answer, size_t len, char *reason,
    size_t reason_size)
{
    return gms_es_task_map(answer, len, reason, reason_size, 1, NULL, 0);
}


/*
 * The same into buf when the body surely fits in its size bytes (buf is
 * returned), else malloc()ed: a caller's scratch buffer spares a malloc()
 * of the worst case, which is several times the body.
 */

char *
gms_es_task_value_body_buf(const char *answer, size_t len, char *buf,
    size_t size, char *reason, size_t reason_size)
{
    return gms_es_task_map(answer, len, reason, reason_size, 1, buf, size);
}


/*
 * A literal of the value (bare), or as the Rest.li body holds it (restli:
 * within a JSON string, its '"' and '\\' escaped)
 */

static char *
gms_es_put(char *p, unsigned restli, const char *bare, const char *twice)
{
    size_t  len;

    len = strlen(restli ? twice : bare);

    return (char *) memcpy(p, restli ? twice : bare, len) + len;
}


/* a long's decimal digits, as org.json writes a Java long */

static char *
gms_es_put_integer(char *p, json_int_t n)
{
    char                 digits[24], *d;
    unsigned long long   u;

    static const char    pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233"
        "34353637383940414243444546474849505152535455565758596061626364656667"
        "6869707172737475767778798081828384858687888990919293949596979899";

    u = (n < 0) ? 0 - (unsigned long long) n : (unsigned long long) n;
    d = digits + sizeof(digits);

    /* two digits a division */

    while (u >= 100) {
        d -= 2;
        memcpy(d, &pairs[(u % 100) * 2], 2);
        u /= 100;
    }

    if (u >= 10) {
        d -= 2;
        memcpy(d, &pairs[u * 2], 2);

    } else {
        *--d = (char) ('0' + u);
    }

    if (n < 0) {
        *--d = '-';
    }

    memcpy(p, d, digits + sizeof(digits) - d);

    return p + (digits + sizeof(digits) - d);
}


static char *
gms_es_task_map(const char *answer, size_t len, char *reason,
    size_t reason_size, unsigned restli, char *buf, size_t buf_size)
{
    char          *out, *p;
    size_t         size, at, node_len;
    json_t        *node_text;
    const char    *where, *node_str;
    json_int_t     id, nanos;
    gms_member_t  *completed, *node, *status, *bad;
    gms_member_t   task[GMS_ES_TASK_N + 1] = {
        gms_member("node", GMS_JSON_STRING, 1, NULL),
        gms_member("id", GMS_JSON_INTEGER, 1, NULL),
        gms_member("type", GMS_JSON_STRING, 1, NULL),
        gms_member("action", GMS_JSON_STRING, 1, NULL),
        gms_member("description", GMS_JSON_STRING, 0, NULL),
        gms_member("status", GMS_JSON_OBJECT, 0, NULL),
        gms_member("start_time_in_millis", GMS_JSON_INTEGER, 1, NULL),
        gms_member("running_time_in_nanos", GMS_JSON_INTEGER, 1, NULL),
        gms_member("cancellable", GMS_JSON_BOOLEAN, 1, NULL),
        gms_member_end
    };
    gms_member_t   top[GMS_ES_ANSWER_N + 1] = {
        gms_member("completed", GMS_JSON_BOOLEAN, 1, NULL),
        gms_member("task", GMS_JSON_OBJECT, 1, task),
        gms_member_end
    };

    if (answer == NULL) {
        /* no output from the subrequest: no arithmetic on NULL */
        answer = "";
        len = 0;
    }

    /* the answer and its task's members, in one pass */

    if (gms_json_scan(answer, len, top, &at) != 0) {
        goto not_json;
    }

    where = "";
    bad = gms_json_scan_member_mismatch(top);

    if (bad != NULL) {
        goto not_task;
    }

    where = "task.";
    bad = gms_json_scan_member_mismatch(task);

    if (bad != NULL) {
        goto not_task;
    }

    completed = &top[GMS_ES_ANSWER_COMPLETED];
    node = &task[GMS_ES_TASK_NODE];
    status = &task[GMS_ES_TASK_STATUS];

    /* both read as integers above */
    id = task[GMS_ES_TASK_ID].integer;
    nanos = task[GMS_ES_TASK_RUNNING_TIME].integer;

    /* the node's text: between its quotes unless it has escapes */

    node_text = NULL;

    if (memchr(node->value, '\\', node->len) == NULL) {
        node_str = node->value + 1;
        node_len = node->len - 2;

    } else {
        node_text = gms_json_scan_member_load(node);

        if (!json_is_string(node_text)) {
            json_decref(node_text);
            snprintf(reason, reason_size, "%s", "out of memory");
            return NULL;
        }

        node_str = json_string_value(node_text);
        node_len = json_string_length(node_text);
    }

    if (node_len > GMS_ES_NODE_MAX) {
        json_decref(node_text);
        snprintf(reason, reason_size, "answer is not a task: \"task.node\" "
                 "longer than %d bytes", GMS_ES_NODE_MAX);
        return NULL;
    }

    /*
     * the literals (under 128 bytes, quoted twice), 7 bytes at most for a
     * byte quoted twice, 20 for a long's digits and its sign, and what
     * the quoting may write past its end
     */

    size = 128 + 7 * node_len + 2 * 20
           + ((status->value != NULL) ? 7 * status->len : 0)
           + GMS_QUOTE_SLACK;

    out = (size <= buf_size) ? buf : malloc(size);
    if (out == NULL) {
        json_decref(node_text);
        snprintf(reason, reason_size, "%s", "out of memory");
        return NULL;
    }

    p = out;

    if (*completed->value == 't') {
        p = gms_es_put(p, restli, "{\"completed\":true,\"taskId\":\"",
                       "{\"value\":\"{\\\"completed\\\":true,"
                       "\\\"taskId\\\":\\\"");

    } else {
        p = gms_es_put(p, restli, "{\"completed\":false,\"taskId\":\"",
                       "{\"value\":\"{\\\"completed\\\":false,"
                       "\\\"taskId\\\":\\\"");
    }

    p = gms_json_scan_orgjson_quote(p, node_str, node_len,
                                    restli ? GMS_QUOTE_TWICE : 0);
    *p++ = ':';
    p = gms_es_put_integer(p, id);
    p = gms_es_put(p, restli, "\",\"runTimeNanos\":",
                   "\\\",\\\"runTimeNanos\\\":");
    p = gms_es_put_integer(p, nanos);

    if (status->value != NULL) {
        p = gms_es_put(p, restli, ",\"status\":\"", ",\\\"status\\\":\\\"");
        p = gms_json_scan_orgjson_quote(p, status->value, status->len,
                                        GMS_QUOTE_COMPACT
                                        | (restli ? GMS_QUOTE_TWICE : 0));
        p = gms_es_put(p, restli, "\"", "\\\"");
    }

    p = gms_es_put(p, restli, "}", "}\"}");

    *p = '\0';

    json_decref(node_text);

    return out;

not_task:

    snprintf(reason, reason_size, "answer is not a task: \"%s%s\" %s %s",
             where, bad->name,
             (bad->value == NULL) ? "absent, wanted" : "not",
             gms_json_type_names[bad->type]);

    return NULL;

not_json:

    snprintf(reason, reason_size, "answer is not JSON (at byte %zu)", at);

    return NULL;
}


char *
gms_es_task_error_value(const gms_es_task_ref_t *ref)
{
    char     text[GMS_ES_NODE_MAX + 64], *value;
    json_t  *doc;

    snprintf(text, sizeof(text), "Could not get task status for %s:%" PRId64,
             ref->node, ref->number);

    doc = json_pack("{s:s}", "error", text);
    if (doc == NULL) {
        return NULL;
    }

    value = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);

    return value;
}

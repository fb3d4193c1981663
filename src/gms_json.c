
/*
 * The getEsTaskStatus request and answer mapping, and the error body,
 * kept free of nginx so that unit tests and fuzzers can call them alone.
 */


#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "gms_json.h"


#define GMS_RESTLI_EXCEPTION  "com.linkedin.restli.server.RestLiServiceException"

#define GMS_MSG_EITHER                                                       \
    "Please specify either Node ID + task ID OR composite task parameters"
#define GMS_MSG_ONLY_ONE                                                     \
    "Please specify only one of Node ID + task ID OR composite task "         \
    "parameters"
#define GMS_MSG_TASK_FORM                                                    \
    "Task should be in the form nodeId:taskId e.g. "                          \
    "aB1cdEf2GHIJKLMnoPQr3S:123456 (got "


static char *
gms_json_dump(json_t *doc)
{
    char  *s;

    if (doc == NULL) {
        return NULL;
    }

    s = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);

    return s;
}


char *
gms_json_error_body(int status, const char *message, size_t len)
{
    json_t  *text;

    /* NULL unless the message is valid UTF-8, which an echo of the
     * client's JSON string always is */
    text = json_stringn(message, len);

    if (text == NULL) {
        return NULL;
    }

    return gms_json_dump(json_pack("{s:s, s:i, s:o}",
                                   "exceptionClass", GMS_RESTLI_EXCEPTION,
                                   "status", status,
                                   "message", text));
}


/*
 * Rest.li's action response, {"value": "<the action's return>"}, written
 * directly: value is jansson's compact output, so escaping quotes,
 * backslashes and control bytes is all it takes (a second json_dumps of
 * the whole status cost more than the mapping itself).
 */

char *
gms_json_value_body(const char *value)
{
    char                 *body, *p;
    size_t                len;
    const unsigned char  *v;
    static const char     head[] = "{\"value\":\"", tail[] = "\"}";

    len = sizeof(head) - 1 + sizeof(tail);

    for (v = (const unsigned char *) value; *v; v++) {
        len += (*v == '"' || *v == '\\') ? 2 : (*v < 0x20) ? 6 : 1;
    }

    body = malloc(len);
    if (body == NULL) {
        return NULL;
    }

    p = body;
    memcpy(p, head, sizeof(head) - 1);
    p += sizeof(head) - 1;

    for (v = (const unsigned char *) value; *v; v++) {

        if (*v == '"' || *v == '\\') {
            *p++ = '\\';
            *p++ = (char) *v;

        } else if (*v < 0x20) {
            p += sprintf(p, "\\u%04x", *v);

        } else {
            *p++ = (char) *v;
        }
    }

    memcpy(p, tail, sizeof(tail));

    return body;
}


static int
gms_es_node_valid(const char *s, size_t len)
{
    size_t  i;

    if (len == 0 || len > GMS_ES_NODE_MAX) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')
              || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
        {
            return 0;
        }
    }

    return 1;
}


/*
 * "<node>:<number>" as the metadata service's isTaskIdValid() sees it:
 * ^[a-zA-Z0-9-_]+:[0-9]+$ and a number that is a nonzero signed long.
 */

static int
gms_es_task_string_parse(const char *s, size_t len, gms_es_task_ref_t *ref)
{
    size_t       i, colon;
    int64_t      n;

    colon = len;

    for (i = 0; i < len; i++) {
        if (s[i] == ':') {
            colon = i;
            break;
        }
    }

    if (colon == len || !gms_es_node_valid(s, colon) || colon + 1 == len) {
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
 * The request body: {"task": "<node>:<number>"} or
 * {"nodeId": "<node>", "taskId": <number>}, validated in the metadata
 * service's order and with its messages; on failure returns -1 with the
 * message for a 400.  JSON null counts as absent, as in Rest.li.
 */

int
gms_es_task_request_parse(const char *body, size_t len,
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
        gms_es_task_fail(msg, msg_size, msg_len, "Request body must be a JSON object",
                         NULL, 0, NULL);
        goto done;
    }

    node = json_object_get(doc, "nodeId");
    number = json_object_get(doc, "taskId");
    task = json_object_get(doc, "task");

    if (node != NULL && !json_is_null(node) && !json_is_string(node)) {
        gms_es_task_fail(msg, msg_size, msg_len, "Parameter 'nodeId' must be a string",
                         NULL, 0, NULL);
        goto done;
    }

    if (number != NULL && !json_is_null(number) && !json_is_integer(number)) {
        gms_es_task_fail(msg, msg_size, msg_len, "Parameter 'taskId' must be an integer",
                         NULL, 0, NULL);
        goto done;
    }

    if (task != NULL && !json_is_null(task) && !json_is_string(task)) {
        gms_es_task_fail(msg, msg_size, msg_len, "Parameter 'task' must be a string",
                         NULL, 0, NULL);
        goto done;
    }

    node_str = json_is_string(node) ? json_string_value(node) : NULL;
    node_len = json_is_string(node) ? json_string_length(node) : 0;
    n = json_is_integer(number) ? json_integer_value(number) : 0;
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
 * the metadata service's value: {"completed", "taskId", "runTimeNanos",
 * "status"}; the cluster's "response" and "error" are not carried over.
 * Returns NULL, with the reason, for anything that is not a task.
 */

char *
gms_es_task_value(const char *answer, size_t len, char *reason,
    size_t reason_size)
{
    char          task_id[GMS_ES_NODE_MAX + 32];
    json_t       *doc, *task, *node, *id, *completed, *nanos, *status, *out;
    json_error_t  err;

    doc = json_loadb(answer, len, 0, &err);

    if (doc == NULL) {
        snprintf(reason, reason_size, "answer is not JSON: %s", err.text);
        return NULL;
    }

    out = NULL;

    task = json_object_get(doc, "task");
    completed = json_object_get(doc, "completed");
    node = json_object_get(task, "node");
    id = json_object_get(task, "id");
    nanos = json_object_get(task, "running_time_in_nanos");
    status = json_object_get(task, "status");

    if (!json_is_object(task) || !json_is_boolean(completed)
        || !json_is_string(node) || !json_is_integer(id)
        || json_string_length(node) > GMS_ES_NODE_MAX
        || (nanos != NULL && !json_is_integer(nanos))
        || (status != NULL && !json_is_null(status)
            && !json_is_object(status)))
    {
        snprintf(reason, reason_size, "%s", "answer is not a task");
        goto done;
    }

    snprintf(task_id, sizeof(task_id), "%s:%" JSON_INTEGER_FORMAT,
             json_string_value(node), json_integer_value(id));

    out = json_pack("{s:O, s:s, s:I}", "completed", completed,
                    "taskId", task_id,
                    "runTimeNanos", nanos ? json_integer_value(nanos) : 0);

    if (out != NULL && json_is_object(status)
        && json_object_set(out, "status", status) != 0)
    {
        json_decref(out);
        out = NULL;
    }

    if (out == NULL) {
        snprintf(reason, reason_size, "%s", "out of memory");
    }

done:

    json_decref(doc);

    return gms_json_dump(out);
}


char *
gms_es_task_error_value(const gms_es_task_ref_t *ref)
{
    char  text[GMS_ES_NODE_MAX + 64];

    snprintf(text, sizeof(text), "Could not get task status for %s:%" PRId64,
             ref->node, ref->number);

    return gms_json_dump(json_pack("{s:s}", "error", text));
}

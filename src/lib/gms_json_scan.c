
/*
 * The getEsTaskStatus request and answer mapping, and the error body,
 * kept free of nginx so that unit tests and fuzzers can call them alone.
 */


#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "gms_es_task.h"


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

    n = 0;
    node = json_object_get(doc, "nodeId");
    number = json_object_get(doc, "taskId");
    task = json_object_get(doc, "task");

    if (node != NULL && !json_is_null(node) && !json_is_string(node)) {
        gms_es_task_fail(msg, msg_size, msg_len, "Parameter 'nodeId' must be a string",
                         NULL, 0, NULL);
        goto done;
    }

    if (number != NULL && !json_is_null(number)
        && gms_json_integral(number, &n) != 0)
    {
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
 * A scanner for the search cluster's answer.  A completed task can carry
 * megabytes of "response" and a long "description" that the metadata
 * service drops: they are checked for JSON syntax and skipped, and only
 * the few members kept are handed to jansson.
 */

#define GMS_SCAN_DEPTH  2048    /* as jansson's parser */


typedef struct {
    const char  *p;
    const char  *end;
    int          depth;
} gms_scan_t;


/* the JSON type a member must have when it is there */

typedef enum {
    GMS_JSON_ANY = 0,
    GMS_JSON_STRING,
    GMS_JSON_INTEGER,
    GMS_JSON_BOOLEAN,
    GMS_JSON_OBJECT
} gms_json_type_e;


typedef struct {
    const char       *name;
    gms_json_type_e   type;
    unsigned          required:1;
    const char       *value;   /* NULL: absent */
    size_t            len;
} gms_member_t;


static int gms_scan_value(gms_scan_t *s);


static void
gms_scan_ws(gms_scan_t *s)
{
    while (s->p < s->end
           && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n'
               || *s->p == '\r'))
    {
        s->p++;
    }
}


/* the bytes of one UTF-8 sequence starting at p, or 0 if it is not one */

static size_t
gms_utf8_len(const unsigned char *p, const unsigned char *end)
{
    size_t    n, i;
    uint32_t  c, min;

    if (p[0] < 0x80) {
        return 1;
    }

    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        n = 2; c = p[0] & 0x1f; min = 0x80;

    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3; c = p[0] & 0x0f; min = 0x800;

    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4; c = p[0] & 0x07; min = 0x10000;

    } else {
        return 0;
    }

    if ((size_t) (end - p) < n) {
        return 0;
    }

    for (i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }

        c = (c << 6) | (p[i] & 0x3f);
    }

    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        return 0;
    }

    return n;
}


/* the value of 4 hex digits at p, or -1 */

static long
gms_scan_hex4(const unsigned char *p, const unsigned char *end)
{
    long    c;
    size_t  i;

    if (end - p < 4) {
        return -1;
    }

    c = 0;

    for (i = 0; i < 4; i++) {
        if (!isxdigit(p[i])) {
            return -1;
        }

        c = c * 16 + (isdigit(p[i]) ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
    }

    return c;
}


/* a string as strict as jansson's: escapes, UTF-8, no control bytes */

static int
gms_scan_string(gms_scan_t *s)
{
    long                  c;
    size_t                n;
    const unsigned char  *p, *end;

    if (s->p == s->end || *s->p != '"') {
        return -1;
    }

    p = (const unsigned char *) s->p + 1;
    end = (const unsigned char *) s->end;

    while (p < end) {

        if (*p == '"') {
            s->p = (const char *) p + 1;
            return 0;
        }

        if (*p < 0x20) {
            return -1;
        }

        if (*p == '\\') {
            if (++p == end) {
                return -1;
            }

            if (*p == 'u') {
                c = gms_scan_hex4(p + 1, end);

                /* as jansson: no NUL, surrogates only in pairs */

                if (c <= 0 || (c >= 0xdc00 && c <= 0xdfff)) {
                    return -1;
                }

                p += 5;

                if (c >= 0xd800 && c <= 0xdbff) {
                    if (end - p < 2 || p[0] != '\\' || p[1] != 'u') {
                        return -1;
                    }

                    c = gms_scan_hex4(p + 2, end);

                    if (c < 0xdc00 || c > 0xdfff) {
                        return -1;
                    }

                    p += 6;
                }

                continue;
            }

            if (strchr("\"\\/bfnrt", *p) == NULL || *p == '\0') {
                return -1;
            }

            p++;
            continue;
        }

        n = gms_utf8_len(p, end);

        if (n == 0) {
            return -1;
        }

        p += n;
    }

    return -1;
}


static int
gms_scan_digits(gms_scan_t *s)
{
    const char  *start;

    for (start = s->p; s->p < s->end && *s->p >= '0' && *s->p <= '9'; s->p++)
    {
        /* void */
    }

    return (s->p == start) ? -1 : 0;
}


/* a number as JSON writes it: no leading zeros, no '+', digits after '.' */

static int
gms_scan_number(gms_scan_t *s)
{
    if (*s->p == '-') {
        s->p++;
    }

    if (s->p < s->end && *s->p == '0') {
        s->p++;

    } else if (gms_scan_digits(s) != 0) {
        return -1;
    }

    if (s->p < s->end && *s->p == '.') {
        s->p++;

        if (gms_scan_digits(s) != 0) {
            return -1;
        }
    }

    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;

        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) {
            s->p++;
        }

        return gms_scan_digits(s);
    }

    return 0;
}


static int
gms_scan_literal(gms_scan_t *s, const char *word, size_t len)
{
    if ((size_t) (s->end - s->p) < len || memcmp(s->p, word, len) != 0) {
        return -1;
    }

    s->p += len;

    return 0;
}


/*
 * One member of an object; its value is recorded if want[] names it (the
 * last one, for a repeated name, as jansson does).
 */

static int
gms_scan_member(gms_scan_t *s, gms_member_t *want)
{
    size_t         key_len;
    const char    *key, *value;
    gms_member_t  *m;

    key = s->p;

    if (gms_scan_string(s) != 0) {
        return -1;
    }

    /* the key between its quotes, known to be there only now */
    key++;
    key_len = s->p - 1 - key;

    gms_scan_ws(s);

    if (s->p == s->end || *s->p++ != ':') {
        return -1;
    }

    gms_scan_ws(s);
    value = s->p;

    if (gms_scan_value(s) != 0) {
        return -1;
    }

    for (m = want; m && m->name; m++) {
        if (strlen(m->name) == key_len && memcmp(m->name, key, key_len) == 0)
        {
            m->value = value;
            m->len = s->p - value;
        }
    }

    return 0;
}


/* an object (close '}', members) or an array (close ']', values) */

static int
gms_scan_container(gms_scan_t *s, char close, gms_member_t *want)
{
    if (++s->depth > GMS_SCAN_DEPTH) {
        return -1;
    }

    s->p++;
    gms_scan_ws(s);

    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        return 0;
    }

    for ( ;; ) {

        if ((close == '}' ? gms_scan_member(s, want) : gms_scan_value(s))
            != 0)
        {
            return -1;
        }

        gms_scan_ws(s);

        if (s->p == s->end) {
            return -1;
        }

        if (*s->p == close) {
            s->p++;
            s->depth--;
            return 0;
        }

        if (*s->p++ != ',') {
            return -1;
        }

        gms_scan_ws(s);
    }
}


static int
gms_scan_value(gms_scan_t *s)
{
    if (s->p == s->end) {
        return -1;
    }

    switch (*s->p) {
    case '{':
        return gms_scan_container(s, '}', NULL);
    case '[':
        return gms_scan_container(s, ']', NULL);
    case '"':
        return gms_scan_string(s);
    case 't':
        return gms_scan_literal(s, "true", 4);
    case 'f':
        return gms_scan_literal(s, "false", 5);
    case 'n':
        return gms_scan_literal(s, "null", 4);
    default:
        return gms_scan_number(s);
    }
}


/* a recorded member's value as jansson's; NULL when absent or invalid */

static json_t *
gms_member_load(gms_member_t *m)
{
    if (m->value == NULL) {
        return NULL;
    }

    return json_loadb(m->value, m->len, JSON_DECODE_ANY, NULL);
}


/*
 * One character of a string as org.json's JSONObject.quote() writes it
 * (JSON-java 20231013, the version the metadata service builds with):
 * '"' and '\' escaped, "</" as "<\/", the C0 controls by their short
 * escapes or \u00xx, and U+0080-U+009F and U+2000-U+20FF as \uxxxx (lower
 * case hex).  c is the code point, prev the one before it, n the bytes
 * the character took in UTF-8, which are copied when no escape is due.
 */

static char *
gms_orgjson_char(char *p, uint32_t c, uint32_t prev, const char *utf8,
    size_t n)
{
    static const char  hex[] = "0123456789abcdef";

    switch (c) {
    case '"':
    case '\\':
        *p++ = '\\';
        *p++ = (char) c;
        return p;
    case '/':
        if (prev == '<') {
            *p++ = '\\';
        }
        *p++ = '/';
        return p;
    case '\b':
        *p++ = '\\'; *p++ = 'b';
        return p;
    case '\t':
        *p++ = '\\'; *p++ = 't';
        return p;
    case '\n':
        *p++ = '\\'; *p++ = 'n';
        return p;
    case '\f':
        *p++ = '\\'; *p++ = 'f';
        return p;
    case '\r':
        *p++ = '\\'; *p++ = 'r';
        return p;
    }

    if (c < 0x20 || (c >= 0x80 && c < 0xa0) || (c >= 0x2000 && c < 0x2100)) {
        *p++ = '\\';
        *p++ = 'u';
        *p++ = hex[(c >> 12) & 0xf];
        *p++ = hex[(c >> 8) & 0xf];
        *p++ = hex[(c >> 4) & 0xf];
        *p++ = hex[c & 0xf];
        return p;
    }

    memcpy(p, utf8, n);

    return p + n;
}


/* the code point of a valid UTF-8 sequence of n bytes */

static uint32_t
gms_utf8_decode(const unsigned char *p, size_t n)
{
    size_t    i;
    uint32_t  c;

    if (n == 1) {
        return p[0];
    }

    c = p[0] & (0xff >> (n + 1));

    for (i = 1; i < n; i++) {
        c = (c << 6) | (p[i] & 0x3f);
    }

    return c;
}


/*
 * UTF-8 text (already checked) quoted as org.json does, without the
 * surrounding quotes; at most 6 bytes out for each byte in.  When
 * compact is set, the text is JSON and its whitespace outside strings is
 * dropped on the way, which is how the search client's copy of the
 * task's status reads (a compact copy of the cluster's object).
 */

static char *
gms_orgjson_quote(char *p, const char *s, size_t len, int compact)
{
    int                   in_string, escaped;
    size_t                n;
    uint32_t              c, prev;
    const unsigned char  *u, *end;

    u = (const unsigned char *) s;
    end = u + len;
    prev = 0;
    in_string = 0;
    escaped = 0;

    while (u < end) {

        if (compact && !in_string
            && (*u == ' ' || *u == '\t' || *u == '\n' || *u == '\r'))
        {
            u++;
            continue;
        }

        n = gms_utf8_len(u, end);

        if (n == 0) {
            /* not reached for checked text; never copy past the end */
            n = 1;
        }

        c = gms_utf8_decode(u, n);

        if (compact) {
            if (escaped) {
                escaped = 0;

            } else if (in_string && c == '\\') {
                escaped = 1;

            } else if (c == '"') {
                in_string = !in_string;
            }
        }

        p = gms_orgjson_char(p, c, prev, (const char *) u, n);
        prev = c;
        u += n;
    }

    return p;
}


/* a JSON integer's text, as the scanner found it, checked by jansson */

static int
gms_member_integer(gms_member_t *m, json_int_t *out)
{
    json_t  *v;

    v = gms_member_load(m);

    if (!json_is_integer(v)) {
        json_decref(v);
        return -1;
    }

    *out = json_integer_value(v);
    json_decref(v);

    return 0;
}


static const char  *gms_json_type_names[] = {
    "any value", "a string", "an integer", "a boolean", "an object"
};


/*
 * The first member of want[] that is required and absent, or there with
 * another type; NULL when all are as wanted.
 */

static gms_member_t *
gms_member_mismatch(gms_member_t *want)
{
    json_int_t     n;
    gms_member_t  *m;

    for (m = want; m->name; m++) {

        if (m->value == NULL) {
            if (m->required) {
                return m;
            }

            continue;
        }

        switch (m->type) {

        case GMS_JSON_STRING:
            if (*m->value != '"') {
                return m;
            }
            break;

        case GMS_JSON_INTEGER:
            if (gms_member_integer(m, &n) != 0) {
                return m;
            }
            break;

        case GMS_JSON_BOOLEAN:
            if (*m->value != 't' && *m->value != 'f') {
                return m;
            }
            break;

        case GMS_JSON_OBJECT:
            if (*m->value != '{') {
                return m;
            }
            break;

        default:
            break;
        }
    }

    return NULL;
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
    char          *out, *p;
    size_t         size;
    json_t        *node_text;
    const char    *where;
    json_int_t     id, nanos;
    gms_scan_t     scan;
    gms_member_t  *completed, *node, *status, *bad;
    gms_member_t   top[] = {
        { "completed", GMS_JSON_BOOLEAN, 1, NULL, 0 },
        { "task", GMS_JSON_OBJECT, 1, NULL, 0 },
        { NULL, GMS_JSON_ANY, 0, NULL, 0 }
    };
    gms_member_t   task[] = {
        { "node", GMS_JSON_STRING, 1, NULL, 0 },
        { "id", GMS_JSON_INTEGER, 1, NULL, 0 },
        { "type", GMS_JSON_STRING, 1, NULL, 0 },
        { "action", GMS_JSON_STRING, 1, NULL, 0 },
        { "description", GMS_JSON_STRING, 0, NULL, 0 },
        { "status", GMS_JSON_OBJECT, 0, NULL, 0 },
        { "start_time_in_millis", GMS_JSON_INTEGER, 1, NULL, 0 },
        { "running_time_in_nanos", GMS_JSON_INTEGER, 1, NULL, 0 },
        { "cancellable", GMS_JSON_BOOLEAN, 1, NULL, 0 },
        { NULL, GMS_JSON_ANY, 0, NULL, 0 }
    };

    if (answer == NULL) {
        /* no output from the subrequest: no arithmetic on NULL */
        answer = "";
        len = 0;
    }

    scan.p = answer;
    scan.end = answer + len;
    scan.depth = 0;

    gms_scan_ws(&scan);

    if (scan.p < scan.end && *scan.p == '{') {
        if (gms_scan_container(&scan, '}', top) != 0) {
            goto not_json;
        }

    } else if (gms_scan_value(&scan) != 0) {
        goto not_json;
    }

    gms_scan_ws(&scan);

    if (scan.p != scan.end) {
        goto not_json;
    }

    where = "";
    bad = gms_member_mismatch(top);

    if (bad != NULL) {
        goto not_task;
    }

    /* the task object was scanned whole above: this cannot fail */
    scan.p = top[1].value;
    scan.end = top[1].value + top[1].len;
    (void) gms_scan_container(&scan, '}', task);

    where = "task.";
    bad = gms_member_mismatch(task);

    if (bad != NULL) {
        goto not_task;
    }

    completed = &top[0];
    node = &task[0];
    status = &task[5];

    /* both checked as integers above */
    (void) gms_member_integer(&task[1], &id);
    (void) gms_member_integer(&task[7], &nanos);

    node_text = gms_member_load(node);

    if (!json_is_string(node_text)
        || json_string_length(node_text) > GMS_ES_NODE_MAX)
    {
        json_decref(node_text);
        snprintf(reason, reason_size, "answer is not a task: \"task.node\" "
                 "longer than %d bytes", GMS_ES_NODE_MAX);
        return NULL;
    }

    size = sizeof("{\"completed\":false,\"taskId\":\"\",\"runTimeNanos\":"
                  ",\"status\":\"\"}")
           + 6 * json_string_length(node_text) + 2 * 21
           + ((status->value != NULL) ? 6 * status->len : 0);

    out = malloc(size);
    if (out == NULL) {
        json_decref(node_text);
        snprintf(reason, reason_size, "%s", "out of memory");
        return NULL;
    }

    p = out;
    p += sprintf(p, "{\"completed\":%s,\"taskId\":\"",
                 (*completed->value == 't') ? "true" : "false");
    p = gms_orgjson_quote(p, json_string_value(node_text),
                          json_string_length(node_text), 0);
    p += sprintf(p, ":%" JSON_INTEGER_FORMAT "\",\"runTimeNanos\":%"
                 JSON_INTEGER_FORMAT, id, nanos);

    if (status->value != NULL) {
        p = (char *) memcpy(p, ",\"status\":\"", 11) + 11;
        p = gms_orgjson_quote(p, status->value, status->len, 1);
        *p++ = '"';
    }

    *p++ = '}';
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

    snprintf(reason, reason_size, "answer is not JSON (at byte %zu)",
             (size_t) (scan.p - answer));

    return NULL;
}


char *
gms_es_task_error_value(const gms_es_task_ref_t *ref)
{
    char  text[GMS_ES_NODE_MAX + 64];

    snprintf(text, sizeof(text), "Could not get task status for %s:%" PRId64,
             ref->node, ref->number);

    return gms_json_dump(json_pack("{s:s}", "error", text));
}


/*
 * getEsTaskStatus's OpenAPI form, GET /openapi/operations/elasticSearch/
 * getTaskStatus?task=<node>:<number>: the query and Accept read, the task
 * checked, and GMS's texts.  The edge answers only what it knows GMS
 * would: anything that GMS's servlet container or Spring would treat in a
 * way of its own (a repeated or absent "task", a broken percent-escape,
 * bytes outside printable ASCII, an Accept that excludes JSON) is left to
 * GMS.
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "gms_es_task.h"
#include "gms_es_openapi.h"


static int
gms_hex(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }

    c |= 0x20;

    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}


/*
 * One name or value of a query, decoded as the servlet container does
 * (%HH and '+' as a space) into out (size bytes); its length, or -1 for
 * a broken escape, a byte outside printable ASCII, or more than size.
 */

static ssize_t
gms_query_decode(const char *s, size_t len, char *out, size_t size)
{
    int     hi, lo;
    char    c;
    size_t  i, n;

    n = 0;

    for (i = 0; i < len; i++) {
        c = s[i];

        if (c == '+') {
            c = ' ';

        } else if (c == '%') {
            if (len - i < 3) {
                return -1;
            }

            hi = gms_hex((unsigned char) s[i + 1]);
            lo = gms_hex((unsigned char) s[i + 2]);

            if (hi < 0 || lo < 0) {
                return -1;
            }

            c = (char) (hi << 4 | lo);
            i += 2;
        }

        if ((unsigned char) c < 0x20 || (unsigned char) c > 0x7e) {
            return -1;
        }

        if (out != NULL) {
            if (n == size) {
                return -1;
            }

            out[n] = c;
        }

        n++;
    }

    return (ssize_t) n;
}


/*
 * The query of a GET: 0 with the one "task" parameter decoded into task
 * (GMS_ES_OPENAPI_TASK_MAX bytes at least), or -1 when the edge leaves
 * the request to GMS: no "task", more than one (Spring would join them
 * with commas), or anything in the query not decoded as above.  A name
 * without '=' has the empty value, as the servlet container has it.
 */

int
gms_es_openapi_query(const char *args, size_t len, char *task,
    size_t *task_len)
{
    char         name[4];
    size_t       found, vlen;
    ssize_t      n, v;
    const char  *p, *last, *amp, *eq, *val;

    found = 0;
    last = args + len;

    for (p = args; p < last; p = amp + 1) {
        amp = memchr(p, '&', last - p);

        if (amp == NULL) {
            amp = last;
        }

        eq = memchr(p, '=', amp - p);

        if (eq == NULL) {
            eq = amp;
            val = amp;

        } else {
            val = eq + 1;
        }

        vlen = amp - val;

        /* a name longer than "task" is not it, but must decode */
        n = gms_query_decode(p, eq - p, NULL, 0);

        if (n < 0) {
            return -1;
        }

        v = gms_query_decode(val, vlen, NULL, 0);

        if (v < 0) {
            return -1;
        }

        if (n != 4) {
            continue;
        }

        (void) gms_query_decode(p, eq - p, name, 4);

        if (memcmp(name, "task", 4) != 0) {
            continue;
        }

        if (++found > 1 || (size_t) v > GMS_ES_OPENAPI_TASK_MAX) {
            return -1;
        }

        *task_len = (size_t) gms_query_decode(val, vlen, task,
                                              GMS_ES_OPENAPI_TASK_MAX);
    }

    return (found == 1) ? 0 : -1;
}


static int
gms_token_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || (c != '\0'
                                          && strchr("!#$%&'*+-.^_`|~", c));
}


/* 0.001 to 1 as Spring reads a quality: else refused or excluded */

static int
gms_accept_quality(const char *v, size_t len)
{
    size_t  i, nonzero;

    if (len == 1) {
        return v[0] == '1';
    }

    if (len < 3 || len > 5 || (v[0] != '0' && v[0] != '1') || v[1] != '.') {
        return 0;
    }

    nonzero = 0;

    for (i = 2; i < len; i++) {
        if (v[i] < '0' || v[i] > '9') {
            return 0;
        }

        nonzero += (v[i] != '0');
    }

    return (v[0] == '0') ? nonzero > 0 : nonzero == 0;
}


/*
 * One Accept header: 1 when one of its media ranges takes the
 * controller's application/json (any type, application with any
 * subtype, or application/json itself, of a quality above 0), 0 when
 * none does (Spring answers 406), -1 when the edge is not sure how
 * Spring reads it (a range or parameter of another shape): GMS answers
 * those.
 */

int
gms_es_openapi_accept(const char *value, size_t len)
{
    int          json, bad_q;
    size_t       i, t, s, tl, sl, a, al, v, vl;
    const char  *p;

    json = 0;
    p = value;
    i = 0;

    while (i < len) {

        while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == ',')) {
            i++;
        }

        if (i == len) {
            break;
        }

        for (t = i; i < len && gms_token_char((unsigned char) p[i]); i++) {
            /* void */
        }

        tl = i - t;

        if (tl == 0 || i == len || p[i] != '/') {
            return -1;
        }

        for (s = ++i; i < len && gms_token_char((unsigned char) p[i]); i++) {
            /* void */
        }

        sl = i - s;

        if (sl == 0) {
            return -1;
        }

        bad_q = 0;

        for ( ;; ) {
            while (i < len && (p[i] == ' ' || p[i] == '\t')) {
                i++;
            }

            if (i == len || p[i] == ',') {
                break;
            }

            if (p[i] != ';') {
                return -1;
            }

            i++;

            while (i < len && (p[i] == ' ' || p[i] == '\t')) {
                i++;
            }

            for (a = i; i < len && gms_token_char((unsigned char) p[i]);
                 i++)
            {
                /* void */
            }

            al = i - a;

            if (al == 0 || i == len || p[i] != '=') {
                return -1;
            }

            for (v = ++i; i < len && gms_token_char((unsigned char) p[i]);
                 i++)
            {
                /* void */
            }

            vl = i - v;

            if (vl == 0) {
                return -1;
            }

            if (al == 1 && (p[a] | 0x20) == 'q') {
                if (!gms_accept_quality(p + v, vl)) {
                    bad_q = 1;
                }
            }
        }

        if (bad_q) {
            return -1;
        }

        if ((tl == 1 && p[t] == '*' && sl == 1 && p[s] == '*')
            || (tl == 11 && strncasecmp(p + t, "application", 11) == 0
                && ((sl == 1 && p[s] == '*')
                    || (sl == 4 && strncasecmp(p + s, "json", 4) == 0))))
        {
            json = 1;
        }
    }

    return json;
}


/*
 * The task as ElasticsearchUtils.isTaskIdValid sees it (the same rule as
 * OperationsResource's): 0 valid, -1 invalid (GMS's 400), 1 valid to GMS
 * but with a node longer than the edge takes (GMS answers it).
 */

int
gms_es_openapi_task(const char *task, size_t len, gms_es_task_ref_t *ref)
{
    size_t  colon;

    if (gms_es_task_string_parse(task, len, ref) == 0) {
        return 0;
    }

    for (colon = 0; colon < len && task[colon] != ':'; colon++) {
        /* void */
    }

    if (colon > GMS_ES_NODE_MAX && colon < len
        && strspn(task, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789-_") == colon)
    {
        return 1;
    }

    return -1;
}


static char *
gms_es_openapi_text(const char *prefix, const char *arg, size_t len,
    const char *suffix)
{
    char    *out;
    size_t   pl, sl;

    pl = strlen(prefix);
    sl = strlen(suffix);

    out = malloc(pl + len + sl + 1);
    if (out == NULL) {
        return NULL;
    }

    memcpy(out, prefix, pl);
    memcpy(out + pl, arg, len);
    memcpy(out + pl + len, suffix, sl + 1);

    return out;
}


/* the controller's texts, each malloc()ed */

char *
gms_es_openapi_bad_task(const char *task, size_t len)
{
    return gms_es_openapi_text("Task ID should be in the form nodeId:taskId "
                               "e.g. aB1cdEf2GHI-JKLMnoPQr3:123456 (got ",
                               task, len, ")");
}


char *
gms_es_openapi_forbidden(const char *actor, size_t len)
{
    return gms_es_openapi_text("", actor, len,
                        " is not authorized to get ElasticSearch task status");
}


char *
gms_es_openapi_not_found(const gms_es_task_ref_t *ref)
{
    char  text[GMS_ES_NODE_MAX + 64];

    snprintf(text, sizeof(text), "Could not get task status for %s:%" PRId64,
             ref->node, ref->number);

    return strdup(text);
}

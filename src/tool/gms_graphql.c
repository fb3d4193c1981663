
/*
 * gms-token's client for GMS: GraphQL, and a GET for its OpenAPI (the
 * Events API's poll).  GraphQL is one POST of {"query", "variables"}
 * to <gms>/api/graphql per query, with the token of an account that may
 * list every access token (Authorization: Bearer), over libcurl: one at
 * a time (gms_graphql_query), or several at once (gms_graphql_many, on
 * libcurl's multi interface, for the users' check).  TLS
 * peers are verified (the system's CAs, or --gms-ca-file); redirects are
 * not followed; an answer is read up to GMS_GRAPHQL_ANSWER_MAX.  Every
 * failure is one line on stderr: the transport's error, the HTTP status,
 * or GraphQL's errors[0].message (gms_graphql_many keeps each query's
 * line for its caller).  The token is never printed.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "gms_graphql.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"


/* a listAccessTokens page of a thousand tokens is some 300 KB */
#define GMS_GRAPHQL_ANSWER_MAX  (64 * 1024 * 1024)


/* one handle's transfer: its answer, up to GMS_GRAPHQL_ANSWER_MAX */
typedef struct {
    CURL                  *curl;
    char                  *answer;
    size_t                 len;
    size_t                 size;
    int                    too_big;
    gms_graphql_ask_t     *ask;            /* gms_graphql_many's, or NULL */
    char                   error[CURL_ERROR_SIZE];
} gms_graphql_xfer_t;


struct gms_graphql_s {
    gms_tool_t            *tool;
    gms_graphql_xfer_t     x;              /* the requests one at a time */
    CURLM                 *multi;          /* gms_graphql_many's, its */
    gms_graphql_xfer_t   **slots;          /* handles kept (and the */
    size_t                 nslots;         /* connections) across calls */
    struct curl_slist     *headers;
    char                  *endpoint;
    size_t                 base_len;       /* GMS's base, in endpoint */
    char                  *url;            /* the last GET's */
    int                    nullable;       /* data.<field> may be null */
    int                    keep_errors;    /* GraphQL's errors returned */
    json_t                *errors;         /* ... here, not printed */
    volatile sig_atomic_t *stop;
    void                 (*observe)(const char *api, double seconds,
                                    int failed);
};


static char *gms_graphql_body(gms_graphql_t *g, const char *query,
    json_t *variables);
static json_t *gms_graphql_data(gms_graphql_t *g, gms_graphql_xfer_t *x,
    CURLcode rc, const char *field, json_t **errors, char *error,
    size_t size);
static void gms_graphql_error(char *error, size_t size, const char *fmt,
    ...);
static const char *gms_graphql_failed(gms_graphql_xfer_t *x, CURLcode rc);
static void gms_graphql_graphql_error(gms_graphql_t *g, json_t *errors,
    char *error, size_t size);
static int gms_graphql_slots(gms_graphql_t *g, size_t n);
static int gms_graphql_start(gms_graphql_t *g, gms_graphql_xfer_t *x,
    gms_graphql_ask_t *ask);
static int gms_graphql_stopped(gms_graphql_t *g);
static void gms_graphql_observe(gms_graphql_t *g, CURL *curl, CURLcode rc,
    const char *api);
static size_t gms_graphql_write(char *data, size_t size, size_t n,
    void *userdata);
static int gms_graphql_progress(void *userdata, curl_off_t dltotal,
    curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);


gms_graphql_t *
gms_graphql_open(gms_tool_t *t, const gms_graphql_conf_t *c)
{
    CURL           *curl;
    char           *token, *auth;
    size_t          len, token_len;
    gms_graphql_t  *g;

    if (strncmp(c->url, "http://", 7) != 0
        && strncmp(c->url, "https://", 8) != 0)
    {
        gms_tool_msgs_error(t, "--gms: '%s' is not an http:// or https:// URL",
                            c->url);
        return NULL;
    }

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        gms_tool_msgs_error(t, "cannot initialise libcurl");
        return NULL;
    }

    g = calloc(1, sizeof(gms_graphql_t));
    if (g == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return NULL;
    }

    g->tool = t;
    g->stop = c->stop;
    g->observe = c->observe;

    len = strlen(c->url);

    while (len > 0 && c->url[len - 1] == '/') {
        len--;
    }

    g->endpoint = malloc(len + sizeof("/api/graphql"));
    g->x.curl = curl_easy_init();

    if (g->endpoint == NULL || g->x.curl == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        gms_graphql_close(g);
        return NULL;
    }

    memcpy(g->endpoint, c->url, len);
    memcpy(g->endpoint + len, "/api/graphql", sizeof("/api/graphql"));
    g->base_len = len;

    g->headers = curl_slist_append(NULL, "Content-Type: application/json");
    g->headers = curl_slist_append(g->headers, "Accept: application/json");

    if (c->token_file) {
        token = gms_tool_input_read_file(t, "--gms-token-file", c->token_file,
                                         &token_len);
        if (token == NULL) {
            gms_graphql_close(g);
            return NULL;
        }

        /* one line of visible characters: nothing else goes in a header */

        for (len = 0; len < token_len; len++) {
            if ((unsigned char) token[len] <= 0x20
                || (unsigned char) token[len] >= 0x7f)
            {
                break;
            }
        }

        if (token_len == 0 || len != token_len) {
            gms_tool_msgs_error(t, "--gms-token-file: %s: %s", c->token_file,
                                token_len ? "the token holds a space or a "
                                            "control character"
                                          : "empty");
            OPENSSL_cleanse(token, token_len);
            free(token);
            gms_graphql_close(g);
            return NULL;
        }

        auth = malloc(sizeof("Authorization: Bearer ") + token_len);

        if (auth != NULL) {
            memcpy(auth, "Authorization: Bearer ", 22);
            memcpy(auth + 22, token, token_len + 1);
            g->headers = curl_slist_append(g->headers, auth);
            OPENSSL_cleanse(auth, 22 + token_len);
            free(auth);
        }

        OPENSSL_cleanse(token, token_len);
        free(token);

        if (auth == NULL) {
            gms_tool_msgs_error(t, "out of memory");
            gms_graphql_close(g);
            return NULL;
        }
    }

    curl = g->x.curl;

    if (g->headers == NULL
        || curl_easy_setopt(curl, CURLOPT_URL, g->endpoint) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_HTTPHEADER, g->headers)
           != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https")
           != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, c->timeout_ms)
           != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK
        || (c->ca_file
            && curl_easy_setopt(curl, CURLOPT_CAINFO, c->ca_file)
               != CURLE_OK)
        || curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, g->x.error)
           != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, gms_graphql_write)
           != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_WRITEDATA, &g->x) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_USERAGENT, "gms-token")
           != CURLE_OK
        || (c->stop
            && (curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION,
                                 gms_graphql_progress) != CURLE_OK
                || curl_easy_setopt(curl, CURLOPT_XFERINFODATA, g)
                   != CURLE_OK
                || curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L)
                   != CURLE_OK)))
    {
        gms_tool_msgs_error(t, "cannot set up libcurl");
        gms_graphql_close(g);
        return NULL;
    }

    return g;
}


/*
 * One field asked n times in one query, as aliases, each with a variable
 * of its own: "query NAME($v0: TYPE, ...) { a0: FIELD(ARG: $v0)SELECTION
 * ... }" (a0 ... for the answer, v0 ... for the variables).  malloc'ed;
 * NULL: out of memory.
 */

char *
gms_graphql_aliases(const char *name, const char *type, const char *field,
    const char *arg, const char *selection, size_t n)
{
    char    *query, *p;
    size_t   i, size;

    size = strlen(name) + 16
           + n * (strlen(type) + strlen(field) + strlen(arg)
                  + strlen(selection) + 3 * 24);

    query = malloc(size);
    if (query == NULL) {
        return NULL;
    }

    p = query + sprintf(query, "query %s(", name);

    for (i = 0; i < n; i++) {
        p += sprintf(p, "%s$v%zu: %s", i ? ", " : "", i, type);
    }

    p += sprintf(p, ") {");

    for (i = 0; i < n; i++) {
        p += sprintf(p, " a%zu: %s(%s: $v%zu)%s", i, field, arg, i,
                     selection);
    }

    sprintf(p, " }");

    return query;
}


/*
 * The query's data.<field> (a new reference), or NULL once the failure is
 * reported.  variables is taken over.  field NULL: data itself, for a
 * field that is not an object (revokeAccessToken is a Boolean!).
 */

json_t *
gms_graphql_query(gms_graphql_t *g, const char *query, json_t *variables,
    const char *field)
{
    char      *body, error[GMS_GRAPHQL_ERROR_LEN];
    json_t    *data;
    CURLcode   rc;

    body = gms_graphql_body(g, query, variables);
    if (body == NULL) {
        return NULL;
    }

    g->x.len = 0;
    g->x.too_big = 0;
    g->x.error[0] = '\0';

    /* a GET before set another URL; POSTFIELDS makes it a POST again */
    if (curl_easy_setopt(g->x.curl, CURLOPT_URL, g->endpoint) != CURLE_OK
        || curl_easy_setopt(g->x.curl, CURLOPT_POSTFIELDS, body) != CURLE_OK)
    {
        free(body);
        gms_tool_msgs_error(g->tool, "cannot set up libcurl");
        return NULL;
    }

    rc = curl_easy_perform(g->x.curl);
    free(body);

    gms_graphql_observe(g, g->x.curl, rc, "graphql");

    data = gms_graphql_data(g, &g->x, rc, field,
                            g->keep_errors ? &g->errors : NULL,
                            error, sizeof(error));

    if (data == NULL && error[0]) {
        gms_tool_msgs_error(g->tool, "%s", error);
    }

    return data;
}


/*
 * n queries, at most parallel of them in flight at once, on libcurl's
 * multi interface: each handle a copy of the one gms_graphql_query uses
 * (the token, CA, time limit, stop flag and 64 MB cap), kept with its
 * connection for the next call.  Each ask's outcome is gms_graphql_query's
 * (data.<field>, or NULL and the error it would report, not reported
 * here); every query and variables taken over.  0; or -1, reported, and
 * no data: out of memory, libcurl failing, the stop flag set.
 */

int
gms_graphql_many(gms_graphql_t *g, gms_graphql_ask_t *asks, size_t n,
    size_t parallel)
{
    int                  running, left;
    size_t               i, k, next, busy;
    CURL                *curl;
    CURLMsg             *msg;
    CURLcode             rc;
    CURLMcode            mc;
    gms_graphql_xfer_t  *x;

    for (i = 0; i < n; i++) {
        asks[i].data = NULL;
        asks[i].error[0] = '\0';
    }

    parallel = parallel == 0 ? 1 : parallel < n ? parallel : n;
    mc = CURLM_OK;

    if (n && gms_graphql_slots(g, parallel) != 0) {
        gms_tool_msgs_error(g->tool, "out of memory");
        goto failed;
    }

    next = 0;
    busy = 0;

    for ( ;; ) {
        for (i = 0; i < parallel && next < n && !gms_graphql_stopped(g);
             i++)
        {
            x = g->slots[i];

            if (x->ask != NULL) {
                continue;
            }

            if (gms_graphql_start(g, x, &asks[next]) != 0) {
                goto failed;
            }

            next++;
            busy++;
        }

        if (busy == 0) {
            break;
        }

        mc = curl_multi_perform(g->multi, &running);
        if (mc != CURLM_OK) {
            break;
        }

        while ((msg = curl_multi_info_read(g->multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE) {
                continue;
            }

            /* msg is no more once its handle is removed */
            curl = msg->easy_handle;
            rc = msg->data.result;

            for (k = 0; g->slots[k]->curl != curl; k++) {
                /* void */
            }

            x = g->slots[k];
            curl_multi_remove_handle(g->multi, curl);

            gms_graphql_observe(g, curl, rc, "graphql");

            x->ask->data = gms_graphql_data(g, x, rc, x->ask->field, NULL,
                                            x->ask->error,
                                            sizeof(x->ask->error));
            x->ask = NULL;
            busy--;
        }

        if (busy == 0) {
            continue;
        }

        mc = curl_multi_poll(g->multi, NULL, 0, 1000, NULL);
        if (mc != CURLM_OK) {
            break;
        }
    }

    if (mc != CURLM_OK) {
        gms_tool_msgs_error(g->tool, "%s: %s", g->endpoint,
                            curl_multi_strerror(mc));
        goto failed;
    }

    if (gms_graphql_stopped(g)) {
        gms_tool_msgs_error(g->tool, "%s: stopped", g->endpoint);
        goto failed;
    }

    return 0;

failed:

    for (i = 0; i < g->nslots; i++) {
        x = g->slots[i];

        if (x->ask != NULL) {
            curl_multi_remove_handle(g->multi, x->curl);
            x->ask = NULL;
        }
    }

    for (i = 0; i < n; i++) {
        free(asks[i].query);
        asks[i].query = NULL;
        json_decref(asks[i].variables);
        asks[i].variables = NULL;
        json_decref(asks[i].data);
        asks[i].data = NULL;
    }

    return -1;
}


/*
 * A GET of <gms><path> (path and query, encoded by the caller) on the
 * same handle: the token, CA, time limit, stop flag and 64 MB cap of the
 * GraphQL requests.  GMS_GRAPHQL_ANSWERED: *status and *body (the
 * answer, NUL-terminated, good until the next request), whatever the
 * status; GMS_GRAPHQL_TOO_BIG and GMS_GRAPHQL_FAILED: reported.  For
 * GMS's OpenAPI, as the Events API's poll (gms_follow_stream.c).
 */

int
gms_graphql_get(gms_graphql_t *g, const char *path, long *status,
    const char **body, size_t *len)
{
    char      *url;
    size_t     path_len;
    CURLcode   rc;

    path_len = strlen(path);

    url = malloc(g->base_len + path_len + 1);
    if (url == NULL) {
        gms_tool_msgs_error(g->tool, "out of memory");
        return GMS_GRAPHQL_FAILED;
    }

    memcpy(url, g->endpoint, g->base_len);
    memcpy(url + g->base_len, path, path_len + 1);

    free(g->url);
    g->url = url;

    g->x.len = 0;
    g->x.too_big = 0;
    g->x.error[0] = '\0';

    if (curl_easy_setopt(g->x.curl, CURLOPT_URL, url) != CURLE_OK
        || curl_easy_setopt(g->x.curl, CURLOPT_HTTPGET, 1L) != CURLE_OK)
    {
        gms_tool_msgs_error(g->tool, "cannot set up libcurl");
        return GMS_GRAPHQL_FAILED;
    }

    rc = curl_easy_perform(g->x.curl);

    gms_graphql_observe(g, g->x.curl, rc, "openapi");

    /* the path only: the query may hold an offset, of no use in a line */
    url[g->base_len + strcspn(path, "?")] = '\0';

    if (rc != CURLE_OK) {
        gms_tool_msgs_error(g->tool, "%s: %s", url,
                            gms_graphql_failed(&g->x, rc));
        return g->x.too_big ? GMS_GRAPHQL_TOO_BIG : GMS_GRAPHQL_FAILED;
    }

    if (gms_graphql_write((char *) "", 1, 1, &g->x) != 1) {
        gms_tool_msgs_error(g->tool, "%s: out of memory", url);
        return GMS_GRAPHQL_FAILED;
    }

    *status = 0;
    curl_easy_getinfo(g->x.curl, CURLINFO_RESPONSE_CODE, status);

    *body = g->x.answer;
    *len = g->x.len - 1;

    return GMS_GRAPHQL_ANSWERED;
}


/* the last GET's URL, its path only: for a caller's messages */

const char *
gms_graphql_get_url(gms_graphql_t *g)
{
    return g->url ? g->url : g->endpoint;
}


/* as gms_graphql_query, but data.<field> may be null (json_null()) */

json_t *
gms_graphql_query_nullable(gms_graphql_t *g, const char *query,
    json_t *variables, const char *field)
{
    json_t  *data;

    g->nullable = 1;
    data = gms_graphql_query(g, query, variables, field);
    g->nullable = 0;

    return data;
}


/*
 * as gms_graphql_query, but GraphQL's own errors (with HTTP 200) are not
 * reported: NULL and *errors their array (a new reference) for the
 * caller to read; any other failure is reported, *errors NULL
 */

json_t *
gms_graphql_query_errors(gms_graphql_t *g, const char *query,
    json_t *variables, const char *field, json_t **errors)
{
    json_t  *data;

    g->keep_errors = 1;
    g->errors = NULL;

    data = gms_graphql_query(g, query, variables, field);

    *errors = g->errors;
    g->errors = NULL;
    g->keep_errors = 0;

    return data;
}


/* GraphQL's errors, kept by gms_graphql_query_errors, reported as usual */

void
gms_graphql_report(gms_graphql_t *g, json_t *errors)
{
    char  error[GMS_GRAPHQL_ERROR_LEN];

    gms_graphql_graphql_error(g, errors, error, sizeof(error));
    gms_tool_msgs_error(g->tool, "%s", error);
}


void
gms_graphql_close(gms_graphql_t *g)
{
    size_t  i;

    if (g == NULL) {
        return;
    }

    /* the handles were removed from it: its connections go first */
    if (g->multi) {
        curl_multi_cleanup(g->multi);
    }

    for (i = 0; i < g->nslots; i++) {
        curl_easy_cleanup(g->slots[i]->curl);
        free(g->slots[i]->answer);
        free(g->slots[i]);
    }

    if (g->x.curl) {
        curl_easy_cleanup(g->x.curl);
    }

    curl_slist_free_all(g->headers);
    free(g->slots);
    free(g->endpoint);
    free(g->url);
    free(g->x.answer);
    free(g);
}


/* {"query", "variables"}, variables taken over; NULL: reported */

static char *
gms_graphql_body(gms_graphql_t *g, const char *query, json_t *variables)
{
    char    *body;
    json_t  *req;

    req = json_pack("{s:s, s:o}", "query", query, "variables", variables);
    body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);

    if (body == NULL) {
        gms_tool_msgs_error(g->tool, "out of memory");
    }

    return body;
}


/*
 * A POST's outcome, whichever way it was sent: data.<field> (a new
 * reference), or NULL and why in error.  errors not NULL: GraphQL's own
 * errors returned there instead (error empty).
 */

static json_t *
gms_graphql_data(gms_graphql_t *g, gms_graphql_xfer_t *x, CURLcode rc,
    const char *field, json_t **errors, char *error, size_t size)
{
    long           status;
    json_t        *doc, *list, *data;
    const char    *message;
    json_error_t   err;

    error[0] = '\0';

    if (rc != CURLE_OK) {
        gms_graphql_error(error, size, "%s: %s", g->endpoint,
                          gms_graphql_failed(x, rc));
        return NULL;
    }

    status = 0;
    curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);

    doc = json_loadb(x->answer ? x->answer : "", x->len, 0, &err);

    list = json_object_get(doc, "errors");
    message = json_string_value(json_object_get(json_array_get(list, 0),
                                                "message"));

    if (status != 200) {
        gms_graphql_error(error, size, "%s: HTTP %ld%s%s", g->endpoint,
                          status, message ? ": " : "",
                          message ? message : "");
        json_decref(doc);
        return NULL;
    }

    if (!json_is_object(doc)) {
        gms_graphql_error(error, size,
                          "%s: the answer is not a JSON object%s%s",
                          g->endpoint, doc ? "" : ": ", doc ? "" : err.text);
        json_decref(doc);
        return NULL;
    }

    if (list != NULL && !(json_is_array(list) && json_array_size(list) == 0))
    {
        if (errors != NULL && json_is_array(list)) {
            *errors = json_incref(list);

        } else {
            gms_graphql_graphql_error(g, list, error, size);
        }

        json_decref(doc);
        return NULL;
    }

    data = json_object_get(doc, "data");

    if (field) {
        data = json_object_get(data, field);
    }

    if (!json_is_object(data) && !(g->nullable && json_is_null(data))) {
        gms_graphql_error(error, size,
                          "%s: the answer has no data%s%s object",
                          g->endpoint, field ? "." : "", field ? field : "");
        json_decref(doc);
        return NULL;
    }

    json_incref(data);
    json_decref(doc);

    return data;
}


/* an ask's error, cut as gms_tool_msgs_error cuts t->error */

static void
gms_graphql_error(char *error, size_t size, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(error, size, fmt, args);
    va_end(args);
}


/* why a transfer failed (rc not CURLE_OK) */

static const char *
gms_graphql_failed(gms_graphql_xfer_t *x, CURLcode rc)
{
    return x->too_big ? "answer larger than 64 MB"
           : rc == CURLE_ABORTED_BY_CALLBACK ? "stopped"
           : x->error[0] ? x->error : curl_easy_strerror(rc);
}


static void
gms_graphql_graphql_error(gms_graphql_t *g, json_t *errors, char *error,
    size_t size)
{
    const char  *message;

    message = json_string_value(json_object_get(json_array_get(errors, 0),
                                                "message"));

    gms_graphql_error(error, size, "%s: GraphQL error: %s", g->endpoint,
                      message ? message : "(no message)");
}


/* gms_graphql_many's handles: at least n, copies of the first one */

static int
gms_graphql_slots(gms_graphql_t *g, size_t n)
{
    gms_graphql_xfer_t   *x, **slots;

    if (g->multi == NULL) {
        g->multi = curl_multi_init();
        if (g->multi == NULL) {
            return -1;
        }
    }

    if (n <= g->nslots) {
        return 0;
    }

    slots = realloc(g->slots, n * sizeof(gms_graphql_xfer_t *));
    if (slots == NULL) {
        return -1;
    }

    g->slots = slots;

    while (g->nslots < n) {
        x = calloc(1, sizeof(gms_graphql_xfer_t));
        if (x == NULL) {
            return -1;
        }

        /* the copy shares the first's error buffer and answer: its own */
        x->curl = curl_easy_duphandle(g->x.curl);

        if (x->curl == NULL
            || curl_easy_setopt(x->curl, CURLOPT_URL, g->endpoint)
               != CURLE_OK
            || curl_easy_setopt(x->curl, CURLOPT_ERRORBUFFER, x->error)
               != CURLE_OK
            || curl_easy_setopt(x->curl, CURLOPT_WRITEDATA, x) != CURLE_OK)
        {
            if (x->curl) {
                curl_easy_cleanup(x->curl);
            }

            free(x);
            return -1;
        }

        g->slots[g->nslots++] = x;
    }

    return 0;
}


/* an ask sent on a free handle; -1: reported */

static int
gms_graphql_start(gms_graphql_t *g, gms_graphql_xfer_t *x,
    gms_graphql_ask_t *ask)
{
    char       *body;
    CURLcode    rc;
    CURLMcode   mc;

    body = gms_graphql_body(g, ask->query, ask->variables);

    free(ask->query);
    ask->query = NULL;
    ask->variables = NULL;

    if (body == NULL) {
        return -1;
    }

    x->len = 0;
    x->too_big = 0;
    x->error[0] = '\0';

    rc = curl_easy_setopt(x->curl, CURLOPT_COPYPOSTFIELDS, body);
    free(body);

    if (rc != CURLE_OK) {
        gms_tool_msgs_error(g->tool, "cannot set up libcurl");
        return -1;
    }

    mc = curl_multi_add_handle(g->multi, x->curl);
    if (mc != CURLM_OK) {
        gms_tool_msgs_error(g->tool, "%s: %s", g->endpoint,
                            curl_multi_strerror(mc));
        return -1;
    }

    x->ask = ask;

    return 0;
}


static int
gms_graphql_stopped(gms_graphql_t *g)
{
    /* set by a signal handler or, in follow, by the other thread */
    return g->stop != NULL && __atomic_load_n(g->stop, __ATOMIC_RELAXED);
}


/*
 * A transfer's time, for the caller's metrics (follow's): failed, when it
 * got no answer or one from 400 up; one abandoned (the stop flag) is no
 * request of GMS's to time
 */

static void
gms_graphql_observe(gms_graphql_t *g, CURL *curl, CURLcode rc,
    const char *api)
{
    long        status;
    curl_off_t  us;

    if (g->observe == NULL || rc == CURLE_ABORTED_BY_CALLBACK) {
        return;
    }

    us = 0;
    status = 0;

    curl_easy_getinfo(curl, CURLINFO_TOTAL_TIME_T, &us);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);

    g->observe(api, (double) us / 1e6, rc != CURLE_OK || status >= 400);
}


static size_t
gms_graphql_write(char *data, size_t size, size_t n, void *userdata)
{
    gms_graphql_xfer_t *x = userdata;

    char    *p;
    size_t   len, want;

    len = size * n;

    if (len > GMS_GRAPHQL_ANSWER_MAX - x->len) {
        x->too_big = 1;
        return 0;
    }

    if (x->len + len > x->size) {
        want = x->size ? x->size : 65536;

        while (want < x->len + len) {
            want *= 2;
        }

        p = realloc(x->answer, want);
        if (p == NULL) {
            return 0;
        }

        x->answer = p;
        x->size = want;
    }

    memcpy(x->answer + x->len, data, len);
    x->len += len;

    return len;
}


/*
 * follow's SIGTERM: a request under way is abandoned (curl calls this at
 * least once a second, and as data comes).
 */

static int
gms_graphql_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
    curl_off_t ultotal, curl_off_t ulnow)
{
    gms_graphql_t *g = userdata;

    (void) dltotal;
    (void) dlnow;
    (void) ultotal;
    (void) ulnow;

    return gms_graphql_stopped(g);
}

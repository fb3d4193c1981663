
/*
 * gms-token's client for GMS: GraphQL, and a GET for its OpenAPI (the
 * Events API's poll).  GraphQL is one POST of {"query", "variables"}
 * to <gms>/api/graphql per call, with the token of an account that may
 * list every access token (Authorization: Bearer), over libcurl.  TLS
 * peers are verified (the system's CAs, or --gms-ca-file); redirects are
 * not followed; an answer is read up to GMS_GRAPHQL_ANSWER_MAX.  Every
 * failure is one line on stderr: the transport's error, the HTTP status,
 * or GraphQL's errors[0].message.  The token is never printed.
 */


#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "gms_graphql.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"


/* a listAccessTokens page of a thousand tokens is some 300 KB */
#define GMS_GRAPHQL_ANSWER_MAX  (64 * 1024 * 1024)


struct gms_graphql_s {
    gms_tool_t            *tool;
    CURL                  *curl;
    struct curl_slist     *headers;
    char                  *endpoint;
    size_t                 base_len;       /* GMS's base, in endpoint */
    char                  *url;            /* the last GET's */
    char                  *answer;
    size_t                 len;
    size_t                 size;
    int                    too_big;
    int                    nullable;       /* data.<field> may be null */
    int                    keep_errors;    /* GraphQL's errors returned */
    json_t                *errors;         /* ... here, not printed */
    volatile sig_atomic_t *stop;
    char                   error[CURL_ERROR_SIZE];
};


static size_t gms_graphql_write(char *data, size_t size, size_t n,
    void *userdata);
static int gms_graphql_progress(void *userdata, curl_off_t dltotal,
    curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);


gms_graphql_t *
gms_graphql_open(gms_tool_t *t, const gms_graphql_conf_t *c)
{
    char           *token, *auth;
    size_t          len, token_len;
    gms_graphql_t  *g;

    if (strncmp(c->url, "http://", 7) != 0
        && strncmp(c->url, "https://", 8) != 0)
    {
        gms_tool_error(t, "--gms: '%s' is not an http:// or https:// URL",
                       c->url);
        return NULL;
    }

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        gms_tool_error(t, "cannot initialise libcurl");
        return NULL;
    }

    g = calloc(1, sizeof(gms_graphql_t));
    if (g == NULL) {
        gms_tool_error(t, "out of memory");
        return NULL;
    }

    g->tool = t;
    g->stop = c->stop;

    len = strlen(c->url);

    while (len > 0 && c->url[len - 1] == '/') {
        len--;
    }

    g->endpoint = malloc(len + sizeof("/api/graphql"));
    g->curl = curl_easy_init();

    if (g->endpoint == NULL || g->curl == NULL) {
        gms_tool_error(t, "out of memory");
        gms_graphql_close(g);
        return NULL;
    }

    memcpy(g->endpoint, c->url, len);
    memcpy(g->endpoint + len, "/api/graphql", sizeof("/api/graphql"));
    g->base_len = len;

    g->headers = curl_slist_append(NULL, "Content-Type: application/json");
    g->headers = curl_slist_append(g->headers, "Accept: application/json");

    if (c->token_file) {
        token = gms_tool_read_file(t, "--gms-token-file", c->token_file,
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
            gms_tool_error(t, "--gms-token-file: %s: %s", c->token_file,
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
            gms_tool_error(t, "out of memory");
            gms_graphql_close(g);
            return NULL;
        }
    }

    if (g->headers == NULL
        || curl_easy_setopt(g->curl, CURLOPT_URL, g->endpoint) != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_HTTPHEADER, g->headers)
           != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_PROTOCOLS_STR, "http,https")
           != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_NOSIGNAL, 1L) != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_TIMEOUT_MS, c->timeout_ms)
           != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK
        || (c->ca_file
            && curl_easy_setopt(g->curl, CURLOPT_CAINFO, c->ca_file)
               != CURLE_OK)
        || curl_easy_setopt(g->curl, CURLOPT_ERRORBUFFER, g->error)
           != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_WRITEFUNCTION, gms_graphql_write)
           != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_WRITEDATA, g) != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_USERAGENT, "gms-token")
           != CURLE_OK
        || (c->stop
            && (curl_easy_setopt(g->curl, CURLOPT_XFERINFOFUNCTION,
                                 gms_graphql_progress) != CURLE_OK
                || curl_easy_setopt(g->curl, CURLOPT_XFERINFODATA, g)
                   != CURLE_OK
                || curl_easy_setopt(g->curl, CURLOPT_NOPROGRESS, 0L)
                   != CURLE_OK)))
    {
        gms_tool_error(t, "cannot set up libcurl");
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
    long           status;
    char          *body;
    json_t        *req, *doc, *errors, *data, *v;
    CURLcode       rc;
    const char    *message;
    json_error_t   err;

    req = json_pack("{s:s, s:o}", "query", query, "variables", variables);
    body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);

    if (body == NULL) {
        gms_tool_error(g->tool, "out of memory");
        return NULL;
    }

    g->len = 0;
    g->too_big = 0;
    g->error[0] = '\0';

    /* a GET before set another URL; POSTFIELDS makes it a POST again */
    if (curl_easy_setopt(g->curl, CURLOPT_URL, g->endpoint) != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_POSTFIELDS, body) != CURLE_OK)
    {
        free(body);
        gms_tool_error(g->tool, "cannot set up libcurl");
        return NULL;
    }

    rc = curl_easy_perform(g->curl);
    free(body);

    if (rc != CURLE_OK) {
        gms_tool_error(g->tool, "%s: %s", g->endpoint,
                       g->too_big ? "answer larger than 64 MB"
                       : rc == CURLE_ABORTED_BY_CALLBACK ? "stopped"
                       : g->error[0] ? g->error : curl_easy_strerror(rc));
        return NULL;
    }

    status = 0;
    curl_easy_getinfo(g->curl, CURLINFO_RESPONSE_CODE, &status);

    doc = json_loadb(g->answer ? g->answer : "", g->len, 0, &err);

    errors = json_object_get(doc, "errors");
    v = json_array_get(errors, 0);
    message = json_string_value(json_object_get(v, "message"));

    if (status != 200) {
        gms_tool_error(g->tool, "%s: HTTP %ld%s%s", g->endpoint, status,
                       message ? ": " : "", message ? message : "");
        json_decref(doc);
        return NULL;
    }

    if (!json_is_object(doc)) {
        gms_tool_error(g->tool, "%s: the answer is not a JSON object%s%s",
                       g->endpoint, doc ? "" : ": ", doc ? "" : err.text);
        json_decref(doc);
        return NULL;
    }

    if (errors != NULL && !(json_is_array(errors)
                            && json_array_size(errors) == 0))
    {
        if (g->keep_errors && json_is_array(errors)) {
            g->errors = json_incref(errors);
            json_decref(doc);
            return NULL;
        }

        gms_graphql_report(g, errors);
        json_decref(doc);
        return NULL;
    }

    data = json_object_get(doc, "data");

    if (field) {
        data = json_object_get(data, field);
    }

    if (!json_is_object(data) && !(g->nullable && json_is_null(data))) {
        gms_tool_error(g->tool, "%s: the answer has no data%s%s object",
                       g->endpoint, field ? "." : "", field ? field : "");
        json_decref(doc);
        return NULL;
    }

    json_incref(data);
    json_decref(doc);

    return data;
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
        gms_tool_error(g->tool, "out of memory");
        return GMS_GRAPHQL_FAILED;
    }

    memcpy(url, g->endpoint, g->base_len);
    memcpy(url + g->base_len, path, path_len + 1);

    free(g->url);
    g->url = url;

    g->len = 0;
    g->too_big = 0;
    g->error[0] = '\0';

    if (curl_easy_setopt(g->curl, CURLOPT_URL, url) != CURLE_OK
        || curl_easy_setopt(g->curl, CURLOPT_HTTPGET, 1L) != CURLE_OK)
    {
        gms_tool_error(g->tool, "cannot set up libcurl");
        return GMS_GRAPHQL_FAILED;
    }

    rc = curl_easy_perform(g->curl);

    /* the path only: the query may hold an offset, of no use in a line */
    url[g->base_len + strcspn(path, "?")] = '\0';

    if (rc != CURLE_OK) {
        gms_tool_error(g->tool, "%s: %s", url,
                       g->too_big ? "answer larger than 64 MB"
                       : rc == CURLE_ABORTED_BY_CALLBACK ? "stopped"
                       : g->error[0] ? g->error : curl_easy_strerror(rc));
        return g->too_big ? GMS_GRAPHQL_TOO_BIG : GMS_GRAPHQL_FAILED;
    }

    if (gms_graphql_write((char *) "", 1, 1, g) != 1) {
        gms_tool_error(g->tool, "%s: out of memory", url);
        return GMS_GRAPHQL_FAILED;
    }

    *status = 0;
    curl_easy_getinfo(g->curl, CURLINFO_RESPONSE_CODE, status);

    *body = g->answer;
    *len = g->len - 1;

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
    const char  *message;

    message = json_string_value(json_object_get(json_array_get(errors, 0),
                                                "message"));

    gms_tool_error(g->tool, "%s: GraphQL error: %s", g->endpoint,
                   message ? message : "(no message)");
}


void
gms_graphql_close(gms_graphql_t *g)
{
    if (g == NULL) {
        return;
    }

    if (g->curl) {
        curl_easy_cleanup(g->curl);
    }

    curl_slist_free_all(g->headers);
    free(g->endpoint);
    free(g->url);
    free(g->answer);
    free(g);
}


static size_t
gms_graphql_write(char *data, size_t size, size_t n, void *userdata)
{
    gms_graphql_t *g = userdata;

    char    *p;
    size_t   len, want;

    len = size * n;

    if (len > GMS_GRAPHQL_ANSWER_MAX - g->len) {
        g->too_big = 1;
        return 0;
    }

    if (g->len + len > g->size) {
        want = g->size ? g->size : 65536;

        while (want < g->len + len) {
            want *= 2;
        }

        p = realloc(g->answer, want);
        if (p == NULL) {
            return 0;
        }

        g->answer = p;
        g->size = want;
    }

    memcpy(g->answer + g->len, data, len);
    g->len += len;

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

    /* set by a signal handler or, in follow, by the other thread */
    return __atomic_load_n(g->stop, __ATOMIC_RELAXED) != 0;
}

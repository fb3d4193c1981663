
/*
 * DataHub's list of access tokens, as sync takes it: listAccessTokens
 * pages, one a line on stdin or asked of GMS itself (--gms), read whole
 * and checked before anything is written: every token has an id, a user
 * and an expiry the module can take, an id listed twice is listed alike,
 * a page that fails fails the list, and so does a GMS whose pages never
 * end (a page with nothing new, more pages than its first total allows).
 * Sorted by id, each id once, for gms_sync_tokens.c to write.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_sync_list.h"
#include "gms_tool_msgs.h"
#include "gms_tool_progress.h"


/* DataHub's ListAccessTokensResolver (auth.graphql) */
#define GMS_SYNC_QUERY                                                       \
    "query listAccessTokens($input: ListAccessTokenInput!) {\n"              \
    "  listAccessTokens(input: $input) {\n"                                  \
    "    start\n    count\n    total\n"                                      \
    "    tokens {\n      urn\n      id\n      actorUrn\n      ownerUrn\n"    \
    "      name\n      createdAt\n      expiresAt\n    }\n  }\n}"


/*
 * Elasticsearch's index.max_result_window: no page reaches past it; a
 * span of createdAt (ms since the epoch, both ends in it) holds no more
 */
#define GMS_SYNC_WINDOW        10000
#define GMS_SYNC_SPANS         128
#define GMS_SYNC_IDLE          256

typedef struct {
    int64_t                lo;
    int64_t                hi;
} gms_sync_span_t;


/* the ids listed so far, for the page that brings nothing new */
typedef struct {
    size_t                *slots;          /* index + 1 in tokens[], 0: free */
    size_t                 size;           /* a power of two */
    size_t                 n;
} gms_sync_seen_t;


static int gms_sync_list_pages(gms_tool_t *t, gms_graphql_t *g,
    const gms_graphql_conf_t *gms, long page_size, json_t *filters,
    gms_sync_list_t *in, gms_sync_seen_t *seen, unsigned *page, int *over);
static json_t *gms_sync_list_between(int64_t lo, int64_t hi);
static int gms_sync_list_ask(gms_tool_t *t, gms_graphql_t *g, json_t *vars,
    unsigned page, gms_sync_list_t *in);
static int gms_sync_seen_add(gms_tool_t *t, gms_sync_seen_t *seen,
    gms_sync_list_t *in, size_t from, size_t *fresh);
static int gms_sync_seen_grow(gms_sync_seen_t *seen, gms_sync_list_t *in);
static size_t gms_sync_seen_hash(const char *id);
static char *gms_sync_list_read_all(gms_tool_t *t, size_t *len);
static int gms_sync_list_parse(gms_tool_t *t, const char *buf, size_t len,
    gms_sync_list_t *in);
static int gms_sync_list_page(gms_tool_t *t, json_t *doc, unsigned line,
    gms_sync_list_t *in);
static int gms_sync_list_token(gms_tool_t *t, json_t *v, unsigned line,
    size_t index, gms_sync_list_t *in);
static unsigned gms_sync_list_error_line(const char *buf, size_t len,
    size_t off, unsigned line, json_error_t *err);
static const char *gms_sync_list_shown(json_t *v);
static int gms_sync_list_cmp(const void *one, const void *two);
static int gms_sync_list_id_cmp(const void *key, const void *elt);


int
gms_sync_list_stdin(gms_tool_t *t, gms_sync_list_t *in)
{
    int     rc;
    char   *buf;
    size_t  len;

    buf = gms_sync_list_read_all(t, &len);
    if (buf == NULL) {
        return GMS_TOOL_USAGE;
    }

    rc = gms_sync_list_parse(t, buf, len, in);
    free(buf);

    return rc;
}


/*
 * Every page of listAccessTokens, asked of GMS: until the tokens number
 * the total it gives, or a page comes back empty.  A failed page fails
 * the whole sync before anything is written.  So does a GMS that would
 * page forever: one (or a proxy in front of it) that ignores start and
 * answers the first page again and again under a total of 10^9 once made
 * sync ask 12,504 pages and grow to 187 MB.  A page on which every token
 * was listed already ends it, and so does a page past what the first
 * page's total and size allow (and two more: tokens made meanwhile).
 *
 * listAccessTokens pages by offset through the search index, and
 * Elasticsearch (OpenSearch alike) refuses a page reaching past its
 * index.max_result_window, 10,000 unless an operator changed it: DataHub
 * does not (docs/api/graphql/getting-started.md).  Past 10,000 tokens
 * the listing is asked by spans of createdAt instead (a FacetFilterInput
 * with GREATER_THAN_OR_EQUAL_TO and LESS_THAN_OR_EQUAL_TO: a range query
 * on the long field, ResolverUtils.criterionFromFilter and ESUtils since
 * 0.13), a span halved until it holds no more than the window.
 */

int
gms_sync_list_fetch(gms_tool_t *t, const gms_graphql_conf_t *gms,
    long page_size, gms_sync_list_t *in)
{
    int              rc, over;
    json_t          *filters;
    size_t           nspans, before;
    int64_t          mid;
    unsigned         page, idle;
    gms_graphql_t   *g;
    gms_sync_seen_t  seen;
    gms_sync_span_t  spans[GMS_SYNC_SPANS], span;

    g = gms_graphql_open(t, gms);
    if (g == NULL) {
        return GMS_TOOL_GMS;
    }

    memset(&seen, 0, sizeof(gms_sync_seen_t));

    page = 0;

    rc = gms_sync_list_pages(t, g, gms, page_size, NULL, in, &seen, &page,
                            &over);

    /* the spans still to list, the earliest on top */
    spans[0].lo = 0;
    spans[0].hi = GMS_SYNC_TIME_MAX;
    nspans = over ? 1 : 0;
    idle = 0;

    /* done once the tokens seen number the total the listing first gave */
    while (rc == GMS_TOOL_OK && nspans > 0 && (int64_t) seen.n < in->total) {
        span = spans[--nspans];
        before = seen.n;

        filters = gms_sync_list_between(span.lo, span.hi);

        if (filters == NULL) {
            gms_tool_msgs_error(t, "out of memory");
            rc = GMS_TOOL_GMS;
            break;
        }

        rc = gms_sync_list_pages(t, g, gms, page_size, filters, in, &seen,
                                &page, &over);

        json_decref(filters);

        if (rc != GMS_TOOL_OK) {
            break;
        }

        /*
         * A descent to a span small enough passes spans that bring
         * nothing new (empty, or holding only tokens listed already): a
         * few per halving, and there are no more than 54 of them.  More
         * in a row: GMS (or a proxy) ignores the filter.
         */
        idle = seen.n > before ? 0 : idle + 1;

        if (idle > GMS_SYNC_IDLE) {
            gms_tool_msgs_error(t, "%s: %u spans of createdAt in a row list "
                                "nothing new (GMS, or a proxy in front of it, "
                                "ignores the filter): the listing is refused",
                                gms->url, idle);
            rc = GMS_TOOL_GMS;
            break;
        }

        if (!over) {
            continue;
        }

        if (span.lo == span.hi || nspans + 2 > GMS_SYNC_SPANS) {
            gms_tool_msgs_error(t, "%s: more than %d tokens were created at "
                                "%lld ms: they cannot be listed page by page "
                                "(the search index's max_result_window)",
                                gms->url, GMS_SYNC_WINDOW, (long long) span.lo);
            rc = GMS_TOOL_GMS;
            break;
        }

        mid = span.lo + (span.hi - span.lo) / 2;

        spans[nspans].lo = mid + 1;
        spans[nspans].hi = span.hi;
        spans[nspans + 1].lo = span.lo;
        spans[nspans + 1].hi = mid;
        nspans += 2;
    }

    free(seen.slots);
    gms_graphql_close(g);

    return rc;
}


/*
 * The tokens created from lo to hi (ms, both in), added to "in", for
 * follow's cycles by spans (gms_sync_spans.c); *over as below.
 */

int
gms_sync_list_range(gms_tool_t *t, gms_graphql_t *g,
    const gms_graphql_conf_t *gms, long page_size, int64_t lo, int64_t hi,
    gms_sync_list_t *in, int *over)
{
    int              rc;
    json_t          *filters;
    unsigned         page;
    gms_sync_seen_t  seen;

    memset(&seen, 0, sizeof(gms_sync_seen_t));

    page = (unsigned) in->pages;

    filters = gms_sync_list_between(lo, hi);
    if (filters == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_GMS;
    }

    rc = gms_sync_list_pages(t, g, gms, page_size, filters, in, &seen, &page,
                            over);

    json_decref(filters);
    free(seen.slots);

    return rc;
}


/*
 * The tokens of the users named (actorUrn EQUAL any of them: DataHub-
 * AccessTokenInfo.pdl has actorUrn @Searchable as a URN, and a filter's
 * values are alternatives, ESUtils' terms query), added to "in", for
 * follow's users read again (gms_sync_users.c): a user active again has
 * them back at once.  A listing of them past the search window fails.
 */

int
gms_sync_list_actors(gms_tool_t *t, gms_graphql_t *g,
    const gms_graphql_conf_t *gms, long page_size,
    const char *const *urns, size_t n, gms_sync_list_t *in)
{
    int              rc, over;
    size_t           i;
    json_t          *filters, *values;
    unsigned         page;
    gms_sync_seen_t  seen;

    memset(&seen, 0, sizeof(gms_sync_seen_t));

    values = json_array();

    for (i = 0; values != NULL && i < n; i++) {
        if (json_array_append_new(values, json_string(urns[i])) != 0) {
            json_decref(values);
            values = NULL;
        }
    }

    filters = values ? json_pack("[{s:s, s:o, s:s}]", "field", "actorUrn",
                                 "values", values, "condition", "EQUAL")
                     : NULL;

    if (filters == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_GMS;
    }

    page = (unsigned) in->pages;

    rc = gms_sync_list_pages(t, g, gms, page_size, filters, in, &seen, &page,
                            &over);

    if (rc == GMS_TOOL_OK && over) {
        gms_tool_msgs_error(t, "%s: the tokens of %zu users number more than "
                            "a search may page through (%d)", gms->url, n,
                            GMS_SYNC_WINDOW);
        rc = GMS_TOOL_GMS;
    }

    json_decref(filters);
    free(seen.slots);

    return rc;
}


/* a span of createdAt (ms, both in) as listAccessTokens' filters */

static json_t *
gms_sync_list_between(int64_t lo, int64_t hi)
{
    char  from[24], to[24];

    snprintf(from, sizeof(from), "%lld", (long long) lo);
    snprintf(to, sizeof(to), "%lld", (long long) hi);

    return json_pack("[{s:s, s:[s], s:s}, {s:s, s:[s], s:s}]",
                     "field", "createdAt", "values", from,
                     "condition", "GREATER_THAN_OR_EQUAL_TO",
                     "field", "createdAt", "values", to,
                     "condition", "LESS_THAN_OR_EQUAL_TO");
}


/*
 * The pages of the tokens the filters select (a span of createdAt, the
 * users named; NULL: the whole listing), from their start on.  *over:
 * they are more than a search may page through (the first page said so,
 * or the pages reached the window's end): a span is to be halved; what
 * was listed so far is kept.
 */

static int
gms_sync_list_pages(gms_tool_t *t, gms_graphql_t *g,
    const gms_graphql_conf_t *gms, long page_size, json_t *filters,
    gms_sync_list_t *in, gms_sync_seen_t *seen, unsigned *page, int *over)
{
    char        first[GMS_TOKEN_ID_LEN];
    size_t      before, fresh;
    json_t     *vars;
    int64_t     pages, total, nth;
    json_int_t  start, count;

    *over = 0;

    start = 0;
    pages = 1;
    total = 0;

    for (nth = 1; /* void */ ; nth++) {
        count = page_size;

        if (start + count > GMS_SYNC_WINDOW) {
            count = GMS_SYNC_WINDOW - start;
        }

        if (count <= 0) {
            *over = 1;
            return GMS_TOOL_OK;
        }

        if (filters == NULL) {
            vars = json_pack("{s:{s:I, s:I, s:[]}}", "input", "start", start,
                             "count", count, "filters");

        } else {
            vars = json_pack("{s:{s:I, s:I, s:O}}", "input", "start", start,
                             "count", count, "filters", filters);
        }

        before = in->ntokens;
        in->page_total = -1;

        if (gms_sync_list_ask(t, g, vars, ++*page, in) != GMS_TOOL_OK) {
            return GMS_TOOL_GMS;
        }

        if (in->ntokens == before) {
            return GMS_TOOL_OK;
        }

        if (gms_sync_seen_add(t, seen, in, before, &fresh) != 0) {
            return GMS_TOOL_REDIS;
        }

        /*
         * Within a span, a page may hold only tokens that other spans
         * listed; one that starts as the span's first did repeats it
         */
        if (nth == 1) {
            memcpy(first, in->tokens[before].id, sizeof(first));

        } else if (filters != NULL && fresh == 0
                   && memcmp(first, in->tokens[before].id, sizeof(first))
                      != 0)
        {
            fresh = 1;
        }

        if (fresh == 0 && (filters == NULL || nth > 1)) {
            gms_tool_msgs_error(t, "%s: page %u (start %lld) lists only tokens "
                                "of the pages before (GMS, or a proxy in front "
                                "of it, ignores start; or tokens come faster "
                                "than the pages): the listing is refused",
                                gms->url, *page, (long long) start);
            return GMS_TOOL_GMS;
        }

        if (nth == 1) {
            total = in->page_total >= 0 ? in->page_total : in->total;

            /* the whole listing: its first 10,000 by offset, as ever */
            if (filters != NULL && total > GMS_SYNC_WINDOW) {
                *over = 1;
                return GMS_TOOL_OK;
            }

            pages = (total + (in->ntokens - before) - 1)
                    / (in->ntokens - before) + 2;
        }

        start += in->ntokens - before;

        gms_tool_progress_show(t->progress, "tokens listed", seen->n,
                               in->total > 0 ? (size_t) in->total : 0);

        /* the whole listing: the largest total any page gave */
        if (filters == NULL ? (int64_t) seen->n >= in->total
                            : start >= total)
        {
            return GMS_TOOL_OK;
        }

        if (nth >= pages) {
            gms_tool_msgs_error(t, "%s: page %u and the listing goes on, past "
                                "the %lld pages its first total (%lld tokens) "
                                "allows: the listing is refused", gms->url,
                                *page, (long long) pages, (long long) total);
            return GMS_TOOL_GMS;
        }
    }
}


/*
 * One listAccessTokens request (vars: its variables, taken), its answer
 * read into "in" as a page of the stdin form, checked the same way.
 */

static int
gms_sync_list_ask(gms_tool_t *t, gms_graphql_t *g, json_t *vars, unsigned page,
    gms_sync_list_t *in)
{
    int      rc;
    json_t  *list, *doc;

    list = vars ? gms_graphql_query(g, GMS_SYNC_QUERY, vars,
                                    "listAccessTokens")
                : NULL;

    if (list == NULL) {
        return GMS_TOOL_GMS;
    }

    doc = json_pack("{s:{s:o}}", "data", "listAccessTokens", list);

    if (doc == NULL) {
        return GMS_TOOL_GMS;
    }

    rc = gms_sync_list_page(t, doc, page, in);

    json_decref(doc);

    return rc == GMS_TOOL_OK ? GMS_TOOL_OK : GMS_TOOL_GMS;
}


/*
 * The tokens of a page (from "from" on) added to the ids seen; *fresh:
 * how many of them were not seen before.  An open-addressing table of
 * indexes: the ids are SHA-256 digests, any bytes of them hash well.
 */

static int
gms_sync_seen_add(gms_tool_t *t, gms_sync_seen_t *seen, gms_sync_list_t *in,
    size_t from, size_t *fresh)
{
    size_t  i, h, slot;

    *fresh = 0;

    for (i = from; i < in->ntokens; i++) {
        if (2 * (seen->n + 1) > seen->size
            && gms_sync_seen_grow(seen, in) != 0)
        {
            gms_tool_msgs_error(t, "out of memory");
            return -1;
        }

        h = gms_sync_seen_hash(in->tokens[i].id) & (seen->size - 1);

        for ( ;; ) {
            slot = seen->slots[h];

            if (slot == 0) {
                seen->slots[h] = i + 1;
                seen->n++;
                (*fresh)++;
                break;
            }

            if (memcmp(in->tokens[slot - 1].id, in->tokens[i].id,
                       GMS_TOKEN_ID_LEN)
                == 0)
            {
                break;
            }

            h = (h + 1) & (seen->size - 1);
        }
    }

    return 0;
}


static int
gms_sync_seen_grow(gms_sync_seen_t *seen, gms_sync_list_t *in)
{
    size_t   i, h, size, *slots;

    size = seen->size ? 2 * seen->size : 1024;

    slots = calloc(size, sizeof(size_t));
    if (slots == NULL) {
        return -1;
    }

    for (i = 0; i < seen->size; i++) {
        if (seen->slots[i] == 0) {
            continue;
        }

        h = gms_sync_seen_hash(in->tokens[seen->slots[i] - 1].id)
            & (size - 1);

        while (slots[h]) {
            h = (h + 1) & (size - 1);
        }

        slots[h] = seen->slots[i];
    }

    free(seen->slots);
    seen->slots = slots;
    seen->size = size;

    return 0;
}


/* FNV-1a */

static size_t
gms_sync_seen_hash(const char *id)
{
    size_t    i;
    uint64_t  h;

    h = 14695981039346656037ULL;

    for (i = 0; i < GMS_TOKEN_ID_LEN; i++) {
        h ^= (unsigned char) id[i];
        h *= 1099511628211ULL;
    }

    return (size_t) h;
}


static char *
gms_sync_list_read_all(gms_tool_t *t, size_t *len)
{
    char    *buf, *p;
    size_t   n, size;

    size = 65536;
    *len = 0;

    buf = malloc(size);
    if (buf == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return NULL;
    }

    for ( ;; ) {
        if (*len == size) {
            size *= 2;
            p = realloc(buf, size);

            if (p == NULL) {
                free(buf);
                gms_tool_msgs_error(t, "out of memory");
                return NULL;
            }

            buf = p;
        }

        n = fread(buf + *len, 1, size - *len, stdin);
        *len += n;

        if (n == 0) {
            break;
        }
    }

    if (ferror(stdin)) {
        gms_tool_msgs_error(t, "stdin: cannot read: %s", strerror(errno));
        free(buf);
        return NULL;
    }

    return buf;
}


/*
 * JSON documents one after the other: one a line as asked, though a
 * pretty-printed page parses as well; a line number is that of the first
 * line of the document (of the fault itself for malformed JSON).
 */

static int
gms_sync_list_parse(gms_tool_t *t, const char *buf, size_t len,
    gms_sync_list_t *in)
{
    int           rc;
    size_t        off, end;
    json_t       *doc;
    unsigned      line;
    json_error_t  err;

    off = 0;
    line = 1;

    for ( ;; ) {
        while (off < len && (buf[off] == ' ' || buf[off] == '\t'
                             || buf[off] == '\r' || buf[off] == '\n'))
        {
            if (buf[off] == '\n') {
                line++;
            }

            off++;
        }

        if (off == len) {
            return GMS_TOOL_OK;
        }

        doc = json_loadb(buf + off, len - off,
                         JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES,
                         &err);

        if (doc == NULL) {
            gms_tool_msgs_error(t, "%s%u: malformed JSON: %s", in->where,
                                gms_sync_list_error_line(buf, len, off, line,
                                                         &err),
                                err.text);
            return GMS_TOOL_USAGE;
        }

        rc = gms_sync_list_page(t, doc, line, in);
        json_decref(doc);

        if (rc != GMS_TOOL_OK) {
            return rc;
        }

        for (end = off + err.position; off < end; off++) {
            if (buf[off] == '\n') {
                line++;
            }
        }
    }
}


static int
gms_sync_list_page(gms_tool_t *t, json_t *doc, unsigned line,
    gms_sync_list_t *in)
{
    int          rc;
    size_t       i;
    json_t      *list, *tokens, *total, *errors, *message;
    const char  *shown;

    errors = json_object_get(doc, "errors");

    if (json_array_size(errors) > 0) {
        message = json_object_get(json_array_get(errors, 0), "message");
        shown = gms_sync_list_shown(message);

        gms_tool_msgs_error(t, "%s%u: the page carries GraphQL errors%s%s",
                            in->where, line, shown ? ": " : "",
                            shown ? shown : "");
        return GMS_TOOL_USAGE;
    }

    list = json_object_get(json_object_get(doc, "data"), "listAccessTokens");

    if (!json_is_object(list)) {
        gms_tool_msgs_error(t, "%s%u: not a listAccessTokens page: no "
                            "data.listAccessTokens object", in->where, line);
        return GMS_TOOL_USAGE;
    }

    tokens = json_object_get(list, "tokens");

    if (!json_is_array(tokens)) {
        gms_tool_msgs_error(t, "%s%u: data.listAccessTokens.tokens is %s",
                            in->where, line,
                            tokens ? "not an array" : "missing");
        return GMS_TOOL_USAGE;
    }

    total = json_object_get(list, "total");

    if (total) {
        if (!json_is_integer(total) || json_integer_value(total) < 0) {
            gms_tool_msgs_error(t, "%s%u: data.listAccessTokens.total is not "
                                "a count", in->where, line);
            return GMS_TOOL_USAGE;
        }

        in->page_total = json_integer_value(total);

        if (json_integer_value(total) > in->total) {
            in->total = json_integer_value(total);
        }
    }

    for (i = 0; i < json_array_size(tokens); i++) {
        rc = gms_sync_list_token(t, json_array_get(tokens, i), line, i, in);

        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    in->pages++;

    return GMS_TOOL_OK;
}


static int
gms_sync_list_token(gms_tool_t *t, json_t *v, unsigned line, size_t index,
    gms_sync_list_t *in)
{
    json_t            *id, *actor, *expires, *created;
    int64_t            ms, created_ms;
    const char        *shown;
    gms_sync_token_t  *tok, *p;

    if (!json_is_object(v)) {
        gms_tool_msgs_error(t, "%s%u: tokens[%zu] is not an object",
                            in->where, line, index);
        return GMS_TOOL_USAGE;
    }

    id = json_object_get(v, "id");

    if (!json_is_string(id)) {
        gms_tool_msgs_error(t, "%s%u: tokens[%zu]: id is %s", in->where, line,
                            index, id ? "not a string" : "missing");
        return GMS_TOOL_USAGE;
    }

    if (!gms_token_id_valid(json_string_value(id), json_string_length(id))) {
        shown = gms_sync_list_shown(id);

        gms_tool_msgs_error(t, "%s%u: tokens[%zu]: id %s%s%sis not base64 "
                            "of 32 bytes", in->where, line, index,
                            shown ? "'" : "", shown ? shown : "",
                            shown ? "' " : "");
        return GMS_TOOL_USAGE;
    }

    actor = json_object_get(v, "actorUrn");

    if (!json_is_string(actor)) {
        gms_tool_msgs_error(t, "%s%u: tokens[%zu]: actorUrn is %s",
                            in->where, line, index,
                            actor ? "not a string" : "missing");
        return GMS_TOOL_USAGE;
    }

    if (!gms_token_actor_valid(json_string_value(actor),
                               json_string_length(actor)))
    {
        shown = gms_sync_list_shown(actor);

        gms_tool_msgs_error(t, "%s%u: tokens[%zu]: actorUrn %s%s%sis not a "
                            "user URN (urn:li:..., no control characters)",
                            in->where, line, index, shown ? "'" : "",
                            shown ? shown : "", shown ? "' " : "");
        return GMS_TOOL_USAGE;
    }

    /* optional: when it was made, for --prune's grace period */
    created = json_object_get(v, "createdAt");
    created_ms = 0;

    if (created != NULL && !json_is_null(created)) {
        if (!json_is_integer(created) || json_integer_value(created) < 0) {
            gms_tool_msgs_error(t, "%s%u: tokens[%zu]: createdAt is neither "
                                "milliseconds since the epoch nor null",
                                in->where, line, index);
            return GMS_TOOL_USAGE;
        }

        created_ms = json_integer_value(created);
    }

    expires = json_object_get(v, "expiresAt");

    if (expires == NULL) {
        gms_tool_msgs_error(t, "%s%u: tokens[%zu]: expiresAt is missing "
                            "(null for a token that never expires)", in->where,
                            line, index);
        return GMS_TOOL_USAGE;
    }

    if (json_is_null(expires)) {
        ms = 0;

    } else if (json_is_integer(expires) && json_integer_value(expires) >= 0) {
        ms = json_integer_value(expires);

    } else {
        gms_tool_msgs_error(t, "%s%u: tokens[%zu]: expiresAt is neither "
                            "milliseconds since the epoch nor null", in->where,
                            line, index);
        return GMS_TOOL_USAGE;
    }

    if (in->ntokens == in->nalloc) {
        in->nalloc = in->nalloc ? in->nalloc * 2 : 1024;
        p = realloc(in->tokens, in->nalloc * sizeof(gms_sync_token_t));

        if (p == NULL) {
            gms_tool_msgs_error(t, "out of memory");
            return GMS_TOOL_REDIS;
        }

        in->tokens = p;
    }

    tok = &in->tokens[in->ntokens];

    tok->actor_len = json_string_length(actor);
    tok->actor = malloc(tok->actor_len + 1);

    if (tok->actor == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    memcpy(tok->actor, json_string_value(actor), tok->actor_len + 1);
    memcpy(tok->id, json_string_value(id), GMS_TOKEN_ID_LEN + 1);
    tok->expires_at = ms;
    tok->created_at = created_ms;
    tok->seq = in->ntokens;
    tok->changed = 0;
    tok->deleted = 0;
    tok->cached = 0;
    tok->action = 0;
    tok->known = 0;
    tok->index = index;
    tok->line = line;

    in->ntokens++;

    return GMS_TOOL_OK;
}


/*
 * Sorted by id, each id once.  Pages fetched while tokens come and go may
 * list a token twice, always alike: DataHub never changes a token's user
 * or expiry.  Two different records under one id are bad input.
 */

int
gms_sync_list_unique(gms_tool_t *t, gms_sync_list_t *in)
{
    size_t             i, n;
    gms_sync_token_t  *a, *b;

    if (in->ntokens == 0) {
        return 0;
    }

    qsort(in->tokens, in->ntokens, sizeof(gms_sync_token_t), gms_sync_list_cmp);

    n = 1;

    for (i = 1; i < in->ntokens; i++) {
        a = &in->tokens[n - 1];
        b = &in->tokens[i];

        if (strcmp(a->id, b->id) != 0) {
            in->tokens[n++] = *b;
            continue;
        }

        if (a->actor_len != b->actor_len
            || memcmp(a->actor, b->actor, a->actor_len) != 0
            || a->expires_at != b->expires_at)
        {
            gms_tool_msgs_error(t, "%s%u: tokens[%zu]: id %s is also in %s%u "
                                "(tokens[%zu]) with another actorUrn or "
                                "expiresAt", in->where, b->line, b->index,
                                b->id, in->where, a->line, a->index);

            /* [n, i) were moved down or freed: keep gms_sync_free exact */
            for ( /* void */ ; i < in->ntokens; i++) {
                free(in->tokens[i].actor);
            }

            in->ntokens = n;
            return -1;
        }

        free(b->actor);
    }

    in->ntokens = n;

    return 0;
}


/* an empty listing has no array: no bsearch of NULL */

gms_sync_token_t *
gms_sync_list_find(gms_sync_list_t *in, const char *id, size_t len)
{
    if (len != GMS_TOKEN_ID_LEN || in->ntokens == 0) {
        return NULL;
    }

    return bsearch(id, in->tokens, in->ntokens, sizeof(gms_sync_token_t),
                   gms_sync_list_id_cmp);
}


/*
 * The line of a JSON fault; one found at the end of the input is put on
 * the last line there is, not on the empty one after its newline.
 */

static unsigned
gms_sync_list_error_line(const char *buf, size_t len, size_t off, unsigned line,
    json_error_t *err)
{
    unsigned  last;

    if (err->line <= 0) {
        return line;
    }

    for (last = line; off < len; off++) {
        if (buf[off] == '\n' && off + 1 < len) {
            last++;
        }
    }

    line += err->line - 1;

    return line < last ? line : last;
}


/* a value short and printable enough to quote in a message, else NULL */

static const char *
gms_sync_list_shown(json_t *v)
{
    size_t       i, len;
    const char  *s;

    if (!json_is_string(v)) {
        return NULL;
    }

    s = json_string_value(v);
    len = json_string_length(v);

    if (len == 0 || len > 120) {
        return NULL;
    }

    for (i = 0; i < len; i++) {
        if (s[i] < 0x20 || s[i] > 0x7e) {
            return NULL;
        }
    }

    return s;
}


static int
gms_sync_list_cmp(const void *one, const void *two)
{
    int                      r;
    const gms_sync_token_t  *a, *b;

    a = one;
    b = two;

    r = strcmp(a->id, b->id);

    if (r != 0) {
        return r;
    }

    return (a->seq > b->seq) - (a->seq < b->seq);
}


static int
gms_sync_list_id_cmp(const void *key, const void *elt)
{
    const gms_sync_token_t  *tok;

    tok = elt;

    return memcmp(key, tok->id, GMS_TOKEN_ID_LEN);
}


void
gms_sync_list_free(gms_sync_list_t *in)
{
    size_t  i;

    for (i = 0; i < in->ntokens; i++) {
        free(in->tokens[i].actor);
    }

    free(in->tokens);
}

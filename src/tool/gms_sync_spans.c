
/*
 * follow's token cycle at tens of thousands of tokens: the listing is
 * not read whole every cycle.  A whole listing (100 pages at 100,000
 * tokens, and the search index's createdAt spans past 10,000) takes
 * seconds; a revocation waited for all of it, and for the writes of
 * every token.  Instead the follower keeps the listing it last read,
 * cut into spans of createdAt of about a page each, and at each cycle:
 *
 *  - asks GMS for the number of tokens in every span but the last,
 *    GMS_SYNC_SPANS_ASKED spans a request (listAccessTokens with count 1
 *    and the span's createdAt range, only its total, as aliases of one
 *    query: each counts 2 of graphQL.query.complexityLimit's 2000);
 *  - lists again only the spans whose number changed, and the last one,
 *    open-ended, which holds the tokens of the last five minutes of
 *    createdAt at least (a new token's createdAt is GMS's clock when it
 *    was made: it falls there, however late the index shows it);
 *  - takes the other spans' tokens as they were: not written again.
 *
 * A revocation removes a token from its span's number: its span is
 * listed again and the token is missing from it, then asked of the
 * entity store and pruned as in a whole sync.  One the cycle keeps
 * although missing (GMS still has it, held back by --max-prune, young
 * and not confirmed gone) is pending: asked again at every cycle until
 * it is pruned or listed, as a whole listing's SCAN would find it.  A
 * cycle costs a request per 200 spans, one per changed span, the last
 * span's pages and one per 100 tokens missing or pending.
 *
 * A span's number could stay the same with one token gone and another
 * come (a token indexed more than five minutes after it was made, a
 * restore), and a token without createdAt is in no span: the whole
 * listing, with its SCAN of the cache, still runs every --full-interval
 * (10 minutes by default), after a failed cycle is no matter (the spans
 * are kept only once a cycle wrote everything), and whenever the cache
 * no longer holds this listing's epoch in <prefix>sync (a Redis flushed
 * or failed over to a replica that lost writes, another follower).
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "gms_contract.h"
#include "gms_sync_spans.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/* spans counted in one request: 2 of the complexity limit each */
#define GMS_SYNC_SPANS_ASKED   200

/* the last span holds at least this much of the latest createdAt, ms */
#define GMS_SYNC_SPANS_LAG     300000

#define GMS_SYNC_SPANS_EPOCH   "listing_epoch"


static int gms_sync_spans_count(gms_tool_t *t, gms_graphql_t *g,
    gms_sync_spans_t *s, size_t from, size_t n, unsigned char *changed);
static int gms_sync_spans_known(gms_tool_t *t, gms_sync_spans_t *s,
    const unsigned char *changed, gms_sync_list_t *in,
    char (**gone)[GMS_TOKEN_ID_LEN + 1], gms_sync_spans_counts_t *counts);
static int64_t gms_sync_spans_hi(gms_sync_spans_t *s, size_t k);
static int64_t gms_sync_spans_monotonic(void);
static int gms_sync_spans_cmp(const void *one, const void *two);


/*
 * 1: the listing is to be read whole (the first, --full-interval past,
 * the epoch gone from the cache); 0: by spans; -1: Redis failed.
 */

int
gms_sync_spans_due(gms_tool_t *t, gms_sync_spans_t *s)
{
    int          due;
    char        *key;
    size_t       key_len;
    redisReply  *reply;

    if (!s->ready || s->full_interval == 0
        || gms_sync_spans_monotonic() - s->full_at >= s->full_interval)
    {
        return 1;
    }

    if (t->conn == NULL && gms_tool_redis_connect(t) != GMS_TOOL_OK) {
        return -1;
    }

    key = gms_tool_redis_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_conn_command(t, "HGET %b " GMS_SYNC_SPANS_EPOCH, key,
                                  key_len);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HGET") != 0) {
        return -1;
    }

    due = reply->type != REDIS_REPLY_STRING
          || reply->len != strlen(s->epoch)
          || memcmp(reply->str, s->epoch, reply->len) != 0;

    freeReplyObject(reply);

    return due;
}


/*
 * The listing by spans, into "in" as a whole listing would be (sorted by
 * id, each once): the spans listed again, then the known tokens of the
 * others (known, not to be written).  *gone: the ids of the known tokens
 * of the spans listed again that they no longer hold (malloc'ed,
 * counts->gone of them).  GMS_SYNC_SPANS_WHOLE: a span holds more than a
 * search may page through, the listing is to be read whole.
 */

int
gms_sync_spans_fetch(gms_tool_t *t, const gms_graphql_conf_t *gms,
    long page_size, gms_sync_spans_t *s, gms_sync_list_t *in,
    char (**gone)[GMS_TOKEN_ID_LEN + 1], gms_sync_spans_counts_t *counts)
{
    int             rc, over;
    size_t          k, n;
    gms_graphql_t  *g;
    unsigned char  *changed;

    memset(counts, 0, sizeof(gms_sync_spans_counts_t));
    *gone = NULL;

    changed = calloc(s->nspans, 1);
    if (changed == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    g = gms_graphql_open(t, gms);
    if (g == NULL) {
        free(changed);
        return GMS_TOOL_GMS;
    }

    rc = GMS_TOOL_OK;

    for (k = 0; k + 1 < s->nspans; k += n) {
        n = s->nspans - 1 - k;
        n = n < GMS_SYNC_SPANS_ASKED ? n : GMS_SYNC_SPANS_ASKED;

        if (gms_sync_spans_count(t, g, s, k, n, changed) != 0) {
            rc = GMS_TOOL_GMS;
            goto done;
        }
    }

    changed[s->nspans - 1] = 1;

    for (k = 0; k < s->nspans; k++) {
        if (!changed[k]) {
            continue;
        }

        counts->listed++;

        rc = gms_sync_list_range(t, g, gms, page_size, s->lo[k],
                                 gms_sync_spans_hi(s, k), in, &over);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }

        if (over) {
            rc = GMS_SYNC_SPANS_WHOLE;
            goto done;
        }
    }

    counts->spans = s->nspans;

    if (gms_sync_list_unique(t, in) != 0) {
        rc = GMS_TOOL_GMS;
        goto done;
    }

    rc = gms_sync_spans_known(t, s, changed, in, gone, counts);

done:

    gms_graphql_close(g);
    free(changed);

    return rc;
}


/*
 * The number of tokens in spans from..from+n-1, as aliases of one query;
 * changed[k]: the span's number is not the known one.
 */

static int
gms_sync_spans_count(gms_tool_t *t, gms_graphql_t *g, gms_sync_spans_t *s,
    size_t from, size_t n, unsigned char *changed)
{
    int          rc;
    char        *query, name[32], lo[24], hi[24];
    size_t       i, k;
    json_t      *vars, *input, *data, *total;
    json_int_t   expected;

    query = gms_graphql_aliases("spans", "ListAccessTokenInput!",
                                "listAccessTokens", "input", " { total }", n);
    vars = json_object();

    if (query == NULL || vars == NULL) {
        free(query);
        json_decref(vars);
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    for (i = 0; i < n; i++) {
        k = from + i;

        snprintf(name, sizeof(name), "v%zu", i);
        snprintf(lo, sizeof(lo), "%lld", (long long) s->lo[k]);
        snprintf(hi, sizeof(hi), "%lld", (long long) gms_sync_spans_hi(s, k));

        /* count 1, not 0: only the total is asked, nothing more is read */
        input = json_pack("{s:i, s:i, s:[{s:s, s:[s], s:s}, "
                          "{s:s, s:[s], s:s}]}", "start", 0, "count", 1,
                          "filters",
                          "field", "createdAt", "values", lo,
                          "condition", "GREATER_THAN_OR_EQUAL_TO",
                          "field", "createdAt", "values", hi,
                          "condition", "LESS_THAN_OR_EQUAL_TO");

        if (input == NULL || json_object_set_new(vars, name, input) != 0) {
            free(query);
            json_decref(vars);
            gms_tool_msgs_error(t, "out of memory");
            return -1;
        }
    }

    data = gms_graphql_query(g, query, vars, NULL);
    free(query);

    if (data == NULL) {
        return -1;
    }

    rc = 0;

    for (i = 0; i < n; i++) {
        k = from + i;

        snprintf(name, sizeof(name), "a%zu", i);
        total = json_object_get(json_object_get(data, name), "total");

        if (!json_is_integer(total) || json_integer_value(total) < 0) {
            gms_tool_msgs_error(t, "GMS's answer has no total for %s (the "
                                "tokens created from %lld to %lld ms)", name,
                                (long long) s->lo[k],
                                (long long) gms_sync_spans_hi(s, k));
            rc = -1;
            break;
        }

        expected = (json_int_t) (s->first[k + 1] - s->first[k]);
        changed[k] = json_integer_value(total) != expected;
    }

    json_decref(data);

    return rc;
}


/*
 * The known tokens of the spans not listed again (and those in no span)
 * appended, known; those of the spans listed again that the spans no
 * longer hold, and the pending ones still unlisted, into *gone.
 */

static int
gms_sync_spans_known(gms_tool_t *t, gms_sync_spans_t *s,
    const unsigned char *changed, gms_sync_list_t *in,
    char (**gone)[GMS_TOKEN_ID_LEN + 1], gms_sync_spans_counts_t *counts)
{
    size_t             i, k, n, end;
    gms_sync_token_t  *tok;
    gms_sync_known_t  *known;
    char             (*ids)[GMS_TOKEN_ID_LEN + 1];

    n = in->ntokens + s->ntokens;

    if (n > in->nalloc) {
        tok = realloc(in->tokens, n * sizeof(gms_sync_token_t));
        if (tok == NULL) {
            gms_tool_msgs_error(t, "out of memory");
            return GMS_TOOL_REDIS;
        }

        in->tokens = tok;
        in->nalloc = n;
    }

    ids = NULL;
    n = in->ntokens;
    k = 0;

    for (i = 0; i < s->ntokens; i++) {
        known = &s->tokens[i];

        /* the span of token i: the last whose first is at most i */
        while (k + 1 < s->nspans && s->first[k + 1] <= i) {
            k++;
        }

        if (gms_sync_list_find(in, known->id, GMS_TOKEN_ID_LEN)) {
            continue;
        }

        if (i >= s->first[0] && changed[k]) {
            if (ids == NULL) {
                ids = malloc((s->ntokens - i + s->npending) * sizeof(*ids));
                if (ids == NULL) {
                    gms_tool_msgs_error(t, "out of memory");
                    goto failed;
                }
            }

            memcpy(ids[counts->gone++], known->id, GMS_TOKEN_ID_LEN + 1);
            continue;
        }

        tok = &in->tokens[n];
        memset(tok, 0, sizeof(gms_sync_token_t));

        tok->actor = malloc(known->actor_len + 1);
        if (tok->actor == NULL) {
            gms_tool_msgs_error(t, "out of memory");
            goto failed;
        }

        memcpy(tok->actor, known->actor, known->actor_len + 1);
        memcpy(tok->id, known->id, GMS_TOKEN_ID_LEN + 1);
        tok->actor_len = known->actor_len;
        tok->expires_at = known->expires_at;
        tok->created_at = known->created_at;
        tok->seq = n;
        tok->known = 1;
        n++;
    }

    /*
     * The tokens the last cycle kept although its listing lacked them
     * (GMS still had them, held back, young and unconfirmed): asked
     * again, at every cycle until they are listed or pruned
     */
    for (i = 0; i < s->npending; i++) {
        if (gms_sync_list_find(in, s->pending[i], GMS_TOKEN_ID_LEN)) {
            continue;
        }

        if (ids == NULL) {
            ids = malloc((s->npending - i) * sizeof(*ids));
            if (ids == NULL) {
                gms_tool_msgs_error(t, "out of memory");
                goto failed;
            }
        }

        memcpy(ids[counts->gone++], s->pending[i], GMS_TOKEN_ID_LEN + 1);
    }

    /* gms_sync_list_find above searched the listed ones only */
    end = in->ntokens;
    in->ntokens = n;

    if (n > end && gms_sync_list_unique(t, in) != 0) {
        free(ids);
        return GMS_TOOL_GMS;
    }

    in->total = (int64_t) in->ntokens;
    *gone = ids;

    return GMS_TOOL_OK;

failed:

    in->ntokens = n;
    free(ids);
    counts->gone = 0;

    return GMS_TOOL_REDIS;
}


/*
 * The spans of a listing read and written whole (in: sorted by id, each
 * once), into next: its tokens by createdAt, cut every span_size tokens
 * (never between two of one createdAt) but the last span, open-ended,
 * which starts GMS_SYNC_SPANS_LAG before the latest createdAt at least.
 */

int
gms_sync_spans_make(gms_tool_t *t, const gms_sync_list_t *in, long span_size,
    gms_sync_spans_t *next)
{
    size_t                   i, n, k, size;
    int64_t                  latest, c;
    gms_sync_known_t        *known;
    const gms_sync_token_t  *tok;

    memset(next, 0, sizeof(gms_sync_spans_t));

    n = in->ntokens;
    size = span_size > 0 ? (size_t) span_size : 1;

    next->tokens = calloc(n ? n : 1, sizeof(gms_sync_known_t));
    next->lo = malloc((n / size + 2) * sizeof(int64_t));
    next->first = malloc((n / size + 3) * sizeof(size_t));

    if (next->tokens == NULL || next->lo == NULL || next->first == NULL) {
        goto nomem;
    }

    latest = 0;

    for (i = 0; i < n; i++) {
        tok = &in->tokens[i];
        known = &next->tokens[i];

        known->actor = malloc(tok->actor_len + 1);
        if (known->actor == NULL) {
            goto nomem;
        }

        next->ntokens++;

        memcpy(known->actor, tok->actor, tok->actor_len);
        known->actor[tok->actor_len] = '\0';
        known->actor_len = tok->actor_len;
        memcpy(known->id, tok->id, GMS_TOKEN_ID_LEN + 1);
        known->created_at = tok->created_at > 0 ? tok->created_at : 0;
        known->expires_at = tok->expires_at;

        if (known->created_at > latest) {
            latest = known->created_at;
        }
    }

    qsort(next->tokens, n, sizeof(gms_sync_known_t), gms_sync_spans_cmp);

    /* those without createdAt first, in no span */
    for (i = 0; i < n && next->tokens[i].created_at == 0; i++) {
        /* void */
    }

    next->lo[0] = 1;
    next->first[0] = i;
    k = 1;

    for (/* void */; i < n; i++) {
        c = next->tokens[i].created_at;

        if (c >= latest - GMS_SYNC_SPANS_LAG) {
            break;
        }

        if (i - next->first[k - 1] >= size
            && c != next->tokens[i - 1].created_at)
        {
            next->lo[k] = c;
            next->first[k] = i;
            k++;
        }
    }

    /* the open span, from the latest minutes on (or after the last cut) */
    if (i < n && i > next->first[k - 1]) {
        next->lo[k] = next->tokens[i].created_at;
        next->first[k] = i;
        k++;
    }

    next->nspans = k;
    next->first[k] = n;

    return 0;

nomem:

    gms_tool_msgs_error(t, "out of memory");
    gms_sync_spans_free(next);

    return -1;
}


/*
 * A whole listing written: a new epoch for it in <prefix>sync, which a
 * cycle by spans finds there or reads the listing whole.
 */

int
gms_sync_spans_mark(gms_tool_t *t, gms_sync_spans_t *next)
{
    char        *key;
    size_t       key_len;
    redisReply  *reply;

    snprintf(next->epoch, sizeof(next->epoch), "%lx-%lld",
             (unsigned long) random(), (long long) gms_tool_redis_now_ms());

    key = gms_tool_redis_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_conn_command(t, "HSET %b " GMS_SYNC_SPANS_EPOCH " %s", key,
                                  key_len, next->epoch);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HSET") != 0) {
        return -1;
    }

    freeReplyObject(reply);

    return 0;
}


/* next becomes the spans (whole: a whole listing, its epoch marked) */

void
gms_sync_spans_take(gms_sync_spans_t *s, gms_sync_spans_t *next, int whole)
{
    char     epoch[sizeof(s->epoch)];
    int64_t  full_at, full_interval;

    memcpy(epoch, whole ? next->epoch : s->epoch, sizeof(epoch));
    full_at = whole ? gms_sync_spans_monotonic() : s->full_at;
    full_interval = s->full_interval;

    gms_sync_spans_free(s);

    *s = *next;
    memcpy(s->epoch, epoch, sizeof(epoch));
    s->full_at = full_at;
    s->full_interval = full_interval;
    s->ready = 1;

    memset(next, 0, sizeof(gms_sync_spans_t));
}


/* the known listing dropped (the full interval stays): read whole next */

void
gms_sync_spans_free(gms_sync_spans_t *s)
{
    size_t   i;
    int64_t  full_interval;

    for (i = 0; i < s->ntokens; i++) {
        free(s->tokens[i].actor);
    }

    free(s->tokens);
    free(s->lo);
    free(s->first);
    free(s->pending);

    full_interval = s->full_interval;
    memset(s, 0, sizeof(gms_sync_spans_t));
    s->full_interval = full_interval;
}


static int64_t
gms_sync_spans_hi(gms_sync_spans_t *s, size_t k)
{
    return k + 1 < s->nspans ? s->lo[k + 1] - 1 : GMS_SYNC_TIME_MAX;
}


static int64_t
gms_sync_spans_monotonic(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* by createdAt, then id */

static int
gms_sync_spans_cmp(const void *one, const void *two)
{
    const gms_sync_known_t  *a, *b;

    a = one;
    b = two;

    if (a->created_at != b->created_at) {
        return (a->created_at > b->created_at)
               - (a->created_at < b->created_at);
    }

    return strcmp(a->id, b->id);
}

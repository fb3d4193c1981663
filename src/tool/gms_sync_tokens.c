
/*
 * gms-token sync (and every cycle of follow): the cached tokens made equal
 * to DataHub's own list, which gms_sync_list.c reads and checks whole
 * first, so that bad input or a failed page changes nothing.  Every token
 * is written as 'put' writes it, in pipelined batches; --prune walks the
 * cached tokens with SCAN and deletes those the list does not have,
 * except those created in the last minute (DataHub's search index lags
 * behind) and, with --gms, those GMS still has when asked for by urn
 * (gms_sync_lookup).
 * Every token added, changed, deleted as expired or pruned is published
 * on <prefix>invalidate: an edge drops what it cached for it, the "no such
 * token" of a token tried before it was listed included.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_sync_tokens.h"
#include "gms_sync_list.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/* tokens per pipelined batch, and keys asked of each SCAN step */
#define GMS_SYNC_BATCH         1000

/* a token created this recently may be missing from DataHub's list */
#define GMS_SYNC_PRUNE_GRACE   60000

/* cached tokens the list misses, asked for by urn in one request */
#define GMS_SYNC_LOOKUP        100

/* StatefulTokenService.tokenUrnFromKey: a token's urn, from its id */
#define GMS_SYNC_TOKEN_URN     "urn:li:dataHubAccessToken:"

/*
 * Deletes a token's key unless it was created after ARGV[1] (-1: kept);
 * what it deleted is published on ARGV[2] as ARGV[3], in the same step,
 * unless ARGV[3] is empty (a key that holds no token id).  An expired
 * token is deleted with an ARGV[1] of the end of time.  A key that is no
 * hash has no createdAt (pcall) and is deleted, as DEL alone would.
 */
static const char  gms_sync_delete_script[] =
    "local c = tonumber(redis.pcall('HGET', KEYS[1], 'createdAt'))\n"
    "if c and c > tonumber(ARGV[1]) then return -1 end\n"
    "if redis.call('DEL', KEYS[1]) == 0 then return 0 end\n"
    "if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[2], ARGV[3]) end\n"
    "return 1\n";

#define GMS_SYNC_FOREVER       "9007199254740992"


/* a cached token's key that the list does not have */
typedef struct {
    char                  *key;
    size_t                 len;
} gms_sync_missing_t;


/* what a sync works from: DataHub's list, and the cached keys it misses */
typedef struct {
    gms_sync_list_t        list;
    char                  *channel;        /* <prefix>invalidate */
    size_t                 channel_len;
    gms_sync_missing_t    *missing;        /* --prune: sorted, unique */
    size_t                 nmissing;
    size_t                 nalloc_missing;
} gms_sync_input_t;


static int gms_sync_write(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts);
static void gms_sync_as_put(const gms_sync_token_t *s,
    gms_tool_token_t *tok);
static int gms_sync_publish(gms_tool_t *t, gms_sync_input_t *in,
    size_t from, size_t to);
static int gms_sync_missing(gms_tool_t *t, gms_sync_input_t *in);
static int gms_sync_lookup(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_sync_input_t *in, gms_tool_sync_counts_t *counts);
static int gms_sync_lookup_check(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_sync_input_t *in, size_t from, size_t to, size_t before);
static int gms_sync_prune(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts);
static int gms_sync_holders(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_holders_t *holders);
static int gms_sync_missing_cmp(const void *one, const void *two);
static void gms_sync_free(gms_sync_input_t *in);


int
gms_tool_sync(gms_tool_t *t, int prune, const gms_graphql_conf_t *gms,
    long page_size, gms_tool_sync_counts_t *counts,
    gms_tool_holders_t *holders)
{
    int                rc;
    gms_sync_input_t   in;

    memset(&in, 0, sizeof(gms_sync_input_t));

    in.list.where = gms ? "page " : "stdin:";

    rc = gms ? gms_sync_list_fetch(t, gms, page_size, &in.list)
             : gms_sync_list_stdin(t, &in.list);

    if (rc != GMS_TOOL_OK) {
        goto done;
    }

    rc = GMS_TOOL_USAGE;

    if (in.list.pages == 0) {
        gms_tool_error(t, "stdin: no listAccessTokens page");
        goto done;
    }

    if (gms_sync_list_unique(t, &in.list) != 0) {
        goto done;
    }

    if (prune && in.list.total > (int64_t) in.list.ntokens) {
        gms_tool_error(t, "%s: %zu tokens, but listAccessTokens has a "
                       "total of %lld: the list is incomplete, refusing "
                       "to --prune", gms ? gms->url : "stdin", in.list.ntokens,
                       (long long) in.list.total);
        rc = gms ? GMS_TOOL_GMS : GMS_TOOL_USAGE;
        goto done;
    }

    if (t->conn == NULL) {
        rc = gms_tool_connect(t);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }
    }

    rc = GMS_TOOL_REDIS;

    in.channel = gms_tool_key(t, GMS_KEY_INVALIDATE, "", 0,
                              &in.channel_len);
    if (in.channel == NULL) {
        goto done;
    }

    if (prune && gms_sync_missing(t, &in) != 0) {
        goto done;
    }

    if (prune && gms && in.nmissing) {
        rc = gms_sync_lookup(t, gms, &in, counts);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }

        rc = GMS_TOOL_REDIS;
    }

    counts->tokens = in.list.ntokens;

    if (gms_sync_write(t, &in, counts) != 0
        || (prune && gms_sync_prune(t, &in, counts) != 0)
        || (holders && gms_sync_holders(t, &in, holders) != 0))
    {
        goto done;
    }

    rc = GMS_TOOL_OK;

done:

    gms_sync_free(&in);

    return rc;
}


void
gms_tool_sync_print(const gms_tool_sync_counts_t *counts)
{
    printf("tokens=%zu added=%zu updated=%zu unchanged=%zu expired=%zu "
           "pruned=%zu kept=%zu\n", counts->tokens, counts->added,
           counts->updated, counts->unchanged, counts->expired,
           counts->pruned, counts->kept);
}


void
gms_tool_holders_free(gms_tool_holders_t *holders)
{
    size_t  i;

    for (i = 0; i < holders->n; i++) {
        free(holders->urns[i]);
        free(holders->ids[i]);
    }

    free(holders->urns);
    free(holders->ids);
    memset(holders, 0, sizeof(gms_tool_holders_t));
}


static int
gms_sync_write(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts)
{
    char               *key;
    size_t              i, j, end, key_len;
    int64_t             now;
    redisReply         *reply;
    gms_tool_token_t    tok;
    gms_sync_token_t   *s;
    gms_tool_put_rc_e   rc;

    now = gms_tool_now_ms();

    for (i = 0; i < in->list.ntokens; i = end) {
        end = i + GMS_SYNC_BATCH < in->list.ntokens ? i + GMS_SYNC_BATCH
                                                    : in->list.ntokens;

        for (j = i; j < end; j++) {
            s = &in->list.tokens[j];

            if (s->expires_at == 0 || s->expires_at > now) {
                gms_sync_as_put(s, &tok);

                if (gms_tool_put_append(t, s->id, &tok) != 0) {
                    return -1;
                }

                continue;
            }

            key = gms_tool_key(t, GMS_KEY_TOKEN, s->id, GMS_TOKEN_ID_LEN,
                               &key_len);
            if (key == NULL) {
                return -1;
            }

            gms_tool_append(t, "EVAL %s 1 %b %s %b %s",
                            gms_sync_delete_script, key, key_len,
                            GMS_SYNC_FOREVER, in->channel, in->channel_len,
                            s->id);
            free(key);
        }

        for (j = i; j < end; j++) {
            s = &in->list.tokens[j];

            if (s->expires_at != 0 && s->expires_at <= now) {
                (void) gms_tool_get_reply(t, &reply);

                if (gms_tool_reply_error(t, reply, "EVAL") != 0) {
                    return -1;
                }

                freeReplyObject(reply);
                counts->expired++;
                continue;
            }

            gms_sync_as_put(s, &tok);

            if (gms_tool_put_read(t, &tok, &rc) != 0) {
                return -1;
            }

            switch (rc) {
            case GMS_TOOL_ADDED:
                counts->added++;
                s->changed = 1;
                break;
            case GMS_TOOL_UPDATED:
                counts->updated++;
                s->changed = 1;
                break;
            default:
                counts->unchanged++;
            }
        }

        if (gms_sync_publish(t, in, i, end) != 0) {
            return -1;
        }
    }

    return 0;
}


/* a listed token, as 'put' would write it: DataHub gives no type */

static void
gms_sync_as_put(const gms_sync_token_t *s, gms_tool_token_t *tok)
{
    memset(tok, 0, sizeof(gms_tool_token_t));
    tok->actor = s->actor;
    tok->actor_len = s->actor_len;
    tok->expires_at = s->expires_at;
    tok->created_at = s->created_at;
}


/*
 * The ids of a batch's added and changed tokens, pipelined.  After the
 * writes, not with them: only their replies tell what changed.
 */

static int
gms_sync_publish(gms_tool_t *t, gms_sync_input_t *in, size_t from,
    size_t to)
{
    size_t       i, n;
    redisReply  *reply;

    n = 0;

    for (i = from; i < to; i++) {
        if (in->list.tokens[i].changed) {
            gms_tool_append(t, "PUBLISH %b %s", in->channel,
                            in->channel_len, in->list.tokens[i].id);
            n++;
        }
    }

    for (i = 0; i < n; i++) {
        (void) gms_tool_get_reply(t, &reply);

        if (gms_tool_reply_error(t, reply, "PUBLISH") != 0) {
            return -1;
        }

        freeReplyObject(reply);
    }

    return 0;
}


/*
 * SCAN MATCH <prefix>token:*, never KEYS: Redis goes on serving
 * meanwhile.  The keys of the tokens the list does not have are kept, each
 * once (SCAN may return a key twice), for gms_sync_prune.
 */

static int
gms_sync_missing(gms_tool_t *t, gms_sync_input_t *in)
{
    int                  rc;
    size_t               i, n, base;
    redisReply          *keys, *key;
    gms_tool_scan_t      scan;
    gms_sync_missing_t  *m;

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;

    if (gms_tool_scan_open(t, &scan, GMS_KEY_TOKEN) != 0) {
        return -1;
    }

    rc = -1;

    do {
        keys = gms_tool_scan_next(t, &scan);
        if (keys == NULL) {
            goto done;
        }

        for (i = 0; i < keys->elements; i++) {
            key = keys->element[i];

            if (key->type != REDIS_REPLY_STRING || key->len < base
                || gms_sync_list_has(&in->list, key->str + base,
                                     key->len - base))
            {
                continue;
            }

            if (in->nmissing == in->nalloc_missing) {
                n = in->nalloc_missing ? 2 * in->nalloc_missing : 64;
                m = realloc(in->missing, n * sizeof(gms_sync_missing_t));

                if (m == NULL) {
                    gms_tool_error(t, "out of memory");
                    goto done;
                }

                in->missing = m;
                in->nalloc_missing = n;
            }

            m = &in->missing[in->nmissing];

            m->key = malloc(key->len);
            if (m->key == NULL) {
                gms_tool_error(t, "out of memory");
                goto done;
            }

            memcpy(m->key, key->str, key->len);
            m->len = key->len;
            in->nmissing++;
        }

    } while (!scan.done);

    rc = 0;

    if (in->nmissing == 0) {
        goto done;
    }

    qsort(in->missing, in->nmissing, sizeof(gms_sync_missing_t),
          gms_sync_missing_cmp);

    for (n = 1, i = 1; i < in->nmissing; i++) {
        if (gms_sync_missing_cmp(&in->missing[n - 1], &in->missing[i]) == 0) {
            free(in->missing[i].key);
            continue;
        }

        in->missing[n++] = in->missing[i];
    }

    in->nmissing = n;

done:

    gms_tool_scan_close(&scan);

    return rc;
}


/*
 * The cached tokens the list misses, asked for by urn, GMS_SYNC_LOOKUP at
 * a time: a filter on the "urn" that every search document has
 * (SearchDocumentTransformer).  ListAccessTokensResolver pages by offset
 * over a search index that may change between two pages: a token deleted
 * from a page already read while another is created moves a live token
 * past the pages read, the total still matching.  A token found is listed
 * after all (written, its user a holder, not pruned); a revoked one is
 * gone from the index, and pruned in this very sync.  A failed,
 * incomplete or strange answer fails the sync: nothing is written.
 */

static int
gms_sync_lookup(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_sync_input_t *in, gms_tool_sync_counts_t *counts)
{
    int                  rc;
    char                 urn[sizeof(GMS_SYNC_TOKEN_URN) + GMS_TOKEN_ID_LEN];
    size_t               i, from, n, base, listed, before;
    json_t              *urns, *vars;
    int64_t              total;
    unsigned             page;
    gms_graphql_t       *g;
    gms_sync_missing_t  *m;

    g = gms_graphql_open(t, gms);
    if (g == NULL) {
        return GMS_TOOL_GMS;
    }

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;
    memcpy(urn, GMS_SYNC_TOKEN_URN, sizeof(GMS_SYNC_TOKEN_URN) - 1);

    rc = GMS_TOOL_OK;
    in->list.where = "urn lookup ";
    total = in->list.total;
    listed = in->list.ntokens;
    page = 0;

    for (i = 0; i < in->nmissing; /* void */ ) {
        urns = json_array();
        if (urns == NULL) {
            gms_tool_error(t, "out of memory");
            rc = GMS_TOOL_REDIS;
            break;
        }

        from = i;

        for (n = 0; i < in->nmissing && n < GMS_SYNC_LOOKUP; i++) {
            m = &in->missing[i];

            /* a key that holds no token id: no token to ask for */
            if (!gms_token_id_valid(m->key + base, m->len - base)) {
                continue;
            }

            memcpy(urn + sizeof(GMS_SYNC_TOKEN_URN) - 1, m->key + base,
                   GMS_TOKEN_ID_LEN);

            if (json_array_append_new(urns,
                                      json_stringn(urn, sizeof(urn) - 1))
                != 0)
            {
                gms_tool_error(t, "out of memory");
                rc = GMS_TOOL_REDIS;
                break;
            }

            n++;
        }

        if (rc != GMS_TOOL_OK) {
            json_decref(urns);
            break;
        }

        if (n == 0) {
            json_decref(urns);
            continue;
        }

        vars = json_pack("{s:{s:i, s:I, s:[{s:s, s:o}]}}", "input", "start",
                         0, "count", (json_int_t) n, "filters", "field", "urn",
                         "values", urns);

        before = in->list.ntokens;
        in->list.total = 0;

        if (gms_sync_list_ask(t, g, vars, ++page, &in->list) != GMS_TOOL_OK) {
            rc = GMS_TOOL_GMS;
            break;
        }

        if (gms_sync_lookup_check(t, gms, in, from, i, before) != 0) {
            rc = GMS_TOOL_GMS;
            break;
        }
    }

    in->list.total = total;
    gms_graphql_close(g);

    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    if (gms_sync_list_unique(t, &in->list) != 0) {
        return GMS_TOOL_GMS;
    }

    counts->kept += in->list.ntokens - listed;

    return GMS_TOOL_OK;
}


/* an answer lists every token asked for it has, and only those */

static int
gms_sync_lookup_check(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_sync_input_t *in, size_t from, size_t to, size_t before)
{
    size_t               i, j, base;
    gms_sync_missing_t  *m;

    if (in->list.total > (int64_t) (in->list.ntokens - before)) {
        gms_tool_error(t, "%s: listAccessTokens by urn lists %zu tokens of "
                       "a total of %lld: the answer is incomplete, refusing "
                       "to --prune", gms->url, in->list.ntokens - before,
                       (long long) in->list.total);
        return -1;
    }

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;

    for (i = before; i < in->list.ntokens; i++) {
        for (j = from; j < to; j++) {
            m = &in->missing[j];

            if (m->len == base + GMS_TOKEN_ID_LEN
                && memcmp(m->key + base, in->list.tokens[i].id,
                          GMS_TOKEN_ID_LEN)
                   == 0)
            {
                break;
            }
        }

        if (j == to) {
            gms_tool_error(t, "%s: listAccessTokens by urn lists the token "
                           "%s, not asked for: refusing to --prune", gms->url,
                           in->list.tokens[i].id);
            return -1;
        }
    }

    return 0;
}


/*
 * The missing keys deleted, pipelined, but those of the tokens found since
 * (gms_sync_lookup) and, in the script, those created in the last minute.
 */

static int
gms_sync_prune(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts)
{
    char                *id;
    size_t               i, j, end, n, base, id_len;
    int64_t              cutoff;
    redisReply          *del;
    gms_sync_missing_t  *m;

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;
    cutoff = gms_tool_now_ms() - GMS_SYNC_PRUNE_GRACE;

    for (i = 0; i < in->nmissing; i = end) {
        end = i + GMS_SYNC_BATCH < in->nmissing ? i + GMS_SYNC_BATCH
                                                : in->nmissing;
        n = 0;

        for (j = i; j < end; j++) {
            m = &in->missing[j];
            id = m->key + base;
            id_len = m->len - base;

            if (gms_sync_list_has(&in->list, id, id_len)) {
                continue;
            }

            if (!gms_token_id_valid(id, id_len)) {
                id_len = 0;
            }

            gms_tool_append(t, "EVAL %s 1 %b %lld %b %b",
                            gms_sync_delete_script, m->key, m->len,
                            (long long) cutoff, in->channel,
                            in->channel_len, id, id_len);
            n++;
        }

        for (j = 0; j < n; j++) {
            (void) gms_tool_get_reply(t, &del);

            if (gms_tool_reply_error(t, del, "EVAL") != 0) {
                return -1;
            }

            if (del->type == REDIS_REPLY_INTEGER) {
                if (del->integer < 0) {
                    counts->kept++;

                } else {
                    counts->pruned += del->integer;
                }
            }

            freeReplyObject(del);
        }
    }

    return 0;
}


/* the users of the tokens listed, handed over to the privileges mirror */

static int
gms_sync_holders(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_holders_t *holders)
{
    size_t  i;

    memset(holders, 0, sizeof(gms_tool_holders_t));

    holders->listed = in->list.ntokens;
    holders->total = in->list.total;

    if (in->list.ntokens == 0) {
        return 0;
    }

    holders->urns = malloc(in->list.ntokens * sizeof(char *));
    holders->ids = malloc(in->list.ntokens * sizeof(char *));

    if (holders->urns == NULL || holders->ids == NULL) {
        gms_tool_error(t, "out of memory");
        free(holders->urns);
        free(holders->ids);
        memset(holders, 0, sizeof(gms_tool_holders_t));
        return -1;
    }

    for (i = 0; i < in->list.ntokens; i++) {
        holders->ids[i] = strdup(in->list.tokens[i].id);

        if (holders->ids[i] == NULL) {
            gms_tool_error(t, "out of memory");
            holders->n = i;
            gms_tool_holders_free(holders);
            return -1;
        }

        holders->urns[i] = in->list.tokens[i].actor;
        in->list.tokens[i].actor = NULL;
    }

    holders->n = in->list.ntokens;

    return 0;
}


static int
gms_sync_missing_cmp(const void *one, const void *two)
{
    int                        r;
    const gms_sync_missing_t  *a, *b;

    a = one;
    b = two;

    r = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);

    if (r != 0) {
        return r;
    }

    return (a->len > b->len) - (a->len < b->len);
}


static void
gms_sync_free(gms_sync_input_t *in)
{
    size_t  i;

    gms_sync_list_free(&in->list);

    for (i = 0; i < in->nmissing; i++) {
        free(in->missing[i].key);
    }

    free(in->missing);
    free(in->channel);
}

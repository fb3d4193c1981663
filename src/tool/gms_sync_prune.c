
/*
 * gms-token sync --prune (and follow's cycles): the cached tokens DataHub's
 * list does not have, found by SCAN (or, a cycle by spans, those its spans
 * no longer hold), asked of GMS's entity store, bounded by --max-prune,
 * then deleted and published on <prefix>invalidate (gms_sync_tokens.c
 * says when each is kept).
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_sync_prune.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/* a token created this recently may be missing from DataHub's list */
#define GMS_SYNC_PRUNE_GRACE   60000

/*
 * entityExists fields in one request, as aliases: GMS's GraphQL refuses
 * a query whose complexity passes graphQL.query.complexityLimit (2000 by
 * default, application.yaml, 0.13 to 1.6), each field counting 1
 */
#define GMS_SYNC_CONFIRM       100

/* StatefulTokenService.tokenUrnFromKey: a token's urn, from its id */
#define GMS_SYNC_TOKEN_URN     "urn:li:dataHubAccessToken:"

/*
 * Deletes a token's key unless it was created after ARGV[1] (-1: kept);
 * what it deleted is published on ARGV[2] as ARGV[3], in the same step,
 * unless ARGV[3] is empty (a key that holds no token id).  An expired
 * token is deleted with an ARGV[1] of the end of time.  A key that is no
 * hash has no createdAt (pcall) and is deleted, as DEL alone would.
 */
const char  gms_sync_delete_script[] =
    "local c = tonumber(redis.pcall('HGET', KEYS[1], 'createdAt'))\n"
    "if c and c > tonumber(ARGV[1]) then return -1 end\n"
    "if redis.call('DEL', KEYS[1]) == 0 then return 0 end\n"
    "if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[2], ARGV[3]) end\n"
    "return 1\n";


static int gms_sync_confirm_batch(gms_tool_t *t, gms_graphql_t *g,
    gms_sync_input_t *in, size_t *from);
static int gms_sync_prune_republish(gms_tool_t *t, gms_sync_input_t *in,
    size_t from, size_t to);
static int gms_sync_missing_cmp(const void *one, const void *two);


/*
 * A cycle by spans: the known tokens its spans no longer hold are the
 * missing ones (no SCAN), asked of the entity store as in a whole sync.
 */

int
gms_sync_prune_gone(gms_tool_t *t, gms_sync_input_t *in,
    char (*gone)[GMS_TOKEN_ID_LEN + 1], const gms_sync_spans_counts_t *spans,
    size_t known, gms_tool_sync_counts_t *counts)
{
    size_t               i;
    gms_sync_missing_t  *m;

    counts->cached = known;
    counts->spans = spans->spans;
    counts->spans_listed = spans->listed;

    if (spans->gone == 0) {
        return 0;
    }

    in->missing = calloc(spans->gone, sizeof(gms_sync_missing_t));
    if (in->missing == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    in->nalloc_missing = spans->gone;

    for (i = 0; i < spans->gone; i++) {
        m = &in->missing[i];

        m->key = gms_tool_redis_key(t, GMS_KEY_TOKEN, gone[i], GMS_TOKEN_ID_LEN,
                                    &m->len);
        if (m->key == NULL) {
            return -1;
        }

        m->state = GMS_SYNC_UNCONFIRMED;
        in->nmissing++;
    }

    qsort(in->missing, in->nmissing, sizeof(gms_sync_missing_t),
          gms_sync_missing_cmp);

    counts->unlisted = in->nmissing;

    return 0;
}


/*
 * SCAN MATCH <prefix>token:*, never KEYS: Redis goes on serving
 * meanwhile.  The keys of the tokens the list does not have are kept, each
 * once (SCAN may return a key twice), for gms_sync_prune; the listed ones
 * found are marked, to count the tokens cached.
 */

int
gms_sync_prune_missing(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts)
{
    int                  rc;
    size_t               i, n, base;
    redisReply          *keys, *key;
    gms_tool_scan_t      scan;
    gms_sync_token_t    *listed;
    gms_sync_missing_t  *m;

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;

    if (gms_tool_redis_scan_open(t, &scan, GMS_KEY_TOKEN) != 0) {
        return -1;
    }

    rc = -1;

    do {
        keys = gms_tool_redis_scan_next(t, &scan);
        if (keys == NULL) {
            goto done;
        }

        for (i = 0; i < keys->elements; i++) {
            key = keys->element[i];

            if (key->type != REDIS_REPLY_STRING || key->len < base) {
                continue;
            }

            listed = gms_sync_list_find(&in->list, key->str + base,
                                        key->len - base);
            if (listed) {
                listed->cached = 1;
                continue;
            }

            if (in->nmissing == in->nalloc_missing) {
                n = in->nalloc_missing ? 2 * in->nalloc_missing : 64;
                m = realloc(in->missing, n * sizeof(gms_sync_missing_t));

                if (m == NULL) {
                    gms_tool_msgs_error(t, "out of memory");
                    goto done;
                }

                in->missing = m;
                in->nalloc_missing = n;
            }

            m = &in->missing[in->nmissing];

            m->key = malloc(key->len);
            if (m->key == NULL) {
                gms_tool_msgs_error(t, "out of memory");
                goto done;
            }

            memcpy(m->key, key->str, key->len);
            m->len = key->len;
            m->state = gms_token_id_valid(key->str + base, key->len - base)
                       ? GMS_SYNC_UNCONFIRMED : GMS_SYNC_NOT_A_TOKEN;
            in->nmissing++;
        }

    } while (!scan.done);

    rc = 0;

    if (in->nmissing > 1) {
        qsort(in->missing, in->nmissing, sizeof(gms_sync_missing_t),
              gms_sync_missing_cmp);

        for (n = 1, i = 1; i < in->nmissing; i++) {
            if (gms_sync_missing_cmp(&in->missing[n - 1], &in->missing[i])
                == 0)
            {
                free(in->missing[i].key);
                continue;
            }

            in->missing[n++] = in->missing[i];
        }

        in->nmissing = n;
    }

    /* a key that holds no token id is no token: the edge never reads it */
    for (i = 0; i < in->nmissing; i++) {
        if (in->missing[i].state != GMS_SYNC_NOT_A_TOKEN) {
            counts->unlisted++;
        }
    }

    counts->cached = counts->unlisted;

    for (i = 0; i < in->list.ntokens; i++) {
        counts->cached += in->list.tokens[i].cached;
    }

done:

    gms_tool_redis_scan_close(&scan);

    return rc;
}


/*
 * Each unlisted token asked of GMS's entity store, GMS_SYNC_CONFIRM at a
 * time, as aliases of one query: entityExists(urn) (entity.graphql, since
 * 0.13; EntityExistsResolver -> EntityService.exists, the key aspect in
 * the aspect table, not the search index; StatefulTokenService's own
 * revoked-token cache asks the same).  A revoked token is deleted there
 * (revokeAccessToken -> EntityService.deleteUrn).  A request that fails
 * leaves its tokens and those after it unconfirmed, for
 * gms_sync_prune_bound; the sync goes on (why says why, for the
 * warning), unless it was stopped (follow's SIGTERM): then it fails,
 * nothing written.
 */

int
gms_sync_prune_confirm(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_sync_input_t *in)
{
    int             quiet, rc;
    size_t          i;
    gms_graphql_t  *g;

    /* a failure here is the warning's, not an error line of its own */
    quiet = t->quiet;
    t->quiet = 1;
    t->error[0] = '\0';

    rc = GMS_TOOL_OK;

    g = gms_graphql_open(t, gms);

    for (i = 0; g != NULL && i < in->nmissing; /* void */ ) {
        if (gms_sync_confirm_batch(t, g, in, &i) != 0) {
            break;
        }
    }

    if (g == NULL || i < in->nmissing) {
        snprintf(in->why, sizeof(in->why), "entityExists: %s",
                 t->error[0] ? t->error : "no answer");

        if (gms->stop && *gms->stop) {
            rc = GMS_TOOL_GMS;
        }
    }

    gms_graphql_close(g);
    t->quiet = quiet;

    if (rc == GMS_TOOL_OK) {
        t->error[0] = '\0';
    }

    return rc;
}


/* one request, for the unconfirmed tokens from *from on; -1: it failed */

static int
gms_sync_confirm_batch(gms_tool_t *t, gms_graphql_t *g, gms_sync_input_t *in,
    size_t *from)
{
    int                  rc;
    char                 urn[sizeof(GMS_SYNC_TOKEN_URN) + GMS_TOKEN_ID_LEN];
    char                 name[32], *query;
    size_t               i, n, end, base, batch[GMS_SYNC_CONFIRM];
    json_t              *vars, *data, *v;
    gms_sync_missing_t  *m;

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;
    memcpy(urn, GMS_SYNC_TOKEN_URN, sizeof(GMS_SYNC_TOKEN_URN) - 1);

    for (n = 0, i = *from; i < in->nmissing && n < GMS_SYNC_CONFIRM; i++) {
        if (in->missing[i].state == GMS_SYNC_UNCONFIRMED) {
            batch[n++] = i;
        }
    }

    end = i;

    if (n == 0) {
        *from = end;
        return 0;
    }

    query = gms_graphql_aliases("entityExists", "String!", "entityExists",
                                "urn", "", n);
    vars = json_object();

    if (query == NULL || vars == NULL) {
        free(query);
        json_decref(vars);
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    for (i = 0; i < n; i++) {
        m = &in->missing[batch[i]];
        memcpy(urn + sizeof(GMS_SYNC_TOKEN_URN) - 1, m->key + base,
               GMS_TOKEN_ID_LEN);
        snprintf(name, sizeof(name), "v%zu", i);

        if (json_object_set_new(vars, name,
                                json_stringn(urn, sizeof(urn) - 1))
            != 0)
        {
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
        snprintf(name, sizeof(name), "a%zu", i);
        v = json_object_get(data, name);

        if (!json_is_boolean(v)) {
            /* Boolean, nullable: null is GMS's failure for that one */
            gms_tool_msgs_error(t, "GMS's answer has no true or false for %s",
                                name);
            rc = -1;
            continue;
        }

        in->missing[batch[i]].state = json_is_true(v) ? GMS_SYNC_EXISTS
                                                      : GMS_SYNC_GONE;
        in->nexists += json_is_true(v);
    }

    json_decref(data);

    if (rc == 0) {
        *from = end;
    }

    return rc;
}


/*
 * The unlisted tokens GMS did not answer for are pruned as before only
 * while they are no more than --max-prune of the cache: a revocation
 * still takes one sync when entityExists is out of reach, a listing
 * emptied by a reindex prunes nothing.  Over it, none is pruned (which
 * few to take would be a guess).
 */

void
gms_sync_prune_bound(const gms_tool_sync_conf_t *conf, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts)
{
    size_t                       i, unconfirmed, limit;
    const gms_tool_max_prune_t  *max;

    max = &conf->max_prune;

    if (!max->bounded) {
        return;
    }

    unconfirmed = 0;

    for (i = 0; i < in->nmissing; i++) {
        unconfirmed += in->missing[i].state == GMS_SYNC_UNCONFIRMED;
    }

    limit = max->is_percent ? (counts->cached * max->percent + 99) / 100
                            : max->count;

    if (unconfirmed <= limit) {
        return;
    }

    for (i = 0; i < in->nmissing; i++) {
        if (in->missing[i].state == GMS_SYNC_UNCONFIRMED) {
            in->missing[i].state = GMS_SYNC_HELD;
        }
    }

    counts->held = unconfirmed;
}


/*
 * The missing keys deleted, pipelined, but those GMS still has, those
 * held back and, in the script, those created in the last minute that
 * nothing confirmed gone.  One GMS's entity store no longer has is
 * deleted however young: the entity is there before the token is handed
 * out (StatefulTokenService.generateAccessToken: ingestProposal of
 * dataHubAccessTokenInfo, not async) and gone once it is revoked
 * (revokeAccessToken: deleteUrn), whatever the search index lags.
 */

int
gms_sync_prune(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts)
{
    char                *id;
    size_t               i, j, end, base, id_len;
    int64_t              grace, cutoff, deleted;
    long long            n;
    redisReply          *del;
    gms_sync_missing_t  *m;

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;
    grace = gms_tool_redis_now_ms() - GMS_SYNC_PRUNE_GRACE;

    counts->kept += in->nexists;

    if (in->nmissing && gms_tool_redis_scripts(t) != 0) {
        return -1;
    }

    for (i = 0; i < in->nmissing; i = end) {
        end = i + GMS_SYNC_BATCH < in->nmissing ? i + GMS_SYNC_BATCH
                                                : in->nmissing;

        for (j = i; j < end; j++) {
            m = &in->missing[j];

            if (m->state == GMS_SYNC_EXISTS || m->state == GMS_SYNC_HELD) {
                continue;
            }

            id = m->key + base;
            id_len = m->state == GMS_SYNC_NOT_A_TOKEN ? 0 : m->len - base;

            cutoff = m->state == GMS_SYNC_GONE ? GMS_SYNC_TIME_MAX : grace;

            if (t->noscript) {
                continue;
            }

            gms_tool_conn_append(t, "EVAL %s 1 %b %lld %b %b",
                                 gms_sync_delete_script, m->key, m->len,
                                 (long long) cutoff, in->channel,
                                 in->channel_len, id, id_len);
        }

        deleted = 0;

        for (j = i; j < end; j++) {
            m = &in->missing[j];

            m->deleted = 0;
            m->kept = m->state == GMS_SYNC_EXISTS
                      || m->state == GMS_SYNC_HELD;

            if (m->kept) {
                continue;
            }

            if (t->noscript) {
                /* the script's step, without it */
                id_len = m->state == GMS_SYNC_NOT_A_TOKEN ? 0
                                                          : m->len - base;
                cutoff = m->state == GMS_SYNC_GONE ? GMS_SYNC_TIME_MAX
                                                   : grace;

                if (gms_tool_redis_delete(t, m->key, m->len, cutoff,
                                          in->channel, in->channel_len,
                                          m->key + base, id_len, &n)
                    != 0)
                {
                    return -1;
                }

            } else {
                (void) gms_tool_conn_get_reply(t, &del);

                if (gms_tool_redis_reply_error(t, del, "EVAL") != 0) {
                    return -1;
                }

                n = del->type == REDIS_REPLY_INTEGER ? del->integer : 0;
                freeReplyObject(del);
            }

            if (n < 0) {
                counts->kept++;
                m->kept = 1;

            } else {
                counts->pruned += n;
                deleted += n;
            }

            m->deleted = n > 0;
        }

        if (deleted && gms_sync_prune_republish(t, in, i, end) != 0) {
            return -1;
        }
    }

    return 0;
}


/*
 * follow: the unlisted tokens still cached after this cycle (GMS has
 * them, held back, young and unconfirmed), for the next cycle by spans
 * to ask again, as a whole listing's SCAN would find them: a token its
 * span no longer lists is never forgotten until it is pruned or listed.
 */

int
gms_sync_prune_pending(gms_tool_t *t, gms_sync_input_t *in,
    gms_sync_spans_t *next)
{
    size_t               i, n, base;
    gms_sync_missing_t  *m;

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;

    for (n = 0, i = 0; i < in->nmissing; i++) {
        n += in->missing[i].kept
             && in->missing[i].state != GMS_SYNC_NOT_A_TOKEN;
    }

    if (n == 0) {
        return 0;
    }

    next->pending = malloc(n * sizeof(*next->pending));
    if (next->pending == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    for (i = 0; i < in->nmissing; i++) {
        m = &in->missing[i];

        if (m->kept && m->state != GMS_SYNC_NOT_A_TOKEN) {
            memcpy(next->pending[next->npending], m->key + base,
                   GMS_TOKEN_ID_LEN);
            next->pending[next->npending++][GMS_TOKEN_ID_LEN] = '\0';
        }
    }

    return 0;
}


/* with replicas, the pruned ids published again after WAIT */

static int
gms_sync_prune_republish(gms_tool_t *t, gms_sync_input_t *in, size_t from,
    size_t to)
{
    size_t               i, n, base;
    redisReply          *reply;
    gms_sync_missing_t  *m;

    if (gms_tool_redis_wait(t) == 0) {
        return 0;
    }

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;
    n = 0;

    for (i = from; i < to; i++) {
        m = &in->missing[i];

        if (m->deleted && m->state != GMS_SYNC_NOT_A_TOKEN) {
            gms_tool_conn_append(t, "PUBLISH %b %b", in->channel,
                                 in->channel_len, m->key + base,
                                 m->len - base);
            n++;
        }
    }

    for (i = 0; i < n; i++) {
        (void) gms_tool_conn_get_reply(t, &reply);

        if (gms_tool_redis_reply_error(t, reply, "PUBLISH") != 0) {
            return -1;
        }

        freeReplyObject(reply);
    }

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

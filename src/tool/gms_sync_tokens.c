
/*
 * gms-token sync (and every cycle of follow): the cached tokens made equal
 * to DataHub's own list, which gms_sync_list.c reads and checks whole
 * first, so that bad input or a failed page changes nothing.  Every token
 * is written as 'put' writes it, in pipelined batches, but those of the
 * users in <prefix>inactive (DataHub 1.2+ refuses them), which are deleted
 * instead.  --prune walks the cached tokens with SCAN and deletes those
 * the list does not have, but not on the listing's word alone: the list
 * is DataHub's search index, which a reindex or a restore empties while
 * GMS still takes every token.  With --gms, each unlisted token is asked
 * of GMS's entity store (gms_sync_prune_confirm): one it still has is
 * kept, one it no longer has is pruned; those it could not answer for are
 * pruned only as long as they are no more than --max-prune of the cache.  Of
 * those nothing confirmed gone (from stdin, or unanswered), one created in
 * the last minute is kept (the index lags behind a new token); one the
 * entity store no longer has is pruned however young, so that a token
 * revoked a second after it was made is refused at the next cycle.
 * follow asks the unlisted tokens a cycle kept again at the next one
 * (gms_sync_prune_pending), though that one go by spans.
 * Every token added, changed, deleted as expired or pruned is published
 * on <prefix>invalidate: an edge drops what it cached for it, the "no such
 * token" of a token tried before it was listed included.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_sync_tokens.h"
#include "gms_sync_prune.h"
#include "gms_sync_list.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_tool_progress.h"


/* a listing lacking this many cached tokens, and most, is a warning */
#define GMS_SYNC_SHRINK_MIN    10

#define GMS_SYNC_FOREVER       "9007199254740992"


/* what becomes of a listed token */
typedef enum {
    GMS_SYNC_PUT = 0,
    GMS_SYNC_EXPIRED,                      /* deleted */
    GMS_SYNC_INACTIVE                      /* its user's: deleted */
} gms_sync_action_e;


static int gms_sync_whole(gms_tool_t *t, const gms_tool_sync_conf_t *conf,
    gms_sync_input_t *in);
static void gms_sync_revoked(const gms_tool_sync_conf_t *conf,
    gms_sync_list_t *list, gms_tool_sync_counts_t *counts);
static int gms_sync_inactive_read(gms_tool_t *t, gms_sync_input_t *in);
static int gms_sync_inactive_has(gms_sync_input_t *in, const char *actor,
    size_t len);
static int gms_sync_write(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts);
static int gms_sync_delete_plain(gms_tool_t *t, gms_sync_input_t *in,
    size_t from, size_t to);
static void gms_sync_as_put(const gms_sync_token_t *s, int64_t now,
    gms_tool_token_t *tok);
static int gms_sync_publish(gms_tool_t *t, gms_sync_input_t *in,
    size_t from, size_t to);
static void gms_sync_warning(const gms_tool_sync_conf_t *conf,
    gms_sync_input_t *in, gms_tool_sync_counts_t *counts);
static int gms_sync_health(gms_tool_t *t, gms_tool_sync_counts_t *counts);
static int gms_sync_holders(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_holders_t *holders);
static int gms_sync_holders_kept(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_holders_t *holders);
static void gms_sync_free(gms_sync_input_t *in);


int
gms_sync_tokens_run(gms_tool_t *t, const gms_tool_sync_conf_t *conf,
    gms_tool_sync_counts_t *counts, gms_tool_holders_t *holders)
{
    int                        rc, whole, writing;
    char                     (*gone)[GMS_TOKEN_ID_LEN + 1];
    gms_sync_input_t           in;
    gms_sync_spans_t           next;
    gms_sync_spans_counts_t    spans;
    const gms_graphql_conf_t  *gms;

    memset(&in, 0, sizeof(gms_sync_input_t));
    memset(&next, 0, sizeof(gms_sync_spans_t));
    memset(&spans, 0, sizeof(gms_sync_spans_counts_t));
    gone = NULL;
    writing = 0;

    gms = conf->gms;
    in.list.where = gms ? "page " : "stdin:";

    /* follow: by spans of createdAt, unless the whole listing is due */
    whole = 1;

    if (gms && conf->spans) {
        whole = gms_sync_spans_due(t, conf->spans);

        if (whole < 0) {
            rc = GMS_TOOL_REDIS;
            goto done;
        }
    }

    if (!whole) {
        rc = gms_sync_spans_fetch(t, gms, conf->page_size, conf->spans,
                                  &in.list, &gone, &spans);

        if (rc == GMS_SYNC_SPANS_WHOLE) {
            gms_sync_list_free(&in.list);
            memset(&in.list, 0, sizeof(gms_sync_list_t));
            in.list.where = "page ";
            whole = 1;

        } else if (rc != GMS_TOOL_OK) {
            goto done;
        }
    }

    if (whole) {
        rc = gms_sync_whole(t, conf, &in);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }
    }

    if (t->conn == NULL) {
        rc = gms_tool_redis_connect(t);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }
    }

    rc = GMS_TOOL_REDIS;

    in.channel = gms_tool_redis_key(t, GMS_KEY_INVALIDATE, "", 0,
                                    &in.channel_len);
    if (in.channel == NULL) {
        goto done;
    }

    if (!whole) {
        if (gms_sync_prune_gone(t, &in, gone, &spans,
                                conf->spans->ntokens + conf->spans->npending,
                                counts)
            != 0)
        {
            goto done;
        }

    } else if (conf->prune && gms_sync_prune_missing(t, &in, counts) != 0) {
        goto done;
    }

    if (conf->prune && in.nmissing) {
        if (gms) {
            rc = gms_sync_prune_confirm(t, gms, &in);
            if (rc != GMS_TOOL_OK) {
                goto done;
            }

            rc = GMS_TOOL_REDIS;

        } else {
            snprintf(in.why, sizeof(in.why), "stdin: no GMS to ask");
        }

        gms_sync_prune_bound(conf, &in, counts);
    }

    /*
     * From here to the writes' end, follow's stream waits: what the cycle
     * read of <prefix>inactive and of the stream's deletions holds until
     * its tokens are written
     */
    if (conf->writing) {
        conf->writing(conf->revoked_data, 1);
        writing = 1;
    }

    if (gms_sync_inactive_read(t, &in) != 0) {
        goto done;
    }

    if (conf->revoked) {
        gms_sync_revoked(conf, &in.list, counts);
    }

    /* the spans of this listing, kept for the next cycle if this one works */
    if (conf->spans
        && gms_sync_spans_make(t, &in.list, conf->page_size, &next) != 0)
    {
        goto done;
    }

    counts->tokens = in.list.ntokens;

    if (gms_sync_write(t, &in, counts) != 0) {
        goto done;
    }

    if (writing) {
        conf->writing(conf->revoked_data, 0);
        writing = 0;
    }

    if ((conf->prune && gms_sync_prune(t, &in, counts) != 0)
        || (conf->spans && conf->prune
            && gms_sync_prune_pending(t, &in, &next) != 0)
        || (holders && gms_sync_holders(t, &in, holders) != 0))
    {
        goto done;
    }

    /*
     * Every cached token the listing lacks was asked of GMS and is kept
     * or gone: the holders are whole, the listing short or not (unless
     * some were held back, their word missing)
     */
    if (holders && gms && conf->prune && counts->held == 0) {
        holders->listed = holders->n;
        holders->total = (int64_t) holders->n;
    }

    gms_sync_warning(conf, &in, counts);

    if (conf->health && gms_sync_health(t, counts) != 0) {
        if (holders) {
            gms_sync_tokens_holders_free(holders);
        }

        goto done;
    }

    if (conf->spans) {
        if (whole && gms_sync_spans_mark(t, &next) != 0) {
            if (holders) {
                gms_sync_tokens_holders_free(holders);
            }

            goto done;
        }

        gms_sync_spans_take(conf->spans, &next, whole);
    }

    rc = GMS_TOOL_OK;

done:

    if (writing) {
        conf->writing(conf->revoked_data, 0);
    }

    gms_sync_spans_free(&next);
    gms_sync_free(&in);
    free(gone);

    return rc;
}


/*
 * Tokens listed apart from a sync (follow's users read again: a user
 * active again has their tokens back at once), written as a sync writes
 * them: each as 'put' writes it and published, those of the users in
 * <prefix>inactive and the expired deleted.  The list stays the caller's.
 */

int
gms_sync_tokens_write(gms_tool_t *t, gms_sync_list_t *list,
    gms_tool_sync_counts_t *counts)
{
    int               rc;
    gms_sync_input_t  in;

    memset(&in, 0, sizeof(gms_sync_input_t));

    if (t->conn == NULL) {
        rc = gms_tool_redis_connect(t);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    in.list = *list;
    rc = GMS_TOOL_REDIS;

    in.channel = gms_tool_redis_key(t, GMS_KEY_INVALIDATE, "", 0,
                                    &in.channel_len);

    if (in.channel != NULL
        && gms_sync_inactive_read(t, &in) == 0
        && gms_sync_write(t, &in, counts) == 0)
    {
        rc = GMS_TOOL_OK;
    }

    /* gms_sync_free less the list */
    memset(&in.list, 0, sizeof(gms_sync_list_t));
    gms_sync_free(&in);

    return rc;
}


/* the listing read whole: from GMS, or the pages on stdin */

static int
gms_sync_whole(gms_tool_t *t, const gms_tool_sync_conf_t *conf,
    gms_sync_input_t *in)
{
    int                        rc;
    const gms_graphql_conf_t  *gms;

    gms = conf->gms;

    rc = gms ? gms_sync_list_fetch(t, gms, conf->page_size, &in->list)
             : gms_sync_list_stdin(t, &in->list);

    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    if (in->list.pages == 0) {
        gms_tool_msgs_error(t, "stdin: no listAccessTokens page");
        return GMS_TOOL_USAGE;
    }

    if (gms_sync_list_unique(t, &in->list) != 0) {
        return GMS_TOOL_USAGE;
    }

    /*
     * A listing short of its total: from stdin nothing may be pruned on
     * it.  From GMS it is what a token revoked while the pages were read
     * leaves (the tokens after it move up a place, and one may fall
     * between two pages): each cached token it lacks is asked of GMS's
     * entity store below, which says which to keep, so a revocation is
     * not put off to a cycle after next at tens of thousands of tokens.
     */
    if (conf->prune && gms == NULL
        && in->list.total > (int64_t) in->list.ntokens)
    {
        gms_tool_msgs_error(t, "stdin: %zu tokens, but listAccessTokens has a "
                            "total of %lld: the list is incomplete, refusing "
                            "to --prune", in->list.ntokens,
                            (long long) in->list.total);
        return GMS_TOOL_USAGE;
    }

    return GMS_TOOL_OK;
}


/*
 * The tokens the change stream deleted after this listing was read
 * (conf->revoked says which): out of the listing, so that they are
 * neither written back nor counted, listed or cached.  Asked just before
 * the writes, the listing's last step.
 */

static void
gms_sync_revoked(const gms_tool_sync_conf_t *conf, gms_sync_list_t *list,
    gms_tool_sync_counts_t *counts)
{
    size_t             i, n;
    gms_sync_token_t  *tok;

    for (n = 0, i = 0; i < list->ntokens; i++) {
        tok = &list->tokens[i];

        if (conf->revoked(conf->revoked_data, tok->id) != 1) {
            list->tokens[n++] = *tok;
            continue;
        }

        counts->cached -= tok->cached || tok->known;
        free(tok->actor);
    }

    list->total -= list->total >= (int64_t) (i - n) ? (int64_t) (i - n) : 0;
    list->ntokens = n;
}


/*
 * --max-prune N (tokens) or P% (of the tokens cached), 0 included: never
 * without GMS's word.  NULL: the default, GMS_TOOL_MAX_PRUNE_DEFAULT.
 */

int
gms_sync_tokens_max_prune_option(gms_tool_t *t, const char *value,
    gms_tool_max_prune_t *max)
{
    char                *end;
    const char          *s;
    unsigned long long   n;

    s = value ? value : GMS_TOOL_MAX_PRUNE_DEFAULT;

    memset(max, 0, sizeof(gms_tool_max_prune_t));

    errno = 0;
    n = strtoull(s, &end, 10);

    if (errno || end == s || s[0] < '0' || s[0] > '9'
        || (*end != '\0' && strcmp(end, "%") != 0)
        || (*end == '%' && n > 100) || n > 1000000000)
    {
        gms_tool_msgs_error(t, "--max-prune: '%s' is neither a count of tokens "
                            "nor a percentage from 0%% to 100%%",
                            gms_tool_msgs_shown(s));
        return -1;
    }

    max->bounded = 1;

    if (*end == '%') {
        max->is_percent = 1;
        max->percent = (unsigned) n;

    } else {
        max->count = (size_t) n;
    }

    return 0;
}


void
gms_sync_tokens_print(const gms_tool_sync_counts_t *counts)
{
    printf("tokens=%zu added=%zu updated=%zu unchanged=%zu expired=%zu "
           "pruned=%zu kept=%zu", counts->tokens, counts->added,
           counts->updated, counts->unchanged, counts->expired,
           counts->pruned, counts->kept);

    /* what most syncs never see is said only when it happens */
    if (counts->held) {
        printf(" held=%zu", counts->held);
    }

    if (counts->inactive) {
        printf(" inactive=%zu", counts->inactive);
    }

    putchar('\n');
}


void
gms_sync_tokens_holders_free(gms_tool_holders_t *holders)
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


/*
 * The holders as the cache has them, without asking GMS: each cached
 * token's actor (SCAN, then HGET pipelined by the batch).  follow's stream
 * resumed at its kept offset lists no token: the privileges mirror and
 * the users' status start from these until the next whole listing.
 */

int
gms_sync_tokens_holders_cached(gms_tool_t *t, gms_tool_holders_t *holders)
{
    int               rc;
    char            **urns, **ids;
    size_t            i, n, base, nalloc;
    redisReply       *keys, *key, *actor;
    gms_tool_scan_t   scan;

    memset(holders, 0, sizeof(gms_tool_holders_t));

    if (t->conn == NULL && gms_tool_redis_connect(t) != GMS_TOOL_OK) {
        return -1;
    }

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;

    if (gms_tool_redis_scan_open(t, &scan, GMS_KEY_TOKEN) != 0) {
        return -1;
    }

    rc = -1;
    nalloc = 0;

    do {
        keys = gms_tool_redis_scan_next(t, &scan);
        if (keys == NULL) {
            goto done;
        }

        n = 0;

        for (i = 0; i < keys->elements; i++) {
            key = keys->element[i];

            if (key->type == REDIS_REPLY_STRING && key->len > base
                && gms_token_id_valid(key->str + base, key->len - base))
            {
                gms_tool_conn_append(t, "HGET %b actor", key->str, key->len);
                n++;
            }
        }

        if (holders->n + n > nalloc) {
            nalloc = 2 * (holders->n + n);

            urns = realloc(holders->urns, nalloc * sizeof(char *));
            if (urns != NULL) {
                holders->urns = urns;
            }

            ids = realloc(holders->ids, nalloc * sizeof(char *));
            if (ids != NULL) {
                holders->ids = ids;
            }

            if (urns == NULL || ids == NULL) {
                gms_tool_msgs_error(t, "out of memory");
                goto done;
            }
        }

        for (i = 0; n; i++) {
            key = keys->element[i];

            if (!(key->type == REDIS_REPLY_STRING && key->len > base
                  && gms_token_id_valid(key->str + base, key->len - base)))
            {
                continue;
            }

            n--;

            (void) gms_tool_conn_get_reply(t, &actor);

            if (gms_tool_redis_reply_error(t, actor, "HGET") != 0) {
                goto done;
            }

            /* one deleted since the SCAN has none */
            if (actor->type != REDIS_REPLY_STRING
                || !gms_token_actor_valid(actor->str, actor->len))
            {
                freeReplyObject(actor);
                continue;
            }

            holders->urns[holders->n] = strndup(actor->str, actor->len);
            holders->ids[holders->n] = strndup(key->str + base,
                                               key->len - base);
            freeReplyObject(actor);

            if (holders->urns[holders->n] == NULL
                || holders->ids[holders->n] == NULL)
            {
                free(holders->urns[holders->n]);
                free(holders->ids[holders->n]);
                gms_tool_msgs_error(t, "out of memory");
                goto done;
            }

            holders->n++;
        }

    } while (!scan.done);

    holders->listed = holders->n;
    holders->total = (int64_t) holders->n;

    rc = 0;

done:

    gms_tool_redis_scan_close(&scan);

    if (rc != 0) {
        gms_sync_tokens_holders_free(holders);
    }

    return rc;
}


/*
 * The users gms_sync_users.c found inactive, once a sync: none of their
 * tokens is written (and a cached one is deleted), so that a user made
 * active again, taken out of the set, has them back at the next sync.
 * A set that does not exist is empty.
 */

static int
gms_sync_inactive_read(gms_tool_t *t, gms_sync_input_t *in)
{
    char        *key;
    size_t       i, key_len;
    redisReply  *reply;

    if (t->inactive_mark) {
        /* --inactive mark: their tokens cached too, the edge decides */
        return 0;
    }

    key = gms_tool_redis_key(t, GMS_KEY_INACTIVE, "", 0, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_conn_command(t, "SMEMBERS %b", key, key_len);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "SMEMBERS") != 0) {
        return -1;
    }

    if (reply->type != REDIS_REPLY_ARRAY) {
        gms_tool_msgs_error(t, "redis %s: SMEMBERS %sinactive: not an array",
                            t->redis, t->prefix);
        freeReplyObject(reply);
        return -1;
    }

    for (i = 0; i < reply->elements; i++) {
        if (reply->element[i]->type != REDIS_REPLY_STRING) {
            gms_tool_msgs_error(t, "redis %s: SMEMBERS %sinactive: a member "
                                "that is not a string", t->redis, t->prefix);
            freeReplyObject(reply);
            return -1;
        }
    }

    if (reply->elements > 1) {
        qsort(reply->element, reply->elements, sizeof(redisReply *),
              gms_tool_redis_reply_cmp);
    }

    in->inactive = reply;

    return 0;
}


static int
gms_sync_inactive_has(gms_sync_input_t *in, const char *actor, size_t len)
{
    redisReply   key, *k;

    if (in->inactive == NULL || in->inactive->elements == 0) {
        return 0;
    }

    memset(&key, 0, sizeof(redisReply));
    key.str = (char *) actor;
    key.len = len;
    k = &key;

    return bsearch(&k, in->inactive->element, in->inactive->elements,
                   sizeof(redisReply *), gms_tool_redis_reply_cmp)
           != NULL;
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

    now = gms_tool_redis_now_ms();

    /* whether the deletions may be scripts, known before any is queued */

    for (i = 0; i < in->list.ntokens; i++) {
        s = &in->list.tokens[i];

        if (!s->known
            && ((s->expires_at != 0 && s->expires_at <= now)
                || gms_sync_inactive_has(in, s->actor, s->actor_len)))
        {
            if (gms_tool_redis_scripts(t) != 0) {
                return -1;
            }

            break;
        }
    }

    for (i = 0; i < in->list.ntokens; i = end) {
        end = i + GMS_SYNC_BATCH < in->list.ntokens ? i + GMS_SYNC_BATCH
                                                    : in->list.ntokens;

        for (j = i; j < end; j++) {
            s = &in->list.tokens[j];

            if (s->known) {
                continue;
            }

            if (s->expires_at != 0 && s->expires_at <= now) {
                s->action = GMS_SYNC_EXPIRED;

            } else if (gms_sync_inactive_has(in, s->actor, s->actor_len)) {
                s->action = GMS_SYNC_INACTIVE;

            } else {
                s->action = GMS_SYNC_PUT;
                gms_sync_as_put(s, now, &tok);

                if (gms_tool_redis_put_append(t, s->id, &tok) != 0) {
                    return -1;
                }

                continue;
            }

            if (t->noscript) {
                /* after the batch's replies: gms_sync_delete_plain() */
                continue;
            }

            key = gms_tool_redis_key(t, GMS_KEY_TOKEN, s->id, GMS_TOKEN_ID_LEN,
                                     &key_len);
            if (key == NULL) {
                return -1;
            }

            gms_tool_conn_append(t, "EVAL %s 1 %b %s %b %s",
                                 gms_sync_delete_script, key, key_len,
                                 GMS_SYNC_FOREVER, in->channel, in->channel_len,
                                 s->id);
            free(key);
        }

        for (j = i; j < end; j++) {
            s = &in->list.tokens[j];

            /* a cycle by spans: as the last cycle wrote it */
            if (s->known) {
                counts->unchanged++;
                continue;
            }

            if (s->action != GMS_SYNC_PUT) {
                if (!t->noscript) {
                    (void) gms_tool_conn_get_reply(t, &reply);

                    if (gms_tool_redis_reply_error(t, reply, "EVAL") != 0) {
                        return -1;
                    }

                    s->deleted = reply->type == REDIS_REPLY_INTEGER
                                 && reply->integer > 0;
                    freeReplyObject(reply);
                }

                if (s->action == GMS_SYNC_EXPIRED) {
                    counts->expired++;

                } else {
                    counts->inactive++;
                }

                continue;
            }

            gms_sync_as_put(s, now, &tok);

            if (gms_tool_redis_put_read(t, &tok, &rc) != 0) {
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

        if (t->noscript && gms_sync_delete_plain(t, in, i, end) != 0) {
            return -1;
        }

        if (gms_sync_publish(t, in, i, end) != 0) {
            return -1;
        }

        gms_tool_progress_show(t->progress, "tokens written", end,
                               in->list.ntokens);
    }

    return 0;
}


/*
 * Where the server refuses scripts: the batch's expired and inactive
 * tokens deleted one by one, once the pipeline's replies are read, each
 * with its id published in the same transaction.
 */

static int
gms_sync_delete_plain(gms_tool_t *t, gms_sync_input_t *in, size_t from,
    size_t to)
{
    int                rc;
    char              *key;
    size_t             j, key_len;
    long long          n;
    gms_sync_token_t  *s;

    for (j = from; j < to; j++) {
        s = &in->list.tokens[j];

        if (s->known || s->action == GMS_SYNC_PUT) {
            continue;
        }

        key = gms_tool_redis_key(t, GMS_KEY_TOKEN, s->id, GMS_TOKEN_ID_LEN,
                                 &key_len);
        if (key == NULL) {
            return -1;
        }

        rc = gms_tool_redis_delete(t, key, key_len, GMS_SYNC_TIME_MAX,
                                   in->channel, in->channel_len, s->id,
                                   strlen(s->id), &n);
        free(key);

        if (rc != 0) {
            return -1;
        }

        s->deleted = n > 0;
    }

    return 0;
}


/*
 * A listed token, as 'put' would write it: DataHub gives no type.  A
 * createdAt still to come (GMS's clock ahead of ours) is taken as now:
 * the grace period of --prune counts on our clock, never longer than it.
 */

static void
gms_sync_as_put(const gms_sync_token_t *s, int64_t now, gms_tool_token_t *tok)
{
    memset(tok, 0, sizeof(gms_tool_token_t));
    tok->actor = s->actor;
    tok->actor_len = s->actor_len;
    tok->expires_at = s->expires_at;
    tok->created_at = s->created_at > now ? now : s->created_at;
}


/*
 * The ids of a batch's added and changed tokens, pipelined.  After the
 * writes, not with them: only their replies tell what changed.  With
 * replicas, after they acknowledged the writes (WAIT), and then the
 * deleted ones again (their script published them at once, before the
 * replicas had the deletion: see gms_tool_redis_wait).
 */

static int
gms_sync_publish(gms_tool_t *t, gms_sync_input_t *in, size_t from,
    size_t to)
{
    int          replicas;
    size_t       i, n;
    redisReply  *reply;

    for (i = from; i < to; i++) {
        if (in->list.tokens[i].changed || in->list.tokens[i].deleted) {
            break;
        }
    }

    replicas = i < to ? gms_tool_redis_wait(t) : 0;
    n = 0;

    for (i = from; i < to; i++) {
        if (in->list.tokens[i].changed
            || (replicas && in->list.tokens[i].deleted))
        {
            gms_tool_conn_append(t, "PUBLISH %b %s", in->channel,
                                 in->channel_len, in->list.tokens[i].id);
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


/*
 * A listing that lacks most of the cache (at least GMS_SYNC_SHRINK_MIN
 * tokens, or all of them), or unlisted tokens held back: one line with
 * the numbers, for sync's stderr and follow's log and <prefix>sync.
 */

static void
gms_sync_warning(const gms_tool_sync_conf_t *conf, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts)
{
    int     n;
    size_t  len, limit;

    len = 0;

    if (counts->unlisted
        && (in->list.ntokens == 0
            || (2 * counts->unlisted > counts->cached
                && counts->unlisted >= GMS_SYNC_SHRINK_MIN)))
    {
        n = snprintf(counts->warning, sizeof(counts->warning),
                     "the listing lacks %zu of the %zu tokens cached "
                     "(%zu listed; GMS's search index reindexed or "
                     "restored?): %zu kept, GMS still has them; %zu pruned; "
                     "%zu held back", counts->unlisted, counts->cached,
                     in->list.ntokens, in->nexists, counts->pruned,
                     counts->held);
        len = n < 0 ? 0 : (size_t) n;
    }

    if (counts->held && len < sizeof(counts->warning)) {
        limit = conf->max_prune.is_percent
                ? (counts->cached * conf->max_prune.percent + 99) / 100
                : conf->max_prune.count;

        snprintf(counts->warning + len, sizeof(counts->warning) - len,
                 "%s%zu unlisted tokens not confirmed gone (%.200s), more than "
                 "--max-prune %zu of %zu cached: none pruned",
                 len ? "; " : "", counts->held, in->why, limit,
                 counts->cached);
    }
}


/*
 * follow: the warning (or "" once there is none) into <prefix>sync,
 * beside follow's own fields; warning_at stays, as error_at does.
 */

static int
gms_sync_health(gms_tool_t *t, gms_tool_sync_counts_t *counts)
{
    char        *key;
    size_t       key_len;
    redisReply  *reply;

    key = gms_tool_redis_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return -1;
    }

    if (counts->warning[0]) {
        reply = gms_tool_conn_command(t, "HSET %b warning %s warning_at %lld",
                                      key, key_len, counts->warning,
                                      (long long) gms_tool_redis_now_ms());

    } else {
        reply = gms_tool_conn_command(t, "HSET %b warning %s", key, key_len,
                                      "");
    }

    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HSET") != 0) {
        return -1;
    }

    freeReplyObject(reply);

    return 0;
}


/*
 * The users of the tokens listed, handed over to the privileges mirror
 * and the users' status, then those of the unlisted tokens GMS still has
 * (gms_sync_holders_kept): they still hold a token GMS takes.
 */

static int
gms_sync_holders(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_holders_t *holders)
{
    size_t  i, n;

    memset(holders, 0, sizeof(gms_tool_holders_t));

    holders->listed = in->list.ntokens;
    holders->total = in->list.total;

    n = in->list.ntokens + in->nexists;

    if (n == 0) {
        return 0;
    }

    holders->urns = calloc(n, sizeof(char *));
    holders->ids = calloc(n, sizeof(char *));

    if (holders->urns == NULL || holders->ids == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        free(holders->urns);
        free(holders->ids);
        memset(holders, 0, sizeof(gms_tool_holders_t));
        return -1;
    }

    for (i = 0; i < in->list.ntokens; i++) {
        holders->ids[i] = strdup(in->list.tokens[i].id);

        if (holders->ids[i] == NULL) {
            gms_tool_msgs_error(t, "out of memory");
            holders->n = i;
            gms_sync_tokens_holders_free(holders);
            return -1;
        }

        holders->urns[i] = in->list.tokens[i].actor;
        in->list.tokens[i].actor = NULL;
    }

    holders->n = in->list.ntokens;

    if (in->nexists && gms_sync_holders_kept(t, in, holders) != 0) {
        gms_sync_tokens_holders_free(holders);
        return -1;
    }

    return 0;
}


/* their actor, as the cache has it (HGET, pipelined); one gone since: none */

static int
gms_sync_holders_kept(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_holders_t *holders)
{
    size_t               i, j, end, n, base;
    char                *urn, *id;
    redisReply          *actor;
    gms_sync_missing_t  *m;

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;

    for (i = 0; i < in->nmissing; i = end) {
        end = i + GMS_SYNC_BATCH < in->nmissing ? i + GMS_SYNC_BATCH
                                                : in->nmissing;
        n = 0;

        for (j = i; j < end; j++) {
            m = &in->missing[j];

            if (m->state == GMS_SYNC_EXISTS) {
                gms_tool_conn_append(t, "HGET %b actor", m->key, m->len);
                n++;
            }
        }

        for (j = i; n; j++) {
            m = &in->missing[j];

            if (m->state != GMS_SYNC_EXISTS) {
                continue;
            }

            n--;

            (void) gms_tool_conn_get_reply(t, &actor);

            if (gms_tool_redis_reply_error(t, actor, "HGET") != 0) {
                return -1;
            }

            if (actor->type != REDIS_REPLY_STRING
                || !gms_token_actor_valid(actor->str, actor->len))
            {
                freeReplyObject(actor);
                continue;
            }

            urn = strndup(actor->str, actor->len);
            id = strndup(m->key + base, GMS_TOKEN_ID_LEN);
            freeReplyObject(actor);

            if (urn == NULL || id == NULL) {
                free(urn);
                free(id);
                gms_tool_msgs_error(t, "out of memory");
                return -1;
            }

            holders->urns[holders->n] = urn;
            holders->ids[holders->n] = id;
            holders->n++;
        }
    }

    return 0;
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

    if (in->inactive) {
        freeReplyObject(in->inactive);
    }
}


/*
 * gms-token's inactive users: what a check of the users found, applied in
 * Redis (gms_sync_users.c says what and why): <prefix>inactive and
 * <prefix>deleted changed, an inactive user's cached tokens deleted and
 * their ids published on <prefix>invalidate, in pipelined batches.
 */


#include <stdlib.h>
#include <string.h>

#include "gms_users_apply.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/*
 * Deletes a cached token and publishes its id on ARGV[1] in the same step;
 * a token no longer cached is not published again.
 */
static const char  gms_users_drop_script[] =
    "if redis.call('DEL', KEYS[1]) == 0 then return 0 end\n"
    "redis.call('PUBLISH', ARGV[1], ARGV[2])\n"
    "return 1\n";


static int gms_users_deleted(gms_tool_t *t, gms_users_t *u);
static int gms_users_publish(gms_tool_t *t, gms_users_t *u);
static int gms_users_drop(gms_tool_t *t, gms_users_t *u,
    gms_tool_users_counts_t *counts);
static int gms_users_dropped(gms_tool_t *t, gms_users_t *u,
    const size_t *batch, size_t n, gms_tool_users_counts_t *counts);
static int gms_users_republish(gms_tool_t *t, gms_users_t *u);


/*
 * The set made equal to the inactive users, then their tokens deleted:
 * once a user is in the set, the token cycle no longer writes a token of
 * theirs that this deletes.
 */

int
gms_users_apply(gms_tool_t *t, gms_users_t *u,
    gms_tool_users_counts_t *counts)
{
    size_t             i, j, k, n;
    redisReply        *reply;
    gms_users_user_t  *user;

    for (i = 0; i < u->n; i = j) {
        n = 0;

        for (j = i; j < u->n && n < GMS_USERS_PIPELINE; j++) {
            user = &u->users[j];

            if (user->state == GMS_USERS_INACTIVE && !user->was) {
                gms_tool_conn_append(t, "SADD %b %b", u->set, u->set_len,
                                     user->urn, user->len);
                n++;

            } else if (user->state == GMS_USERS_ACTIVE && user->was) {
                gms_tool_conn_append(t, "SREM %b %b", u->set, u->set_len,
                                     user->urn, user->len);
                n++;
            }
        }

        for (k = i; k < j; k++) {
            user = &u->users[k];

            if (!((user->state == GMS_USERS_INACTIVE && !user->was)
                  || (user->state == GMS_USERS_ACTIVE && user->was)))
            {
                continue;
            }

            (void) gms_tool_conn_get_reply(t, &reply);

            if (gms_tool_redis_reply_error(t, reply,
                                           user->was ? "SREM" : "SADD")
                != 0)
            {
                return -1;
            }

            if (reply->type == REDIS_REPLY_INTEGER && reply->integer > 0) {
                user->changed = 1;

                if (user->was) {
                    counts->reactivated++;

                } else {
                    counts->newly++;
                }
            }

            freeReplyObject(reply);
        }
    }

    if (gms_users_deleted(t, u) != 0) {
        return -1;
    }

    return t->inactive_mark ? gms_users_publish(t, u)
                            : gms_users_drop(t, u, counts);
}


/*
 * <prefix>deleted: which inactive users are so only for having no
 * corpUserKey (GMS 0.15 to 1.1 still serves them).  Kept a subset of the
 * set: a user known inactive goes in or out by why, a user active again
 * out; a user GMS failed on stays as it was.
 */

static int
gms_users_deleted(gms_tool_t *t, gms_users_t *u)
{
    size_t             i, j, k, n;
    redisReply        *reply;
    gms_users_user_t  *user;

    for (i = 0; i < u->n; i = j) {
        n = 0;

        for (j = i; j < u->n && n < GMS_USERS_PIPELINE; j++) {
            user = &u->users[j];

            if (user->state == GMS_USERS_INACTIVE
                || (user->state == GMS_USERS_ACTIVE && user->was))
            {
                gms_tool_conn_append(t, user->deleted ? "SADD %b %b"
                                                      : "SREM %b %b",
                                     u->deleted, u->deleted_len,
                                     user->urn, user->len);
                n++;
            }
        }

        for (k = i; k < j; k++) {
            user = &u->users[k];

            if (!(user->state == GMS_USERS_INACTIVE
                  || (user->state == GMS_USERS_ACTIVE && user->was)))
            {
                continue;
            }

            (void) gms_tool_conn_get_reply(t, &reply);

            if (gms_tool_redis_reply_error(t, reply,
                                           user->deleted ? "SADD" : "SREM")
                != 0)
            {
                return -1;
            }

            if (reply->type == REDIS_REPLY_INTEGER && reply->integer > 0) {
                user->changed = 1;
            }

            freeReplyObject(reply);
        }
    }

    return 0;
}


/*
 * --inactive mark: the tokens stay cached; each user who entered or left
 * the set is published, and every edge drops the user's cached entries
 * and reads them anew, with the flag as it is now.
 */

static int
gms_users_publish(gms_tool_t *t, gms_users_t *u)
{
    size_t             i, k, n;
    redisReply        *reply;
    gms_users_user_t  *user;

    for (i = 0; i < u->n && !u->users[i].changed; i++) {
        /* void */
    }

    if (i < u->n) {
        (void) gms_tool_redis_wait(t);
    }

    for (i = 0; i < u->n; i = k) {
        n = 0;

        for (k = i; k < u->n && n < GMS_USERS_PIPELINE; k++) {
            user = &u->users[k];

            if (user->changed) {
                gms_tool_conn_append(t, "PUBLISH %b %b", u->channel,
                                     u->channel_len, user->urn, user->len);
                n++;
            }
        }

        while (n--) {
            (void) gms_tool_conn_get_reply(t, &reply);

            if (gms_tool_redis_reply_error(t, reply, "PUBLISH") != 0) {
                return -1;
            }

            freeReplyObject(reply);
        }
    }

    return 0;
}


/*
 * Every cached token of the users in the set deleted, not only of those
 * just added: a token cycle that read the set before they were added may
 * have written one since.  Deleting what is not cached costs a DEL and
 * publishes nothing.
 */

static int
gms_users_drop(gms_tool_t *t, gms_users_t *u,
    gms_tool_users_counts_t *counts)
{
    int                 rc;
    char               *key;
    size_t              i, k, n, key_len, *batch;
    long long           dropped;
    const char         *id;
    gms_users_user_t   *user;

    batch = malloc(GMS_USERS_PIPELINE * sizeof(size_t));
    if (batch == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    n = 0;

    for (i = 0; i < u->n; i++) {
        user = &u->users[i];

        if (user->skip
            || !(user->state == GMS_USERS_INACTIVE
                 || (user->state == GMS_USERS_UNKNOWN && user->was)))
        {
            continue;
        }

        for (k = user->first; k < user->first + user->ntokens; k++) {
            id = u->tokens[k].id;

            if (id == NULL) {
                continue;
            }

            key = gms_tool_redis_key(t, GMS_KEY_TOKEN, id, strlen(id),
                                     &key_len);
            if (key == NULL) {
                goto failed;
            }

            /* asked before the first is queued: nothing is pending yet */
            if (gms_tool_redis_scripts(t) != 0) {
                free(key);
                goto failed;
            }

            if (t->noscript) {
                /* the script's step without it: DEL, then PUBLISH */
                rc = gms_tool_redis_delete(t, key, key_len,
                                           INT64_MAX, u->channel,
                                           u->channel_len, id, strlen(id),
                                           &dropped);
                free(key);

                if (rc != 0) {
                    goto failed;
                }

                if (dropped > 0) {
                    counts->dropped++;
                    u->tokens[k].dropped = 1;
                }

                continue;
            }

            gms_tool_conn_append(t, "EVAL %s 1 %b %b %s", gms_users_drop_script,
                                 key, key_len, u->channel, u->channel_len, id);
            free(key);

            batch[n++] = k;

            if (n == GMS_USERS_PIPELINE) {
                if (gms_users_dropped(t, u, batch, n, counts) != 0) {
                    goto failed;
                }

                n = 0;
            }
        }
    }

    if (gms_users_dropped(t, u, batch, n, counts) != 0) {
        goto failed;
    }

    free(batch);

    return gms_users_republish(t, u);

failed:

    free(batch);

    return -1;
}


static int
gms_users_dropped(gms_tool_t *t, gms_users_t *u, const size_t *batch,
    size_t n, gms_tool_users_counts_t *counts)
{
    size_t       i;
    redisReply  *reply;

    for (i = 0; i < n; i++) {
        (void) gms_tool_conn_get_reply(t, &reply);

        if (gms_tool_redis_reply_error(t, reply, "EVAL") != 0) {
            return -1;
        }

        if (reply->type == REDIS_REPLY_INTEGER && reply->integer > 0) {
            counts->dropped++;
            u->tokens[batch[i]].dropped = 1;
        }

        freeReplyObject(reply);
    }

    return 0;
}


/*
 * With replicas, the ids the script published are published again once
 * the replicas acknowledged the deletions (WAIT): an edge that read a
 * lagging replica after the first message drops what it cached then.
 * The first message stays in the script, so that no deletion goes
 * unpublished whatever happens to this process.
 */

static int
gms_users_republish(gms_tool_t *t, gms_users_t *u)
{
    size_t       k, i, n;
    redisReply  *reply;

    for (k = 0; k < u->ntokens && !u->tokens[k].dropped; k++) {
        /* void */
    }

    if (k == u->ntokens || gms_tool_redis_wait(t) == 0) {
        return 0;
    }

    while (k < u->ntokens) {
        for (n = 0; k < u->ntokens && n < GMS_USERS_PIPELINE; k++) {
            if (u->tokens[k].dropped) {
                gms_tool_conn_append(t, "PUBLISH %b %s", u->channel,
                                     u->channel_len, u->tokens[k].id);
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
    }

    return 0;
}


/* --inactive keep: no user is refused, the next token cycle writes all */

int
gms_users_apply_release(gms_tool_t *t, gms_users_t *u)
{
    redisReply  *reply;

    if (u->members->elements == 0) {
        return 0;
    }

    reply = gms_tool_conn_command(t, "DEL %b %b", u->set, u->set_len,
                                  u->deleted, u->deleted_len);

    if (gms_tool_redis_reply_error(t, reply, "DEL") != 0) {
        return -1;
    }

    freeReplyObject(reply);

    return 0;
}


/*
 * gms-token's inactive users, for sync --gms and follow.  DataHub 1.2 and
 * later refuse a token whose user is not active (StatelessTokenService's
 * validateActor, ActorContext.isActive with enforceExistenceEnabled): the
 * user has no corpUserKey aspect in the entity store (never provisioned,
 * or hard-deleted), or its status aspect says removed (soft-deleted), or
 * its corpUserStatus aspect says SUSPENDED.  The same three are read here
 * for each user holding a listed token, GMS_USERS_BATCH users a request,
 * two aliased root fields a user:
 *
 *   e0: entityExists(urn: $u0)
 *   u0: corpUser(urn: $u0) { urn aspects(input: {aspectNames:
 *       ["status", "corpUserStatus"]}) { aspectName payload } }
 *
 * entityExists (EntityExistsResolver, EntityService.exists) reads the key
 * aspect's row, as isActive does.  corpUser cannot tell: GMS makes up the
 * key aspect of whatever urn it is asked for (getEntitiesV2 with
 * alwaysIncludeKeyAspect, as the GraphQL types call it), so corpUser is
 * never null and its aspects always list corpUserKey.  The two aspects are
 * read as their JSON payloads (WeaklyTypedAspectsResolver), compared as
 * isActive compares them, rather than through CorpUser.status, whose enum
 * has no SUSPENDED before 1.0.  Every release from 0.13 on answers it all
 * (entity.graphql and GmsGraphQLEngine, read at v0.13.0 to v1.4.0 and
 * master).
 *
 * The inactive users are kept in <prefix>inactive, which the token cycle
 * reads: it writes no token of theirs.  A user found inactive is added to
 * the set first, then every cached token of theirs is deleted and its id
 * published on <prefix>invalidate; a user active again leaves the set,
 * and its tokens, listed from GMS by actorUrn, are written back at once
 * (gms_users_restore: follow's token cycle by spans writes again only the
 * spans it lists).  (Follow, on DataHub's change stream, reads a user
 * again as soon as its status changes, gms_sync_users_recheck, the same
 * way; its whole check leaves a user the stream read again meanwhile as
 * the stream left it.)
 * A user GMS fails on is left as it was, either way: an error neither
 * deletes a user's tokens nor brings them back.  With refuse off
 * (--inactive keep: DataHub before 1.2 accepts such tokens) the users are
 * only counted, and the set emptied.
 * With --inactive mark the set is kept as with refuse, but their tokens
 * stay cached: the edge reads the set in its lookup and answers by its
 * gms_datahub_version (403 "Actor is not active" from 0.15, 401 from
 * 1.2); a user who enters or leaves the set is published on
 * <prefix>invalidate, so every edge reads the user's tokens anew.
 *
 * DataHub's OAuth users (1.3.0 on) are read too, though they hold no
 * listed token: DataHubOAuthAuthenticator has ServiceAccountService.
 * ensureServiceAccountExists make the user of an external token,
 * urn:li:corpuser:__oauth_<issuer>_<subject>, with the aspects
 * corpUserInfo, subTypes ["SERVICE"] and origin (EXTERNAL, the issuer);
 * the edge reads <prefix>inactive for that user (gms_release_inactive_
 * oauth).  They are listed from the search index by that sub-type (never
 * created by hand, unlike the privileges mirror's users), soft-removed
 * ones too, and read as any other user.  A hard-deleted one is made again
 * by its next token: the edge serves it (<prefix>deleted), as GMS does.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_contract.h"
#include "gms_oauth.h"
#include "gms_sync_list.h"
#include "gms_sync_users.h"
#include "gms_users_apply.h"
#include "gms_users_ask.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/* tokens a page, when a recheck lists the users' (follow's default) */
#define GMS_USERS_PAGE         1000

#define GMS_USERS_URN          "urn:li:corpuser:"

/* Constants.SYSTEM_ACTOR, which isActive never refuses */
#define GMS_USERS_SYSTEM       "urn:li:corpuser:__datahub_system"


static int gms_users_collect(gms_tool_t *t, gms_users_t *u,
    const gms_tool_holders_t *holders);
static void gms_users_add(gms_users_t *u, const char *urn, size_t len);
static void gms_users_who(gms_users_t *u);
static int gms_users_named(gms_tool_t *t, gms_users_t *u, char *const *urns,
    size_t n);
static int gms_users_tokens(gms_tool_t *t, gms_graphql_t *g,
    const gms_graphql_conf_t *gms, gms_users_t *u, gms_sync_list_t *list);
static void gms_users_active_only(gms_users_t *u, gms_sync_list_t *list);
static int gms_users_open(gms_tool_t *t, gms_users_t *u);
static void gms_users_count(gms_tool_t *t, gms_users_t *u,
    gms_tool_users_counts_t *counts);
static int gms_users_restore(gms_tool_t *t, const gms_graphql_conf_t *gms,
    int refuse, gms_users_t *u, gms_tool_users_counts_t *counts);
static int gms_users_reactivated(const gms_users_user_t *user,
    const void *data);
static int gms_users_touched(const gms_users_user_t *user, const void *data);
static int gms_users_reread(gms_tool_t *t, const gms_graphql_conf_t *gms,
    int refuse, gms_users_t *u, int (*pick)(const gms_users_user_t *user,
    const void *data), const void *data, gms_tool_users_counts_t *again);
static int gms_users_again(gms_tool_t *t, const gms_graphql_conf_t *gms,
    int refuse, gms_users_t *u, const gms_tool_users_skip_t *skip,
    gms_tool_users_counts_t *counts);
static gms_users_user_t *gms_users_find(gms_users_user_t *users,
    size_t n, const char *urn, size_t len);
static int gms_users_user_cmp(const void *one, const void *two);
static int gms_users_order(const char *a, size_t alen, const char *b,
    size_t blen);
static int gms_users_token_cmp(const void *one, const void *two);
static void gms_users_free(gms_users_t *u);


/* --inactive refuse|keep|mark, for sync and follow; NULL: refuse */

int
gms_sync_users_inactive_option(gms_tool_t *t, const char *value, int *refuse)
{
    t->inactive_mark = 0;

    if (value == NULL || strcmp(value, "refuse") == 0) {
        *refuse = GMS_TOOL_INACTIVE_REFUSE;

    } else if (strcmp(value, "keep") == 0) {
        *refuse = GMS_TOOL_INACTIVE_KEEP;

    } else if (strcmp(value, "mark") == 0) {
        *refuse = GMS_TOOL_INACTIVE_MARK;
        t->inactive_mark = 1;

    } else {
        gms_tool_msgs_error(t, "--inactive: '%s' is not refuse, keep or mark",
                            gms_tool_msgs_shown(value));
        return -1;
    }

    return 0;
}


int
gms_sync_users_check(gms_tool_t *t, const gms_graphql_conf_t *gms,
    int refuse, const gms_tool_holders_t *holders,
    const gms_tool_users_skip_t *skip, gms_tool_users_counts_t *counts)
{
    int                rc;
    size_t             i;
    gms_users_t        u;
    gms_graphql_t     *g;
    gms_users_user_t  *user;

    memset(&u, 0, sizeof(gms_users_t));
    g = NULL;

    rc = gms_users_open(t, &u);
    if (rc != GMS_TOOL_OK) {
        goto done;
    }

    rc = GMS_TOOL_REDIS;

    u.members = gms_tool_conn_command(t, "SMEMBERS %b", u.set, u.set_len);

    if (gms_tool_redis_reply_error(t, u.members, "SMEMBERS") != 0) {
        u.members = NULL;
        goto done;
    }

    if (u.members->type != REDIS_REPLY_ARRAY) {
        gms_tool_msgs_error(t, "redis %s: SMEMBERS: not an array", t->redis);
        goto done;
    }

    g = gms_graphql_open(t, gms);
    if (g == NULL) {
        rc = GMS_TOOL_GMS;
        goto done;
    }

    if (gms_users_ask_oauth(t, g, &u) != 0) {
        rc = GMS_TOOL_GMS;
        goto done;
    }

    if (gms_users_collect(t, &u, holders) != 0) {
        goto done;
    }

    rc = gms_users_ask_all(t, g, &u, skip);
    if (rc != GMS_TOOL_OK) {
        goto done;
    }

    /*
     * The users the stream read again while GMS was read here: what it
     * wrote is newer than what this check read, and stays (the set, the
     * tokens, as the stream left them)
     */
    for (i = 0; skip != NULL && i < u.n; i++) {
        user = &u.users[i];

        if (skip->touched(skip->data, user->urn, user->len)) {
            user->skip = 1;
            user->state = GMS_USERS_UNKNOWN;
        }
    }

    gms_users_count(t, &u, counts);

    rc = GMS_TOOL_REDIS;

    if (refuse == GMS_TOOL_INACTIVE_KEEP ? gms_users_apply_release(t, &u) != 0
        : gms_users_apply(t, &u, counts) != 0)
    {
        goto done;
    }

    rc = GMS_TOOL_OK;

    if (skip != NULL && refuse != GMS_TOOL_INACTIVE_KEEP) {
        rc = gms_users_again(t, gms, refuse, &u, skip, counts);
    }

    if (rc == GMS_TOOL_OK) {
        rc = gms_users_restore(t, gms, refuse, &u, counts);
    }

done:

    gms_graphql_close(g);
    gms_users_free(&u);

    return rc;
}


/*
 * The users this check found active again, their tokens written back at
 * once (gms_sync_users_recheck lists them from GMS by actorUrn): the
 * token cycle, by spans of createdAt, writes again only the tokens of
 * the spans it lists again, so those of the others would wait for the
 * next whole listing (--full-interval, 10 minutes by default).  Only with
 * refuse, where their tokens were dropped; rare: a few users.
 */

static int
gms_users_restore(gms_tool_t *t, const gms_graphql_conf_t *gms, int refuse,
    gms_users_t *u, gms_tool_users_counts_t *counts)
{
    int                      rc;
    gms_tool_users_counts_t  again;

    if (refuse != GMS_TOOL_INACTIVE_REFUSE || t->inactive_mark) {
        return GMS_TOOL_OK;
    }

    memset(&again, 0, sizeof(gms_tool_users_counts_t));

    rc = gms_users_reread(t, gms, refuse, u, gms_users_reactivated, NULL,
                          &again);

    counts->restored += again.restored;

    return rc;
}


static int
gms_users_reactivated(const gms_users_user_t *user, const void *data)
{
    (void) data;

    return user->state == GMS_USERS_ACTIVE && user->was && user->changed;
}


/*
 * The users the stream read again after the skips were decided, while
 * the check wrote: the stream's writes may have come before the check's
 * older ones.  They are read again now and applied, so that the last
 * view written is no older than the stream's.  Rare: a few users.
 */

static int
gms_users_again(gms_tool_t *t, const gms_graphql_conf_t *gms, int refuse,
    gms_users_t *u, const gms_tool_users_skip_t *skip,
    gms_tool_users_counts_t *counts)
{
    int                      rc;
    gms_tool_users_counts_t  again;

    memset(&again, 0, sizeof(gms_tool_users_counts_t));

    rc = gms_users_reread(t, gms, refuse, u, gms_users_touched, skip,
                          &again);

    counts->newly += again.newly;
    counts->reactivated += again.reactivated;
    counts->dropped += again.dropped;
    counts->restored += again.restored;

    return rc;
}


static int
gms_users_touched(const gms_users_user_t *user, const void *data)
{
    const gms_tool_users_skip_t *skip = data;

    return !user->skip && skip->touched(skip->data, user->urn, user->len);
}


/* the users pick() says yes to, read again and applied (recheck) */

static int
gms_users_reread(gms_tool_t *t, const gms_graphql_conf_t *gms, int refuse,
    gms_users_t *u, int (*pick)(const gms_users_user_t *user,
    const void *data), const void *data, gms_tool_users_counts_t *again)
{
    int                 rc;
    char              **urns;
    size_t              i, n;
    gms_users_user_t   *user;

    urns = NULL;

    for (n = 0, i = 0; i < u->n; i++) {
        user = &u->users[i];

        if (!pick(user, data)) {
            continue;
        }

        if (urns == NULL) {
            urns = malloc(u->n * sizeof(char *));
            if (urns == NULL) {
                gms_tool_msgs_error(t, "out of memory");
                return GMS_TOOL_REDIS;
            }
        }

        /* NUL-terminated: a holder's URN, or a member's (hiredis's) */
        urns[n++] = (char *) user->urn;
    }

    if (n == 0) {
        return GMS_TOOL_OK;
    }

    rc = gms_sync_users_recheck(t, gms, refuse, urns, n, again);

    free(urns);

    return rc;
}


/*
 * The users named (follow: the change stream said their status changed)
 * read again and applied as gms_sync_users_check applies them, the others
 * left as they are.  Their tokens are listed from GMS (by actorUrn)
 * before anything is written: an inactive user's are dropped by id, and
 * those of a user active again, out of the set, written back at once, as
 * a sync writes them (the next token cycle may be --full-interval away).
 * --inactive mark: the set and the publish only; keep: counts only.
 */

int
gms_sync_users_recheck(gms_tool_t *t, const gms_graphql_conf_t *gms,
    int refuse, char *const *urns, size_t n, gms_tool_users_counts_t *counts)
{
    int                     rc, tokens;
    gms_users_t             u;
    gms_graphql_t          *g;
    gms_sync_list_t         list;
    gms_tool_sync_counts_t  written;

    memset(&u, 0, sizeof(gms_users_t));
    memset(&list, 0, sizeof(gms_sync_list_t));
    g = NULL;

    tokens = refuse == GMS_TOOL_INACTIVE_REFUSE && !t->inactive_mark;

    rc = gms_users_open(t, &u);
    if (rc != GMS_TOOL_OK) {
        goto done;
    }

    rc = GMS_TOOL_REDIS;

    if (gms_users_named(t, &u, urns, n) != 0) {
        goto done;
    }

    if (u.n == 0) {
        rc = GMS_TOOL_OK;
        goto done;
    }

    g = gms_graphql_open(t, gms);
    if (g == NULL) {
        rc = GMS_TOOL_GMS;
        goto done;
    }

    rc = gms_users_ask_all(t, g, &u, NULL);
    if (rc != GMS_TOOL_OK) {
        goto done;
    }

    gms_users_count(t, &u, counts);

    if (refuse == GMS_TOOL_INACTIVE_KEEP) {
        goto done;
    }

    if (tokens) {
        rc = gms_users_tokens(t, g, gms, &u, &list);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }
    }

    rc = GMS_TOOL_REDIS;

    if (gms_users_apply(t, &u, counts) != 0) {
        goto done;
    }

    if (tokens) {
        gms_users_active_only(&u, &list);

        memset(&written, 0, sizeof(gms_tool_sync_counts_t));

        rc = gms_sync_tokens_write(t, &list, &written);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }

        counts->restored += written.added + written.updated;
    }

    rc = GMS_TOOL_OK;

done:

    gms_graphql_close(g);
    gms_sync_list_free(&list);
    gms_users_free(&u);

    return rc;
}


void
gms_sync_users_print(const gms_tool_users_counts_t *counts)
{
    printf("checked=%zu inactive=%zu newly=%zu reactivated=%zu dropped=%zu "
           "unknown=%zu\n", counts->checked, counts->inactive, counts->newly,
           counts->reactivated, counts->dropped, counts->unknown);
}


/* the keys a check writes, on a connection */

static int
gms_users_open(gms_tool_t *t, gms_users_t *u)
{
    int  rc;

    if (t->conn == NULL) {
        rc = gms_tool_redis_connect(t);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    u->set = gms_tool_redis_key(t, GMS_KEY_INACTIVE, "", 0, &u->set_len);
    u->channel = gms_tool_redis_key(t, GMS_KEY_INVALIDATE, "", 0,
                                    &u->channel_len);
    u->deleted = gms_tool_redis_key(t, GMS_KEY_DELETED, "", 0, &u->deleted_len);

    if (u->set == NULL || u->channel == NULL || u->deleted == NULL) {
        return GMS_TOOL_REDIS;
    }

    return GMS_TOOL_OK;
}


/* the users asked, counted; those GMS failed on, a warning */

static void
gms_users_count(gms_tool_t *t, gms_users_t *u,
    gms_tool_users_counts_t *counts)
{
    size_t             i, unknown;
    gms_users_user_t  *user;

    for (unknown = 0, i = 0; i < u->n; i++) {
        user = &u->users[i];

        if (user->skip) {
            counts->skipped++;
            continue;
        }

        if (!user->ask) {
            continue;
        }

        counts->checked++;

        if (user->state == GMS_USERS_UNKNOWN) {
            counts->unknown++;
            unknown++;

        } else if (user->state == GMS_USERS_INACTIVE) {
            counts->inactive++;
        }
    }

    if (unknown && u->first) {
        gms_tool_msgs_warn(t, "%zu of %zu users left as they were, active or "
                           "inactive: GMS failed on them (the first, %.*s: %s)",
                           counts->unknown, counts->checked,
                           (int) u->first->len, u->first->urn, u->error);
    }
}


/*
 * The users to read: each holder once, with its tokens, DataHub's OAuth
 * users who hold none, and the members of <prefix>inactive who are
 * neither (a listing cut short by a reindex must not let them out).  GMS
 * is asked about DataHub's users only: a holder or member of another
 * kind, and the system actor, are active.
 */

static int
gms_users_collect(gms_tool_t *t, gms_users_t *u,
    const gms_tool_holders_t *holders)
{
    size_t              i, n, sorted, oauth;
    redisReply         *m;
    gms_users_user_t   *user;
    gms_users_token_t  *tok;

    n = holders ? holders->n : 0;

    u->tokens = malloc((n ? n : 1) * sizeof(gms_users_token_t));
    u->users = malloc((n + u->noauth + u->members->elements + 1)
                      * sizeof(gms_users_user_t));

    if (u->tokens == NULL || u->users == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    for (i = 0; i < n; i++) {
        if (holders->urns[i] == NULL) {
            continue;
        }

        tok = &u->tokens[u->ntokens++];
        tok->urn = holders->urns[i];
        tok->id = holders->ids ? holders->ids[i] : NULL;
        tok->dropped = 0;
    }

    qsort(u->tokens, u->ntokens, sizeof(gms_users_token_t),
          gms_users_token_cmp);

    for (i = 0; i < u->ntokens; i++) {
        if (u->n && strcmp(u->users[u->n - 1].urn, u->tokens[i].urn) == 0) {
            u->users[u->n - 1].ntokens++;
            continue;
        }

        user = &u->users[u->n++];
        memset(user, 0, sizeof(gms_users_user_t));
        user->urn = u->tokens[i].urn;
        user->len = strlen(user->urn);
        user->first = i;
        user->ntokens = 1;
    }

    sorted = u->n;

    for (i = 0; i < u->noauth; i++) {
        if (gms_users_find(u->users, sorted, u->oauth[i],
                           strlen(u->oauth[i]))
            == NULL)
        {
            gms_users_add(u, u->oauth[i], strlen(u->oauth[i]));
        }
    }

    /* the OAuth users who hold no token, sorted as the list is */
    oauth = u->n - sorted;

    for (i = 0; i < u->members->elements; i++) {
        m = u->members->element[i];

        if (m->type != REDIS_REPLY_STRING) {
            continue;
        }

        user = gms_users_find(u->users, sorted, m->str, m->len);

        if (user == NULL) {
            user = gms_users_find(u->users + sorted, oauth, m->str, m->len);
        }

        if (user == NULL) {
            gms_users_add(u, m->str, m->len);
            user = &u->users[u->n - 1];
        }

        user->was = 1;
    }

    gms_users_who(u);

    return 0;
}


/*
 * GMS is asked about DataHub's users only: a holder or member of another
 * kind, and the system actor, are active.
 */

static void
gms_users_who(gms_users_t *u)
{
    size_t             i;
    gms_users_user_t  *user;

    for (i = 0; i < u->n; i++) {
        user = &u->users[i];

        if (user->len > sizeof(GMS_USERS_URN) - 1
            && memcmp(user->urn, GMS_USERS_URN, sizeof(GMS_USERS_URN) - 1)
               == 0
            && !(user->len == sizeof(GMS_USERS_SYSTEM) - 1
                 && memcmp(user->urn, GMS_USERS_SYSTEM, user->len) == 0))
        {
            user->ask = 1;

        } else {
            user->state = GMS_USERS_ACTIVE;
        }
    }
}


/*
 * The users named, sorted, each once, and whether each is in
 * <prefix>inactive now (SISMEMBER, pipelined): the set's other members
 * are none of a recheck's business.
 */

static int
gms_users_named(gms_tool_t *t, gms_users_t *u, char *const *urns, size_t n)
{
    size_t             i, k;
    redisReply        *reply;
    gms_users_user_t  *user;

    u->users = malloc((n ? n : 1) * sizeof(gms_users_user_t));
    if (u->users == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    for (i = 0; i < n; i++) {
        if (urns[i] != NULL && urns[i][0] != '\0') {
            gms_users_add(u, urns[i], strlen(urns[i]));
        }
    }

    if (u->n > 1) {
        qsort(u->users, u->n, sizeof(gms_users_user_t), gms_users_user_cmp);
    }

    for (k = 0, i = 0; i < u->n; i++) {
        if (k && gms_users_user_cmp(&u->users[k - 1], &u->users[i]) == 0) {
            continue;
        }

        u->users[k++] = u->users[i];
    }

    u->n = k;

    gms_users_who(u);

    for (i = 0; i < u->n; i = k) {
        for (k = i; k < u->n && k - i < GMS_USERS_PIPELINE; k++) {
            user = &u->users[k];
            gms_tool_conn_append(t, "SISMEMBER %b %b", u->set, u->set_len,
                                 user->urn, user->len);
        }

        for (k = i; k < u->n && k - i < GMS_USERS_PIPELINE; k++) {
            (void) gms_tool_conn_get_reply(t, &reply);

            if (gms_tool_redis_reply_error(t, reply, "SISMEMBER") != 0) {
                return -1;
            }

            u->users[k].was = reply->type == REDIS_REPLY_INTEGER
                              && reply->integer == 1;
            freeReplyObject(reply);
        }
    }

    return 0;
}


/*
 * The tokens of the users GMS answered for, listed from GMS by actorUrn
 * (GMS_USERS_BATCH users a listing), as u->tokens by user: an inactive
 * user's to drop, an active one's to write back.  Those of a user GMS
 * failed on are not asked: the user is left as it was.
 */

static int
gms_users_tokens(gms_tool_t *t, gms_graphql_t *g,
    const gms_graphql_conf_t *gms, gms_users_t *u, gms_sync_list_t *list)
{
    int                 rc;
    size_t              i, n;
    const char         *batch[GMS_USERS_BATCH];
    gms_users_user_t   *user;
    gms_users_token_t  *tok;
    gms_sync_token_t   *s;

    list->where = "page ";

    for (n = 0, i = 0; i < u->n; i++) {
        user = &u->users[i];

        if (user->state != GMS_USERS_UNKNOWN) {
            batch[n++] = user->urn;
        }

        if (n == GMS_USERS_BATCH || (n && i == u->n - 1)) {
            rc = gms_sync_list_actors(t, g, gms, GMS_USERS_PAGE, batch, n,
                                      list);
            if (rc != GMS_TOOL_OK) {
                return rc;
            }

            n = 0;
        }
    }

    if (gms_sync_list_unique(t, list) != 0) {
        return GMS_TOOL_GMS;
    }

    u->tokens = malloc((list->ntokens ? list->ntokens : 1)
                       * sizeof(gms_users_token_t));
    if (u->tokens == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    for (i = 0; i < list->ntokens; i++) {
        s = &list->tokens[i];

        /* GMS answers what it was asked, but it is not trusted to */
        if (gms_users_find(u->users, u->n, s->actor, s->actor_len) == NULL) {
            continue;
        }

        tok = &u->tokens[u->ntokens++];
        tok->urn = s->actor;
        tok->id = s->id;
        tok->dropped = 0;
    }

    if (u->ntokens > 1) {
        qsort(u->tokens, u->ntokens, sizeof(gms_users_token_t),
              gms_users_token_cmp);
    }

    for (i = 0; i < u->ntokens; i++) {
        user = gms_users_find(u->users, u->n, u->tokens[i].urn,
                              strlen(u->tokens[i].urn));

        if (user->ntokens++ == 0) {
            user->first = i;
        }
    }

    return GMS_TOOL_OK;
}


/*
 * The listing cut to the tokens of the users found active, to be written
 * back; the inactive users' are dropped already (u->tokens, which point
 * into the listing, are not read after this).
 */

static void
gms_users_active_only(gms_users_t *u, gms_sync_list_t *list)
{
    size_t             i, n;
    gms_sync_token_t  *s;
    gms_users_user_t  *user;

    for (n = 0, i = 0; i < list->ntokens; i++) {
        s = &list->tokens[i];
        user = gms_users_find(u->users, u->n, s->actor, s->actor_len);

        if (user == NULL || user->state != GMS_USERS_ACTIVE) {
            free(s->actor);
            continue;
        }

        list->tokens[n++] = *s;
    }

    list->ntokens = n;
}


static void
gms_users_add(gms_users_t *u, const char *urn, size_t len)
{
    gms_users_user_t  *user;

    user = &u->users[u->n++];
    memset(user, 0, sizeof(gms_users_user_t));
    user->urn = urn;
    user->len = len;
}


/* a user of users[0..n), sorted by URN */

static gms_users_user_t *
gms_users_find(gms_users_user_t *users, size_t n, const char *urn,
    size_t len)
{
    int                r;
    size_t             lo, hi, mid;
    gms_users_user_t  *user;

    lo = 0;
    hi = n;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        user = &users[mid];

        r = gms_users_order(user->urn, user->len, urn, len);

        if (r == 0) {
            return user;
        }

        if (r < 0) {
            lo = mid + 1;

        } else {
            hi = mid;
        }
    }

    return NULL;
}


static int
gms_users_user_cmp(const void *one, const void *two)
{
    const gms_users_user_t  *a, *b;

    a = one;
    b = two;

    return gms_users_order(a->urn, a->len, b->urn, b->len);
}


/* URNs in byte order, a prefix first: strcmp's, with lengths */

static int
gms_users_order(const char *a, size_t alen, const char *b, size_t blen)
{
    int  r;

    r = memcmp(a, b, alen < blen ? alen : blen);

    return r ? r : (alen > blen) - (alen < blen);
}


static int
gms_users_token_cmp(const void *one, const void *two)
{
    const gms_users_token_t  *a, *b;

    a = one;
    b = two;

    return strcmp(a->urn, b->urn);
}


static void
gms_users_free(gms_users_t *u)
{
    size_t  i;

    for (i = 0; i < u->noauth; i++) {
        free(u->oauth[i]);
    }

    free(u->oauth);

    if (u->members) {
        freeReplyObject(u->members);
    }

    free(u->tokens);
    free(u->users);
    free(u->set);
    free(u->deleted);
    free(u->channel);
}

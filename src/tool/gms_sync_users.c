
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
 * again as soon as its status changes, gms_tool_users_recheck, the same
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
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/*
 * Users a request: 100 root fields, each user some 6 points of GMS's
 * query complexity (a field 1, DataHubFieldComplexityCalculator), far
 * below graphQL.query.complexityLimit (2000 by default, application.yaml)
 */
#define GMS_USERS_BATCH        50

/*
 * Requests in flight at once (a wave): GMS runs each GraphQL request on a
 * thread pool (GraphQLController.postGraphQL through
 * GraphQLConcurrencyUtils.supplyAsync), and DataHub's own UI sends
 * several queries at once.  The load is the same requests, sooner:
 * 20,000 users, 400 requests of 20 ms, take some 1 s rather than 8
 * (issue 34: a suspension within --privileges-interval + 2 s)
 */
#define GMS_USERS_PARALLEL     8

/* tokens a page, when a recheck lists the users' (follow's default) */
#define GMS_USERS_PAGE         1000

/* Redis commands per pipelined batch */
#define GMS_USERS_PIPELINE     1000

#define GMS_USERS_URN          "urn:li:corpuser:"

/* Constants.SYSTEM_ACTOR, which isActive never refuses */
#define GMS_USERS_SYSTEM       "urn:li:corpuser:__datahub_system"

/* CorpUserStatus.status of a suspended user (Constants) */
#define GMS_USERS_SUSPENDED    "SUSPENDED"

/* a user's two fields, by its index in the request */
#define GMS_USERS_FIELDS                                                      \
    "e%zu: entityExists(urn: $u%zu) u%zu: corpUser(urn: $u%zu) { urn "       \
    "aspects(input: {aspectNames: [\"status\", \"corpUserStatus\"]}) "       \
    "{ aspectName payload } } "

/*
 * DataHub's OAuth users, a page a request: scrollAcrossEntities of the
 * corpusers whose subTypes' typeNames (searchable, KEYWORD: SubTypes.pdl)
 * has ServiceAccountService's "SERVICE", with the soft-removed
 * (SearchFlags.includeSoftDeleted).  Every release from 0.13.0 has the
 * query, the flag and scrolling (search.graphql, ScrollAcrossEntities-
 * Resolver, read at v0.13.0, v1.3.0 and master); a corpuser has subTypes
 * from 1.0.0, and the OAuth users from 1.3.0: before, the list is empty.
 * A page is at most searchService.limit.results.max (10,000).
 */
#define GMS_USERS_OAUTH_QUERY                                                 \
    "query gmsTokenOAuthUsers($scrollId: String) {\n"                         \
    "  scrollAcrossEntities(input: {types: [CORP_USER], query: \"*\",\n"      \
    "      count: 1000, scrollId: $scrollId,\n"                               \
    "      orFilters: [{and: [{field: \"typeNames\", values: "                \
    "[\"SERVICE\"]}]}],\n"                                                   \
    "      searchFlags: {includeSoftDeleted: true, skipAggregates: true,\n"  \
    "        skipHighlighting: true}}) {\n"                                   \
    "    nextScrollId\n    searchResults {\n      entity {\n        urn\n"    \
    "      }\n    }\n  }\n}"

/* pages at most: a scroll that never ends is GMS's failure */
#define GMS_USERS_OAUTH_PAGES  10000

/* how gms_graphql_query reports the errors GMS answered in GraphQL */
#define GMS_USERS_GRAPHQL_ERROR  ": GraphQL error: "


/*
 * Deletes a cached token and publishes its id on ARGV[1] in the same step;
 * a token no longer cached is not published again.
 */
static const char  gms_users_drop_script[] =
    "if redis.call('DEL', KEYS[1]) == 0 then return 0 end\n"
    "redis.call('PUBLISH', ARGV[1], ARGV[2])\n"
    "return 1\n";


typedef enum {
    GMS_USERS_UNKNOWN = 0,                 /* not read: left as it was */
    GMS_USERS_ACTIVE,
    GMS_USERS_INACTIVE
} gms_users_state_e;


/* a listed token: its user and id */
typedef struct {
    const char            *urn;
    const char            *id;
    unsigned               dropped:1;      /* deleted by this run */
} gms_users_token_t;


typedef struct {
    const char            *urn;
    size_t                 len;
    size_t                 first;          /* its tokens: tokens[first..] */
    size_t                 ntokens;
    gms_users_state_e      state;
    unsigned               ask:1;          /* a user GMS is asked about */
    unsigned               was:1;          /* in <prefix>inactive before */
    unsigned               deleted:1;      /* inactive: no corpUserKey */
    unsigned               changed:1;      /* in or out of a set now */
    unsigned               skip:1;         /* the stream read it since: as
                                              it is */
} gms_users_user_t;


typedef struct {
    gms_users_token_t     *tokens;         /* by user */
    size_t                 ntokens;
    gms_users_user_t      *users;          /* holders by urn, then the
                                              set's other members */
    size_t                 n;
    redisReply            *members;        /* <prefix>inactive's */
    char                 **oauth;          /* DataHub's OAuth users, sorted,
                                              unique */
    size_t                 noauth;
    char                  *set;            /* <prefix>inactive */
    size_t                 set_len;
    char                  *deleted;        /* <prefix>deleted */
    size_t                 deleted_len;
    char                  *channel;        /* <prefix>invalidate */
    size_t                 channel_len;
    size_t                 failed;         /* users GMS failed on */
    gms_users_user_t      *first;          /* the first of them, */
    char                   error[256];     /* and why */
} gms_users_t;


static int gms_users_oauth(gms_tool_t *t, gms_graphql_t *g,
    gms_users_t *u);
static int gms_users_oauth_page(gms_users_t *u, json_t *page,
    size_t *nalloc);
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
static int gms_users_ask_all(gms_tool_t *t, gms_graphql_t *g,
    gms_users_t *u, const gms_tool_users_skip_t *skip);
static int gms_users_wave(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const size_t *ask, size_t n);
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
static int gms_users_ask(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const size_t *ask, size_t n);
static int gms_users_split(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const size_t *ask, size_t n);
static int gms_users_query(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const size_t *ask, size_t n);
static int gms_users_request(gms_tool_t *t, gms_users_t *u,
    const size_t *ask, size_t n, gms_graphql_ask_t *q);
static void gms_users_answer(gms_users_t *u, const size_t *ask, size_t n,
    json_t *data);
static const char *gms_users_read(json_t *data, size_t i,
    gms_users_user_t *user);
static int gms_users_apply(gms_tool_t *t, gms_users_t *u,
    gms_tool_users_counts_t *counts);
static int gms_users_drop(gms_tool_t *t, gms_users_t *u,
    gms_tool_users_counts_t *counts);
static int gms_users_dropped(gms_tool_t *t, gms_users_t *u,
    const size_t *batch, size_t n, gms_tool_users_counts_t *counts);
static int gms_users_republish(gms_tool_t *t, gms_users_t *u);
static int gms_users_release(gms_tool_t *t, gms_users_t *u);
static int gms_users_publish(gms_tool_t *t, gms_users_t *u);
static int gms_users_deleted(gms_tool_t *t, gms_users_t *u);
static gms_users_user_t *gms_users_find(gms_users_user_t *users,
    size_t n, const char *urn, size_t len);
static int gms_users_user_cmp(const void *one, const void *two);
static int gms_users_order(const char *a, size_t alen, const char *b,
    size_t blen);
static int gms_users_token_cmp(const void *one, const void *two);
static int gms_users_urn_cmp(const void *one, const void *two);
static void gms_users_free(gms_users_t *u);


/* --inactive refuse|keep|mark, for sync and follow; NULL: refuse */

int
gms_tool_inactive_option(gms_tool_t *t, const char *value, int *refuse)
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
        gms_tool_error(t, "--inactive: '%s' is not refuse, keep or mark",
                       gms_tool_shown(value));
        return -1;
    }

    return 0;
}


int
gms_tool_users_check(gms_tool_t *t, const gms_graphql_conf_t *gms,
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

    u.members = gms_tool_command(t, "SMEMBERS %b", u.set, u.set_len);

    if (gms_tool_reply_error(t, u.members, "SMEMBERS") != 0) {
        u.members = NULL;
        goto done;
    }

    if (u.members->type != REDIS_REPLY_ARRAY) {
        gms_tool_error(t, "redis %s: SMEMBERS: not an array", t->redis);
        goto done;
    }

    g = gms_graphql_open(t, gms);
    if (g == NULL) {
        rc = GMS_TOOL_GMS;
        goto done;
    }

    if (gms_users_oauth(t, g, &u) != 0) {
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

    if (refuse == GMS_TOOL_INACTIVE_KEEP ? gms_users_release(t, &u) != 0
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
 * once (gms_tool_users_recheck lists them from GMS by actorUrn): the
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
                gms_tool_error(t, "out of memory");
                return GMS_TOOL_REDIS;
            }
        }

        /* NUL-terminated: a holder's URN, or a member's (hiredis's) */
        urns[n++] = (char *) user->urn;
    }

    if (n == 0) {
        return GMS_TOOL_OK;
    }

    rc = gms_tool_users_recheck(t, gms, refuse, urns, n, again);

    free(urns);

    return rc;
}


/*
 * The users named (follow: the change stream said their status changed)
 * read again and applied as gms_tool_users_check applies them, the others
 * left as they are.  Their tokens are listed from GMS (by actorUrn)
 * before anything is written: an inactive user's are dropped by id, and
 * those of a user active again, out of the set, written back at once, as
 * a sync writes them (the next token cycle may be --full-interval away).
 * --inactive mark: the set and the publish only; keep: counts only.
 */

int
gms_tool_users_recheck(gms_tool_t *t, const gms_graphql_conf_t *gms,
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

        rc = gms_tool_sync_write(t, &list, &written);
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
gms_tool_users_print(const gms_tool_users_counts_t *counts)
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
        rc = gms_tool_connect(t);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    u->set = gms_tool_key(t, GMS_KEY_INACTIVE, "", 0, &u->set_len);
    u->channel = gms_tool_key(t, GMS_KEY_INVALIDATE, "", 0,
                              &u->channel_len);
    u->deleted = gms_tool_key(t, GMS_KEY_DELETED, "", 0, &u->deleted_len);

    if (u->set == NULL || u->channel == NULL || u->deleted == NULL) {
        return GMS_TOOL_REDIS;
    }

    return GMS_TOOL_OK;
}


/*
 * Every user to ask, GMS_USERS_BATCH a request, GMS_USERS_PARALLEL
 * requests at once (a wave); skip->between, if any, called between two
 * waves.  A request GMS fails on for each of its users fails the check.
 */

static int
gms_users_ask_all(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const gms_tool_users_skip_t *skip)
{
    int     rc, quiet;
    char    error[sizeof(t->error)];
    size_t  i, n, wave, *ask;

    ask = malloc((u->n ? u->n : 1) * sizeof(size_t));
    if (ask == NULL) {
        gms_tool_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    for (n = 0, i = 0; i < u->n; i++) {
        if (u->users[i].ask) {
            ask[n++] = i;
        }
    }

    /* the errors of the requests bisected are the users' own */
    quiet = t->quiet;
    t->quiet = 1;

    for (rc = GMS_TOOL_OK, i = 0; i < n && rc == GMS_TOOL_OK; i += wave) {

        if (i > 0 && skip != NULL && skip->between != NULL) {
            t->quiet = quiet;
            skip->between(skip->data);
            t->quiet = 1;
        }

        wave = GMS_USERS_PARALLEL * GMS_USERS_BATCH;
        wave = n - i < wave ? n - i : wave;

        rc = gms_users_wave(t, g, u, ask + i, wave);
    }

    t->quiet = quiet;

    if (rc != GMS_TOOL_OK) {
        snprintf(error, sizeof(error), "%s", t->error);
        gms_tool_error(t, "%s", error);
    }

    free(ask);

    return rc;
}


/*
 * A wave: its requests sent at once (gms_graphql_many), then their
 * answers read in order, as if they had been asked one after the other:
 * a request GMS answered with a GraphQL error asked again in halves
 * (gms_users_split), any other failure failing the check, the first
 * one's error said.
 */

static int
gms_users_wave(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const size_t *ask, size_t n)
{
    int                 rc;
    size_t              i, k, nq, batch, failed;
    gms_graphql_ask_t   q[GMS_USERS_PARALLEL];

    for (nq = 0, i = 0; i < n; nq++, i += batch) {
        batch = n - i < GMS_USERS_BATCH ? n - i : GMS_USERS_BATCH;

        if (gms_users_request(t, u, ask + i, batch, &q[nq]) != 0) {
            for (k = 0; k < nq; k++) {
                free(q[k].query);
                json_decref(q[k].variables);
            }

            return GMS_TOOL_GMS;
        }
    }

    if (gms_graphql_many(g, q, nq, GMS_USERS_PARALLEL) != 0) {
        return GMS_TOOL_GMS;
    }

    for (rc = GMS_TOOL_OK, k = 0, i = 0; k < nq; k++, i += batch) {
        batch = n - i < GMS_USERS_BATCH ? n - i : GMS_USERS_BATCH;
        failed = u->failed;

        if (rc != GMS_TOOL_OK) {
            /* a request before failed the check */

        } else if (q[k].data != NULL) {
            gms_users_answer(u, ask + i, batch, q[k].data);

        } else {
            gms_tool_error(t, "%s", q[k].error);
            rc = gms_users_split(t, g, u, ask + i, batch);
        }

        /*
         * GMS failing on every user of a request fails on the request
         * (a schema without these fields, a token it refuses): not the
         * users' doing, and no use asking about the others
         */
        if (rc == GMS_TOOL_OK && batch > 1 && u->failed - failed == batch) {
            gms_tool_error(t, "GMS failed on each of the %zu users of a "
                           "request: %s", batch, u->error);
            rc = GMS_TOOL_GMS;
        }

        json_decref(q[k].data);
    }

    return rc;
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
        gms_tool_warn(t, "%zu of %zu users left as they were, active or "
                      "inactive: GMS failed on them (the first, %.*s: %s)",
                      counts->unknown, counts->checked, (int) u->first->len,
                      u->first->urn, u->error);
    }
}


/*
 * DataHub's OAuth users, every page of the scroll (GMS_USERS_OAUTH_QUERY):
 * those of the sub-type whose URN is one ServiceAccountService.
 * buildServiceUserUrn makes, sorted and unique.  A page GMS fails on fails
 * the check: a user missed would never be refused.
 */

static int
gms_users_oauth(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u)
{
    int          rc;
    char        *scroll;
    json_t      *vars, *page;
    size_t       i, n, pages, nalloc;
    const char  *next;

    nalloc = 0;
    scroll = NULL;
    rc = -1;

    for (pages = 0; pages < GMS_USERS_OAUTH_PAGES; pages++) {
        vars = json_pack("{s:o}", "scrollId",
                         scroll ? json_string(scroll) : json_null());
        if (vars == NULL) {
            gms_tool_error(t, "out of memory");
            goto done;
        }

        page = gms_graphql_query(g, GMS_USERS_OAUTH_QUERY, vars,
                                 "scrollAcrossEntities");
        if (page == NULL) {
            gms_tool_error(t, "listing DataHub's OAuth users: %s", t->error);
            goto done;
        }

        free(scroll);
        scroll = NULL;

        n = json_array_size(json_object_get(page, "searchResults"));
        next = json_string_value(json_object_get(page, "nextScrollId"));

        if (gms_users_oauth_page(u, page, &nalloc) != 0
            || (n && next && (scroll = strdup(next)) == NULL))
        {
            json_decref(page);
            gms_tool_error(t, "out of memory");
            goto done;
        }

        json_decref(page);

        if (scroll == NULL) {
            break;
        }
    }

    if (pages == GMS_USERS_OAUTH_PAGES) {
        gms_tool_error(t, "listing DataHub's OAuth users: GMS's scroll "
                       "did not end in %d pages", GMS_USERS_OAUTH_PAGES);
        goto done;
    }

    if (u->noauth > 1) {
        /* none: u->oauth is NULL, which qsort() must not be given */
        qsort(u->oauth, u->noauth, sizeof(char *), gms_users_urn_cmp);
    }

    for (n = 0, i = 0; i < u->noauth; i++) {
        if (n && strcmp(u->oauth[n - 1], u->oauth[i]) == 0) {
            free(u->oauth[i]);
            continue;
        }

        u->oauth[n++] = u->oauth[i];
    }

    u->noauth = n;
    rc = 0;

done:

    free(scroll);

    return rc;
}


static int
gms_users_oauth_page(gms_users_t *u, json_t *page, size_t *nalloc)
{
    char        **p;
    size_t        i;
    json_t       *result;
    const char   *urn;

    json_array_foreach(json_object_get(page, "searchResults"), i, result) {
        urn = json_string_value(json_object_get(json_object_get(result,
                                                                "entity"),
                                                "urn"));

        if (urn == NULL
            || strncmp(urn, GMS_OAUTH_ACTOR_PREFIX,
                       sizeof(GMS_OAUTH_ACTOR_PREFIX) - 1) != 0)
        {
            continue;
        }

        if (u->noauth == *nalloc) {
            *nalloc = *nalloc ? *nalloc * 2 : 64;
            p = realloc(u->oauth, *nalloc * sizeof(char *));
            if (p == NULL) {
                return -1;
            }

            u->oauth = p;
        }

        u->oauth[u->noauth] = strdup(urn);
        if (u->oauth[u->noauth] == NULL) {
            return -1;
        }

        u->noauth++;
    }

    return 0;
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
        gms_tool_error(t, "out of memory");
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
        gms_tool_error(t, "out of memory");
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
            gms_tool_append(t, "SISMEMBER %b %b", u->set, u->set_len,
                            user->urn, user->len);
        }

        for (k = i; k < u->n && k - i < GMS_USERS_PIPELINE; k++) {
            (void) gms_tool_get_reply(t, &reply);

            if (gms_tool_reply_error(t, reply, "SISMEMBER") != 0) {
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
        gms_tool_error(t, "out of memory");
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


/*
 * One request for the users, or, when GMS answered it with a GraphQL
 * error, two for its halves (gms_users_split)
 */

static int
gms_users_ask(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const size_t *ask, size_t n)
{
    if (gms_users_query(t, g, u, ask, n) == 0) {
        return GMS_TOOL_OK;
    }

    return gms_users_split(t, g, u, ask, n);
}


/*
 * The request for these users failed, why in t->error.  A GraphQL error:
 * a field GMS fails on fails the whole request in gms_graphql_query, so
 * its halves are asked, down to the user it fails on, left as it was.
 * Any other failure (the transport, an HTTP status) fails the check.
 */

static int
gms_users_split(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const size_t *ask, size_t n)
{
    int  rc;

    if (strstr(t->error, GMS_USERS_GRAPHQL_ERROR) == NULL) {
        return GMS_TOOL_GMS;
    }

    if (n == 1) {
        u->failed++;

        if (u->first == NULL) {
            u->first = &u->users[ask[0]];
            snprintf(u->error, sizeof(u->error), "%s", t->error);
        }

        return GMS_TOOL_OK;
    }

    rc = gms_users_ask(t, g, u, ask, n / 2);

    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    return gms_users_ask(t, g, u, ask + n / 2, n - n / 2);
}


/* 0, or -1: the request failed, reported (quietly) */

static int
gms_users_query(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const size_t *ask, size_t n)
{
    json_t             *data;
    gms_graphql_ask_t   q;

    if (gms_users_request(t, u, ask, n, &q) != 0) {
        return -1;
    }

    data = gms_graphql_query(g, q.query, q.variables, q.field);
    free(q.query);

    if (data == NULL) {
        return -1;
    }

    gms_users_answer(u, ask, n, data);
    json_decref(data);

    return 0;
}


/*
 * The request for these users, two aliased root fields a user
 * (GMS_USERS_FIELDS): q's query and variables; -1: out of memory,
 * reported
 */

static int
gms_users_request(gms_tool_t *t, gms_users_t *u, const size_t *ask,
    size_t n, gms_graphql_ask_t *q)
{
    char              *query, *p, *end, name[32];
    size_t             i, size;
    json_t            *vars;
    gms_users_user_t  *user;

    size = sizeof("query gmsTokenUsers() {  }")
           + n * (sizeof(", $u: String!") + 20
                  + sizeof(GMS_USERS_FIELDS) + 4 * 20);

    query = malloc(size);
    vars = json_object();

    if (query == NULL || vars == NULL) {
        free(query);
        json_decref(vars);
        gms_tool_error(t, "out of memory");
        return -1;
    }

    p = query;
    end = query + size;

    p += snprintf(p, end - p, "query gmsTokenUsers(");

    for (i = 0; i < n; i++) {
        user = &u->users[ask[i]];

        p += snprintf(p, end - p, "%s$u%zu: String!", i ? ", " : "", i);
        snprintf(name, sizeof(name), "u%zu", i);

        if (json_object_set_new(vars, name, json_stringn(user->urn,
                                                         user->len))
            != 0)
        {
            free(query);
            json_decref(vars);
            gms_tool_error(t, "out of memory");
            return -1;
        }
    }

    p += snprintf(p, end - p, ") { ");

    for (i = 0; i < n; i++) {
        p += snprintf(p, end - p, GMS_USERS_FIELDS, i, i, i, i);
    }

    snprintf(p, end - p, "}");

    q->query = query;
    q->variables = vars;
    q->field = NULL;

    return 0;
}


/* the users' answers read; those GMS failed on counted, the first kept */

static void
gms_users_answer(gms_users_t *u, const size_t *ask, size_t n, json_t *data)
{
    size_t             i;
    const char        *why;
    gms_users_user_t  *user;

    for (i = 0; i < n; i++) {
        user = &u->users[ask[i]];
        why = gms_users_read(data, i, user);

        if (why == NULL) {
            continue;
        }

        u->failed++;

        if (u->first == NULL) {
            u->first = user;
            snprintf(u->error, sizeof(u->error), "%s", why);
        }
    }
}


/*
 * The i-th user's answer, read as ActorContext.isActive reads the aspects;
 * NULL, or why it cannot be read (the user left as it was).
 */

static const char *
gms_users_read(json_t *data, size_t i, gms_users_user_t *user)
{
    char                name[32];
    json_t             *exists, *entity, *aspects, *a, *payload, *v;
    size_t              k;
    const char         *aspect, *s;
    gms_users_state_e   state;

    snprintf(name, sizeof(name), "e%zu", i);
    exists = json_object_get(data, name);

    snprintf(name, sizeof(name), "u%zu", i);
    entity = json_object_get(data, name);

    /* no corpUserKey: never provisioned, or hard-deleted */
    if (json_is_false(exists)) {
        user->state = GMS_USERS_INACTIVE;
        user->deleted = 1;
        return NULL;
    }

    if (!json_is_true(exists)) {
        return "entityExists is not a Boolean";
    }

    s = json_string_value(json_object_get(entity, "urn"));

    if (s == NULL || strlen(s) != user->len
        || memcmp(s, user->urn, user->len) != 0)
    {
        return "corpUser is not the user asked for";
    }

    aspects = json_object_get(entity, "aspects");

    if (!json_is_array(aspects)) {
        return "corpUser has no aspects";
    }

    state = GMS_USERS_ACTIVE;

    json_array_foreach(aspects, k, a) {
        aspect = json_string_value(json_object_get(a, "aspectName"));
        s = json_string_value(json_object_get(a, "payload"));

        if (aspect == NULL || s == NULL) {
            return "an aspect without its name or payload";
        }

        payload = json_loads(s, 0, NULL);

        if (!json_is_object(payload)) {
            json_decref(payload);
            return "an aspect's payload is not a JSON object";
        }

        if (strcmp(aspect, "status") == 0) {
            /* Status.removed: soft-deleted */
            if (json_is_true(json_object_get(payload, "removed"))) {
                state = GMS_USERS_INACTIVE;
            }

        } else if (strcmp(aspect, "corpUserStatus") == 0) {
            v = json_object_get(payload, "status");

            if (json_is_string(v)
                && strcmp(json_string_value(v), GMS_USERS_SUSPENDED) == 0)
            {
                state = GMS_USERS_INACTIVE;
            }
        }

        json_decref(payload);
    }

    user->state = state;

    return NULL;
}


/*
 * The set made equal to the inactive users, then their tokens deleted:
 * once a user is in the set, the token cycle no longer writes a token of
 * theirs that this deletes.
 */

static int
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
                gms_tool_append(t, "SADD %b %b", u->set, u->set_len,
                                user->urn, user->len);
                n++;

            } else if (user->state == GMS_USERS_ACTIVE && user->was) {
                gms_tool_append(t, "SREM %b %b", u->set, u->set_len,
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

            (void) gms_tool_get_reply(t, &reply);

            if (gms_tool_reply_error(t, reply, user->was ? "SREM" : "SADD")
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
                gms_tool_append(t, user->deleted ? "SADD %b %b"
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

            (void) gms_tool_get_reply(t, &reply);

            if (gms_tool_reply_error(t, reply,
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
        (void) gms_tool_wait(t);
    }

    for (i = 0; i < u->n; i = k) {
        n = 0;

        for (k = i; k < u->n && n < GMS_USERS_PIPELINE; k++) {
            user = &u->users[k];

            if (user->changed) {
                gms_tool_append(t, "PUBLISH %b %b", u->channel,
                                u->channel_len, user->urn, user->len);
                n++;
            }
        }

        while (n--) {
            (void) gms_tool_get_reply(t, &reply);

            if (gms_tool_reply_error(t, reply, "PUBLISH") != 0) {
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
    char               *key;
    size_t              i, k, n, key_len, *batch;
    const char         *id;
    gms_users_user_t   *user;

    batch = malloc(GMS_USERS_PIPELINE * sizeof(size_t));
    if (batch == NULL) {
        gms_tool_error(t, "out of memory");
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

            key = gms_tool_key(t, GMS_KEY_TOKEN, id, strlen(id), &key_len);
            if (key == NULL) {
                goto failed;
            }

            gms_tool_append(t, "EVAL %s 1 %b %b %s", gms_users_drop_script,
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
        (void) gms_tool_get_reply(t, &reply);

        if (gms_tool_reply_error(t, reply, "EVAL") != 0) {
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

    if (k == u->ntokens || gms_tool_wait(t) == 0) {
        return 0;
    }

    while (k < u->ntokens) {
        for (n = 0; k < u->ntokens && n < GMS_USERS_PIPELINE; k++) {
            if (u->tokens[k].dropped) {
                gms_tool_append(t, "PUBLISH %b %s", u->channel,
                                u->channel_len, u->tokens[k].id);
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
    }

    return 0;
}


/* --inactive keep: no user is refused, the next token cycle writes all */

static int
gms_users_release(gms_tool_t *t, gms_users_t *u)
{
    redisReply  *reply;

    if (u->members->elements == 0) {
        return 0;
    }

    reply = gms_tool_command(t, "DEL %b %b", u->set, u->set_len,
                             u->deleted, u->deleted_len);

    if (gms_tool_reply_error(t, reply, "DEL") != 0) {
        return -1;
    }

    freeReplyObject(reply);

    return 0;
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


static int
gms_users_urn_cmp(const void *one, const void *two)
{
    return strcmp(*(char *const *) one, *(char *const *) two);
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


/*
 * gms-token: users' platform privileges mirrored from DataHub into
 * <prefix>actor:<urn> (sync --gms --privileges, and follow).
 *
 * The users are those holding an access token (in the listAccessTokens
 * the sync just made: gms_tool_holders_t) and those a platform policy
 * names (listPolicies); members of a group or a role a policy names who
 * do neither are not mirrored (a user without a token never reaches the
 * edge with one of its own... except a session token: see the README).
 * Each user's set is computed first, from GMS alone, in one of two ways:
 *
 *  - policies: listPolicies' active PLATFORM policies, matched here
 *    (gms_policy.c, after DataHub's PolicyEngine) to the user and its
 *    groups and roles, read by membership: the members of each group and
 *    role the policies name (gms_sync_members.c), so that the requests
 *    grow with those groups and roles, not with the users;
 *  - graphql: getGrantedPrivileges of each user, asked of GMS (DataHub
 *    1.0 and later answer a Manage Policies holder about anyone),
 *    GMS_MEMBERS_BATCH users a request under aliases.
 *
 * Any failure or incomplete listing stops there: Redis is not touched.
 * Then each set that differs from Redis's (SMEMBERS) is replaced at once
 * (MULTI, DEL, SADD, EXEC), and the sets of users no longer known (SCAN
 * <prefix>actor:*) deleted; each change is published on
 * <prefix>invalidate so that every edge drops what it cached.  A set of
 * more than GMS_PRIVILEGES_MAX is not written (skipped, with a line on
 * stderr): the user's set in Redis is left as it was.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_sync_privileges.h"
#include "gms_sync_members.h"
#include "gms_policy.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/* items asked a page, and keys asked of each SCAN step */
#define GMS_PRIV_PAGE          100

/* ListPoliciesResolver, PolicyInfoPolicyMapper (entity.graphql's Policy) */
#define GMS_PRIV_POLICIES_QUERY                                              \
    "query listPolicies($input: ListPoliciesInput!) {\n"                     \
    "  listPolicies(input: $input) {\n"                                      \
    "    start\n    count\n    total\n"                                      \
    "    policies {\n      urn\n      type\n      state\n"                   \
    "      privileges\n"                                                     \
    "      actors {\n        users\n        groups\n        roles\n"         \
    "        allUsers\n        allGroups\n      }\n    }\n  }\n}"

/*
 * GetGrantedPrivilegesResolver; the query of datahub-web-react's own, one
 * alias (g0, g1, ...) a user
 */
#define GMS_PRIV_GRANTED_ALIAS                                               \
    "  g%zu: getGrantedPrivileges(input: $i%zu) {\n    privileges\n  }\n"
#define GMS_PRIV_GRANTED_VARIABLES  "$i%zu: GetGrantedPrivilegesInput!"


/* a growing list of strings it owns */
typedef struct {
    char                 **s;
    size_t                 n;
    size_t                 nalloc;
} gms_priv_list_t;


typedef struct {
    char                  *urn;
    gms_priv_list_t        privileges;     /* sorted, unique */
    unsigned               changed:1;      /* differs from Redis's set */
} gms_priv_user_t;


struct gms_tool_privileges_memo_s {
    gms_priv_list_t        urns;           /* members' users point here */
    gms_members_t         *members;
};


typedef struct {
    gms_tool_t            *tool;
    gms_graphql_t         *g;
    const char            *url;
    gms_priv_list_t        urns;           /* the users, sorted, unique */
    gms_priv_user_t       *users;          /* as many as urns had */
    size_t                 nusers;
    gms_policies_t         policies;
    gms_tool_privileges_memo_t *memo;      /* to use again, or NULL */
    gms_members_t         *members;        /* read now, for the next memo */
} gms_priv_ctx_t;


static int gms_priv_token_holders(gms_priv_ctx_t *c,
    const gms_tool_holders_t *holders);
static int gms_priv_list_policies(gms_priv_ctx_t *c);
static int gms_priv_from_policies(gms_priv_ctx_t *c);
static int gms_priv_from_graphql(gms_priv_ctx_t *c);
static int gms_priv_memo_keep(gms_priv_ctx_t *c,
    gms_tool_privileges_memo_t **memo);
static char *gms_priv_granted_query(size_t n);
static int gms_priv_granted(gms_priv_ctx_t *c, gms_priv_user_t *u,
    json_t *granted);
static int gms_priv_page_total(gms_priv_ctx_t *c, json_t *page,
    const char *what, const char *items, json_t **list, json_int_t *total);
static int gms_priv_write(gms_priv_ctx_t *c,
    gms_tool_privileges_counts_t *counts);
static int gms_priv_replace(gms_tool_t *t, gms_priv_user_t *u);
static int gms_priv_same(redisReply *reply, gms_priv_list_t *privileges);
static int gms_priv_remove(gms_priv_ctx_t *c,
    gms_tool_privileges_counts_t *counts);
static int gms_priv_add(gms_priv_list_t *l, const char *s, size_t len);
static void gms_priv_sort_unique(gms_priv_list_t *l);
static void gms_priv_list_free(gms_priv_list_t *l);
static void gms_priv_free(gms_priv_ctx_t *c);


int
gms_sync_privileges_mirror(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_tool_privileges_e mode, const gms_tool_holders_t *holders,
    gms_tool_privileges_memo_t **memo, int reuse,
    gms_tool_privileges_counts_t *counts)
{
    int             rc;
    size_t          i;
    gms_priv_ctx_t  c;

    if (mode == GMS_TOOL_PRIVILEGES_OFF) {
        return GMS_TOOL_OK;
    }

    memset(&c, 0, sizeof(gms_priv_ctx_t));
    c.tool = t;
    c.url = gms->url;
    c.memo = (memo != NULL && reuse && mode == GMS_TOOL_PRIVILEGES_POLICIES)
             ? *memo : NULL;

    rc = gms_priv_token_holders(&c, holders);
    if (rc != GMS_TOOL_OK) {
        goto done;
    }

    c.g = gms_graphql_open(t, gms);
    if (c.g == NULL) {
        rc = GMS_TOOL_GMS;
        goto done;
    }

    rc = gms_priv_list_policies(&c);

    if (rc != GMS_TOOL_OK) {
        goto done;
    }

    gms_priv_sort_unique(&c.urns);

    if (c.urns.n) {
        c.users = calloc(c.urns.n, sizeof(gms_priv_user_t));
        if (c.users == NULL) {
            gms_tool_msgs_error(t, "out of memory");
            rc = GMS_TOOL_REDIS;
            goto done;
        }

        c.nusers = c.urns.n;
    }

    for (i = 0; i < c.urns.n; i++) {
        c.users[i].urn = c.urns.s[i];
    }

    rc = mode == GMS_TOOL_PRIVILEGES_GRAPHQL ? gms_priv_from_graphql(&c)
                                             : gms_priv_from_policies(&c);
    if (rc != GMS_TOOL_OK) {
        goto done;
    }

    /* everything is known: only now is Redis touched */

    gms_graphql_close(c.g);
    c.g = NULL;

    if (t->conn == NULL) {
        rc = gms_tool_redis_connect(t);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }
    }

    counts->users = c.urns.n;
    counts->kept = (c.memo != NULL && c.members == NULL);

    rc = GMS_TOOL_REDIS;

    /* kept: the same users as the last mirror, which removed the others */
    if (gms_priv_write(&c, counts) != 0
        || (!counts->kept && gms_priv_remove(&c, counts) != 0))
    {
        goto done;
    }

    rc = (memo != NULL) ? gms_priv_memo_keep(&c, memo) : GMS_TOOL_OK;

done:

    gms_priv_free(&c);

    return rc;
}


void
gms_sync_privileges_print(const gms_tool_privileges_counts_t *counts)
{
    printf("users=%zu changed=%zu removed=%zu skipped=%zu\n", counts->users,
           counts->changed, counts->removed, counts->skipped);
}


/*
 * Whoever holds a token, from the listing of the sync just made: not
 * asked of GMS again.  A listing that ended short of its total is
 * incomplete, and refused.
 */

static int
gms_priv_token_holders(gms_priv_ctx_t *c, const gms_tool_holders_t *holders)
{
    size_t  i;

    if ((int64_t) holders->listed < holders->total) {
        gms_tool_msgs_error(c->tool, "%s: listAccessTokens lists %zu tokens of "
                            "a total of %lld: the list is incomplete, "
                            "privileges left as they are", c->url,
                            holders->listed,
                            (long long) holders->total);
        return GMS_TOOL_GMS;
    }

    for (i = 0; i < holders->n; i++) {
        if (gms_priv_add(&c->urns, holders->urns[i], strlen(holders->urns[i]))
            != 0)
        {
            gms_tool_msgs_error(c->tool, "out of memory");
            return GMS_TOOL_REDIS;
        }
    }

    return GMS_TOOL_OK;
}


/* every policy, page after page; the users the platform ones name */

static int
gms_priv_list_policies(gms_priv_ctx_t *c)
{
    size_t           i, j, listed, before;
    json_t          *vars, *page, *policies;
    json_int_t       total;
    gms_policy_t    *p;
    char             error[GMS_POLICY_ERROR_LEN];

    listed = 0;

    for ( ;; ) {
        vars = json_pack("{s:{s:I, s:I, s:s}}", "input", "start",
                         (json_int_t) listed, "count",
                         (json_int_t) GMS_PRIV_PAGE, "query", "");

        page = vars ? gms_graphql_query(c->g, GMS_PRIV_POLICIES_QUERY, vars,
                                        "listPolicies")
                    : NULL;
        if (page == NULL) {
            return GMS_TOOL_GMS;
        }

        if (gms_priv_page_total(c, page, "listPolicies", "policies",
                                &policies, &total)
            != 0)
        {
            json_decref(page);
            return GMS_TOOL_GMS;
        }

        before = c->policies.n;

        if (gms_policy_parse(policies, &c->policies, error) != 0) {
            gms_tool_msgs_error(c->tool, "%s: listPolicies at %zu: %s", c->url,
                                listed, error);
            json_decref(page);
            return GMS_TOOL_GMS;
        }

        for (i = before; i < c->policies.n; i++) {
            p = &c->policies.policies[i];

            for (j = 0; p->applies && j < p->users.n; j++) {
                if (gms_priv_add(&c->urns, p->users.s[j],
                                 strlen(p->users.s[j]))
                    != 0)
                {
                    json_decref(page);
                    return GMS_TOOL_REDIS;
                }
            }
        }

        listed += json_array_size(policies);
        json_decref(page);

        if ((json_int_t) listed >= total) {
            return GMS_TOOL_OK;
        }

        if (c->policies.n == before) {
            gms_tool_msgs_error(c->tool, "%s: listPolicies lists %zu policies "
                                "of a total of %lld: the list is incomplete, "
                                "privileges left as they are", c->url, listed,
                                (long long) total);
            return GMS_TOOL_GMS;
        }
    }
}


/* a page's items[] and total (Int!): both must be there */

static int
gms_priv_page_total(gms_priv_ctx_t *c, json_t *page, const char *what,
    const char *items, json_t **list, json_int_t *total)
{
    json_t  *v;

    *list = json_object_get(page, items);

    if (!json_is_array(*list)) {
        gms_tool_msgs_error(c->tool, "%s: data.%s.%s is %s", c->url, what,
                            items, *list ? "not an array" : "missing");
        return -1;
    }

    v = json_object_get(page, "total");

    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        gms_tool_msgs_error(c->tool, "%s: data.%s.total is not a count", c->url,
                            what);
        return -1;
    }

    *total = json_integer_value(v);

    return 0;
}


/*
 * Each user's groups and roles read by membership (or those of the memo,
 * if they answer for these policies and users), then matched
 */

static int
gms_priv_from_policies(gms_priv_ctx_t *c)
{
    int                  rc;
    size_t               i, j, n;
    const char         **granted;
    gms_members_t       *m;
    gms_policy_actor_t   a;

    if (c->memo != NULL && c->memo->members != NULL
        && gms_sync_members_covers(c->memo->members, &c->policies, c->urns.s,
                                   c->urns.n))
    {
        m = c->memo->members;

    } else {
        c->memo = NULL;

        rc = gms_sync_members_read(c->tool, c->g, c->url, &c->policies,
                                   c->urns.s, c->urns.n, &c->members);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }

        m = c->members;
    }

    for (i = 0; i < c->urns.n; i++) {
        gms_sync_members_actor(m, i, &a);

        if (gms_policy_grant(&c->policies, &a, &granted, &n) != 0) {
            rc = GMS_TOOL_REDIS;
            break;
        }

        for (j = 0; j < n; j++) {
            if (gms_priv_add(&c->users[i].privileges, granted[j],
                             strlen(granted[j]))
                != 0)
            {
                rc = GMS_TOOL_REDIS;
                break;
            }
        }

        free(granted);

        if (rc != GMS_TOOL_OK) {
            break;
        }
    }

    if (rc != GMS_TOOL_OK) {
        gms_tool_msgs_error(c->tool, "out of memory");
    }

    return rc;
}


/* getGrantedPrivileges, GMS_MEMBERS_BATCH users a request */

static int
gms_priv_from_graphql(gms_priv_ctx_t *c)
{
    int      rc;
    char    *query, name[32];
    size_t   i, k, n;
    json_t  *vars, *data;

    for (i = 0; i < c->urns.n; i += n) {
        n = c->urns.n - i < GMS_MEMBERS_BATCH ? c->urns.n - i
                                              : GMS_MEMBERS_BATCH;

        query = gms_priv_granted_query(n);
        vars = query ? json_object() : NULL;

        for (k = 0; vars && k < n; k++) {
            snprintf(name, sizeof(name), "i%zu", k);

            if (json_object_set_new(vars, name,
                                    json_pack("{s:s}", "actorUrn",
                                              c->users[i + k].urn))
                != 0)
            {
                json_decref(vars);
                vars = NULL;
            }
        }

        if (vars == NULL) {
            free(query);
            gms_tool_msgs_error(c->tool, "out of memory");
            return GMS_TOOL_REDIS;
        }

        data = gms_graphql_query(c->g, query, vars, NULL);
        free(query);

        if (data == NULL) {
            return GMS_TOOL_GMS;
        }

        rc = GMS_TOOL_OK;

        for (k = 0; rc == GMS_TOOL_OK && k < n; k++) {
            snprintf(name, sizeof(name), "g%zu", k);
            rc = gms_priv_granted(c, &c->users[i + k],
                                  json_object_get(data, name));
        }

        json_decref(data);

        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    return GMS_TOOL_OK;
}


/*
 * query getGrantedPrivileges($i0: GetGrantedPrivilegesInput!, ...) {
 * g0: getGrantedPrivileges(input: $i0) { privileges } ... }
 */

static char *
gms_priv_granted_query(size_t n)
{
    char    *query, *p, *end;
    size_t   k, size;

    size = sizeof("query getGrantedPrivileges() {\n}")
           + n * (sizeof(GMS_PRIV_GRANTED_ALIAS) + 2 * 20
                  + sizeof(GMS_PRIV_GRANTED_VARIABLES) + 20 + 2);

    query = malloc(size);
    if (query == NULL) {
        return NULL;
    }

    p = query;
    end = query + size;

    p += snprintf(p, end - p, "query getGrantedPrivileges(");

    for (k = 0; k < n; k++) {
        p += snprintf(p, end - p, "%s" GMS_PRIV_GRANTED_VARIABLES,
                      k ? ", " : "", k);
    }

    p += snprintf(p, end - p, ") {\n");

    for (k = 0; k < n; k++) {
        p += snprintf(p, end - p, GMS_PRIV_GRANTED_ALIAS, k, k);
    }

    snprintf(p, end - p, "}");

    return query;
}


/* one alias of the answer: the user's Privileges */

static int
gms_priv_granted(gms_priv_ctx_t *c, gms_priv_user_t *u, json_t *granted)
{
    size_t   i;
    json_t  *list, *v;

    list = json_object_get(granted, "privileges");

    if (!json_is_array(list)) {
        gms_tool_msgs_error(c->tool, "%s: getGrantedPrivileges of %s: %s",
                            c->url, gms_tool_msgs_shown(u->urn),
                            json_is_object(granted)
                            ? "privileges is not an array"
                            : "no Privileges object");
        return GMS_TOOL_GMS;
    }

    for (i = 0; i < json_array_size(list); i++) {
        v = json_array_get(list, i);

        if (!json_is_string(v)
            || !gms_token_privilege_valid(json_string_value(v),
                                          json_string_length(v)))
        {
            gms_tool_msgs_error(c->tool, "%s: getGrantedPrivileges of %s: "
                                "privileges[%zu] is not a privilege name",
                                c->url, gms_tool_msgs_shown(u->urn), i);
            return GMS_TOOL_GMS;
        }

        if (gms_priv_add(&u->privileges, json_string_value(v),
                         json_string_length(v))
            != 0)
        {
            gms_tool_msgs_error(c->tool, "out of memory");
            return GMS_TOOL_REDIS;
        }
    }

    gms_priv_sort_unique(&u->privileges);

    return GMS_TOOL_OK;
}


/* SMEMBERS of every user, pipelined; then each set that differs replaced */

static int
gms_priv_write(gms_priv_ctx_t *c, gms_tool_privileges_counts_t *counts)
{
    int               same;
    char             *key;
    size_t            i, key_len;
    gms_tool_t       *t;
    redisReply       *reply;
    gms_priv_user_t  *u;

    t = c->tool;

    for (i = 0; i < c->urns.n; i++) {
        key = gms_tool_redis_key(t, GMS_KEY_ACTOR, c->users[i].urn,
                                 strlen(c->users[i].urn), &key_len);
        if (key == NULL) {
            return -1;
        }

        gms_tool_conn_append(t, "SMEMBERS %b", key, key_len);
        free(key);
    }

    /* every reply is read before anything is written */

    for (i = 0; i < c->urns.n; i++) {
        (void) gms_tool_conn_get_reply(t, &reply);

        if (gms_tool_redis_reply_error(t, reply, "SMEMBERS") != 0) {
            return -1;
        }

        same = gms_priv_same(reply, &c->users[i].privileges);
        freeReplyObject(reply);

        if (same < 0) {
            gms_tool_msgs_error(t, "redis %s: SMEMBERS: unexpected reply",
                                t->redis);
            return -1;
        }

        c->users[i].changed = !same;
    }

    /*
     * A set the edge would refuse (it answers 503 for every request of
     * the user) is not written: the user's set stays as it was, as after
     * a failure, and the others are written.
     */

    for (i = 0; i < c->urns.n; i++) {
        u = &c->users[i];

        if (u->privileges.n > GMS_PRIVILEGES_MAX) {
            gms_tool_msgs_warn(t, "%s: %s has %zu privileges, more than the "
                               "edge accepts (%d): the set left as it was",
                               c->url, gms_tool_msgs_shown(u->urn),
                               u->privileges.n, GMS_PRIVILEGES_MAX);
            u->changed = 0;
            counts->skipped++;
        }
    }

    for (i = 0; i < c->urns.n; i++) {
        u = &c->users[i];

        if (!u->changed) {
            continue;
        }

        if (gms_priv_replace(t, u) != 0
            || gms_tool_redis_publish(t, u->urn, strlen(u->urn)) != 0)
        {
            return -1;
        }

        counts->changed++;
    }

    return 0;
}


/* the set replaced in one transaction: MULTI, DEL, SADD, EXEC */

static int
gms_priv_replace(gms_tool_t *t, gms_priv_user_t *u)
{
    int           rc;
    char         *key;
    size_t        i, n, key_len, *lens;
    redisReply   *reply;
    const char  **argv;

    key = gms_tool_redis_key(t, GMS_KEY_ACTOR, u->urn, strlen(u->urn),
                             &key_len);
    if (key == NULL) {
        return -1;
    }

    n = u->privileges.n + 2;
    argv = malloc(n * sizeof(char *));
    lens = malloc(n * sizeof(size_t));

    if (argv == NULL || lens == NULL) {
        free(key);
        free(argv);
        free(lens);
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    argv[0] = "SADD";
    lens[0] = 4;
    argv[1] = key;
    lens[1] = key_len;

    for (i = 0; i < u->privileges.n; i++) {
        argv[i + 2] = u->privileges.s[i];
        lens[i + 2] = strlen(u->privileges.s[i]);
    }

    gms_tool_conn_append(t, "MULTI");
    gms_tool_conn_append(t, "DEL %b", key, key_len);

    if (u->privileges.n) {
        gms_tool_conn_append_argv(t, (int) n, argv, lens);
    }

    gms_tool_conn_append(t, "EXEC");

    free(key);
    free(argv);
    free(lens);

    rc = 0;
    n = u->privileges.n ? 4 : 3;

    for (i = 0; i < n; i++) {
        if (gms_tool_conn_get_reply(t, &reply) != 0) {
            return gms_tool_redis_reply_error(t, NULL, "EXEC");
        }

        if (rc == 0 && (reply->type == REDIS_REPLY_ERROR
                        || (i == n - 1 && reply->type != REDIS_REPLY_ARRAY)))
        {
            gms_tool_msgs_error(t, "redis %s: %s: %s", t->redis,
                                i == n - 1 ? "EXEC" : "MULTI",
                                reply->type == REDIS_REPLY_ERROR
                                ? reply->str : "the transaction was not run");
            rc = -1;
        }

        freeReplyObject(reply);
    }

    return rc;
}


/* 1: the reply holds exactly these privileges, 0: not, -1: not a set */

static int
gms_priv_same(redisReply *reply, gms_priv_list_t *privileges)
{
    size_t  i, j;

    if (reply->type != REDIS_REPLY_ARRAY) {
        return -1;
    }

    if (reply->elements != privileges->n) {
        return 0;
    }

    /* privileges is sorted and unique, and so is a set's members */
    for (i = 0; i < reply->elements; i++) {
        if (reply->element[i]->type != REDIS_REPLY_STRING) {
            return -1;
        }

        for (j = 0; j < privileges->n; j++) {
            if (strlen(privileges->s[j]) == reply->element[i]->len
                && memcmp(privileges->s[j], reply->element[i]->str,
                          reply->element[i]->len) == 0)
            {
                break;
            }
        }

        if (j == privileges->n) {
            return 0;
        }
    }

    return 1;
}


/*
 * SCAN MATCH <prefix>actor:*: the sets of users no longer known are
 * collected first, then deleted, each deletion published.
 */

static int
gms_priv_remove(gms_priv_ctx_t *c, gms_tool_privileges_counts_t *counts)
{
    int               rc;
    char             *p, *urn;
    size_t            i, base, len;
    gms_tool_t       *t;
    redisReply       *keys, *key, *del;
    gms_priv_list_t   gone;
    gms_tool_scan_t   scan;

    t = c->tool;
    base = t->prefix_len + sizeof(GMS_KEY_ACTOR) - 1;

    memset(&gone, 0, sizeof(gms_priv_list_t));

    if (gms_tool_redis_scan_open(t, &scan, GMS_KEY_ACTOR) != 0) {
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

            if (key->type != REDIS_REPLY_STRING || key->len <= base) {
                continue;
            }

            urn = key->str + base;

            /* a name with a NUL in it is no URN: not a set to delete */
            if (memchr(urn, '\0', key->len - base) != NULL
                || (c->urns.n
                    && bsearch(&urn, c->urns.s, c->urns.n, sizeof(char *),
                               gms_policy_strcmp)))
            {
                continue;
            }

            if (gms_priv_add(&gone, urn, key->len - base) != 0) {
                goto done;
            }
        }

    } while (!scan.done);

    /* SCAN may return a key twice */
    gms_priv_sort_unique(&gone);

    for (i = 0; i < gone.n; i++) {
        urn = gone.s[i];
        len = strlen(urn);

        p = gms_tool_redis_key(t, GMS_KEY_ACTOR, urn, len, &base);
        if (p == NULL) {
            goto done;
        }

        del = gms_tool_conn_command(t, "DEL %b", p, base);
        free(p);

        if (gms_tool_redis_reply_error(t, del, "DEL") != 0) {
            goto done;
        }

        if (del->type == REDIS_REPLY_INTEGER && del->integer > 0) {
            counts->removed++;

            if (gms_tool_redis_publish(t, urn, len) != 0) {
                freeReplyObject(del);
                goto done;
            }
        }

        freeReplyObject(del);
    }

    rc = 0;

done:

    gms_tool_redis_scan_close(&scan);
    gms_priv_list_free(&gone);

    return rc;
}


static int
gms_priv_add(gms_priv_list_t *l, const char *s, size_t len)
{
    char  **p;

    if (l->n == l->nalloc) {
        l->nalloc = l->nalloc ? 2 * l->nalloc : 16;
        p = realloc(l->s, l->nalloc * sizeof(char *));

        if (p == NULL) {
            return -1;
        }

        l->s = p;
    }

    l->s[l->n] = malloc(len + 1);
    if (l->s[l->n] == NULL) {
        return -1;
    }

    memcpy(l->s[l->n], s, len);
    l->s[l->n][len] = '\0';
    l->n++;

    return 0;
}


static void
gms_priv_sort_unique(gms_priv_list_t *l)
{
    size_t  i, k;

    if (l->n == 0) {
        return;
    }

    qsort(l->s, l->n, sizeof(char *), gms_policy_strcmp);

    for (k = 1, i = 1; i < l->n; i++) {
        if (strcmp(l->s[k - 1], l->s[i]) == 0) {
            free(l->s[i]);
            continue;
        }

        l->s[k++] = l->s[i];
    }

    l->n = k;
}


static void
gms_priv_list_free(gms_priv_list_t *l)
{
    size_t  i;

    for (i = 0; i < l->n; i++) {
        free(l->s[i]);
    }

    free(l->s);
    memset(l, 0, sizeof(gms_priv_list_t));
}


/*
 * A mirror that read the members leaves them, with its users, for the
 * next one (the users move: the members point at them)
 */

static int
gms_priv_memo_keep(gms_priv_ctx_t *c, gms_tool_privileges_memo_t **memo)
{
    gms_tool_privileges_memo_t  *keep;

    if (c->members == NULL) {
        if (c->memo == NULL) {
            /* graphql, or no one to mirror: nothing known to keep */
            gms_sync_privileges_memo_free(*memo);
            *memo = NULL;
        }

        return GMS_TOOL_OK;
    }

    keep = calloc(1, sizeof(gms_tool_privileges_memo_t));
    if (keep == NULL) {
        gms_tool_msgs_error(c->tool, "out of memory");
        return GMS_TOOL_REDIS;
    }

    keep->urns = c->urns;
    keep->members = c->members;
    memset(&c->urns, 0, sizeof(gms_priv_list_t));
    c->members = NULL;

    gms_sync_privileges_memo_free(*memo);
    *memo = keep;

    return GMS_TOOL_OK;
}


void
gms_sync_privileges_memo_free(gms_tool_privileges_memo_t *memo)
{
    if (memo == NULL) {
        return;
    }

    gms_sync_members_free(memo->members);
    gms_priv_list_free(&memo->urns);
    free(memo);
}


static void
gms_priv_free(gms_priv_ctx_t *c)
{
    size_t  i;

    gms_graphql_close(c->g);
    gms_sync_members_free(c->members);

    for (i = 0; i < c->nusers; i++) {
        gms_priv_list_free(&c->users[i].privileges);
    }

    free(c->users);
    gms_priv_list_free(&c->urns);
    gms_policy_list_free(&c->policies);
}

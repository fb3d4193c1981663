
/*
 * gms-token's inactive users read from GMS (gms_sync_users.c says what is
 * read and why): the users asked GMS_USERS_BATCH a request,
 * GMS_USERS_PARALLEL requests at once, a batch GMS fails on split in two;
 * each answer read as StatelessTokenService's isActive reads the aspects;
 * DataHub's OAuth users listed by their SERVICE sub-type.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_oauth.h"
#include "gms_users_ask.h"
#include "gms_tool_msgs.h"


/*
 * Requests in flight at once (a wave): GMS runs each GraphQL request on a
 * thread pool (GraphQLController.postGraphQL through
 * GraphQLConcurrencyUtils.supplyAsync), and DataHub's own UI sends
 * several queries at once.  The load is the same requests, sooner:
 * 20,000 users, 400 requests of 20 ms, take some 1 s rather than 8, so
 * that a suspension is applied within --privileges-interval + 2 s
 */
#define GMS_USERS_PARALLEL     8

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


static int gms_users_wave(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const size_t *ask, size_t n);
static int gms_users_oauth_page(gms_users_t *u, json_t *page,
    size_t *nalloc);
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
static int gms_users_urn_cmp(const void *one, const void *two);


/*
 * Every user to ask, GMS_USERS_BATCH a request, GMS_USERS_PARALLEL
 * requests at once (a wave); skip->between, if any, called between two
 * waves.  A request GMS fails on for each of its users fails the check.
 */

int
gms_users_ask_all(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u,
    const gms_tool_users_skip_t *skip)
{
    int     rc, quiet;
    char    error[sizeof(t->error)];
    size_t  i, n, wave, *ask;

    ask = malloc((u->n ? u->n : 1) * sizeof(size_t));
    if (ask == NULL) {
        gms_tool_msgs_error(t, "out of memory");
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
        gms_tool_msgs_error(t, "%s", error);
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
            gms_tool_msgs_error(t, "%s", q[k].error);
            rc = gms_users_split(t, g, u, ask + i, batch);
        }

        /*
         * GMS failing on every user of a request fails on the request
         * (a schema without these fields, a token it refuses): not the
         * users' doing, and no use asking about the others
         */
        if (rc == GMS_TOOL_OK && batch > 1 && u->failed - failed == batch) {
            gms_tool_msgs_error(t, "GMS failed on each of the %zu users of a "
                                "request: %s", batch, u->error);
            rc = GMS_TOOL_GMS;
        }

        json_decref(q[k].data);
    }

    return rc;
}


/*
 * DataHub's OAuth users, every page of the scroll (GMS_USERS_OAUTH_QUERY):
 * those of the sub-type whose URN is one ServiceAccountService.
 * buildServiceUserUrn makes, sorted and unique.  A page GMS fails on fails
 * the check: a user missed would never be refused.
 */

int
gms_users_ask_oauth(gms_tool_t *t, gms_graphql_t *g, gms_users_t *u)
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
            gms_tool_msgs_error(t, "out of memory");
            goto done;
        }

        page = gms_graphql_query(g, GMS_USERS_OAUTH_QUERY, vars,
                                 "scrollAcrossEntities");
        if (page == NULL) {
            gms_tool_msgs_error(t, "listing DataHub's OAuth users: %s",
                                t->error);
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
            gms_tool_msgs_error(t, "out of memory");
            goto done;
        }

        json_decref(page);

        if (scroll == NULL) {
            break;
        }
    }

    if (pages == GMS_USERS_OAUTH_PAGES) {
        gms_tool_msgs_error(t, "listing DataHub's OAuth users: GMS's scroll "
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
        gms_tool_msgs_error(t, "out of memory");
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
            gms_tool_msgs_error(t, "out of memory");
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


static int
gms_users_urn_cmp(const void *one, const void *two)
{
    return strcmp(*(char *const *) one, *(char *const *) two);
}

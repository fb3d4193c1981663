
/*
 * gms-token: each user's groups and roles, as far as DataHub's platform
 * policies need them, read by membership: the members of each group and
 * role an active platform policy names, not the memberships of each user.
 * The requests grow with those groups and roles (and their size), not
 * with the users.
 *
 * DataHub's PolicyEngine (metadata-service/auth-impl/.../PolicyEngine.java,
 * isActorMatch) matches a user to a policy's groups with the user's
 * groupMembership and nativeGroupMembership aspects (resolveGroups, by
 * GroupMembershipFieldResolverProvider and GroupService.getGroupsForUser),
 * and to its roles with the user's roleMembership and that of each of its
 * groups (resolveRoles: SessionActorIdentity.resolveAllRoles,
 * GroupService.fetchRolesViaGroups).  Those aspects are the graph's
 * IsMemberOfGroup, IsMemberOfNativeGroup (user to group) and
 * IsMemberOfRole (user or group to dataHubRole) edges (the @Relationship
 * of GroupMembership.pdl, NativeGroupMembership.pdl, RoleMembership.pdl),
 * so the same sets come from the other end:
 *
 *  - a group's members: corpGroup(urn) { relationships(INCOMING,
 *    IsMemberOfGroup and IsMemberOfNativeGroup) }, users only: a group is
 *    no member of a group (corpGroup has no groupMembership aspect in
 *    entity-registry.yml, and PolicyEngine does not nest groups);
 *  - a role's members: entity(urn) { relationships(INCOMING,
 *    IsMemberOfRole) }: users, which have the role, and groups, whose
 *    members have it (one level, as fetchRolesViaGroups): each such group
 *    is asked for its members as above.  entity(urn) loads the URN with
 *    its own type's loader, DataHubRoleType for urn:li:dataHubRole:...
 *    (Query.role is the Role type's, urn:li:role:..., another entity),
 *    and relationships is a field of the Entity interface: no fragment;
 *  - allGroups needs to know whether a user is in any group, which no
 *    group can say: the users not found in a group above are asked
 *    (corpUser(urn) { relationships(OUTGOING, the two group types) }),
 *    GMS_MEMBERS_BATCH users a request, until a group is found.
 *
 * Every question is a root field under an alias (m0, m1, ...):
 * GMS_MEMBERS_BATCH of them a request, each a page of GMS_MEMBERS_PAGE
 * relationships.  A group's or role's first page gives its total; its
 * other pages are then asked together.  A group or role that GMS answers
 * null has no members, and a user it answers null is in no group, as a
 * relationship whose entity is null counts for nothing (what the mirror
 * did user by user).  Members who are not among the users mirrored (no
 * token, named by no policy) are not kept.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <jansson.h>

#include "gms_token.h"
#include "gms_sync_members.h"
#include "gms_tool_msgs.h"


/* relationships asked an alias */
#define GMS_MEMBERS_PAGE       100

/* an entity's total, before its first page and when GMS gives none */
#define GMS_MEMBERS_UNASKED    -2
#define GMS_MEMBERS_NO_TOTAL   -1

/* entity.graphql: Entity.relationships(input: RelationshipsInput!) */
#define GMS_MEMBERS_ALIAS                                                    \
    "  m%zu: %s(urn: $u%zu) {\n"                                             \
    "    relationships(input: $r%zu) {\n"                                    \
    "      total\n      relationships {\n        type\n"                     \
    "        entity {\n          urn\n        }\n      }\n    }\n  }\n"

#define GMS_MEMBERS_VARIABLES  "$u%zu: String!, $r%zu: RelationshipsInput!"

/* with three numbers of up to 20 digits and a field's name */
#define GMS_MEMBERS_ALIAS_LEN  (sizeof(GMS_MEMBERS_ALIAS) + 3 * 20 + 16)
#define GMS_MEMBERS_VARS_LEN   (sizeof(GMS_MEMBERS_VARIABLES) + 2 * 20 + 2)


typedef enum {
    GMS_MEMBERS_GROUP = 0,     /* a group: its members */
    GMS_MEMBERS_ROLE,          /* a role: its users and groups */
    GMS_MEMBERS_USER           /* a user: its groups */
} gms_members_kind_e;


/* a growing list of strings, owned or borrowed as its user says */
typedef struct {
    const char           **s;
    size_t                 n;
    size_t                 nalloc;
} gms_members_list_t;


/* users, by their index in the users mirrored */
typedef struct {
    size_t                *i;
    size_t                 n;
    size_t                 nalloc;
} gms_members_users_t;


typedef struct {
    char                  *urn;
    gms_members_kind_e     kind;
    size_t                 user;       /* USER: its index */
    json_int_t             total;      /* the first page's, or above */
    size_t                 next;       /* the start of the next page */
    char                  *first;      /* "type urn" that page 0 starts */
    unsigned               done:1;
    gms_members_users_t    users;      /* GROUP, ROLE: the users in it */
    gms_members_list_t     groups;     /* ROLE: groups in it; USER: its
                                          groups (owned) */
} gms_members_entity_t;


typedef struct {
    size_t                 entity;
    size_t                 start;
} gms_members_ask_t;


struct gms_members_s {
    gms_tool_t            *tool;
    gms_graphql_t         *g;
    const char            *url;
    char *const           *users;      /* sorted, unique */
    size_t                 nusers;
    gms_members_entity_t  *e;
    size_t                 ne;
    size_t                 nalloc;
    gms_members_list_t    *groups;     /* each user's, borrowed */
    gms_members_list_t    *roles;      /* each user's, borrowed */
    unsigned               all_groups:1;   /* a user's groups asked */
    gms_members_ask_t      ask[GMS_MEMBERS_BATCH];
    size_t                 nask;
};


static int gms_members_named(gms_members_t *m, const gms_policies_t *p,
    int *all_groups);
static int gms_members_run(gms_members_t *m, size_t from);
static void gms_members_asks(gms_members_t *m, size_t from);
static int gms_members_request(gms_members_t *m);
static char *gms_members_query(gms_members_t *m);
static json_t *gms_members_variables(gms_members_t *m);
static int gms_members_page(gms_members_t *m, json_t *data, size_t k);
static int gms_members_one(gms_members_t *m, size_t idx, json_t *rel,
    size_t at);
static int gms_members_assign(gms_members_t *m, size_t from);
static ssize_t gms_members_entity(gms_members_t *m, const char *urn,
    gms_members_kind_e kind, size_t user);
static ssize_t gms_members_find(const gms_members_t *m, const char *urn,
    gms_members_kind_e kind);
static const char *gms_members_field(gms_members_kind_e kind);
static int gms_members_user(gms_members_t *m, const char *urn,
    size_t *user);
static int gms_members_add(gms_members_list_t *l, const char *s, int copy);
static int gms_members_add_user(gms_members_users_t *u, size_t user);
static void gms_members_list_free(gms_members_list_t *l, int owned);


/*
 * The groups and roles of users[0..n-1] (sorted, unique), read from GMS
 * as the policies need them: GMS_TOOL_OK and *out, or GMS_TOOL_GMS (GMS
 * failed, or answered what fails the checks) or GMS_TOOL_REDIS (no
 * memory), with one line on stderr.
 */

int
gms_sync_members_read(gms_tool_t *t, gms_graphql_t *g, const char *url,
    const gms_policies_t *policies, char *const *users, size_t n,
    gms_members_t **out)
{
    int             rc, all_groups;
    size_t          i, from;
    gms_members_t  *m;

    *out = NULL;

    m = calloc(1, sizeof(gms_members_t));
    if (m == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    m->tool = t;
    m->g = g;
    m->url = url;
    m->users = users;
    m->nusers = n;

    if (n == 0) {
        *out = m;
        return GMS_TOOL_OK;
    }

    m->groups = calloc(n, sizeof(gms_members_list_t));
    m->roles = calloc(n, sizeof(gms_members_list_t));

    if (m->groups == NULL || m->roles == NULL
        || gms_members_named(m, policies, &all_groups) != 0)
    {
        gms_tool_msgs_error(t, "out of memory");
        gms_sync_members_free(m);
        return GMS_TOOL_REDIS;
    }

    m->all_groups = all_groups;

    /* the groups and roles named, and the groups of those roles */

    rc = gms_members_run(m, 0);

    if (rc == GMS_TOOL_OK && gms_members_assign(m, 0) != 0) {
        rc = GMS_TOOL_REDIS;
    }

    /* for allGroups, whoever was in none of them */

    from = m->ne;

    for (i = 0; rc == GMS_TOOL_OK && all_groups && i < n; i++) {
        if (m->groups[i].n == 0
            && gms_members_entity(m, users[i], GMS_MEMBERS_USER, i) < 0)
        {
            rc = GMS_TOOL_REDIS;
        }
    }

    if (rc == GMS_TOOL_OK) {
        rc = gms_members_run(m, from);
    }

    if (rc == GMS_TOOL_OK && gms_members_assign(m, from) != 0) {
        rc = GMS_TOOL_REDIS;
    }

    if (rc != GMS_TOOL_OK) {
        if (rc == GMS_TOOL_REDIS) {
            gms_tool_msgs_error(t, "out of memory");
        }

        gms_sync_members_free(m);
        return rc;
    }

    for (i = 0; i < n; i++) {
        m->groups[i].n = gms_policy_unique(m->groups[i].s, m->groups[i].n);
        m->roles[i].n = gms_policy_unique(m->roles[i].s, m->roles[i].n);
    }

    *out = m;

    return GMS_TOOL_OK;
}


/*
 * Whether what m read answers for these policies and users as a new read
 * would, if nobody joined or left a group or a role since: the same
 * users, and every group and role the policies name among those it read
 * (allGroups, only if it asked the users' groups).  The policies may name
 * fewer: the others' members are read, and not used.
 */

int
gms_sync_members_covers(const gms_members_t *m, const gms_policies_t *p,
    char *const *users, size_t n)
{
    size_t               i, j;
    const gms_policy_t  *pol;

    if (m->nusers != n) {
        return 0;
    }

    for (i = 0; i < n; i++) {
        if (strcmp(m->users[i], users[i]) != 0) {
            return 0;
        }
    }

    if (n == 0) {
        return 1;
    }

    for (i = 0; i < p->n; i++) {
        pol = &p->policies[i];

        if (!pol->applies) {
            continue;
        }

        if (pol->all_groups && !m->all_groups) {
            return 0;
        }

        for (j = 0; j < pol->groups.n; j++) {
            if (gms_members_find(m, pol->groups.s[j], GMS_MEMBERS_GROUP) < 0) {
                return 0;
            }
        }

        for (j = 0; j < pol->roles.n; j++) {
            if (gms_members_find(m, pol->roles.s[j], GMS_MEMBERS_ROLE) < 0) {
                return 0;
            }
        }
    }

    return 1;
}


/* the user's groups and roles, as gms_policy_grant() takes them */

void
gms_sync_members_actor(const gms_members_t *m, size_t user,
    gms_policy_actor_t *a)
{
    a->urn = m->users[user];
    a->groups = NULL;
    a->ngroups = 0;
    a->roles = NULL;
    a->nroles = 0;

    if (m->groups == NULL) {
        return;
    }

    a->groups = m->groups[user].s;
    a->ngroups = m->groups[user].n;
    a->roles = m->roles[user].s;
    a->nroles = m->roles[user].n;
}


void
gms_sync_members_free(gms_members_t *m)
{
    size_t                 i;
    gms_members_entity_t  *e;

    if (m == NULL) {
        return;
    }

    for (i = 0; i < m->ne; i++) {
        e = &m->e[i];
        free(e->urn);
        free(e->first);
        free(e->users.i);
        gms_members_list_free(&e->groups, 1);
    }

    for (i = 0; m->groups && i < m->nusers; i++) {
        gms_members_list_free(&m->groups[i], 0);
    }

    for (i = 0; m->roles && i < m->nusers; i++) {
        gms_members_list_free(&m->roles[i], 0);
    }

    free(m->e);
    free(m->groups);
    free(m->roles);
    free(m);
}


/* the groups, then the roles, that the active platform policies name */

static int
gms_members_named(gms_members_t *m, const gms_policies_t *p, int *all_groups)
{
    size_t               i, j;
    const gms_policy_t  *pol;

    *all_groups = 0;

    for (i = 0; i < p->n; i++) {
        pol = &p->policies[i];

        if (!pol->applies) {
            continue;
        }

        *all_groups |= pol->all_groups;

        for (j = 0; j < pol->groups.n; j++) {
            if (gms_members_entity(m, pol->groups.s[j], GMS_MEMBERS_GROUP, 0)
                < 0)
            {
                return -1;
            }
        }
    }

    for (i = 0; i < p->n; i++) {
        pol = &p->policies[i];

        for (j = 0; pol->applies && j < pol->roles.n; j++) {
            if (gms_members_entity(m, pol->roles.s[j], GMS_MEMBERS_ROLE, 0)
                < 0)
            {
                return -1;
            }
        }
    }

    return 0;
}


/* asks the entities from "from" on, and any they add, until all are done */

static int
gms_members_run(gms_members_t *m, size_t from)
{
    int  rc;

    for ( ;; ) {
        gms_members_asks(m, from);

        if (m->nask == 0) {
            return GMS_TOOL_OK;
        }

        rc = gms_members_request(m);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }
}


/*
 * The pages of the next request.  An entity's first page, and each page
 * of one whose total GMS did not give, is asked alone: only its answer
 * says whether more follow.  Once the total is known, the other pages
 * are asked together, as many as a request holds.
 */

static void
gms_members_asks(gms_members_t *m, size_t from)
{
    size_t                 i;
    gms_members_entity_t  *e;

    m->nask = 0;

    for (i = from; i < m->ne && m->nask < GMS_MEMBERS_BATCH; i++) {
        e = &m->e[i];

        if (e->done) {
            continue;
        }

        if (e->total < 0) {
            m->ask[m->nask].entity = i;
            m->ask[m->nask].start = e->next;
            m->nask++;
            continue;
        }

        while (e->next < (size_t) e->total && m->nask < GMS_MEMBERS_BATCH) {
            m->ask[m->nask].entity = i;
            m->ask[m->nask].start = e->next;
            m->nask++;
            e->next += GMS_MEMBERS_PAGE;
        }
    }
}


static int
gms_members_request(gms_members_t *m)
{
    int                    rc;
    char                  *query;
    size_t                 k;
    json_t                *vars, *data;
    gms_members_entity_t  *e;

    query = gms_members_query(m);
    vars = query ? gms_members_variables(m) : NULL;

    if (vars == NULL) {
        free(query);
        return GMS_TOOL_REDIS;
    }

    data = gms_graphql_query(m->g, query, vars, NULL);
    free(query);

    if (data == NULL) {
        return GMS_TOOL_GMS;
    }

    rc = GMS_TOOL_OK;

    for (k = 0; rc == GMS_TOOL_OK && k < m->nask; k++) {
        rc = gms_members_page(m, data, k);
    }

    json_decref(data);

    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    /* what the pages asked leave to ask */

    for (k = 0; k < m->nask; k++) {
        e = &m->e[m->ask[k].entity];

        if ((e->total >= 0 && e->next >= (size_t) e->total)
            || (e->kind == GMS_MEMBERS_USER && e->groups.n > 0))
        {
            e->done = 1;
        }
    }

    return GMS_TOOL_OK;
}


/* query members($u0: String!, $r0: RelationshipsInput!, ...) { m0: ... } */

static char *
gms_members_query(gms_members_t *m)
{
    char    *query, *p, *end;
    size_t   k, size;

    size = sizeof("query members() {\n}") + m->nask * (GMS_MEMBERS_ALIAS_LEN
                                                       + GMS_MEMBERS_VARS_LEN);

    query = malloc(size);
    if (query == NULL) {
        return NULL;
    }

    p = query;
    end = query + size;

    p += snprintf(p, end - p, "query members(");

    for (k = 0; k < m->nask; k++) {
        p += snprintf(p, end - p, "%s" GMS_MEMBERS_VARIABLES,
                      k ? ", " : "", k, k);
    }

    p += snprintf(p, end - p, ") {\n");

    for (k = 0; k < m->nask; k++) {
        p += snprintf(p, end - p, GMS_MEMBERS_ALIAS, k,
                      gms_members_field(m->e[m->ask[k].entity].kind), k, k);
    }

    snprintf(p, end - p, "}");

    return query;
}


static json_t *
gms_members_variables(gms_members_t *m)
{
    int                    ok;
    char                   name[32];
    size_t                 k;
    json_t                *vars, *types;
    gms_members_entity_t  *e;

    vars = json_object();
    if (vars == NULL) {
        return NULL;
    }

    for (k = 0; k < m->nask; k++) {
        e = &m->e[m->ask[k].entity];

        types = e->kind == GMS_MEMBERS_ROLE
                ? json_pack("[s]", "IsMemberOfRole")
                : json_pack("[s, s]", "IsMemberOfGroup",
                            "IsMemberOfNativeGroup");

        snprintf(name, sizeof(name), "u%zu", k);
        ok = json_object_set_new(vars, name, json_string(e->urn)) == 0;

        snprintf(name, sizeof(name), "r%zu", k);
        ok = ok && types
             && json_object_set_new(vars, name, json_pack(
                    "{s:o, s:s, s:I, s:I}", "types", types, "direction",
                    e->kind == GMS_MEMBERS_USER ? "OUTGOING" : "INCOMING",
                    "start", (json_int_t) m->ask[k].start,
                    "count", (json_int_t) GMS_MEMBERS_PAGE))
                == 0;

        if (!ok) {
            json_decref(vars);
            return NULL;
        }
    }

    return vars;
}


/*
 * The answer of the kth alias: one page of an entity's relationships.
 * Its total is a nullable Int: without it, a short page is the last.
 */

static int
gms_members_page(gms_members_t *m, json_t *data, size_t k)
{
    int                    rc;
    char                  *first;
    size_t                 i, n, idx, start;
    json_t                *v, *result, *list, *rel, *type, *to;
    json_int_t             total;
    const char            *field, *urn;
    gms_members_entity_t  *e;
    char                   alias[32];

    idx = m->ask[k].entity;
    start = m->ask[k].start;
    e = &m->e[idx];
    field = gms_members_field(e->kind);

    snprintf(alias, sizeof(alias), "m%zu", k);
    v = json_object_get(data, alias);

    if (v == NULL || !(json_is_object(v) || json_is_null(v))) {
        gms_tool_msgs_error(m->tool, "%s: %s %s: data.%s is %s", m->url, field,
                            gms_tool_msgs_shown(e->urn), alias,
                            v ? "not an object" : "missing");
        return GMS_TOOL_GMS;
    }

    result = json_object_get(v, "relationships");

    /* an entity GMS does not have, or no relationships: none */
    if (json_is_null(v) || json_is_null(result)) {
        e->done = 1;
        return GMS_TOOL_OK;
    }

    list = json_object_get(result, "relationships");

    if (!json_is_object(result) || !json_is_array(list)) {
        gms_tool_msgs_error(m->tool, "%s: %s %s: no "
                            "relationships.relationships array", m->url,
                            field, gms_tool_msgs_shown(e->urn));
        return GMS_TOOL_GMS;
    }

    v = json_object_get(result, "total");
    total = json_is_integer(v) && json_integer_value(v) >= 0
            ? json_integer_value(v) : GMS_MEMBERS_NO_TOTAL;
    n = json_array_size(list);

    if (n == 0 && total > (json_int_t) start) {
        gms_tool_msgs_error(m->tool, "%s: %s %s: no relationships at %zu of a "
                            "total of %lld: the list is incomplete, privileges "
                            "left as they are", m->url, field,
                            gms_tool_msgs_shown(e->urn), start,
                            (long long) total);
        return GMS_TOOL_GMS;
    }

    /* a GMS (or a proxy) that ignores start answers page 0 again */

    if (n > 0) {
        rel = json_array_get(list, 0);
        type = json_object_get(rel, "type");
        to = json_object_get(json_object_get(rel, "entity"), "urn");
        urn = json_is_string(to) ? json_string_value(to) : "";

        if (json_is_string(type)) {
            first = malloc(json_string_length(type) + strlen(urn) + 2);
            if (first == NULL) {
                return GMS_TOOL_REDIS;
            }

            sprintf(first, "%s %s", json_string_value(type), urn);

            if (start > 0 && e->first && strcmp(first, e->first) == 0) {
                gms_tool_msgs_error(m->tool, "%s: %s %s: the page at %zu "
                                    "starts as the first did (does GMS ignore "
                                    "start?): privileges left as they are",
                                    m->url, field, gms_tool_msgs_shown(e->urn),
                                    start);
                free(first);
                return GMS_TOOL_GMS;
            }

            if (start == 0) {
                free(e->first);
                e->first = first;

            } else {
                free(first);
            }
        }
    }

    for (i = 0; i < n; i++) {
        rc = gms_members_one(m, idx, json_array_get(list, i), start + i);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    /* the entity may have moved: gms_members_one() adds groups */
    e = &m->e[idx];

    if (start == 0) {
        e->total = total;
        e->next = 0;
    }

    if (e->total < 0) {
        if (n < GMS_MEMBERS_PAGE) {
            e->done = 1;

        } else {
            e->next = start + GMS_MEMBERS_PAGE;
        }

    } else if (start == 0) {
        e->next = GMS_MEMBERS_PAGE;
    }

    return GMS_TOOL_OK;
}


/* one relationship: a member (of a group or role), or a user's group */

static int
gms_members_one(gms_members_t *m, size_t idx, json_t *rel, size_t at)
{
    size_t                 user;
    json_t                *to, *v;
    const char            *urn, *field;
    gms_members_entity_t  *e;

    e = &m->e[idx];
    field = gms_members_field(e->kind);

    if (!json_is_string(json_object_get(rel, "type"))) {
        gms_tool_msgs_error(m->tool, "%s: %s %s: relationships[%zu]: type is "
                            "not a string", m->url, field,
                            gms_tool_msgs_shown(e->urn), at);
        return GMS_TOOL_GMS;
    }

    to = json_object_get(rel, "entity");

    /* an entity GMS resolves to null counts for nothing */
    if (to == NULL || json_is_null(to)) {
        return GMS_TOOL_OK;
    }

    v = json_object_get(to, "urn");

    if (!json_is_string(v)
        || !gms_token_actor_valid(json_string_value(v), json_string_length(v)))
    {
        gms_tool_msgs_error(m->tool, "%s: %s %s: relationships[%zu]: "
                            "entity.urn is not a URN", m->url, field,
                            gms_tool_msgs_shown(e->urn), at);
        return GMS_TOOL_GMS;
    }

    urn = json_string_value(v);

    switch (e->kind) {

    case GMS_MEMBERS_USER:
        return gms_members_add(&e->groups, urn, 1) == 0 ? GMS_TOOL_OK
                                                        : GMS_TOOL_REDIS;

    case GMS_MEMBERS_GROUP:

        /* users only: DataHub's groups hold no groups */
        if (gms_members_user(m, urn, &user)) {
            return gms_members_add_user(&e->users, user) == 0
                   ? GMS_TOOL_OK : GMS_TOOL_REDIS;
        }

        return GMS_TOOL_OK;

    default: /* GMS_MEMBERS_ROLE */

        if (gms_members_user(m, urn, &user)) {
            return gms_members_add_user(&e->users, user) == 0
                   ? GMS_TOOL_OK : GMS_TOOL_REDIS;
        }

        /* a group holding the role: its members hold it too */
        if (strncmp(urn, "urn:li:corpGroup:", 17) != 0) {
            return GMS_TOOL_OK;
        }

        if (gms_members_add(&e->groups, urn, 1) != 0
            || gms_members_entity(m, urn, GMS_MEMBERS_GROUP, 0) < 0)
        {
            return GMS_TOOL_REDIS;
        }

        return GMS_TOOL_OK;
    }
}


/*
 * What the entities from "from" on found, into each user's groups and
 * roles: a group's name to its users, a role's to its users and to the
 * users of its groups, a user's groups to the user.
 */

static int
gms_members_assign(gms_members_t *m, size_t from)
{
    size_t                 i, j, k;
    ssize_t                g;
    gms_members_entity_t  *e, *ge;

    for (i = from; i < m->ne; i++) {
        e = &m->e[i];

        switch (e->kind) {

        case GMS_MEMBERS_USER:
            for (j = 0; j < e->groups.n; j++) {
                if (gms_members_add(&m->groups[e->user], e->groups.s[j], 0)
                    != 0)
                {
                    return -1;
                }
            }

            break;

        case GMS_MEMBERS_GROUP:
            for (j = 0; j < e->users.n; j++) {
                if (gms_members_add(&m->groups[e->users.i[j]], e->urn, 0)
                    != 0)
                {
                    return -1;
                }
            }

            break;

        default: /* GMS_MEMBERS_ROLE */
            for (j = 0; j < e->users.n; j++) {
                if (gms_members_add(&m->roles[e->users.i[j]], e->urn, 0)
                    != 0)
                {
                    return -1;
                }
            }

            for (j = 0; j < e->groups.n; j++) {
                g = gms_members_find(m, e->groups.s[j], GMS_MEMBERS_GROUP);
                if (g < 0) {
                    continue;
                }

                ge = &m->e[g];

                for (k = 0; k < ge->users.n; k++) {
                    if (gms_members_add(&m->roles[ge->users.i[k]], e->urn, 0)
                        != 0)
                    {
                        return -1;
                    }
                }
            }
        }
    }

    return 0;
}


/* the entity of that URN and kind, added if new: its index, or -1 */

static ssize_t
gms_members_entity(gms_members_t *m, const char *urn, gms_members_kind_e kind,
    size_t user)
{
    ssize_t                i;
    gms_members_entity_t  *e;

    if (kind != GMS_MEMBERS_USER) {
        i = gms_members_find(m, urn, kind);
        if (i >= 0) {
            return i;
        }
    }

    if (m->ne == m->nalloc) {
        m->nalloc = m->nalloc ? 2 * m->nalloc : 16;
        e = realloc(m->e, m->nalloc * sizeof(gms_members_entity_t));

        if (e == NULL) {
            return -1;
        }

        m->e = e;
    }

    e = &m->e[m->ne];
    memset(e, 0, sizeof(gms_members_entity_t));

    e->urn = strdup(urn);
    if (e->urn == NULL) {
        return -1;
    }

    e->kind = kind;
    e->user = user;
    e->total = GMS_MEMBERS_UNASKED;

    return m->ne++;
}


/*
 * Groups and roles are few (those the policies name, and the groups of
 * those roles): they are looked for one by one.
 */

static ssize_t
gms_members_find(const gms_members_t *m, const char *urn,
    gms_members_kind_e kind)
{
    size_t  i;

    for (i = 0; i < m->ne; i++) {
        if (m->e[i].kind == kind && strcmp(m->e[i].urn, urn) == 0) {
            return i;
        }
    }

    return -1;
}


static const char *
gms_members_field(gms_members_kind_e kind)
{
    switch (kind) {
    case GMS_MEMBERS_GROUP:
        return "corpGroup";
    case GMS_MEMBERS_ROLE:
        return "entity";
    default:
        return "corpUser";
    }
}


/* 1 and its index if the URN is one of the users mirrored, else 0 */

static int
gms_members_user(gms_members_t *m, const char *urn, size_t *user)
{
    char *const  *found;

    found = bsearch(&urn, m->users, m->nusers, sizeof(char *),
                    gms_policy_strcmp);
    if (found == NULL) {
        return 0;
    }

    *user = found - m->users;

    return 1;
}


static int
gms_members_add(gms_members_list_t *l, const char *s, int copy)
{
    const char  **p;

    if (l->n == l->nalloc) {
        l->nalloc = l->nalloc ? 2 * l->nalloc : 4;
        p = realloc(l->s, l->nalloc * sizeof(char *));

        if (p == NULL) {
            return -1;
        }

        l->s = p;
    }

    l->s[l->n] = copy ? strdup(s) : s;

    if (l->s[l->n] == NULL) {
        return -1;
    }

    l->n++;

    return 0;
}


static int
gms_members_add_user(gms_members_users_t *u, size_t user)
{
    size_t  *p;

    if (u->n == u->nalloc) {
        u->nalloc = u->nalloc ? 2 * u->nalloc : 16;
        p = realloc(u->i, u->nalloc * sizeof(size_t));

        if (p == NULL) {
            return -1;
        }

        u->i = p;
    }

    u->i[u->n++] = user;

    return 0;
}


static void
gms_members_list_free(gms_members_list_t *l, int owned)
{
    size_t  i;

    for (i = 0; owned && i < l->n; i++) {
        free((char *) l->s[i]);
    }

    free(l->s);
    memset(l, 0, sizeof(gms_members_list_t));
}


/*
 * DataHub's platform policies, matched here as DataHub matches them.
 *
 * The shape read is entity.graphql's Policy (listPolicies, mapped by
 * PolicyInfoPolicyMapper): {type, state, privileges, actors: {users,
 * groups, roles, allUsers, allGroups, resourceOwners}}.  The rules are
 * those of metadata-service/auth-impl/.../PolicyEngine.java
 * (isPolicyApplicable, isActorMatch) for a request without a resource,
 * which is how DataHubAuthorizer asks about a platform privilege:
 *
 *  - a policy whose state is INACTIVE grants nothing (PolicyEngine tests
 *    for INACTIVE only: DRAFT, unused by DataHub, counts as active);
 *  - only PLATFORM policies are kept: a METADATA policy's privileges are
 *    about entities, never the platform's;
 *  - the actor matches when the policy has allUsers, names the user, has
 *    allGroups and the user is in at least one group, names one of the
 *    user's groups, or names one of the user's roles (its own roles and
 *    those of its groups, as resolveRoles has them);
 *  - resourceOwners needs a resource: never true for a platform request;
 *  - the privileges granted are those of every matching policy, once each.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gms_token.h"
#include "gms_policy.h"


static int gms_policy_one(json_t *v, size_t index, gms_policy_t *p,
    char *error);
static int gms_policy_strs(json_t *v, size_t index, const char *what,
    int required, int privileges, gms_policy_strs_t *out, char *error);
static int gms_policy_flag(json_t *actors, size_t index, const char *name,
    char *error);
static int gms_policy_in(const gms_policy_strs_t *list,
    const char *const *s, size_t n);
static void gms_policy_strs_free(gms_policy_strs_t *l);


/*
 * Appends the policies of one listPolicies page (its policies[] array).
 * On bad input: -1 and a message in error, the page's policies dropped.
 */

int
gms_policy_parse(json_t *policies, gms_policies_t *out, char *error)
{
    size_t         i, n, before;
    gms_policy_t  *p;

    if (!json_is_array(policies)) {
        snprintf(error, GMS_POLICY_ERROR_LEN, "policies is %s",
                 policies ? "not an array" : "missing");
        return -1;
    }

    n = json_array_size(policies);
    before = out->n;

    if (out->n + n > out->nalloc) {
        out->nalloc = out->n + n + 64;
        p = realloc(out->policies, out->nalloc * sizeof(gms_policy_t));

        if (p == NULL) {
            snprintf(error, GMS_POLICY_ERROR_LEN, "out of memory");
            return -1;
        }

        out->policies = p;
    }

    for (i = 0; i < n; i++) {
        p = &out->policies[out->n];
        memset(p, 0, sizeof(gms_policy_t));

        if (gms_policy_one(json_array_get(policies, i), i, p, error) != 0) {
            gms_policy_strs_free(&p->privileges);
            gms_policy_strs_free(&p->users);
            gms_policy_strs_free(&p->groups);
            gms_policy_strs_free(&p->roles);

            while (out->n > before) {
                out->n--;
                gms_policy_strs_free(&out->policies[out->n].privileges);
                gms_policy_strs_free(&out->policies[out->n].users);
                gms_policy_strs_free(&out->policies[out->n].groups);
                gms_policy_strs_free(&out->policies[out->n].roles);
            }

            return -1;
        }

        out->n++;
    }

    return 0;
}


void
gms_policy_list_free(gms_policies_t *p)
{
    size_t  i;

    for (i = 0; i < p->n; i++) {
        gms_policy_strs_free(&p->policies[i].privileges);
        gms_policy_strs_free(&p->policies[i].users);
        gms_policy_strs_free(&p->policies[i].groups);
        gms_policy_strs_free(&p->policies[i].roles);
    }

    free(p->policies);
    memset(p, 0, sizeof(gms_policies_t));
}


/*
 * The privileges the policies grant the actor: sorted, each once, in an
 * array the caller frees (the names stay the policies').  -1: no memory.
 */

int
gms_policy_grant(const gms_policies_t *p, const gms_policy_actor_t *a,
    const char ***privileges, size_t *n)
{
    size_t               i, j, total;
    const char         **out;
    const gms_policy_t  *pol;

    *privileges = NULL;
    *n = 0;
    total = 0;

    for (i = 0; i < p->n; i++) {
        total += p->policies[i].privileges.n;
    }

    if (total == 0) {
        return 0;
    }

    out = malloc(total * sizeof(char *));
    if (out == NULL) {
        return -1;
    }

    for (i = 0; i < p->n; i++) {
        pol = &p->policies[i];

        if (!pol->applies) {
            continue;
        }

        if (pol->all_users
            || gms_policy_in(&pol->users, &a->urn, 1)
            || (pol->all_groups && a->ngroups > 0)
            || gms_policy_in(&pol->groups, a->groups, a->ngroups)
            || gms_policy_in(&pol->roles, a->roles, a->nroles))
        {
            for (j = 0; j < pol->privileges.n; j++) {
                out[(*n)++] = pol->privileges.s[j];
            }
        }
    }

    *n = gms_policy_unique(out, *n);

    if (*n == 0) {
        free(out);
        return 0;
    }

    *privileges = out;

    return 0;
}


/* whether a user's groups (or roles) can change what the policies grant */

int
gms_policy_needs_groups(const gms_policies_t *p)
{
    size_t  i;

    for (i = 0; i < p->n; i++) {
        if (p->policies[i].applies
            && (p->policies[i].all_groups || p->policies[i].groups.n > 0
                || p->policies[i].roles.n > 0))
        {
            return 1;
        }
    }

    return 0;
}


int
gms_policy_needs_roles(const gms_policies_t *p)
{
    size_t  i;

    for (i = 0; i < p->n; i++) {
        if (p->policies[i].applies && p->policies[i].roles.n > 0) {
            return 1;
        }
    }

    return 0;
}


int
gms_policy_strcmp(const void *one, const void *two)
{
    return strcmp(*(const char **) one, *(const char **) two);
}


/* sorts and drops repeats; returns how many remain */

size_t
gms_policy_unique(const char **s, size_t n)
{
    size_t  i, k;

    if (n == 0) {
        return 0;
    }

    qsort(s, n, sizeof(char *), gms_policy_strcmp);

    for (k = 1, i = 1; i < n; i++) {
        if (strcmp(s[k - 1], s[i]) != 0) {
            s[k++] = s[i];
        }
    }

    return k;
}


static int
gms_policy_one(json_t *v, size_t index, gms_policy_t *p, char *error)
{
    json_t      *type, *state, *actors;
    const char  *what;

    if (!json_is_object(v)) {
        snprintf(error, GMS_POLICY_ERROR_LEN, "policies[%zu] is not an object",
                 index);
        return -1;
    }

    type = json_object_get(v, "type");
    state = json_object_get(v, "state");

    what = !json_is_string(type) ? "type" : !json_is_string(state) ? "state"
                                                                   : NULL;
    if (what) {
        snprintf(error, GMS_POLICY_ERROR_LEN, "policies[%zu]: %s is not a "
                 "string", index, what);
        return -1;
    }

    /* what applies nowhere on the platform is not read further */
    if (strcmp(json_string_value(type), "PLATFORM") != 0
        || strcmp(json_string_value(state), "INACTIVE") == 0)
    {
        return 0;
    }

    actors = json_object_get(v, "actors");

    if (!json_is_object(actors)) {
        snprintf(error, GMS_POLICY_ERROR_LEN, "policies[%zu]: actors is not "
                 "an object", index);
        return -1;
    }

    if (gms_policy_strs(json_object_get(v, "privileges"), index,
                        "privileges", 1, 1, &p->privileges, error) != 0
        || gms_policy_strs(json_object_get(actors, "users"), index,
                           "actors.users", 0, 0, &p->users, error) != 0
        || gms_policy_strs(json_object_get(actors, "groups"), index,
                           "actors.groups", 0, 0, &p->groups, error) != 0
        || gms_policy_strs(json_object_get(actors, "roles"), index,
                           "actors.roles", 0, 0, &p->roles, error) != 0)
    {
        return -1;
    }

    switch (gms_policy_flag(actors, index, "allUsers", error)) {
    case -1:
        return -1;
    case 1:
        p->all_users = 1;
    }

    switch (gms_policy_flag(actors, index, "allGroups", error)) {
    case -1:
        return -1;
    case 1:
        p->all_groups = 1;
    }

    p->applies = 1;

    return 0;
}


/*
 * A list of URNs or privilege names; null or missing is an empty list
 * unless required (GraphQL's [String!] and [String!]!).
 */

static int
gms_policy_strs(json_t *v, size_t index, const char *what, int required,
    int privileges, gms_policy_strs_t *out, char *error)
{
    size_t       i, len;
    json_t      *s;
    const char  *str;

    if (v == NULL || json_is_null(v)) {
        if (!required) {
            return 0;
        }

        snprintf(error, GMS_POLICY_ERROR_LEN, "policies[%zu]: %s is missing",
                 index, what);
        return -1;
    }

    if (!json_is_array(v)) {
        snprintf(error, GMS_POLICY_ERROR_LEN, "policies[%zu]: %s is not an "
                 "array", index, what);
        return -1;
    }

    if (json_array_size(v) == 0) {
        return 0;
    }

    out->s = calloc(json_array_size(v), sizeof(char *));
    if (out->s == NULL) {
        snprintf(error, GMS_POLICY_ERROR_LEN, "out of memory");
        return -1;
    }

    for (i = 0; i < json_array_size(v); i++) {
        s = json_array_get(v, i);
        str = json_string_value(s);
        len = json_string_length(s);

        if (str == NULL
            || (privileges ? !gms_token_privilege_valid(str, len)
                           : !gms_token_actor_valid(str, len)))
        {
            snprintf(error, GMS_POLICY_ERROR_LEN, "policies[%zu]: %s[%zu] "
                     "is not %s", index, what, i,
                     privileges ? "a privilege name"
                                : "a URN (urn:li:..., no control characters)");
            return -1;
        }

        out->s[out->n] = strdup(str);

        if (out->s[out->n] == NULL) {
            snprintf(error, GMS_POLICY_ERROR_LEN, "out of memory");
            return -1;
        }

        out->n++;
    }

    return 0;
}


/* Boolean! of ActorFilter: 1, 0, or -1 with the message */

static int
gms_policy_flag(json_t *actors, size_t index, const char *name, char *error)
{
    json_t  *v;

    v = json_object_get(actors, name);

    if (!json_is_boolean(v)) {
        snprintf(error, GMS_POLICY_ERROR_LEN, "policies[%zu]: actors.%s is "
                 "not a boolean", index, name);
        return -1;
    }

    return json_is_true(v);
}


static int
gms_policy_in(const gms_policy_strs_t *list, const char *const *s, size_t n)
{
    size_t  i, j;

    for (i = 0; i < list->n; i++) {
        for (j = 0; j < n; j++) {
            if (strcmp(list->s[i], s[j]) == 0) {
                return 1;
            }
        }
    }

    return 0;
}


static void
gms_policy_strs_free(gms_policy_strs_t *l)
{
    size_t  i;

    for (i = 0; i < l->n; i++) {
        free(l->s[i]);
    }

    free(l->s);
    l->s = NULL;
    l->n = 0;
}

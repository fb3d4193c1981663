
/*
 * DataHub's access policies as gms-token mirrors them: the policies of a
 * listPolicies answer read into structs, and the platform privileges
 * they grant one user, matched as DataHub's PolicyEngine matches actors.
 * Pure: no Redis, no HTTP; the unit tests call it directly.
 */


#ifndef _GMS_POLICY_H_INCLUDED_
#define _GMS_POLICY_H_INCLUDED_


#include <stddef.h>

#include <jansson.h>


#define GMS_POLICY_ERROR_LEN   256


/* a list of strings, each NUL-terminated, owned by the list */
typedef struct {
    char                 **s;
    size_t                 n;
} gms_policy_strs_t;


/* one Policy of entity.graphql, as far as platform privileges need it */
typedef struct {
    gms_policy_strs_t      privileges;
    gms_policy_strs_t      users;          /* actors.users */
    gms_policy_strs_t      groups;         /* actors.groups */
    gms_policy_strs_t      roles;          /* actors.roles */
    unsigned               applies:1;      /* PLATFORM and not INACTIVE */
    unsigned               all_users:1;
    unsigned               all_groups:1;
} gms_policy_t;


typedef struct {
    gms_policy_t          *policies;
    size_t                 n;
    size_t                 nalloc;
} gms_policies_t;


/* who asks: a user, the groups it is in, the roles it has or its groups */
typedef struct {
    const char            *urn;
    const char *const     *groups;
    size_t                 ngroups;
    const char *const     *roles;
    size_t                 nroles;
} gms_policy_actor_t;


int gms_policy_parse(json_t *policies, gms_policies_t *out, char *error);
void gms_policy_list_free(gms_policies_t *p);

int gms_policy_grant(const gms_policies_t *p, const gms_policy_actor_t *a,
    const char ***privileges, size_t *n);
int gms_policy_needs_groups(const gms_policies_t *p);
int gms_policy_needs_roles(const gms_policies_t *p);

int gms_policy_strcmp(const void *one, const void *two);
size_t gms_policy_unique(const char **s, size_t n);


#endif /* _GMS_POLICY_H_INCLUDED_ */


/*
 * gms-token's privileges mirror: each user's groups and roles, as far as
 * the platform policies need them, read group by group and role by role
 * (their members), not user by user; gms_sync_members.c.
 */


#ifndef _GMS_SYNC_MEMBERS_H_INCLUDED_
#define _GMS_SYNC_MEMBERS_H_INCLUDED_


#include <stddef.h>

#include "gms_tool.h"
#include "gms_graphql.h"
#include "gms_policy.h"


/*
 * Root fields (aliases) in one GraphQL request.  GMS refuses a query
 * whose complexity passes graphQL.query.complexityLimit (application.yaml,
 * default 2000 in DataHub 0.13 to 1.6): each field counts 1 and its
 * children (DataHubFieldComplexityCalculator; an input's count adds
 * nothing without searchResults), so an alias of the members' query costs
 * 7 and one of getGrantedPrivileges 2: 100 of them, 700 and 200.
 */
#define GMS_MEMBERS_BATCH      100


typedef struct gms_members_s  gms_members_t;


int gms_sync_members_read(gms_tool_t *t, gms_graphql_t *g, const char *url,
    const gms_policies_t *policies, char *const *users, size_t n,
    gms_members_t **out);
int gms_sync_members_covers(const gms_members_t *m, const gms_policies_t *p,
    char *const *users, size_t n);
void gms_sync_members_actor(const gms_members_t *m, size_t user,
    gms_policy_actor_t *a);
void gms_sync_members_free(gms_members_t *m);


#endif /* _GMS_SYNC_MEMBERS_H_INCLUDED_ */


/*
 * gms-token's privileges mirror: users' platform privileges from DataHub
 * into <prefix>actor:<urn>, for sync --gms and follow;
 * gms_sync_privileges.c.
 */


#ifndef _GMS_SYNC_PRIVILEGES_H_INCLUDED_
#define _GMS_SYNC_PRIVILEGES_H_INCLUDED_


#include <stddef.h>

#include "gms_tool.h"
#include "gms_graphql.h"
#include "gms_sync_tokens.h"


/* where users' privileges come from: --privileges */
typedef enum {
    GMS_TOOL_PRIVILEGES_OFF = 0,
    GMS_TOOL_PRIVILEGES_POLICIES,          /* listPolicies, matched here */
    GMS_TOOL_PRIVILEGES_GRAPHQL            /* getGrantedPrivileges a user */
} gms_tool_privileges_e;


/* what a privileges mirror did */
typedef struct {
    size_t                 users;          /* users whose set was computed */
    size_t                 changed;        /* sets replaced */
    size_t                 removed;        /* sets of users no longer known */
    size_t                 skipped;        /* too large to write: left */
    unsigned               kept:1;         /* the groups' and roles' members
                                              of the last mirror used */
} gms_tool_privileges_counts_t;


/*
 * Who was in the groups and roles at a mirror, kept by follow for the
 * next one (gms_sync_privileges_mirror's memo)
 */
typedef struct gms_tool_privileges_memo_s  gms_tool_privileges_memo_t;


/*
 * memo NULL: as sync mirrors, everything read.  Otherwise *memo is the
 * last mirror's (or NULL), and a mirror that succeeds leaves its own
 * there; with reuse, the members *memo read are used again if they
 * answer for the policies and users of this mirror (gms_sync_members_covers):
 * only the policies are read, and no set of a user no longer known is
 * looked for (the users are the same).
 */
int gms_sync_privileges_mirror(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_tool_privileges_e mode, const gms_tool_holders_t *holders,
    gms_tool_privileges_memo_t **memo, int reuse,
    gms_tool_privileges_counts_t *counts);
void gms_sync_privileges_memo_free(gms_tool_privileges_memo_t *memo);
void gms_sync_privileges_print(const gms_tool_privileges_counts_t *counts);


#endif /* _GMS_SYNC_PRIVILEGES_H_INCLUDED_ */

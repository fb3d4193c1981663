
/*
 * gms-token's inactive users: the holders of tokens and DataHub's OAuth
 * users whom DataHub refuses (suspended, soft-removed, hard-deleted) kept
 * in <prefix>inactive, their tokens out of the cache, for sync --gms and
 * follow; gms_sync_users.c.
 */


#ifndef _GMS_SYNC_USERS_H_INCLUDED_
#define _GMS_SYNC_USERS_H_INCLUDED_


#include <stddef.h>

#include "gms_tool.h"
#include "gms_graphql.h"
#include "gms_sync_tokens.h"


/* what a check of the users did, for its line of counts */
typedef struct {
    size_t                 checked;        /* users asked of GMS (holders,
                                              OAuth users, set members) */
    size_t                 inactive;       /* of them: refused by DataHub */
    size_t                 newly;          /* put into <prefix>inactive */
    size_t                 reactivated;    /* out of it: active again */
    size_t                 dropped;        /* their tokens deleted */
    size_t                 unknown;        /* GMS failed on them: left as
                                              they were */
    size_t                 skipped;        /* the stream read them since
                                              the check began: left */
    size_t                 restored;       /* recheck: tokens written back
                                              (added or changed) */
} gms_tool_users_counts_t;


/*
 * the users a check leaves as they are: the stream read them since; and
 * between, when not NULL, called between waves of GMS requests, with no
 * GMS request in flight and no Redis reply pending, t->quiet as the
 * caller of gms_sync_users_check had it
 */
typedef struct {
    int                  (*touched)(void *data, const char *urn,
                                    size_t len);
    void                 (*between)(void *data);
    void                  *data;
} gms_tool_users_skip_t;


/* --inactive: what becomes of an inactive user's tokens */
#define GMS_TOOL_INACTIVE_KEEP    0    /* cached; the set deleted */
#define GMS_TOOL_INACTIVE_REFUSE  1    /* deleted, in the set */
#define GMS_TOOL_INACTIVE_MARK    2    /* cached, in the set: the edge */

int gms_sync_users_inactive_option(gms_tool_t *t, const char *value,
    int *refuse);
int gms_sync_users_check(gms_tool_t *t, const gms_graphql_conf_t *gms,
    int refuse, const gms_tool_holders_t *holders,
    const gms_tool_users_skip_t *skip, gms_tool_users_counts_t *counts);

/*
 * the users named, read again from GMS now and applied as
 * gms_sync_users_check applies them (the inactive set, their tokens
 * dropped and published, or, active again, out of the set and their
 * tokens written back at once: listAccessTokens filtered on actorUrn
 * EQUAL the user, written as sync writes them)
 */
int gms_sync_users_recheck(gms_tool_t *t, const gms_graphql_conf_t *gms,
    int refuse, char *const *urns, size_t n,
    gms_tool_users_counts_t *counts);
void gms_sync_users_print(const gms_tool_users_counts_t *counts);


#endif /* _GMS_SYNC_USERS_H_INCLUDED_ */

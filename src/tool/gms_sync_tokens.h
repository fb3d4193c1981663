
/*
 * gms-token's sync of the tokens: the cached tokens made equal to
 * DataHub's list, for sync and follow; gms_sync_tokens.c.
 */


#ifndef _GMS_SYNC_TOKENS_H_INCLUDED_
#define _GMS_SYNC_TOKENS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "gms_tool.h"
#include "gms_graphql.h"


/* what a sync did, for its line on stdout and follow's log and health */
typedef struct {
    size_t                 tokens;         /* listed */
    size_t                 added;
    size_t                 updated;
    size_t                 unchanged;
    size_t                 expired;
    size_t                 pruned;
    size_t                 kept;           /* spared: the grace period, or
                                              found when asked by urn */
} gms_tool_sync_counts_t;


/*
 * Who holds a token, as a sync from GMS listed them: the privileges
 * mirror starts from it rather than listing the tokens again.
 */
typedef struct {
    char                 **urns;           /* actorUrn of each token */
    char                 **ids;            /* the id of each token: ids[i]
                                              is urns[i]'s */
    size_t                 n;
    size_t                 listed;         /* tokens, each once */
    int64_t                total;          /* listAccessTokens' total */
} gms_tool_holders_t;


int gms_tool_sync(gms_tool_t *t, int prune, const gms_graphql_conf_t *gms,
    long page_size, gms_tool_sync_counts_t *counts,
    gms_tool_holders_t *holders);
void gms_tool_sync_print(const gms_tool_sync_counts_t *counts);
void gms_tool_holders_free(gms_tool_holders_t *holders);


#endif /* _GMS_SYNC_TOKENS_H_INCLUDED_ */

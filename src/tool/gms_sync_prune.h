
/*
 * gms-token's sync of the tokens: the cached tokens that DataHub's list
 * does not have, found, confirmed gone by GMS's entity store and pruned;
 * and what a sync works from, which gms_sync_tokens.c reads and writes
 * and gms_sync_prune.c prunes; gms_sync_prune.c.
 */


#ifndef _GMS_SYNC_PRUNE_H_INCLUDED_
#define _GMS_SYNC_PRUNE_H_INCLUDED_


#include <stddef.h>

#include <hiredis/hiredis.h>

#include "gms_token.h"
#include "gms_tool.h"
#include "gms_graphql.h"
#include "gms_sync_list.h"
#include "gms_sync_spans.h"
#include "gms_sync_tokens.h"


/* tokens per pipelined batch, and keys asked of each SCAN step */
#define GMS_SYNC_BATCH         1000


/* what GMS's entity store says of an unlisted token */
typedef enum {
    GMS_SYNC_UNCONFIRMED = 0,              /* not asked, or no answer */
    GMS_SYNC_GONE,
    GMS_SYNC_EXISTS,
    GMS_SYNC_HELD,                         /* unconfirmed, over --max-prune */
    GMS_SYNC_NOT_A_TOKEN                   /* a key that holds no token id */
} gms_sync_state_e;


/* a cached token's key that the list does not have */
typedef struct {
    char                  *key;
    size_t                 len;
    gms_sync_state_e       state;
    unsigned               deleted:1;      /* pruned by this run */
    unsigned               kept:1;         /* still cached after it */
} gms_sync_missing_t;


/* what a sync works from: DataHub's list, and the cached keys it misses */
typedef struct {
    gms_sync_list_t        list;
    char                  *channel;        /* <prefix>invalidate */
    size_t                 channel_len;
    redisReply            *inactive;       /* SMEMBERS <prefix>inactive,
                                              sorted */
    gms_sync_missing_t    *missing;        /* --prune: sorted, unique */
    size_t                 nmissing;
    size_t                 nalloc_missing;
    size_t                 nexists;        /* missing[] GMS still has */
    char                   why[300];       /* why some are unconfirmed */
} gms_sync_input_t;


/* a token's key deleted and its id published: gms_sync_prune.c */
extern const char  gms_sync_delete_script[];

int gms_sync_prune_gone(gms_tool_t *t, gms_sync_input_t *in,
    char (*gone)[GMS_TOKEN_ID_LEN + 1], const gms_sync_spans_counts_t *spans,
    size_t known, gms_tool_sync_counts_t *counts);
int gms_sync_prune_missing(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts);
int gms_sync_prune_confirm(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_sync_input_t *in);
void gms_sync_prune_bound(const gms_tool_sync_conf_t *conf,
    gms_sync_input_t *in, gms_tool_sync_counts_t *counts);
int gms_sync_prune(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts);
int gms_sync_prune_pending(gms_tool_t *t, gms_sync_input_t *in,
    gms_sync_spans_t *next);

#endif /* _GMS_SYNC_PRUNE_H_INCLUDED_ */

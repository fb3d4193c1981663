
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
#include "gms_sync_spans.h"


/*
 * --max-prune N|P%: how many cached tokens a sync may prune without GMS's
 * entity store confirming each one gone.
 */
typedef struct {
    size_t                 count;          /* --max-prune N */
    unsigned               percent;        /* --max-prune P%: of the cache */
    unsigned               is_percent:1;
    unsigned               bounded:1;      /* 0: no bound (stdin, unasked) */
} gms_tool_max_prune_t;

#define GMS_TOOL_MAX_PRUNE_DEFAULT  "10%"


/* what a sync is asked to do */
typedef struct {
    const gms_graphql_conf_t  *gms;        /* NULL: the pages on stdin */
    long                       page_size;
    unsigned                   prune:1;
    unsigned                   health:1;   /* follow: a warning goes into
                                              <prefix>sync too */
    gms_tool_max_prune_t       max_prune;
    gms_sync_spans_t          *spans;      /* follow: the listing kept, read
                                              by spans between whole ones;
                                              NULL: always whole */
    int                      (*revoked)(void *data, const char *id);
                                           /* 1: the change stream deleted
                                              the token since the listing
                                              was read, not to be written
                                              back; NULL: none */
    void                     (*writing)(void *data, int begin);
                                           /* around the writes (from the
                                              read of <prefix>inactive on,
                                              revoked asked inside), 1 then
                                              0; NULL: none */
    void                      *revoked_data;  /* of both */
} gms_tool_sync_conf_t;


/* what a sync did, for its line on stdout and follow's log and health */
typedef struct {
    size_t                 tokens;         /* listed */
    size_t                 added;
    size_t                 updated;
    size_t                 unchanged;
    size_t                 expired;
    size_t                 pruned;
    size_t                 kept;           /* unlisted, spared: GMS's entity
                                              store has it, or the grace
                                              period */
    size_t                 held;           /* unlisted, not confirmed gone,
                                              more than --max-prune: kept */
    size_t                 inactive;       /* listed, their user in
                                              <prefix>inactive: not cached */
    size_t                 cached;         /* --prune: tokens in the cache */
    size_t                 unlisted;       /* of them, not in the listing */
    size_t                 spans;          /* a cycle by spans: of them */
    size_t                 spans_listed;   /* listed again; 0 0: whole */
    char                   warning[512];   /* "": none; else one line */
} gms_tool_sync_counts_t;


/*
 * Who holds a token, as a sync from GMS listed them (and the unlisted
 * tokens GMS's entity store still has, their user read from the cache):
 * the privileges mirror and the users' status start from it rather than
 * listing the tokens again.
 */
typedef struct {
    char                 **urns;           /* actorUrn of each token */
    char                 **ids;            /* the id of each token: ids[i]
                                              is urns[i]'s */
    size_t                 n;
    size_t                 listed;         /* tokens listed, each once: the
                                              first "listed" of urns[] */
    int64_t                total;          /* listAccessTokens' total */
} gms_tool_holders_t;


int gms_sync_tokens_run(gms_tool_t *t, const gms_tool_sync_conf_t *conf,
    gms_tool_sync_counts_t *counts, gms_tool_holders_t *holders);
int gms_sync_tokens_write(gms_tool_t *t, gms_sync_list_t *list,
    gms_tool_sync_counts_t *counts);
int gms_sync_tokens_max_prune_option(gms_tool_t *t, const char *value,
    gms_tool_max_prune_t *max);
void gms_sync_tokens_print(const gms_tool_sync_counts_t *counts);
int gms_sync_tokens_holders_cached(gms_tool_t *t, gms_tool_holders_t *holders);
void gms_sync_tokens_holders_free(gms_tool_holders_t *holders);


#endif /* _GMS_SYNC_TOKENS_H_INCLUDED_ */

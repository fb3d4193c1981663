
/*
 * follow's listing between two full ones: spans of createdAt counted,
 * only those whose count changed listed again; gms_sync_spans.c.
 */


#ifndef _GMS_SYNC_SPANS_H_INCLUDED_
#define _GMS_SYNC_SPANS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "gms_token.h"
#include "gms_tool.h"
#include "gms_graphql.h"
#include "gms_sync_list.h"


/* gms_sync_spans_fetch: the listing is to be read whole after all */
#define GMS_SYNC_SPANS_WHOLE   (-2)


/* a token of the listing the follower last took whole */
typedef struct {
    char                   id[GMS_TOKEN_ID_LEN + 1];
    char                  *actor;
    size_t                 actor_len;
    int64_t                created_at;     /* 0: none listed, in no span */
    int64_t                expires_at;
} gms_sync_known_t;


/*
 * The listing as it stood after the last cycle, by createdAt: span k
 * holds the tokens from first[k] to first[k + 1] (the last to ntokens),
 * createdAt from lo[k] to lo[k + 1] - 1 (the last: to the end of time)
 */
typedef struct {
    gms_sync_known_t      *tokens;
    size_t                 ntokens;
    int64_t               *lo;
    size_t                *first;
    size_t                 nspans;
    char                   epoch[24];      /* <prefix>sync listing_epoch */
    int64_t                full_at;        /* the last whole listing, ms
                                              (monotonic) */
    int64_t                full_interval;  /* ms; 0: every listing whole */
    char                 (*pending)[GMS_TOKEN_ID_LEN + 1];
                                           /* cached, unlisted, kept by the
                                              last cycle: asked again */
    size_t                 npending;
    unsigned               ready:1;
} gms_sync_spans_t;


/* how much a cycle by spans asked again, for its line */
typedef struct {
    size_t                 listed;         /* spans listed again */
    size_t                 spans;
    size_t                 gone;           /* known tokens no longer listed,
                                              and pending ones still not */
} gms_sync_spans_counts_t;


int gms_sync_spans_due(gms_tool_t *t, gms_sync_spans_t *s);
int gms_sync_spans_fetch(gms_tool_t *t, const gms_graphql_conf_t *gms,
    long page_size, gms_sync_spans_t *s, gms_sync_list_t *in,
    char (**gone)[GMS_TOKEN_ID_LEN + 1], gms_sync_spans_counts_t *counts);
int gms_sync_spans_make(gms_tool_t *t, const gms_sync_list_t *in,
    long span_size, gms_sync_spans_t *next);
int gms_sync_spans_mark(gms_tool_t *t, gms_sync_spans_t *next);
void gms_sync_spans_take(gms_sync_spans_t *s, gms_sync_spans_t *next,
    int whole);
void gms_sync_spans_free(gms_sync_spans_t *s);


#endif /* _GMS_SYNC_SPANS_H_INCLUDED_ */


/*
 * DataHub's list of access tokens, read and checked for sync;
 * gms_sync_list.c.
 */


#ifndef _GMS_SYNC_LIST_H_INCLUDED_
#define _GMS_SYNC_LIST_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "gms_token.h"
#include "gms_tool.h"
#include "gms_graphql.h"


/* createdAt's end of time, ms: a span to it is open-ended */
#define GMS_SYNC_TIME_MAX      ((int64_t) 1 << 53)


typedef struct {
    char                   id[GMS_TOKEN_ID_LEN + 1];
    char                  *actor;
    size_t                 actor_len;
    int64_t                expires_at;     /* ms since the epoch, 0: never */
    int64_t                created_at;     /* ms since the epoch, 0: unknown */
    size_t                 seq;            /* input order */
    unsigned               changed:1;      /* written: added or updated */
    unsigned               deleted:1;      /* deleted: expired, inactive */
    unsigned               cached:1;       /* in the cache before (--prune) */
    unsigned               action:2;       /* gms_sync_tokens.c's */
    unsigned               known:1;        /* not listed again: as the last
                                              cycle listed it, written then
                                              (gms_sync_spans.c) */
    size_t                 index;          /* in its page's tokens[] */
    unsigned               line;
} gms_sync_token_t;


typedef struct {
    gms_sync_token_t      *tokens;
    size_t                 ntokens;
    size_t                 nalloc;
    size_t                 pages;
    int64_t                total;          /* the largest total of a page */
    int64_t                page_total;     /* the last page's, -1: none */
    const char            *where;          /* "stdin:", "page ", ... */
} gms_sync_list_t;


int gms_sync_list_stdin(gms_tool_t *t, gms_sync_list_t *in);
int gms_sync_list_fetch(gms_tool_t *t, const gms_graphql_conf_t *gms,
    long page_size, gms_sync_list_t *in);
int gms_sync_list_range(gms_tool_t *t, gms_graphql_t *g,
    const gms_graphql_conf_t *gms, long page_size, int64_t lo, int64_t hi,
    gms_sync_list_t *in, int *over);
int gms_sync_list_actors(gms_tool_t *t, gms_graphql_t *g,
    const gms_graphql_conf_t *gms, long page_size,
    const char *const *urns, size_t n, gms_sync_list_t *in);
int gms_sync_list_unique(gms_tool_t *t, gms_sync_list_t *in);
gms_sync_token_t *gms_sync_list_find(gms_sync_list_t *in, const char *id,
    size_t len);
void gms_sync_list_free(gms_sync_list_t *in);


#endif /* _GMS_SYNC_LIST_H_INCLUDED_ */

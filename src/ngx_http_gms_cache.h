
/*
 * The token cache shared by all workers: slab + rbtree + LRU queues in a
 * shared-memory zone, as nginx's limit_req zone keeps its states.
 */


#ifndef _NGX_HTTP_GMS_CACHE_H_INCLUDED_
#define _NGX_HTTP_GMS_CACHE_H_INCLUDED_


#include "ngx_http_gms_module.h"


/*
 * How long a token id gms-token published is remembered (with signing
 * keys): DataHub's StatefulTokenService keeps a token's "not revoked" for
 * 5 minutes (expireAfterWrite), so long may a GMS replica still accept a
 * token that Redis lost.
 */
#define NGX_HTTP_GMS_CACHE_CHANGED_TIME  300000


/*
 * A token id's key in a tree (the cache's, the lookups in flight): its
 * first four characters.  An id is the base64 of a SHA-256 digest, as
 * good as any hash of it; the trees stay balanced whatever the keys, and
 * equal keys are ordered by the whole id.
 */
#define ngx_http_gms_id_hash(id)                                             \
    ((uint32_t) (id)[0] << 24 | (uint32_t) (id)[1] << 16                      \
     | (uint32_t) (id)[2] << 8 | (uint32_t) (id)[3])


typedef enum {
    NGX_HTTP_GMS_CACHE_MISS = 0,
    NGX_HTTP_GMS_CACHE_FRESH,
    NGX_HTTP_GMS_CACHE_STALE     /* past its ttl, inside the stale window */
} ngx_http_gms_cache_rc_e;


/* what one lookup found; actor and privileges are copied to the pool */
typedef struct {
    ngx_http_gms_result_e      result;     /* OK, UNKNOWN, EXPIRED, PASSED */
    gms_token_type_e           type;
    ngx_uint_t                 no_privileges;  /* a session token's, unread */
    ngx_uint_t                 inactive;       /* gms_lookup_inactive_e */
    ngx_str_t                  actor;
    ngx_str_t                  privileges;
} ngx_http_gms_cache_entry_t;


ngx_http_gms_cache_rc_e ngx_http_gms_cache_get(ngx_http_gms_cache_t *cache,
    u_char *id, ngx_pool_t *pool, ngx_http_gms_cache_entry_t *entry);
void ngx_http_gms_cache_put(ngx_http_gms_cache_t *cache, u_char *id,
    ngx_http_gms_cache_entry_t *entry, int64_t expires_at,
    ngx_uint_t generation);
ngx_uint_t ngx_http_gms_cache_generation(ngx_http_gms_cache_t *cache);
int64_t ngx_http_gms_cache_changed(ngx_http_gms_cache_t *cache, u_char *id);
ngx_uint_t ngx_http_gms_cache_drop(ngx_http_gms_cache_t *cache, u_char *what,
    size_t len);
void ngx_http_gms_cache_sizes(ngx_http_gms_cache_t *cache,
    ngx_uint_t *positive, ngx_uint_t *negative);
char *ngx_http_gms_cache_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
void ngx_http_gms_cache_source(ngx_http_gms_main_conf_t *gmcf,
    uint32_t *crc);
int64_t ngx_http_gms_cache_now_ms(void);


#endif /* _NGX_HTTP_GMS_CACHE_H_INCLUDED_ */

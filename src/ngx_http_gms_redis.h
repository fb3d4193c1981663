
/*
 * The per-worker Redis connection: hiredis's async API driven by nginx's
 * event loop, lookups pipelined on one connection.
 */


#ifndef _NGX_HTTP_GMS_REDIS_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_H_INCLUDED_


#include "ngx_http_gms_module.h"

#include <hiredis/async.h>


/*
 * Called exactly once per lookup: with the reply (which hiredis frees on
 * return) or with NULL and the reason.  It must not call back into this
 * file: it runs inside a hiredis callback.
 */
typedef void (*ngx_http_gms_lookup_pt)(void *data, redisReply *reply,
    const char *error);


/* a token's entry by id; with actor, that user's privileges (SMEMBERS) */
ngx_int_t ngx_http_gms_redis_lookup(ngx_http_gms_main_conf_t *gmcf,
    u_char *id, ngx_str_t *actor, ngx_http_gms_lookup_pt handler,
    void *data);
void ngx_http_gms_redis_drop(const char *reason);
ngx_int_t ngx_http_gms_redis_init_process(ngx_cycle_t *cycle,
    ngx_http_gms_main_conf_t *gmcf);
void ngx_http_gms_redis_exit_process(ngx_cycle_t *cycle);


#endif /* _NGX_HTTP_GMS_REDIS_H_INCLUDED_ */

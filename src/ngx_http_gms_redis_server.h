
/*
 * A connection to a data server: its setup (AUTH, SELECT, READONLY, ROLE;
 * SCRIPT LOAD for the lookups'), and the answers that say it cannot serve
 * now.
 */


#ifndef _NGX_HTTP_GMS_REDIS_SERVER_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_SERVER_H_INCLUDED_


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_discovery.h"

#include <hiredis/hiredis.h>


/*
 * Told, for each lookup connection, whether its server runs the lookup
 * script: refusal NULL, SCRIPT LOAD loaded it; else the error that says
 * it runs none for this client (gms_lookup_scripts_refused()).
 */
typedef void (*ngx_http_gms_redis_server_scripts_pt)(
    ngx_http_gms_rconn_t *rc, redisReply *refusal);

/*
 * the discovery asked again when a server cannot serve; scripts told
 * what SCRIPT LOAD found
 */
void ngx_http_gms_redis_server_init(ngx_http_gms_discovery_t *dc,
    ngx_http_gms_redis_server_scripts_pt scripts);

/*
 * The setup, with ROLE answered to role where the server's role is to be
 * checked (NULL: never); NGX_OK: under way; NGX_DECLINED: no server
 * named yet, or in backoff; NGX_ERROR: failed (closed).
 */
ngx_int_t ngx_http_gms_redis_server_connect(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_rconn_reply_pt role);

/* the same, and the lookup script loaded (or found refused) */
ngx_int_t ngx_http_gms_redis_server_lookups(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_rconn_reply_pt role);

/* NGX_DECLINED: the reply says the server cannot serve now (handled) */
ngx_int_t ngx_http_gms_redis_server_unavailable(ngx_http_gms_rconn_t *rc,
    redisReply *reply);


#endif /* _NGX_HTTP_GMS_REDIS_SERVER_H_INCLUDED_ */

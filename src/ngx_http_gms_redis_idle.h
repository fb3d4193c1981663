
/*
 * The idle check of a Redis connection: a PING when it has been quiet.
 */


#ifndef _NGX_HTTP_GMS_REDIS_IDLE_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_IDLE_H_INCLUDED_


#include "ngx_http_gms_redis_conn.h"


void ngx_http_gms_redis_idle_watch(ngx_http_gms_rconn_t *rc);
ngx_uint_t ngx_http_gms_redis_idle_heard(ngx_http_gms_rconn_t *rc,
    redisReply *reply);


#endif /* _NGX_HTTP_GMS_REDIS_IDLE_H_INCLUDED_ */

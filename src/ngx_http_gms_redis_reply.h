
/*
 * What a Redis reply may make hiredis allocate: the capped builders, and
 * the builders they call, hiredis's own but from the connection's arena.
 */


#ifndef _NGX_HTTP_GMS_REDIS_REPLY_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_REPLY_H_INCLUDED_


#include "ngx_http_gms_redis_conn.h"
#include "gms_hiredis.h"


void ngx_http_gms_redis_reply_done(ngx_http_gms_rconn_t *rc);

#if (GMS_HIREDIS_RESP3)
/* hiredis 1.x's RESP3 builders: never asked for, refused */
void *ngx_http_gms_redis_reply_double(const redisReadTask *task, double value,
    char *str, size_t len);
void *ngx_http_gms_redis_reply_bool(const redisReadTask *task, int value);
#endif


/* hiredis's builders, from the arena of the connection (task->privdata) */
extern redisReplyObjectFunctions  *ngx_http_gms_reply_hiredis;
extern redisReplyObjectFunctions   ngx_http_gms_reply_capped;
extern redisReplyObjectFunctions   ngx_http_gms_reply_map;   /* deeper */


#endif /* _NGX_HTTP_GMS_REDIS_REPLY_H_INCLUDED_ */

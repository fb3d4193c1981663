
/*
 * What a Redis reply may make hiredis allocate: the capped builders, and
 * hiredis's own, which capped builders call.
 */


#ifndef _NGX_HTTP_GMS_REDIS_REPLY_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_REPLY_H_INCLUDED_


#include "ngx_http_gms_redis_conn.h"


void ngx_http_gms_reply_init(redisReplyObjectFunctions *hiredis);


/* set by ngx_http_gms_reply_init() */
extern redisReplyObjectFunctions  *ngx_http_gms_reply_hiredis;
extern redisReplyObjectFunctions   ngx_http_gms_reply_capped;
extern redisReplyObjectFunctions   ngx_http_gms_reply_map;   /* deeper */


#endif /* _NGX_HTTP_GMS_REDIS_REPLY_H_INCLUDED_ */


/*
 * A signed token unknown to Redis, let through for GMS to decide
 * (gms_token_unknown_signed pass): where it may be, and GMS's answer
 * remembered.
 */


#ifndef _NGX_HTTP_GMS_VERDICT_H_INCLUDED_
#define _NGX_HTTP_GMS_VERDICT_H_INCLUDED_


#include "ngx_http_gms_module.h"


ngx_uint_t ngx_http_gms_verdict_may_pass(ngx_http_request_t *r);
ngx_int_t ngx_http_gms_verdict_filter_init(ngx_conf_t *cf);


#endif /* _NGX_HTTP_GMS_VERDICT_H_INCLUDED_ */

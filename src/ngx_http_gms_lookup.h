
/*
 * A request's Redis lookup: coalesced with the worker's lookup of the same
 * id, under the request's deadline; the reply cached.
 */


#ifndef _NGX_HTTP_GMS_LOOKUP_H_INCLUDED_
#define _NGX_HTTP_GMS_LOOKUP_H_INCLUDED_


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_cache.h"


ngx_int_t ngx_http_gms_lookup(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx,
    gms_jwt_claims_t *claims);
void ngx_http_gms_lookup_apply(ngx_http_gms_ctx_t *ctx,
    ngx_http_gms_cache_entry_t *entry);


#endif /* _NGX_HTTP_GMS_LOOKUP_H_INCLUDED_ */


/*
 * Where the credential comes from (the Authorization header or
 * gms_token_source), and the request headers the module removes or sets.
 */


#ifndef _NGX_HTTP_GMS_SOURCE_H_INCLUDED_
#define _NGX_HTTP_GMS_SOURCE_H_INCLUDED_


#include "ngx_http_gms_module.h"


ngx_int_t ngx_http_gms_source_conf(ngx_conf_t *cf,
    ngx_http_gms_loc_conf_t *conf, ngx_http_gms_main_conf_t *gmcf);
ngx_uint_t ngx_http_gms_source_is_preflight(ngx_http_request_t *r);
ngx_int_t ngx_http_gms_source_credential(ngx_http_request_t *r,
    ngx_http_gms_loc_conf_t *glcf, ngx_str_t *value);
ngx_int_t ngx_http_gms_source_forward_token(ngx_http_request_t *r,
    ngx_str_t *credential);
ngx_int_t ngx_http_gms_source_drop_header(ngx_http_request_t *r,
    ngx_str_t *name);


#endif /* _NGX_HTTP_GMS_SOURCE_H_INCLUDED_ */

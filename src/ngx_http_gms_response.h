
/*
 * The module's own answers, sent by every handler.
 */


#ifndef _NGX_HTTP_GMS_RESPONSE_H_INCLUDED_
#define _NGX_HTTP_GMS_RESPONSE_H_INCLUDED_


#include "ngx_http_gms_module.h"


ngx_int_t ngx_http_gms_response_add_header(ngx_http_request_t *r,
    const char *key, ngx_str_t *value);
ngx_int_t ngx_http_gms_response_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *type, ngx_buf_t *b);
ngx_int_t ngx_http_gms_response_json(ngx_http_request_t *r, ngx_uint_t status,
    char *body);
ngx_int_t ngx_http_gms_response_json_copy(ngx_http_request_t *r,
    ngx_uint_t status, const char *body);
ngx_int_t ngx_http_gms_response_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *message, size_t len);
ngx_int_t ngx_http_gms_response_body(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *body);
ngx_int_t ngx_http_gms_response_error_body(ngx_conf_t *cf, ngx_uint_t status,
    const char *message, ngx_str_t *out);


#endif /* _NGX_HTTP_GMS_RESPONSE_H_INCLUDED_ */


/*
 * The credential check: in the access (or preaccess) phase, and for
 * subrequests in the precontent phase; its verdict, as
 * ngx_http_gms_es_task_module reads it.
 */


#ifndef _NGX_HTTP_GMS_AUTH_H_INCLUDED_
#define _NGX_HTTP_GMS_AUTH_H_INCLUDED_


#include "ngx_http_gms_module.h"


ngx_int_t ngx_http_gms_auth_init_bodies(ngx_conf_t *cf);
ngx_int_t ngx_http_gms_auth_challenges(ngx_conf_t *cf,
    ngx_http_gms_loc_conf_t *prev, ngx_http_gms_loc_conf_t *conf);
ngx_int_t ngx_http_gms_auth_access_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_gms_auth_preaccess_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_gms_auth_subrequest_handler(ngx_http_request_t *r);
ngx_http_gms_ctx_t *ngx_http_gms_auth_verdict(ngx_http_request_t *r);
ngx_http_gms_ctx_t *ngx_http_gms_auth_ctx(ngx_http_request_t *r);
ngx_int_t ngx_http_gms_auth_anonymous(ngx_http_request_t *r,
    ngx_http_request_t *sr);
void ngx_http_gms_auth_forbid(ngx_http_gms_ctx_t *ctx);


#endif /* _NGX_HTTP_GMS_AUTH_H_INCLUDED_ */

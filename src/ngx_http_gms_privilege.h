
/*
 * The privileges a location requires, and whether a user holds one.
 */


#ifndef _NGX_HTTP_GMS_PRIVILEGE_H_INCLUDED_
#define _NGX_HTTP_GMS_PRIVILEGE_H_INCLUDED_


#include "ngx_http_gms_module.h"


char *ngx_http_gms_privilege_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_gms_privilege_list(ngx_conf_t *cf, ngx_str_t *list,
    ngx_array_t *names);
ngx_int_t ngx_http_gms_privilege_has_any(ngx_http_gms_ctx_t *ctx,
    ngx_array_t *names);


#endif /* _NGX_HTTP_GMS_PRIVILEGE_H_INCLUDED_ */

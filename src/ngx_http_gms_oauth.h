
/*
 * External OAuth tokens (gms_token_oauth): the directive, each worker's
 * JWKS kept current, a token verified for the access check.
 */


#ifndef _NGX_HTTP_GMS_OAUTH_H_INCLUDED_
#define _NGX_HTTP_GMS_OAUTH_H_INCLUDED_


#include "ngx_http_gms_module.h"


char *ngx_http_gms_oauth_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_gms_oauth_verify(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx, const u_char *token, size_t len,
    gms_jwt_claims_t *claims);
void ngx_http_gms_oauth_source(ngx_http_gms_main_conf_t *gmcf,
    uint32_t *crc);


#endif /* _NGX_HTTP_GMS_OAUTH_H_INCLUDED_ */

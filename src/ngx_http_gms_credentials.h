
/*
 * The credentials checked without Redis (signed tokens, the system
 * client) and the secrets they and token ids need.
 */


#ifndef _NGX_HTTP_GMS_CREDENTIALS_H_INCLUDED_
#define _NGX_HTTP_GMS_CREDENTIALS_H_INCLUDED_


#include "ngx_http_gms_module.h"


/* the cache bound of a signed token: valid while now - leeway <= exp */
#define ngx_http_gms_jwt_bound(claims, gmcf)                                 \
    ((claims)->expires_at ? (claims)->expires_at                             \
                            + (int64_t) (gmcf)->jwt_leeway + 1 : 0)


char *ngx_http_gms_credentials_salt_file(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_gms_credentials_signing_key_file(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
char *ngx_http_gms_credentials_system_client(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_gms_credentials_verify(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx, const u_char *token, size_t len,
    gms_jwt_claims_t *claims);
ngx_int_t ngx_http_gms_credentials_accept_session(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx, gms_jwt_claims_t *claims);
ngx_int_t ngx_http_gms_credentials_system(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx, const u_char *credentials, size_t len);


extern ngx_conf_post_handler_pt  ngx_http_gms_jwt_leeway_p;


#endif /* _NGX_HTTP_GMS_CREDENTIALS_H_INCLUDED_ */

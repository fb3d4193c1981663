
/*
 * The credentials checked without Redis (signed tokens, the system
 * client) and the secrets they and token ids need.
 */


#ifndef _NGX_HTTP_GMS_CREDENTIALS_H_INCLUDED_
#define _NGX_HTTP_GMS_CREDENTIALS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "gms_jwt.h"


/*
 * The credentials' settings, which the module's main conf holds: the type
 * comes before ngx_http_gms_module.h, whose main conf embeds it.
 */

typedef struct {
    /* gms_token_salt, gms_token_salt_file */
    ngx_str_t                  salt;
    ngx_flag_t                 salt_set;

    /* gms_token_signing_key_file: tokens verified here when given */
    gms_jwt_key_t              keys[GMS_JWT_KEYS_MAX];
    ngx_uint_t                 nkeys;
    ngx_msec_t                 jwt_leeway;

    /* gms_token_oauth: of ngx_http_gms_oauth_t (ngx_http_gms_oauth.c) */
    ngx_array_t               *oauth;

    /* gms_token_system_client: SHA-256 of "id:secret" */
    ngx_flag_t                 system_client;
    ngx_flag_t                 system_colon;   /* a ':' in its secret */
    u_char                     system_digest[32];
} ngx_http_gms_credentials_conf_t;


#include "ngx_http_gms_module.h"


/* the cache bound of a signed token: valid while now - leeway <= exp */
#define ngx_http_gms_jwt_bound(claims, gmcf)                                 \
    ((claims)->expires_at ? (claims)->expires_at                             \
                     + (int64_t) (gmcf)->credentials.jwt_leeway + 1 : 0)


void ngx_http_gms_credentials_create_conf(
    ngx_http_gms_credentials_conf_t *ccf);
char *ngx_http_gms_credentials_init_conf(ngx_conf_t *cf,
    ngx_http_gms_credentials_conf_t *ccf);
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

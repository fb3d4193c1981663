
/*
 * The credentials the edge checks without Redis, and their secrets: the
 * salt of token ids and the files secrets come from (gms_token_salt_file),
 * GMS's signing keys and the clock leeway of signed tokens
 * (gms_token_signing_key_file, gms_token_jwt_leeway), the system client
 * (gms_token_system_client).  The secrets are read by the master at
 * configuration time; the workers get them by fork, never from disk.
 */


#include "ngx_http_gms_credentials.h"
#include "ngx_http_gms_source.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_metrics.h"
#include "ngx_http_gms_secret.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>


/* the longest salt, signing key or secret read from a file */
#define NGX_HTTP_GMS_SALT_MAX  4096


static char *ngx_http_gms_jwt_leeway(ngx_conf_t *cf, void *post,
    void *data);


ngx_conf_post_handler_pt  ngx_http_gms_jwt_leeway_p =
    ngx_http_gms_jwt_leeway;


/* a directive's conf: the credentials conf at cmd->offset in the module's */
#define ngx_http_gms_credentials(conf, cmd)                                  \
    ((ngx_http_gms_credentials_conf_t *) ((u_char *) (conf) + (cmd)->offset))


void
ngx_http_gms_credentials_create_conf(ngx_http_gms_credentials_conf_t *ccf)
{
    /*
     * set by ngx_pcalloc() of the main conf:
     *
     *     ccf->salt = { 0, NULL };
     *     ccf->nkeys = 0;
     *     ccf->oauth = NULL;
     *     ccf->system_client = 0;
     */

    ccf->jwt_leeway = NGX_CONF_UNSET_MSEC;
}


char *
ngx_http_gms_credentials_init_conf(ngx_conf_t *cf,
    ngx_http_gms_credentials_conf_t *ccf)
{
    ngx_conf_init_msec_value(ccf->jwt_leeway, 0);

    /* gms_token_salt "" is a choice; no salt at all is a mistake */
    ccf->salt_set = (ccf->salt.data != NULL);

    if (!ccf->salt_set) {
        ngx_str_set(&ccf->salt, "");
    }

    return NGX_CONF_OK;
}


/*
 * gms_token_salt_file PATH: the salt as GMS is given it, from a file (a
 * mounted secret), read as gms-token's --salt-file reads it
 * (ngx_http_gms_secret.c).
 */

char *
ngx_http_gms_credentials_salt_file(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_gms_credentials_conf_t *ccf = ngx_http_gms_credentials(conf, cmd);

    ngx_str_t  *value;

    if (ccf->salt.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    return ngx_http_gms_secret_file(cf, &value[1], NGX_HTTP_GMS_SALT_MAX,
                                    &ccf->salt);
}


/*
 * gms_token_signing_key_file PATH: GMS's signing key
 * (DATAHUB_TOKEN_SERVICE_SIGNING_KEY), whose UTF-8 bytes are the HMAC
 * key; twice while keys rotate.  Read by the master at configuration
 * time: the workers get it by fork, never from disk.
 */

char *
ngx_http_gms_credentials_signing_key_file(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_gms_credentials_conf_t *ccf = ngx_http_gms_credentials(conf, cmd);

    char       *rv;
    ngx_str_t  *value, key;

    if (ccf->nkeys == GMS_JWT_KEYS_MAX) {
        return "is given more than twice (the old key and the new)";
    }

    value = cf->args->elts;

    rv = ngx_http_gms_secret_file(cf, &value[1], NGX_HTTP_GMS_SALT_MAX, &key);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    if (key.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "signing key file \"%V\" is empty", &value[1]);
        return NGX_CONF_ERROR;
    }

    /* what would make GMS refuse every token, or the edge every one */

    if (key.data[key.len - 1] == '\r') {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "signing key file \"%V\" ends in a carriage "
                           "return, which is part of the key", &value[1]);
    }

    if (key.len < 32) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "signing key in \"%V\" is shorter than 32 bytes: "
                           "GMS (jjwt) refuses such an HS256 key", &value[1]);
    }

    ccf->keys[ccf->nkeys].data = key.data;
    ccf->keys[ccf->nkeys].len = key.len;
    ccf->nkeys++;

    return NGX_CONF_OK;
}


/*
 * gms_token_system_client ID secret_file=PATH: DataHub's system client
 * (DATAHUB_SYSTEM_CLIENT_ID and _SECRET), which calls GMS with
 * "Authorization: Basic ID:SECRET".  Only a digest of the pair is kept.
 */

char *
ngx_http_gms_credentials_system_client(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_gms_credentials_conf_t *ccf = ngx_http_gms_credentials(conf, cmd);

    u_char     *p;
    char       *rv;
    ngx_str_t  *value, path, secret, pair;

    if (ccf->system_client) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 0 || ngx_strlchr(value[1].data,
                                         value[1].data + value[1].len, ':'))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid system client id \"%V\": empty or "
                           "with a colon, which GMS could never accept",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    if (ngx_strncmp(value[2].data, "secret_file=", 12) != 0
        || value[2].len == 12)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\": expected "
                           "secret_file=PATH", &value[2]);
        return NGX_CONF_ERROR;
    }

    path.data = value[2].data + 12;
    path.len = value[2].len - 12;

    rv = ngx_http_gms_secret_file(cf, &path, NGX_HTTP_GMS_SALT_MAX, &secret);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    if (secret.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "system client secret in \"%V\" is empty, "
                           "which GMS could never accept", &path);
        return NGX_CONF_ERROR;
    }

    /* refused where gms_datahub_version is before 1.4.0: release.c */
    ccf->system_colon = (ngx_strlchr(secret.data, secret.data + secret.len,
                                     ':')
                         != NULL);

    pair.len = value[1].len + 1 + secret.len;
    pair.data = ngx_pnalloc(cf->temp_pool, pair.len);
    if (pair.data == NULL) {
        return NGX_CONF_ERROR;
    }

    p = ngx_cpymem(pair.data, value[1].data, value[1].len);
    *p++ = ':';
    ngx_memcpy(p, secret.data, secret.len);

    SHA256(pair.data, pair.len, ccf->system_digest);

    ngx_explicit_memzero(pair.data, pair.len);
    ngx_explicit_memzero(secret.data, secret.len);

    ccf->system_client = 1;

    return NGX_CONF_OK;
}


/* clocks that disagree by more than an hour need fixing, not a leeway */

static char *
ngx_http_gms_jwt_leeway(ngx_conf_t *cf, void *post, void *data)
{
    ngx_msec_t  *leeway = data;

    if (*leeway > 3600 * 1000) {
        return "must be at most 1h";
    }

    return NGX_CONF_OK;
}


/*
 * A signed token not in the cache: NGX_OK, its signature and times
 * verified and its claims read; NGX_DECLINED, refused (ctx->result says
 * why) without asking Redis.
 */

ngx_int_t
ngx_http_gms_credentials_verify(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx,
    const u_char *token, size_t len, gms_jwt_claims_t *claims)
{
    gms_jwt_rc_e               rc;
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = ngx_http_get_module_main_conf(r, ngx_http_gms_module);

    rc = gms_jwt_verify(token, len, gmcf->credentials.keys,
                        gmcf->credentials.nkeys, ngx_http_gms_cache_now_ms(),
                        (int64_t) gmcf->credentials.jwt_leeway, claims);

    switch (rc) {

    case GMS_JWT_OK:
        ctx->type = claims->type;
        return NGX_OK;

    case GMS_JWT_EXPIRED:
        ngx_http_gms_count(jwt_rejected[NGX_HTTP_GMS_JWT_EXPIRED]);
        ctx->result = NGX_HTTP_GMS_EXPIRED;
        break;

    case GMS_JWT_PREMATURE:
        ngx_http_gms_count(jwt_rejected[NGX_HTTP_GMS_JWT_EXPIRED]);
        ctx->result = NGX_HTTP_GMS_INVALID;
        break;

    case GMS_JWT_BAD_SIGNATURE:
        ngx_http_gms_count(jwt_rejected[NGX_HTTP_GMS_JWT_BAD_SIGNATURE]);
        ctx->result = NGX_HTTP_GMS_INVALID;
        break;

    default: /* GMS_JWT_MALFORMED */
        ngx_http_gms_count(jwt_rejected[NGX_HTTP_GMS_JWT_MALFORMED]);
        ctx->result = NGX_HTTP_GMS_INVALID;
        break;
    }

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "gms: token id \"%s\" refused: %s", ctx->id,
                  claims->error);

    return NGX_DECLINED;
}


/*
 * A verified session token where no privilege is needed, accepted on its
 * signature as GMS accepts it: no Redis at all.  Its entry says that its
 * user's privileges were not read.
 */

ngx_int_t
ngx_http_gms_credentials_accept_session(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx, gms_jwt_claims_t *claims)
{
    ngx_http_gms_main_conf_t    *gmcf;
    ngx_http_gms_cache_entry_t   entry;

    gmcf = ngx_http_get_module_main_conf(r, ngx_http_gms_module);

    ctx->result = NGX_HTTP_GMS_OK;
    ctx->actor.len = claims->actor_len;
    ctx->actor.data = ngx_pnalloc(r->pool, claims->actor_len);

    if (ctx->actor.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(ctx->actor.data, claims->actor, claims->actor_len);
    ngx_str_set(&ctx->privileges, "");
    ctx->no_privileges = 1;

    entry.result = NGX_HTTP_GMS_OK;
    entry.type = claims->type;
    entry.no_privileges = 1;
    entry.inactive = 0;         /* a session's user: not looked up */
    entry.actor = ctx->actor;
    entry.privileges = ctx->privileges;

    /* a stale entry with the user's privileges is kept for a Redis outage */

    if (!ctx->has_stale) {
        ngx_http_gms_cache_put(gmcf->cache, ctx->id, &entry,
                               ngx_http_gms_jwt_bound(claims, gmcf),
                               ngx_http_gms_cache_generation(gmcf->cache));
    }

    return NGX_OK;
}


/*
 * DataHubSystemAuthenticator's credential: no Redis, every privilege (as
 * DataHubAuthorizer grants the system actor), and the client's own
 * X-DataHub-Actor, the user it acts for, kept and exposed as the actor.
 * NGX_OK: ctx->result says whether it is accepted.
 */

ngx_int_t
ngx_http_gms_credentials_system(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx,
    const u_char *credentials, size_t len)
{
    ngx_uint_t                 i, n;
    ngx_list_part_t           *part;
    ngx_table_elt_t           *h, *delegation;
    ngx_http_gms_main_conf_t  *gmcf;
    u_char                     md[SHA256_DIGEST_LENGTH];

    static ngx_str_t           actor = ngx_string("X-DataHub-Actor");

    gmcf = ngx_http_get_module_main_conf(r, ngx_http_gms_module);

    SHA256(credentials, len, md);

    if (CRYPTO_memcmp(md, gmcf->credentials.system_digest,
                      SHA256_DIGEST_LENGTH)
        != 0)
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "gms: system client credentials refused");

        ctx->result = NGX_HTTP_GMS_INVALID;

        return ngx_http_gms_source_drop_header(r, &actor);
    }

    delegation = NULL;
    n = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].key.len == actor.len
                && ngx_strncasecmp(h[i].key.data, actor.data, actor.len) == 0)
            {
                delegation = &h[i];
                n++;
            }
        }
    }

    if (n > 1
        || (delegation != NULL
            && !gms_token_actor_valid((char *) delegation->value.data,
                                      delegation->value.len)))
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "gms: system client request refused: X-DataHub-Actor "
                      "must be one urn:li: URN");

        ctx->result = NGX_HTTP_GMS_INVALID;

        return ngx_http_gms_source_drop_header(r, &actor);
    }

    ctx->result = NGX_HTTP_GMS_OK;
    ctx->type = GMS_TOKEN_SYSTEM;
    ngx_str_set(&ctx->privileges, "");

    if (delegation) {
        ctx->actor = delegation->value;

    } else {
        ngx_str_set(&ctx->actor, "");
    }

    return NGX_OK;
}

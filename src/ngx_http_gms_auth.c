
/*
 * The credential check in the access phase.
 *
 * A request's token id is looked up in the shared cache first; on a miss
 * in Redis (ngx_http_gms_lookup.c: coalesced with the worker's lookup of
 * that id already in flight, under the request's own deadline), and the
 * request runs its phases again once the answer is in its context.
 *
 * With GMS's signing key (gms_token_signing_key_file) a token missing from
 * the cache is verified here first (ngx_http_gms_credentials.c), and a
 * forged, tampered or expired one is refused without asking Redis.  A
 * session token is then accepted on its signature, as GMS accepts it;
 * Redis is asked only for its user's privileges, and only where a
 * privilege is needed.  Personal tokens are still looked up by id: their
 * entry is how revocation works; one that Redis does not have may go on
 * to GMS, which decides (ngx_http_gms_verdict.c).  The system client
 * (gms_token_system_client) is checked against a digest of its id and
 * secret, and keeps its delegating X-DataHub-Actor.
 */


#include "ngx_http_gms_auth.h"
#include "ngx_http_gms_response.h"
#include "ngx_http_gms_source.h"
#include "ngx_http_gms_credentials.h"
#include "ngx_http_gms_oauth.h"
#include "ngx_http_gms_privilege.h"
#include "ngx_http_gms_verdict.h"
#include "ngx_http_gms_es_route.h"
#include "ngx_http_gms_release.h"
#include "ngx_http_gms_lookup.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_metrics.h"

#include "gms_id_memo.h"


static ngx_int_t ngx_http_gms_check(ngx_http_request_t *r,
    ngx_http_gms_loc_conf_t *glcf);
static ngx_int_t ngx_http_gms_check_signed(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx, const u_char *token, size_t len);
static ngx_int_t ngx_http_gms_check_oauth(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx, const u_char *token, size_t len);
static ngx_int_t ngx_http_gms_ask_redis(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx, gms_jwt_claims_t *claims);
static ngx_uint_t ngx_http_gms_wants_privileges(ngx_http_request_t *r);
static ngx_int_t ngx_http_gms_decide(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx);
static ngx_int_t ngx_http_gms_passed(ngx_http_request_t *r,
    ngx_http_gms_loc_conf_t *glcf, ngx_int_t rc);
static ngx_int_t ngx_http_gms_deny(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx);
static ngx_int_t ngx_http_gms_drop_actor_header(ngx_http_request_t *r);
static ngx_int_t ngx_http_gms_inactive(ngx_http_gms_ctx_t *ctx,
    ngx_http_gms_loc_conf_t *glcf);
static ngx_int_t ngx_http_gms_challenge(ngx_conf_t *cf, ngx_str_t *realm,
    const char *error, ngx_str_t *out);
static ngx_int_t ngx_http_gms_token_id(ngx_http_gms_main_conf_t *gmcf,
    ngx_str_t *credential, const u_char **token, size_t *len, u_char *id);


#define NGX_HTTP_GMS_FORBIDDEN_MESSAGE                                       \
    "User is unauthorized to perform this action"


static ngx_str_t  ngx_http_gms_deny_bodies[NGX_HTTP_GMS_NRESULTS];
static ngx_str_t  ngx_http_gms_deny_forbidden_403;
static ngx_str_t  ngx_http_gms_deny_expired_generic;
static ngx_str_t  ngx_http_gms_deny_inactive;

/* per worker: the ids of the tokens it saw lately, and under what salt */
static gms_id_memo_t              ngx_http_gms_id_memo;
static ngx_http_gms_main_conf_t  *ngx_http_gms_id_memo_conf;
static ngx_uint_t                 ngx_http_gms_id_memo_ready;


ngx_int_t
ngx_http_gms_auth_access_handler(ngx_http_request_t *r)
{
    ngx_http_gms_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_module);

    if (!glcf->enable || glcf->phase == NGX_HTTP_GMS_PHASE_PREACCESS) {
        return NGX_DECLINED;
    }

    return ngx_http_gms_passed(r, glcf, ngx_http_gms_check(r, glcf));
}


/*
 * gms_token_phase preaccess: the same check, before limit_req and
 * limit_conn (this module's handler is added after theirs, so it runs
 * first), so that they can key on $gms_token_actor or $gms_token_id.
 * A pass must not end the phase (NGX_OK would skip limit_req): it
 * declines.  Subrequests are left to the precontent check, as the access
 * phase leaves them.
 */

ngx_int_t
ngx_http_gms_auth_preaccess_handler(ngx_http_request_t *r)
{
    ngx_int_t                 rc;
    ngx_http_gms_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_module);

    if (!glcf->enable || glcf->phase != NGX_HTTP_GMS_PHASE_PREACCESS
        || r != r->main)
    {
        return NGX_DECLINED;
    }

    rc = ngx_http_gms_passed(r, glcf, ngx_http_gms_check(r, glcf));

    return rc == NGX_OK ? NGX_DECLINED : rc;
}


/* a token taken from gms_token_source goes on to GMS as GMS reads one */

static ngx_int_t
ngx_http_gms_passed(ngx_http_request_t *r, ngx_http_gms_loc_conf_t *glcf,
    ngx_int_t rc)
{
    ngx_http_gms_ctx_t  *ctx;

    if (rc != NGX_OK || glcf->source == NULL) {
        return rc;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_gms_module);

    if (ctx != NULL && ctx->result == NGX_HTTP_GMS_GUEST) {
        /* no credential to forward */
        return NGX_OK;
    }

    if (ctx == NULL || ctx->credential.data == NULL
        || ngx_http_gms_source_forward_token(r, &ctx->credential) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_gms_check(ngx_http_request_t *r, ngx_http_gms_loc_conf_t *glcf)
{
    size_t                       len;
    ngx_int_t                    rc;
    ngx_str_t                    credential;
    ngx_uint_t                   bad_basic;
    const u_char                *token;
    ngx_http_gms_ctx_t          *ctx;
    ngx_http_gms_main_conf_t    *gmcf;
    ngx_http_gms_cache_entry_t   entry;

    ctx = ngx_http_get_module_ctx(r, ngx_http_gms_module);

    if (ctx == NULL && glcf->preflight && ngx_http_gms_source_is_preflight(r)) {
        /* no token to check: what it asks of GMS is answered by GMS */

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "gms: CORS preflight let through");

        if (ngx_http_gms_drop_actor_header(r) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return NGX_DECLINED;
    }

    if (ctx != NULL) {
        if (ctx->pending) {
            return NGX_AGAIN;
        }

        return ngx_http_gms_decide(r, ctx);
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_gms_ctx_t));
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     ctx->result = NGX_HTTP_GMS_OFF;
     *     ctx->pending = 0;
     *     ctx->id = "";
     *     ctx->actor = { 0, NULL };
     *     ctx->privileges = { 0, NULL };
     *     ctx->flight = NULL;
     *     ctx->has_stale = 0;
     */

    ctx->request = r;
    ngx_http_set_ctx(r, ctx, ngx_http_gms_module);

    gmcf = ngx_http_get_module_main_conf(r, ngx_http_gms_module);
    bad_basic = 0;

    if (ngx_http_gms_source_credential(r, glcf, &credential) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->credential = credential;

    if (credential.data != NULL && gmcf->credentials.system_client
        && glcf->source == NULL)
    {
        switch (gms_token_basic_parse(credential.data, credential.len,
                                      gms_release_secret_colon(glcf->release),
                                      &token, &len))
        {

        case 0:
            if (ngx_http_gms_credentials_system(r, ctx, token, len) != NGX_OK) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            return ngx_http_gms_decide(r, ctx);

        case -2:
            /* Basic, but not "id:secret" (the base64 form, for one) */
            bad_basic = 1;
            break;

        default:
            break;
        }
    }

    if (ngx_http_gms_drop_actor_header(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (credential.data == NULL) {

        /*
         * gms_token_guest: GMS's guest user (DataHubGuestAuthenticator)
         * decides, but not where the edge checks a privilege: the
         * guest's are not known here.  An Authorization that
         * gms_token_source does not read is a credential all the same,
         * one GMS would read unchecked.
         */

        if (glcf->guest && r->headers_in.authorization == NULL
            && !ngx_http_gms_wants_privileges(r))
        {
            ctx->result = NGX_HTTP_GMS_GUEST;
            ctx->type = GMS_TOKEN_GUEST;

        } else {
            ctx->result = NGX_HTTP_GMS_MISSING;
        }

        return ngx_http_gms_decide(r, ctx);
    }

    if (bad_basic) {
        ctx->result = NGX_HTTP_GMS_INVALID;
        return ngx_http_gms_decide(r, ctx);
    }

    if (ngx_http_gms_token_id(gmcf, &credential, &token, &len, ctx->id)
        != NGX_OK)
    {
        ctx->result = NGX_HTTP_GMS_MALFORMED;
        return ngx_http_gms_decide(r, ctx);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "gms: token id \"%s\"", ctx->id);

    /*
     * An entry of a signed token exists only once its signature verified
     * under the configured keys (the cache's source covers them): a hit
     * needs no HMAC.  A session token's entry made where no privilege was
     * needed holds none: where one is, the token is checked anew.
     */

    switch (ngx_http_gms_cache_get(gmcf->cache, ctx->id, r->pool, &entry)) {

    case NGX_HTTP_GMS_CACHE_FRESH:

        if (!entry.no_privileges || !ngx_http_gms_wants_privileges(r)) {

            if (entry.result == NGX_HTTP_GMS_OK) {
                ngx_http_gms_count(cache_hits[0]);

            } else {
                ngx_http_gms_count(cache_hits[1]);
            }

            ngx_http_gms_lookup_apply(ctx, &entry);
            return ngx_http_gms_decide(r, ctx);
        }

        break;

    case NGX_HTTP_GMS_CACHE_STALE:

        if (!entry.no_privileges) {
            ctx->stale_actor = entry.actor;
            ctx->stale_privileges = entry.privileges;
            ctx->stale_type = entry.type;
            ctx->stale_inactive = entry.inactive;
            ctx->has_stale = 1;
        }

        break;

    default: /* NGX_HTTP_GMS_CACHE_MISS */
        break;
    }

    if (gmcf->cache) {
        ngx_http_gms_count(cache_misses);
    }

    if (gmcf->credentials.oauth) {
        rc = ngx_http_gms_check_oauth(r, ctx, token, len);

        if (rc != NGX_DECLINED) {
            return rc;
        }
    }

    if (gmcf->credentials.nkeys) {
        return ngx_http_gms_check_signed(r, ctx, token, len);
    }

    return ngx_http_gms_ask_redis(r, ctx, NULL);
}


/*
 * An external OAuth token (gms_token_oauth) not in the cache: refused
 * here if it does not verify; else as a session token: accepted here
 * where no privilege is needed, its user's privileges read from Redis
 * where one is.  NGX_DECLINED: not an OAuth token.
 */

static ngx_int_t
ngx_http_gms_check_oauth(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx,
    const u_char *token, size_t len)
{
    ngx_int_t         rc;
    gms_jwt_claims_t  claims;

    rc = ngx_http_gms_oauth_verify(r, ctx, token, len, &claims);

    if (rc == NGX_DECLINED) {
        return NGX_DECLINED;
    }

    if (rc != NGX_OK) {
        return ngx_http_gms_decide(r, ctx);
    }

    if (ngx_http_gms_wants_privileges(r)) {
        return ngx_http_gms_ask_redis(r, ctx, &claims);
    }

    if (ngx_http_gms_credentials_accept_session(r, ctx, &claims) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_gms_decide(r, ctx);
}


/*
 * A signed token not in the cache: refused here if it does not verify,
 * accepted here if it is a session token and no privilege is needed,
 * else looked up in Redis.
 */

static ngx_int_t
ngx_http_gms_check_signed(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx,
    const u_char *token, size_t len)
{
    gms_jwt_claims_t  claims;

    if (ngx_http_gms_credentials_verify(r, ctx, token, len, &claims)
        != NGX_OK)
    {
        return ngx_http_gms_decide(r, ctx);
    }

    if (gms_jwt_stateful(&claims) || ngx_http_gms_wants_privileges(r)) {
        return ngx_http_gms_ask_redis(r, ctx, &claims);
    }

    if (ngx_http_gms_credentials_accept_session(r, ctx, &claims) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_gms_decide(r, ctx);
}


/* the lookup under way (NGX_AGAIN), or Redis failed it at once */

static ngx_int_t
ngx_http_gms_ask_redis(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx,
    gms_jwt_claims_t *claims)
{
    ngx_int_t  rc;

    rc = ngx_http_gms_lookup(r, ctx, claims);

    return (rc == NGX_DECLINED) ? ngx_http_gms_decide(r, ctx) : rc;
}


/* whether this request's location checks a privilege of the user */

static ngx_uint_t
ngx_http_gms_wants_privileges(ngx_http_request_t *r)
{
    ngx_http_gms_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_module);

    return glcf->privileges != NULL
           || (ngx_http_gms_es_route_answered(r)
               && ngx_http_gms_es_route_privileges(r) != NULL);
}


static ngx_int_t
ngx_http_gms_decide(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx)
{
    ngx_http_gms_loc_conf_t   *glcf;
    ngx_http_gms_main_conf_t  *gmcf;

    if (ctx->result == NGX_HTTP_GMS_GUEST) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "gms: no credential: GMS's guest decides");

        ngx_http_gms_count(requests[NGX_HTTP_GMS_GUEST]);
        return NGX_OK;
    }

    if (ctx->result == NGX_HTTP_GMS_PASSED) {

        if (ngx_http_gms_verdict_may_pass(r)) {
            gmcf = ngx_http_get_module_main_conf(r, ngx_http_gms_module);
            ctx->generation = ngx_http_gms_cache_generation(gmcf->cache);

            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "gms: token id \"%s\" signed, unknown to redis: "
                           "GMS decides", ctx->id);

            ngx_http_gms_count(requests[NGX_HTTP_GMS_PASSED]);
            return NGX_OK;
        }

        ctx->result = NGX_HTTP_GMS_UNKNOWN;
    }

    if (ctx->result == NGX_HTTP_GMS_OK) {
        glcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_module);

        if (ctx->type == GMS_TOKEN_SERVICE_ACCOUNT
            && !gms_release_service_accounts(glcf->release))
        {
            /* unknown to GMS's TokenType before 1.4.0: 401, as GMS */
            ctx->result = NGX_HTTP_GMS_INVALID;

        } else if (ngx_http_gms_inactive(ctx, glcf) != NGX_DECLINED) {
            /* ctx->result is the refusal */

        } else if (ngx_http_gms_privilege_has_any(ctx, glcf->privileges)) {
            ngx_http_gms_count(requests[NGX_HTTP_GMS_OK]);
            return NGX_OK;

        } else {
            ctx->result = NGX_HTTP_GMS_FORBIDDEN;
        }
    }

    ngx_http_gms_count(requests[ctx->result]);

    return ngx_http_gms_deny(r, ctx);
}


static ngx_int_t
ngx_http_gms_deny(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx)
{
    ngx_int_t                 rc;
    ngx_str_t                *challenge, *body;
    ngx_uint_t                status;
    ngx_http_gms_loc_conf_t  *glcf;

    static ngx_str_t          retry_after = ngx_string("1");

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_module);

    status = NGX_HTTP_UNAUTHORIZED;
    challenge = &glcf->challenge_invalid;
    body = &ngx_http_gms_deny_bodies[ctx->result];

    switch (ctx->result) {

    case NGX_HTTP_GMS_MISSING:
        challenge = &glcf->challenge;
        break;

    case NGX_HTTP_GMS_EXPIRED:

        /* from 1.3.0 (and in 0.14.0 to 1.0) GMS does not say "expired" */
        if (gms_release_expired_generic(glcf->release)) {
            body = &ngx_http_gms_deny_expired_generic;
        }

        break;

    case NGX_HTTP_GMS_MALFORMED:
    case NGX_HTTP_GMS_UNKNOWN:
    case NGX_HTTP_GMS_INVALID:
        break;

    case NGX_HTTP_GMS_FORBIDDEN:
        challenge = &glcf->challenge_scope;
        status = glcf->forbidden_status;

        if (ngx_http_gms_release_inactive(glcf, ctx)
            == GMS_RELEASE_INACTIVE_ACTOR)
        {
            /* as GMS: 403, its message, no challenge (not a scope) */
            challenge = NULL;
            status = NGX_HTTP_FORBIDDEN;
            body = &ngx_http_gms_deny_inactive;

        } else if (status == NGX_HTTP_FORBIDDEN) {
            body = &ngx_http_gms_deny_forbidden_403;
        }

        break;

    default: /* NGX_HTTP_GMS_ERROR */
        challenge = NULL;
        status = NGX_HTTP_SERVICE_UNAVAILABLE;
        body = &ngx_http_gms_deny_bodies[NGX_HTTP_GMS_ERROR];
        break;
    }

    if (challenge != NULL || status == NGX_HTTP_SERVICE_UNAVAILABLE) {
        if (ngx_http_gms_response_add_header(r, challenge ? "WWW-Authenticate"
                                                 : "Retry-After",
                                    challenge ? challenge : &retry_after)
            != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    rc = ngx_http_gms_response_body(r, status, body);

    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


/* the refusals' bodies, fixed: made once, at configuration time */

ngx_int_t
ngx_http_gms_auth_init_bodies(ngx_conf_t *cf)
{
    ngx_str_t   *body;
    ngx_uint_t   i;

    static struct {
        ngx_http_gms_result_e   result;
        ngx_uint_t              status;
        const char             *message;
    } deny[] = {
        { NGX_HTTP_GMS_MISSING, NGX_HTTP_UNAUTHORIZED,
          "Missing access token: send 'Authorization: Bearer <token>'" },
        { NGX_HTTP_GMS_MALFORMED, NGX_HTTP_UNAUTHORIZED,
          "Malformed Authorization header: expected 'Bearer <token>'" },
        { NGX_HTTP_GMS_UNKNOWN, NGX_HTTP_UNAUTHORIZED,
          "Invalid or revoked access token" },
        { NGX_HTTP_GMS_EXPIRED, NGX_HTTP_UNAUTHORIZED,
          "Access token has expired" },
        { NGX_HTTP_GMS_INVALID, NGX_HTTP_UNAUTHORIZED,
          "Unable to verify the provided credentials" },
        { NGX_HTTP_GMS_FORBIDDEN, NGX_HTTP_UNAUTHORIZED,
          NGX_HTTP_GMS_FORBIDDEN_MESSAGE },
        { NGX_HTTP_GMS_ERROR, NGX_HTTP_SERVICE_UNAVAILABLE,
          "Token store unavailable, try again later" }
    };

    for (i = 0; i < sizeof(deny) / sizeof(deny[0]); i++) {
        body = &ngx_http_gms_deny_bodies[deny[i].result];

        if (ngx_http_gms_response_error_body(cf, deny[i].status,
                                             deny[i].message, body)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (ngx_http_gms_response_error_body(cf, NGX_HTTP_UNAUTHORIZED,
                                         GMS_RELEASE_UNAUTHORIZED,
                                         &ngx_http_gms_deny_expired_generic)
        != NGX_OK
        || ngx_http_gms_response_error_body(cf, NGX_HTTP_FORBIDDEN,
                                            GMS_RELEASE_INACTIVE_MESSAGE,
                                            &ngx_http_gms_deny_inactive)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_gms_response_error_body(cf, NGX_HTTP_FORBIDDEN,
                                            NGX_HTTP_GMS_FORBIDDEN_MESSAGE,
                                            &ngx_http_gms_deny_forbidden_403);
}


/* the WWW-Authenticate values of a location's realm, or its parent's */

ngx_int_t
ngx_http_gms_auth_challenges(ngx_conf_t *cf, ngx_http_gms_loc_conf_t *prev,
    ngx_http_gms_loc_conf_t *conf)
{
    if (conf->realm.data == prev->realm.data && prev->challenge.data) {
        conf->challenge = prev->challenge;
        conf->challenge_invalid = prev->challenge_invalid;
        conf->challenge_scope = prev->challenge_scope;
        return NGX_OK;
    }

    if (ngx_http_gms_challenge(cf, &conf->realm, NULL, &conf->challenge)
           != NGX_OK
        || ngx_http_gms_challenge(cf, &conf->realm, "invalid_token",
                                  &conf->challenge_invalid)
           != NGX_OK
        || ngx_http_gms_challenge(cf, &conf->realm, "insufficient_scope",
                                  &conf->challenge_scope)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* Bearer realm="<realm>"[, error="<error>"], the realm a quoted-string */

static ngx_int_t
ngx_http_gms_challenge(ngx_conf_t *cf, ngx_str_t *realm, const char *error,
    ngx_str_t *out)
{
    u_char      *p;
    size_t       len;
    ngx_uint_t   i;

    len = sizeof("Bearer realm=\"\"") - 1 + realm->len * 2;

    if (error) {
        len += sizeof(", error=\"\"") - 1 + ngx_strlen(error);
    }

    p = ngx_pnalloc(cf->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    out->data = p;
    p = ngx_cpymem(p, "Bearer realm=\"", sizeof("Bearer realm=\"") - 1);

    for (i = 0; i < realm->len; i++) {
        if (realm->data[i] == '"' || realm->data[i] == '\\') {
            *p++ = '\\';
        }

        *p++ = realm->data[i];
    }

    *p++ = '"';

    if (error) {
        p = ngx_sprintf(p, ", error=\"%s\"", error);
    }

    out->len = p - out->data;

    return NGX_OK;
}


/*
 * nginx runs no access-phase handler in a subrequest (auth_request, SSI,
 * mirror, another module's), so gms_token_auth on would check nothing
 * there.  In the precontent phase instead: a subrequest into such a
 * location passes only when its main request's token was checked and
 * valid, and has the location's privileges; otherwise the subrequest ends
 * with 401 (or the refusal status), which auth_request, for one, turns
 * into a refusal of the main request.  A main request whose signed token
 * GMS decides on may go on to a subrequest's location that lets GMS
 * decide too (its answer is remembered there as well).  No Redis lookup is
 * made for it: a
 * session token whose privileges its main request did not read (its
 * location checks none) is refused where a privilege is needed.
 * getEsTaskStatus's own subrequest (ngx_http_gms_auth_anonymous()) is
 * checked by its caller.
 */

ngx_int_t
ngx_http_gms_auth_subrequest_handler(ngx_http_request_t *r)
{
    ngx_http_gms_ctx_t       *ctx;
    ngx_http_gms_loc_conf_t  *glcf;

    if (r == r->main) {
        return NGX_DECLINED;
    }

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_module);

    if (!glcf->enable) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_gms_module);

    if (ctx != NULL && ctx->subrequest == r) {
        return NGX_DECLINED;
    }

    if (ctx != NULL && ctx->result == NGX_HTTP_GMS_PASSED
        && ngx_http_gms_verdict_may_pass(r))
    {
        return NGX_DECLINED;
    }

    if (ctx != NULL && ctx->result == NGX_HTTP_GMS_GUEST && glcf->guest
        && glcf->privileges == NULL)
    {
        return NGX_DECLINED;
    }

    if (ctx == NULL || ctx->result != NGX_HTTP_GMS_OK) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "gms: subrequest \"%V\" refused: its main request "
                       "has no checked token", &r->uri);
        return NGX_HTTP_UNAUTHORIZED;
    }

    if (glcf->privileges
        && ngx_http_gms_release_inactive(glcf, ctx)
           != GMS_RELEASE_INACTIVE_ACCEPTED)
    {
        return NGX_HTTP_FORBIDDEN;
    }

    if (glcf->privileges && ctx->no_privileges) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "gms: subrequest \"%V\" refused: a session token's "
                      "privileges are read only where the main request's "
                      "location checks one", &r->uri);
        return glcf->forbidden_status;
    }

    return ngx_http_gms_privilege_has_any(ctx, glcf->privileges)
           ? NGX_DECLINED : (ngx_int_t) glcf->forbidden_status;
}


/*
 * The verdict, for ngx_http_gms_es_task_module (getEsTaskStatus, answered
 * from the user and their privileges): r's context, NULL where nothing
 * was checked.
 */

ngx_http_gms_ctx_t *
ngx_http_gms_auth_verdict(ngx_http_request_t *r)
{
    return ngx_http_get_module_ctx(r, ngx_http_gms_module);
}


/* r's context, made if there is none (nothing checked: the result "off") */

ngx_http_gms_ctx_t *
ngx_http_gms_auth_ctx(ngx_http_request_t *r)
{
    ngx_http_gms_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_gms_module);

    if (ctx != NULL) {
        return ctx;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_gms_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ctx->request = r;
    ngx_http_set_ctx(r, ctx, ngx_http_gms_module);

    return ctx;
}


/*
 * sr, made for r by ngx_http_gms_es_task_module (to the search cluster),
 * carries no one's credential: the precontent check lets it through, the
 * variables do not name the user in it, its answer is not GMS's verdict.
 */

ngx_int_t
ngx_http_gms_auth_anonymous(ngx_http_request_t *r, ngx_http_request_t *sr)
{
    ngx_http_gms_ctx_t  *ctx;

    ctx = ngx_http_gms_auth_ctx(r);
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    ctx->subrequest = sr;

    return NGX_OK;
}


/* a credential the check accepted, refused after all by what is asked */

void
ngx_http_gms_auth_forbid(ngx_http_gms_ctx_t *ctx)
{
    ctx->result = NGX_HTTP_GMS_FORBIDDEN;
    ngx_http_gms_count_down(requests[NGX_HTTP_GMS_OK]);
    ngx_http_gms_count(requests[NGX_HTTP_GMS_FORBIDDEN]);
}


/*
 * A valid token whose user gms-token found inactive (<prefix>inactive,
 * written by follow --inactive mark), answered as the location's release
 * of GMS answers it (gms_release_inactive_user: a hard-deleted user only
 * from 1.2.0).  From 1.2.0 GMS refuses the token itself: 401, as for
 * a token Redis does not have.  From 0.15.0 it takes the token, but
 * refuses every operation ("Actor is not active"): where the edge checks
 * a privilege, which GMS would never reach, 403 with that message; the
 * rest goes to GMS, which answers it itself (getEsTaskStatus: its
 * precontent check).  The same for a session token, whose user is read
 * where the edge checks a privilege or answers getEsTaskStatus
 * (StatelessTokenService.validateActor checks every token DataHub
 * signed); an external OAuth token's user is refused operations, never
 * the token (gms_release_inactive_oauth).  Where a session or OAuth
 * token goes to GMS unread, GMS decides.  The system client has no user
 * of its own to check.  NGX_DECLINED: nothing to refuse here.
 */

static ngx_int_t
ngx_http_gms_inactive(ngx_http_gms_ctx_t *ctx, ngx_http_gms_loc_conf_t *glcf)
{
    switch (ngx_http_gms_release_inactive(glcf, ctx)) {

    case GMS_RELEASE_INACTIVE_TOKEN:
        ctx->result = NGX_HTTP_GMS_UNKNOWN;
        return NGX_OK;

    case GMS_RELEASE_INACTIVE_ACTOR:

        if (glcf->privileges == NULL) {
            return NGX_DECLINED;
        }

        ctx->result = NGX_HTTP_GMS_FORBIDDEN;
        return NGX_OK;

    default: /* GMS_RELEASE_INACTIVE_ACCEPTED */
        return NGX_DECLINED;
    }
}


/*
 * A Bearer credential's token and its id; NGX_DECLINED: not one.  SHA-256
 * costs more than the rest of a cached token's check, so a worker
 * remembers the ids of the tokens it saw (never the tokens: gms_id_memo.c),
 * in a memo made at its first token, and made anew when a reload of a
 * single process changes the configuration.  A token found there was
 * checked when it was put there: it is not checked again.
 */

static ngx_int_t
ngx_http_gms_token_id(ngx_http_gms_main_conf_t *gmcf, ngx_str_t *credential,
    const u_char **token, size_t *len, u_char *id)
{
    size_t          span_len;
    uint64_t        tag[2];
    const u_char   *span;
    gms_id_memo_t  *memo;

    memo = &ngx_http_gms_id_memo;

    if (ngx_http_gms_id_memo_conf != gmcf) {
        ngx_http_gms_id_memo_conf = gmcf;
        ngx_http_gms_id_memo_ready =
                     (gms_id_memo_init(memo, gmcf->credentials.salt.data,
                                       gmcf->credentials.salt.len)
                      == 0);
    }

    span = NULL;
    span_len = 0;

    if (ngx_http_gms_id_memo_ready
        && gms_token_bearer_span(credential->data, credential->len, &span,
                                 &span_len)
           == 0
        && gms_id_memo_get(memo, span, span_len, tag, (char *) id) == 0)
    {
        *token = span;
        *len = span_len;
        return NGX_OK;
    }

    if (gms_token_bearer_parse(credential->data, credential->len, token, len)
        != 0)
    {
        return NGX_DECLINED;
    }

    gms_token_id(*token, *len, gmcf->credentials.salt.data,
                 gmcf->credentials.salt.len, (char *) id);

    /* the span is the token whenever the header is a Bearer credential */

    if (span == *token && span_len == *len && id[0] != '\0') {
        gms_id_memo_put(memo, tag, (char *) id);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_gms_drop_actor_header(ngx_http_request_t *r)
{
    static ngx_str_t  actor = ngx_string("X-DataHub-Actor");

    return ngx_http_gms_source_drop_header(r, &actor);
}



/*
 * A signed token that verifies under GMS's key and has not expired, but
 * that Redis does not have: most likely made in DataHub since gms-token
 * last listed the tokens.  GMS accepts it already; with
 * gms_token_unknown_signed pass the edge lets GMS decide, so that a
 * client cannot tell the edge from GMS.  GMS's answer reaches the client
 * unchanged, and a 401 is remembered in the shared cache for
 * negative_ttl: a revoked token costs GMS one request per negative_ttl,
 * not one per request.  Only GMS's key can make such a token: nobody
 * else can send GMS requests this way.
 */


#include "ngx_http_gms_verdict.h"
#include "ngx_http_gms_es_route.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_metrics.h"


static ngx_int_t ngx_http_gms_verdict_header_filter(ngx_http_request_t *r);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;


/*
 * Whether r's location lets GMS decide: gms_token_unknown_signed pass,
 * and nothing that the edge must check itself: no privilege (the token
 * has no entry, so its user's privileges were not read) and no
 * getEsTaskStatus (the edge answers it, not GMS).
 */

ngx_uint_t
ngx_http_gms_verdict_may_pass(ngx_http_request_t *r)
{
    ngx_http_gms_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_module);

    return glcf->enable && glcf->unknown_signed && glcf->privileges == NULL
           && !ngx_http_gms_es_route_answered(r);
}


ngx_int_t
ngx_http_gms_verdict_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_gms_verdict_header_filter;

    return NGX_OK;
}


/*
 * The answer to a request that was let through this way, as its upstream
 * sent it: the main request's, or that of a subrequest the precontent
 * check let through for it (auth_request's, for one).  A 401 not from
 * the upstream (auth_request's own, after its subrequest's) is no answer
 * of GMS.
 */

static ngx_int_t
ngx_http_gms_verdict_header_filter(ngx_http_request_t *r)
{
    ngx_uint_t                   status;
    ngx_http_gms_ctx_t          *ctx;
    ngx_http_gms_main_conf_t    *gmcf;
    ngx_http_gms_cache_entry_t   entry;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_gms_module);

    if (ctx == NULL || ctx->result != NGX_HTTP_GMS_PASSED
        || r->upstream == NULL
        || ctx->subrequest == r
        || (r != r->main && !ngx_http_gms_verdict_may_pass(r)))
    {
        return ngx_http_next_header_filter(r);
    }

    status = r->headers_out.status;

    if (status >= NGX_HTTP_INTERNAL_SERVER_ERROR) {
        /* GMS down or failing: nothing learnt about the token */
        ngx_http_gms_count(passed_answers[NGX_HTTP_GMS_ANSWER_FAILED]);
        return ngx_http_next_header_filter(r);
    }

    if (status != NGX_HTTP_UNAUTHORIZED) {
        ngx_http_gms_count(passed_answers[NGX_HTTP_GMS_ANSWER_ACCEPTED]);
        return ngx_http_next_header_filter(r);
    }

    ngx_http_gms_count(passed_answers[NGX_HTTP_GMS_ANSWER_REFUSED]);

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "gms: token id \"%s\", unknown to redis, refused by GMS",
                  ctx->id);

    /*
     * Unknown from now on, as if Redis had said so, for negative_ttl; not
     * if an invalidation came since the request was let through.
     */

    ngx_memzero(&entry, sizeof(ngx_http_gms_cache_entry_t));
    entry.result = NGX_HTTP_GMS_UNKNOWN;

    gmcf = ngx_http_get_module_main_conf(r, ngx_http_gms_module);

    ngx_http_gms_cache_put(gmcf->cache, ctx->id, &entry, 0, ctx->generation);

    return ngx_http_next_header_filter(r);
}

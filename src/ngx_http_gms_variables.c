
/*
 * The module's variables, which logs and other modules read: what the
 * token check found ($gms_token_*), the build ($gms_module_version), and
 * what the decision log records ($gms_decision, $gms_decision_reason,
 * $gms_decision_user, $gms_credential_type, $gms_request_path,
 * $gms_datahub_version: see docs/operations.md, "The decision log").
 * None holds a byte of a token.
 */


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_variables.h"
#include "ngx_http_gms_es_task_module.h"
#include "ngx_http_gms_source.h"
#include "ngx_http_gms_metrics.h"


static ngx_int_t ngx_http_gms_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_gms_result_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_gms_type_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_gms_version_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_gms_decision_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_gms_credential_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_gms_path_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_gms_release_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static void ngx_http_gms_variable_set(ngx_http_variable_value_t *v,
    const char *s);


/* $gms_decision_user: the actor of a refused credential too */
#define NGX_HTTP_GMS_ANY_RESULT       0x10000

/* $gms_decision's values; $gms_decision_reason is data 1 */
#define NGX_HTTP_GMS_DECISION         0
#define NGX_HTTP_GMS_DECISION_REASON  1


static ngx_http_variable_t  ngx_http_gms_vars[] = {

    { ngx_string("gms_token_actor"), NULL, ngx_http_gms_variable,
      offsetof(ngx_http_gms_ctx_t, actor), NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("gms_token_privileges"), NULL, ngx_http_gms_variable,
      offsetof(ngx_http_gms_ctx_t, privileges), NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("gms_token_id"), NULL, ngx_http_gms_variable,
      0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("gms_token_result"), NULL, ngx_http_gms_result_variable,
      0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("gms_token_type"), NULL, ngx_http_gms_type_variable,
      0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("gms_module_version"), NULL, ngx_http_gms_version_variable,
      0, 0, 0 },

    { ngx_string("gms_decision"), NULL, ngx_http_gms_decision_variable,
      NGX_HTTP_GMS_DECISION, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("gms_decision_reason"), NULL,
      ngx_http_gms_decision_variable, NGX_HTTP_GMS_DECISION_REASON,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("gms_decision_user"), NULL, ngx_http_gms_variable,
      NGX_HTTP_GMS_ANY_RESULT + offsetof(ngx_http_gms_ctx_t, actor),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("gms_credential_type"), NULL,
      ngx_http_gms_credential_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("gms_request_path"), NULL, ngx_http_gms_path_variable,
      0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("gms_datahub_version"), NULL,
      ngx_http_gms_release_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


ngx_int_t
ngx_http_gms_variables_add(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_gms_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_gms_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    ngx_str_t           *s, id;
    ngx_http_gms_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_gms_module);

    /* the search cluster is not told who asks for a task's status */

    if (ctx == NULL || r == ctx->subrequest) {
        v->not_found = 1;
        return NGX_OK;
    }

    if (data == 0) {
        /* the id is known, and safe to log, for refused tokens too */
        s = &id;
        id.data = ctx->id;
        id.len = ngx_strlen(ctx->id);

    } else if (ctx->result == NGX_HTTP_GMS_OK
               || (data & NGX_HTTP_GMS_ANY_RESULT))
    {
        s = (ngx_str_t *) ((char *) ctx + (data & ~NGX_HTTP_GMS_ANY_RESULT));

    } else {
        v->not_found = 1;
        return NGX_OK;
    }

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    v->data = s->data;
    v->len = s->len;

    return NGX_OK;
}


static ngx_int_t
ngx_http_gms_result_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_gms_ctx_t       *ctx;
    ngx_http_gms_loc_conf_t  *glcf;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_gms_module);
    glcf = ngx_http_get_module_loc_conf(r->main, ngx_http_gms_module);

    if (ctx) {
        ngx_http_gms_variable_set(v, ngx_http_gms_metrics_results[ctx->result]);

    } else if (glcf->enable && glcf->preflight
               && ngx_http_gms_source_is_preflight(r->main))
    {
        /* let through unchecked: the check makes no context for it */
        ngx_http_gms_variable_set(v, "preflight");

    } else {
        ngx_http_gms_variable_set(v,
                              ngx_http_gms_metrics_results[NGX_HTTP_GMS_OFF]);
    }

    return NGX_OK;
}


/*
 * PERSONAL, SESSION, SERVICE_ACCOUNT, SYSTEM: for an accepted credential;
 * GUEST: for none, where gms_token_guest lets it through
 */

static ngx_int_t
ngx_http_gms_type_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    const char          *name;
    ngx_http_gms_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_gms_module);

    if (ctx == NULL || r == ctx->subrequest
        || (ctx->result != NGX_HTTP_GMS_OK
            && ctx->result != NGX_HTTP_GMS_GUEST)
        || ctx->type == GMS_TOKEN_NONE)
    {
        v->not_found = 1;
        return NGX_OK;
    }

    name = gms_token_type_names[ctx->type];

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->data = (u_char *) name;
    v->len = ngx_strlen(name);

    return NGX_OK;
}


/* the build serving: NGX_HTTP_GMS_VERSION is config's (debian/changelog) */

static ngx_int_t
ngx_http_gms_version_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = (u_char *) NGX_HTTP_GMS_VERSION;
    v->len = sizeof(NGX_HTTP_GMS_VERSION) - 1;

    return NGX_OK;
}


/*
 * $gms_decision: what the edge did with the request, for the decision log.
 *
 *   refused      it answered 401 or 403 itself: the credential's check, or
 *                getEsTaskStatus's privilege
 *   unavailable  it answered 503: Redis failed and no cache entry answered
 *   answered     it answered getEsTaskStatus itself (the value, GMS's error
 *                value, a refusal of the body or the task)
 *   passed       a signed token unknown to Redis went to GMS, which decided
 *                ($upstream_status)
 *   ""           the request went on as any other: accepted, or unchecked
 *
 * $gms_decision_reason: the check's result (missing, malformed, unknown,
 * expired, invalid, forbidden, error, passed), or getEsTaskStatus's outcome
 * (status, error, refused, cluster_error), as the metrics name them.
 */

static ngx_int_t
ngx_http_gms_decision_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_uint_t              status;
    const char             *decision, *reason;
    ngx_http_gms_ctx_t     *ctx;
    ngx_http_gms_es_ctx_t  *es;

    r = r->main;

    ctx = ngx_http_get_module_ctx(r, ngx_http_gms_module);
    es = ngx_http_get_module_ctx(r, ngx_http_gms_es_task_module);
    status = r->headers_out.status;

    decision = NULL;
    reason = NULL;

    if (ctx) {
        reason = ngx_http_gms_metrics_results[ctx->result];

        switch (ctx->result) {

        case NGX_HTTP_GMS_MISSING:
        case NGX_HTTP_GMS_MALFORMED:
        case NGX_HTTP_GMS_UNKNOWN:
        case NGX_HTTP_GMS_EXPIRED:
        case NGX_HTTP_GMS_INVALID:
        case NGX_HTTP_GMS_FORBIDDEN:
            if (status == NGX_HTTP_UNAUTHORIZED
                || status == NGX_HTTP_FORBIDDEN)
            {
                decision = "refused";
            }
            break;

        case NGX_HTTP_GMS_ERROR:
            if (status == NGX_HTTP_SERVICE_UNAVAILABLE) {
                decision = "unavailable";
            }
            break;

        case NGX_HTTP_GMS_PASSED:
            decision = "passed";
            break;

        default:
            break;
        }
    }

    if (decision == NULL && es && es->outcome) {
        decision = "answered";
        reason = ngx_http_gms_metrics_es_outcomes[es->outcome - 1];
    }

    if (decision == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_http_gms_variable_set(v, data == NGX_HTTP_GMS_DECISION_REASON
                                 ? reason : decision);

    return NGX_OK;
}


/*
 * $gms_credential_type: the credential presented, accepted or not: its
 * type where the check learnt it (PERSONAL, SESSION, SERVICE_ACCOUNT,
 * SYSTEM, OAUTH), else its scheme (BEARER, BASIC, OTHER); empty when none
 * was given
 */

static ngx_int_t
ngx_http_gms_credential_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_str_t           *c;
    ngx_http_gms_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_gms_module);

    if (ctx == NULL || r == ctx->subrequest) {
        v->not_found = 1;
        return NGX_OK;
    }

    if (ctx->type != GMS_TOKEN_NONE && ctx->type != GMS_TOKEN_GUEST) {
        ngx_http_gms_variable_set(v, gms_token_type_names[ctx->type]);
        return NGX_OK;
    }

    c = &ctx->credential;

    if (c->len == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_http_gms_variable_set(v,
        (c->len > 7 && ngx_strncasecmp(c->data, (u_char *) "Bearer ", 7) == 0)
        ? "BEARER"
        : (c->len > 6 && ngx_strncasecmp(c->data, (u_char *) "Basic ", 6) == 0)
        ? "BASIC" : "OTHER");

    return NGX_OK;
}


/* $gms_request_path: the path as the client sent it, without the query */

static ngx_int_t
ngx_http_gms_path_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char  *p, *q, *last;

    r = r->main;

    p = r->unparsed_uri.data;
    last = p + r->unparsed_uri.len;

    if (p == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    q = ngx_strlchr(p, last, '?');
    if (q) {
        last = q;
    }

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->data = p;
    v->len = last - p;

    return NGX_OK;
}


/* $gms_datahub_version: the release the location's answers follow */

static ngx_int_t
ngx_http_gms_release_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                   *p;
    char                      text[GMS_RELEASE_TEXT_LEN];
    ngx_http_gms_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r->main, ngx_http_gms_module);

    gms_release_text((gms_release_t) glcf->release, text);

    p = ngx_pnalloc(r->pool, ngx_strlen(text));
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->len = ngx_cpymem(p, text, ngx_strlen(text)) - p;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->data = p;

    return NGX_OK;
}


/* a variable's value: a static string */

static void
ngx_http_gms_variable_set(ngx_http_variable_value_t *v, const char *s)
{
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->data = (u_char *) s;
    v->len = ngx_strlen(s);
}

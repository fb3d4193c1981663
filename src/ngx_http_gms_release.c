
/*
 * gms_datahub_version X.Y[.Z[.W]]: the DataHub release GMS runs.  A location
 * takes from it what it does not set itself: the status of a missing
 * privilege (gms_token_forbidden_status), whether the system client's
 * secret may hold a colon, and whether gms_token_guest may be on.  What
 * changes by release at request time (the expired token's message,
 * service-account tokens, the system client's split) is read in
 * ngx_http_gms_auth.c, getEsTaskStatus's privileges (unless
 * gms_es_task_status ... privilege= sets them) in ngx_http_gms_es_route.c.
 * The table itself is src/lib/gms_release.c.
 */


#include "ngx_http_gms_release.h"


char *
ngx_http_gms_release_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_gms_loc_conf_t *glcf = conf;

    ngx_str_t      *value;
    gms_release_t   v;

    if (glcf->release != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (gms_release_parse(value[1].data, value[1].len, &v) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "unknown DataHub release \"%V\": expected one of "
                           "%s", &value[1], gms_release_known);
        return NGX_CONF_ERROR;
    }

    glcf->release = v;

    return NGX_CONF_OK;
}


ngx_int_t
ngx_http_gms_release_merge(ngx_conf_t *cf, ngx_http_gms_loc_conf_t *prev,
    ngx_http_gms_loc_conf_t *conf)
{
    char                       release[GMS_RELEASE_TEXT_LEN];
    ngx_http_gms_main_conf_t  *gmcf;

    ngx_conf_merge_uint_value(conf->release, prev->release,
                              GMS_RELEASE_DEFAULT);

    gms_release_text((gms_release_t) conf->release, release);

    /* what a location sets wins over its release, inherited or not */

    ngx_conf_merge_uint_value(conf->forbidden_conf, prev->forbidden_conf, 0);

    conf->forbidden_status = conf->forbidden_conf
                             ? conf->forbidden_conf
                             : gms_release_forbidden_status(conf->release);

    gmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_gms_module);

    if (conf->enable && gmcf->credentials.system_colon
        && !gms_release_secret_colon(conf->release))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
            "the secret of gms_token_system_client holds a colon, which "
            "GMS before DataHub 1.4.0 could never accept "
            "(DataHubSystemAuthenticator splits at every colon), and "
            "gms_datahub_version is %s here", release);
        return NGX_ERROR;
    }

    if (conf->enable && conf->guest && !gms_release_guest(conf->release)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
            "gms_token_guest needs DataHub 1.0.0 or later "
            "(DataHubGuestAuthenticator), and gms_datahub_version is "
            "%s here", release);
        return NGX_ERROR;
    }

    if (conf->enable && gmcf->credentials.oauth
        && !gms_release_oauth(conf->release))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
            "gms_token_oauth needs DataHub 1.3.0 or later "
            "(DataHubOAuthAuthenticator), and gms_datahub_version is "
            "%s here", release);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * What the location's release does with the request's user, as the
 * lookup found them (<prefix>inactive, <prefix>deleted): an external
 * OAuth token's user by gms_release_inactive_oauth(), any other token's
 * by gms_release_inactive_user().  A session or OAuth token accepted
 * where no privilege is needed was not looked up: ctx->inactive is 0.
 */

gms_release_inactive_e
ngx_http_gms_release_inactive(ngx_http_gms_loc_conf_t *glcf,
    ngx_http_gms_ctx_t *ctx)
{
    if (ctx->type == GMS_TOKEN_OAUTH) {
        return gms_release_inactive_oauth(glcf->release, ctx->inactive);
    }

    return gms_release_inactive_user(glcf->release, ctx->inactive);
}


/*
 * Privileges: the names a location requires (gms_token_require_privilege,
 * gms_es_task_status's privilege=), checked at configuration time, and
 * whether the user of a checked credential holds one of them.
 */


#include "ngx_http_gms_privilege.h"


/* gms_token_require_privilege NAME ...: any one of them */

char *
ngx_http_gms_privilege_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_gms_loc_conf_t *glcf = conf;

    ngx_str_t   *value, *name;
    ngx_uint_t   i;

    if (glcf->privileges != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    glcf->privileges = ngx_array_create(cf->pool, cf->args->nelts - 1,
                                        sizeof(ngx_str_t));
    if (glcf->privileges == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (!gms_token_privilege_valid((char *) value[i].data, value[i].len)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid privilege name \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        name = ngx_array_push(glcf->privileges);
        if (name == NULL) {
            return NGX_CONF_ERROR;
        }

        *name = value[i];
    }

    return NGX_CONF_OK;
}


/* NAME[,NAME...], each a valid privilege name, into names */

ngx_int_t
ngx_http_gms_privilege_list(ngx_conf_t *cf, ngx_str_t *list,
    ngx_array_t *names)
{
    u_char     *p, *last, *comma;
    ngx_str_t  *name;

    p = list->data;
    last = p + list->len;

    for ( ;; ) {
        comma = ngx_strlchr(p, last, ',');

        if (comma == NULL) {
            comma = last;
        }

        if (!gms_token_privilege_valid((char *) p, comma - p)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid privilege name \"%*s\" in \"%V\"",
                               comma - p, p, list);
            return NGX_ERROR;
        }

        name = ngx_array_push(names);
        if (name == NULL) {
            return NGX_ERROR;
        }

        name->data = p;
        name->len = comma - p;

        if (comma == last) {
            return NGX_OK;
        }

        p = comma + 1;
    }
}


/*
 * Whether the user holds any one of names (an array of ngx_str_t; NULL:
 * nothing is required); the system client holds them all.  The user's
 * privileges are comma-separated names of the lookup's character set, so
 * no name holds a comma.
 */

ngx_int_t
ngx_http_gms_privilege_has_any(ngx_http_gms_ctx_t *ctx, ngx_array_t *names)
{
    u_char      *p, *last, *comma;
    ngx_str_t   *name;
    ngx_uint_t   i;

    if (names == NULL || ctx->type == GMS_TOKEN_SYSTEM) {
        return 1;
    }

    name = names->elts;

    for (p = ctx->privileges.data, last = p + ctx->privileges.len;
         p < last;
         p = comma + 1)
    {
        comma = ngx_strlchr(p, last, ',');

        if (comma == NULL) {
            comma = last;
        }

        for (i = 0; i < names->nelts; i++) {
            if ((size_t) (comma - p) == name[i].len
                && ngx_strncmp(p, name[i].data, name[i].len) == 0)
            {
                return 1;
            }
        }
    }

    return 0;
}


/*
 * Which requests are getEsTaskStatus (the operations resource's action,
 * the OpenAPI controller's path, as GMS routes them), and the privileges
 * a location requires for them.  The token check asks it too: the edge
 * answers these itself, so the user's privileges are read for them and
 * GMS never decides them.
 */


#include "ngx_http_gms_es_route.h"
#include "ngx_http_gms_es_task_module.h"


static ngx_str_t  ngx_http_gms_es_get_only_names[] = {
    ngx_string("GET_ES_TASK_STATUS_PRIVILEGE")
};

static ngx_str_t  ngx_http_gms_es_get_or_manage_names[] = {
    ngx_string("GET_ES_TASK_STATUS_PRIVILEGE"),
    ngx_string("MANAGE_SYSTEM_OPERATIONS")
};

/* read-only: never pushed to, so no pool */

static ngx_array_t  ngx_http_gms_es_get_only = {
    ngx_http_gms_es_get_only_names, 1, sizeof(ngx_str_t), 1, NULL
};

static ngx_array_t  ngx_http_gms_es_get_or_manage = {
    ngx_http_gms_es_get_or_manage_names, 2, sizeof(ngx_str_t), 2, NULL
};

/* the OpenAPI form's privilege in every release: isAPIAuthorized's */

static ngx_str_t  ngx_http_gms_es_openapi_names[] = {
    ngx_string("GET_ES_TASK_STATUS_PRIVILEGE")
};

static ngx_array_t  ngx_http_gms_es_openapi_privileges = {
    ngx_http_gms_es_openapi_names, 1, sizeof(ngx_str_t), 1, NULL
};

/* its address only: "no privilege= given" */
ngx_array_t  ngx_http_gms_es_route_by_release;


/*
 * Whether the edge answers r itself: its location has gms_es_task_status,
 * and r is either form of getEsTaskStatus.
 */

ngx_uint_t
ngx_http_gms_es_route_answered(ngx_http_request_t *r)
{
    ngx_http_gms_es_loc_conf_t  *eslcf;

    eslcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_es_task_module);

    return eslcf->uri.len && ngx_http_gms_es_route_action(r);
}


/*
 * The privileges the operations resource's action takes in r's location,
 * any one of them (NULL: none, privilege=off): as gms_es_task_status sets
 * them, else those of the location's gms_datahub_version (GMS 0.14 accepts
 * GET_ES_TASK_STATUS_PRIVILEGE, 0.15.0 and later MANAGE_SYSTEM_OPERATIONS
 * too: OperationsResource.getTaskStatus, AuthUtil.isAPIOperationsAuthorized)
 */

ngx_array_t *
ngx_http_gms_es_route_privileges(ngx_http_request_t *r)
{
    ngx_http_gms_loc_conf_t     *glcf;
    ngx_http_gms_es_loc_conf_t  *eslcf;

    eslcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_es_task_module);

    if (eslcf->privileges != &ngx_http_gms_es_route_by_release) {
        return eslcf->privileges;
    }

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_module);

    if (gms_release_es_privileges(glcf->release) == GMS_RELEASE_ES_GET_ONLY) {
        return &ngx_http_gms_es_get_only;
    }

    return &ngx_http_gms_es_get_or_manage;
}


/*
 * The OpenAPI form's: GET_ES_TASK_STATUS_PRIVILEGE in every release,
 * unless gms_es_task_status sets them
 */

ngx_array_t *
ngx_http_gms_es_route_openapi_privileges(ngx_http_request_t *r)
{
    ngx_http_gms_es_loc_conf_t  *eslcf;

    eslcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_es_task_module);

    if (eslcf->privileges != &ngx_http_gms_es_route_by_release) {
        return eslcf->privileges;
    }

    return &ngx_http_gms_es_openapi_privileges;
}


/*
 * Either form of getEsTaskStatus: the OpenAPI controller's path (below),
 * or the operations resource's getEsTaskStatus action, as Rest.li routes it:
 * the path exactly /operations, or /api/gms/operations as the frontend's
 * proxy has it (nginx's normalised path, after any rewrite: a location
 * that strips a prefix answers once its path is one of these), and a
 * query parameter named exactly "action" (case-sensitive, the first one)
 * whose value is exactly getEsTaskStatus.  Anything else goes to GMS,
 * which answers it itself: /entities/operations is the entities
 * resource's key "operations" there.
 */

ngx_uint_t
ngx_http_gms_es_route_action(ngx_http_request_t *r)
{
    u_char  *p, *last, *amp;

    static ngx_str_t   resource = ngx_string("/operations");
    static ngx_str_t   proxied = ngx_string("/api/gms/operations");
    static const char  action[] = "action=getEsTaskStatus";

    if (ngx_http_gms_es_route_openapi(r)) {
        return 1;
    }

    if ((r->uri.len != resource.len
         || ngx_strncmp(r->uri.data, resource.data, resource.len) != 0)
        && (r->uri.len != proxied.len
            || ngx_strncmp(r->uri.data, proxied.data, proxied.len) != 0))
    {
        return 0;
    }

    p = r->args.data;
    last = p + r->args.len;

    for ( /* void */ ; p < last; p = amp + 1) {
        amp = ngx_strlchr(p, last, '&');

        if (amp == NULL) {
            amp = last;
        }

        if (amp - p >= (ssize_t) sizeof("action=") - 1
            && ngx_strncmp(p, "action=", sizeof("action=") - 1) == 0)
        {
            return amp - p == (ssize_t) sizeof(action) - 1
                   && ngx_strncmp(p, action, sizeof(action) - 1) == 0;
        }
    }

    return 0;
}


/*
 * GET /openapi/operations/elasticSearch/getTaskStatus?task=<node>:<number>
 * (OperationsController.getTaskStatus in 0.13-0.15, mapped under the
 * /openapi servlet; ElasticsearchController.getTaskStatus from 1.0.0),
 * also as /api/gms/openapi/... through the frontend's proxy
 * (Application.java, mapPath): the same task status, another shape.  The
 * path exactly, case-sensitive, as Spring matches it; anything else goes
 * to GMS.
 */

ngx_uint_t
ngx_http_gms_es_route_openapi(ngx_http_request_t *r)
{
    static ngx_str_t  path =
        ngx_string("/openapi/operations/elasticSearch/getTaskStatus");
    static ngx_str_t  proxied =
        ngx_string("/api/gms/openapi/operations/elasticSearch/getTaskStatus");

    return (r->uri.len == path.len
            && ngx_strncmp(r->uri.data, path.data, path.len) == 0)
           || (r->uri.len == proxied.len
               && ngx_strncmp(r->uri.data, proxied.data, proxied.len) == 0);
}

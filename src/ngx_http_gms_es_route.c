
/*
 * Which requests are getEsTaskStatus: the operations resource's action
 * and the OpenAPI controller's path, as GMS routes them.  The token check
 * asks it too: the edge answers these itself, so the user's privileges
 * are read for them and GMS never decides them.
 */


#include "ngx_http_gms_es_route.h"


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

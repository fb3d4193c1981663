
/*
 * Which requests are getEsTaskStatus, and what a location requires of
 * them: asked by the token check as much as by the module that answers.
 */


#ifndef _NGX_HTTP_GMS_ES_ROUTE_H_INCLUDED_
#define _NGX_HTTP_GMS_ES_ROUTE_H_INCLUDED_


#include "ngx_http_gms_module.h"


ngx_uint_t ngx_http_gms_es_route_answered(ngx_http_request_t *r);
ngx_array_t *ngx_http_gms_es_route_privileges(ngx_http_request_t *r);
ngx_array_t *ngx_http_gms_es_route_openapi_privileges(ngx_http_request_t *r);
ngx_uint_t ngx_http_gms_es_route_action(ngx_http_request_t *r);
ngx_uint_t ngx_http_gms_es_route_openapi(ngx_http_request_t *r);


/* gms_es_task_status without privilege=: the release's privileges */
extern ngx_array_t  ngx_http_gms_es_route_by_release;


#endif /* _NGX_HTTP_GMS_ES_ROUTE_H_INCLUDED_ */

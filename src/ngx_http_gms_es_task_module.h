
/*
 * Shared types of ngx_http_gms_es_task_module, the getEsTaskStatus module
 * beside ngx_http_gms_module in the same .so: its location configuration,
 * the request's context, and the module itself.
 */


#ifndef _NGX_HTTP_GMS_ES_TASK_MODULE_H_INCLUDED_
#define _NGX_HTTP_GMS_ES_TASK_MODULE_H_INCLUDED_


#include "ngx_http_gms_module.h"

#include "gms_es_task.h"


typedef struct {
    ngx_str_t                  uri;            /* gms_es_task_status URI */

    /*
     * privilege=: of ngx_str_t; NULL: off; &ngx_http_gms_es_route_by_release
     * without it (gms_datahub_version's, ngx_http_gms_es_route.c)
     */
    ngx_array_t               *privileges;
} ngx_http_gms_es_loc_conf_t;


/* getEsTaskStatus: the body, the task, the search cluster's answer */
typedef struct {
    ngx_http_request_t        *subrequest;     /* to the search cluster */
    u_char                    *body;           /* the request body, read */
    size_t                     body_len;
    size_t                     body_size;      /* its room, NUL aside */
    gms_es_task_ref_t          task;
    ngx_int_t                  rc;
    ngx_uint_t                 status;
    ngx_str_t                  answer;
    off_t                      received;
    ngx_uint_t                 outcome;        /* 1 + NGX_HTTP_GMS_ES_*, once
                                                  the edge answered */
    unsigned                   done:1;
    unsigned                   too_big:1;
    unsigned                   unreachable:1;
    unsigned                   started:1;
    unsigned                   redirected:1;
    unsigned                   incomplete:1;
    unsigned                   ended:1;        /* upstream's last buffer */
    unsigned                   openapi:1;      /* the OpenAPI form's */
} ngx_http_gms_es_ctx_t;


extern ngx_module_t  ngx_http_gms_es_task_module;


#endif /* _NGX_HTTP_GMS_ES_TASK_MODULE_H_INCLUDED_ */


/*
 * getEsTaskStatus answered at the edge: gms_es_task_status, the
 * precontent handler that takes the action, the subrequest's body filter.
 */


#ifndef _NGX_HTTP_GMS_ES_TASK_H_INCLUDED_
#define _NGX_HTTP_GMS_ES_TASK_H_INCLUDED_


#include "ngx_http_gms_module.h"


char *ngx_http_gms_es_task_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_gms_es_task_precontent(ngx_http_request_t *r);
ngx_int_t ngx_http_gms_es_task_filter_init(ngx_conf_t *cf);


#endif /* _NGX_HTTP_GMS_ES_TASK_H_INCLUDED_ */

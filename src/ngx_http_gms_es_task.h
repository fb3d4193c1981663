
/*
 * getEsTaskStatus answered at the edge: the precontent handler that takes
 * either form, the subrequest's body filter (ngx_http_gms_es_task_module
 * registers both).
 */


#ifndef _NGX_HTTP_GMS_ES_TASK_H_INCLUDED_
#define _NGX_HTTP_GMS_ES_TASK_H_INCLUDED_


#include "ngx_http_gms_module.h"


ngx_int_t ngx_http_gms_es_task_precontent(ngx_http_request_t *r);
ngx_int_t ngx_http_gms_es_task_filter_init(ngx_conf_t *cf);


#endif /* _NGX_HTTP_GMS_ES_TASK_H_INCLUDED_ */


/*
 * Credentials masked in the error logs.
 */


#ifndef _NGX_HTTP_GMS_LOG_H_INCLUDED_
#define _NGX_HTTP_GMS_LOG_H_INCLUDED_


#include "ngx_http_gms_module.h"


ngx_int_t ngx_http_gms_log_init(ngx_cycle_t *cycle);


#endif /* _NGX_HTTP_GMS_LOG_H_INCLUDED_ */

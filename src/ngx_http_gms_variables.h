
/*
 * The module's variables: $gms_token_*, $gms_module_version, and the
 * decision log's.
 */


#ifndef _NGX_HTTP_GMS_VARIABLES_H_INCLUDED_
#define _NGX_HTTP_GMS_VARIABLES_H_INCLUDED_


#include "ngx_http_gms_module.h"


ngx_int_t ngx_http_gms_variables_add(ngx_conf_t *cf);


#endif /* _NGX_HTTP_GMS_VARIABLES_H_INCLUDED_ */


/*
 * gms_datahub_version: the DataHub release GMS runs, and the defaults of
 * a location that follow from it.
 */


#ifndef _NGX_HTTP_GMS_RELEASE_H_INCLUDED_
#define _NGX_HTTP_GMS_RELEASE_H_INCLUDED_


#include "ngx_http_gms_module.h"


char *ngx_http_gms_release_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_gms_release_merge(ngx_conf_t *cf,
    ngx_http_gms_loc_conf_t *prev, ngx_http_gms_loc_conf_t *conf);
gms_release_inactive_e ngx_http_gms_release_inactive(
    ngx_http_gms_loc_conf_t *glcf, ngx_http_gms_ctx_t *ctx);


#endif /* _NGX_HTTP_GMS_RELEASE_H_INCLUDED_ */

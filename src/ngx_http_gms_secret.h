
/*
 * Secret files read at configuration, and a password file read again in
 * a worker; ngx_http_gms_secret.c.
 */


#ifndef _NGX_HTTP_GMS_SECRET_H_INCLUDED_
#define _NGX_HTTP_GMS_SECRET_H_INCLUDED_


#include "ngx_http_gms_module.h"


char *ngx_http_gms_secret_file(ngx_conf_t *cf, ngx_str_t *name, size_t max,
    ngx_str_t *out);
ngx_int_t ngx_http_gms_secret_read(ngx_conf_t *cf, u_char *path, u_char *buf,
    size_t max, size_t *len);


#endif /* _NGX_HTTP_GMS_SECRET_H_INCLUDED_ */

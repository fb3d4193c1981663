
/*
 * Where Redis is, as configured: gms_token_redis,
 * gms_token_redis_sentinel, gms_token_redis_cluster,
 * gms_token_redis_ssl_*.
 */


#ifndef _NGX_HTTP_GMS_REDIS_CONF_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_CONF_H_INCLUDED_


#include "ngx_http_gms_module.h"


char *ngx_http_gms_redis_conf_redis(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_gms_redis_conf_sentinel(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
char *ngx_http_gms_redis_conf_cluster(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
char *ngx_http_gms_redis_conf_cluster_prefix(ngx_conf_t *cf,
    ngx_http_gms_main_conf_t *gmcf);
char *ngx_http_gms_redis_conf_init(ngx_conf_t *cf,
    ngx_http_gms_main_conf_t *gmcf);


#endif /* _NGX_HTTP_GMS_REDIS_CONF_H_INCLUDED_ */

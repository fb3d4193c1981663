
/*
 * Redis Sentinel: which server is the master (and a replica to read
 * from), asked of the Sentinels and followed through their +switch-master
 * announcements.
 */


#ifndef _NGX_HTTP_GMS_SENTINEL_H_INCLUDED_
#define _NGX_HTTP_GMS_SENTINEL_H_INCLUDED_


#include "ngx_http_gms_module.h"


/* where the Sentinels say the master (or a replica; NULL: none) is */
typedef void (*ngx_http_gms_sentinel_pt)(struct sockaddr *sa,
    socklen_t socklen);


ngx_int_t ngx_http_gms_sentinel_init_process(ngx_cycle_t *cycle,
    ngx_http_gms_main_conf_t *gmcf, ngx_http_gms_sentinel_pt master,
    ngx_http_gms_sentinel_pt replica);
void ngx_http_gms_sentinel_exit_process(void);

/* a connection to the master failed or found a replica: ask again */
void ngx_http_gms_sentinel_ask(const char *why);


#endif /* _NGX_HTTP_GMS_SENTINEL_H_INCLUDED_ */


/*
 * What keeps the shared cache current: the invalidation subscription and
 * the sync-age poll, one of each per worker.
 */


#ifndef _NGX_HTTP_GMS_INVALIDATE_H_INCLUDED_
#define _NGX_HTTP_GMS_INVALIDATE_H_INCLUDED_


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_discovery.h"


ngx_int_t ngx_http_gms_invalidate_init_process(ngx_cycle_t *cycle,
    ngx_http_gms_discovery_t *dc);
void ngx_http_gms_invalidate_exit_process(ngx_cycle_t *cycle);

/* whether a lookup is to be read from the master: invalidated lately */
ngx_uint_t ngx_http_gms_invalidate_recent(u_char *id, ngx_str_t *user);

/* the discovery's hook: where the master is */
void ngx_http_gms_invalidate_set_master(struct sockaddr *sa,
    socklen_t socklen);


#endif /* _NGX_HTTP_GMS_INVALIDATE_H_INCLUDED_ */


/*
 * Redis Sentinel: which server is the master (and a replica to read
 * from), asked of the Sentinels and followed through their +switch-master
 * announcements.  One of the discovery interface's implementations.
 */


#ifndef _NGX_HTTP_GMS_SENTINEL_H_INCLUDED_
#define _NGX_HTTP_GMS_SENTINEL_H_INCLUDED_


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_discovery.h"


/* dc's topology half: start, stop, ask */
void ngx_http_gms_sentinel_discovery(ngx_http_gms_discovery_t *dc);


#endif /* _NGX_HTTP_GMS_SENTINEL_H_INCLUDED_ */


/*
 * Redis Cluster: which node serves the hash slot of the key prefix's tag
 * (and a replica of it to read from), asked of the cluster's nodes and
 * asked again when a node redirects, fails or at a steady pace; and the
 * lookups' redirections (MOVED, ASK) followed.  One of the discovery
 * interface's implementations.
 */


#ifndef _NGX_HTTP_GMS_CLUSTER_H_INCLUDED_
#define _NGX_HTTP_GMS_CLUSTER_H_INCLUDED_


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_discovery.h"

#include <hiredis/hiredis.h>


/* where a redirected lookup goes */
typedef struct {
    ngx_http_gms_rconn_t      *rc;             /* ASK's node, opened */
    ngx_sockaddr_t             sockaddr;       /* MOVED: the new master */
    socklen_t                  socklen;
} ngx_http_gms_cluster_to_t;


/* dc's topology half: start, stop, ask */
void ngx_http_gms_cluster_discovery(ngx_http_gms_discovery_t *dc);

ngx_int_t ngx_http_gms_cluster_redirect(ngx_http_gms_rconn_t *rc,
    redisReply *reply, ngx_uint_t redirected, ngx_http_gms_cluster_to_t *go,
    const char **error);


#endif /* _NGX_HTTP_GMS_CLUSTER_H_INCLUDED_ */

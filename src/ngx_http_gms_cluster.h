
/*
 * Redis Cluster: which node serves the hash slot of the key prefix's tag
 * (and a replica of it to read from), asked of the cluster's nodes and
 * asked again when a node redirects, fails or at a steady pace.
 */


#ifndef _NGX_HTTP_GMS_CLUSTER_H_INCLUDED_
#define _NGX_HTTP_GMS_CLUSTER_H_INCLUDED_


#include "ngx_http_gms_module.h"


/* where the slot's master (or a replica; NULL: none) is */
typedef void (*ngx_http_gms_cluster_pt)(struct sockaddr *sa,
    socklen_t socklen);


ngx_int_t ngx_http_gms_cluster_init_process(ngx_cycle_t *cycle,
    ngx_http_gms_main_conf_t *gmcf, ngx_http_gms_cluster_pt master,
    ngx_http_gms_cluster_pt replica);
void ngx_http_gms_cluster_exit_process(void);

/* a redirection, a lost node, CLUSTERDOWN: the map is asked for again */
void ngx_http_gms_cluster_refresh(const char *why);

/*
 * An address a node announced: NGX_OK and *sa for an IP address,
 * NGX_DECLINED for a host name (resolved by the map's refresh), NGX_ERROR
 * for bytes that are neither.
 */
ngx_int_t ngx_http_gms_cluster_addr(const u_char *host, size_t len,
    ngx_uint_t port, ngx_sockaddr_t *sa, socklen_t *socklen);


#endif /* _NGX_HTTP_GMS_CLUSTER_H_INCLUDED_ */

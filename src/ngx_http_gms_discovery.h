
/*
 * Where the data server is: configured (standalone), named by the
 * Sentinels, or the slot's node in a cluster's map.  One interface that
 * the three implement, as nginx's ngx_peer_connection_t carries get and
 * free: the Redis client calls ask() when a server fails or is not what
 * it was said to be; the topology calls the owner's hooks when the master
 * or the replica changes, or when it gives up.
 */


#ifndef _NGX_HTTP_GMS_DISCOVERY_H_INCLUDED_
#define _NGX_HTTP_GMS_DISCOVERY_H_INCLUDED_


#include "ngx_http_gms_module.h"


typedef struct ngx_http_gms_discovery_s  ngx_http_gms_discovery_t;

/* where the master (or a replica; NULL: none) is now */
typedef void (*ngx_http_gms_discovery_peer_pt)(struct sockaddr *sa,
    socklen_t socklen);

/* no server known, and none to be, for now: why */
typedef void (*ngx_http_gms_discovery_failed_pt)(const char *why);


struct ngx_http_gms_discovery_s {
    /* the topology's */
    const char                        *name;     /* who is asked, for logs */
    ngx_http_gms_redis_addr_t         *addr;     /* NULL: to be discovered */
    ngx_int_t                        (*start)(ngx_cycle_t *cycle,
                                          ngx_http_gms_discovery_t *dc);
    void                             (*stop)(void);
    void                             (*ask)(const char *why);

    /* the owner's, set before start() */
    ngx_http_gms_main_conf_t          *gmcf;
    ngx_http_gms_discovery_peer_pt     master;
    ngx_http_gms_discovery_peer_pt     replica;
    ngx_http_gms_discovery_failed_pt   failed;
};


/* the worker's, for its configuration's topology, the hooks unset */
ngx_http_gms_discovery_t *ngx_http_gms_discovery_init(
    ngx_http_gms_main_conf_t *gmcf);
ngx_http_gms_discovery_t *ngx_http_gms_discovery_get(void);


#endif /* _NGX_HTTP_GMS_DISCOVERY_H_INCLUDED_ */

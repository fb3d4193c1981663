
/*
 * Reading from a replica: its lookup connection, whether it is in step
 * with its master (ROLE every second), and what its errors mean.
 */


#ifndef _NGX_HTTP_GMS_REPLICA_H_INCLUDED_
#define _NGX_HTTP_GMS_REPLICA_H_INCLUDED_


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_discovery.h"

#include <hiredis/hiredis.h>


void ngx_http_gms_replica_init(ngx_cycle_t *cycle,
    ngx_http_gms_discovery_t *dc, ngx_http_gms_rconn_t *master);
void ngx_http_gms_replica_exit(void);

/* the replica's connection for a lookup (not "master" only), or NULL */
ngx_http_gms_rconn_t *ngx_http_gms_replica_get(ngx_uint_t master);

/* the discovery's hook: the replica to read (NULL: none) */
void ngx_http_gms_replica_set(struct sockaddr *sa, socklen_t socklen);

/* the master's connection: moved elsewhere, or closed */
void ngx_http_gms_replica_master_moved(void);
void ngx_http_gms_replica_master_closed(void);

/* ROLE's answer, on a lookup connection's setup or the check's */
void ngx_http_gms_replica_role(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error);

/* an error (or no answer: NULL) to a lookup sent with command */
void ngx_http_gms_replica_error(ngx_http_gms_rconn_t *rc, redisReply *reply,
    const char *command);


#endif /* _NGX_HTTP_GMS_REPLICA_H_INCLUDED_ */


/*
 * The worker's Redis lookups, pipelined on one connection to the master
 * (or to a replica, with replica=prefer: ngx_http_gms_replica.c).  The
 * connections themselves are in ngx_http_gms_redis_conn.c; where the
 * master is, behind the discovery interface, in ngx_http_gms_discovery.h;
 * the invalidation subscription and the sync-age poll in
 * ngx_http_gms_invalidate.c.
 */


#ifndef _NGX_HTTP_GMS_REDIS_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_H_INCLUDED_


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_discovery.h"

#include <hiredis/hiredis.h>

#include "gms_lookup.h"


typedef struct ngx_http_gms_redis_lookup_s  ngx_http_gms_redis_lookup_t;


/*
 * Called exactly once per lookup, never from inside the call that made
 * it: with the answer parsed (GMS_LOOKUP_BAD_REPLY: lookup->error says
 * why; its strings live until the return), or with error, why Redis could
 * not answer; never for a lookup ngx_http_gms_redis_cancel() took back.
 * The answer is the same whether the script or, where the server refuses
 * scripts, plain commands read it.
 */
typedef void (*ngx_http_gms_redis_lookup_pt)(void *data,
    gms_lookup_rc_e rc, gms_lookup_t *lookup, const char *error);


/*
 * A token's entry by id; with actor, that user's privileges and status
 * (the same script, for a session or OAuth token); with master, never
 * from a replica.  While no server is known yet (the discovery is under
 * way) the lookup waits; *lookup is the handle.
 */
ngx_int_t ngx_http_gms_redis_lookup(ngx_http_gms_main_conf_t *gmcf,
    u_char *id, ngx_str_t *actor, ngx_uint_t master,
    ngx_http_gms_redis_lookup_pt handler, void *data,
    ngx_http_gms_redis_lookup_t **lookup);

/* taken back if it still waits for a server (NGX_OK), else NGX_DECLINED */
ngx_int_t ngx_http_gms_redis_cancel(ngx_http_gms_redis_lookup_t *lk);

/* its deadline passed: the connection it is on goes, with what is behind */
void ngx_http_gms_redis_late(ngx_http_gms_redis_lookup_t *lk,
    const char *reason);

ngx_int_t ngx_http_gms_redis_init_process(ngx_cycle_t *cycle,
    ngx_http_gms_discovery_t *dc);
void ngx_http_gms_redis_exit_process(ngx_cycle_t *cycle);

/*
 * The discovery's hooks: where the master is (Sentinel, or a cluster's
 * slot map); until it is named, lookups wait, unless the discovery gives
 * up: then they fail, at once, until a master is named.
 */
void ngx_http_gms_redis_set_master(struct sockaddr *sa, socklen_t socklen);
void ngx_http_gms_redis_discovery_failed(const char *why);

/* the lookups' connection to the master, for the sync-age HGET */
ngx_http_gms_rconn_t *ngx_http_gms_redis_open_master(void);


#endif /* _NGX_HTTP_GMS_REDIS_H_INCLUDED_ */


/*
 * The worker's use of Redis.
 *
 * Each worker keeps one connection for lookups (ngx_http_gms_redis_conn.c:
 * nginx's own, plain or TLS), made on first use, lookups pipelined on it.
 * Deadlines belong to the requests (nginx timers in the module); when one
 * fires the connection is dropped, since every lookup pipelined behind
 * the late one would be late too.  After a failure, connecting again is
 * refused for a short, growing, jittered while, so that a Redis outage
 * costs the requests nothing but a fast 503.  An idle connection is
 * PINGed, so a dead one is found before a lookup needs it.
 *
 * Where the master is, the discovery says (ngx_http_gms_discovery.h:
 * configured, ngx_http_gms_sentinel.c or ngx_http_gms_cluster.c); each
 * connection confirms it (ROLE with Sentinel), and a connection lost, a
 * server of the wrong role, or -READONLY / -LOADING make the worker ask
 * the discovery again.  Until it has named the master (after a start,
 * after every reload), lookups wait for it, each within its request's
 * deadline; when it gives up, they fail.
 *
 * With replica=prefer, lookups go to a replica while it is in step with
 * its master (ngx_http_gms_replica.c), and to the master otherwise; a
 * token or user invalidated lately is read from the master (the caller
 * says so): the replica may not have applied the change yet.  In a
 * cluster, a lookup redirected (ngx_http_gms_cluster.c) goes once to the
 * node named; when -MOVED names a new master, the lookups pipelined
 * behind it on the old connection follow it there.
 *
 * A server that refuses scripts (an ACL without @scripting, EVALSHA
 * renamed away, Valkey without its Lua module) is asked with plain
 * commands instead, in two round trips: HMGET of the token's hash, then
 * the user's status and privileges in one MULTI/EXEC, read at one
 * instant as the script reads them.  The worker switches when SCRIPT LOAD
 * or a lookup's script is refused, and back when a new connection's
 * SCRIPT LOAD succeeds (the server changed: an ACL granted, a failover).
 *
 * The connections' setup is ngx_http_gms_redis_server.c's; the
 * invalidation subscription and the sync-age poll, which connect the same
 * way, are in ngx_http_gms_invalidate.c.
 */


#include "ngx_http_gms_redis.h"
#include "ngx_http_gms_replica.h"
#include "ngx_http_gms_redis_server.h"
#include "ngx_http_gms_cluster.h"
#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_redis_idle.h"
#include "ngx_http_gms_metrics.h"

#include "gms_lookup.h"


/* a queued command's error kept for EXEC's -EXECABORT: enough to redirect */
#define NGX_HTTP_GMS_REDIS_QUEUED_ERROR  128


struct ngx_http_gms_redis_lookup_s {
    ngx_queue_t                    queue;          /* free list, or held */
    ngx_http_gms_redis_lookup_pt   handler;
    void                          *data;
    ngx_http_gms_rconn_t          *rc;             /* where; NULL: held */
    ngx_str_t                      actor;          /* a user's; or data NULL */
    u_char                         id[GMS_TOKEN_ID_LEN];
    unsigned                       evaluated:1;    /* sent with EVAL */
    unsigned                       master:1;       /* not from a replica */
    unsigned                       redirected:1;   /* MOVED, ASK: once */
    unsigned                       plain:1;        /* without scripts */
    unsigned                       user:1;         /* MULTI...EXEC sent */

    /* without scripts: the token's fields, read before the user's */
    int64_t                        expires_at;
    size_t                         token_actor_len;
    size_t                         type_len;
    size_t                         queued_len;
    u_char                         token_actor[GMS_ACTOR_MAX];
    u_char                         type[GMS_LOOKUP_TYPE_MAX];
    u_char                         queued[NGX_HTTP_GMS_REDIS_QUEUED_ERROR];
};


typedef enum {
    NGX_HTTP_GMS_DISCOVERY_DONE = 0,   /* a server configured, or named */
    NGX_HTTP_GMS_DISCOVERY_UNDER_WAY,  /* none known yet: lookups wait */
    NGX_HTTP_GMS_DISCOVERY_FAILED      /* gave up: lookups fail at once */
} ngx_http_gms_discovery_e;


typedef struct {
    ngx_http_gms_main_conf_t  *gmcf;
    ngx_http_gms_discovery_t  *dc;
    ngx_queue_t                free;
    ngx_queue_t                held;           /* waiting for a server */
    ngx_queue_t                moved;          /* to the new master */
    ngx_event_t                release;        /* of the held lookups */
    ngx_http_gms_discovery_e   discovery;
    u_char                    *key;            /* <prefix>token:<id> */
    u_char                    *members_key;    /* <prefix>actor:<urn> */
    u_char                    *evalsha;        /* the lookup, formatted */
    size_t                     evalsha_len;
    size_t                     evalsha_id;     /* where its id goes */
    u_char                    *evalsha_ro;     /* the same, for replicas */
    size_t                     evalsha_ro_len;
    size_t                     evalsha_ro_id;
    u_char                    *hmget;          /* without scripts */
    size_t                     hmget_len;
    size_t                     hmget_id;
    ngx_str_t                  inactive;       /* <prefix>inactive */
    ngx_str_t                  deleted;        /* <prefix>deleted */
    unsigned                   noscript:1;     /* the server refuses them */
    unsigned                   moving:1;       /* following a failover */
    unsigned                   exiting:1;
} ngx_http_gms_redis_t;


static ngx_int_t ngx_http_gms_redis_format(u_char **cmd, size_t *len,
    size_t *id_offset, const char *name, ngx_http_gms_main_conf_t *gmcf);
static ngx_int_t ngx_http_gms_redis_plain_init(ngx_http_gms_redis_t *rd,
    ngx_http_gms_main_conf_t *gmcf);
static void ngx_http_gms_redis_scripts(ngx_http_gms_rconn_t *rc,
    redisReply *refusal);
static ngx_int_t ngx_http_gms_redis_connect(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_redis_up(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_redis_closed(ngx_http_gms_rconn_t *rc);
static ngx_int_t ngx_http_gms_redis_start(ngx_http_gms_redis_lookup_t *lk);
static void ngx_http_gms_redis_release(ngx_event_t *ev);
static ngx_int_t ngx_http_gms_redis_send(ngx_http_gms_redis_lookup_t *lk);
static ngx_int_t ngx_http_gms_redis_send_user(
    ngx_http_gms_redis_lookup_t *lk, u_char *actor, size_t len);
static void ngx_http_gms_redis_queued(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error);
static void ngx_http_gms_redis_reply(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error);
static ngx_int_t ngx_http_gms_redis_token(ngx_http_gms_redis_lookup_t *lk,
    redisReply *reply);
static void ngx_http_gms_redis_answer(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_redis_lookup_t *lk, redisReply *reply, const char *error);
static ngx_int_t ngx_http_gms_redis_cluster(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_redis_lookup_t *lk, redisReply *reply, const char **error);
static ngx_int_t ngx_http_gms_redis_resend(ngx_http_gms_redis_lookup_t *lk);
static void ngx_http_gms_redis_follow(void);


/* one of each per worker process */
static ngx_http_gms_redis_t  ngx_http_gms_redis;
static ngx_http_gms_rconn_t  ngx_http_gms_redis_master;


/* the connections, their keys and the EVALSHAs, made once per worker */

ngx_int_t
ngx_http_gms_redis_init_process(ngx_cycle_t *cycle,
    ngx_http_gms_discovery_t *dc)
{
    ngx_http_gms_rconn_t      *rc;
    ngx_http_gms_redis_t      *rd;
    ngx_http_gms_main_conf_t  *gmcf;

    rd = &ngx_http_gms_redis;
    gmcf = dc->gmcf;

    rd->dc = dc;
    ngx_queue_init(&rd->free);
    ngx_queue_init(&rd->held);
    ngx_queue_init(&rd->moved);

    rd->release.handler = ngx_http_gms_redis_release;
    rd->release.data = rd;
    rd->release.log = cycle->log;

    rd->key = ngx_alloc(gmcf->redis.token_prefix.len + GMS_TOKEN_ID_LEN,
                        ngx_cycle->log);
    rd->members_key = ngx_alloc(gmcf->redis.actor_prefix.len + GMS_ACTOR_MAX,
                                ngx_cycle->log);

    if (rd->key == NULL || rd->members_key == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(rd->key, gmcf->redis.token_prefix.data,
               gmcf->redis.token_prefix.len);
    ngx_memcpy(rd->members_key, gmcf->redis.actor_prefix.data,
               gmcf->redis.actor_prefix.len);

    if (ngx_http_gms_redis_format(&rd->evalsha, &rd->evalsha_len,
                                  &rd->evalsha_id, "EVALSHA", gmcf)
        != NGX_OK
        || ngx_http_gms_redis_format(&rd->evalsha_ro, &rd->evalsha_ro_len,
                                     &rd->evalsha_ro_id, "EVALSHA_RO", gmcf)
           != NGX_OK
        || ngx_http_gms_redis_plain_init(rd, gmcf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    rc = &ngx_http_gms_redis_master;
    ngx_http_gms_rconn_init(rc, gmcf, "lookup", NGX_HTTP_GMS_TARGET_MASTER);
    rc->ready = ngx_http_gms_redis_up;
    rc->closed = ngx_http_gms_redis_closed;
    rc->unavailable = ngx_http_gms_redis_server_unavailable;
    rc->node = NGX_HTTP_GMS_NODE_LOOKUP;

    /* no server configured: the discovery names it */

    rc->addr = dc->addr;

    ngx_http_gms_redis_server_init(dc, ngx_http_gms_redis_scripts);
    ngx_http_gms_replica_init(cycle, dc, rc);

    if (rc->addr == NULL) {
        rd->discovery = NGX_HTTP_GMS_DISCOVERY_UNDER_WAY;
    }

    /* ready: lookups are taken from now on */
    rd->gmcf = gmcf;

    return NGX_OK;
}


/*
 * EVALSHA <sha> 1 <prefix>token:<id> <prefix>actor: in the protocol's
 * form, made once per worker; a lookup only copies its id in at id_offset.
 */

static ngx_int_t
ngx_http_gms_redis_format(u_char **cmd, size_t *len, size_t *id_offset,
    const char *name, ngx_http_gms_main_conf_t *gmcf)
{
    u_char  *p;
    size_t   key_len, name_len, size;

    key_len = gmcf->redis.token_prefix.len + GMS_TOKEN_ID_LEN;
    name_len = ngx_strlen(name);

    size = sizeof("*5\r\n$\r\n\r\n$40\r\n\r\n$1\r\n1\r\n") - 1
           + NGX_SIZE_T_LEN + name_len + 40
           + 2 * (sizeof("$\r\n\r\n") - 1 + NGX_SIZE_T_LEN)
           + key_len + gmcf->redis.actor_prefix.len;

    *cmd = ngx_alloc(size, ngx_cycle->log);
    if (*cmd == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(*cmd, "*5\r\n$%uz\r\n%s\r\n$40\r\n%s\r\n"
                    "$1\r\n1\r\n$%uz\r\n%V", name_len, name,
                    gmcf->redis.script_sha, key_len, &gmcf->redis.token_prefix);

    *id_offset = p - *cmd;
    p += GMS_TOKEN_ID_LEN;

    p = ngx_sprintf(p, "\r\n$%uz\r\n%V\r\n", gmcf->redis.actor_prefix.len,
                    &gmcf->redis.actor_prefix);

    *len = p - *cmd;

    return NGX_OK;
}


/*
 * Without scripts: HMGET <prefix>token:<id> actor expiresAt type, made
 * once as the EVALSHA is; the keys of the user's status.
 */

static ngx_int_t
ngx_http_gms_redis_plain_init(ngx_http_gms_redis_t *rd,
    ngx_http_gms_main_conf_t *gmcf)
{
    u_char  *p;
    size_t   key_len, size;

    key_len = gmcf->redis.token_prefix.len + GMS_TOKEN_ID_LEN;

    size = sizeof("*5\r\n$5\r\nHMGET\r\n$\r\n\r\n$5\r\nactor\r\n"
                  "$9\r\nexpiresAt\r\n$4\r\ntype\r\n") - 1
           + NGX_SIZE_T_LEN + key_len;

    rd->hmget = ngx_alloc(size, ngx_cycle->log);
    rd->inactive.data = ngx_alloc(gmcf->redis.prefix.len
                                  + sizeof(GMS_KEY_INACTIVE) - 1,
                                  ngx_cycle->log);
    rd->deleted.data = ngx_alloc(gmcf->redis.prefix.len
                                 + sizeof(GMS_KEY_DELETED) - 1,
                                 ngx_cycle->log);

    if (rd->hmget == NULL || rd->inactive.data == NULL
        || rd->deleted.data == NULL)
    {
        return NGX_ERROR;
    }

    p = ngx_sprintf(rd->hmget, "*5\r\n$5\r\nHMGET\r\n$%uz\r\n%V", key_len,
                    &gmcf->redis.token_prefix);

    rd->hmget_id = p - rd->hmget;
    p += GMS_TOKEN_ID_LEN;

    p = ngx_cpymem(p, "\r\n$5\r\nactor\r\n$9\r\nexpiresAt\r\n"
                   "$4\r\ntype\r\n",
                   sizeof("\r\n$5\r\nactor\r\n$9\r\nexpiresAt\r\n"
                          "$4\r\ntype\r\n") - 1);

    rd->hmget_len = p - rd->hmget;

    rd->inactive.len = ngx_sprintf(rd->inactive.data, "%V%s",
                                   &gmcf->redis.prefix, GMS_KEY_INACTIVE)
                       - rd->inactive.data;
    rd->deleted.len = ngx_sprintf(rd->deleted.data, "%V%s",
                                  &gmcf->redis.prefix, GMS_KEY_DELETED)
                      - rd->deleted.data;

    return NGX_OK;
}


/*
 * A lookup connection's server runs the script (refusal NULL: SCRIPT LOAD
 * loaded it) or refuses scripts: the worker's lookups follow, and say so
 * once each time they change.  The master's connections decide (and a
 * cluster's -ASK node's), not a replica's.
 */

static void
ngx_http_gms_redis_scripts(ngx_http_gms_rconn_t *rc, redisReply *refusal)
{
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;

    if (rc->target == NGX_HTTP_GMS_TARGET_REPLICA) {
        /* the replica's (a Redis 6 one, say): the master's decide */
        return;
    }

    if (refusal == NULL) {
        if (rd->noscript) {
            rd->noscript = 0;
            ngx_http_gms_count_down(scriptless);

            ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                          "gms: redis at %V runs the lookup script again: "
                          "lookups use it", &rc->peer);
        }

        return;
    }

    if (rd->noscript) {
        return;
    }

    rd->noscript = 1;
    ngx_http_gms_count(scriptless);
    ngx_http_gms_count(script_refusals);

    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                  "gms: redis at %V refuses scripts (\"%*s\"): lookups go "
                  "without them, in two round trips (HMGET, then MULTI/EXEC)",
                  &rc->peer, (size_t) ngx_min(refusal->len, 256),
                  refusal->str);
}


ngx_int_t
ngx_http_gms_redis_lookup(ngx_http_gms_main_conf_t *gmcf, u_char *id,
    ngx_str_t *actor, ngx_uint_t master, ngx_http_gms_redis_lookup_pt handler,
    void *data, ngx_http_gms_redis_lookup_t **lookup)
{
    ngx_queue_t                  *q;
    ngx_http_gms_redis_t         *rd;
    ngx_http_gms_redis_lookup_t  *lk;

    rd = &ngx_http_gms_redis;

    if (rd->gmcf != gmcf || rd->exiting
        || rd->discovery == NGX_HTTP_GMS_DISCOVERY_FAILED)
    {
        return NGX_ERROR;
    }

    if (!ngx_queue_empty(&rd->free)) {
        q = ngx_queue_head(&rd->free);
        ngx_queue_remove(q);
        lk = ngx_queue_data(q, ngx_http_gms_redis_lookup_t, queue);

    } else {
        lk = ngx_alloc(sizeof(ngx_http_gms_redis_lookup_t), ngx_cycle->log);
        if (lk == NULL) {
            return NGX_ERROR;
        }
    }

    lk->handler = handler;
    lk->data = data;
    lk->rc = NULL;
    lk->evaluated = 0;
    lk->master = master ? 1 : 0;
    lk->redirected = 0;
    lk->plain = 0;
    lk->user = 0;
    ngx_memcpy(lk->id, id, GMS_TOKEN_ID_LEN);

    if (actor) {
        /* the caller keeps the bytes until the handler is called */
        lk->actor = *actor;

    } else {
        ngx_str_null(&lk->actor);
    }

    if (rd->discovery == NGX_HTTP_GMS_DISCOVERY_UNDER_WAY) {
        /* sent when the master is named, answered if nobody names it */
        ngx_queue_insert_tail(&rd->held, &lk->queue);

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: redis lookup of \"%*s\" waits for discovery",
                       (size_t) GMS_TOKEN_ID_LEN, id);

        *lookup = lk;
        return NGX_OK;
    }

    if (ngx_http_gms_redis_start(lk) != NGX_OK) {
        ngx_queue_insert_head(&rd->free, &lk->queue);
        return NGX_ERROR;
    }

    *lookup = lk;

    return NGX_OK;
}


/*
 * A lookup to the replica, if one is up, in step, and allowed for it; to
 * the master otherwise.  The connections are opened on first use.
 */

static ngx_int_t
ngx_http_gms_redis_start(ngx_http_gms_redis_lookup_t *lk)
{
    ngx_http_gms_rconn_t  *rc;

    rc = ngx_http_gms_replica_get(lk->master);

    if (rc == NULL) {
        rc = &ngx_http_gms_redis_master;
    }

    if (!ngx_http_gms_rconn_open(rc)
        && ngx_http_gms_redis_connect(rc) != NGX_OK)
    {
        return NGX_ERROR;
    }

    lk->rc = rc;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis lookup of \"%*s\" to %V",
                   (size_t) GMS_TOKEN_ID_LEN, lk->id, &rc->peer);

    if (ngx_http_gms_redis_send(lk) != NGX_OK) {
        return NGX_ERROR;
    }

    /* a lookup, to the replica too, spares the master its PING */
    ngx_http_gms_redis_master.heard = ngx_current_msec;

    return NGX_OK;
}


ngx_int_t
ngx_http_gms_redis_cancel(ngx_http_gms_redis_lookup_t *lk)
{
    if (lk->rc != NULL) {
        return NGX_DECLINED;
    }

    ngx_queue_remove(&lk->queue);
    ngx_queue_insert_head(&ngx_http_gms_redis.free, &lk->queue);

    return NGX_OK;
}


/*
 * A lookup timed out: every lookup pipelined behind it on its connection
 * would be late too (on the replica's, they go to the master).  One that
 * waits for the discovery has nothing behind it.
 */

void
ngx_http_gms_redis_late(ngx_http_gms_redis_lookup_t *lk, const char *reason)
{
    if (lk->rc != NULL) {
        ngx_http_gms_rconn_close(lk->rc, NGX_LOG_ERR, reason);
    }
}


void
ngx_http_gms_redis_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;
    rd->exiting = 1;

    if (rd->gmcf == NULL) {
        return;
    }

    if (rd->noscript) {
        ngx_http_gms_count_down(scriptless);
    }

    if (rd->release.posted) {
        ngx_delete_posted_event(&rd->release);
    }

    ngx_http_gms_rconn_close(&ngx_http_gms_redis_master, NGX_LOG_DEBUG,
                             "exiting");
    ngx_http_gms_replica_exit();
}


/* the discovery's hook: the master moved, the next connect goes there */

void
ngx_http_gms_redis_set_master(struct sockaddr *sa, socklen_t socklen)
{
    ngx_http_gms_rconn_t  *rc;
    ngx_http_gms_redis_t  *rd;

    rc = &ngx_http_gms_redis_master;
    rd = &ngx_http_gms_redis;

    if (rd->discovery != NGX_HTTP_GMS_DISCOVERY_DONE) {
        /* the lookups held meanwhile go, from an event of their own */
        rd->discovery = NGX_HTTP_GMS_DISCOVERY_DONE;

        if (!ngx_queue_empty(&rd->held) && !rd->release.posted) {
            ngx_post_event(&rd->release, &ngx_posted_events);
        }
    }

    if (ngx_http_gms_rconn_is_peer(rc, sa, socklen)) {
        return;
    }

    if (rc->socklen) {
        ngx_http_gms_count(failovers);
    }

    ngx_http_gms_rconn_set_peer(rc, sa, socklen);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: %s: the master is at %V", rd->dc->name, &rc->peer);

    if (rc->gmcf->redis.cluster) {
        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "gms: cluster: slot %ui is served by %V",
                      rc->gmcf->redis.cluster_slot, &rc->peer);

    } else {
        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "gms: sentinel: master \"%V\" is at %V",
                      &rc->gmcf->redis.master_name, &rc->peer);
    }

    ngx_http_gms_replica_master_moved();

    /* the Sentinels (the cluster) have just said where: no need to ask */

    rd->moving = 1;

    ngx_http_gms_rconn_close(rc, NGX_LOG_NOTICE, "the master moved");
    rc->backoff = 0;
    rd->moving = 0;

    ngx_http_gms_redis_follow();
}


/*
 * In a cluster, the lookups that were pipelined to the old master go to
 * the new one (the old one would have redirected each): once.
 */

static void
ngx_http_gms_redis_follow(void)
{
    void                         *r;
    ngx_queue_t                  *q;
    ngx_http_gms_redis_t         *rd;
    ngx_http_gms_redis_lookup_t  *lk;
    ngx_http_gms_redis_lookup_pt  handler;

    rd = &ngx_http_gms_redis;

    while (!ngx_queue_empty(&rd->moved)) {
        q = ngx_queue_head(&rd->moved);
        ngx_queue_remove(q);
        lk = ngx_queue_data(q, ngx_http_gms_redis_lookup_t, queue);

        if (ngx_http_gms_redis_resend(lk) == NGX_OK) {
            continue;
        }

        handler = lk->handler;
        r = lk->data;

        ngx_queue_insert_head(&rd->free, &lk->queue);

        handler(r, GMS_LOOKUP_BAD_REPLY, NULL, "the slot's master moved");
    }
}


/*
 * The discovery gave up (no Sentinel named the master): the lookups held
 * fail now, and the next ones at once, until a master is named.  Nothing
 * to do once one is known: its connections' failures say enough.
 */

void
ngx_http_gms_redis_discovery_failed(const char *why)
{
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;

    if (rd->discovery != NGX_HTTP_GMS_DISCOVERY_UNDER_WAY) {
        return;
    }

    rd->discovery = NGX_HTTP_GMS_DISCOVERY_FAILED;

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: no redis server known: %s; lookups fail until "
                  "one is", why);

    if (!ngx_queue_empty(&rd->held) && !rd->release.posted) {
        ngx_post_event(&rd->release, &ngx_posted_events);
    }
}


/*
 * The lookups held while the discovery went on: sent, now that a master
 * is known, or failed, since none is.  A posted event: the discovery's
 * handlers, where this is decided, are not disturbed by the connects.
 */

static void
ngx_http_gms_redis_release(ngx_event_t *ev)
{
    void                          *data;
    ngx_queue_t                    held, *q;
    const char                    *error;
    ngx_http_gms_redis_t          *rd;
    ngx_http_gms_redis_lookup_t   *lk;
    ngx_http_gms_redis_lookup_pt   handler;

    rd = ev->data;

    if (rd->discovery == NGX_HTTP_GMS_DISCOVERY_UNDER_WAY
        || ngx_queue_empty(&rd->held))
    {
        return;
    }

    /* handlers cannot add to it (they resume requests later): still */

    held = rd->held;
    held.next->prev = &held;
    held.prev->next = &held;
    ngx_queue_init(&rd->held);

    error = (rd->discovery == NGX_HTTP_GMS_DISCOVERY_FAILED)
            ? "no redis server known" : "redis cannot serve the lookup now";

    while (!ngx_queue_empty(&held)) {
        q = ngx_queue_head(&held);
        ngx_queue_remove(q);

        lk = ngx_queue_data(q, ngx_http_gms_redis_lookup_t, queue);

        if (rd->discovery == NGX_HTTP_GMS_DISCOVERY_DONE && !rd->exiting
            && ngx_http_gms_redis_start(lk) == NGX_OK)
        {
            continue;
        }

        lk->rc = &ngx_http_gms_redis_master;    /* no longer held */
        handler = lk->handler;
        data = lk->data;

        ngx_queue_insert_head(&rd->free, &lk->queue);

        handler(data, GMS_LOOKUP_BAD_REPLY, NULL, error);
    }
}


/*
 * The lookups' connection to the master, for another part's command (the
 * sync-age HGET): opened if it is not; NULL when it cannot be now.
 */

ngx_http_gms_rconn_t *
ngx_http_gms_redis_open_master(void)
{
    ngx_http_gms_rconn_t  *rc;

    rc = &ngx_http_gms_redis_master;

    if (!ngx_http_gms_rconn_open(rc)
        && ngx_http_gms_redis_connect(rc) != NGX_OK)
    {
        return NULL;
    }

    return rc;
}


/* a lookup connection, to the master */

static ngx_int_t
ngx_http_gms_redis_connect(ngx_http_gms_rconn_t *rc)
{
    return ngx_http_gms_redis_server_lookups(rc, ngx_http_gms_replica_role);
}


static void
ngx_http_gms_redis_up(ngx_http_gms_rconn_t *rc)
{
    ngx_http_gms_count(connections);

    /*
     * an idle master connection is PINGed (a replica's is asked its ROLE
     * instead), a new one after 10 s of its own quiet
     */
    rc->heard = ngx_current_msec;
    ngx_http_gms_redis_idle_watch(rc);
}


static void
ngx_http_gms_redis_closed(ngx_http_gms_rconn_t *rc)
{
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;

    ngx_http_gms_replica_master_closed();

    if (rc->was_ready) {
        ngx_http_gms_count_down(connections);
    }

    if (rd->exiting || rd->moving || rc->recycling) {
        /* recycled at max_age: the master is where it was */
        return;
    }

    if (rc->gmcf->redis.sentinels) {
        rd->dc->ask("the master's connection failed");
    }

    if (rc->gmcf->redis.cluster) {
        /* a node gone: a failover the map may already know */
        rd->dc->ask("a node's connection failed");
    }
}


/*
 * The lookup script: a token's (the command made once per worker, its id
 * copied in), or a user's, for a session or external OAuth token:
 * EVALSHA <sha> 1 <prefix>actor:<urn> <prefix>actor: <urn>.  After a
 * -NOSCRIPT (lk->evaluated), EVAL with the script itself.  Without
 * scripts, the token's HMGET; a user's lookup is the second round alone.
 */

static ngx_int_t
ngx_http_gms_redis_send(ngx_http_gms_redis_lookup_t *lk)
{
    size_t                     len[6];
    ngx_uint_t                 n, replica;
    const char                *argv[6];
    ngx_http_gms_redis_t      *rd;
    ngx_http_gms_main_conf_t  *gmcf;

    rd = &ngx_http_gms_redis;
    gmcf = rd->gmcf;
    replica = (lk->rc->target == NGX_HTTP_GMS_TARGET_REPLICA);

    lk->user = 0;
    lk->queued_len = 0;

    if (rd->noscript || lk->plain) {
        lk->plain = 1;

        if (lk->actor.data) {
            if (lk->actor.len > GMS_ACTOR_MAX) {
                return NGX_ERROR;
            }

            return ngx_http_gms_redis_send_user(lk, lk->actor.data,
                                                lk->actor.len);
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: redis lookup of \"%*s\" without scripts: HMGET",
                       (size_t) GMS_TOKEN_ID_LEN, lk->id);

        ngx_memcpy(rd->hmget + rd->hmget_id, lk->id, GMS_TOKEN_ID_LEN);

        return ngx_http_gms_rconn_send(lk->rc, rd->hmget, rd->hmget_len,
                                       ngx_http_gms_redis_reply, lk);
    }

    if (lk->actor.data == NULL && !lk->evaluated) {
        /* the usual case: the command made once, with this id in place */

        if (replica) {
            ngx_memcpy(rd->evalsha_ro + rd->evalsha_ro_id, lk->id,
                       GMS_TOKEN_ID_LEN);

            return ngx_http_gms_rconn_send(lk->rc, rd->evalsha_ro,
                                           rd->evalsha_ro_len,
                                           ngx_http_gms_redis_reply, lk);
        }

        ngx_memcpy(rd->evalsha + rd->evalsha_id, lk->id, GMS_TOKEN_ID_LEN);

        return ngx_http_gms_rconn_send(lk->rc, rd->evalsha, rd->evalsha_len,
                                       ngx_http_gms_redis_reply, lk);
    }

    if (lk->evaluated) {
        argv[0] = replica ? "EVAL_RO" : "EVAL";
        argv[1] = gms_lookup_script;
        len[1] = gms_lookup_script_len;

    } else {
        argv[0] = replica ? "EVALSHA_RO" : "EVALSHA";
        argv[1] = (const char *) gmcf->redis.script_sha;
        len[1] = 40;
    }

    len[0] = ngx_strlen(argv[0]);
    argv[2] = "1";
    len[2] = 1;
    argv[4] = (const char *) gmcf->redis.actor_prefix.data;
    len[4] = gmcf->redis.actor_prefix.len;

    if (lk->actor.data) {
        if (lk->actor.len > GMS_ACTOR_MAX) {
            return NGX_ERROR;
        }

        ngx_memcpy(rd->members_key + gmcf->redis.actor_prefix.len,
                   lk->actor.data, lk->actor.len);

        argv[3] = (const char *) rd->members_key;
        len[3] = gmcf->redis.actor_prefix.len + lk->actor.len;
        argv[5] = (const char *) lk->actor.data;
        len[5] = lk->actor.len;
        n = 6;

    } else {
        ngx_memcpy(rd->key + gmcf->redis.token_prefix.len, lk->id,
                   GMS_TOKEN_ID_LEN);

        argv[3] = (const char *) rd->key;
        len[3] = gmcf->redis.token_prefix.len + GMS_TOKEN_ID_LEN;
        n = 5;
    }

    return ngx_http_gms_rconn_argv(lk->rc, n, argv, len,
                                   ngx_http_gms_redis_reply, lk);
}


/*
 * The user's part without scripts, read at one instant as the script
 * reads it: MULTI, SISMEMBER <prefix>inactive <urn>, SISMEMBER
 * <prefix>deleted <urn>, SMEMBERS <prefix>actor:<urn>, EXEC (the keys
 * share the prefix's hash tag: one slot).  EXEC's reply is the lookup's.
 */

static ngx_int_t
ngx_http_gms_redis_send_user(ngx_http_gms_redis_lookup_t *lk, u_char *actor,
    size_t len)
{
    size_t                     lens[3];
    ngx_uint_t                 i;
    const char                *argv[3];
    ngx_http_gms_rconn_t      *rc;
    ngx_http_gms_redis_t      *rd;
    ngx_http_gms_main_conf_t  *gmcf;

    static u_char  multi[] = "*1\r\n$5\r\nMULTI\r\n";
    static u_char  exec[] = "*1\r\n$4\r\nEXEC\r\n";
    static u_char  asking[] = "*1\r\n$6\r\nASKING\r\n";

    rd = &ngx_http_gms_redis;
    gmcf = rd->gmcf;
    rc = lk->rc;

    lk->user = 1;
    lk->queued_len = 0;

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis lookup of \"%*s\" without scripts: the "
                   "user \"%*s\" in MULTI/EXEC",
                   (size_t) GMS_TOKEN_ID_LEN, lk->id, len, actor);

    /*
     * on the node an -ASK named, ASKING again: it held for the HMGET
     * alone; in a MULTI it holds for the queued commands and EXEC
     */
    if (rc->node == NGX_HTTP_GMS_NODE_ASK
        && ngx_http_gms_rconn_send(rc, asking, sizeof(asking) - 1,
                                   ngx_http_gms_redis_queued, lk)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_gms_rconn_send(rc, multi, sizeof(multi) - 1,
                                ngx_http_gms_redis_queued, lk)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    argv[0] = "SISMEMBER";
    lens[0] = sizeof("SISMEMBER") - 1;
    argv[2] = (const char *) actor;
    lens[2] = len;

    for (i = 0; i < 2; i++) {
        argv[1] = (const char *) (i ? rd->deleted.data : rd->inactive.data);
        lens[1] = i ? rd->deleted.len : rd->inactive.len;

        if (ngx_http_gms_rconn_argv(rc, 3, argv, lens,
                                    ngx_http_gms_redis_queued, lk)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    ngx_memcpy(rd->members_key + gmcf->redis.actor_prefix.len, actor, len);

    argv[0] = "SMEMBERS";
    lens[0] = sizeof("SMEMBERS") - 1;
    argv[1] = (const char *) rd->members_key;
    lens[1] = gmcf->redis.actor_prefix.len + len;

    if (ngx_http_gms_rconn_argv(rc, 2, argv, lens,
                                ngx_http_gms_redis_queued, lk)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_gms_rconn_send(rc, exec, sizeof(exec) - 1,
                                   ngx_http_gms_redis_reply, lk);
}


/*
 * MULTI's +OK and the commands' +QUEUED; the first error is kept, since
 * EXEC then says only -EXECABORT (a cluster's -MOVED, an ACL's -NOPERM,
 * -LOADING are the lookup's answer).  Without a reply, EXEC's handler
 * hears why.
 */

static void
ngx_http_gms_redis_queued(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    ngx_http_gms_redis_lookup_t *lk = data;

    if (reply == NULL || reply->type != REDIS_REPLY_ERROR
        || lk->queued_len)
    {
        return;
    }

    lk->queued_len = ngx_min(reply->len, NGX_HTTP_GMS_REDIS_QUEUED_ERROR);
    ngx_memcpy(lk->queued, reply->str, lk->queued_len);
}


static void
ngx_http_gms_redis_reply(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    ngx_http_gms_redis_lookup_t *lk = data;

    ngx_uint_t             noscript;
    redisReply             queued;
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;

    if (reply != NULL && lk->queued_len) {
        /* the command EXEC aborted for, as if it had been answered alone */
        ngx_memzero(&queued, sizeof(redisReply));
        queued.type = REDIS_REPLY_ERROR;
        queued.str = (char *) lk->queued;
        queued.len = lk->queued_len;
        reply = &queued;
    }

    if (rd->gmcf->redis.cluster) {
        switch (ngx_http_gms_redis_cluster(rc, lk, reply, &error)) {

        case NGX_DONE:
            /* sent again, or to be sent again, elsewhere */
            return;

        case NGX_DECLINED:
            reply = NULL;
            goto answer;

        default: /* NGX_OK */
            break;
        }
    }

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR && !lk->plain) {
        noscript = (ngx_strncmp(reply->str, "NOSCRIPT", 8) == 0);

        /*
         * a replica's refusal is the replica's (a Redis 6 one knows no
         * EVALSHA_RO: ngx_http_gms_replica.c): the master decides
         */

        if ((rc->target != NGX_HTTP_GMS_TARGET_REPLICA
             && (gms_lookup_scripts_refused(reply->str, reply->len)
                 || (noscript && lk->evaluated)))
            || (noscript && rd->noscript))
        {
            /* no script runs here: the same lookup, without */
            ngx_http_gms_redis_scripts(rc, reply);
            lk->plain = 1;

            if (ngx_http_gms_redis_send(lk) == NGX_OK) {
                return;
            }

        } else if (!lk->evaluated && noscript) {
            /* the script cache was flushed: send the script itself, once */
            lk->evaluated = 1;

            if (ngx_http_gms_redis_send(lk) == NGX_OK) {
                return;
            }
        }
    }

    if (rc->target == NGX_HTTP_GMS_TARGET_REPLICA
        && (reply == NULL || reply->type == REDIS_REPLY_ERROR))
    {
        ngx_http_gms_replica_error(rc, reply,
                                   lk->plain ? (lk->user ? "EXEC" : "HMGET")
                                   : lk->evaluated ? "EVAL_RO"
                                                   : "EVALSHA_RO");

        if (ngx_http_gms_redis_resend(lk) == NGX_OK) {
            return;
        }

        reply = NULL;
        error = "neither the replica nor the master can serve the lookup";
    }

    if (reply != NULL && lk->plain && !lk->user
        && reply->type != REDIS_REPLY_ERROR)
    {
        switch (ngx_http_gms_redis_token(lk, reply)) {

        case NGX_OK:
            /* the token is there: its user's part */
            return;

        case NGX_ERROR:
            reply = NULL;
            error = "the lookup's second round could not be sent";
            break;

        default: /* NGX_DECLINED: unknown or bad, answered as it is */
            break;
        }
    }

answer:

    ngx_http_gms_redis_answer(rc, lk, reply, error);
}


/*
 * HMGET's reply: the token's fields kept for the answer and its user's
 * part sent (NGX_OK); NGX_DECLINED: the reply is the answer (no token, or
 * a bad one); NGX_ERROR: the second round could not be sent.
 */

static ngx_int_t
ngx_http_gms_redis_token(ngx_http_gms_redis_lookup_t *lk, redisReply *reply)
{
    gms_lookup_t  gl;

    if (gms_lookup_token_parse(reply, &gl) != GMS_LOOKUP_FOUND) {
        return NGX_DECLINED;
    }

    /* the parser capped the actor; a type cut short is still no type */

    lk->expires_at = gl.expires_at;
    lk->token_actor_len = gl.actor_len;
    ngx_memcpy(lk->token_actor, gl.actor, gl.actor_len);
    lk->type_len = ngx_min(gl.type_len, GMS_LOOKUP_TYPE_MAX);
    ngx_memcpy(lk->type, gl.type, lk->type_len);

    if (ngx_http_gms_redis_send_user(lk, lk->token_actor,
                                     lk->token_actor_len)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * The lookup answered: its reply parsed, the script's or the plain
 * commands', into one gms_lookup_t, and the handler called; the lookup is
 * free again once it returns (the token's fields are the lookup's).
 */

static void
ngx_http_gms_redis_answer(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_redis_lookup_t *lk, redisReply *reply, const char *error)
{
    void                          *r;
    gms_lookup_t                   gl;
    gms_lookup_rc_e                rv;
    ngx_http_gms_redis_lookup_pt   handler;

    handler = lk->handler;
    r = lk->data;
    rv = GMS_LOOKUP_BAD_REPLY;

    ngx_memzero(&gl, sizeof(gms_lookup_t));

    if (reply != NULL
        && ngx_http_gms_redis_server_unavailable(rc, reply) != NGX_OK)
    {
        /* the connection is closed, and will be answered below */
        reply = NULL;
        error = "redis cannot serve the lookup now";
    }

    if (reply != NULL) {
        error = NULL;

        if (!lk->plain) {
            rv = lk->actor.data ? gms_lookup_members_parse(reply, &gl)
                                : gms_lookup_reply_parse(reply, &gl);

        } else if (!lk->user) {
            rv = gms_lookup_token_parse(reply, &gl);

        } else {
            if (lk->actor.data == NULL) {
                gl.actor = (const char *) lk->token_actor;
                gl.actor_len = lk->token_actor_len;
                gl.type = (const char *) lk->type;
                gl.type_len = lk->type_len;
                gl.expires_at = lk->expires_at;
            }

            rv = gms_lookup_user_parse(reply, &gl);
        }

        if (lk->plain) {
            ngx_http_gms_count(scriptless_lookups);
        }
    }

    handler(r, rv, &gl, error);

    ngx_queue_insert_head(&ngx_http_gms_redis.free, &lk->queue);
}


/*
 * A cluster's answers to a lookup: NGX_OK for the usual ones; NGX_DONE
 * when the lookup was sent elsewhere (MOVED, ASK, the master moved under
 * it); NGX_DECLINED when it fails now, *error saying why.
 */

static ngx_int_t
ngx_http_gms_redis_cluster(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_redis_lookup_t *lk, redisReply *reply, const char **error)
{
    ngx_int_t                   rv;
    ngx_http_gms_redis_t       *rd;
    ngx_http_gms_cluster_to_t   go;

    rd = &ngx_http_gms_redis;

    if (reply == NULL) {
        if (rd->moving && rc == &ngx_http_gms_redis_master
            && !lk->redirected)
        {
            lk->redirected = 1;
            ngx_queue_insert_tail(&rd->moved, &lk->queue);
            return NGX_DONE;
        }

        return NGX_OK;
    }

    rv = ngx_http_gms_cluster_redirect(rc, reply, lk->redirected, &go,
                                       error);

    if (rv == NGX_OK || rv == NGX_DECLINED) {
        return rv;
    }

    lk->redirected = 1;

    if (rv == NGX_AGAIN) {
        ngx_http_gms_redis_set_master(&go.sockaddr.sockaddr, go.socklen);
        rv = ngx_http_gms_redis_resend(lk);

    } else {
        lk->rc = go.rc;
        rv = ngx_http_gms_redis_send(lk);
    }

    if (rv == NGX_OK) {
        return NGX_DONE;
    }

    *error = "a redirection that could not be followed";

    return NGX_DECLINED;
}


/* a lookup the replica did not answer, sent to the master: once */

static ngx_int_t
ngx_http_gms_redis_resend(ngx_http_gms_redis_lookup_t *lk)
{
    ngx_http_gms_rconn_t  *rc;

    rc = &ngx_http_gms_redis_master;

    if (ngx_http_gms_redis.exiting) {
        return NGX_DECLINED;
    }

    if (!ngx_http_gms_rconn_open(rc)
        && ngx_http_gms_redis_connect(rc) != NGX_OK)
    {
        return NGX_ERROR;
    }

    lk->rc = rc;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis lookup of \"%*s\" again, to %V",
                   (size_t) GMS_TOKEN_ID_LEN, lk->id, &rc->peer);

    return ngx_http_gms_redis_send(lk);
}


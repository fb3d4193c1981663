
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
 * With Sentinel, the connections go where ngx_http_gms_sentinel.c says
 * the master is, and each confirms it with ROLE; a connection lost, a
 * replica where the master should be, or -READONLY / -LOADING make the
 * worker ask the Sentinels again.  Until the Sentinels have named the
 * master (after a start, after every reload), lookups wait for it, each
 * within its request's deadline; when no Sentinel names it, they fail.
 *
 * With replica=prefer, lookups (reads only: EVALSHA_RO) go to a
 * replica while its connection is up and the replica is in step with its
 * master, and to the master otherwise, or when the replica answers an
 * error or its connection fails before the answer.  In step: ROLE says
 * its link to the master is "connected" and its offset has reached what
 * the master's ROLE said a round before; asked when the connection opens
 * and every second after (a replica that has not answered the last one
 * is not in step either: it is asleep, or far behind).  A token or user
 * invalidated lately is read from the master (the caller says so): the
 * replica may not have applied the change yet.
 *
 * With Redis Cluster, the master and replica are the slot's that
 * ngx_http_gms_cluster.c finds (every key is in the slot of the prefix's
 * hash tag).  A lookup answered -MOVED goes, once, to the node named,
 * which becomes the master, and the map is asked for again; the lookups
 * pipelined behind it on the old connection follow it there.  -ASK sends
 * ASKING and the one lookup to the node named, on a connection of its
 * own, the map unchanged.  -TRYAGAIN and -CLUSTERDOWN fail the lookup at
 * once (503) and have the map asked for again.
 *
 * The invalidation subscription and the sync-age poll are in
 * ngx_http_gms_invalidate.c; they connect as the lookups do
 * (ngx_http_gms_redis_setup()).
 */


#include "ngx_http_gms_redis.h"
#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_sentinel.h"
#include "ngx_http_gms_cluster.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_metrics.h"

#include "gms_lookup.h"
#include "gms_slot.h"


/* a replica is asked its ROLE this often */
#define NGX_HTTP_GMS_REPLICA_CHECK_EVERY  1000

/* ROLE unanswered this many rounds: the replica's connection goes */
#define NGX_HTTP_GMS_REPLICA_CHECK_MISSED  10


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
};


typedef enum {
    NGX_HTTP_GMS_DISCOVERY_DONE = 0,   /* a server configured, or named */
    NGX_HTTP_GMS_DISCOVERY_UNDER_WAY,  /* none known yet: lookups wait */
    NGX_HTTP_GMS_DISCOVERY_FAILED      /* gave up: lookups fail at once */
} ngx_http_gms_discovery_e;


typedef struct {
    ngx_http_gms_main_conf_t  *gmcf;
    ngx_queue_t                free;
    ngx_queue_t                held;           /* waiting for a server */
    ngx_queue_t                moved;          /* to the new master */
    ngx_event_t                release;        /* of the held lookups */
    ngx_http_gms_discovery_e   discovery;
    ngx_event_t                replica_check;  /* its ROLE, every second */
    ngx_uint_t                 replica_missed; /* ROLEs unanswered */
    long long                  master_offset;  /* the master's ROLE, last */
    long long                  reach;          /* the replica's, a round on */
    u_char                    *key;            /* <prefix>token:<id> */
    u_char                    *members_key;    /* <prefix>actor:<urn> */
    u_char                    *evalsha;        /* the lookup, formatted */
    size_t                     evalsha_len;
    size_t                     evalsha_id;     /* where its id goes */
    u_char                    *evalsha_ro;     /* the same, for replicas */
    size_t                     evalsha_ro_len;
    size_t                     evalsha_ro_id;
    time_t                     replica_logged;
    time_t                     cluster_logged;
    unsigned                   replica_old:1;  /* no EVALSHA_RO */
    unsigned                   replica_in_step:1;
    unsigned                   replica_out_said:1;
    unsigned                   role_pending:1; /* the replica's last ROLE */
    unsigned                   master_role_pending:1;
    unsigned                   moving:1;       /* following a failover */
    unsigned                   exiting:1;
} ngx_http_gms_redis_t;


static ngx_int_t ngx_http_gms_redis_format(u_char **cmd, size_t *len,
    size_t *id_offset, const char *name, ngx_http_gms_main_conf_t *gmcf);
static ngx_int_t ngx_http_gms_redis_connect(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_redis_ok(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error);
static void ngx_http_gms_redis_role(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error);
static void ngx_http_gms_redis_loaded(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error);
static void ngx_http_gms_redis_up(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_redis_closed(ngx_http_gms_rconn_t *rc);
static ngx_int_t ngx_http_gms_redis_start(ngx_http_gms_redis_lookup_t *lk);
static void ngx_http_gms_redis_release(ngx_event_t *ev);
static void ngx_http_gms_redis_replica_step(ngx_http_gms_rconn_t *rc,
    redisReply *reply);
static void ngx_http_gms_redis_replica_check(ngx_event_t *ev);
static ngx_int_t ngx_http_gms_redis_send(ngx_http_gms_redis_lookup_t *lk);
static void ngx_http_gms_redis_reply(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error);
static void ngx_http_gms_redis_replica_error(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_redis_lookup_t *lk, redisReply *reply);
static ngx_int_t ngx_http_gms_redis_resend(ngx_http_gms_redis_lookup_t *lk);
static ngx_int_t ngx_http_gms_redis_cluster_reply(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_redis_lookup_t *lk, redisReply *reply, const char **error);
static ngx_int_t ngx_http_gms_redis_redirect(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_redis_lookup_t *lk, gms_redirect_t *to);
static void ngx_http_gms_redis_asking(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error);
static void ngx_http_gms_redis_follow(void);


/* one of each per worker process */
static ngx_http_gms_redis_t  ngx_http_gms_redis;
static ngx_http_gms_rconn_t  ngx_http_gms_redis_master;
static ngx_http_gms_rconn_t  ngx_http_gms_redis_replica;
static ngx_http_gms_rconn_t  ngx_http_gms_redis_asked;     /* ASK's node */

/* the node a redirection named by its host name, resolved on connect */
static ngx_http_gms_redis_addr_t  ngx_http_gms_redis_asked_addr;
static u_char  ngx_http_gms_redis_asked_name[256 + sizeof(":65535")];


/* the connections, their keys and the EVALSHAs, made once per worker */

ngx_int_t
ngx_http_gms_redis_init_process(ngx_cycle_t *cycle,
    ngx_http_gms_main_conf_t *gmcf)
{
    ngx_http_gms_rconn_t  *rc;
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;

    rd->gmcf = gmcf;
    ngx_queue_init(&rd->free);
    ngx_queue_init(&rd->held);
    ngx_queue_init(&rd->moved);

    rd->release.handler = ngx_http_gms_redis_release;
    rd->release.data = rd;
    rd->release.log = cycle->log;

    rd->replica_check.handler = ngx_http_gms_redis_replica_check;
    rd->replica_check.data = rd;
    rd->replica_check.log = cycle->log;
    rd->replica_check.cancelable = 1;

    rd->key = ngx_alloc(gmcf->token_prefix.len + GMS_TOKEN_ID_LEN,
                        ngx_cycle->log);
    rd->members_key = ngx_alloc(gmcf->actor_prefix.len + GMS_ACTOR_MAX,
                                ngx_cycle->log);

    if (rd->key == NULL || rd->members_key == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(rd->key, gmcf->token_prefix.data, gmcf->token_prefix.len);
    ngx_memcpy(rd->members_key, gmcf->actor_prefix.data,
               gmcf->actor_prefix.len);

    if (ngx_http_gms_redis_format(&rd->evalsha, &rd->evalsha_len,
                                  &rd->evalsha_id, "EVALSHA", gmcf)
        != NGX_OK
        || ngx_http_gms_redis_format(&rd->evalsha_ro, &rd->evalsha_ro_len,
                                     &rd->evalsha_ro_id, "EVALSHA_RO", gmcf)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    rc = &ngx_http_gms_redis_master;
    ngx_http_gms_rconn_init(rc, gmcf, "lookup", NGX_HTTP_GMS_TARGET_MASTER);
    rc->ready = ngx_http_gms_redis_up;
    rc->closed = ngx_http_gms_redis_closed;
    rc->unavailable = ngx_http_gms_redis_unavailable;
    rc->node = NGX_HTTP_GMS_NODE_LOOKUP;

    rc = &ngx_http_gms_redis_replica;
    ngx_http_gms_rconn_init(rc, gmcf, "replica lookup",
                            NGX_HTTP_GMS_TARGET_REPLICA);
    rc->ready = ngx_http_gms_redis_up;
    rc->closed = ngx_http_gms_redis_closed;
    rc->node = NGX_HTTP_GMS_NODE_REPLICA;

    rc = &ngx_http_gms_redis_asked;
    ngx_http_gms_rconn_init(rc, gmcf, "redirected lookup",
                            NGX_HTTP_GMS_TARGET_MASTER);
    rc->node = NGX_HTTP_GMS_NODE_ASK;

    if (gmcf->sentinels == NULL && gmcf->cluster == NULL) {
        ngx_http_gms_redis_master.addr = &gmcf->redis;
    }

    /* no server configured: the discovery names it */

    if (ngx_http_gms_redis_master.addr == NULL) {
        rd->discovery = NGX_HTTP_GMS_DISCOVERY_UNDER_WAY;
    }

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

    key_len = gmcf->token_prefix.len + GMS_TOKEN_ID_LEN;
    name_len = ngx_strlen(name);

    size = sizeof("*5\r\n$\r\n\r\n$40\r\n\r\n$1\r\n1\r\n") - 1
           + NGX_SIZE_T_LEN + name_len + 40
           + 2 * (sizeof("$\r\n\r\n") - 1 + NGX_SIZE_T_LEN)
           + key_len + gmcf->actor_prefix.len;

    *cmd = ngx_alloc(size, ngx_cycle->log);
    if (*cmd == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(*cmd, "*5\r\n$%uz\r\n%s\r\n$40\r\n%s\r\n"
                    "$1\r\n1\r\n$%uz\r\n%V", name_len, name,
                    gmcf->script_sha, key_len, &gmcf->token_prefix);

    *id_offset = p - *cmd;
    p += GMS_TOKEN_ID_LEN;

    p = ngx_sprintf(p, "\r\n$%uz\r\n%V\r\n", gmcf->actor_prefix.len,
                    &gmcf->actor_prefix);

    *len = p - *cmd;

    return NGX_OK;
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
    ngx_http_gms_rconn_t      *rc, *replica;
    ngx_http_gms_redis_t      *rd;
    ngx_http_gms_main_conf_t  *gmcf;

    rd = &ngx_http_gms_redis;
    gmcf = rd->gmcf;
    rc = &ngx_http_gms_redis_master;
    replica = &ngx_http_gms_redis_replica;

    if (gmcf->replica && replica->socklen && !rd->replica_old) {

        if (ngx_http_gms_rconn_ready(replica)) {
            if (rd->replica_in_step && !lk->master) {
                rc = replica;
            }

        } else if (!ngx_http_gms_rconn_open(replica)) {
            /* for the next lookups; this one goes to the master */
            (void) ngx_http_gms_redis_connect(replica);
        }
    }

    if (!ngx_http_gms_rconn_open(rc)
        && ngx_http_gms_redis_connect(rc) != NGX_OK)
    {
        return NGX_ERROR;
    }

    lk->rc = rc;

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

    if (rd->release.posted) {
        ngx_delete_posted_event(&rd->release);
    }

    if (rd->replica_check.timer_set) {
        ngx_del_timer(&rd->replica_check);
    }

    ngx_http_gms_rconn_close(&ngx_http_gms_redis_master, NGX_LOG_DEBUG,
                             "exiting");
    ngx_http_gms_rconn_close(&ngx_http_gms_redis_replica, NGX_LOG_DEBUG,
                             "exiting");
    ngx_http_gms_rconn_close(&ngx_http_gms_redis_asked, NGX_LOG_DEBUG,
                             "exiting");
}


/* the master (or replica) moved: the next connect goes there */

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

    if (rc->gmcf->cluster) {
        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "gms: cluster: slot %ui is served by %V",
                      rc->gmcf->cluster_slot, &rc->peer);

    } else {
        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "gms: sentinel: master \"%V\" is at %V",
                      &rc->gmcf->master_name, &rc->peer);
    }

    /* another master: its offsets are not the old one's */
    rd->master_offset = 0;
    rd->reach = 0;

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

        handler(r, NULL, "the slot's master moved");
    }
}


void
ngx_http_gms_redis_set_replica(struct sockaddr *sa, socklen_t socklen)
{
    ngx_http_gms_rconn_t  *rc;

    rc = &ngx_http_gms_redis_replica;

    if (sa == NULL) {
        rc->socklen = 0;
        ngx_http_gms_rconn_close(rc, NGX_LOG_NOTICE, "no replica to read");
        return;
    }

    if (ngx_http_gms_rconn_is_peer(rc, sa, socklen)) {
        return;
    }

    ngx_http_gms_rconn_set_peer(rc, sa, socklen);
    ngx_http_gms_rconn_close(rc, NGX_LOG_NOTICE, "the replica changed");
    rc->backoff = 0;

    /* another server: it may know EVALSHA_RO */
    ngx_http_gms_redis.replica_old = 0;
    ngx_http_gms_redis.replica_out_said = 0;
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

        handler(data, NULL, error);
    }
}


/*
 * A connection to the data server and the setup every one needs: AUTH,
 * SELECT and, with Sentinel and "role", ROLE (the server must be what the
 * Sentinels said), pipelined ahead of whatever waits.  NGX_OK: under way;
 * else as ngx_http_gms_rconn_connect() (a failure to queue closes it).
 */

ngx_int_t
ngx_http_gms_redis_setup(ngx_http_gms_rconn_t *rc, ngx_uint_t role)
{
    int                        n;
    size_t                     lens[3];
    ngx_int_t                  rv;
    const char                *argv[3];
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = rc->gmcf;

    if ((gmcf->sentinels || gmcf->cluster) && rc->addr == NULL
        && rc->socklen == 0)
    {
        /* the Sentinels (the cluster) have not named a master yet */
        return NGX_DECLINED;
    }

    if (rc == &ngx_http_gms_redis_master && rc->backoff
        && !ngx_http_gms_rconn_in_backoff(rc))
    {
        ngx_http_gms_count(reconnects);
    }

    rc->tls = gmcf->tls;

    rv = ngx_http_gms_rconn_connect(rc);
    if (rv != NGX_OK) {
        return rv;
    }

    if (gmcf->password.len) {
        argv[0] = "AUTH";
        lens[0] = 4;
        argv[1] = (const char *) gmcf->user.data;
        lens[1] = gmcf->user.len;
        argv[2] = (const char *) gmcf->password.data;
        lens[2] = gmcf->password.len;

        /* AUTH password, or with user=, AUTH user password (ACLs) */
        n = gmcf->user.len ? 3 : 2;

        if (gmcf->user.len == 0) {
            argv[1] = argv[2];
            lens[1] = lens[2];
        }

        if (ngx_http_gms_rconn_setup(rc, n, argv, lens,
                                     ngx_http_gms_redis_ok)
            != NGX_OK)
        {
            goto failed;
        }
    }

    if (gmcf->db) {
        argv[0] = "SELECT";
        lens[0] = 6;
        argv[1] = (const char *) gmcf->db_text.data;
        lens[1] = gmcf->db_text.len;

        if (ngx_http_gms_rconn_setup(rc, 2, argv, lens,
                                     ngx_http_gms_redis_ok)
            != NGX_OK)
        {
            goto failed;
        }
    }

    if (gmcf->cluster && rc == &ngx_http_gms_redis_replica) {
        /* a cluster's replica redirects reads to its master without it */
        argv[0] = "READONLY";
        lens[0] = sizeof("READONLY") - 1;

        if (ngx_http_gms_rconn_setup(rc, 1, argv, lens,
                                     ngx_http_gms_redis_ok)
            != NGX_OK)
        {
            goto failed;
        }
    }

    if (role
        && (gmcf->sentinels || rc->target == NGX_HTTP_GMS_TARGET_REPLICA))
    {
        argv[0] = "ROLE";
        lens[0] = 4;

        if (ngx_http_gms_rconn_setup(rc, 1, argv, lens,
                                     ngx_http_gms_redis_role)
            != NGX_OK)
        {
            goto failed;
        }
    }

    return NGX_OK;

failed:

    ngx_http_gms_rconn_close(rc, NGX_LOG_ERR,
                             "cannot queue the connection setup");
    return NGX_ERROR;
}


/* a lookup connection: the setup, ROLE, and SCRIPT LOAD */

static ngx_int_t
ngx_http_gms_redis_connect(ngx_http_gms_rconn_t *rc)
{
    size_t       lens[3];
    ngx_int_t    rv;
    const char  *argv[3];

    rv = ngx_http_gms_redis_setup(rc, 1);
    if (rv != NGX_OK) {
        return rv;
    }

    argv[0] = "SCRIPT";
    lens[0] = 6;
    argv[1] = "LOAD";
    lens[1] = 4;
    argv[2] = gms_lookup_script;
    lens[2] = gms_lookup_script_len;

    if (ngx_http_gms_rconn_setup(rc, 3, argv, lens,
                                 ngx_http_gms_redis_loaded)
        != NGX_OK)
    {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR,
                                 "cannot queue the connection setup");
        return NGX_ERROR;
    }

    return NGX_OK;
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


/* AUTH's, SELECT's and READONLY's +OK */

static void
ngx_http_gms_redis_ok(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    if (reply == NULL) {
        return;
    }

    if (ngx_http_gms_rconn_says(reply, "OK")) {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis at %V refused the connection's setup: %*s",
                  &rc->peer,
                  (size_t) (reply->type == REDIS_REPLY_ERROR
                            ? ngx_min(reply->len, 256) : 0),
                  reply->str);

    ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "setup refused");
}


/*
 * ROLE: ["master", offset, replicas] or ["slave", host, port, state,
 * offset]; what the Sentinels said this server is, or they are asked
 * again.  A replica's state says whether it is in step with its master.
 * The setup's ROLE has no data; the replica's check every second has.
 */

static void
ngx_http_gms_redis_role(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    const char            *expect;
    ngx_http_gms_redis_t  *rd;

    if (reply == NULL) {
        return;
    }

    rd = &ngx_http_gms_redis;

    if (data && rc->target == NGX_HTTP_GMS_TARGET_REPLICA) {
        rd->role_pending = 0;
        rd->replica_missed = 0;

    } else if (data) {
        rd->master_role_pending = 0;
    }

    expect = (rc->target == NGX_HTTP_GMS_TARGET_REPLICA) ? "slave" : "master";

    if (reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1
        && ngx_http_gms_rconn_says(reply->element[0], expect))
    {
        if (rc->target == NGX_HTTP_GMS_TARGET_REPLICA) {
            ngx_http_gms_redis_replica_step(rc, reply);

        } else if (reply->elements >= 2
                   && reply->element[1]->type == REDIS_REPLY_INTEGER)
        {
            /* its replication offset: where the replica must be soon */
            rd->master_offset = reply->element[1]->integer;
        }

        return;
    }

    if (ngx_http_gms_redis_unavailable(rc, reply) != NGX_OK) {
        return;
    }

    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                  "gms: redis at %V is not a %s (ROLE): asking the "
                  "%s again", &rc->peer,
                  rc->target == NGX_HTTP_GMS_TARGET_REPLICA ? "replica"
                                                             : "master",
                  rc->gmcf->cluster ? "cluster" : "Sentinels");

    ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "wrong role");

    if (rc->gmcf->cluster) {
        ngx_http_gms_cluster_refresh("a server of the wrong role");

    } else {
        ngx_http_gms_sentinel_ask("a server of the wrong role");
    }
}


/*
 * A replica's link to its master: "connected", or "connect",
 * "connecting", "sync", "handshake": the link is down or not yet
 * streaming, and the replica may serve data its master has deleted
 * ("replica-serve-stale-data yes", Redis's default).  Connected, its
 * offset must have reached the master's of a round ago (rd->reach): a
 * replica that has not applied in a second what its master had is
 * behind, by more than the invalidations' window, maybe.  Read from
 * while in step only; the changes are logged, once each way.
 */

static void
ngx_http_gms_redis_replica_step(ngx_http_gms_rconn_t *rc, redisReply *reply)
{
    size_t                 len;
    long long              offset;
    redisReply            *state;
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;
    state = (reply->elements >= 4) ? reply->element[3] : NULL;
    offset = (reply->elements >= 5
              && reply->element[4]->type == REDIS_REPLY_INTEGER)
             ? reply->element[4]->integer : -1;

    if (state && ngx_http_gms_rconn_says(state, "connected")
        && offset >= rd->reach)
    {
        if (!rd->replica_in_step && rd->replica_out_said) {
            ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                          "gms: redis replica at %V is in step with its "
                          "master again: lookups go to it", &rc->peer);
            rd->replica_out_said = 0;
        }

        rd->replica_in_step = 1;
        return;
    }

    if (rd->replica_in_step || !rd->replica_out_said) {
        len = (state && (state->type == REDIS_REPLY_STRING
                         || state->type == REDIS_REPLY_STATUS))
              ? ngx_min(state->len, 32) : 0;

        if (len == 9 && ngx_strncmp(state->str, "connected", 9) == 0) {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "gms: redis replica at %V is behind its master "
                          "(ROLE: offset %L, the master's a second ago "
                          "%L): lookups go to the master", &rc->peer,
                          (int64_t) offset, (int64_t) rd->reach);

        } else {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "gms: redis replica at %V is not in step with "
                          "its master (ROLE: \"%*s\"): lookups go to the "
                          "master", &rc->peer, len, len ? state->str : "");
        }

        rd->replica_out_said = 1;
    }

    rd->replica_in_step = 0;
}


/*
 * Every second while the replica's connection is up, ROLE: whether it is
 * still in step.  One left unanswered for a round (asleep, or too busy to
 * answer a lookup in time) takes the replica out of step until it
 * answers; unanswered for ten rounds, the connection goes.  This is also
 * the replica's idle check: a replica gone silently is found.
 */

static void
ngx_http_gms_redis_replica_check(ngx_event_t *ev)
{
    ngx_http_gms_redis_t *rd = ev->data;

    size_t                 lens[1];
    const char            *argv[1];
    ngx_http_gms_rconn_t  *rc;

    rc = &ngx_http_gms_redis_replica;

    if (!ngx_http_gms_rconn_ready(rc) || rd->exiting) {
        return;
    }

    if (rd->role_pending) {

        if (++rd->replica_missed >= NGX_HTTP_GMS_REPLICA_CHECK_MISSED) {
            ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "no answer to ROLE");
            return;
        }

        if (rd->replica_in_step) {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "gms: redis replica at %V has not answered ROLE "
                          "in a second: lookups go to the master",
                          &rc->peer);
            rd->replica_in_step = 0;
            rd->replica_out_said = 1;
        }

    } else {
        argv[0] = "ROLE";
        lens[0] = sizeof("ROLE") - 1;

        /* where the master was when last asked, a round ago at least */
        rd->reach = rd->master_offset;

        if (ngx_http_gms_rconn_argv(rc, 1, argv, lens,
                                    ngx_http_gms_redis_role, rd)
            != NGX_OK)
        {
            ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "cannot send ROLE");
            return;
        }

        rd->role_pending = 1;
    }

    ngx_add_timer(ev, NGX_HTTP_GMS_REPLICA_CHECK_EVERY);

    /* and the master, for the next round: its connection is opened */

    rc = &ngx_http_gms_redis_master;

    if (rd->master_role_pending
        || (!ngx_http_gms_rconn_open(rc)
            && ngx_http_gms_redis_connect(rc) != NGX_OK))
    {
        return;
    }

    argv[0] = "ROLE";
    lens[0] = sizeof("ROLE") - 1;

    if (ngx_http_gms_rconn_argv(rc, 1, argv, lens, ngx_http_gms_redis_role,
                                rd)
        != NGX_OK)
    {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "cannot send ROLE");
        return;
    }

    rd->master_role_pending = 1;
}


static void
ngx_http_gms_redis_loaded(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    if (reply == NULL) {
        return;
    }

    if (reply->type == REDIS_REPLY_STRING && reply->len == 40
        && ngx_strncmp(reply->str, rc->gmcf->script_sha, 40) == 0)
    {
        return;
    }

    if (ngx_http_gms_redis_unavailable(rc, reply) == NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis at %V: unexpected answer to SCRIPT LOAD",
                      &rc->peer);
        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "SCRIPT LOAD failed");
    }
}


static void
ngx_http_gms_redis_up(ngx_http_gms_rconn_t *rc)
{
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis %s connection up", rc->what);

    if (rc == &ngx_http_gms_redis_master) {
        ngx_http_gms_count(connections);

        /*
         * an idle master connection is PINGed (a replica's is asked its
         * ROLE instead), a new one after 10 s of its own quiet
         */
        rc->heard = ngx_current_msec;
        ngx_http_gms_rconn_watch(rc);
        return;
    }

    rd->role_pending = 0;
    rd->replica_missed = 0;

    if (!rd->replica_check.timer_set) {
        ngx_add_timer(&rd->replica_check, NGX_HTTP_GMS_REPLICA_CHECK_EVERY);
    }
}


static void
ngx_http_gms_redis_closed(ngx_http_gms_rconn_t *rc)
{
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;

    if (rc == &ngx_http_gms_redis_replica) {
        rd->replica_in_step = 0;
        rd->role_pending = 0;

        if (rd->replica_check.timer_set) {
            ngx_del_timer(&rd->replica_check);
        }

    } else if (rc == &ngx_http_gms_redis_master) {
        rd->master_role_pending = 0;
    }

    if (rc == &ngx_http_gms_redis_master && rc->was_ready) {
        ngx_http_gms_count_down(connections);
    }

    if (rc->gmcf->sentinels && !rd->exiting && !rd->moving
        && rc == &ngx_http_gms_redis_master)
    {
        ngx_http_gms_sentinel_ask("the master's connection failed");
    }

    if (rc->gmcf->cluster && !rd->exiting && !rd->moving) {
        /* a node gone: a failover the map may already know */
        ngx_http_gms_cluster_refresh("a node's connection failed");
    }
}


/*
 * The lookup script: a token's (the command made once per worker, its id
 * copied in), or a user's, for a session or external OAuth token:
 * EVALSHA <sha> 1 <prefix>actor:<urn> <prefix>actor: <urn>.  After a
 * -NOSCRIPT (lk->evaluated), EVAL with the script itself.
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
    replica = (lk->rc == &ngx_http_gms_redis_replica);

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
        argv[1] = (const char *) gmcf->script_sha;
        len[1] = 40;
    }

    len[0] = ngx_strlen(argv[0]);
    argv[2] = "1";
    len[2] = 1;
    argv[4] = (const char *) gmcf->actor_prefix.data;
    len[4] = gmcf->actor_prefix.len;

    if (lk->actor.data) {
        if (lk->actor.len > GMS_ACTOR_MAX) {
            return NGX_ERROR;
        }

        ngx_memcpy(rd->members_key + gmcf->actor_prefix.len, lk->actor.data,
                   lk->actor.len);

        argv[3] = (const char *) rd->members_key;
        len[3] = gmcf->actor_prefix.len + lk->actor.len;
        argv[5] = (const char *) lk->actor.data;
        len[5] = lk->actor.len;
        n = 6;

    } else {
        ngx_memcpy(rd->key + gmcf->token_prefix.len, lk->id,
                   GMS_TOKEN_ID_LEN);

        argv[3] = (const char *) rd->key;
        len[3] = gmcf->token_prefix.len + GMS_TOKEN_ID_LEN;
        n = 5;
    }

    return ngx_http_gms_rconn_argv(lk->rc, n, argv, len,
                                   ngx_http_gms_redis_reply, lk);
}


static void
ngx_http_gms_redis_reply(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    ngx_http_gms_redis_lookup_t *lk = data;

    void                          *r;
    ngx_http_gms_redis_lookup_pt   handler;

    if (ngx_http_gms_redis.gmcf->cluster) {
        switch (ngx_http_gms_redis_cluster_reply(rc, lk, reply, &error)) {

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

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR
        && !lk->evaluated && ngx_strncmp(reply->str, "NOSCRIPT", 8) == 0)
    {
        /* the script cache was flushed: send the script itself, once */
        lk->evaluated = 1;

        if (ngx_http_gms_redis_send(lk) == NGX_OK) {
            return;
        }
    }

    if (rc == &ngx_http_gms_redis_replica
        && (reply == NULL || reply->type == REDIS_REPLY_ERROR))
    {
        ngx_http_gms_redis_replica_error(rc, lk, reply);

        if (ngx_http_gms_redis_resend(lk) == NGX_OK) {
            return;
        }

        reply = NULL;
        error = "neither the replica nor the master can serve the lookup";
    }

answer:

    handler = lk->handler;
    r = lk->data;

    ngx_queue_insert_head(&ngx_http_gms_redis.free, &lk->queue);

    if (reply != NULL && ngx_http_gms_redis_unavailable(rc, reply) != NGX_OK)
    {
        /* the connection is closed, and will be answered below */
        handler(r, NULL, "redis cannot serve the lookup now");
        return;
    }

    handler(r, reply, error);
}


/*
 * A cluster's answers to a lookup: NGX_OK for the usual ones; NGX_DONE
 * when the lookup was sent elsewhere (MOVED, ASK, the master moved under
 * it); NGX_DECLINED when it fails now, *error saying why.
 */

static ngx_int_t
ngx_http_gms_redis_cluster_reply(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_redis_lookup_t *lk, redisReply *reply, const char **error)
{
    gms_redirect_t         to;
    ngx_http_gms_redis_t  *rd;

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

    if (reply->type != REDIS_REPLY_ERROR) {
        return NGX_OK;
    }

    if (gms_slot_redirect((u_char *) reply->str, reply->len, &to) == 0) {

        if (ngx_http_gms_redis_redirect(rc, lk, &to) == NGX_OK) {
            return NGX_DONE;
        }

        *error = "a redirection that could not be followed";
        return NGX_DECLINED;
    }

    if ((reply->len >= sizeof("CLUSTERDOWN") - 1
         && ngx_strncmp(reply->str, "CLUSTERDOWN", sizeof("CLUSTERDOWN") - 1)
            == 0)
        || (reply->len >= sizeof("TRYAGAIN") - 1
            && ngx_strncmp(reply->str, "TRYAGAIN", sizeof("TRYAGAIN") - 1)
               == 0))
    {
        ngx_http_gms_count(cluster_errors);

        if (rd->cluster_logged != ngx_time()) {
            rd->cluster_logged = ngx_time();

            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                          "gms: cluster: %V answered \"%*s\"", &rc->peer,
                          (size_t) ngx_min(reply->len, 256), reply->str);
        }

        ngx_http_gms_cluster_refresh("CLUSTERDOWN or TRYAGAIN");

        *error = "the cluster cannot serve the lookup now";
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * -MOVED: the node named serves the slot now: it becomes the master, the
 * map is asked for again and the lookup sent there.  -ASK: the slot is
 * being migrated and the key is on the node named: ASKING and the lookup
 * go there, on a connection of its own, and nothing else changes.  A node
 * named by its host name becomes the master only through the map (whose
 * refresh resolves it): the lookup goes there on that other connection,
 * resolved by nginx's resolver, ASK or MOVED.  Once per lookup.
 */

static ngx_int_t
ngx_http_gms_redis_redirect(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_redis_lookup_t *lk, gms_redirect_t *to)
{
    size_t                      lens[1];
    ngx_int_t                   rv;
    socklen_t                   socklen;
    const char                 *argv[1];
    ngx_sockaddr_t              sa;
    ngx_http_gms_rconn_t       *asked;
    ngx_http_gms_redis_t       *rd;
    ngx_http_gms_redis_addr_t  *addr;

    rd = &ngx_http_gms_redis;

    if (to->kind == GMS_REDIRECT_MOVED) {
        ngx_http_gms_count(redirections[NGX_HTTP_GMS_REDIRECT_MOVED]);
        ngx_http_gms_cluster_refresh("MOVED");

    } else {
        ngx_http_gms_count(redirections[NGX_HTTP_GMS_REDIRECT_ASK]);
    }

    if (lk->redirected || to->slot != rd->gmcf->cluster_slot
        || rd->exiting)
    {
        /* a second redirection, or for a slot no key of ours is in */
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cluster: %V redirected a lookup %s to slot %ui "
                      "(%ui expected): not followed", &rc->peer,
                      lk->redirected ? "again" : "", (ngx_uint_t) to->slot,
                      rd->gmcf->cluster_slot);
        return NGX_DECLINED;
    }

    lk->redirected = 1;

    rv = ngx_http_gms_cluster_addr(to->host, to->host_len, to->port, &sa,
                                   &socklen);

    if (rv == NGX_ERROR) {
        /* no address at all ("MOVED 1 :6379", an unknown endpoint) */
        ngx_http_gms_cluster_refresh("a redirection without an address");
        return NGX_DECLINED;
    }

    if (rv == NGX_OK && to->kind == GMS_REDIRECT_MOVED) {
        ngx_http_gms_redis_set_master(&sa.sockaddr, socklen);
        return ngx_http_gms_redis_resend(lk);
    }

    asked = &ngx_http_gms_redis_asked;
    addr = &ngx_http_gms_redis_asked_addr;

    if (rv == NGX_OK) {
        if (asked->addr || !ngx_http_gms_rconn_is_peer(asked, &sa.sockaddr,
                                                      socklen))
        {
            ngx_http_gms_rconn_close(asked, NGX_LOG_DEBUG, "asked elsewhere");
            asked->addr = NULL;
            ngx_http_gms_rconn_set_peer(asked, &sa.sockaddr, socklen);
            asked->backoff = 0;
        }

    } else if (asked->addr == NULL || addr->port != to->port
               || addr->host.len != to->host_len
               || ngx_strncmp(addr->host.data, to->host, to->host_len) != 0)
    {
        /* a host name (at most 255 bytes, checked by the parser) */

        ngx_http_gms_rconn_close(asked, NGX_LOG_DEBUG, "asked elsewhere");

        addr->name.data = ngx_http_gms_redis_asked_name;
        addr->name.len = ngx_sprintf(addr->name.data, "%*s:%ui",
                                     to->host_len, to->host,
                                     (ngx_uint_t) to->port)
                         - addr->name.data;
        addr->host.data = addr->name.data;
        addr->host.len = to->host_len;
        addr->port = (in_port_t) to->port;
        addr->addrs = NULL;
        addr->naddrs = 0;

        asked->addr = addr;
        asked->socklen = 0;
        asked->backoff = 0;
    }

    if (!ngx_http_gms_rconn_open(asked)
        && ngx_http_gms_redis_connect(asked) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (to->kind == GMS_REDIRECT_ASK) {
        argv[0] = "ASKING";
        lens[0] = sizeof("ASKING") - 1;

        if (ngx_http_gms_rconn_argv(asked, 1, argv, lens,
                                    ngx_http_gms_redis_asking, NULL)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    lk->rc = asked;

    return ngx_http_gms_redis_send(lk);
}


/* ASKING's +OK; anything else is the next command's problem */

static void
ngx_http_gms_redis_asking(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    if (reply == NULL || ngx_http_gms_rconn_says(reply, "OK")) {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: cluster: %V did not take ASKING", &rc->peer);
}


/*
 * A replica that cannot answer a lookup leaves it to the master
 * (replica=prefer is "falling back to the master").  One that does not
 * know EVALSHA_RO is older than Redis 7.0: the worker stops reading from
 * it.  Other errors are logged at most once a second: they cost nothing
 * but a round trip.
 */

static void
ngx_http_gms_redis_replica_error(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_redis_lookup_t *lk, redisReply *reply)
{
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;

    if (reply == NULL) {
        /* the connection went: its close was logged */
        return;
    }

    if (reply->len >= sizeof("ERR unknown command") - 1
        && ngx_strncmp(reply->str, "ERR unknown command",
                       sizeof("ERR unknown command") - 1)
           == 0)
    {
        rd->replica_old = 1;

        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "gms: redis replica at %V does not know %s (Redis "
                      "7.0 or later): lookups go to the master",
                      &rc->peer, lk->evaluated ? "EVAL_RO" : "EVALSHA_RO");

        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "no EVALSHA_RO");
        return;
    }

    if (ngx_http_gms_redis_unavailable(rc, reply) != NGX_OK) {
        return;
    }

    if (rd->replica_logged != ngx_time()) {
        rd->replica_logged = ngx_time();

        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis replica at %V answered \"%*s\": the "
                      "lookup goes to the master", &rc->peer,
                      (size_t) ngx_min(reply->len, 256), reply->str);
    }
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

    return ngx_http_gms_redis_send(lk);
}


/*
 * -READONLY (a master turned replica), -LOADING, -MASTERDOWN: no answer
 * from this server for now.  The connection is closed (and, with
 * Sentinel, the Sentinels asked again): NGX_DECLINED.  In a cluster, a
 * redirection or CLUSTERDOWN/TRYAGAIN where no lookup was asked (the
 * sync-age HGET, say) has the map asked for again: NGX_DECLINED too, the
 * connection kept (the node is there; what it serves changed).
 */

ngx_int_t
ngx_http_gms_redis_unavailable(ngx_http_gms_rconn_t *rc, redisReply *reply)
{
    static ngx_str_t  errors[] = {
        ngx_string("READONLY"),
        ngx_string("LOADING"),
        ngx_string("MASTERDOWN"),
        ngx_null_string
    };

    ngx_str_t       *e;
    gms_redirect_t   to;

    if (reply->type != REDIS_REPLY_ERROR) {
        return NGX_OK;
    }

    if (rc->gmcf->cluster
        && (gms_slot_redirect((u_char *) reply->str, reply->len, &to) == 0
            || (reply->len >= sizeof("CLUSTERDOWN") - 1
                && ngx_strncmp(reply->str, "CLUSTERDOWN",
                               sizeof("CLUSTERDOWN") - 1) == 0)
            || (reply->len >= sizeof("TRYAGAIN") - 1
                && ngx_strncmp(reply->str, "TRYAGAIN",
                               sizeof("TRYAGAIN") - 1) == 0)))
    {
        ngx_http_gms_cluster_refresh("a redirection or CLUSTERDOWN");
        return NGX_DECLINED;
    }

    for (e = errors; e->len; e++) {
        if (reply->len >= e->len
            && ngx_strncmp(reply->str, e->data, e->len) == 0)
        {
            break;
        }
    }

    if (e->len == 0) {
        return NGX_OK;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis at %V answered -%V", &rc->peer, e);

    /* before the close, whose hook would ask with a vaguer reason */

    if (rc->gmcf->sentinels) {
        ngx_http_gms_sentinel_ask("the server is unavailable");
    }

    ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "server unavailable");

    return NGX_DECLINED;
}


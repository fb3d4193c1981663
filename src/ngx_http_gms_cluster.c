
/*
 * Redis Cluster (the Redis Cluster specification, "Client and Server
 * roles in the Redis cluster protocol").
 *
 * Every key of the contract lives in one hash slot, the slot of the key
 * prefix's hash tag ("{gms}:"), so a worker needs one node of the map:
 * the master serving that slot (and, with replica=prefer, a replica of
 * it whose health is "online").  Each worker keeps one connection to one
 * node of the configured list (a seed) and asks it CLUSTER SHARDS, or
 * CLUSTER SLOTS when the node is older than Redis 7 and says so.  It is
 * one of the discovery interface's implementations
 * (ngx_http_gms_discovery.h): what it names goes to the owner's hooks (the
 * lookups, and the invalidation subscription, which sits on the slot's
 * master too).
 *
 * The map is asked for again every NGX_HTTP_GMS_CLUSTER_EVERY ms, so a
 * failover is found without a request having to fail first, and at once
 * (at most once per NGX_HTTP_GMS_CLUSTER_MIN ms, later otherwise) when a
 * node answers MOVED, TRYAGAIN or CLUSTERDOWN or a connection to the
 * slot's master fails.  A seed that fails, or does not answer, or knows
 * no node for the slot, gives way to the next of the list.
 *
 * Nodes are where they announce they are: an IP address, or a host name
 * (cluster-preferred-endpoint-type hostname, cluster-announce-hostname)
 * resolved by nginx's resolver.  Nothing of a reply is trusted: a map
 * that is not of the documented shape closes the connection and the next
 * seed is asked.
 *
 * A lookup answered -MOVED goes, once, to the node named, which becomes
 * the master, and the map is asked for again; the lookups pipelined
 * behind it on the old connection follow it there (ngx_http_gms_redis.c).
 * -ASK sends ASKING and the one lookup to the node named, on a connection
 * of its own, the map unchanged.  -TRYAGAIN and -CLUSTERDOWN fail the
 * lookup at once (503) and have the map asked for again.
 */


#include "ngx_http_gms_cluster.h"
#include "ngx_http_gms_redis_server.h"
#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_redis_reply.h"
#include "ngx_http_gms_metrics.h"

#include "gms_slot.h"
#include "gms_topology.h"


/* the map is asked for at most this often on errors (ms) */
#define NGX_HTTP_GMS_CLUSTER_MIN    250

/* and this often anyway: a failover is found without an error */
#define NGX_HTTP_GMS_CLUSTER_EVERY  5000

#define NGX_HTTP_GMS_CLUSTER_MASTER   0
#define NGX_HTTP_GMS_CLUSTER_REPLICA  1


/* a node of the map: where it is, as it announced itself */
typedef struct {
    const u_char                *host;
    size_t                       host_len;
    ngx_int_t                    port;
    unsigned                     master:1;
    unsigned                     online:1;
} ngx_http_gms_cluster_node_t;


/* a host name being resolved for a hook */
typedef struct {
    ngx_resolver_ctx_t              *ctx;
    ngx_http_gms_discovery_peer_pt   hook;
    in_port_t                        port;
    size_t                           len;
    u_char                           host[256];
} ngx_http_gms_cluster_name_t;


typedef struct {
    ngx_http_gms_rconn_t         rc;
    ngx_http_gms_main_conf_t    *gmcf;
    ngx_http_gms_discovery_t    *dc;             /* the owner's hooks */
    ngx_uint_t                   current;        /* in gmcf->redis.cluster */
    ngx_event_t                  retry;          /* to connect */
    ngx_event_t                  tick;           /* to ask again */
    ngx_msec_t                   asked;
    ngx_http_gms_cluster_name_t  names[2];       /* master, replica */
    ngx_uint_t                   failed;         /* seeds, since a map */
    time_t                       logged;         /* CLUSTERDOWN, TRYAGAIN */
    unsigned                     pending:1;      /* a question unanswered */
    unsigned                     slots:1;        /* CLUSTER SLOTS (< 7) */
    unsigned                     exiting:1;
} ngx_http_gms_cluster_t;


static ngx_int_t ngx_http_gms_cluster_start(ngx_cycle_t *cycle,
    ngx_http_gms_discovery_t *dc);
static void ngx_http_gms_cluster_stop(void);
static void ngx_http_gms_cluster_refresh(const char *why);
static void ngx_http_gms_cluster_connect(ngx_event_t *ev);
static void ngx_http_gms_cluster_tick(ngx_event_t *ev);
static void ngx_http_gms_cluster_ask(ngx_http_gms_cluster_t *cl);
static void ngx_http_gms_cluster_map(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error);
static ngx_int_t ngx_http_gms_cluster_shards(ngx_http_gms_cluster_t *cl,
    redisReply *reply, ngx_http_gms_cluster_node_t *master,
    ngx_http_gms_cluster_node_t *replica);
static ngx_int_t ngx_http_gms_cluster_slots(ngx_http_gms_cluster_t *cl,
    redisReply *reply, ngx_http_gms_cluster_node_t *master,
    ngx_http_gms_cluster_node_t *replica);
static ngx_int_t ngx_http_gms_cluster_found(ngx_http_gms_cluster_t *cl,
    int rc, gms_topology_slot_t *slot, const char *why, const char *cmd,
    ngx_http_gms_cluster_node_t *master, ngx_http_gms_cluster_node_t *replica);
static void ngx_http_gms_cluster_apply(ngx_http_gms_cluster_t *cl,
    ngx_uint_t role, ngx_http_gms_cluster_node_t *node);
static void ngx_http_gms_cluster_resolved(ngx_resolver_ctx_t *ctx);
static ngx_int_t ngx_http_gms_cluster_addr(const u_char *host, size_t len,
    ngx_uint_t port, ngx_sockaddr_t *sa, socklen_t *socklen);
static void ngx_http_gms_cluster_closed(ngx_http_gms_rconn_t *rc);
static ngx_int_t ngx_http_gms_cluster_follow(ngx_http_gms_rconn_t *rc,
    gms_redirect_t *to, ngx_uint_t redirected, ngx_http_gms_cluster_to_t *go);
static void ngx_http_gms_cluster_asking(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);


/* one of each per worker process */
static ngx_http_gms_cluster_t  ngx_http_gms_cluster;
static ngx_http_gms_rconn_t    ngx_http_gms_cluster_asked;  /* ASK's node */

/* the node a redirection named by its host name, resolved on connect */
static ngx_http_gms_redis_addr_t  ngx_http_gms_cluster_asked_addr;
static u_char  ngx_http_gms_cluster_asked_name[256 + sizeof(":65535")];


void
ngx_http_gms_cluster_discovery(ngx_http_gms_discovery_t *dc)
{
    dc->name = "cluster";
    dc->addr = NULL;
    dc->start = ngx_http_gms_cluster_start;
    dc->stop = ngx_http_gms_cluster_stop;
    dc->ask = ngx_http_gms_cluster_refresh;
}


static ngx_int_t
ngx_http_gms_cluster_start(ngx_cycle_t *cycle, ngx_http_gms_discovery_t *dc)
{
    ngx_http_gms_rconn_t      *rc;
    ngx_http_gms_cluster_t    *cl;
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = dc->gmcf;

    cl = &ngx_http_gms_cluster;
    cl->gmcf = gmcf;
    cl->dc = dc;
    cl->names[NGX_HTTP_GMS_CLUSTER_MASTER].hook = dc->master;
    cl->names[NGX_HTTP_GMS_CLUSTER_REPLICA].hook = dc->replica;

    rc = &ngx_http_gms_cluster_asked;
    ngx_http_gms_rconn_init(rc, gmcf, "redirected lookup",
                            NGX_HTTP_GMS_TARGET_MASTER);
    rc->node = NGX_HTTP_GMS_NODE_ASK;

    rc = &cl->rc;
    ngx_http_gms_rconn_init(rc, gmcf, "cluster map",
                            NGX_HTTP_GMS_TARGET_CLUSTER);
    rc->closed = ngx_http_gms_cluster_closed;
    rc->builders = &ngx_http_gms_reply_map;
    rc->node = NGX_HTTP_GMS_NODE_MAP;
    rc->keepalive = 1;

    /* workers start at different nodes: the load spreads */
    cl->current = ngx_random() % gmcf->redis.cluster->nelts;

    cl->retry.handler = ngx_http_gms_cluster_connect;
    cl->retry.log = cycle->log;
    cl->retry.data = cl;
    cl->retry.cancelable = 1;

    cl->tick.handler = ngx_http_gms_cluster_tick;
    cl->tick.log = cycle->log;
    cl->tick.data = cl;
    cl->tick.cancelable = 1;

    ngx_add_timer(&cl->retry, 1);
    ngx_add_timer(&cl->tick, NGX_HTTP_GMS_CLUSTER_EVERY);

    return NGX_OK;
}


static void
ngx_http_gms_cluster_stop(void)
{
    ngx_uint_t               i;
    ngx_http_gms_cluster_t  *cl;

    cl = &ngx_http_gms_cluster;
    cl->exiting = 1;

    if (cl->gmcf == NULL) {
        return;
    }

    for (i = 0; i < 2; i++) {
        if (cl->names[i].ctx) {
            ngx_resolve_name_done(cl->names[i].ctx);
            cl->names[i].ctx = NULL;
        }
    }

    ngx_http_gms_rconn_close(&cl->rc, NGX_LOG_DEBUG, "exiting");
    ngx_http_gms_rconn_close(&ngx_http_gms_cluster_asked, NGX_LOG_DEBUG,
                             "exiting");
}


/* a redirection, a lost node, CLUSTERDOWN: the map is asked for again */

static void
ngx_http_gms_cluster_refresh(const char *why)
{
    ngx_msec_t               since;
    ngx_http_gms_cluster_t  *cl;

    cl = &ngx_http_gms_cluster;

    if (cl->gmcf == NULL || cl->exiting) {
        return;
    }

    since = ngx_current_msec - cl->asked;

    if (since < NGX_HTTP_GMS_CLUSTER_MIN) {
        /* asked a moment ago: once more when the moment is over */

        if (cl->tick.timer_set
            && cl->tick.timer.key > ngx_current_msec
                                    + NGX_HTTP_GMS_CLUSTER_MIN - since)
        {
            ngx_del_timer(&cl->tick);
        }

        if (!cl->tick.timer_set) {
            ngx_add_timer(&cl->tick, NGX_HTTP_GMS_CLUSTER_MIN - since);
        }

        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: cluster: asking for the slot map: %s", why);

    ngx_http_gms_cluster_ask(cl);
}


static void
ngx_http_gms_cluster_tick(ngx_event_t *ev)
{
    ngx_http_gms_cluster_ask(ev->data);
}


/*
 * CLUSTER SHARDS (or SLOTS) on the seed's connection, or a new one.  The
 * answer is awaited for gms_token_redis_timeout, as a lookup's: a seed
 * that says nothing gives way to the next while the lookups held for the
 * first map can still be sent (a round of NGX_HTTP_GMS_CLUSTER_EVERY
 * would leave them all to time out).
 */

static void
ngx_http_gms_cluster_ask(ngx_http_gms_cluster_t *cl)
{
    size_t                 lens[2];
    ngx_msec_t             since;
    const char            *argv[2];
    ngx_http_gms_rconn_t  *rc;

    rc = &cl->rc;

    if (cl->exiting) {
        return;
    }

    if (cl->tick.timer_set) {
        ngx_del_timer(&cl->tick);
    }

    if (!ngx_http_gms_rconn_open(rc)) {
        /* the connection's setup asks */

        ngx_add_timer(&cl->tick, NGX_HTTP_GMS_CLUSTER_EVERY);

        if (!cl->retry.timer_set) {
            ngx_add_timer(&cl->retry, ngx_http_gms_rconn_in_backoff(rc)
                                      ? rc->retry_at - ngx_current_msec
                                      : 1);
        }

        return;
    }

    if (cl->pending) {
        since = ngx_current_msec - cl->asked;

        if (since >= cl->gmcf->redis.timeout) {
            /* a node that does not answer in time: the next one */
            ngx_add_timer(&cl->tick, NGX_HTTP_GMS_CLUSTER_EVERY);
            ngx_http_gms_rconn_close(rc, NGX_LOG_ERR,
                                     "no answer to the slot map's question");
            return;
        }

        ngx_add_timer(&cl->tick, cl->gmcf->redis.timeout - since);
        return;
    }

    argv[0] = "CLUSTER";
    lens[0] = sizeof("CLUSTER") - 1;

    if (cl->slots) {
        argv[1] = "SLOTS";
        lens[1] = sizeof("SLOTS") - 1;

    } else {
        argv[1] = "SHARDS";
        lens[1] = sizeof("SHARDS") - 1;
    }

    if (ngx_http_gms_rconn_argv(rc, 2, argv, lens, ngx_http_gms_cluster_map,
                                NULL)
        != NGX_OK)
    {
        ngx_add_timer(&cl->tick, NGX_HTTP_GMS_CLUSTER_EVERY);
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "cannot ask for the map");
        return;
    }

    cl->pending = 1;
    cl->asked = ngx_current_msec;

    /* the answer's deadline; the next round once it has come */
    ngx_add_timer(&cl->tick, ngx_min(cl->gmcf->redis.timeout,
                                     NGX_HTTP_GMS_CLUSTER_EVERY));

    ngx_http_gms_count(cluster_refreshes);
}


static void
ngx_http_gms_cluster_connect(ngx_event_t *ev)
{
    ngx_http_gms_cluster_t *cl = ev->data;

    ngx_int_t                   rv;
    ngx_msec_int_t              delay;
    ngx_http_gms_rconn_t       *rc;
    ngx_http_gms_redis_addr_t  *addrs;

    rc = &cl->rc;

    if (ngx_http_gms_rconn_open(rc) || cl->exiting) {
        return;
    }

    addrs = cl->gmcf->redis.cluster->elts;
    rc->addr = &addrs[cl->current];

    /* AUTH, as every connection to the data nodes */
    rv = ngx_http_gms_redis_server_connect(rc, NULL);

    if (rv == NGX_DECLINED) {
        delay = (ngx_msec_int_t) (rc->retry_at - ngx_current_msec);
        ngx_add_timer(&cl->retry, (ngx_msec_t) ngx_max(delay, 1));
        return;
    }

    if (rv != NGX_OK) {
        /* closed: the hook has moved on and set the timer */
        return;
    }

    cl->pending = 0;
    cl->asked = 0;

    ngx_http_gms_cluster_ask(cl);
}


static ngx_uint_t
ngx_http_gms_cluster_unknown(redisReply *reply)
{
    static const char  unknown[] = "ERR unknown subcommand";

    /* "ERR Unknown subcommand" before Redis 6.2, "ERR unknown" after */

    return reply->type == REDIS_REPLY_ERROR
           && reply->len >= sizeof(unknown) - 1
           && ngx_strncasecmp((u_char *) reply->str, (u_char *) unknown,
                              sizeof(unknown) - 1)
              == 0;
}


static void
ngx_http_gms_cluster_map(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    ngx_int_t                    rv;
    ngx_http_gms_cluster_t      *cl;
    ngx_http_gms_cluster_node_t  master, replica;

    cl = &ngx_http_gms_cluster;
    cl->pending = 0;

    if (reply == NULL) {
        return;
    }

    /* answered: the next round from now */

    if (cl->tick.timer_set) {
        ngx_del_timer(&cl->tick);
    }

    ngx_add_timer(&cl->tick, NGX_HTTP_GMS_CLUSTER_EVERY);

    if (!cl->slots && ngx_http_gms_cluster_unknown(reply)) {
        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "gms: cluster: %V does not know CLUSTER SHARDS "
                      "(Redis 7.0 or later): asking CLUSTER SLOTS",
                      &rc->peer);
        cl->slots = 1;
        cl->asked = 0;
        ngx_http_gms_cluster_ask(cl);
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cluster: %V answered \"%*s\" for the slot map",
                      &rc->peer, (size_t) ngx_min(reply->len, 256),
                      reply->str);
        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "no map");
        return;
    }

    ngx_memzero(&master, sizeof(ngx_http_gms_cluster_node_t));
    ngx_memzero(&replica, sizeof(ngx_http_gms_cluster_node_t));

    rv = cl->slots
         ? ngx_http_gms_cluster_slots(cl, reply, &master, &replica)
         : ngx_http_gms_cluster_shards(cl, reply, &master, &replica);

    if (rv == NGX_ERROR) {
        ngx_http_gms_rconn_protocol_error(rc, cl->slots
                                              ? "a malformed CLUSTER SLOTS"
                                              : "a malformed CLUSTER SHARDS");
        return;
    }

    if (rv == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cluster: %V knows no node serving slot %ui "
                      "(the key prefix's): asking another node", &rc->peer,
                      cl->gmcf->redis.cluster_slot);
        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "slot not served");
        return;
    }

    cl->failed = 0;

    ngx_http_gms_cluster_apply(cl, NGX_HTTP_GMS_CLUSTER_MASTER, &master);

    if (cl->gmcf->redis.replica) {
        ngx_http_gms_cluster_apply(cl, NGX_HTTP_GMS_CLUSTER_REPLICA,
                                   replica.host ? &replica : NULL);
    }
}


/*
 * CLUSTER SHARDS (Redis 7), read by gms_topology.c.  NGX_OK: the slot's
 * master found, and an online replica if there is one; NGX_DECLINED: no
 * shard serves the slot; NGX_ERROR: not of the documented shape.
 */

static ngx_int_t
ngx_http_gms_cluster_shards(ngx_http_gms_cluster_t *cl, redisReply *reply,
    ngx_http_gms_cluster_node_t *master, ngx_http_gms_cluster_node_t *replica)
{
    int                   rc;
    const char           *why;
    gms_topology_slot_t   slot;

    rc = gms_topology_shards(reply, cl->gmcf->redis.cluster_slot,
                             cl->gmcf->redis.tls != 0, &slot, &why);

    return ngx_http_gms_cluster_found(cl, rc, &slot, why, "CLUSTER SHARDS",
                                      master, replica);
}


/*
 * CLUSTER SLOTS (before Redis 7), read by gms_topology.c; a connection
 * over TLS is given the TLS ports.  Failed replicas are left out by the
 * node.
 */

static ngx_int_t
ngx_http_gms_cluster_slots(ngx_http_gms_cluster_t *cl, redisReply *reply,
    ngx_http_gms_cluster_node_t *master, ngx_http_gms_cluster_node_t *replica)
{
    int                   rc;
    const char           *why;
    gms_topology_slot_t   slot;

    rc = gms_topology_slots(reply, cl->gmcf->redis.cluster_slot, &slot, &why);

    return ngx_http_gms_cluster_found(cl, rc, &slot, why, "CLUSTER SLOTS",
                                      master, replica);
}


/* what gms_topology.c found, as the hooks take it; a refusal's reason */

static ngx_int_t
ngx_http_gms_cluster_found(ngx_http_gms_cluster_t *cl, int rc,
    gms_topology_slot_t *slot, const char *why, const char *cmd,
    ngx_http_gms_cluster_node_t *master, ngx_http_gms_cluster_node_t *replica)
{
    ngx_uint_t                    i;
    gms_topology_node_t          *from[2];
    ngx_http_gms_cluster_node_t  *to[2];

    if (rc == GMS_TOPOLOGY_MALFORMED) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cluster: %V's %s refused: %s", &cl->rc.peer,
                      cmd, why);
        return NGX_ERROR;
    }

    if (rc != GMS_TOPOLOGY_OK) {
        return NGX_DECLINED;
    }

    from[0] = &slot->master;
    from[1] = &slot->replica;
    to[0] = master;
    to[1] = replica;

    for (i = 0; i < 2; i++) {
        if (from[i]->host == NULL) {
            continue;
        }

        to[i]->host = (const u_char *) from[i]->host;
        to[i]->host_len = from[i]->host_len;
        to[i]->port = (ngx_int_t) from[i]->port;
        to[i]->master = from[i]->master;
        to[i]->online = from[i]->online;
    }

    return NGX_OK;
}


/*
 * The node to its hook: an IP address at once, a host name once nginx's
 * resolver has answered (the last name asked for wins).
 */

static void
ngx_http_gms_cluster_apply(ngx_http_gms_cluster_t *cl, ngx_uint_t role,
    ngx_http_gms_cluster_node_t *node)
{
    ngx_int_t                     rv;
    socklen_t                     socklen;
    ngx_sockaddr_t                sa;
    ngx_resolver_t               *resolver;
    ngx_resolver_ctx_t           *ctx;
    ngx_http_gms_cluster_name_t  *name;

    name = &cl->names[role];

    if (node == NULL) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: cluster: %V's map: slot %ui has no %s",
                       &cl->rc.peer, cl->gmcf->redis.cluster_slot,
                       role == NGX_HTTP_GMS_CLUSTER_MASTER
                       ? "master" : "usable replica");

        if (name->ctx) {
            ngx_resolve_name_done(name->ctx);
            name->ctx = NULL;
        }

        name->hook(NULL, 0);
        return;
    }

    ngx_log_debug6(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: cluster: %V's map: slot %ui's %s is at %*s:%i",
                   &cl->rc.peer, cl->gmcf->redis.cluster_slot,
                   role == NGX_HTTP_GMS_CLUSTER_MASTER ? "master" : "replica",
                   node->host_len, node->host, node->port);

    rv = ngx_http_gms_cluster_addr(node->host, node->host_len,
                                   (ngx_uint_t) node->port, &sa, &socklen);

    if (rv == NGX_OK) {
        if (name->ctx) {
            ngx_resolve_name_done(name->ctx);
            name->ctx = NULL;
        }

        name->hook(&sa.sockaddr, socklen);
        return;
    }

    if (rv == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cluster: a node announced an unusable address "
                      "\"%*s\"", ngx_min(node->host_len, 256), node->host);
        return;
    }

    if (name->ctx) {
        if (name->len == node->host_len && name->port == node->port
            && ngx_strncmp(name->host, node->host, name->len) == 0)
        {
            /* already being resolved */
            return;
        }

        ngx_resolve_name_done(name->ctx);
        name->ctx = NULL;
    }

    resolver = cl->gmcf->redis.resolver;

    if (resolver == NULL || resolver->connections.nelts == 0) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cluster: node \"%*s\" is announced by its host "
                      "name: it needs a \"resolver\" at the http level",
                      node->host_len, node->host);
        return;
    }

    name->len = node->host_len;
    name->port = (in_port_t) node->port;
    ngx_memcpy(name->host, node->host, node->host_len);

    ctx = ngx_resolve_start(resolver, NULL);
    if (ctx == NULL || ctx == NGX_NO_RESOLVER) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cluster: cannot start resolving \"%*s\"",
                      name->len, name->host);
        return;
    }

    ctx->name.data = name->host;
    ctx->name.len = name->len;
    ctx->handler = ngx_http_gms_cluster_resolved;
    ctx->data = name;
    ctx->timeout = cl->gmcf->redis.resolver_timeout;

    name->ctx = ctx;

    if (ngx_resolve_name(ctx) != NGX_OK) {
        /* the resolver has freed ctx */
        name->ctx = NULL;
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cluster: cannot resolve \"%*s\"",
                      name->len, name->host);
    }
}


static void
ngx_http_gms_cluster_resolved(ngx_resolver_ctx_t *ctx)
{
    ngx_http_gms_cluster_name_t *name = ctx->data;

    socklen_t       socklen;
    ngx_sockaddr_t  sa;

    name->ctx = NULL;

    if (ctx->state || ctx->naddrs == 0) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cluster: node \"%V\" could not be resolved "
                      "(%i: %s)", &ctx->name, ctx->state,
                      ngx_resolver_strerror(ctx->state));
        ngx_resolve_name_done(ctx);
        return;
    }

    socklen = ctx->addrs[0].socklen;
    ngx_memcpy(&sa, ctx->addrs[0].sockaddr, socklen);
    ngx_inet_set_port(&sa.sockaddr, name->port);

    ngx_resolve_name_done(ctx);

    name->hook(&sa.sockaddr, socklen);
}


/*
 * An address a node announced: NGX_OK and *sa for an IP address,
 * NGX_DECLINED for a host name (resolved by the map's refresh), NGX_ERROR
 * for bytes that are neither.
 */

static ngx_int_t
ngx_http_gms_cluster_addr(const u_char *host, size_t len, ngx_uint_t port,
    ngx_sockaddr_t *sa, socklen_t *socklen)
{
    u_char     c;
    size_t     i;
    in_addr_t  inaddr;

    if (len == 0 || len > 255 || port < 1 || port > 65535) {
        return NGX_ERROR;
    }

    ngx_memzero(sa, sizeof(ngx_sockaddr_t));

    inaddr = ngx_inet_addr((u_char *) host, len);

    if (inaddr != INADDR_NONE) {
        sa->sockaddr_in.sin_family = AF_INET;
        sa->sockaddr_in.sin_addr.s_addr = inaddr;
        *socklen = sizeof(struct sockaddr_in);
        ngx_inet_set_port(&sa->sockaddr, (in_port_t) port);
        return NGX_OK;
    }

#if (NGX_HAVE_INET6)
    if (ngx_inet6_addr((u_char *) host, len,
                       sa->sockaddr_in6.sin6_addr.s6_addr)
        == NGX_OK)
    {
        sa->sockaddr_in6.sin6_family = AF_INET6;
        *socklen = sizeof(struct sockaddr_in6);
        ngx_inet_set_port(&sa->sockaddr, (in_port_t) port);
        return NGX_OK;
    }
#endif

    /* a host name: letters, digits, '-', '.', '_' */

    for (i = 0; i < len; i++) {
        c = ngx_tolower(host[i]);

        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
              || c == '.' || c == '_'))
        {
            return NGX_ERROR;
        }
    }

    return NGX_DECLINED;
}


static void
ngx_http_gms_cluster_closed(ngx_http_gms_rconn_t *rc)
{
    ngx_msec_t               delay;
    ngx_http_gms_cluster_t  *cl;

    cl = &ngx_http_gms_cluster;
    cl->pending = 0;

    if (cl->exiting) {
        return;
    }

    cl->current = (cl->current + 1) % cl->gmcf->redis.cluster->nelts;

    if (++cl->failed == cl->gmcf->redis.cluster->nelts) {
        /* lookups held for the first map wait no longer (no-op after) */
        cl->dc->failed("no cluster node gave the slot map");
    }

    delay = 1;

    if (ngx_http_gms_rconn_in_backoff(rc)) {
        delay = rc->retry_at - ngx_current_msec;
    }

    if (cl->retry.timer_set) {
        ngx_del_timer(&cl->retry);
    }

    ngx_add_timer(&cl->retry, delay);
}


/*
 * A data node's answer to a lookup: NGX_OK when it is the lookup's own;
 * NGX_DECLINED when the lookup fails now, *error saying why; NGX_DONE
 * when it goes, once, to go->rc (ASKING already sent there for -ASK);
 * NGX_AGAIN when -MOVED named the slot's new master, at go->sockaddr.
 */

ngx_int_t
ngx_http_gms_cluster_redirect(ngx_http_gms_rconn_t *rc, redisReply *reply,
    ngx_uint_t redirected, ngx_http_gms_cluster_to_t *go, const char **error)
{
    ngx_int_t                rv;
    gms_redirect_t           to;
    ngx_http_gms_cluster_t  *cl;

    cl = &ngx_http_gms_cluster;

    if (reply->type != REDIS_REPLY_ERROR) {
        return NGX_OK;
    }

    if (gms_slot_redirect((u_char *) reply->str, reply->len, &to) == 0) {

        rv = ngx_http_gms_cluster_follow(rc, &to, redirected, go);

        if (rv == NGX_DONE || rv == NGX_AGAIN) {
            return rv;
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

        if (cl->logged != ngx_time()) {
            cl->logged = ngx_time();

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
 * resolved by nginx's resolver, ASK or MOVED.  Once per lookup.  As
 * ngx_http_gms_cluster_redirect() returns, or NGX_DECLINED, NGX_ERROR.
 */

static ngx_int_t
ngx_http_gms_cluster_follow(ngx_http_gms_rconn_t *rc, gms_redirect_t *to,
    ngx_uint_t redirected, ngx_http_gms_cluster_to_t *go)
{
    size_t                      lens[1];
    ngx_int_t                   rv;
    socklen_t                   socklen;
    const char                 *argv[1];
    ngx_sockaddr_t              sa;
    ngx_http_gms_rconn_t       *asked;
    ngx_http_gms_cluster_t     *cl;
    ngx_http_gms_redis_addr_t  *addr;

    cl = &ngx_http_gms_cluster;

    ngx_log_debug6(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: cluster: %V redirected a lookup: %s %ui %*s:%ui",
                   &rc->peer, to->kind == GMS_REDIRECT_MOVED ? "MOVED" : "ASK",
                   (ngx_uint_t) to->slot, to->host_len, to->host,
                   (ngx_uint_t) to->port);

    if (to->kind == GMS_REDIRECT_MOVED) {
        ngx_http_gms_count(redirections[NGX_HTTP_GMS_REDIRECT_MOVED]);
        ngx_http_gms_cluster_refresh("MOVED");

    } else {
        ngx_http_gms_count(redirections[NGX_HTTP_GMS_REDIRECT_ASK]);
    }

    if (redirected || to->slot != cl->gmcf->redis.cluster_slot || cl->exiting) {
        /* a second redirection, or for a slot no key of ours is in */
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cluster: %V redirected a lookup %s to slot %ui "
                      "(%ui expected): not followed", &rc->peer,
                      redirected ? "again" : "", (ngx_uint_t) to->slot,
                      cl->gmcf->redis.cluster_slot);
        return NGX_DECLINED;
    }

    rv = ngx_http_gms_cluster_addr(to->host, to->host_len, to->port, &sa,
                                   &socklen);

    if (rv == NGX_ERROR) {
        /* no address at all ("MOVED 1 :6379", an unknown endpoint) */
        ngx_http_gms_cluster_refresh("a redirection without an address");
        return NGX_DECLINED;
    }

    if (rv == NGX_OK && to->kind == GMS_REDIRECT_MOVED) {
        /* the slot's master now: the lookups' connection goes there */
        ngx_memcpy(&go->sockaddr, &sa, socklen);
        go->socklen = socklen;
        go->rc = NULL;
        return NGX_AGAIN;
    }

    asked = &ngx_http_gms_cluster_asked;
    addr = &ngx_http_gms_cluster_asked_addr;

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

        addr->name.data = ngx_http_gms_cluster_asked_name;
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
        && ngx_http_gms_redis_server_lookups(asked, NULL) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (to->kind == GMS_REDIRECT_ASK) {
        argv[0] = "ASKING";
        lens[0] = sizeof("ASKING") - 1;

        if (ngx_http_gms_rconn_argv(asked, 1, argv, lens,
                                    ngx_http_gms_cluster_asking, NULL)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    go->rc = asked;
    go->socklen = 0;

    return NGX_DONE;
}


/* ASKING's +OK; anything else is the next command's problem */

static void
ngx_http_gms_cluster_asking(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    if (reply == NULL || ngx_http_gms_rconn_says(reply, "OK")) {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: cluster: %V did not take ASKING", &rc->peer);
}


/*
 * Reading from a replica (gms_token_redis_sentinel or _cluster ...
 * replica=prefer): the replica's lookup connection, and whether it is in
 * step with its master.
 *
 * Lookups (reads only: EVALSHA_RO) go to the replica while its connection
 * is up and the replica is in step with its master, and to the master
 * otherwise, or when the replica answers an error or its connection fails
 * before the answer (ngx_http_gms_redis.c sends them again).  In step:
 * ROLE says its link to the master is "connected" and its offset has
 * reached what the master's ROLE said a round before; asked when the
 * connection opens and every second after (a replica that has not
 * answered the last one is not in step either: it is asleep, or far
 * behind).  The setup's ROLE on every lookup connection with Sentinel
 * (the server must be what the Sentinels said) is answered here too.
 */


#include "ngx_http_gms_replica.h"
#include "ngx_http_gms_redis_server.h"
#include "ngx_http_gms_metrics.h"

#include "gms_topology.h"


/* a replica is asked its ROLE this often */
#define NGX_HTTP_GMS_REPLICA_CHECK_EVERY  1000

/* ROLE unanswered this many rounds: the replica's connection goes */
#define NGX_HTTP_GMS_REPLICA_CHECK_MISSED  10


typedef struct {
    ngx_http_gms_rconn_t       rc;             /* the replica's lookups */
    ngx_http_gms_rconn_t      *master;         /* the master's */
    ngx_http_gms_main_conf_t  *gmcf;
    ngx_http_gms_discovery_t  *dc;
    ngx_event_t                replica_check;  /* its ROLE, every second */
    ngx_uint_t                 replica_missed; /* ROLEs unanswered */
    long long                  master_offset;  /* the master's ROLE, last */
    long long                  reach;          /* the replica's, a round on */
    time_t                     replica_logged;
    unsigned                   replica_old:1;  /* no EVALSHA_RO */
    unsigned                   replica_in_step:1;
    unsigned                   replica_out_said:1;
    unsigned                   role_pending:1; /* the replica's last ROLE */
    unsigned                   master_role_pending:1;
    unsigned                   exiting:1;
} ngx_http_gms_replica_t;


static void ngx_http_gms_replica_up(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_replica_closed(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_replica_step(ngx_http_gms_rconn_t *rc,
    gms_topology_role_t *role);
static void ngx_http_gms_replica_check(ngx_event_t *ev);


/* one per worker process */
static ngx_http_gms_replica_t  ngx_http_gms_replica;


void
ngx_http_gms_replica_init(ngx_cycle_t *cycle, ngx_http_gms_discovery_t *dc,
    ngx_http_gms_rconn_t *master)
{
    ngx_http_gms_rconn_t    *rc;
    ngx_http_gms_replica_t  *rp;

    rp = &ngx_http_gms_replica;
    rp->gmcf = dc->gmcf;
    rp->dc = dc;
    rp->master = master;

    rp->replica_check.handler = ngx_http_gms_replica_check;
    rp->replica_check.data = rp;
    rp->replica_check.log = cycle->log;
    rp->replica_check.cancelable = 1;

    rc = &rp->rc;
    ngx_http_gms_rconn_init(rc, dc->gmcf, "replica lookup",
                            NGX_HTTP_GMS_TARGET_REPLICA);
    rc->ready = ngx_http_gms_replica_up;
    rc->closed = ngx_http_gms_replica_closed;
    rc->node = NGX_HTTP_GMS_NODE_REPLICA;
}


void
ngx_http_gms_replica_exit(void)
{
    ngx_http_gms_replica_t  *rp;

    rp = &ngx_http_gms_replica;
    rp->exiting = 1;

    if (rp->gmcf == NULL) {
        return;
    }

    if (rp->replica_check.timer_set) {
        ngx_del_timer(&rp->replica_check);
    }

    ngx_http_gms_rconn_close(&rp->rc, NGX_LOG_DEBUG, "exiting");
}


/*
 * Where a lookup reads: the replica's connection if it is up, in step,
 * and allowed for it; NULL for the master's.  The replica's connection is
 * opened on first use, for the lookups after this one.
 */

ngx_http_gms_rconn_t *
ngx_http_gms_replica_get(ngx_uint_t master)
{
    ngx_http_gms_rconn_t    *rc;
    ngx_http_gms_replica_t  *rp;

    rp = &ngx_http_gms_replica;
    rc = &rp->rc;

    if (!rp->gmcf->redis.replica || rc->socklen == 0 || rp->replica_old) {
        return NULL;
    }

    if (ngx_http_gms_rconn_ready(rc)) {
        return (rp->replica_in_step && !master) ? rc : NULL;
    }

    if (!ngx_http_gms_rconn_open(rc)) {
        (void) ngx_http_gms_redis_server_lookups(rc,
                                                 ngx_http_gms_replica_role);
    }

    return NULL;
}


/* the discovery's hook: where a good replica is (NULL: none) */

void
ngx_http_gms_replica_set(struct sockaddr *sa, socklen_t socklen)
{
    ngx_http_gms_rconn_t    *rc;
    ngx_http_gms_replica_t  *rp;

    rp = &ngx_http_gms_replica;
    rc = &rp->rc;

    if (sa == NULL) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: %s: no replica to read", rp->dc->name);

        rc->socklen = 0;
        ngx_http_gms_rconn_close(rc, NGX_LOG_NOTICE, "no replica to read");
        return;
    }

    if (ngx_http_gms_rconn_is_peer(rc, sa, socklen)) {
        return;
    }

    ngx_http_gms_rconn_set_peer(rc, sa, socklen);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: %s: the replica to read is %V", rp->dc->name,
                   &rc->peer);

    ngx_http_gms_rconn_close(rc, NGX_LOG_NOTICE, "the replica changed");
    rc->backoff = 0;

    /* another server: it may know EVALSHA_RO */
    rp->replica_old = 0;
    rp->replica_out_said = 0;
}


/* another master: its offsets are not the old one's */

void
ngx_http_gms_replica_master_moved(void)
{
    ngx_http_gms_replica.master_offset = 0;
    ngx_http_gms_replica.reach = 0;
}


void
ngx_http_gms_replica_master_closed(void)
{
    ngx_http_gms_replica.master_role_pending = 0;
}


static void
ngx_http_gms_replica_up(ngx_http_gms_rconn_t *rc)
{
    ngx_http_gms_replica_t  *rp;

    rp = &ngx_http_gms_replica;

    rp->role_pending = 0;
    rp->replica_missed = 0;

    if (!rp->replica_check.timer_set) {
        ngx_add_timer(&rp->replica_check, NGX_HTTP_GMS_REPLICA_CHECK_EVERY);
    }
}


static void
ngx_http_gms_replica_closed(ngx_http_gms_rconn_t *rc)
{
    ngx_http_gms_replica_t  *rp;

    rp = &ngx_http_gms_replica;

    rp->replica_in_step = 0;
    rp->role_pending = 0;

    if (rp->replica_check.timer_set) {
        ngx_del_timer(&rp->replica_check);
    }

    if (rc->gmcf->redis.cluster && !rp->exiting) {
        /* a node gone: a failover the map may already know */
        rp->dc->ask("a node's connection failed");
    }
}


/*
 * ROLE: ["master", offset, replicas] or ["slave", host, port, state,
 * offset], as gms_topology_role() reads it for the module and gms-token;
 * what the discovery said this server is, or it is asked again.  A
 * replica's state says whether it is in step with its master.  The
 * setup's ROLE has no data; the replica's check every second has.
 */

void
ngx_http_gms_replica_role(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    const char              *why;
    gms_topology_role_t      role;
    gms_topology_role_e      expect;
    ngx_http_gms_replica_t  *rp;

    if (reply == NULL) {
        return;
    }

    rp = &ngx_http_gms_replica;

    if (data && rc->target == NGX_HTTP_GMS_TARGET_REPLICA) {
        rp->role_pending = 0;
        rp->replica_missed = 0;

    } else if (data) {
        rp->master_role_pending = 0;
    }

    expect = (rc->target == NGX_HTTP_GMS_TARGET_REPLICA)
             ? GMS_TOPOLOGY_REPLICA : GMS_TOPOLOGY_MASTER;

    if (gms_topology_role(reply, &role, &why) == GMS_TOPOLOGY_OK) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: redis %s at %V: ROLE \"%s\"", rc->what,
                       &rc->peer, role.name);

        if (role.role == expect) {
            if (expect == GMS_TOPOLOGY_REPLICA) {
                ngx_http_gms_replica_step(rc, &role);

            } else {
                /* its replication offset: where the replica must be soon */
                rp->master_offset = role.offset;
            }

            return;
        }

    } else {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: redis %s at %V: ROLE refused: %s", rc->what,
                       &rc->peer, why);
    }

    if (ngx_http_gms_redis_server_unavailable(rc, reply) != NGX_OK) {
        return;
    }

    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                  "gms: redis at %V is not a %s (ROLE): asking the "
                  "%s again", &rc->peer,
                  rc->target == NGX_HTTP_GMS_TARGET_REPLICA ? "replica"
                                                             : "master",
                  rp->dc->name);

    ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "wrong role");

    rp->dc->ask("a server of the wrong role");
}


/*
 * A replica's link to its master: "connected", or "connect",
 * "connecting", "sync", "handshake": the link is down or not yet
 * streaming, and the replica may serve data its master has deleted
 * ("replica-serve-stale-data yes", Redis's default).  Connected, its
 * offset must have reached the master's of a round ago (rp->reach): a
 * replica that has not applied in a second what its master had is
 * behind, by more than the invalidations' window, maybe.  Read from
 * while in step only; the changes are logged, once each way.
 */

static void
ngx_http_gms_replica_step(ngx_http_gms_rconn_t *rc, gms_topology_role_t *role)
{
    size_t                   len;
    ngx_uint_t               connected;
    ngx_http_gms_replica_t  *rp;

    rp = &ngx_http_gms_replica;

    connected = (role->state_len == 9
                 && ngx_strncmp(role->state, "connected", 9) == 0);

    if (connected && role->offset >= rp->reach) {
        if (!rp->replica_in_step && rp->replica_out_said) {
            ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                          "gms: redis replica at %V is in step with its "
                          "master again: lookups go to it", &rc->peer);
            rp->replica_out_said = 0;
        }

        rp->replica_in_step = 1;
        return;
    }

    if (rp->replica_in_step || !rp->replica_out_said) {
        len = ngx_min(role->state_len, 32);

        if (connected) {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "gms: redis replica at %V is behind its master "
                          "(ROLE: offset %L, the master's a second ago "
                          "%L): lookups go to the master", &rc->peer,
                          (int64_t) role->offset, (int64_t) rp->reach);

        } else {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "gms: redis replica at %V is not in step with "
                          "its master (ROLE: \"%*s\"): lookups go to the "
                          "master", &rc->peer, len, role->state);
        }

        rp->replica_out_said = 1;
    }

    rp->replica_in_step = 0;
}


/*
 * Every second while the replica's connection is up, ROLE: whether it is
 * still in step.  One left unanswered for a round (asleep, or too busy to
 * answer a lookup in time) takes the replica out of step until it
 * answers; unanswered for ten rounds, the connection goes.  This is also
 * the replica's idle check: a replica gone silently is found.
 */

static void
ngx_http_gms_replica_check(ngx_event_t *ev)
{
    ngx_http_gms_replica_t *rp = ev->data;

    size_t                 lens[1];
    const char            *argv[1];
    ngx_http_gms_rconn_t  *rc;

    rc = &rp->rc;

    if (!ngx_http_gms_rconn_ready(rc) || rp->exiting) {
        return;
    }

    if (rp->role_pending) {

        if (++rp->replica_missed >= NGX_HTTP_GMS_REPLICA_CHECK_MISSED) {
            ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "no answer to ROLE");
            return;
        }

        if (rp->replica_in_step) {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "gms: redis replica at %V has not answered ROLE "
                          "in a second: lookups go to the master",
                          &rc->peer);
            rp->replica_in_step = 0;
            rp->replica_out_said = 1;
        }

    } else {
        argv[0] = "ROLE";
        lens[0] = sizeof("ROLE") - 1;

        /* where the master was when last asked, a round ago at least */
        rp->reach = rp->master_offset;

        if (ngx_http_gms_rconn_argv(rc, 1, argv, lens,
                                    ngx_http_gms_replica_role, rp)
            != NGX_OK)
        {
            ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "cannot send ROLE");
            return;
        }

        rp->role_pending = 1;
    }

    ngx_add_timer(ev, NGX_HTTP_GMS_REPLICA_CHECK_EVERY);

    /* and the master, for the next round: its connection is opened */

    rc = rp->master;

    if (rp->master_role_pending
        || (!ngx_http_gms_rconn_open(rc)
            && ngx_http_gms_redis_server_lookups(rc,
                                                 ngx_http_gms_replica_role)
               != NGX_OK))
    {
        return;
    }

    argv[0] = "ROLE";
    lens[0] = sizeof("ROLE") - 1;

    if (ngx_http_gms_rconn_argv(rc, 1, argv, lens, ngx_http_gms_replica_role,
                                rp)
        != NGX_OK)
    {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "cannot send ROLE");
        return;
    }

    rp->master_role_pending = 1;
}


/*
 * A replica that cannot answer a lookup leaves it to the master
 * (replica=prefer is "falling back to the master").  One that does not
 * know EVALSHA_RO is older than Redis 7.0: the worker stops reading from
 * it.  Other errors are logged at most once a second: they cost nothing
 * but a round trip.
 */

void
ngx_http_gms_replica_error(ngx_http_gms_rconn_t *rc, redisReply *reply,
    const char *command)
{
    ngx_http_gms_replica_t  *rp;

    rp = &ngx_http_gms_replica;

    if (reply == NULL) {
        /* the connection went: its close was logged */
        return;
    }

    if (reply->len >= sizeof("ERR unknown command") - 1
        && ngx_strncmp(reply->str, "ERR unknown command",
                       sizeof("ERR unknown command") - 1)
           == 0)
    {
        rp->replica_old = 1;

        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "gms: redis replica at %V does not know %s (Redis "
                      "7.0 or later): lookups go to the master",
                      &rc->peer, command);

        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "no EVALSHA_RO");
        return;
    }

    if (ngx_http_gms_redis_server_unavailable(rc, reply) != NGX_OK) {
        return;
    }

    if (rp->replica_logged != ngx_time()) {
        rp->replica_logged = ngx_time();

        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis replica at %V answered \"%*s\": the "
                      "lookup goes to the master", &rc->peer,
                      (size_t) ngx_min(reply->len, 256), reply->str);
    }
}

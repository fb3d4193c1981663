
/*
 * Redis Sentinel (https://redis.io/docs/management/sentinel/, "Sentinel
 * clients implementation guidelines").
 *
 * Each worker keeps one connection to one Sentinel of the list: on it,
 * pipelined, SENTINEL get-master-addr-by-name NAME, with replica=prefer
 * SENTINEL replicas NAME, and SUBSCRIBE +switch-master, after which the
 * connection only listens.  It is one of the discovery interface's
 * implementations (ngx_http_gms_discovery.h): the master it names goes to
 * the owner's hooks (the lookups, whose connections confirm it with ROLE,
 * and the invalidation subscription).  A +switch-master for NAME moves
 * them at once; a connection to the master that fails or finds a replica
 * there makes the worker ask again (at most once a second), by opening
 * the Sentinel connection anew.  A Sentinel that fails, or does not know
 * NAME, gives way to the next in the list; one that does not answer
 * within gms_token_redis_timeout too.  Until a Sentinel has named the
 * master, the worker's lookups wait (ngx_http_gms_redis.c); when every
 * Sentinel of the list has failed in turn without naming it, the
 * discovery gives up: they fail, until one names it.
 *
 * With replica=prefer the replicas are asked for again after
 * +switch-master (the same way: a subscribed connection takes no other
 * command), and while none is usable, after 1 s, 2 s, ... up to a minute:
 * a Sentinel announces the switch before it has reached the new master's
 * replicas, so they are not usable yet when it is asked at once.
 *
 * The subscription, quiet for 10 s, is sent a PING (a subscribed RESP2
 * connection answers ["pong", ""], a Sentinel's too); unanswered at the
 * next round, it is dropped for the next Sentinel: one gone silently (a
 * host down, no FIN) would otherwise leave the worker deaf to
 * +switch-master until TCP keepalive noticed, hours later.
 */


#include "ngx_http_gms_sentinel.h"
#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_redis_idle.h"
#include "ngx_http_gms_redis_secret.h"
#include "ngx_http_gms_metrics.h"


/* the Sentinels are asked again at most this often */
#define NGX_HTTP_GMS_SENTINEL_ASK_EVERY  1000

/* with no usable replica, asked again after this, doubled up to the max */
#define NGX_HTTP_GMS_REPLICAS_AGAIN_MIN  1000
#define NGX_HTTP_GMS_REPLICAS_AGAIN_MAX  60000


typedef struct {
    ngx_http_gms_rconn_t       rc;
    ngx_http_gms_main_conf_t  *gmcf;
    ngx_http_gms_discovery_t  *dc;             /* the owner's hooks */
    ngx_uint_t                 current;        /* in gmcf->redis.sentinels */
    ngx_event_t                retry;
    ngx_msec_t                 asked;
    ngx_event_t                again;          /* for the replicas */
    ngx_msec_t                 again_after;
    ngx_uint_t                 failed;         /* in turn, none named */
    unsigned                   asking:1;       /* the same one, again */
    unsigned                   named:1;        /* a master, once */
    unsigned                   exiting:1;
} ngx_http_gms_sentinel_t;


static ngx_int_t ngx_http_gms_sentinel_start(ngx_cycle_t *cycle,
    ngx_http_gms_discovery_t *dc);
static void ngx_http_gms_sentinel_stop(void);
static void ngx_http_gms_sentinel_ask(const char *why);
static void ngx_http_gms_sentinel_connect(ngx_event_t *ev);
static void ngx_http_gms_sentinel_ok(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error);
static void ngx_http_gms_sentinel_master(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);
static void ngx_http_gms_sentinel_replicas(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);
static ngx_int_t ngx_http_gms_sentinel_addr(ngx_str_t *ip, ngx_str_t *port,
    ngx_sockaddr_t *sa, socklen_t *socklen);
static void ngx_http_gms_sentinel_message(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);
static void ngx_http_gms_sentinel_closed(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_sentinel_again(ngx_event_t *ev);
static void ngx_http_gms_sentinel_gave_up(ngx_http_gms_sentinel_t *st);
static void ngx_http_gms_sentinel_reopen(ngx_http_gms_sentinel_t *st,
    const char *why);


static ngx_http_gms_sentinel_t  ngx_http_gms_sentinel;


void
ngx_http_gms_sentinel_discovery(ngx_http_gms_discovery_t *dc)
{
    dc->name = "Sentinels";
    dc->addr = NULL;
    dc->start = ngx_http_gms_sentinel_start;
    dc->stop = ngx_http_gms_sentinel_stop;
    dc->ask = ngx_http_gms_sentinel_ask;
}


static ngx_int_t
ngx_http_gms_sentinel_start(ngx_cycle_t *cycle, ngx_http_gms_discovery_t *dc)
{
    ngx_http_gms_rconn_t      *rc;
    ngx_http_gms_sentinel_t   *st;
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = dc->gmcf;

    st = &ngx_http_gms_sentinel;
    st->gmcf = gmcf;
    st->dc = dc;

    rc = &st->rc;
    ngx_http_gms_rconn_init(rc, gmcf, "sentinel",
                            NGX_HTTP_GMS_TARGET_SENTINEL);
    rc->push = ngx_http_gms_sentinel_message;
    rc->closed = ngx_http_gms_sentinel_closed;
    rc->keepalive = 1;

    /* workers start at different Sentinels: the load spreads */
    st->current = ngx_random() % gmcf->redis.sentinels->nelts;

    st->retry.handler = ngx_http_gms_sentinel_connect;
    st->retry.log = cycle->log;
    st->retry.data = st;
    st->retry.cancelable = 1;

    st->again.handler = ngx_http_gms_sentinel_again;
    st->again.log = cycle->log;
    st->again.data = st;
    st->again.cancelable = 1;

    ngx_add_timer(&st->retry, 1);

    return NGX_OK;
}


static void
ngx_http_gms_sentinel_stop(void)
{
    ngx_http_gms_sentinel.exiting = 1;

    if (ngx_http_gms_sentinel.gmcf) {
        ngx_http_gms_rconn_close(&ngx_http_gms_sentinel.rc, NGX_LOG_DEBUG,
                                 "exiting");
    }
}


/* a connection to the master failed or found a replica: ask again */

static void
ngx_http_gms_sentinel_ask(const char *why)
{
    ngx_http_gms_sentinel_t  *st;

    st = &ngx_http_gms_sentinel;

    if (st->gmcf == NULL || st->exiting
        || ngx_current_msec - st->asked < NGX_HTTP_GMS_SENTINEL_ASK_EVERY)
    {
        return;
    }

    st->asked = ngx_current_msec;

    if (ngx_http_gms_rconn_open(&st->rc)) {
        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "gms: sentinel: asking again for master \"%V\": %s",
                      &st->gmcf->redis.master_name, why);

        ngx_http_gms_sentinel_reopen(st, why);
    }
}


/* the same Sentinel, at once: its answers come with the new connection */

static void
ngx_http_gms_sentinel_reopen(ngx_http_gms_sentinel_t *st, const char *why)
{
    st->asking = 1;
    ngx_http_gms_rconn_close(&st->rc, NGX_LOG_DEBUG, why);
}


static void
ngx_http_gms_sentinel_connect(ngx_event_t *ev)
{
    ngx_http_gms_sentinel_t *st = ev->data;

    size_t                      lens[3];
    ngx_int_t                   rv;
    const char                 *argv[3];
    ngx_msec_int_t              delay;
    ngx_http_gms_rconn_t       *rc;
    ngx_http_gms_main_conf_t   *gmcf;
    ngx_http_gms_redis_addr_t  *addrs;

    rc = &st->rc;
    gmcf = st->gmcf;

    if (ngx_http_gms_rconn_open(rc) || st->exiting) {
        return;
    }

    addrs = gmcf->redis.sentinels->elts;
    rc->addr = &addrs[st->current];
    rc->tls = gmcf->redis.tls;

    rv = ngx_http_gms_rconn_connect(rc);

    if (rv == NGX_DECLINED) {
        delay = (ngx_msec_int_t) (rc->retry_at - ngx_current_msec);
        ngx_add_timer(&st->retry, (ngx_msec_t) ngx_max(delay, 1));
        return;
    }

    if (rv != NGX_OK) {
        /* closed: the hook has moved on and set the timer */
        return;
    }

    /* sentinel_password_file=: read again as it changes */

    if (ngx_http_gms_redis_secret_auth(rc, NGX_HTTP_GMS_SECRET_SENTINEL, 0,
                                       ngx_http_gms_sentinel_ok)
        == NGX_ERROR)
    {
        goto failed;
    }

    /*
     * the questions are the connection's setup: unanswered within the
     * timeout (a Sentinel that accepts and says nothing), the next one
     */

    argv[0] = "SENTINEL";
    lens[0] = sizeof("SENTINEL") - 1;
    argv[1] = "get-master-addr-by-name";
    lens[1] = sizeof("get-master-addr-by-name") - 1;
    argv[2] = (const char *) gmcf->redis.master_name.data;
    lens[2] = gmcf->redis.master_name.len;

    if (ngx_http_gms_rconn_setup(rc, 3, argv, lens,
                                 ngx_http_gms_sentinel_master)
        != NGX_OK)
    {
        goto failed;
    }

    if (gmcf->redis.replica) {
        argv[1] = "replicas";
        lens[1] = sizeof("replicas") - 1;

        if (ngx_http_gms_rconn_setup(rc, 3, argv, lens,
                                     ngx_http_gms_sentinel_replicas)
            != NGX_OK)
        {
            goto failed;
        }
    }

    argv[0] = "SUBSCRIBE";
    lens[0] = sizeof("SUBSCRIBE") - 1;
    argv[1] = "+switch-master";
    lens[1] = sizeof("+switch-master") - 1;

    if (ngx_http_gms_rconn_argv(rc, 2, argv, lens,
                                ngx_http_gms_sentinel_message, NULL)
        != NGX_OK)
    {
        goto failed;
    }

    rc->subscribed = 1;

    return;

failed:

    ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "cannot queue the questions");
}


static void
ngx_http_gms_sentinel_ok(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    if (reply == NULL || ngx_http_gms_rconn_says(reply, "OK")) {
        return;
    }

    /* once, with the file read again: the password may have rotated */

    if (ngx_http_gms_redis_secret_refused(rc, NGX_HTTP_GMS_SECRET_SENTINEL,
                                          reply, ngx_http_gms_sentinel_ok))
    {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: sentinel at %V refused AUTH", &rc->peer);

    ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "AUTH refused");
}


/* SENTINEL get-master-addr-by-name: [ip, port], or nil when unknown */

static void
ngx_http_gms_sentinel_master(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    ngx_str_t   ip, port;
    socklen_t       socklen;
    ngx_sockaddr_t  sa;

    if (reply == NULL) {
        return;
    }

    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2
        && reply->element[0]->type == REDIS_REPLY_STRING
        && reply->element[1]->type == REDIS_REPLY_STRING)
    {
        ip.data = (u_char *) reply->element[0]->str;
        ip.len = reply->element[0]->len;
        port.data = (u_char *) reply->element[1]->str;
        port.len = reply->element[1]->len;

        if (ngx_http_gms_sentinel_addr(&ip, &port, &sa, &socklen)
            == NGX_OK)
        {
            ngx_log_debug4(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                           "gms: sentinel at %V: master \"%V\" is at %V:%V",
                           &rc->peer, &rc->gmcf->redis.master_name, &ip, &port);

            ngx_http_gms_sentinel.named = 1;
            ngx_http_gms_sentinel.failed = 0;
            ngx_http_gms_sentinel.dc->master(&sa.sockaddr, socklen);
            return;
        }
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: sentinel at %V %s master \"%V\"", &rc->peer,
                  reply->type == REDIS_REPLY_NIL ? "does not know"
                                                : "gave no usable address for",
                  &rc->gmcf->redis.master_name);

    ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "no master");
}


/*
 * SENTINEL replicas: an array of flat field/value arrays; the first
 * replica whose flags are just "slave" (not s_down, o_down, disconnected)
 * and whose link to the master is up ("master-link-status" ok and
 * "master-link-down-time" 0, as the Sentinel last saw them in INFO) is
 * read from; the edge's own ROLE check decides from then on.
 */

static void
ngx_http_gms_sentinel_replicas(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    size_t                    i, j;
    ngx_str_t                 ip, port;
    socklen_t                 socklen;
    ngx_uint_t                good;
    redisReply               *r, *k, *v;
    ngx_sockaddr_t            sa;
    ngx_http_gms_sentinel_t  *st;

    if (reply == NULL) {
        return;
    }

    st = &ngx_http_gms_sentinel;

    if (reply->type != REDIS_REPLY_ARRAY) {
        goto none;
    }

    for (i = 0; i < reply->elements; i++) {
        r = reply->element[i];

        if (r->type != REDIS_REPLY_ARRAY) {
            continue;
        }

        ngx_str_null(&ip);
        ngx_str_null(&port);
        good = 0;

        for (j = 0; j + 1 < r->elements; j += 2) {
            k = r->element[j];
            v = r->element[j + 1];

            if (k->type != REDIS_REPLY_STRING
                || v->type != REDIS_REPLY_STRING)
            {
                continue;
            }

            if (ngx_http_gms_rconn_says(k, "ip")) {
                ip.data = (u_char *) v->str;
                ip.len = v->len;

            } else if (ngx_http_gms_rconn_says(k, "port")) {
                port.data = (u_char *) v->str;
                port.len = v->len;

            } else if (ngx_http_gms_rconn_says(k, "flags")) {
                good |= ngx_http_gms_rconn_says(v, "slave");

            } else if (ngx_http_gms_rconn_says(k, "master-link-status")) {
                good |= ngx_http_gms_rconn_says(v, "ok") << 1;

            } else if (ngx_http_gms_rconn_says(k, "master-link-down-time")) {
                good |= (!ngx_http_gms_rconn_says(v, "0")) << 2;
            }
        }

        if (good == 3 && ip.len && port.len
            && ngx_http_gms_sentinel_addr(&ip, &port, &sa, &socklen)
               == NGX_OK)
        {
            ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                           "gms: sentinel at %V: a usable replica at %V:%V",
                           &rc->peer, &ip, &port);

            st->dc->replica(&sa.sockaddr, socklen);

            st->again_after = 0;

            if (st->again.timer_set) {
                ngx_del_timer(&st->again);
            }

            return;
        }
    }

none:

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: sentinel at %V: no usable replica", &rc->peer);

    st->dc->replica(NULL, 0);

    if (!st->again.timer_set) {
        st->again_after = st->again_after
                          ? ngx_min(st->again_after * 2,
                                    NGX_HTTP_GMS_REPLICAS_AGAIN_MAX)
                          : NGX_HTTP_GMS_REPLICAS_AGAIN_MIN;

        ngx_add_timer(&st->again, st->again_after);
    }
}


/* an address as a Sentinel gives it: an IP address and a port */

static ngx_int_t
ngx_http_gms_sentinel_addr(ngx_str_t *ip, ngx_str_t *port,
    ngx_sockaddr_t *sa, socklen_t *socklen)
{
    ngx_int_t  n;
    in_addr_t  inaddr;

    n = ngx_atoi(port->data, port->len);

    if (n < 1 || n > 65535 || ip->len == 0) {
        return NGX_ERROR;
    }

    ngx_memzero(sa, sizeof(ngx_sockaddr_t));

    inaddr = ngx_inet_addr(ip->data, ip->len);

    if (inaddr != INADDR_NONE) {
        sa->sockaddr_in.sin_family = AF_INET;
        sa->sockaddr_in.sin_addr.s_addr = inaddr;
        *socklen = sizeof(struct sockaddr_in);

#if (NGX_HAVE_INET6)
    } else if (ngx_inet6_addr(ip->data, ip->len,
                              sa->sockaddr_in6.sin6_addr.s6_addr)
               == NGX_OK)
    {
        sa->sockaddr_in6.sin6_family = AF_INET6;
        *socklen = sizeof(struct sockaddr_in6);
#endif

    } else {
        /* a host name (resolve-hostnames yes): not followed */
        return NGX_ERROR;
    }

    ngx_inet_set_port(&sa->sockaddr, (in_port_t) n);

    return NGX_OK;
}


/*
 * The confirmation of SUBSCRIBE, then the announcements:
 * ["message", "+switch-master", "<name> <old ip> <old port> <ip> <port>"],
 * and PING's ["pong", ""]; a message may come before the pong, and goes
 * to the PING's handler, this one.
 */

static void
ngx_http_gms_sentinel_message(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    u_char          *p, *last, *f[5];
    ngx_str_t        ip, port;
    socklen_t        socklen;
    ngx_uint_t       n;
    redisReply      *payload;
    ngx_sockaddr_t   sa;

    if (reply == NULL) {
        return;
    }

    if (ngx_http_gms_redis_idle_heard(rc, reply)) {
        return;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3
        || reply->element[0]->type != REDIS_REPLY_STRING)
    {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: sentinel at %V: unexpected reply to SUBSCRIBE",
                      &rc->peer);
        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "bad subscription");
        return;
    }

    if (ngx_http_gms_rconn_says(reply->element[0], "subscribe")) {
        ngx_http_gms_redis_idle_watch(rc);

        return;
    }

    payload = reply->element[2];

    if (!ngx_http_gms_rconn_says(reply->element[0], "message")
        || payload->type != REDIS_REPLY_STRING)
    {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: sentinel at %V: unexpected message", &rc->peer);
        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "bad message");
        return;
    }

    /* five fields separated by spaces */

    p = (u_char *) payload->str;
    last = p + payload->len;

    for (n = 0; n < 5 && p < last; n++) {
        f[n] = p;

        while (p < last && *p != ' ') {
            p++;
        }

        p++;
    }

    if (n != 5 || p != last + 1) {
        goto bad;
    }

    if ((size_t) (f[1] - f[0] - 1) != rc->gmcf->redis.master_name.len
        || ngx_strncmp(f[0], rc->gmcf->redis.master_name.data,
                       rc->gmcf->redis.master_name.len)
           != 0)
    {
        /* another master of these Sentinels */
        return;
    }

    ip.data = f[3];
    ip.len = f[4] - f[3] - 1;
    port.data = f[4];
    port.len = last - f[4];

    if (ngx_http_gms_sentinel_addr(&ip, &port, &sa, &socklen) != NGX_OK) {
        goto bad;
    }

    ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                  "gms: sentinel at %V: +switch-master %*s", &rc->peer,
                  payload->len, payload->str);

    ngx_http_gms_sentinel.dc->master(&sa.sockaddr, socklen);

    if (rc->gmcf->redis.replica) {
        /* the old replicas may be gone, or one of them is the master */
        ngx_http_gms_sentinel.again_after = 0;
        ngx_http_gms_sentinel_reopen(&ngx_http_gms_sentinel,
                                     "replicas after +switch-master");
    }

    return;

bad:

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: sentinel at %V: malformed +switch-master",
                  &rc->peer);
}


static void
ngx_http_gms_sentinel_closed(ngx_http_gms_rconn_t *rc)
{
    ngx_msec_t                delay;
    ngx_http_gms_sentinel_t  *st;

    st = &ngx_http_gms_sentinel;

    if (st->exiting) {
        return;
    }

    delay = 1;

    if (st->asking) {
        /* asking again: the same Sentinel, at once */
        st->asking = 0;
        rc->backoff = 0;

    } else {
        st->current = (st->current + 1) % st->gmcf->redis.sentinels->nelts;

        if (ngx_http_gms_rconn_in_backoff(rc)) {
            delay = rc->retry_at - ngx_current_msec;
        }

        if (!st->named && ++st->failed >= st->gmcf->redis.sentinels->nelts) {
            ngx_http_gms_sentinel_gave_up(st);
        }
    }

    if (st->retry.timer_set) {
        ngx_del_timer(&st->retry);
    }

    ngx_add_timer(&st->retry, delay);
}


/* every Sentinel failed in turn, and none has named the master yet */

static void
ngx_http_gms_sentinel_gave_up(ngx_http_gms_sentinel_t *st)
{
    u_char  *p;
    u_char   why[NGX_MAX_ERROR_STR];

    p = ngx_snprintf(why, sizeof(why) - 1,
                     "no Sentinel named master \"%V\" (%ui asked)",
                     &st->gmcf->redis.master_name,
                     st->gmcf->redis.sentinels->nelts);
    *p = '\0';

    st->dc->failed((const char *) why);
}


static void
ngx_http_gms_sentinel_again(ngx_event_t *ev)
{
    ngx_http_gms_sentinel_t *st = ev->data;

    /* closed: the next connection asks anyway */

    if (ngx_http_gms_rconn_open(&st->rc) && !st->exiting) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, ev->log, 0,
                       "gms: sentinel: asking again for replicas");

        ngx_http_gms_sentinel_reopen(st, "no usable replica");
    }
}


/*
 * The idle check of a connection whose peer could go silently (a host
 * down, a firewall's dropped state): found by TCP keepalive hours later,
 * if ever, and until then trusted with lookups, or deaf to what a
 * subscription should hear.  Once the owner starts it, every round: the
 * last round's PING still unanswered, the connection is dropped; quiet
 * since rc->heard for a round, a PING is sent.  The owner says what
 * quiet means (no lookup sent, no reply read) by setting rc->heard; the
 * close stops the check.
 *
 * A subscribed connection answers ["pong", ""], and a message may come
 * before it: PING's answer goes to the owner's push handler, which hands
 * every reply to ngx_http_gms_redis_idle_heard() first.  Any other
 * connection answers +PONG, or an error the owner may know
 * (rc->unavailable).
 */


#include "ngx_http_gms_redis_idle.h"


static void ngx_http_gms_redis_idle_ping(ngx_event_t *ev);
static void ngx_http_gms_redis_idle_pong(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);
static ngx_uint_t ngx_http_gms_redis_idle_pushed_pong(redisReply *r);


void
ngx_http_gms_redis_idle_watch(ngx_http_gms_rconn_t *rc)
{
    rc->ping.handler = ngx_http_gms_redis_idle_ping;
    rc->ping.data = rc;
    rc->ping.log = ngx_cycle->log;
    rc->ping.cancelable = 1;

    if (!rc->ping.timer_set) {
        ngx_add_timer(&rc->ping, NGX_HTTP_GMS_PING_EVERY);
    }
}


static void
ngx_http_gms_redis_idle_ping(ngx_event_t *ev)
{
    ngx_http_gms_rconn_t *rc = ev->data;

    size_t                        lens[1];
    const char                   *argv[1];
    ngx_http_gms_rconn_reply_pt   handler;

    if (rc->ping_pending) {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "no answer to PING");
        return;
    }

    if (ngx_current_msec - rc->heard >= NGX_HTTP_GMS_PING_EVERY) {
        argv[0] = "PING";
        lens[0] = sizeof("PING") - 1;
        handler = rc->subscribed ? rc->push : ngx_http_gms_redis_idle_pong;

        if (ngx_http_gms_rconn_argv(rc, 1, argv, lens, handler, NULL)
            != NGX_OK)
        {
            ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "cannot send PING");
            return;
        }

        rc->ping_pending = 1;
    }

    ngx_add_timer(&rc->ping, NGX_HTTP_GMS_PING_EVERY);
}


static void
ngx_http_gms_redis_idle_pong(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    if (reply == NULL) {
        /* the connection is going: the close says why */
        return;
    }

    rc->ping_pending = 0;

    if (ngx_http_gms_rconn_says(reply, "PONG")) {
        return;
    }

    if (rc->unavailable && rc->unavailable(rc, reply) != NGX_OK) {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis at %V: unexpected answer to PING", &rc->peer);

    ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "bad PONG");
}


/*
 * A reply on a subscribed connection: the peer is there; 1 if the reply
 * is PING's answer, which is then the check's, not the owner's.
 */

ngx_uint_t
ngx_http_gms_redis_idle_heard(ngx_http_gms_rconn_t *rc, redisReply *reply)
{
    rc->heard = ngx_current_msec;

    if (!ngx_http_gms_redis_idle_pushed_pong(reply)) {
        return 0;
    }

    rc->ping_pending = 0;

    return 1;
}


/*
 * PING's answer on a subscribed RESP2 connection, Redis's or a Sentinel's:
 * ["pong", ""] (pingCommand() in redis/redis src/server.c)
 */

static ngx_uint_t
ngx_http_gms_redis_idle_pushed_pong(redisReply *r)
{
    return r->type == REDIS_REPLY_ARRAY && r->elements == 2
           && ngx_http_gms_rconn_says(r->element[0], "pong");
}


/*
 * A Redis connection on nginx's own machinery.
 *
 * hiredis's async adapter cannot do what production Redis needs: bookworm's
 * hiredis 0.14 has no TLS, resolves names with a blocking getaddrinfo(),
 * and aborts the process on a reply it did not ask for.  So nginx owns
 * the connection (ngx_event_connect_peer(), its resolver, its SSL) and
 * hiredis does only what it is good at: redisFormatCommandArgv() writes
 * commands and a redisReader parses replies, behind caps on what a reply
 * may make it allocate.  Replies are matched to a queue of the commands
 * sent; one that matches nothing is a protocol error, and the connection
 * is dropped, never trusted again.
 *
 * A connection goes RESOLVING (a host name) -> CONNECTING -> HANDSHAKE
 * (TLS) -> SETUP (connected; the owner's setup commands, AUTH and the
 * like, are answered) -> READY.  Commands may be sent in any state but
 * CLOSED: they wait in the output buffer and go in order.  Every close
 * answers each pending command with an error and starts a short, growing,
 * jittered backoff in which connecting again is refused.
 *
 * A setup command may be a gate (the AUTH of a password read from a
 * file): what follows it waits in the buffer until it is answered, so
 * that its handler can put a second AUTH first, with the file read again,
 * before anything else has been refused with -NOAUTH.  With max_age= a
 * READY connection older than that (less up to a tenth, so that a
 * worker's connections, and the workers', do not go together) is closed
 * once nothing is pending on it, without the backoff: the owner connects
 * again as after any close, and what it sends meanwhile waits for the
 * new connection's setup, never for a failure.
 */


#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_redis_tls.h"
#include "ngx_http_gms_redis_reply.h"
#include "ngx_http_gms_metrics.h"


#define NGX_HTTP_GMS_BACKOFF_MIN   50
#define NGX_HTTP_GMS_BACKOFF_MAX   1000

/*
 * Unparsed input a connection may hold: a bulk string announced as 2 GB
 * is refused once 1 MB of it has come (what a reply may make hiredis
 * allocate is capped in ngx_http_gms_redis_reply.c).
 */
#define NGX_HTTP_GMS_REPLY_BUFFER_MAX    (1024 * 1024)

/* unsent commands a connection may hold (while connecting, say) */
#define NGX_HTTP_GMS_OUT_MAX             (4 * 1024 * 1024)


typedef struct {
    ngx_queue_t                    queue;
    ngx_http_gms_rconn_reply_pt    handler;
    void                          *data;
    ngx_uint_t                     setup;          /* 1: a setup command */
    ngx_uint_t                     gate;           /* 1: the rest waits */
} ngx_http_gms_rcmd_t;


static ngx_int_t ngx_http_gms_rconn_resolve(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_rconn_resolved(ngx_resolver_ctx_t *ctx);
static ngx_int_t ngx_http_gms_rconn_peer(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_rconn_connected(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_rconn_established(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_rconn_up(ngx_http_gms_rconn_t *rc);
#if (NGX_SSL)
static void ngx_http_gms_rconn_handshake(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_rconn_handshaked(ngx_connection_t *c);
#endif
static ngx_int_t ngx_http_gms_rconn_format(ngx_http_gms_rconn_t *rc,
    int argc, const char **argv, const size_t *lens,
    ngx_http_gms_rconn_reply_pt handler, void *data, ngx_uint_t setup);
static ngx_int_t ngx_http_gms_rconn_queue(ngx_http_gms_rconn_t *rc,
    u_char *cmd, size_t len, ngx_http_gms_rconn_reply_pt handler,
    void *data, ngx_uint_t setup);
static ngx_int_t ngx_http_gms_rconn_room(ngx_http_gms_rconn_t *rc,
    size_t len);
static ngx_http_gms_rcmd_t *ngx_http_gms_rconn_rcmd(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_rconn_reply_pt handler, void *data, ngx_uint_t setup);
static void ngx_http_gms_rconn_sent(ngx_http_gms_rconn_t *rc, size_t n);
static void ngx_http_gms_rconn_aged(ngx_event_t *ev);
static void ngx_http_gms_rconn_recycle(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_rconn_flush(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_rconn_read_handler(ngx_event_t *ev);
static void ngx_http_gms_rconn_write_handler(ngx_event_t *ev);
static ngx_int_t ngx_http_gms_rconn_dispatch(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_rconn_timeout(ngx_event_t *ev);


void
ngx_http_gms_rconn_init(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_main_conf_t *gmcf, const char *what,
    ngx_http_gms_target_e target)
{
    ngx_memzero(rc, sizeof(ngx_http_gms_rconn_t));

    rc->gmcf = gmcf;
    rc->what = what;
    rc->target = target;
    rc->builders = &ngx_http_gms_reply_capped;

    ngx_queue_init(&rc->pending);
    ngx_queue_init(&rc->free);

    rc->timer.handler = ngx_http_gms_rconn_timeout;
    rc->timer.data = rc;
    rc->timer.log = ngx_cycle->log;

    rc->age.handler = ngx_http_gms_rconn_aged;
    rc->age.data = rc;
    rc->age.log = ngx_cycle->log;
    rc->age.cancelable = 1;

    ngx_str_set(&rc->peer, "(none)");
}


/* the address a Sentinel named, for the next connect */

void
ngx_http_gms_rconn_set_peer(ngx_http_gms_rconn_t *rc, struct sockaddr *sa,
    socklen_t socklen)
{
    ngx_memcpy(&rc->sockaddr, sa, socklen);
    rc->socklen = socklen;

    rc->peer.data = rc->peer_text;
    rc->peer.len = ngx_sock_ntop(sa, socklen, rc->peer_text,
                                 NGX_SOCKADDR_STRLEN, 1);
}


/* whether the connection is already set for that address */

ngx_uint_t
ngx_http_gms_rconn_is_peer(ngx_http_gms_rconn_t *rc, struct sockaddr *sa,
    socklen_t socklen)
{
    return rc->socklen
           && ngx_cmp_sockaddr(sa, socklen, &rc->sockaddr.sockaddr,
                               rc->socklen, 1)
              == NGX_OK;
}


ngx_int_t
ngx_http_gms_rconn_in_backoff(ngx_http_gms_rconn_t *rc)
{
    return rc->backoff
           && (ngx_msec_int_t) (rc->retry_at - ngx_current_msec) > 0;
}


/*
 * NGX_OK: under way (commands may be sent now); NGX_DECLINED: in backoff,
 * or nowhere to connect to; NGX_ERROR: failed at once (logged).
 */

ngx_int_t
ngx_http_gms_rconn_connect(ngx_http_gms_rconn_t *rc)
{
    if (rc->state != NGX_HTTP_GMS_RCONN_CLOSED) {
        return NGX_OK;
    }

    if (ngx_http_gms_rconn_in_backoff(rc)) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: redis %s connection to %V: in backoff",
                       rc->what, &rc->peer);
        return NGX_DECLINED;
    }

    if (rc->addr == NULL && rc->socklen == 0) {
        return NGX_DECLINED;
    }

    if (rc->reader == NULL) {
        rc->reader = redisReaderCreate();
        if (rc->reader == NULL) {
            return NGX_ERROR;
        }

        rc->reader->fn = rc->builders;
        rc->reader->privdata = rc;           /* the builders' task->privdata */
    }

    rc->setup = 0;
    rc->subscribed = 0;
    rc->gated = 0;
    rc->auth_retried = 0;
    rc->aged = 0;

    ngx_add_timer(&rc->timer, rc->gmcf->redis.timeout);

    if (rc->addr && rc->addr->addrs == NULL) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: redis %s connection: resolving %V", rc->what,
                       &rc->addr->name);

        rc->state = NGX_HTTP_GMS_RCONN_RESOLVING;
        return ngx_http_gms_rconn_resolve(rc);
    }

    if (rc->addr) {
        /* a literal address (or a unix socket), parsed at configuration */
        ngx_memcpy(&rc->sockaddr, rc->addr->addrs[0].sockaddr,
                   rc->addr->addrs[0].socklen);
        rc->socklen = rc->addr->addrs[0].socklen;
        rc->peer = rc->addr->name;
    }

    rc->state = NGX_HTTP_GMS_RCONN_CONNECTING;

    return ngx_http_gms_rconn_peer(rc);
}


/* a host name, asked anew on every connect: a moved endpoint is followed */

static ngx_int_t
ngx_http_gms_rconn_resolve(ngx_http_gms_rconn_t *rc)
{
    ngx_resolver_ctx_t        *ctx;
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = rc->gmcf;

    ctx = ngx_resolve_start(gmcf->redis.resolver, NULL);
    if (ctx == NULL || ctx == NGX_NO_RESOLVER) {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "cannot start resolving");
        return NGX_ERROR;
    }

    ctx->name = rc->addr->host;
    ctx->handler = ngx_http_gms_rconn_resolved;
    ctx->data = rc;
    ctx->timeout = gmcf->redis.resolver_timeout;

    rc->resolving = ctx;

    if (ngx_resolve_name(ctx) != NGX_OK) {
        rc->resolving = NULL;
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "cannot resolve");
        return NGX_ERROR;
    }

    /* the handler may have run already, from the resolver's cache */

    return rc->state == NGX_HTTP_GMS_RCONN_CLOSED ? NGX_ERROR : NGX_OK;
}


static void
ngx_http_gms_rconn_resolved(ngx_resolver_ctx_t *ctx)
{
    ngx_http_gms_rconn_t *rc = ctx->data;

    ngx_resolver_addr_t  *ra;

    rc->resolving = NULL;

    if (ctx->state || ctx->naddrs == 0) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis %s: \"%V\" could not be resolved (%i: %s)",
                      rc->what, &ctx->name, ctx->state,
                      ngx_resolver_strerror(ctx->state));
        ngx_resolve_name_done(ctx);
        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "not resolved");
        return;
    }

    /* the resolver rotates the addresses of its answers: the first */

    ra = &ctx->addrs[0];

    ngx_memcpy(&rc->sockaddr, ra->sockaddr, ra->socklen);
    rc->socklen = ra->socklen;
    ngx_inet_set_port(&rc->sockaddr.sockaddr, rc->addr->port);

    rc->peer = rc->addr->name;

#if (NGX_DEBUG)
    {
    size_t  len;
    u_char  text[NGX_SOCKADDR_STRLEN];

    len = ngx_sock_ntop(&rc->sockaddr.sockaddr, rc->socklen, text,
                        NGX_SOCKADDR_STRLEN, 1);

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis %s connection: %V resolved to %*s", rc->what,
                   &rc->addr->name, len, text);
    }
#endif

    ngx_resolve_name_done(ctx);

    rc->state = NGX_HTTP_GMS_RCONN_CONNECTING;

    (void) ngx_http_gms_rconn_peer(rc);
}


static ngx_int_t
ngx_http_gms_rconn_peer(ngx_http_gms_rconn_t *rc)
{
    int                     on;
    ngx_int_t               rv;
    ngx_connection_t       *c;
    ngx_peer_connection_t   pc;

    ngx_memzero(&pc, sizeof(ngx_peer_connection_t));

    pc.sockaddr = &rc->sockaddr.sockaddr;
    pc.socklen = rc->socklen;
    pc.name = &rc->peer;
    pc.get = ngx_event_get_peer;
    pc.log = ngx_cycle->log;
    pc.log_error = NGX_ERROR_ERR;

    rv = ngx_event_connect_peer(&pc);

    if (rv == NGX_ERROR || rv == NGX_BUSY || rv == NGX_DECLINED) {
        if (pc.connection) {
            ngx_close_connection(pc.connection);
        }

        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "connect failed");
        return NGX_ERROR;
    }

    c = pc.connection;
    rc->connection = c;

    c->data = rc;
    c->read->handler = ngx_http_gms_rconn_read_handler;
    c->write->handler = ngx_http_gms_rconn_write_handler;

    c->pool = ngx_create_pool(512, ngx_cycle->log);
    if (c->pool == NULL) {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "out of memory");
        return NGX_ERROR;
    }

    if (rc->keepalive) {
        /* a connection that mostly listens: the kernel checks it too */
        on = 1;
        (void) setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE,
                          (const void *) &on, sizeof(int));
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis %s connecting to %V", rc->what, &rc->peer);

    if (rv == NGX_OK) {
        ngx_http_gms_rconn_connected(rc);
    }

    /* NGX_AGAIN: the write handler sees the connect through */

    return rc->state == NGX_HTTP_GMS_RCONN_CLOSED ? NGX_ERROR : NGX_OK;
}


static void
ngx_http_gms_rconn_connected(ngx_http_gms_rconn_t *rc)
{
#if (NGX_SSL)
    if (rc->tls) {
        rc->state = NGX_HTTP_GMS_RCONN_HANDSHAKE;
        ngx_http_gms_rconn_handshake(rc);
        return;
    }
#endif

    ngx_http_gms_rconn_established(rc);
}


/* the transport is up: the setup commands go, or it is ready at once */

static void
ngx_http_gms_rconn_established(ngx_http_gms_rconn_t *rc)
{
    ngx_connection_t  *c;

    c = rc->connection;
    rc->state = NGX_HTTP_GMS_RCONN_SETUP;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis %s connection to %V: connected, %ui setup "
                   "commands", rc->what, &rc->peer, rc->setup);

    if (rc->setup == 0) {
        ngx_http_gms_rconn_up(rc);

        if (rc->state == NGX_HTTP_GMS_RCONN_CLOSED) {
            return;
        }
    }

    ngx_http_gms_rconn_flush(rc);

    /* a reply may have come with the end of a handshake */

    if (rc->state != NGX_HTTP_GMS_RCONN_CLOSED && c->read->ready) {
        ngx_post_event(c->read, &ngx_posted_events);
    }
}


static void
ngx_http_gms_rconn_up(ngx_http_gms_rconn_t *rc)
{
    ngx_msec_t  max_age;

    rc->state = NGX_HTTP_GMS_RCONN_READY;
    rc->backoff = 0;

    max_age = rc->gmcf->redis.max_age;

    if (max_age) {
        max_age -= (ngx_msec_t) ngx_random() % (max_age / 10 + 1);
        ngx_add_timer(&rc->age, max_age);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis %s connection to %V ready", rc->what,
                   &rc->peer);

    if (rc->timer.timer_set) {
        ngx_del_timer(&rc->timer);
    }

    ngx_http_gms_count(connected[rc->target]);
    ngx_http_gms_metrics_node(rc->node, &rc->peer, 1);

    if (rc->ready) {
        rc->ready(rc);
    }
}


#if (NGX_SSL)

static void
ngx_http_gms_rconn_handshake(ngx_http_gms_rconn_t *rc)
{
    const char  *reason;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis %s connection to %V: TLS handshake",
                   rc->what, &rc->peer);

    switch (ngx_http_gms_redis_tls_handshake(rc,
                                             ngx_http_gms_rconn_handshaked,
                                             &reason))
    {
    case NGX_AGAIN:
        return;

    case NGX_ERROR:
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, reason);
        return;

    default:
        ngx_http_gms_rconn_handshaked(rc->connection);
    }
}


static void
ngx_http_gms_rconn_handshaked(ngx_connection_t *c)
{
    ngx_http_gms_rconn_t *rc = c->data;

    switch (ngx_http_gms_redis_tls_verify(rc)) {

    case NGX_DECLINED:
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "TLS handshake failed");
        return;

    case NGX_ERROR:
        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "bad certificate");
        return;

    default:
        break;
    }

    c->read->handler = ngx_http_gms_rconn_read_handler;
    c->write->handler = ngx_http_gms_rconn_write_handler;

    ngx_http_gms_rconn_established(rc);
}

#endif


ngx_int_t
ngx_http_gms_rconn_send(ngx_http_gms_rconn_t *rc, u_char *cmd, size_t len,
    ngx_http_gms_rconn_reply_pt handler, void *data)
{
    return ngx_http_gms_rconn_queue(rc, cmd, len, handler, data, 0);
}


ngx_int_t
ngx_http_gms_rconn_argv(ngx_http_gms_rconn_t *rc, int argc,
    const char **argv, const size_t *lens,
    ngx_http_gms_rconn_reply_pt handler, void *data)
{
    return ngx_http_gms_rconn_format(rc, argc, argv, lens, handler, data, 0);
}


/*
 * A setup command: sent first, before anything else queued; the
 * connection is READY once every setup command is answered (a handler
 * that does not like its reply closes the connection).
 */

ngx_int_t
ngx_http_gms_rconn_setup(ngx_http_gms_rconn_t *rc, int argc,
    const char **argv, const size_t *lens,
    ngx_http_gms_rconn_reply_pt handler)
{
    if (ngx_http_gms_rconn_format(rc, argc, argv, lens, handler, NULL, 1)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    rc->setup++;

    return NGX_OK;
}


/*
 * A setup command that goes before everything unsent, and holds it back
 * until answered: AUTH, first on a new connection, or again from its
 * handler.  The formatted command, which holds a password, is wiped.
 */

ngx_int_t
ngx_http_gms_rconn_setup_first(ngx_http_gms_rconn_t *rc, int argc,
    const char **argv, const size_t *lens,
    ngx_http_gms_rconn_reply_pt handler)
{
    int                   len;
    char                 *cmd;
    size_t                unsent;
    ngx_http_gms_rcmd_t  *rcmd;

    if (rc->state == NGX_HTTP_GMS_RCONN_CLOSED) {
        return NGX_ERROR;
    }

    len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0) {
        return NGX_ERROR;
    }

    if (ngx_http_gms_rconn_room(rc, len) != NGX_OK) {
        goto failed;
    }

    rcmd = ngx_http_gms_rconn_rcmd(rc, handler, NULL, 1);
    if (rcmd == NULL) {
        goto failed;
    }

    /*
     * on a new connection, or from the gate's own handler: whatever was
     * sent is answered, so the next reply is this command's
     */

    ngx_queue_remove(&rcmd->queue);
    ngx_queue_insert_head(&rc->pending, &rcmd->queue);
    rcmd->gate = 1;

    unsent = rc->out_len - rc->out_pos;

    ngx_memmove(rc->out + rc->out_pos + len, rc->out + rc->out_pos, unsent);
    ngx_memcpy(rc->out + rc->out_pos, cmd, len);
    rc->out_len += len;

    rc->gate = rc->out_pos + len;
    rc->gated = 1;
    rc->setup++;

    ngx_explicit_memzero(cmd, len);
    free(cmd);

    if ((rc->state == NGX_HTTP_GMS_RCONN_SETUP
         || rc->state == NGX_HTTP_GMS_RCONN_READY)
        && !rc->connection->write->posted)
    {
        ngx_post_event(rc->connection->write, &ngx_posted_events);
    }

    return NGX_OK;

failed:

    ngx_explicit_memzero(cmd, len);
    free(cmd);

    return NGX_ERROR;
}


static ngx_int_t
ngx_http_gms_rconn_format(ngx_http_gms_rconn_t *rc, int argc,
    const char **argv, const size_t *lens,
    ngx_http_gms_rconn_reply_pt handler, void *data, ngx_uint_t setup)
{
    int        len;
    char      *cmd;
    ngx_int_t  rv;

    len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0) {
        return NGX_ERROR;
    }

    rv = ngx_http_gms_rconn_queue(rc, (u_char *) cmd, len, handler, data,
                                  setup);

    free(cmd);

    return rv;
}


static ngx_int_t
ngx_http_gms_rconn_queue(ngx_http_gms_rconn_t *rc, u_char *cmd, size_t len,
    ngx_http_gms_rconn_reply_pt handler, void *data, ngx_uint_t setup)
{
    if (rc->state == NGX_HTTP_GMS_RCONN_CLOSED) {
        return NGX_ERROR;
    }

    if (ngx_http_gms_rconn_room(rc, len) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_gms_rconn_rcmd(rc, handler, data, setup) == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(rc->out + rc->out_len, cmd, len);
    rc->out_len += len;

    /*
     * Sent from a posted event, never from here: the commands of one
     * event loop turn go in one write, and a failure to send answers the
     * handler later, never before the caller has its NGX_OK.
     */

    if ((rc->state == NGX_HTTP_GMS_RCONN_SETUP
         || rc->state == NGX_HTTP_GMS_RCONN_READY)
        && !rc->connection->write->posted)
    {
        ngx_post_event(rc->connection->write, &ngx_posted_events);
    }

    return NGX_OK;
}


/* room for len more bytes in the output buffer */

static ngx_int_t
ngx_http_gms_rconn_room(ngx_http_gms_rconn_t *rc, size_t len)
{
    u_char  *out;
    size_t   size;

    if (rc->out_len + len <= rc->out_size) {
        return NGX_OK;
    }

    if (rc->out_pos) {
        ngx_memmove(rc->out, rc->out + rc->out_pos,
                    rc->out_len - rc->out_pos);
        rc->out_len -= rc->out_pos;
        ngx_http_gms_rconn_sent(rc, rc->out_pos);
    }

    if (rc->out_len + len <= rc->out_size) {
        return NGX_OK;
    }

    size = ngx_max(rc->out_size * 2, rc->out_len + len);
    size = ngx_max(size, 4096);

    if (size > NGX_HTTP_GMS_OUT_MAX) {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR,
                                 "too many commands waiting");
        return NGX_ERROR;
    }

    out = ngx_alloc(size, ngx_cycle->log);
    if (out == NULL) {
        return NGX_ERROR;
    }

    if (rc->out) {
        ngx_memcpy(out, rc->out, rc->out_len);
        ngx_free(rc->out);
    }

    rc->out = out;
    rc->out_size = size;

    return NGX_OK;
}


/* the first n bytes of the buffer are gone: the gate moves with the rest */

static void
ngx_http_gms_rconn_sent(ngx_http_gms_rconn_t *rc, size_t n)
{
    rc->out_pos -= n;

    if (rc->gated) {
        rc->gate -= n;
    }
}


/* a pending command, at the tail of the queue */

static ngx_http_gms_rcmd_t *
ngx_http_gms_rconn_rcmd(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_rconn_reply_pt handler, void *data, ngx_uint_t setup)
{
    ngx_queue_t          *q;
    ngx_http_gms_rcmd_t  *rcmd;

    if (!ngx_queue_empty(&rc->free)) {
        q = ngx_queue_head(&rc->free);
        ngx_queue_remove(q);
        rcmd = ngx_queue_data(q, ngx_http_gms_rcmd_t, queue);

    } else {
        rcmd = ngx_alloc(sizeof(ngx_http_gms_rcmd_t), ngx_cycle->log);
        if (rcmd == NULL) {
            return NULL;
        }
    }

    rcmd->handler = handler;
    rcmd->data = data;
    rcmd->setup = setup;
    rcmd->gate = 0;

    ngx_queue_insert_tail(&rc->pending, &rcmd->queue);

    return rcmd;
}


static void
ngx_http_gms_rconn_flush(ngx_http_gms_rconn_t *rc)
{
    size_t             end;
    ssize_t            n;
    ngx_connection_t  *c;

    c = rc->connection;

    /* a gate's command answered, what waits behind it goes */
    end = rc->gated ? rc->gate : rc->out_len;

    while (rc->out_pos < end) {

        /* tried whether ready or not: NGX_AGAIN says to wait */

#if (NGX_SSL)
        n = c->ssl ? ngx_http_gms_redis_tls_send(c, rc->out + rc->out_pos,
                                                 end - rc->out_pos)
                   : c->send(c, rc->out + rc->out_pos, end - rc->out_pos);
#else
        n = c->send(c, rc->out + rc->out_pos, end - rc->out_pos);
#endif

        if (n == NGX_AGAIN) {
            break;
        }

        if (n == NGX_ERROR || n == 0) {
            ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "send failed");
            return;
        }

        rc->out_pos += n;
    }

    if (rc->out_pos == rc->out_len) {
        rc->out_len = 0;
        ngx_http_gms_rconn_sent(rc, rc->out_pos);
    }

    if (ngx_handle_write_event(c->write, 0) != NGX_OK) {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "write event failed");
    }
}


static void
ngx_http_gms_rconn_write_handler(ngx_event_t *ev)
{
    ngx_connection_t *c = ev->data;

    int                    err;
    socklen_t              len;
    ngx_http_gms_rconn_t  *rc;

    rc = c->data;

    if (rc->state == NGX_HTTP_GMS_RCONN_CONNECTING) {
        err = 0;
        len = sizeof(int);

        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, (void *) &err, &len)
            == -1)
        {
            err = ngx_socket_errno;
        }

        if (err) {
            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, err,
                          "gms: redis %s connect to %V failed", rc->what,
                          &rc->peer);
            ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "connect failed");
            return;
        }

        ngx_http_gms_rconn_connected(rc);
        return;
    }

    if (rc->state == NGX_HTTP_GMS_RCONN_SETUP
        || rc->state == NGX_HTTP_GMS_RCONN_READY)
    {
        ngx_http_gms_rconn_flush(rc);
    }
}


static void
ngx_http_gms_rconn_read_handler(ngx_event_t *ev)
{
    ngx_connection_t *c = ev->data;

    ssize_t                n;
    ngx_http_gms_rconn_t  *rc;
    u_char                 buf[16384];

    rc = c->data;

    if (rc->state == NGX_HTTP_GMS_RCONN_CONNECTING
        || rc->state == NGX_HTTP_GMS_RCONN_HANDSHAKE)
    {
        /* the write handler and the handshake see to these */
        return;
    }

    for ( ;; ) {
#if (NGX_SSL)
        n = c->ssl ? ngx_http_gms_redis_tls_recv(c, buf, sizeof(buf))
                   : c->recv(c, buf, sizeof(buf));
#else
        n = c->recv(c, buf, sizeof(buf));
#endif

        if (n == NGX_AGAIN) {
            break;
        }

        if (n == 0) {
            ngx_http_gms_rconn_close(rc, NGX_LOG_ERR,
                                     "connection closed by redis");
            return;
        }

        if (n == NGX_ERROR) {
            ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "read failed");
            return;
        }

        if (redisReaderFeed(rc->reader, (const char *) buf, n) != REDIS_OK) {
            ngx_http_gms_rconn_protocol_error(rc, "reader failed");
            return;
        }

        /* not NGX_OK: the connection was closed while replies were read */

        if (ngx_http_gms_rconn_dispatch(rc) != NGX_OK) {
            return;
        }

        if (rc->reader->len - rc->reader->pos
            > NGX_HTTP_GMS_REPLY_BUFFER_MAX)
        {
            ngx_http_gms_rconn_protocol_error(rc, "a reply larger than 1 MB");
            return;
        }

        /*
         * Read until the connection says there is no more, not until a
         * read says so: a short read (with EPOLLRDHUP), or TLS's read
         * that found the socket empty, has cleared ready, and whatever
         * comes next is a new event.  Otherwise (a full buffer, or an
         * event method that cannot tell) the loop reads again.  Over TLS
         * this spares each reply a second ngx_ssl_recv(), that is, an
         * SSL_read() that finds nothing and the error queue's clearing.
         */

        if (!c->read->ready) {
            break;
        }
    }

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "read event failed");
    }
}


/* each complete reply to the command it answers, in order */

static ngx_int_t
ngx_http_gms_rconn_dispatch(ngx_http_gms_rconn_t *rc)
{
    void                         *reply, *data;
    ngx_uint_t                    generation, setup, gate;
    ngx_queue_t                  *q;
    ngx_http_gms_rcmd_t          *rcmd;
    ngx_http_gms_rconn_reply_pt   handler;

    generation = rc->generation;

    for ( ;; ) {
        reply = NULL;

        if (redisReaderGetReply(rc->reader, &reply) != REDIS_OK) {
            ngx_http_gms_rconn_protocol_error(rc,
                                      rc->reader->err == REDIS_ERR_OOM
                                      ? "a reply over the module's limits"
                                      : rc->reader->errstr);
            return NGX_ERROR;
        }

        if (reply == NULL) {
            return NGX_OK;
        }

        if (ngx_queue_empty(&rc->pending)) {

            if (!rc->subscribed || rc->push == NULL) {
                ngx_http_gms_redis_reply_done(rc);
                ngx_http_gms_rconn_protocol_error(rc,
                                              "a reply nothing asked for");
                return NGX_ERROR;
            }

            rc->push(rc, rc->data, reply, NULL);
            ngx_http_gms_redis_reply_done(rc);

        } else {
            q = ngx_queue_head(&rc->pending);
            ngx_queue_remove(q);

            rcmd = ngx_queue_data(q, ngx_http_gms_rcmd_t, queue);
            handler = rcmd->handler;
            data = rcmd->data;
            setup = rcmd->setup;
            gate = rcmd->gate;

            ngx_queue_insert_head(&rc->free, q);

            if (gate) {
                /* the handler may put another gate first */
                rc->gated = 0;
            }

            handler(rc, data, reply, NULL);
            ngx_http_gms_redis_reply_done(rc);

            if (rc->generation != generation) {
                return NGX_ERROR;
            }

            if (gate && !rc->connection->write->posted) {
                ngx_post_event(rc->connection->write, &ngx_posted_events);
            }

            if (setup && --rc->setup == 0
                && rc->state == NGX_HTTP_GMS_RCONN_SETUP)
            {
                ngx_http_gms_rconn_up(rc);
            }
        }

        if (rc->generation != generation) {
            return NGX_ERROR;
        }

        if (rc->aged && ngx_queue_empty(&rc->pending)) {
            ngx_http_gms_rconn_recycle(rc);
            return NGX_ERROR;
        }
    }
}


void
ngx_http_gms_rconn_protocol_error(ngx_http_gms_rconn_t *rc,
    const char *what)
{
    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis protocol error on the %s connection to %V: "
                  "%s", rc->what, &rc->peer, what);

    ngx_http_gms_count(protocol_errors);

    ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "protocol error");
}


static void
ngx_http_gms_rconn_timeout(ngx_event_t *ev)
{
    ngx_http_gms_rconn_t *rc = ev->data;

    ngx_http_gms_rconn_close(rc, NGX_LOG_ERR,
                             rc->state == NGX_HTTP_GMS_RCONN_RESOLVING
                             ? "resolving timed out"
                             : rc->state == NGX_HTTP_GMS_RCONN_SETUP
                               ? "setup unanswered in time"
                               : "connect timed out");
}


/*
 * Close, answer every pending command with the reason, start the backoff
 * and tell the owner.  Safe to call from any handler, and when closed.
 */

void
ngx_http_gms_rconn_close(ngx_http_gms_rconn_t *rc, ngx_uint_t level,
    const char *reason)
{
    void                         *data;
    ngx_pool_t                   *pool;
    ngx_queue_t                   pending, *q;
    ngx_connection_t             *c;
    ngx_http_gms_rcmd_t          *rcmd;
    ngx_http_gms_rconn_reply_pt   handler;

    if (rc->state == NGX_HTTP_GMS_RCONN_CLOSED) {
        return;
    }

    if (level != NGX_LOG_DEBUG) {
        ngx_log_error(level, ngx_cycle->log, 0,
                      "gms: closing the redis %s connection to %V: %s",
                      rc->what, &rc->peer, reason);

    } else {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: closing the redis %s connection to %V: %s",
                       rc->what, &rc->peer, reason);
    }

    rc->was_ready = (rc->state == NGX_HTTP_GMS_RCONN_READY);

    if (rc->was_ready) {
        ngx_http_gms_count_down(connected[rc->target]);
    }

    ngx_http_gms_metrics_node(rc->node, &rc->peer, 0);

    rc->state = NGX_HTTP_GMS_RCONN_CLOSED;
    rc->generation++;
    rc->setup = 0;
    rc->subscribed = 0;
    rc->ping_pending = 0;
    rc->gated = 0;
    rc->aged = 0;

    if (rc->ping.timer_set) {
        ngx_del_timer(&rc->ping);
    }

    if (rc->age.timer_set) {
        ngx_del_timer(&rc->age);
    }

    if (rc->resolving) {
        ngx_resolve_name_done(rc->resolving);
        rc->resolving = NULL;
    }

    if (rc->timer.timer_set) {
        ngx_del_timer(&rc->timer);
    }

    c = rc->connection;

    if (c) {
        rc->connection = NULL;
        pool = c->pool;

#if (NGX_SSL)
        if (c->ssl) {
            c->ssl->no_wait_shutdown = 1;
            c->ssl->no_send_shutdown = 1;
            (void) ngx_ssl_shutdown(c);
        }
#endif

        ngx_close_connection(c);

        if (pool) {
            ngx_destroy_pool(pool);
        }
    }

    if (rc->reader) {
        redisReaderFree(rc->reader);
        rc->reader = NULL;
    }

    rc->out_pos = 0;
    rc->out_len = 0;

    if (rc->recycling) {
        /* no failure: the owner may connect again at once */
        rc->backoff = 0;

    } else {
        ngx_http_gms_rconn_failed(rc);
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis %s connection to %V closed, backoff %M ms",
                   rc->what, &rc->peer, rc->backoff);

    /* the handlers may connect again: they see a fresh queue */

    ngx_queue_init(&pending);

    if (!ngx_queue_empty(&rc->pending)) {
        pending = rc->pending;
        pending.next->prev = &pending;
        pending.prev->next = &pending;
        ngx_queue_init(&rc->pending);
    }

    while (!ngx_queue_empty(&pending)) {
        q = ngx_queue_head(&pending);
        ngx_queue_remove(q);

        rcmd = ngx_queue_data(q, ngx_http_gms_rcmd_t, queue);
        handler = rcmd->handler;
        data = rcmd->data;

        ngx_queue_insert_head(&rc->free, q);

        handler(rc, data, NULL, reason);
    }

    /* rc->recycling tells the owner the close was max_age's, no failure */

    if (rc->closed) {
        rc->closed(rc);
    }

    rc->recycling = 0;
}


void
ngx_http_gms_rconn_failed(ngx_http_gms_rconn_t *rc)
{
    ngx_msec_t  jitter;

    if (rc->backoff == 0) {
        rc->backoff = NGX_HTTP_GMS_BACKOFF_MIN;

    } else {
        rc->backoff = ngx_min(rc->backoff * 2, NGX_HTTP_GMS_BACKOFF_MAX);
    }

    /* between half and all of the backoff: workers do not retry in step */
    jitter = (ngx_msec_t) ngx_random() % (rc->backoff / 2 + 1);
    rc->retry_at = ngx_current_msec + rc->backoff / 2 + jitter;
}


/* a status or string reply that says exactly s ("OK", "PONG", "master") */

ngx_uint_t
ngx_http_gms_rconn_says(redisReply *r, const char *s)
{
    size_t  len;

    len = ngx_strlen(s);

    return (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
           && r->len == len && ngx_strncmp(r->str, s, len) == 0;
}


/*
 * max_age reached: the connection goes once nothing is pending on it, at
 * once if it is idle, else after the reply that leaves it so.
 */

static void
ngx_http_gms_rconn_aged(ngx_event_t *ev)
{
    ngx_http_gms_rconn_t *rc = ev->data;

    rc->aged = 1;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis %s connection to %V: max_age reached",
                   rc->what, &rc->peer);

    if (ngx_queue_empty(&rc->pending)) {
        ngx_http_gms_rconn_recycle(rc);
    }
}


static void
ngx_http_gms_rconn_recycle(ngx_http_gms_rconn_t *rc)
{
    ngx_http_gms_count(recycled);

    rc->recycling = 1;
    ngx_http_gms_rconn_close(rc, NGX_LOG_INFO, "recycled at max_age");
}


/*
 * One connection to a Redis server (or a Sentinel), nginx's own: a peer
 * connection, resolved by nginx's resolver, optionally over nginx's SSL,
 * with a queue of the commands sent and hiredis's reader for the replies.
 */


#ifndef _NGX_HTTP_GMS_REDIS_CONN_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_CONN_H_INCLUDED_


#include "ngx_http_gms_module.h"

#include <hiredis/hiredis.h>


/* an idle connection is PINGed this often, so a dead one is noticed */
#define NGX_HTTP_GMS_PING_EVERY  10000


typedef struct ngx_http_gms_rconn_s  ngx_http_gms_rconn_t;
typedef struct ngx_http_gms_arena_block_s  ngx_http_gms_arena_block_t;


/*
 * A command's reply (freed on return: no pointer into it may be kept), or
 * NULL and why the connection
 * went before it came.  A handler may send commands or close the
 * connection.
 */
typedef void (*ngx_http_gms_rconn_reply_pt)(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);

/* the owner's hooks: a connection is up (setup answered), or has gone */
typedef void (*ngx_http_gms_rconn_event_pt)(ngx_http_gms_rconn_t *rc);

/*
 * The owner's look at an error reply where an answer was due (-LOADING
 * and the like): NGX_DECLINED once it has closed the connection.
 */
typedef ngx_int_t (*ngx_http_gms_rconn_check_pt)(ngx_http_gms_rconn_t *rc,
    redisReply *reply);


typedef enum {
    NGX_HTTP_GMS_RCONN_CLOSED = 0,
    NGX_HTTP_GMS_RCONN_RESOLVING,
    NGX_HTTP_GMS_RCONN_CONNECTING,
    NGX_HTTP_GMS_RCONN_HANDSHAKE,
    NGX_HTTP_GMS_RCONN_SETUP,          /* connected, setup replies due */
    NGX_HTTP_GMS_RCONN_READY
} ngx_http_gms_rconn_state_e;


struct ngx_http_gms_rconn_s {
    ngx_connection_t              *connection;
    ngx_http_gms_main_conf_t      *gmcf;
    const char                    *what;           /* for the logs */
    ngx_http_gms_target_e          target;
    ngx_uint_t                     node;           /* gms_redis_node_up */

    /* where to: a configured address, or one a Sentinel named */
    ngx_http_gms_redis_addr_t     *addr;
    ngx_sockaddr_t                 sockaddr;
    socklen_t                      socklen;
    ngx_str_t                      peer;           /* as shown in logs */
    u_char                         peer_text[NGX_SOCKADDR_STRLEN];
    ngx_resolver_ctx_t            *resolving;

    redisReader                   *reader;
    redisReplyObjectFunctions     *builders;       /* the caps */
    ngx_uint_t                     reply_objects;  /* in the one building */
    size_t                         reply_bytes;
    ngx_http_gms_arena_block_t    *arena;          /* the replies' objects */
    ngx_http_gms_arena_block_t    *arena_block;    /* the one in use */

    u_char                        *out;            /* formatted, unsent */
    size_t                         out_pos;
    size_t                         out_len;
    size_t                         out_size;

    ngx_queue_t                    pending;        /* sent, unanswered */
    ngx_queue_t                    free;
    ngx_uint_t                     setup;          /* setup replies due */
    size_t                         gate;           /* in out, while gated */

    ngx_event_t                    timer;          /* until READY */
    ngx_msec_t                     backoff;
    ngx_msec_t                     retry_at;
    ngx_uint_t                     generation;     /* ++ on every close */

    ngx_http_gms_rconn_state_e     state;

    /* the idle check (ngx_http_gms_redis_idle.c), to the close */
    ngx_event_t                    ping;
    ngx_msec_t                     heard;          /* set by the owner */

    /* max_age: from READY, recycled once it has nothing pending */
    ngx_event_t                    age;

    /* replies with nothing pending: a subscription's messages, or else */
    ngx_http_gms_rconn_reply_pt    push;
    ngx_http_gms_rconn_event_pt    ready;
    ngx_http_gms_rconn_event_pt    closed;
    ngx_http_gms_rconn_check_pt    unavailable;    /* for PING's answer */
    void                          *data;

    unsigned                       subscribed:1;   /* pushes expected */
    unsigned                       ping_pending:1;
    unsigned                       tls:1;
    unsigned                       keepalive:1;    /* SO_KEEPALIVE */
    unsigned                       was_ready:1;    /* until closed */
    unsigned                       gated:1;        /* out held at gate */
    unsigned                       auth_retried:1; /* since the connect */
    unsigned                       aged:1;         /* past max_age */
    unsigned                       recycling:1;    /* a close, no failure */
};


void ngx_http_gms_rconn_init(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_main_conf_t *gmcf, const char *what,
    ngx_http_gms_target_e target);
ngx_int_t ngx_http_gms_rconn_connect(ngx_http_gms_rconn_t *rc);
ngx_int_t ngx_http_gms_rconn_send(ngx_http_gms_rconn_t *rc, u_char *cmd,
    size_t len, ngx_http_gms_rconn_reply_pt handler, void *data);
ngx_int_t ngx_http_gms_rconn_argv(ngx_http_gms_rconn_t *rc, int argc,
    const char **argv, const size_t *lens,
    ngx_http_gms_rconn_reply_pt handler, void *data);
ngx_int_t ngx_http_gms_rconn_setup(ngx_http_gms_rconn_t *rc, int argc,
    const char **argv, const size_t *lens,
    ngx_http_gms_rconn_reply_pt handler);
ngx_int_t ngx_http_gms_rconn_setup_first(ngx_http_gms_rconn_t *rc, int argc,
    const char **argv, const size_t *lens,
    ngx_http_gms_rconn_reply_pt handler);
void ngx_http_gms_rconn_close(ngx_http_gms_rconn_t *rc, ngx_uint_t level,
    const char *reason);
void ngx_http_gms_rconn_failed(ngx_http_gms_rconn_t *rc);
ngx_int_t ngx_http_gms_rconn_in_backoff(ngx_http_gms_rconn_t *rc);
ngx_uint_t ngx_http_gms_rconn_says(redisReply *r, const char *s);
void ngx_http_gms_rconn_protocol_error(ngx_http_gms_rconn_t *rc,
    const char *what);
void ngx_http_gms_rconn_set_peer(ngx_http_gms_rconn_t *rc,
    struct sockaddr *sa, socklen_t socklen);
ngx_uint_t ngx_http_gms_rconn_is_peer(ngx_http_gms_rconn_t *rc,
    struct sockaddr *sa, socklen_t socklen);


#define ngx_http_gms_rconn_ready(rc)                                         \
    ((rc)->state == NGX_HTTP_GMS_RCONN_READY)

#define ngx_http_gms_rconn_open(rc)                                          \
    ((rc)->state != NGX_HTTP_GMS_RCONN_CLOSED)


#endif /* _NGX_HTTP_GMS_REDIS_CONN_H_INCLUDED_ */


/*
 * hiredis on nginx's event loop.
 *
 * Each worker keeps one connection, made on first use.  hiredis asks for
 * read and write interest through its ev hooks; they map to level-
 * triggered nginx events on a connection taken from the worker's pool,
 * so a reply larger than hiredis's read chunk is never left unread.
 * Deadlines belong to the requests (nginx timers in the module); when one
 * fires the connection is dropped, since every lookup pipelined behind
 * the late one would be late too.  After a failure, connecting again is
 * refused for a short, growing, jittered while, so that a Redis outage
 * costs the requests nothing but a fast 503.
 *
 * With a cache, each worker also keeps a second connection, subscribed to
 * <prefix>invalidate: gms-token publishes there the token ids and users
 * whose entries changed, and the worker drops them from the shared cache
 * at once.  Messages published while a subscription is down are lost, so
 * every (re)subscription drops the whole cache.  Once a second, one
 * worker of the edge reads <prefix>sync's "at" for the sync-age metric.
 */


#include "ngx_http_gms_redis.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_metrics.h"


#define NGX_HTTP_GMS_BACKOFF_MIN   50
#define NGX_HTTP_GMS_BACKOFF_MAX   1000

/* an idle connection is checked this often, so a dead one is noticed */
#define NGX_HTTP_GMS_PING_EVERY    10000

/*
 * What a reply may make hiredis allocate.  A lookup's reply is 4
 * elements, strings of at most a few hundred bytes and up to 256
 * privileges; hiredis 0.14 allocates what a header announces (an array
 * of a billion elements, say) and buffers a bulk string whole.  Beyond
 * these the connection is dropped: 503, never an allocation the size a
 * peer chose.
 */
#define NGX_HTTP_GMS_REPLY_STRING_MAX    65536
#define NGX_HTTP_GMS_REPLY_ELEMENTS_MAX  1024
#define NGX_HTTP_GMS_REPLY_BUFFER_MAX    (1024 * 1024)

/* how often the time of the last complete sync is read */
#define NGX_HTTP_GMS_SYNC_EVERY    1000


struct ngx_http_gms_lookup_s {
    ngx_queue_t                queue;          /* in the free list */
    ngx_http_gms_lookup_pt     handler;
    void                      *data;
    u_char                     id[GMS_TOKEN_ID_LEN];
    unsigned                   evaluated:1;    /* sent with EVAL */
};


typedef struct {
    redisAsyncContext         *ac;
    ngx_http_gms_main_conf_t  *gmcf;
    ngx_msec_t                 backoff;
    ngx_msec_t                 retry_at;
    ngx_msec_t                 last_used;
    ngx_queue_t                free;
    u_char                    *key;            /* <prefix>token:<id> */
    u_char                    *members_key;    /* <prefix>actor:<urn> */
    u_char                    *evalsha;        /* the lookup, formatted */
    size_t                     evalsha_len;
    size_t                     evalsha_id;     /* where its id goes */
    ngx_event_t                connect_timer;
    ngx_event_t                ping_timer;
    ngx_event_t                retry_timer;    /* the subscriber's */
    ngx_event_t                sync_timer;     /* the lookups' */
    unsigned                   connected:1;
    unsigned                   ping_pending:1;
    unsigned                   subscriber:1;
    unsigned                   subscribed:1;
} ngx_http_gms_redis_t;


static ngx_int_t ngx_http_gms_redis_init(ngx_http_gms_main_conf_t *gmcf);
static ngx_int_t ngx_http_gms_redis_connect(ngx_http_gms_redis_t *rd);
static void ngx_http_gms_redis_close(ngx_http_gms_redis_t *rd,
    const char *reason);
static void ngx_http_gms_redis_subscribe(ngx_http_gms_redis_t *rd);
static void ngx_http_gms_redis_retry(ngx_event_t *ev);
static void ngx_http_gms_redis_message(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_http_gms_redis_sync_age(ngx_event_t *ev);
static void ngx_http_gms_redis_sync_reply(redisAsyncContext *ac, void *r,
    void *privdata);
static void *ngx_http_gms_redis_sub_string(const redisReadTask *task,
    char *str, size_t len);
static void *ngx_http_gms_redis_sub_array(const redisReadTask *task,
    int elements);
static void *ngx_http_gms_redis_sub_integer(const redisReadTask *task,
    long long value);
static void *ngx_http_gms_redis_sub_nil(const redisReadTask *task);
static void *ngx_http_gms_redis_string(const redisReadTask *task, char *str,
    size_t len);
static void *ngx_http_gms_redis_array(const redisReadTask *task,
    int elements);
static void ngx_http_gms_redis_failed(ngx_http_gms_redis_t *rd);
static ngx_int_t ngx_http_gms_redis_members(ngx_http_gms_lookup_t *lk,
    ngx_str_t *actor);
static ngx_int_t ngx_http_gms_redis_send(ngx_http_gms_lookup_t *lk);
static ngx_int_t ngx_http_gms_redis_format(ngx_http_gms_redis_t *rd);
static void ngx_http_gms_redis_reply(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_http_gms_redis_setup_reply(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_http_gms_redis_connected(const redisAsyncContext *ac,
    int status);
static void ngx_http_gms_redis_disconnected(const redisAsyncContext *ac,
    int status);
static void ngx_http_gms_redis_connect_timeout(ngx_event_t *ev);
static void ngx_http_gms_redis_ping(ngx_event_t *ev);
static void ngx_http_gms_redis_pong(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_http_gms_redis_read_handler(ngx_event_t *ev);
static void ngx_http_gms_redis_write_handler(ngx_event_t *ev);
static void ngx_http_gms_redis_add_read(void *privdata);
static void ngx_http_gms_redis_del_read(void *privdata);
static void ngx_http_gms_redis_add_write(void *privdata);
static void ngx_http_gms_redis_del_write(void *privdata);
static void ngx_http_gms_redis_cleanup(void *privdata);


/* one of each per worker process */
static ngx_http_gms_redis_t  ngx_http_gms_redis;
static ngx_http_gms_redis_t  ngx_http_gms_redis_sub;

static redisReplyObjectFunctions  *ngx_http_gms_redis_builders;
static redisReplyObjectFunctions   ngx_http_gms_redis_capped;
static redisReplyObjectFunctions   ngx_http_gms_redis_sub_capped;

static ngx_uint_t  ngx_http_gms_redis_exiting;


/* in a worker: the subscription and the sync-age timer, with a cache */

ngx_int_t
ngx_http_gms_redis_init_process(ngx_cycle_t *cycle,
    ngx_http_gms_main_conf_t *gmcf)
{
    ngx_http_gms_redis_t  *sub;

    if (gmcf->cache == NULL) {
        return NGX_OK;
    }

    if (ngx_http_gms_redis.gmcf != gmcf
        && ngx_http_gms_redis_init(gmcf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_gms_redis.sync_timer.handler = ngx_http_gms_redis_sync_age;
    ngx_http_gms_redis.sync_timer.log = cycle->log;
    ngx_http_gms_redis.sync_timer.data = &ngx_http_gms_redis;
    ngx_http_gms_redis.sync_timer.cancelable = 1;
    ngx_add_timer(&ngx_http_gms_redis.sync_timer,
                  (ngx_msec_t) ngx_random() % NGX_HTTP_GMS_SYNC_EVERY + 1);

    sub = &ngx_http_gms_redis_sub;
    sub->gmcf = gmcf;
    sub->subscriber = 1;

    sub->connect_timer.handler = ngx_http_gms_redis_connect_timeout;
    sub->connect_timer.log = cycle->log;

    sub->retry_timer.handler = ngx_http_gms_redis_retry;
    sub->retry_timer.log = cycle->log;
    sub->retry_timer.data = sub;
    sub->retry_timer.cancelable = 1;

    ngx_http_gms_redis_subscribe(sub);

    return NGX_OK;
}


/* the lookups' connection: its keys and the EVALSHA, made once */

static ngx_int_t
ngx_http_gms_redis_init(ngx_http_gms_main_conf_t *gmcf)
{
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;

    rd->gmcf = gmcf;
    ngx_queue_init(&rd->free);

    rd->key = ngx_alloc(gmcf->token_prefix.len + GMS_TOKEN_ID_LEN,
                        ngx_cycle->log);
    if (rd->key == NULL) {
        rd->gmcf = NULL;
        return NGX_ERROR;
    }

    ngx_memcpy(rd->key, gmcf->token_prefix.data, gmcf->token_prefix.len);

    rd->members_key = ngx_alloc(gmcf->actor_prefix.len + GMS_ACTOR_MAX,
                                ngx_cycle->log);
    if (rd->members_key == NULL) {
        ngx_free(rd->key);
        rd->gmcf = NULL;
        return NGX_ERROR;
    }

    ngx_memcpy(rd->members_key, gmcf->actor_prefix.data,
               gmcf->actor_prefix.len);

    if (ngx_http_gms_redis_format(rd) != NGX_OK) {
        rd->gmcf = NULL;
        return NGX_ERROR;
    }

    rd->connect_timer.handler = ngx_http_gms_redis_connect_timeout;
    rd->connect_timer.log = ngx_cycle->log;

    rd->ping_timer.handler = ngx_http_gms_redis_ping;
    rd->ping_timer.log = ngx_cycle->log;
    rd->ping_timer.cancelable = 1;

    return NGX_OK;
}


ngx_int_t
ngx_http_gms_redis_lookup(ngx_http_gms_main_conf_t *gmcf, u_char *id,
    ngx_str_t *actor, ngx_http_gms_lookup_pt handler, void *data)
{
    ngx_queue_t            *q;
    ngx_http_gms_lookup_t  *lk;
    ngx_http_gms_redis_t   *rd;

    rd = &ngx_http_gms_redis;

    /* first use in this worker: without a cache, no init_process did it */

    if (rd->gmcf != gmcf && ngx_http_gms_redis_init(gmcf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (rd->ac == NULL && ngx_http_gms_redis_connect(rd) != NGX_OK) {
        return NGX_ERROR;
    }

    if (!ngx_queue_empty(&rd->free)) {
        q = ngx_queue_head(&rd->free);
        ngx_queue_remove(q);
        lk = ngx_queue_data(q, ngx_http_gms_lookup_t, queue);

    } else {
        lk = ngx_alloc(sizeof(ngx_http_gms_lookup_t), ngx_cycle->log);
        if (lk == NULL) {
            return NGX_ERROR;
        }
    }

    lk->handler = handler;
    lk->data = data;
    lk->evaluated = (actor != NULL);
    ngx_memcpy(lk->id, id, GMS_TOKEN_ID_LEN);

    if ((actor ? ngx_http_gms_redis_members(lk, actor)
               : ngx_http_gms_redis_send(lk))
        != NGX_OK)
    {
        ngx_queue_insert_head(&rd->free, &lk->queue);
        return NGX_ERROR;
    }

    rd->last_used = ngx_current_msec;

    return NGX_OK;
}


void
ngx_http_gms_redis_drop(const char *reason)
{
    ngx_http_gms_redis_close(&ngx_http_gms_redis, reason);
}


static void
ngx_http_gms_redis_close(ngx_http_gms_redis_t *rd, const char *reason)
{
    redisAsyncContext  *ac;

    ac = rd->ac;

    if (ac == NULL) {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: closing redis %sconnection: %s",
                  rd->subscriber ? "subscription " : "", reason);

    ngx_http_gms_redis_failed(rd);

    /* runs the pending callbacks with NULL, then the cleanup hook */
    redisAsyncFree(ac);
}


void
ngx_http_gms_redis_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_gms_redis_exiting = 1;

    if (ngx_http_gms_redis.ac != NULL) {
        redisAsyncFree(ngx_http_gms_redis.ac);
    }

    if (ngx_http_gms_redis_sub.ac != NULL) {
        redisAsyncFree(ngx_http_gms_redis_sub.ac);
    }
}


static ngx_int_t
ngx_http_gms_redis_connect(ngx_http_gms_redis_t *rd)
{
    int                        on;
    redisAsyncContext         *ac;
    ngx_connection_t          *c;
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = rd->gmcf;

    if (rd->backoff && (ngx_msec_int_t) (rd->retry_at - ngx_current_msec) > 0)
    {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: redis connect in backoff");
        return NGX_DECLINED;
    }

    if (rd->backoff && !rd->subscriber) {
        ngx_http_gms_count(reconnects);
    }

    if (gmcf->port) {
        ac = redisAsyncConnect((char *) gmcf->host.data, (int) gmcf->port);

    } else {
        ac = redisAsyncConnectUnix((char *) gmcf->host.data);
    }

    if (ac == NULL) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: cannot allocate a redis context");
        ngx_http_gms_redis_failed(rd);
        return NGX_ERROR;
    }

    if (ac->err) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis connect to \"%V\" failed: %s",
                      &gmcf->host, ac->errstr);
        redisAsyncFree(ac);
        ngx_http_gms_redis_failed(rd);
        return NGX_ERROR;
    }

    /* hiredis's reply builders, with the caps in front */

    if (ngx_http_gms_redis_builders == NULL) {
        ngx_http_gms_redis_builders = ac->c.reader->fn;
        ngx_http_gms_redis_capped = *ac->c.reader->fn;
        ngx_http_gms_redis_capped.createString = ngx_http_gms_redis_string;
        ngx_http_gms_redis_capped.createArray = ngx_http_gms_redis_array;

        ngx_http_gms_redis_sub_capped = *ac->c.reader->fn;
        ngx_http_gms_redis_sub_capped.createString =
                                             ngx_http_gms_redis_sub_string;
        ngx_http_gms_redis_sub_capped.createArray =
                                             ngx_http_gms_redis_sub_array;
        ngx_http_gms_redis_sub_capped.createInteger =
                                             ngx_http_gms_redis_sub_integer;
        ngx_http_gms_redis_sub_capped.createNil = ngx_http_gms_redis_sub_nil;
    }

    ac->c.reader->fn = rd->subscriber ? &ngx_http_gms_redis_sub_capped
                                      : &ngx_http_gms_redis_capped;
    ac->data = rd;

    c = ngx_get_connection(ac->c.fd, ngx_cycle->log);
    if (c == NULL) {
        redisAsyncFree(ac);
        ngx_http_gms_redis_failed(rd);
        return NGX_ERROR;
    }

    if (rd->subscriber) {
        /* no PING on a subscription: a dead peer is found by the kernel */
        on = 1;
        (void) setsockopt(ac->c.fd, SOL_SOCKET, SO_KEEPALIVE,
                          (const void *) &on, sizeof(int));
    }

    c->data = ac;
    c->read->handler = ngx_http_gms_redis_read_handler;

    /* the timers' handlers use rd; debug logs want a connection here */
    rd->connect_timer.data = c;
    rd->ping_timer.data = c;
    c->write->handler = ngx_http_gms_redis_write_handler;
    c->read->log = c->log;
    c->write->log = c->log;

    ac->ev.data = c;
    ac->ev.addRead = ngx_http_gms_redis_add_read;
    ac->ev.delRead = ngx_http_gms_redis_del_read;
    ac->ev.addWrite = ngx_http_gms_redis_add_write;
    ac->ev.delWrite = ngx_http_gms_redis_del_write;
    ac->ev.cleanup = ngx_http_gms_redis_cleanup;

    redisAsyncSetConnectCallback(ac, ngx_http_gms_redis_connected);
    redisAsyncSetDisconnectCallback(ac, ngx_http_gms_redis_disconnected);

    rd->ac = ac;

    /* queued now, sent in order as soon as the connection is up */

    if (gmcf->password.len
        && redisAsyncCommand(ac, ngx_http_gms_redis_setup_reply, "AUTH",
                             "AUTH %b", gmcf->password.data,
                             gmcf->password.len)
           != REDIS_OK)
    {
        goto failed;
    }

    if (gmcf->db
        && redisAsyncCommand(ac, ngx_http_gms_redis_setup_reply, "SELECT",
                             "SELECT %d", (int) gmcf->db)
           != REDIS_OK)
    {
        goto failed;
    }

    if (rd->subscriber) {
        if (redisAsyncCommand(ac, ngx_http_gms_redis_message, NULL,
                              "SUBSCRIBE %b", gmcf->invalidate.data,
                              gmcf->invalidate.len)
            != REDIS_OK)
        {
            goto failed;
        }

    } else if (redisAsyncCommand(ac, ngx_http_gms_redis_setup_reply,
                                 "SCRIPT LOAD", "SCRIPT LOAD %s",
                                 gms_lookup_script)
               != REDIS_OK)
    {
        goto failed;
    }

    ngx_add_timer(&rd->connect_timer, gmcf->timeout);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: redis connecting to \"%V\"", &gmcf->host);

    return NGX_OK;

failed:

    ngx_http_gms_redis_close(rd, "cannot queue the connection setup");
    return NGX_ERROR;
}


static void
ngx_http_gms_redis_failed(ngx_http_gms_redis_t *rd)
{
    ngx_msec_t  jitter;

    if (rd->backoff == 0) {
        rd->backoff = NGX_HTTP_GMS_BACKOFF_MIN;

    } else {
        rd->backoff = ngx_min(rd->backoff * 2, NGX_HTTP_GMS_BACKOFF_MAX);
    }

    /* between half and all of the backoff: workers do not retry in step */
    jitter = (ngx_msec_t) ngx_random() % (rd->backoff / 2 + 1);
    rd->retry_at = ngx_current_msec + rd->backoff / 2 + jitter;
}


static ngx_int_t
ngx_http_gms_redis_send(ngx_http_gms_lookup_t *lk)
{
    size_t                     len[5];
    const char                *argv[5];
    ngx_http_gms_redis_t      *rd;
    ngx_http_gms_main_conf_t  *gmcf;

    rd = &ngx_http_gms_redis;
    gmcf = rd->gmcf;

    if (!lk->evaluated) {
        /* the usual case: the command made once, with this id in place */
        ngx_memcpy(rd->evalsha + rd->evalsha_id, lk->id, GMS_TOKEN_ID_LEN);

        return redisAsyncFormattedCommand(rd->ac, ngx_http_gms_redis_reply,
                                          lk, (char *) rd->evalsha,
                                          rd->evalsha_len)
               == REDIS_OK ? NGX_OK : NGX_ERROR;
    }

    ngx_memcpy(rd->key + gmcf->token_prefix.len, lk->id, GMS_TOKEN_ID_LEN);

    argv[0] = "EVAL";
    len[0] = sizeof("EVAL") - 1;
    argv[1] = gms_lookup_script;
    len[1] = gms_lookup_script_len;
    argv[2] = "1";
    len[2] = 1;
    argv[3] = (const char *) rd->key;
    len[3] = gmcf->token_prefix.len + GMS_TOKEN_ID_LEN;
    argv[4] = (const char *) gmcf->actor_prefix.data;
    len[4] = gmcf->actor_prefix.len;

    if (redisAsyncCommandArgv(rd->ac, ngx_http_gms_redis_reply, lk, 5, argv,
                              len)
        != REDIS_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* SMEMBERS <prefix>actor:<urn>: the privileges of a session token's user */

static ngx_int_t
ngx_http_gms_redis_members(ngx_http_gms_lookup_t *lk, ngx_str_t *actor)
{
    size_t                     len[2];
    const char                *argv[2];
    ngx_http_gms_redis_t      *rd;
    ngx_http_gms_main_conf_t  *gmcf;

    rd = &ngx_http_gms_redis;
    gmcf = rd->gmcf;

    if (actor->len > GMS_ACTOR_MAX) {
        return NGX_ERROR;
    }

    ngx_memcpy(rd->members_key + gmcf->actor_prefix.len, actor->data,
               actor->len);

    argv[0] = "SMEMBERS";
    len[0] = sizeof("SMEMBERS") - 1;
    argv[1] = (const char *) rd->members_key;
    len[1] = gmcf->actor_prefix.len + actor->len;

    return redisAsyncCommandArgv(rd->ac, ngx_http_gms_redis_reply, lk, 2,
                                 argv, len)
           == REDIS_OK ? NGX_OK : NGX_ERROR;
}


/*
 * EVALSHA <sha> 1 <prefix>token:<id> <prefix>actor: in the protocol's
 * form, made once per worker; a lookup only copies its id in at id_offset.
 */

static ngx_int_t
ngx_http_gms_redis_format(ngx_http_gms_redis_t *rd)
{
    u_char                    *p;
    size_t                     key_len, len;
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = rd->gmcf;
    key_len = gmcf->token_prefix.len + GMS_TOKEN_ID_LEN;

    len = sizeof("*5\r\n$7\r\nEVALSHA\r\n$40\r\n\r\n$1\r\n1\r\n") - 1 + 40
          + 2 * (sizeof("$\r\n\r\n") - 1 + NGX_SIZE_T_LEN)
          + key_len + gmcf->actor_prefix.len;

    rd->evalsha = ngx_alloc(len, ngx_cycle->log);
    if (rd->evalsha == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(rd->evalsha, "*5\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n"
                    "$1\r\n1\r\n$%uz\r\n%V", gmcf->script_sha, key_len,
                    &gmcf->token_prefix);

    rd->evalsha_id = p - rd->evalsha;
    p += GMS_TOKEN_ID_LEN;

    p = ngx_sprintf(p, "\r\n$%uz\r\n%V\r\n", gmcf->actor_prefix.len,
                    &gmcf->actor_prefix);

    rd->evalsha_len = p - rd->evalsha;

    return NGX_OK;
}


static void
ngx_http_gms_redis_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply              *reply = r;
    ngx_http_gms_lookup_t   *lk = privdata;

    const char              *error;
    ngx_http_gms_lookup_pt   handler;

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR
        && !lk->evaluated && ngx_strncmp(reply->str, "NOSCRIPT", 8) == 0)
    {
        /* the script cache was flushed: send the script itself, once */
        lk->evaluated = 1;

        if (ngx_http_gms_redis_send(lk) == NGX_OK) {
            return;
        }
    }

    error = NULL;

    if (reply == NULL) {
        error = (ac->err && ac->errstr[0]) ? ac->errstr : "connection closed";

    } else if (reply->type != REDIS_REPLY_ERROR) {
        ngx_http_gms_redis.backoff = 0;
    }

    handler = lk->handler;
    r = lk->data;

    ngx_queue_insert_head(&ngx_http_gms_redis.free, &lk->queue);

    handler(r, reply, error);
}


static void
ngx_http_gms_redis_setup_reply(redisAsyncContext *ac, void *r,
    void *privdata)
{
    redisReply  *reply = r;

    if (reply == NULL || reply->type != REDIS_REPLY_ERROR) {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis %s failed: %s", (char *) privdata, reply->str);

    ngx_http_gms_redis_failed(ac->data);

    /* freed by hiredis once this callback returns */
    redisAsyncFree(ac);
}


static void
ngx_http_gms_redis_connected(const redisAsyncContext *ac, int status)
{
    ngx_http_gms_redis_t  *rd = ac->data;

    if (rd->connect_timer.timer_set) {
        ngx_del_timer(&rd->connect_timer);
    }

    if (status == REDIS_OK) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: redis connected");

        rd->connected = 1;

        if (!rd->subscriber) {
            ngx_http_gms_count(connections);
            ngx_add_timer(&rd->ping_timer, NGX_HTTP_GMS_PING_EVERY);
        }

        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis %sconnect to \"%V\" failed: %s",
                  rd->subscriber ? "subscription " : "", &rd->gmcf->host,
                  ac->errstr);

    ngx_http_gms_redis_failed(rd);
}


static void
ngx_http_gms_redis_disconnected(const redisAsyncContext *ac, int status)
{
    ngx_http_gms_redis_t  *rd = ac->data;

    if (status == REDIS_OK) {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis %sconnection lost: %s",
                  rd->subscriber ? "subscription " : "", ac->errstr);

    ngx_http_gms_redis_failed(rd);
}


static void
ngx_http_gms_redis_connect_timeout(ngx_event_t *ev)
{
    ngx_connection_t  *c = ev->data;

    ngx_http_gms_redis_close(((redisAsyncContext *) c->data)->data,
                             "connect timed out");
}


/*
 * A connection with no lookup for a while is asked for a PING; no answer
 * by the next round, and it is dropped rather than trusted with a lookup.
 */

static void
ngx_http_gms_redis_ping(ngx_event_t *ev)
{
    ngx_http_gms_redis_t  *rd;

    rd = &ngx_http_gms_redis;

    if (rd->ac == NULL) {
        return;
    }

    if (rd->ping_pending) {
        ngx_http_gms_redis_drop("no answer to PING");
        return;
    }

    if (ngx_current_msec - rd->last_used >= NGX_HTTP_GMS_PING_EVERY) {
        if (redisAsyncCommand(rd->ac, ngx_http_gms_redis_pong, NULL, "PING")
            != REDIS_OK)
        {
            ngx_http_gms_redis_drop("cannot send PING");
            return;
        }

        rd->ping_pending = 1;
    }

    ngx_add_timer(&rd->ping_timer, NGX_HTTP_GMS_PING_EVERY);
}


static void
ngx_http_gms_redis_pong(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply  *reply = r;

    ngx_http_gms_redis.ping_pending = 0;

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis PING failed: %s", reply->str);
        ngx_http_gms_redis_failed(&ngx_http_gms_redis);
        redisAsyncFree(ac);
    }
}


static void
ngx_http_gms_redis_read_handler(ngx_event_t *ev)
{
    ngx_connection_t  *c = ev->data;

    redisReader           *reader;
    redisAsyncContext     *ac;
    ngx_http_gms_redis_t  *rd;

    ac = c->data;
    rd = ac->data;

    redisAsyncHandleRead(ac);

    /* hiredis may have closed the connection: then ac is gone */

    if (rd->ac == NULL || rd->ac != ac) {
        return;
    }

    reader = ac->c.reader;

    if (reader->len - reader->pos > NGX_HTTP_GMS_REPLY_BUFFER_MAX) {
        ngx_http_gms_redis_close(rd, "reply larger than 1 MB");
    }
}


/*
 * Over a cap, the builder says why and returns NULL: hiredis then fails
 * the reply ("Out of memory") and closes the connection.
 */

static void *
ngx_http_gms_redis_string(const redisReadTask *task, char *str, size_t len)
{
    if (len > NGX_HTTP_GMS_REPLY_STRING_MAX) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis reply over the module's limits: "
                      "a string of %uz bytes", len);
        return NULL;
    }

    return ngx_http_gms_redis_builders->createString(task, str, len);
}


static void *
ngx_http_gms_redis_array(const redisReadTask *task, int elements)
{
    if (elements < 0 || elements > NGX_HTTP_GMS_REPLY_ELEMENTS_MAX) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis reply over the module's limits: "
                      "an array of %d elements", elements);
        return NULL;
    }

    return ngx_http_gms_redis_builders->createArray(task, elements);
}


static void
ngx_http_gms_redis_write_handler(ngx_event_t *ev)
{
    ngx_connection_t  *c = ev->data;

    redisAsyncHandleWrite(c->data);
}


static void
ngx_http_gms_redis_add_read(void *privdata)
{
    ngx_connection_t  *c = privdata;

    if (!c->read->active
        && ngx_add_event(c->read, NGX_READ_EVENT, NGX_LEVEL_EVENT) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ALERT, c->log, 0,
                      "gms: cannot add redis read event");
    }
}


static void
ngx_http_gms_redis_del_read(void *privdata)
{
    ngx_connection_t  *c = privdata;

    if (c->read->active) {
        (void) ngx_del_event(c->read, NGX_READ_EVENT, 0);
    }
}


static void
ngx_http_gms_redis_add_write(void *privdata)
{
    ngx_connection_t  *c = privdata;

    if (!c->write->active
        && ngx_add_event(c->write, NGX_WRITE_EVENT, NGX_LEVEL_EVENT)
           != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ALERT, c->log, 0,
                      "gms: cannot add redis write event");
    }
}


static void
ngx_http_gms_redis_del_write(void *privdata)
{
    ngx_connection_t  *c = privdata;

    if (c->write->active) {
        (void) ngx_del_event(c->write, NGX_WRITE_EVENT, 0);
    }
}


/* hiredis closes the socket right after this hook returns */

static void
ngx_http_gms_redis_cleanup(void *privdata)
{
    ngx_connection_t  *c = privdata;

    ngx_http_gms_redis_t  *rd;

    if (c->read->active) {
        (void) ngx_del_event(c->read, NGX_READ_EVENT, NGX_CLOSE_EVENT);
    }

    if (c->write->active) {
        (void) ngx_del_event(c->write, NGX_WRITE_EVENT, NGX_CLOSE_EVENT);
    }

    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }

    rd = ((redisAsyncContext *) c->data)->data;

    ngx_free_connection(c);
    c->fd = (ngx_socket_t) -1;

    if (rd->connected && !rd->subscriber) {
        ngx_http_gms_count_down(connections);
    }

    if (rd->subscribed) {
        ngx_http_gms_count_down(subscriptions);
    }

    if (rd->connect_timer.timer_set) {
        ngx_del_timer(&rd->connect_timer);
    }

    if (rd->ping_timer.timer_set) {
        ngx_del_timer(&rd->ping_timer);
    }

    rd->ac = NULL;
    rd->connected = 0;
    rd->ping_pending = 0;
    rd->subscribed = 0;

    if (rd->subscriber && !ngx_http_gms_redis_exiting) {
        ngx_http_gms_redis_subscribe(rd);
    }
}


/*
 * The subscriber connects from a timer, never from inside hiredis (its
 * cleanup hook runs while the old context is being freed): at once the
 * first time, then after the backoff of the failure.
 */

static void
ngx_http_gms_redis_subscribe(ngx_http_gms_redis_t *rd)
{
    ngx_msec_t  delay;

    if (rd->retry_timer.timer_set || ngx_http_gms_redis_exiting) {
        return;
    }

    delay = 1;

    if (rd->backoff
        && (ngx_msec_int_t) (rd->retry_at - ngx_current_msec) > 0)
    {
        delay = rd->retry_at - ngx_current_msec;
    }

    ngx_add_timer(&rd->retry_timer, delay);
}


static void
ngx_http_gms_redis_retry(ngx_event_t *ev)
{
    ngx_http_gms_redis_t  *rd = ev->data;

    if (rd->ac != NULL || ngx_http_gms_redis_exiting) {
        return;
    }

    if (ngx_http_gms_redis_connect(rd) != NGX_OK && rd->ac == NULL) {
        ngx_http_gms_redis_subscribe(rd);
    }
}


/*
 * SUBSCRIBE's confirmation and each message, as hiredis hands them over:
 * ["subscribe", channel, count] and ["message", channel, payload] (the
 * subscriber's reply builders have made sure of the shape).
 */

static void
ngx_http_gms_redis_message(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply  *reply = r;

    ngx_uint_t             n;
    redisReply            *kind, *payload;
    ngx_http_gms_redis_t  *rd;

    rd = ac->data;

    if (reply == NULL) {
        /* the connection is going: its cleanup hook says why */
        return;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        ngx_http_gms_redis_close(rd, "unexpected reply to SUBSCRIBE");
        return;
    }

    kind = reply->element[0];
    payload = reply->element[2];

    if (kind->len == sizeof("subscribe") - 1
        && ngx_strncmp(kind->str, "subscribe", kind->len) == 0)
    {
        rd->subscribed = 1;
        rd->backoff = 0;
        ngx_http_gms_count(subscriptions);

        /* whatever was published while nobody listened is lost */

        n = ngx_http_gms_cache_drop(rd->gmcf->cache, (u_char *) "*", 1);
        ngx_http_gms_count(invalidation_flushes);

        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "gms: subscribed to \"%V\", %ui cached entries "
                      "dropped", &rd->gmcf->invalidate, n);
        return;
    }

    if (kind->len != sizeof("message") - 1
        || ngx_strncmp(kind->str, "message", kind->len) != 0
        || payload->type != REDIS_REPLY_STRING)
    {
        ngx_http_gms_redis_close(rd, "unexpected message on the "
                                     "subscription");
        return;
    }

    ngx_http_gms_count(invalidations);

    n = ngx_http_gms_cache_drop(rd->gmcf->cache, (u_char *) payload->str,
                                payload->len);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: invalidation \"%*s\": %ui entries dropped",
                   ngx_min(payload->len, 128), payload->str, n);
}


/*
 * What a subscription may receive is small and of one shape: arrays of 3,
 * whose elements are strings (the third may be SUBSCRIBE's count), no
 * nesting.  hiredis 0.14 asserts on other shapes in subscribed mode, so
 * they are refused here, before it sees them: the connection is dropped.
 */

static void *
ngx_http_gms_redis_sub_string(const redisReadTask *task, char *str,
    size_t len)
{
    if (task->parent == NULL || len > GMS_ACTOR_MAX + 64) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis subscription: unexpected string");
        return NULL;
    }

    return ngx_http_gms_redis_builders->createString(task, str, len);
}


static void *
ngx_http_gms_redis_sub_array(const redisReadTask *task, int elements)
{
    if (task->parent != NULL || elements != 3) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis subscription: unexpected array");
        return NULL;
    }

    return ngx_http_gms_redis_builders->createArray(task, elements);
}


static void *
ngx_http_gms_redis_sub_integer(const redisReadTask *task, long long value)
{
    if (task->parent == NULL || task->idx != 2) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis subscription: unexpected integer");
        return NULL;
    }

    return ngx_http_gms_redis_builders->createInteger(task, value);
}


static void *
ngx_http_gms_redis_sub_nil(const redisReadTask *task)
{
    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis subscription: unexpected nil");
    return NULL;
}


/*
 * gms_token_sync_age_seconds: HGET <prefix>sync at, once a second for the
 * whole edge (the worker that wins the second asks), on the lookups'
 * connection, never waiting for it.
 */

static void
ngx_http_gms_redis_sync_age(ngx_event_t *ev)
{
    ngx_http_gms_redis_t    *rd = ev->data;

    ngx_atomic_uint_t        asked, now;
    ngx_http_gms_metrics_t  *m;

    ngx_add_timer(ev, NGX_HTTP_GMS_SYNC_EVERY);

    m = ngx_http_gms_metrics;
    now = (ngx_atomic_uint_t) ngx_time();

    if (m == NULL) {
        return;
    }

    asked = m->sync_asked;

    if (asked == now || !ngx_atomic_cmp_set(&m->sync_asked, asked, now)) {
        return;
    }

    if (rd->ac == NULL && ngx_http_gms_redis_connect(rd) != NGX_OK) {
        return;
    }

    if (redisAsyncCommand(rd->ac, ngx_http_gms_redis_sync_reply, NULL,
                          "HGET %b at", rd->gmcf->sync_key.data,
                          rd->gmcf->sync_key.len)
        != REDIS_OK)
    {
        ngx_http_gms_redis_close(rd, "cannot send HGET");
    }
}


static void
ngx_http_gms_redis_sync_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply  *reply = r;

    int64_t                  at;
    ngx_http_gms_metrics_t  *m;

    m = ngx_http_gms_metrics;

    if (reply == NULL || m == NULL) {
        return;
    }

    if (reply->type == REDIS_REPLY_NIL) {
        m->sync_at = 0;
        return;
    }

    if (reply->type != REDIS_REPLY_STRING || reply->len == 0
        || gms_parse_ms(reply->str, reply->len, &at) != 0 || at <= 0)
    {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "gms: \"%V\" field \"at\" is not a time in ms",
                      &ngx_http_gms_redis.gmcf->sync_key);
        m->sync_at = 0;
        return;
    }

    m->sync_at = (ngx_atomic_uint_t) at;
}

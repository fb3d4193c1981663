
/*
 * What keeps the shared cache current: the invalidation subscription and
 * the sync-age poll.
 *
 * With a cache, each worker keeps a connection subscribed to
 * <prefix>invalidate: gms-token publishes there the token ids and users
 * whose entries changed, and the worker drops them from the shared cache
 * at once.  Messages published while a subscription is down are lost, so
 * every (re)subscription drops the whole cache; a quiet one is PINGed like
 * the lookups' connection.  With Sentinel, the subscription follows the
 * master (ngx_http_gms_sentinel.c says where it is); with Redis Cluster,
 * whose PUBLISH reaches every node, it sits on the slot's master
 * (ngx_http_gms_cluster.c) and follows it too.
 *
 * With replica=prefer, each worker also remembers what it was told to
 * drop in the last NGX_HTTP_GMS_RECENT_TIME ms: a token id or a user is
 * read from the master meanwhile (ngx_http_gms_invalidate_recent()),
 * since a replica may answer before it has applied the change, and the
 * answer would be cached for the whole ttl.  "*", anything else, and a
 * (re)subscription mean everything.
 *
 * Once a second, with a cache or without, one worker of the edge reads
 * <prefix>sync's "at" for the sync-age metric, on the lookups' connection
 * (ngx_http_gms_redis.c); only where a location serves the metrics, for
 * nothing else reads it.
 *
 * It sits above the Redis client (ngx_http_gms_redis.c, which it connects
 * through) and the shared cache (which it empties): both calls go down.
 */


#include "ngx_http_gms_invalidate.h"
#include "ngx_http_gms_redis.h"
#include "ngx_http_gms_redis_server.h"
#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_redis_idle.h"
#include "ngx_http_gms_redis_reply.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_metrics.h"


/* how often the time of the last complete sync is read */
#define NGX_HTTP_GMS_SYNC_EVERY    1000

/*
 * How long an invalidated token or user is read from the master: far
 * longer than a healthy replica lags (milliseconds), short enough that
 * the master does not take the replicas' load for long.
 */
#define NGX_HTTP_GMS_RECENT_TIME   5000

/* remembered at most; more in the window: everything from the master */
#define NGX_HTTP_GMS_RECENT_MAX    1024


typedef struct {
    ngx_str_node_t             sn;             /* key: an id or a URN */
    ngx_queue_t                queue;          /* the oldest first */
    ngx_msec_t                 until;
    u_char                     data[1];
} ngx_http_gms_recent_t;


typedef struct {
    ngx_http_gms_main_conf_t  *gmcf;
    ngx_http_gms_discovery_t  *dc;
    ngx_event_t                retry_timer;    /* the subscriber's */
    ngx_event_t                sync_timer;

    /* invalidated lately, with replica=prefer */
    ngx_rbtree_t               recent;
    ngx_rbtree_node_t          recent_sentinel;
    ngx_queue_t                recent_queue;
    ngx_uint_t                 nrecent;
    ngx_msec_t                 all_until;      /* everything */
    ngx_msec_t                 users_until;    /* some user */

    unsigned                   subscribed:1;
    unsigned                   exiting:1;
    unsigned                   recent_ready:1;
    unsigned                   all_recent:1;   /* all_until is set */
    unsigned                   users_recent:1; /* users_until is set */
} ngx_http_gms_invalidate_t;


static ngx_int_t ngx_http_gms_invalidate_connect(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_invalidate_subscribe(void);
static void ngx_http_gms_invalidate_retry(ngx_event_t *ev);
static void ngx_http_gms_invalidate_closed(ngx_http_gms_rconn_t *rc);
static void ngx_http_gms_invalidate_message(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);
static void *ngx_http_gms_invalidate_string(const redisReadTask *task,
    char *str, size_t len);
static void *ngx_http_gms_invalidate_array(const redisReadTask *task,
    gms_hiredis_count_t elements);
static void *ngx_http_gms_invalidate_integer(const redisReadTask *task,
    long long value);
static void *ngx_http_gms_invalidate_nil(const redisReadTask *task);
static void ngx_http_gms_invalidate_remember(u_char *what, size_t len);
static void ngx_http_gms_invalidate_expire(void);
static ngx_uint_t ngx_http_gms_invalidate_until(ngx_uint_t set,
    ngx_msec_t until);
static void ngx_http_gms_invalidate_sync_age(ngx_event_t *ev);
static void ngx_http_gms_invalidate_sync_reply(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);


/* one of each per worker process */
static ngx_http_gms_invalidate_t  ngx_http_gms_invalidate;
static ngx_http_gms_rconn_t       ngx_http_gms_invalidate_sub;

static redisReplyObjectFunctions  ngx_http_gms_invalidate_capped = {
    .createString = ngx_http_gms_invalidate_string,
    .createArray = ngx_http_gms_invalidate_array,
    .createInteger = ngx_http_gms_invalidate_integer,
    GMS_HIREDIS_RESP3_BUILDERS(ngx_http_gms_redis_reply_double,
                               ngx_http_gms_redis_reply_bool)
    .createNil = ngx_http_gms_invalidate_nil,
    .freeObject = NULL
};


ngx_int_t
ngx_http_gms_invalidate_init_process(ngx_cycle_t *cycle,
    ngx_http_gms_discovery_t *dc)
{
    ngx_http_gms_rconn_t       *rc;
    ngx_http_gms_invalidate_t  *iv;
    ngx_http_gms_main_conf_t   *gmcf;

    gmcf = dc->gmcf;

    iv = &ngx_http_gms_invalidate;
    iv->gmcf = gmcf;
    iv->dc = dc;

    ngx_rbtree_init(&iv->recent, &iv->recent_sentinel,
                    ngx_str_rbtree_insert_value);
    ngx_queue_init(&iv->recent_queue);
    iv->recent_ready = 1;

    rc = &ngx_http_gms_invalidate_sub;
    ngx_http_gms_rconn_init(rc, gmcf, "subscription",
                            NGX_HTTP_GMS_TARGET_MASTER);
    rc->builders = &ngx_http_gms_invalidate_capped;
    rc->push = ngx_http_gms_invalidate_message;
    rc->closed = ngx_http_gms_invalidate_closed;
    rc->keepalive = 1;
    rc->node = NGX_HTTP_GMS_NODE_SUBSCRIPTION;

    rc->addr = dc->addr;            /* NULL: the discovery names it */

    if (gmcf->metrics) {
        iv->sync_timer.handler = ngx_http_gms_invalidate_sync_age;
        iv->sync_timer.log = cycle->log;
        iv->sync_timer.data = iv;
        iv->sync_timer.cancelable = 1;
        ngx_add_timer(&iv->sync_timer,
                      (ngx_msec_t) ngx_random() % NGX_HTTP_GMS_SYNC_EVERY + 1);
    }

    if (gmcf->cache == NULL) {
        return NGX_OK;
    }

    /* the invalidations: with a cache only */

    iv->retry_timer.handler = ngx_http_gms_invalidate_retry;
    iv->retry_timer.log = cycle->log;
    iv->retry_timer.data = iv;
    iv->retry_timer.cancelable = 1;

    ngx_http_gms_invalidate_subscribe();

    return NGX_OK;
}


void
ngx_http_gms_invalidate_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_gms_invalidate.exiting = 1;

    if (ngx_http_gms_invalidate.gmcf == NULL) {
        return;
    }

    ngx_http_gms_rconn_close(&ngx_http_gms_invalidate_sub, NGX_LOG_DEBUG,
                             "exiting");
}


/* the master moved (Sentinel): the subscription goes there at once */

void
ngx_http_gms_invalidate_set_master(struct sockaddr *sa, socklen_t socklen)
{
    ngx_http_gms_rconn_t       *rc;
    ngx_http_gms_invalidate_t  *iv;

    iv = &ngx_http_gms_invalidate;
    rc = &ngx_http_gms_invalidate_sub;

    if (ngx_http_gms_rconn_is_peer(rc, sa, socklen)) {
        return;
    }

    ngx_http_gms_rconn_set_peer(rc, sa, socklen);

    if (ngx_http_gms_rconn_open(rc)) {
        ngx_http_gms_rconn_close(rc, NGX_LOG_NOTICE, "the master moved");
    }

    rc->backoff = 0;

    /* a subscriber waiting for a master connects now */

    if (iv->retry_timer.timer_set) {
        ngx_del_timer(&iv->retry_timer);
    }

    ngx_http_gms_invalidate_subscribe();
}


/*
 * The connection's setup (ngx_http_gms_redis_server_connect()) and
 * SUBSCRIBE.  No
 * ROLE: the subscription's replies are held to the shape of messages, and
 * a replica delivers what is published on the master.
 */

static ngx_int_t
ngx_http_gms_invalidate_connect(ngx_http_gms_rconn_t *rc)
{
    size_t                     lens[2];
    ngx_int_t                  rv;
    const char                *argv[2];
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = rc->gmcf;

    rv = ngx_http_gms_redis_server_connect(rc, NULL);
    if (rv != NGX_OK) {
        return rv;
    }

    argv[0] = "SUBSCRIBE";
    lens[0] = sizeof("SUBSCRIBE") - 1;
    argv[1] = (const char *) gmcf->redis.invalidate.data;
    lens[1] = gmcf->redis.invalidate.len;

    if (ngx_http_gms_rconn_argv(rc, 2, argv, lens,
                                ngx_http_gms_invalidate_message, NULL)
        != NGX_OK)
    {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR,
                                 "cannot queue the connection setup");
        return NGX_ERROR;
    }

    /* what comes after the confirmation is messages */
    rc->subscribed = 1;

    return NGX_OK;
}


/*
 * The subscriber connects from a timer: at once the first time, then
 * after the backoff of the failure.
 */

static void
ngx_http_gms_invalidate_subscribe(void)
{
    ngx_msec_t                  delay;
    ngx_http_gms_rconn_t       *rc;
    ngx_http_gms_invalidate_t  *iv;

    iv = &ngx_http_gms_invalidate;
    rc = &ngx_http_gms_invalidate_sub;

    if (iv->retry_timer.timer_set || iv->exiting
        || iv->retry_timer.handler == NULL)
    {
        return;
    }

    delay = 1;

    if (ngx_http_gms_rconn_in_backoff(rc)) {
        delay = rc->retry_at - ngx_current_msec;
    }

    ngx_add_timer(&iv->retry_timer, delay);
}


static void
ngx_http_gms_invalidate_retry(ngx_event_t *ev)
{
    ngx_http_gms_rconn_t  *rc;

    rc = &ngx_http_gms_invalidate_sub;

    if (ngx_http_gms_rconn_open(rc) || ngx_http_gms_invalidate.exiting) {
        return;
    }

    if (ngx_http_gms_invalidate_connect(rc) != NGX_OK
        && !ngx_http_gms_rconn_open(rc))
    {
        /* no master named yet, or a failure: try again later */
        if (rc->backoff == 0) {
            ngx_http_gms_rconn_failed(rc);
        }

        ngx_http_gms_invalidate_subscribe();
    }
}


static void
ngx_http_gms_invalidate_closed(ngx_http_gms_rconn_t *rc)
{
    ngx_http_gms_invalidate_t  *iv;

    iv = &ngx_http_gms_invalidate;

    if (iv->subscribed) {
        iv->subscribed = 0;
        ngx_http_gms_count_down(subscriptions);
    }

    if (rc->gmcf->redis.cluster && !iv->exiting) {
        /* the node may be gone: the map names the slot's master anew */
        iv->dc->ask("the subscription's node failed");
    }

    ngx_http_gms_invalidate_subscribe();
}


/*
 * SUBSCRIBE's confirmation, each message and PING's answer: ["subscribe",
 * channel, count], ["message", channel, payload] and ["pong", ""] (the
 * subscriber's reply builders have made sure of the shape).
 */

static void
ngx_http_gms_invalidate_message(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    ngx_uint_t                  n;
    redisReply                 *kind, *payload;
    ngx_http_gms_invalidate_t  *iv;

    iv = &ngx_http_gms_invalidate;

    if (reply == NULL) {
        /* the connection is going: the close says why */
        return;
    }

    if (ngx_http_gms_redis_idle_heard(rc, reply)) {
        return;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        if (ngx_http_gms_redis_server_unavailable(rc, reply) == NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                          "gms: redis at %V: unexpected reply to SUBSCRIBE",
                          &rc->peer);
            ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "bad subscription");
        }

        return;
    }

    kind = reply->element[0];
    payload = reply->element[2];

    if (ngx_http_gms_rconn_says(kind, "subscribe")) {
        if (!iv->subscribed) {
            iv->subscribed = 1;
            ngx_http_gms_count(subscriptions);
        }

        /* a silent peer would leave revocations unheard for hours */
        ngx_http_gms_redis_idle_watch(rc);

        /* whatever was published while nobody listened is lost */

        n = ngx_http_gms_cache_drop(rc->gmcf->cache, (u_char *) "*", 1);
        ngx_http_gms_count(invalidation_flushes);
        ngx_http_gms_invalidate_remember((u_char *) "*", 1);

        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "gms: subscribed to \"%V\" at %V, %ui cached entries "
                      "dropped", &rc->gmcf->redis.invalidate, &rc->peer, n);
        return;
    }

    if (!ngx_http_gms_rconn_says(kind, "message")
        || payload->type != REDIS_REPLY_STRING)
    {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis at %V: unexpected message on the "
                      "subscription", &rc->peer);
        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "bad message");
        return;
    }

    ngx_http_gms_count(invalidations);

    /* remembered first: a lookup may start between the two */
    ngx_http_gms_invalidate_remember((u_char *) payload->str, payload->len);

    n = ngx_http_gms_cache_drop(rc->gmcf->cache, (u_char *) payload->str,
                                payload->len);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: invalidation \"%*s\": %ui entries dropped",
                   ngx_min(payload->len, 128), payload->str, n);
}


/*
 * Whether a lookup must be read from the master: its token id, or its
 * user (NULL: not known before the lookup, so any user) was invalidated
 * in the last NGX_HTTP_GMS_RECENT_TIME ms, or everything was.
 */

ngx_uint_t
ngx_http_gms_invalidate_recent(u_char *id, ngx_str_t *user)
{
    ngx_str_t                   key;
    ngx_http_gms_invalidate_t  *iv;

    iv = &ngx_http_gms_invalidate;

    if (!iv->recent_ready || !iv->gmcf->redis.replica) {
        return 0;
    }

    ngx_http_gms_invalidate_expire();

    if (ngx_http_gms_invalidate_until(iv->all_recent, iv->all_until)) {
        return 1;
    }

    key.data = id;
    key.len = GMS_TOKEN_ID_LEN;

    if (iv->nrecent
        && ngx_str_rbtree_lookup(&iv->recent, &key,
                                 ngx_crc32_short(key.data, key.len))
           != NULL)
    {
        return 1;
    }

    if (user == NULL || user->len == 0) {
        return ngx_http_gms_invalidate_until(iv->users_recent,
                                             iv->users_until);
    }

    return iv->nrecent
           && ngx_str_rbtree_lookup(&iv->recent, user,
                                    ngx_crc32_short(user->data, user->len))
              != NULL;
}


/* a message, remembered for NGX_HTTP_GMS_RECENT_TIME ms */

static void
ngx_http_gms_invalidate_remember(u_char *what, size_t len)
{
    uint32_t                    hash;
    ngx_str_t                   key;
    ngx_msec_t                  until;
    ngx_http_gms_recent_t      *rn;
    ngx_http_gms_invalidate_t  *iv;

    iv = &ngx_http_gms_invalidate;

    if (!iv->recent_ready || !iv->gmcf->redis.replica) {
        return;
    }

    ngx_http_gms_invalidate_expire();

    until = ngx_current_msec + NGX_HTTP_GMS_RECENT_TIME;

    if (!(len == GMS_TOKEN_ID_LEN
          && gms_token_id_valid((char *) what, len))
        && !gms_token_actor_valid((char *) what, len))
    {
        /* "*", or what drops everything from the cache */
        goto all;
    }

    if (len != GMS_TOKEN_ID_LEN || !gms_token_id_valid((char *) what, len)) {
        /* a user: tokens whose user is unknown until read, the master */
        iv->users_until = until;
        iv->users_recent = 1;
    }

    key.data = what;
    key.len = len;
    hash = ngx_crc32_short(what, len);

    rn = (ngx_http_gms_recent_t *) ngx_str_rbtree_lookup(&iv->recent, &key,
                                                          hash);

    if (rn != NULL) {
        rn->until = until;
        ngx_queue_remove(&rn->queue);
        ngx_queue_insert_tail(&iv->recent_queue, &rn->queue);
        return;
    }

    if (iv->nrecent >= NGX_HTTP_GMS_RECENT_MAX) {
        goto all;
    }

    rn = ngx_alloc(offsetof(ngx_http_gms_recent_t, data) + len,
                   ngx_cycle->log);
    if (rn == NULL) {
        goto all;
    }

    ngx_memcpy(rn->data, what, len);
    rn->sn.node.key = hash;
    rn->sn.str.data = rn->data;
    rn->sn.str.len = len;
    rn->until = until;

    ngx_rbtree_insert(&iv->recent, &rn->sn.node);
    ngx_queue_insert_tail(&iv->recent_queue, &rn->queue);
    iv->nrecent++;

    return;

all:

    iv->all_until = until;
    iv->all_recent = 1;
}


/* what is older than the window goes: the oldest are first in the queue */

static void
ngx_http_gms_invalidate_expire(void)
{
    ngx_queue_t                *q;
    ngx_http_gms_recent_t      *rn;
    ngx_http_gms_invalidate_t  *iv;

    iv = &ngx_http_gms_invalidate;

    while (!ngx_queue_empty(&iv->recent_queue)) {
        q = ngx_queue_head(&iv->recent_queue);
        rn = ngx_queue_data(q, ngx_http_gms_recent_t, queue);

        if (ngx_http_gms_invalidate_until(1, rn->until)) {
            break;
        }

        ngx_queue_remove(q);
        ngx_rbtree_delete(&iv->recent, &rn->sn.node);
        ngx_free(rn);
        iv->nrecent--;
    }

    iv->all_recent = ngx_http_gms_invalidate_until(iv->all_recent,
                                                   iv->all_until);
    iv->users_recent = ngx_http_gms_invalidate_until(iv->users_recent,
                                                     iv->users_until);
}


static ngx_uint_t
ngx_http_gms_invalidate_until(ngx_uint_t set, ngx_msec_t until)
{
    return set && (ngx_msec_int_t) (until - ngx_current_msec) > 0;
}


/*
 * What a subscription may receive is small and of one shape: arrays of 3
 * (2: PING's answer), whose elements are strings (the third may be
 * SUBSCRIBE's count), no nesting; besides, the status and error replies
 * of AUTH and SELECT.
 * Anything else is refused before it is built: the connection is dropped.
 */

static void *
ngx_http_gms_invalidate_string(const redisReadTask *task, char *str,
    size_t len)
{
    if ((task->parent == NULL && task->type != REDIS_REPLY_STATUS
         && task->type != REDIS_REPLY_ERROR)
        || len > GMS_ACTOR_MAX + 64)
    {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis subscription: unexpected string");
        return NULL;
    }

    return ngx_http_gms_reply_hiredis->createString(task, str, len);
}


static void *
ngx_http_gms_invalidate_array(const redisReadTask *task,
    gms_hiredis_count_t elements)
{
    if (task->parent != NULL || (elements != 3 && elements != 2)) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis subscription: unexpected array");
        return NULL;
    }

    return ngx_http_gms_reply_hiredis->createArray(task, elements);
}


static void *
ngx_http_gms_invalidate_integer(const redisReadTask *task, long long value)
{
    if (task->parent == NULL || task->idx != 2) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis subscription: unexpected integer");
        return NULL;
    }

    return ngx_http_gms_reply_hiredis->createInteger(task, value);
}


static void *
ngx_http_gms_invalidate_nil(const redisReadTask *task)
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
ngx_http_gms_invalidate_sync_age(ngx_event_t *ev)
{
    ngx_http_gms_invalidate_t *iv = ev->data;

    size_t                   lens[3];
    const char              *argv[3];
    ngx_atomic_uint_t        asked, now;
    ngx_http_gms_rconn_t    *rc;
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

    rc = ngx_http_gms_redis_open_master();

    if (rc == NULL) {
        return;
    }

    argv[0] = "HGET";
    lens[0] = 4;
    argv[1] = (const char *) iv->gmcf->redis.sync_key.data;
    lens[1] = iv->gmcf->redis.sync_key.len;
    argv[2] = "at";
    lens[2] = 2;

    if (ngx_http_gms_rconn_argv(rc, 3, argv, lens,
                                ngx_http_gms_invalidate_sync_reply, NULL)
        != NGX_OK)
    {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR, "cannot send HGET");
    }
}


static void
ngx_http_gms_invalidate_sync_reply(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
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

    if (reply->type != REDIS_REPLY_STRING
        && reply->type != REDIS_REPLY_ERROR)
    {
        /*
         * HGET answers a string, nil or an error: anything else is a
         * peer out of step with what was asked, and the lookups pipelined
         * on the same connection cannot trust their answers either
         */
        ngx_http_gms_rconn_protocol_error(rc, "an answer to HGET that is "
                                          "no string");
        return;
    }

    if (reply->type != REDIS_REPLY_STRING || reply->len == 0
        || gms_token_parse_ms(reply->str, reply->len, &at) != 0 || at <= 0)
    {
        if (ngx_http_gms_redis_server_unavailable(rc, reply) != NGX_OK) {
            return;
        }

        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "gms: \"%V\" field \"at\" is not a time in ms",
                      &rc->gmcf->redis.sync_key);
        m->sync_at = 0;
        return;
    }

    m->sync_at = (ngx_atomic_uint_t) at;
}

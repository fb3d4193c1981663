
/*
 * A request's Redis lookup, as the token check starts it on a cache miss.
 *
 * The request joins the worker's lookup of that id already in flight, or
 * starts one ("coalescing": N concurrent requests with one cold token make
 * one Redis lookup).  Each waiting request has its own deadline, an nginx
 * timer; the reply or the failure is handed to every waiter and the
 * requests resume through a posted event, outside the reply's callback.
 * The reply is cached as an entry: for every waiter, and for the requests
 * to come.
 *
 * A lookup sent before an invalidation (of anything: the cache's
 * generation moved) is joined by no request that comes after it, whose
 * answer must not be older than the invalidation: they start another.  A
 * token or user invalidated lately is read from the master, not from a
 * replica that may not have applied the change yet.
 */


#include "ngx_http_gms_lookup.h"
#include "ngx_http_gms_credentials.h"
#include "ngx_http_gms_invalidate.h"
#include "ngx_http_gms_redis.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_metrics.h"

#include "gms_lookup.h"

#include <time.h>


/* the token ids of bad entries a worker remembers having logged */
#define NGX_HTTP_GMS_BAD_LOGGED  64


struct ngx_http_gms_flight_s {
    ngx_str_node_t                sn;          /* key: the token id */
    ngx_queue_t                   waiters;     /* of ngx_http_gms_ctx_t */
    ngx_queue_t                   free;
    ngx_http_gms_main_conf_t     *gmcf;
    ngx_http_gms_redis_lookup_t  *lookup;      /* until the answer */
    ngx_uint_t                    sent_usec;
    ngx_uint_t                    generation;  /* the cache's, when sent */
    ngx_uint_t                    detached;    /* no longer in the tree */

    /* of a verified token (actor_len 0: a lookup without a key) */
    gms_token_type_e              type;
    int64_t                       expires_at;  /* the cache bound, or 0 */
    ngx_uint_t                    members;     /* the user's lookup only */
    size_t                        actor_len;

    u_char                        id[GMS_TOKEN_ID_LEN];
    u_char                        actor[GMS_ACTOR_MAX];
};


typedef struct {
    ngx_rbtree_t               rbtree;
    ngx_rbtree_node_t          sentinel;
    ngx_queue_t                free;
    /* privileges, joined; bounded by what a lookup accepts */
    u_char                     scratch[GMS_PRIVILEGES_MAX
                                       * (GMS_PRIVILEGE_MAX + 1)];
    unsigned                   ready:1;
} ngx_http_gms_flights_t;


static ngx_http_gms_flight_t *ngx_http_gms_flight(
    ngx_http_gms_main_conf_t *gmcf, u_char *id, gms_jwt_claims_t *claims,
    ngx_uint_t *joined);
static void ngx_http_gms_flight_free(ngx_http_gms_flight_t *flight);
static ngx_int_t ngx_http_gms_flight_leave(ngx_http_gms_ctx_t *ctx);
static void ngx_http_gms_lookup_done(void *data, gms_lookup_rc_e rv,
    gms_lookup_t *lk, const char *error);
static ngx_uint_t ngx_http_gms_outage_log(ngx_uint_t *suppressed);
static void ngx_http_gms_log_bad_entry(u_char *id, const char *error);
static ngx_int_t ngx_http_gms_lookup_entry(ngx_http_gms_flight_t *flight,
    gms_lookup_rc_e rv, gms_lookup_t *lk, ngx_http_gms_cache_entry_t *entry);
static void ngx_http_gms_lookup_unknown(ngx_http_gms_flight_t *flight,
    ngx_http_gms_cache_entry_t *entry);
static u_char *ngx_http_gms_join(redisReply **privileges, size_t n);
static void ngx_http_gms_fail(ngx_http_gms_ctx_t *ctx,
    ngx_http_gms_error_e kind);
static void ngx_http_gms_resume(ngx_http_gms_ctx_t *ctx);
static void ngx_http_gms_deadline_handler(ngx_event_t *ev);
static void ngx_http_gms_wake_handler(ngx_event_t *ev);
static void ngx_http_gms_ctx_cleanup(void *data);
static ngx_uint_t ngx_http_gms_usec(void);


/* per worker process */
static ngx_http_gms_flights_t  ngx_http_gms_flights;


/*
 * NGX_AGAIN: the request waits for the reply (or its deadline), then runs
 * its phases again; NGX_DECLINED: Redis cannot be asked now, and
 * ctx->result is the failure (or the stale entry's).
 */

ngx_int_t
ngx_http_gms_lookup(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx,
    gms_jwt_claims_t *claims)
{
    ngx_uint_t                 joined, suppressed;
    ngx_pool_cleanup_t        *cln;
    ngx_http_gms_flight_t     *flight;
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = ngx_http_get_module_main_conf(r, ngx_http_gms_module);

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_gms_ctx_cleanup;
    cln->data = ctx;

    /* the events' data is ctx: debug logs read its ident as an fd */
    ctx->ident = r->connection->fd;

    ctx->deadline.handler = ngx_http_gms_deadline_handler;
    ctx->deadline.data = ctx;
    ctx->deadline.log = r->connection->log;

    ctx->wake.handler = ngx_http_gms_wake_handler;
    ctx->wake.data = ctx;
    ctx->wake.log = r->connection->log;

    flight = ngx_http_gms_flight(gmcf, ctx->id, claims, &joined);

    if (flight == NULL) {
        if (ngx_http_gms_outage_log(&suppressed)) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "gms: redis unavailable for token id \"%s\" "
                          "(%ui such lines suppressed)", ctx->id, suppressed);
        }

        ngx_http_gms_fail(ctx, NGX_HTTP_GMS_ERR_CONNECT);
        return NGX_DECLINED;
    }

    if (joined) {
        ngx_http_gms_count(coalesced);
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "gms: token id \"%s\": %s flight, deadline %M ms",
                   ctx->id, joined ? "joined its" : "a new",
                   gmcf->redis.timeout);

    ctx->flight = flight;
    ngx_queue_insert_tail(&flight->waiters, &ctx->queue);

    ctx->pending = 1;
    ngx_add_timer(&ctx->deadline, gmcf->redis.timeout);

    /* as limit_req's delay: notice a client that goes away meanwhile */
    r->read_event_handler = ngx_http_test_reading;

    return NGX_AGAIN;
}


/* the worker's lookup of this id in flight, or a new one; NULL: failed */

static ngx_http_gms_flight_t *
ngx_http_gms_flight(ngx_http_gms_main_conf_t *gmcf, u_char *id,
    gms_jwt_claims_t *claims, ngx_uint_t *joined)
{
    uint32_t                 hash;
    ngx_str_t                key, actor;
    ngx_uint_t               master;
    ngx_queue_t             *q;
    ngx_str_node_t          *sn;
    ngx_http_gms_flight_t   *flight;
    ngx_http_gms_flights_t  *fl;

    fl = &ngx_http_gms_flights;

    if (!fl->ready) {
        ngx_rbtree_init(&fl->rbtree, &fl->sentinel,
                        ngx_str_rbtree_insert_value);
        ngx_queue_init(&fl->free);
        fl->ready = 1;
    }

    key.data = id;
    key.len = GMS_TOKEN_ID_LEN;
    hash = ngx_http_gms_id_hash(id);

    sn = ngx_str_rbtree_lookup(&fl->rbtree, &key, hash);

    if (sn != NULL) {
        flight = (ngx_http_gms_flight_t *) sn;

        if (flight->generation
            == ngx_http_gms_cache_generation(gmcf->cache))
        {
            *joined = 1;
            return flight;
        }

        /* sent before an invalidation: its waiters keep it, alone */

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: token id \"%*s\": its flight predates an "
                       "invalidation, a new one goes",
                       (size_t) GMS_TOKEN_ID_LEN, id);

        ngx_rbtree_delete(&fl->rbtree, &flight->sn.node);
        flight->detached = 1;
    }

    *joined = 0;

    if (!ngx_queue_empty(&fl->free)) {
        q = ngx_queue_head(&fl->free);
        ngx_queue_remove(q);
        flight = ngx_queue_data(q, ngx_http_gms_flight_t, free);

    } else {
        flight = ngx_alloc(sizeof(ngx_http_gms_flight_t), ngx_cycle->log);
        if (flight == NULL) {
            return NULL;
        }
    }

    ngx_memcpy(flight->id, id, GMS_TOKEN_ID_LEN);
    flight->sn.node.key = hash;
    flight->sn.str.data = flight->id;
    flight->sn.str.len = GMS_TOKEN_ID_LEN;
    flight->gmcf = gmcf;
    flight->sent_usec = ngx_http_gms_usec();
    flight->generation = ngx_http_gms_cache_generation(gmcf->cache);
    flight->detached = 0;
    ngx_queue_init(&flight->waiters);

    /* every waiter has this id, so this token and these claims */

    flight->type = GMS_TOKEN_NONE;
    flight->expires_at = 0;
    flight->members = 0;
    flight->actor_len = 0;

    if (claims) {
        flight->type = claims->type;
        flight->expires_at = ngx_http_gms_jwt_bound(claims, gmcf);
        flight->members = !gms_jwt_stateful(claims);
        flight->actor_len = claims->actor_len;
        ngx_memcpy(flight->actor, claims->actor, claims->actor_len);
    }

    actor.data = flight->actor;
    actor.len = flight->actor_len;

    /* the user is known beforehand for a signed token only */
    master = ngx_http_gms_invalidate_recent(id, claims ? &actor : NULL);

    if (ngx_http_gms_redis_lookup(gmcf, id, flight->members ? &actor : NULL,
                                  master, ngx_http_gms_lookup_done, flight,
                                  &flight->lookup)
        != NGX_OK)
    {
        ngx_queue_insert_head(&fl->free, &flight->free);
        return NULL;
    }

    ngx_rbtree_insert(&fl->rbtree, &flight->sn.node);
    ngx_http_gms_count(lookups);

    return flight;
}


static void
ngx_http_gms_flight_free(ngx_http_gms_flight_t *flight)
{
    if (!flight->detached) {
        ngx_rbtree_delete(&ngx_http_gms_flights.rbtree, &flight->sn.node);
    }

    ngx_queue_insert_head(&ngx_http_gms_flights.free, &flight->free);
}


/*
 * A request leaves its flight (its deadline, or it went).  The last one
 * takes back a lookup that still waits for a server to be known: nobody
 * would read its answer.  NGX_DECLINED: the lookup goes on (others wait,
 * or it was sent).
 */

static ngx_int_t
ngx_http_gms_flight_leave(ngx_http_gms_ctx_t *ctx)
{
    ngx_http_gms_flight_t  *flight;

    flight = ctx->flight;

    ngx_queue_remove(&ctx->queue);
    ctx->flight = NULL;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ctx->request->connection->log, 0,
                   "gms: token id \"%s\": the request leaves its flight",
                   ctx->id);

    if (!ngx_queue_empty(&flight->waiters)
        || ngx_http_gms_redis_cancel(flight->lookup) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    ngx_http_gms_flight_free(flight);

    return NGX_OK;
}


/*
 * The reply of a flight's lookup: into the shared cache, then to every
 * request still waiting.  Runs inside a hiredis callback: nothing here may
 * call back into hiredis, so requests resume through posted events.
 */

static void
ngx_http_gms_lookup_done(void *data, gms_lookup_rc_e rv, gms_lookup_t *lk,
    const char *error)
{
    ngx_http_gms_flight_t *flight = data;

    ngx_int_t                    rc;
    ngx_uint_t                   suppressed;
    ngx_queue_t                 *q;
    ngx_http_gms_ctx_t          *ctx;
    ngx_http_gms_error_e         kind;
    ngx_http_gms_cache_entry_t   entry;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "gms: token id \"%*s\": flight answered%s, waking its "
                   "requests", (size_t) GMS_TOKEN_ID_LEN, flight->id,
                   error ? " with an error" : "");

    if (error != NULL) {
        if (ngx_http_gms_outage_log(&suppressed)) {
            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                          "gms: redis lookup of token id \"%*s\" failed: %s "
                          "(%ui such lines suppressed)",
                          (size_t) GMS_TOKEN_ID_LEN, flight->id, error,
                          suppressed);
        }

        kind = NGX_HTTP_GMS_ERR_CONNECT;
        rc = NGX_ERROR;

    } else {
        ngx_http_gms_metrics_latency(ngx_http_gms_usec() - flight->sent_usec);
        kind = NGX_HTTP_GMS_ERR_REPLY;
        rc = ngx_http_gms_lookup_entry(flight, rv, lk, &entry);
    }

    while (!ngx_queue_empty(&flight->waiters)) {
        q = ngx_queue_head(&flight->waiters);
        ngx_queue_remove(q);

        ctx = ngx_queue_data(q, ngx_http_gms_ctx_t, queue);
        ctx->flight = NULL;

        if (rc == NGX_OK) {
            ngx_http_gms_lookup_apply(ctx, &entry);

            if (ctx->result == NGX_HTTP_GMS_OK
                && (ctx->actor.data == NULL
                    || ctx->privileges.data == NULL))
            {
                ngx_http_gms_fail(ctx, NGX_HTTP_GMS_ERR_REPLY);
            }

        } else {
            ngx_http_gms_fail(ctx, kind);
        }

        ngx_http_gms_resume(ctx);
    }

    ngx_http_gms_flight_free(flight);
}


/*
 * While Redis is down every request would log a line: at most one a
 * second instead, saying how many were left out since the last.
 */

static ngx_uint_t
ngx_http_gms_outage_log(ngx_uint_t *suppressed)
{
    static time_t      last;
    static ngx_uint_t  count;

    if (ngx_time() == last) {
        count++;
        return 0;
    }

    last = ngx_time();
    *suppressed = count;
    count = 0;

    return 1;
}


/*
 * A bad entry (or an error reply) for an id: 503, not cached, and logged
 * once a minute per id, not once a request.  The ids logged in the last
 * minute are remembered in a small table per worker; when more are bad,
 * the one logged longest ago makes room.
 */

static void
ngx_http_gms_log_bad_entry(u_char *id, const char *error)
{
    ngx_uint_t  i, oldest;

    static struct {
        time_t  time;
        u_char  id[GMS_TOKEN_ID_LEN];
    }  logged[NGX_HTTP_GMS_BAD_LOGGED];

    oldest = 0;

    for (i = 0; i < NGX_HTTP_GMS_BAD_LOGGED; i++) {

        if (ngx_memcmp(logged[i].id, id, GMS_TOKEN_ID_LEN) == 0) {
            if (ngx_time() - logged[i].time < 60) {
                return;
            }

            oldest = i;
            break;
        }

        if (logged[i].time < logged[oldest].time) {
            oldest = i;
        }
    }

    ngx_memcpy(logged[oldest].id, id, GMS_TOKEN_ID_LEN);
    logged[oldest].time = ngx_time();

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis lookup of token id \"%*s\" failed: %s "
                  "(not cached; logged once a minute for this id)",
                  (size_t) GMS_TOKEN_ID_LEN, id, error);
}


/*
 * The answer as a cache entry, cached; the strings live until the return.
 * A signed token's entry must name the token's own user: one that does
 * not is refused (401) and not cached, since the cache is wrong.
 */

static ngx_int_t
ngx_http_gms_lookup_entry(ngx_http_gms_flight_t *flight, gms_lookup_rc_e rv,
    gms_lookup_t *lk, ngx_http_gms_cache_entry_t *entry)
{
    u_char   *p;
    int64_t   expires_at;
    u_char    error[GMS_ACTOR_MAX * 2 + 128];

    ngx_memzero(entry, sizeof(ngx_http_gms_cache_entry_t));

    if (flight->members) {

        if (rv != GMS_LOOKUP_FOUND) {
            ngx_http_gms_log_bad_entry(flight->id, lk->error);
            return NGX_ERROR;
        }

        lk->actor = (const char *) flight->actor;
        lk->actor_len = flight->actor_len;

    } else {

        switch (rv) {

        case GMS_LOOKUP_UNKNOWN:
            ngx_http_gms_lookup_unknown(flight, entry);
            return NGX_OK;

        case GMS_LOOKUP_BAD_REPLY:
            ngx_http_gms_log_bad_entry(flight->id, lk->error);
            return NGX_ERROR;

        default: /* GMS_LOOKUP_FOUND */
            break;
        }

        if (lk->expires_at != 0
            && lk->expires_at <= ngx_http_gms_cache_now_ms())
        {
            entry->result = NGX_HTTP_GMS_EXPIRED;
            ngx_http_gms_cache_put(flight->gmcf->cache, flight->id, entry, 0,
                                   flight->generation);
            return NGX_OK;
        }

        if (flight->actor_len
            && (lk->actor_len != flight->actor_len
                || ngx_memcmp(lk->actor, flight->actor, lk->actor_len) != 0))
        {
            p = ngx_snprintf(error, sizeof(error) - 1,
                             "the entry's actor \"%*s\" does not match the "
                             "signed token's \"%*s\": refused; the entry is "
                             "wrong, fix what fills Redis",
                             lk->actor_len, lk->actor,
                             flight->actor_len, flight->actor);
            *p = '\0';

            ngx_http_gms_log_bad_entry(flight->id, (char *) error);

            entry->result = NGX_HTTP_GMS_UNKNOWN;
            return NGX_OK;
        }
    }

    p = ngx_http_gms_join(lk->privileges, lk->nprivileges);
    if (p == NULL) {
        return NGX_ERROR;
    }

    entry->result = NGX_HTTP_GMS_OK;
    entry->inactive = lk->inactive;
    entry->actor.data = (u_char *) lk->actor;
    entry->actor.len = lk->actor_len;
    entry->privileges.data = ngx_http_gms_flights.scratch;
    entry->privileges.len = p - ngx_http_gms_flights.scratch;

    if (flight->actor_len) {
        entry->type = flight->type;

    } else {
        entry->type = gms_token_type_parse(lk->type, lk->type_len);

        if (entry->type == GMS_TOKEN_SYSTEM) {
            entry->type = GMS_TOKEN_NONE;
        }
    }

    /* an entry never outlives its token: expiresAt in Redis, or exp */

    expires_at = lk->expires_at;

    if (flight->expires_at
        && (expires_at == 0 || flight->expires_at < expires_at))
    {
        expires_at = flight->expires_at;
    }

    ngx_http_gms_cache_put(flight->gmcf->cache, flight->id, entry,
                           expires_at, flight->generation);

    return NGX_OK;
}


/*
 * No entry in Redis.  A verified signed token (the flight has its actor)
 * is one GMS may have made since the last sync: NGX_HTTP_GMS_PASSED, GMS
 * to decide where the location lets it (gms_token_unknown_signed pass),
 * remembered for negative_ttl, never past the token's exp.  Unless
 * gms-token published its id lately: then Redis lost it (revoked, its
 * user made inactive), and it is refused until GMS is sure to refuse it
 * too (ngx_http_gms_cache_changed).  Any other token is unknown.
 */

static void
ngx_http_gms_lookup_unknown(ngx_http_gms_flight_t *flight,
    ngx_http_gms_cache_entry_t *entry)
{
    int64_t                until;
    ngx_http_gms_cache_t  *cache;

    cache = flight->gmcf->cache;

    entry->result = NGX_HTTP_GMS_UNKNOWN;
    until = 0;

    if (flight->actor_len) {
        until = ngx_http_gms_cache_changed(cache, flight->id);

        if (until == 0) {
            entry->result = NGX_HTTP_GMS_PASSED;

            if (cache) {
                until = ngx_http_gms_cache_now_ms()
                        + (int64_t) cache->negative_ttl;

                if (flight->expires_at && flight->expires_at < until) {
                    until = flight->expires_at;
                }
            }
        }
    }

    ngx_http_gms_cache_put(cache, flight->id, entry, until,
                           flight->generation);
}


/* the privileges, comma-separated, in the worker's scratch; NULL: too many */

static u_char *
ngx_http_gms_join(redisReply **privileges, size_t n)
{
    u_char                  *p;
    size_t                   i, len;
    ngx_http_gms_flights_t  *fl;

    fl = &ngx_http_gms_flights;
    len = 0;

    for (i = 0; i < n; i++) {
        len += privileges[i]->len + 1;
    }

    /* the reply parsers cap the count and the names */
    if (len > sizeof(fl->scratch)) {
        return NULL;
    }

    p = fl->scratch;

    for (i = 0; i < n; i++) {
        if (i) {
            *p++ = ',';
        }

        p = ngx_cpymem(p, privileges[i]->str, privileges[i]->len);
    }

    return p;
}


/* the entry's strings are copied unless they are already in r->pool */

void
ngx_http_gms_lookup_apply(ngx_http_gms_ctx_t *ctx,
    ngx_http_gms_cache_entry_t *entry)
{
    ngx_pool_t  *pool;

    ctx->result = entry->result;
    ctx->type = entry->type;
    ctx->no_privileges = entry->no_privileges;
    ctx->inactive = entry->inactive;

    if (entry->result != NGX_HTTP_GMS_OK || ctx->pending == 0) {
        ctx->actor = entry->actor;
        ctx->privileges = entry->privileges;
        return;
    }

    pool = ctx->request->pool;

    ctx->actor.len = entry->actor.len;
    ctx->actor.data = ngx_pstrdup(pool, &entry->actor);
    ctx->privileges.len = entry->privileges.len;
    ctx->privileges.data = entry->privileges.len
                           ? ngx_pstrdup(pool, &entry->privileges)
                           : (u_char *) "";
}


/* Redis failed this request: a stale entry if allowed, else 503 */

static void
ngx_http_gms_fail(ngx_http_gms_ctx_t *ctx, ngx_http_gms_error_e kind)
{
    if (ctx->has_stale) {
        ngx_log_error(NGX_LOG_WARN, ctx->request->connection->log, 0,
                      "gms: using the stale cache entry of token id \"%s\"",
                      ctx->id);

        ngx_http_gms_count(cache_stale);

        ctx->result = NGX_HTTP_GMS_OK;
        ctx->type = ctx->stale_type;
        ctx->actor = ctx->stale_actor;
        ctx->privileges = ctx->stale_privileges;
        ctx->inactive = ctx->stale_inactive;
        return;
    }

    ngx_http_gms_count(errors[kind]);
    ctx->result = NGX_HTTP_GMS_ERROR;
}


static void
ngx_http_gms_resume(ngx_http_gms_ctx_t *ctx)
{
    ctx->pending = 0;

    if (ctx->deadline.timer_set) {
        ngx_del_timer(&ctx->deadline);
    }

    ngx_post_event(&ctx->wake, &ngx_posted_events);
}


static void
ngx_http_gms_deadline_handler(ngx_event_t *ev)
{
    ngx_http_gms_ctx_t *ctx = ev->data;

    ngx_uint_t                    suppressed;
    ngx_http_gms_redis_lookup_t  *lookup;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ev->log, 0,
                   "gms: token id \"%s\": the lookup's deadline passed",
                   ctx->id);

    if (ngx_http_gms_outage_log(&suppressed)) {
        ngx_log_error(NGX_LOG_ERR, ev->log, 0,
                      "gms: redis lookup of token id \"%s\" timed out "
                      "(%ui such lines suppressed)", ctx->id, suppressed);
    }

    lookup = NULL;

    if (ctx->flight) {
        lookup = ctx->flight->lookup;

        if (ngx_http_gms_flight_leave(ctx) == NGX_OK) {
            lookup = NULL;
        }
    }

    ngx_http_gms_fail(ctx, NGX_HTTP_GMS_ERR_TIMEOUT);
    ctx->pending = 0;

    if (lookup) {
        /* every lookup pipelined behind the late one would be late too */
        ngx_http_gms_redis_late(lookup, "lookup timed out");
    }

    ngx_http_gms_wake_handler(&ctx->wake);
}


static void
ngx_http_gms_wake_handler(ngx_event_t *ev)
{
    ngx_http_gms_ctx_t *ctx = ev->data;

    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    r = ctx->request;
    c = r->connection;

    ngx_http_set_log_request(c->log, r);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "gms: token id \"%s\": the request wakes", ctx->id);

    r->read_event_handler = ngx_http_block_reading;
    r->write_event_handler = ngx_http_core_run_phases;

    ngx_http_core_run_phases(r);
    ngx_http_run_posted_requests(c);
}


static void
ngx_http_gms_ctx_cleanup(void *data)
{
    ngx_http_gms_ctx_t *ctx = data;

    /* the flight goes on without this request: its reply is still cached */

    if (ctx->flight) {
        (void) ngx_http_gms_flight_leave(ctx);
    }

    if (ctx->deadline.timer_set) {
        ngx_del_timer(&ctx->deadline);
    }

    if (ctx->wake.posted) {
        ngx_delete_posted_event(&ctx->wake);
    }
}


static ngx_uint_t
ngx_http_gms_usec(void)
{
    struct timespec  ts;

    (void) clock_gettime(CLOCK_MONOTONIC, &ts);

    return (ngx_uint_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

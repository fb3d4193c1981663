
/*
 * Counters in shared memory, summed across workers by construction, and
 * the "gms_token_metrics" handler that prints them for Prometheus.
 */


#include "ngx_http_gms_metrics.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_response.h"


static ngx_int_t ngx_http_gms_metrics_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_int_t ngx_http_gms_metrics_handler(ngx_http_request_t *r);


ngx_http_gms_metrics_t  *ngx_http_gms_metrics;


/* upper bounds, in microseconds, of the lookup latency histogram */
static ngx_uint_t  ngx_http_gms_latency_bounds[NGX_HTTP_GMS_LATENCY_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000,
    1000000
};

static const char  *ngx_http_gms_result_names[NGX_HTTP_GMS_NRESULTS] = {
    "off", "ok", "missing", "malformed", "unknown", "expired", "invalid",
    "forbidden", "error"
};

static const char  *ngx_http_gms_jwt_names[NGX_HTTP_GMS_JWT_NREASONS] = {
    "bad_signature", "expired", "malformed"
};

static const char  *ngx_http_gms_error_names[NGX_HTTP_GMS_NERRORS] = {
    "timeout", "connect", "reply"
};

static const char  *ngx_http_gms_target_names[NGX_HTTP_GMS_NTARGETS] = {
    "master", "replica", "sentinel"
};

static const char  *ngx_http_gms_es_task_names[NGX_HTTP_GMS_ES_NOUTCOMES] = {
    "status", "error", "refused", "cluster_error"
};


ngx_int_t
ngx_http_gms_metrics_add_zone(ngx_conf_t *cf)
{
    ngx_shm_zone_t   *shm_zone;
    static ngx_str_t  name = ngx_string("ngx_http_gms_metrics");

    shm_zone = ngx_shared_memory_add(cf, &name, 8 * ngx_pagesize,
                                     &ngx_http_gms_module);
    if (shm_zone == NULL) {
        return NGX_ERROR;
    }

    shm_zone->init = ngx_http_gms_metrics_init_zone;

    return NGX_OK;
}


static ngx_int_t
ngx_http_gms_metrics_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_slab_pool_t  *shpool;

    if (data) {
        /* a reload: the counters go on */
        shm_zone->data = data;
        ngx_http_gms_metrics = data;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    ngx_http_gms_metrics = ngx_slab_calloc(shpool,
                                           sizeof(ngx_http_gms_metrics_t));
    if (ngx_http_gms_metrics == NULL) {
        return NGX_ERROR;
    }

    shm_zone->data = ngx_http_gms_metrics;

    return NGX_OK;
}


void
ngx_http_gms_metrics_latency(ngx_uint_t usec)
{
    ngx_uint_t  i;

    if (ngx_http_gms_metrics == NULL) {
        return;
    }

    for (i = 0; i < NGX_HTTP_GMS_LATENCY_BUCKETS; i++) {
        if (usec <= ngx_http_gms_latency_bounds[i]) {
            break;
        }
    }

    (void) ngx_atomic_fetch_add(&ngx_http_gms_metrics->latency[i], 1);
    (void) ngx_atomic_fetch_add(&ngx_http_gms_metrics->latency_sum_us, usec);
}


char *
ngx_http_gms_metrics_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_gms_metrics_handler;

    return NGX_CONF_OK;
}


#define ngx_http_gms_metric_head(p, name, type, help)                        \
    ngx_sprintf(p, "# HELP " name " " help "\n# TYPE " name " " type "\n")


static ngx_int_t
ngx_http_gms_metrics_handler(ngx_http_request_t *r)
{
    u_char                    *p;
    int64_t                    sync_at, now, age;
    ngx_uint_t                 i, cumulative, positive, negative;
    ngx_int_t                  rc;
    ngx_buf_t                 *b;
    ngx_http_gms_metrics_t    *m;
    ngx_http_gms_main_conf_t  *gmcf;

    static ngx_str_t           type =
        ngx_string("text/plain; version=0.0.4; charset=utf-8");

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    m = ngx_http_gms_metrics;
    if (m == NULL) {
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    gmcf = ngx_http_get_module_main_conf(r, ngx_http_gms_module);
    ngx_http_gms_cache_sizes(gmcf->cache, &positive, &negative);

    b = ngx_create_temp_buf(r->pool, 16384);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = b->last;

    p = ngx_http_gms_metric_head(p, "gms_token_requests_total", "counter",
                         "Requests checked for a token, by result.");
    for (i = 1; i < NGX_HTTP_GMS_NRESULTS; i++) {
        p = ngx_sprintf(p, "gms_token_requests_total{result=\"%s\"} %uA\n",
                        ngx_http_gms_result_names[i], m->requests[i]);
    }

    p = ngx_http_gms_metric_head(p, "gms_token_jwt_rejected_total", "counter",
                         "Signed tokens refused without a Redis lookup, "
                         "by reason.");
    for (i = 0; i < NGX_HTTP_GMS_JWT_NREASONS; i++) {
        p = ngx_sprintf(p, "gms_token_jwt_rejected_total{reason=\"%s\"} "
                           "%uA\n",
                        ngx_http_gms_jwt_names[i], m->jwt_rejected[i]);
    }

    p = ngx_http_gms_metric_head(p, "gms_token_cache_hits_total", "counter",
                         "Token lookups answered by the shared cache.");
    p = ngx_sprintf(p, "gms_token_cache_hits_total{kind=\"positive\"} %uA\n"
                       "gms_token_cache_hits_total{kind=\"negative\"} %uA\n",
                    m->cache_hits[0], m->cache_hits[1]);

    p = ngx_http_gms_metric_head(p, "gms_token_cache_misses_total", "counter",
                         "Token lookups the shared cache could not answer.");
    p = ngx_sprintf(p, "gms_token_cache_misses_total %uA\n", m->cache_misses);

    p = ngx_http_gms_metric_head(p, "gms_token_cache_stale_total", "counter",
                         "Expired cache entries used while Redis failed.");
    p = ngx_sprintf(p, "gms_token_cache_stale_total %uA\n", m->cache_stale);

    p = ngx_http_gms_metric_head(p, "gms_token_cache_entries", "gauge",
                         "Entries in the shared cache, by kind.");
    p = ngx_sprintf(p, "gms_token_cache_entries{kind=\"positive\"} %ui\n"
                       "gms_token_cache_entries{kind=\"negative\"} %ui\n",
                    positive, negative);

    p = ngx_http_gms_metric_head(p, "gms_token_coalesced_total", "counter",
                         "Requests that waited on another request's lookup.");
    p = ngx_sprintf(p, "gms_token_coalesced_total %uA\n", m->coalesced);

    p = ngx_http_gms_metric_head(p, "gms_redis_lookups_total", "counter",
                         "Token lookups sent to Redis.");
    p = ngx_sprintf(p, "gms_redis_lookups_total %uA\n", m->lookups);

    p = ngx_http_gms_metric_head(p, "gms_redis_errors_total", "counter",
                         "Requests whose Redis lookup failed, by kind.");
    for (i = 0; i < NGX_HTTP_GMS_NERRORS; i++) {
        p = ngx_sprintf(p, "gms_redis_errors_total{kind=\"%s\"} %uA\n",
                        ngx_http_gms_error_names[i], m->errors[i]);
    }

    p = ngx_http_gms_metric_head(p, "gms_redis_reconnects_total", "counter",
                         "Connections to Redis opened after a failure.");
    p = ngx_sprintf(p, "gms_redis_reconnects_total %uA\n", m->reconnects);

    p = ngx_http_gms_metric_head(p, "gms_redis_connections", "gauge",
                         "Workers' open Redis connections.");
    p = ngx_sprintf(p, "gms_redis_connections %uA\n", m->connections);

    p = ngx_http_gms_metric_head(p, "gms_redis_connected", "gauge",
                         "Workers' Redis connections that are up, by target.");
    for (i = 0; i < NGX_HTTP_GMS_NTARGETS; i++) {
        p = ngx_sprintf(p, "gms_redis_connected{target=\"%s\"} %uA\n",
                        ngx_http_gms_target_names[i], m->connected[i]);
    }

    p = ngx_http_gms_metric_head(p, "gms_redis_tls_handshake_failures_total",
                         "counter", "TLS handshakes with Redis or a Sentinel "
                         "that failed or did not verify.");
    p = ngx_sprintf(p, "gms_redis_tls_handshake_failures_total %uA\n",
                    m->tls_failures);

    p = ngx_http_gms_metric_head(p, "gms_redis_failovers_total", "counter",
                         "Changes of master followed, as Sentinels named "
                         "them (per worker).");
    p = ngx_sprintf(p, "gms_redis_failovers_total %uA\n", m->failovers);

    p = ngx_http_gms_metric_head(p, "gms_redis_protocol_errors_total",
                         "counter", "Redis connections dropped for a reply "
                         "that was unasked for, malformed or over the caps.");
    p = ngx_sprintf(p, "gms_redis_protocol_errors_total %uA\n",
                    m->protocol_errors);

    p = ngx_http_gms_metric_head(p, "gms_redis_lookup_duration_seconds",
                         "histogram", "Time from sending a lookup to its reply.");

    cumulative = 0;

    for (i = 0; i < NGX_HTTP_GMS_LATENCY_BUCKETS; i++) {
        cumulative += m->latency[i];
        p = ngx_sprintf(p, "gms_redis_lookup_duration_seconds_bucket"
                           "{le=\"%ui.%06ui\"} %ui\n",
                        ngx_http_gms_latency_bounds[i] / 1000000,
                        ngx_http_gms_latency_bounds[i] % 1000000, cumulative);
    }

    cumulative += m->latency[NGX_HTTP_GMS_LATENCY_BUCKETS];

    p = ngx_sprintf(p, "gms_redis_lookup_duration_seconds_bucket"
                       "{le=\"+Inf\"} %ui\n"
                       "gms_redis_lookup_duration_seconds_sum %uA.%06uA\n"
                       "gms_redis_lookup_duration_seconds_count %ui\n",
                    cumulative, m->latency_sum_us / 1000000,
                    m->latency_sum_us % 1000000, cumulative);

    p = ngx_http_gms_metric_head(p, "gms_es_task_requests_total", "counter",
                         "getEsTaskStatus requests answered, by outcome.");
    for (i = 0; i < NGX_HTTP_GMS_ES_NOUTCOMES; i++) {
        p = ngx_sprintf(p, "gms_es_task_requests_total{outcome=\"%s\"} %uA\n",
                        ngx_http_gms_es_task_names[i], m->es_tasks[i]);
    }

    p = ngx_http_gms_metric_head(p, "gms_token_invalidations_total",
                         "counter", "Invalidation messages received "
                         "(each worker receives each message).");
    p = ngx_sprintf(p, "gms_token_invalidations_total %uA\n",
                    m->invalidations);

    p = ngx_http_gms_metric_head(p, "gms_token_invalidation_flushes_total",
                         "counter", "Whole-cache drops on (re)subscribing, "
                         "when messages may have been missed.");
    p = ngx_sprintf(p, "gms_token_invalidation_flushes_total %uA\n",
                    m->invalidation_flushes);

    p = ngx_http_gms_metric_head(p, "gms_token_invalidation_subscriptions",
                         "gauge", "Workers subscribed to the invalidation "
                         "channel.");
    p = ngx_sprintf(p, "gms_token_invalidation_subscriptions %uA\n",
                    m->subscriptions);

    /* a sync never seen is infinitely old: "> N" alerts fire on it too */

    p = ngx_http_gms_metric_head(p, "gms_token_sync_age_seconds", "gauge",
                         "Seconds since gms-token follow last completed a "
                         "cycle.");

    sync_at = (int64_t) m->sync_at;
    now = ngx_http_gms_now_ms();

    if (sync_at == 0) {
        p = ngx_sprintf(p, "gms_token_sync_age_seconds +Inf\n");

    } else {
        age = (now > sync_at) ? now - sync_at : 0;
        p = ngx_sprintf(p, "gms_token_sync_age_seconds %L.%03L\n",
                        age / 1000, age % 1000);
    }

    b->last = p;

    return ngx_http_gms_send(r, NGX_HTTP_OK, &type, b);
}


/*
 * Counters in shared memory, summed across workers by construction, and
 * the "gms_token_metrics" handler that prints them for Prometheus.
 */


#include "ngx_http_gms_metrics.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_response.h"


/* how a metric's samples are had */
typedef enum {
    NGX_HTTP_GMS_METRIC_COUNTERS = 0,  /* n counters from offset, by label */
    NGX_HTTP_GMS_METRIC_ENTRIES,       /* the cache's entries, by kind */
    NGX_HTTP_GMS_METRIC_HISTOGRAM,     /* the lookups' latency */
    NGX_HTTP_GMS_METRIC_SYNC_AGE,      /* since the last complete sync */
    NGX_HTTP_GMS_METRIC_NODES,         /* each worker's connections */
    NGX_HTTP_GMS_METRIC_BUILD          /* the module's build: always 1 */
} ngx_http_gms_metric_kind_e;


typedef struct {
    const char                  *name;
    const char                  *type;
    const char                  *help;
    ngx_http_gms_metric_kind_e   kind;
    size_t                       offset;   /* in ngx_http_gms_metrics_t */
    ngx_uint_t                   n;        /* counters */
    const char                  *label;    /* NULL: one unlabelled sample */
    const char * const          *values;   /* the label's, one a counter */
} ngx_http_gms_metric_t;


static ngx_int_t ngx_http_gms_metrics_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_int_t ngx_http_gms_metrics_handler(ngx_http_request_t *r);
static u_char *ngx_http_gms_metrics_write(u_char *p, u_char *last,
    ngx_http_gms_metrics_t *m, ngx_http_gms_cache_t *cache);
static u_char *ngx_http_gms_metrics_histogram(u_char *p, u_char *last,
    const ngx_http_gms_metric_t *d, ngx_http_gms_metrics_t *m);
static u_char *ngx_http_gms_metrics_sync_age(u_char *p, u_char *last,
    const ngx_http_gms_metric_t *d, ngx_http_gms_metrics_t *m);
static u_char *ngx_http_gms_metrics_nodes(u_char *p, u_char *last,
    const ngx_http_gms_metric_t *d, ngx_http_gms_metrics_t *m);


ngx_http_gms_metrics_t  *ngx_http_gms_metrics;


/* upper bounds, in microseconds, of the lookup latency histogram */
static ngx_uint_t  ngx_http_gms_latency_bounds[NGX_HTTP_GMS_LATENCY_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000,
    1000000
};

/* the results' and getEsTaskStatus outcomes' names: $gms_token_result's too */
const char * const  ngx_http_gms_metrics_results[NGX_HTTP_GMS_NRESULTS] = {
    "off", "ok", "missing", "malformed", "unknown", "expired", "invalid",
    "forbidden", "error", "passed", "guest"
};

static const char * const  ngx_http_gms_answer_names[NGX_HTTP_GMS_NANSWERS] = {
    "accepted", "refused", "failed"
};

static const char * const  ngx_http_gms_jwt_names[NGX_HTTP_GMS_JWT_NREASONS] = {
    "bad_signature", "expired", "malformed"
};

static const char * const  ngx_http_gms_kind_names[2] = {
    "positive", "negative"
};

static const char * const  ngx_http_gms_error_names[NGX_HTTP_GMS_NERRORS] = {
    "timeout", "connect", "reply"
};

static const char * const  ngx_http_gms_target_names[NGX_HTTP_GMS_NTARGETS] = {
    "master", "replica", "sentinel", "cluster"
};

static const char * const
    ngx_http_gms_node_names[NGX_HTTP_GMS_NNODES - 1] =
{
    "lookup", "replica", "subscription", "cluster_map", "ask"
};

static const char * const
    ngx_http_gms_redirect_names[NGX_HTTP_GMS_NREDIRECTS] =
{
    "moved", "ask"
};

const char * const
    ngx_http_gms_metrics_es_outcomes[NGX_HTTP_GMS_ES_NOUTCOMES] =
{
    "status", "error", "refused", "cluster_error"
};


/* a metric of one counter, and one of n counters by label */

#define ngx_http_gms_metric_counter(field)                                   \
    NGX_HTTP_GMS_METRIC_COUNTERS, offsetof(ngx_http_gms_metrics_t, field),   \
    1, NULL, NULL

#define ngx_http_gms_metric_counters(field, first, n, label, values)         \
    NGX_HTTP_GMS_METRIC_COUNTERS,                                            \
    offsetof(ngx_http_gms_metrics_t, field[first]), n, label, values + first


/* what gms_token_metrics prints, in this order */
static const ngx_http_gms_metric_t  ngx_http_gms_metric_table[] = {

    /*
     * Prometheus's <name>_build_info: the build nginx runs, which a
     * reload does not change (docs/operations.md, "Upgrading")
     */

    { "gms_module_build_info", "gauge",
      "The module's version and the nginx it was built for; always 1.",
      NGX_HTTP_GMS_METRIC_BUILD, 0, 0, NULL, NULL },

    { "gms_token_requests_total", "counter",
      "Requests checked for a token, by result.",
      ngx_http_gms_metric_counters(requests, 1, NGX_HTTP_GMS_NRESULTS - 1,
                                   "result", ngx_http_gms_metrics_results) },

    { "gms_token_passed_answers_total", "counter",
      "GMS's answers to requests passed with a signed token unknown to "
      "Redis, by answer.",
      ngx_http_gms_metric_counters(passed_answers, 0, NGX_HTTP_GMS_NANSWERS,
                                   "answer", ngx_http_gms_answer_names) },

    { "gms_token_jwt_rejected_total", "counter",
      "Signed tokens refused without a Redis lookup, by reason.",
      ngx_http_gms_metric_counters(jwt_rejected, 0,
                                   NGX_HTTP_GMS_JWT_NREASONS, "reason",
                                   ngx_http_gms_jwt_names) },

    { "gms_token_cache_hits_total", "counter",
      "Token lookups answered by the shared cache.",
      ngx_http_gms_metric_counters(cache_hits, 0, 2, "kind",
                                   ngx_http_gms_kind_names) },

    { "gms_token_cache_misses_total", "counter",
      "Token lookups the shared cache could not answer.",
      ngx_http_gms_metric_counter(cache_misses) },

    { "gms_token_cache_stale_total", "counter",
      "Expired cache entries used while Redis failed.",
      ngx_http_gms_metric_counter(cache_stale) },

    { "gms_token_cache_evictions_total", "counter",
      "Cache entries removed before their time to make room, by kind.",
      ngx_http_gms_metric_counters(cache_evictions, 0, 2, "kind",
                                   ngx_http_gms_kind_names) },

    { "gms_token_cache_entries", "gauge",
      "Entries in the shared cache, by kind.",
      NGX_HTTP_GMS_METRIC_ENTRIES, 0, 2, "kind", ngx_http_gms_kind_names },

    { "gms_token_coalesced_total", "counter",
      "Requests that waited on another request's lookup.",
      ngx_http_gms_metric_counter(coalesced) },

    { "gms_redis_lookups_total", "counter",
      "Token lookups sent to Redis.",
      ngx_http_gms_metric_counter(lookups) },

    { "gms_redis_errors_total", "counter",
      "Requests whose Redis lookup failed, by kind.",
      ngx_http_gms_metric_counters(errors, 0, NGX_HTTP_GMS_NERRORS, "kind",
                                   ngx_http_gms_error_names) },

    { "gms_redis_reconnects_total", "counter",
      "Connections to Redis opened after a failure.",
      ngx_http_gms_metric_counter(reconnects) },

    { "gms_redis_connections", "gauge",
      "Workers' open Redis connections.",
      ngx_http_gms_metric_counter(connections) },

    { "gms_redis_connected", "gauge",
      "Workers' Redis connections that are up, by target.",
      ngx_http_gms_metric_counters(connected, 0, NGX_HTTP_GMS_NTARGETS,
                                   "target", ngx_http_gms_target_names) },

    { "gms_redis_tls_handshake_failures_total", "counter",
      "TLS handshakes with Redis or a Sentinel that failed or did not "
      "verify.",
      ngx_http_gms_metric_counter(tls_failures) },

    { "gms_redis_failovers_total", "counter",
      "Changes of master followed, as Sentinels named them (per worker).",
      ngx_http_gms_metric_counter(failovers) },

    { "gms_redis_protocol_errors_total", "counter",
      "Redis connections dropped for a reply that was unasked for, "
      "malformed or over the caps.",
      ngx_http_gms_metric_counter(protocol_errors) },

    { "gms_redis_connections_recycled_total", "counter",
      "Redis and Sentinel connections closed at max_age, to be made anew.",
      ngx_http_gms_metric_counter(recycled) },

    { "gms_redis_auth_retries_total", "counter",
      "AUTH refused and sent again with the password file read anew.",
      ngx_http_gms_metric_counter(auth_retries) },

    { "gms_redis_password_file_reads_total", "counter",
      "Password files (password_file=, sentinel_password_file=) read "
      "again by a worker and found changed.",
      ngx_http_gms_metric_counter(password_reads) },

    { "gms_redis_script_refusals_total", "counter",
      "Times a worker found that Redis refuses scripts (an ACL without "
      "@scripting, EVALSHA renamed, no Lua engine) and made its lookups "
      "of plain commands.",
      ngx_http_gms_metric_counter(script_refusals) },

    { "gms_redis_scriptless_workers", "gauge",
      "Workers whose lookups are made of plain commands, Redis refusing "
      "scripts.",
      ngx_http_gms_metric_counter(scriptless) },

    { "gms_redis_scriptless_lookups_total", "counter",
      "Lookups answered by plain commands (HMGET, then MULTI/EXEC) "
      "instead of the script.",
      ngx_http_gms_metric_counter(scriptless_lookups) },

    { "gms_redis_node_up", "gauge",
      "Each worker's Redis connections by role, where they go (the last "
      "node connected to) and whether they are up.",
      NGX_HTTP_GMS_METRIC_NODES, 0, 0, NULL, NULL },

    { "gms_redis_cluster_redirections_total", "counter",
      "MOVED and ASK answers from a Redis Cluster's nodes, by kind.",
      ngx_http_gms_metric_counters(redirections, 0, NGX_HTTP_GMS_NREDIRECTS,
                                   "kind", ngx_http_gms_redirect_names) },

    { "gms_redis_cluster_map_refreshes_total", "counter",
      "Slot maps asked of a Redis Cluster (CLUSTER SHARDS or SLOTS).",
      ngx_http_gms_metric_counter(cluster_refreshes) },

    { "gms_redis_cluster_errors_total", "counter",
      "Lookups a Redis Cluster refused with CLUSTERDOWN or TRYAGAIN.",
      ngx_http_gms_metric_counter(cluster_errors) },

    { "gms_redis_lookup_duration_seconds", "histogram",
      "Time from sending a lookup to its reply.",
      NGX_HTTP_GMS_METRIC_HISTOGRAM, 0, 0, NULL, NULL },

    { "gms_es_task_requests_total", "counter",
      "getEsTaskStatus requests answered, by outcome.",
      ngx_http_gms_metric_counters(es_tasks, 0, NGX_HTTP_GMS_ES_NOUTCOMES,
                                   "outcome",
                                   ngx_http_gms_metrics_es_outcomes) },

    { "gms_token_invalidations_total", "counter",
      "Invalidation messages received (each worker receives each "
      "message).",
      ngx_http_gms_metric_counter(invalidations) },

    { "gms_token_invalidation_flushes_total", "counter",
      "Whole-cache drops on (re)subscribing, when messages may have been "
      "missed.",
      ngx_http_gms_metric_counter(invalidation_flushes) },

    { "gms_token_invalidation_subscriptions", "gauge",
      "Workers subscribed to the invalidation channel.",
      ngx_http_gms_metric_counter(subscriptions) },

    { "gms_token_sync_age_seconds", "gauge",
      "Seconds since gms-token follow last completed a cycle.",
      NGX_HTTP_GMS_METRIC_SYNC_AGE, 0, 0, NULL, NULL },

    { NULL, NULL, NULL, 0, 0, 0, NULL, NULL }
};


/*
 * The zone is made with the cycle, but ngx_http_gms_metrics points into it
 * only once the cycle is taken (ngx_http_gms_init_module): a reload that
 * fails after the zones were made frees them, and the running cycle's
 * counters must stay where they were.
 */

ngx_shm_zone_t *
ngx_http_gms_metrics_add_zone(ngx_conf_t *cf)
{
    ngx_shm_zone_t   *shm_zone;
    static ngx_str_t  name = ngx_string("ngx_http_gms_metrics");

    shm_zone = ngx_shared_memory_add(cf, &name, 8 * ngx_pagesize,
                                     &ngx_http_gms_module);
    if (shm_zone == NULL) {
        return NULL;
    }

    shm_zone->init = ngx_http_gms_metrics_init_zone;

    return shm_zone;
}


static ngx_int_t
ngx_http_gms_metrics_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_slab_pool_t  *shpool;

    if (data) {
        /* a reload: the counters go on */
        shm_zone->data = data;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    shm_zone->data = ngx_slab_calloc(shpool, sizeof(ngx_http_gms_metrics_t));
    if (shm_zone->data == NULL) {
        return NGX_ERROR;
    }

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
    ngx_http_gms_main_conf_t  *gmcf;
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_gms_metrics_handler;

    /* the counters' zone is made for it (ngx_http_gms_module.c) */
    gmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_gms_module);
    gmcf->metrics = 1;

    return NGX_CONF_OK;
}


/* the page is written again into a larger buffer if it did not fit */
#define NGX_HTTP_GMS_METRICS_SIZE  16384


static ngx_int_t
ngx_http_gms_metrics_handler(ngx_http_request_t *r)
{
    u_char                    *p;
    size_t                     size;
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

    for (size = NGX_HTTP_GMS_METRICS_SIZE; /* void */ ; size *= 2) {
        b = ngx_create_temp_buf(r->pool, size);
        if (b == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        p = ngx_http_gms_metrics_write(b->pos, b->end, m, gmcf->cache);

        /* a full buffer may have cut the page short */

        if (p < b->end) {
            break;
        }
    }

    b->last = p;

    return ngx_http_gms_response_send(r, NGX_HTTP_OK, &type, b);
}


/* the page, in the Prometheus text format, up to last */

static u_char *
ngx_http_gms_metrics_write(u_char *p, u_char *last,
    ngx_http_gms_metrics_t *m, ngx_http_gms_cache_t *cache)
{
    ngx_uint_t                    i, value[2];
    ngx_atomic_t                 *counter;
    const ngx_http_gms_metric_t  *d;

    for (d = ngx_http_gms_metric_table; d->name; d++) {

        p = ngx_slprintf(p, last, "# HELP %s %s\n# TYPE %s %s\n",
                         d->name, d->help, d->name, d->type);

        switch (d->kind) {

        case NGX_HTTP_GMS_METRIC_HISTOGRAM:
            p = ngx_http_gms_metrics_histogram(p, last, d, m);
            continue;

        case NGX_HTTP_GMS_METRIC_SYNC_AGE:
            p = ngx_http_gms_metrics_sync_age(p, last, d, m);
            continue;

        case NGX_HTTP_GMS_METRIC_NODES:
            p = ngx_http_gms_metrics_nodes(p, last, d, m);
            continue;

        case NGX_HTTP_GMS_METRIC_BUILD:
            p = ngx_slprintf(p, last, "%s{version=\"%s\","
                                      "nginx_version=\"%s\"} 1\n",
                             d->name, NGX_HTTP_GMS_VERSION, NGINX_VERSION);
            continue;

        case NGX_HTTP_GMS_METRIC_ENTRIES:
            ngx_http_gms_cache_sizes(cache, &value[0], &value[1]);

            for (i = 0; i < d->n; i++) {
                p = ngx_slprintf(p, last, "%s{%s=\"%s\"} %ui\n",
                                 d->name, d->label, d->values[i], value[i]);
            }

            continue;

        default: /* NGX_HTTP_GMS_METRIC_COUNTERS */
            break;
        }

        counter = (ngx_atomic_t *) ((u_char *) m + d->offset);

        if (d->label == NULL) {
            p = ngx_slprintf(p, last, "%s %uA\n", d->name, *counter);
            continue;
        }

        for (i = 0; i < d->n; i++) {
            p = ngx_slprintf(p, last, "%s{%s=\"%s\"} %uA\n",
                             d->name, d->label, d->values[i], counter[i]);
        }
    }

    return p;
}


static u_char *
ngx_http_gms_metrics_histogram(u_char *p, u_char *last,
    const ngx_http_gms_metric_t *d, ngx_http_gms_metrics_t *m)
{
    ngx_uint_t  i, cumulative;

    cumulative = 0;

    for (i = 0; i < NGX_HTTP_GMS_LATENCY_BUCKETS; i++) {
        cumulative += m->latency[i];
        p = ngx_slprintf(p, last, "%s_bucket{le=\"%ui.%06ui\"} %ui\n",
                         d->name, ngx_http_gms_latency_bounds[i] / 1000000,
                         ngx_http_gms_latency_bounds[i] % 1000000,
                         cumulative);
    }

    cumulative += m->latency[NGX_HTTP_GMS_LATENCY_BUCKETS];

    return ngx_slprintf(p, last, "%s_bucket{le=\"+Inf\"} %ui\n"
                                 "%s_sum %uA.%06uA\n"
                                 "%s_count %ui\n",
                        d->name, cumulative,
                        d->name, m->latency_sum_us / 1000000,
                        m->latency_sum_us % 1000000,
                        d->name, cumulative);
}


/* a sync never seen is infinitely old: "> N" alerts fire on it too */

static u_char *
ngx_http_gms_metrics_sync_age(u_char *p, u_char *last,
    const ngx_http_gms_metric_t *d, ngx_http_gms_metrics_t *m)
{
    int64_t  sync_at, now, age;

    sync_at = (int64_t) m->sync_at;
    now = ngx_http_gms_cache_now_ms();

    if (sync_at == 0) {
        return ngx_slprintf(p, last, "%s +Inf\n", d->name);
    }

    age = (now > sync_at) ? now - sync_at : 0;

    return ngx_slprintf(p, last, "%s %L.%03L\n", d->name,
                        age / 1000, age % 1000);
}


/*
 * A worker's connection came up or went: what gms_redis_node_up shows.
 * Written by that worker only; a reader may see a half-written address
 * for the instant of a change, never past the buffer.
 */

void
ngx_http_gms_metrics_node(ngx_uint_t role, ngx_str_t *peer, ngx_uint_t up)
{
    size_t                len;
    ngx_http_gms_node_t  *n;

    if (ngx_http_gms_metrics == NULL || role == NGX_HTTP_GMS_NODE_NONE
        || role >= NGX_HTTP_GMS_NNODES
        || ngx_worker >= NGX_HTTP_GMS_NODE_WORKERS)
    {
        return;
    }

    n = &ngx_http_gms_metrics->nodes[ngx_worker][role - 1];

    if (up) {
        len = ngx_min(peer->len, NGX_HTTP_GMS_NODE_TEXT);

        if (n->len != len || ngx_strncmp(n->text, peer->data, len) != 0) {
            n->len = 0;
            ngx_memcpy(n->text, peer->data, len);
            n->len = len;
        }
    }

    n->up = up;
}


static u_char *
ngx_http_gms_metrics_nodes(u_char *p, u_char *last,
    const ngx_http_gms_metric_t *d, ngx_http_gms_metrics_t *m)
{
    size_t                len;
    ngx_uint_t            w, i, j;
    ngx_http_gms_node_t  *n;
    u_char                text[NGX_HTTP_GMS_NODE_TEXT];

    for (w = 0; w < NGX_HTTP_GMS_NODE_WORKERS; w++) {
        for (i = 0; i < NGX_HTTP_GMS_NNODES - 1; i++) {
            n = &m->nodes[w][i];
            len = ngx_min(n->len, NGX_HTTP_GMS_NODE_TEXT);

            if (len == 0) {
                continue;
            }

            /* a label value: no quote, backslash or newline gets out */

            for (j = 0; j < len; j++) {
                text[j] = n->text[j];

                if (text[j] == '"' || text[j] == '\\' || text[j] < ' ') {
                    text[j] = '_';
                }
            }

            p = ngx_slprintf(p, last,
                             "%s{worker=\"%ui\",role=\"%s\",node=\"%*s\"} "
                             "%uA\n", d->name, w, ngx_http_gms_node_names[i],
                             len, text, n->up ? 1 : 0);
        }
    }

    return p;
}


/*
 * Counters shared by all workers, in a small shared-memory zone, served
 * in the Prometheus text format by "gms_token_metrics".
 */


#ifndef _NGX_HTTP_GMS_METRICS_H_INCLUDED_
#define _NGX_HTTP_GMS_METRICS_H_INCLUDED_


#include "ngx_http_gms_module.h"


#define NGX_HTTP_GMS_LATENCY_BUCKETS  12

/* the workers whose connections gms_redis_node shows */
#define NGX_HTTP_GMS_NODE_WORKERS     32
#define NGX_HTTP_GMS_NODE_TEXT        64


/* a worker's connections to Redis, by role: gms_redis_node's label */
typedef enum {
    NGX_HTTP_GMS_NODE_NONE = 0,        /* not shown */
    NGX_HTTP_GMS_NODE_LOOKUP,
    NGX_HTTP_GMS_NODE_REPLICA,
    NGX_HTTP_GMS_NODE_SUBSCRIPTION,
    NGX_HTTP_GMS_NODE_MAP,             /* the cluster map's seed */
    NGX_HTTP_GMS_NODE_ASK,             /* ASK redirections' target */
    NGX_HTTP_GMS_NNODES
} ngx_http_gms_node_role_e;


/* where one of them is, and whether it is up; written by its worker */
typedef struct {
    ngx_atomic_t               up;
    ngx_atomic_t               len;            /* 0: never connected */
    u_char                     text[NGX_HTTP_GMS_NODE_TEXT];
} ngx_http_gms_node_t;


/* redirections answered by a cluster's nodes */
typedef enum {
    NGX_HTTP_GMS_REDIRECT_MOVED = 0,
    NGX_HTTP_GMS_REDIRECT_ASK,
    NGX_HTTP_GMS_NREDIRECTS
} ngx_http_gms_redirect_e;


typedef enum {
    NGX_HTTP_GMS_ERR_TIMEOUT = 0,
    NGX_HTTP_GMS_ERR_CONNECT,
    NGX_HTTP_GMS_ERR_REPLY,
    NGX_HTTP_GMS_NERRORS
} ngx_http_gms_error_e;


/* getEsTaskStatus answers, by outcome */
typedef enum {
    NGX_HTTP_GMS_ES_STATUS = 0,        /* the task's value */
    NGX_HTTP_GMS_ES_ERROR,             /* "Could not get task status" */
    NGX_HTTP_GMS_ES_REFUSED,           /* 400, 401/403, 405, 413 */
    NGX_HTTP_GMS_ES_CLUSTER_ERROR,     /* 500: the cluster answered an error */
    NGX_HTTP_GMS_ES_NOUTCOMES
} ngx_http_gms_es_outcome_e;


/* signed tokens refused without asking Redis, by reason */
typedef enum {
    NGX_HTTP_GMS_JWT_BAD_SIGNATURE = 0,
    NGX_HTTP_GMS_JWT_EXPIRED,          /* exp passed, or nbf not reached */
    NGX_HTTP_GMS_JWT_MALFORMED,
    NGX_HTTP_GMS_JWT_NREASONS
} ngx_http_gms_jwt_reason_e;


/* GMS's answers to requests with a signed token it was left to decide */
typedef enum {
    NGX_HTTP_GMS_ANSWER_ACCEPTED = 0,  /* any status but 401 and 5xx */
    NGX_HTTP_GMS_ANSWER_REFUSED,       /* 401: the token is unknown now */
    NGX_HTTP_GMS_ANSWER_FAILED,        /* 5xx: nothing learnt */
    NGX_HTTP_GMS_NANSWERS
} ngx_http_gms_answer_e;


typedef struct {
    ngx_atomic_t               requests[NGX_HTTP_GMS_NRESULTS];
    ngx_atomic_t               passed_answers[NGX_HTTP_GMS_NANSWERS];
    ngx_atomic_t               jwt_rejected[NGX_HTTP_GMS_JWT_NREASONS];
    ngx_atomic_t               cache_hits[2];      /* positive, negative */
    ngx_atomic_t               cache_misses;
    ngx_atomic_t               cache_stale;
    ngx_atomic_t               cache_evictions[2]; /* positive, negative */
    ngx_atomic_t               coalesced;
    ngx_atomic_t               lookups;
    ngx_atomic_t               errors[NGX_HTTP_GMS_NERRORS];
    ngx_atomic_t               reconnects;
    ngx_atomic_t               connections;
    ngx_atomic_t               connected[NGX_HTTP_GMS_NTARGETS];
    ngx_atomic_t               tls_failures;
    ngx_atomic_t               failovers;
    ngx_atomic_t               protocol_errors;
    ngx_atomic_t               recycled;           /* at max_age */
    ngx_atomic_t               auth_retries;       /* AUTH sent again */
    ngx_atomic_t               password_reads;     /* a changed file read */
    ngx_atomic_t               script_refusals;    /* switches to plain */
    ngx_atomic_t               scriptless;         /* workers without */
    ngx_atomic_t               scriptless_lookups;
    ngx_atomic_t               latency[NGX_HTTP_GMS_LATENCY_BUCKETS + 1];
    ngx_atomic_t               latency_sum_us;
    ngx_atomic_t               es_tasks[NGX_HTTP_GMS_ES_NOUTCOMES];
    ngx_atomic_t               invalidations;      /* messages, all workers */
    ngx_atomic_t               invalidation_flushes;
    ngx_atomic_t               subscriptions;      /* workers subscribed */
    ngx_atomic_t               sync_asked;         /* the second last asked */
    ngx_atomic_t               sync_at;            /* ms; 0: unknown */
    ngx_atomic_t               redirections[NGX_HTTP_GMS_NREDIRECTS];
    ngx_atomic_t               cluster_refreshes;  /* slot maps asked */
    ngx_atomic_t               cluster_errors;     /* CLUSTERDOWN, TRYAGAIN */
    ngx_http_gms_node_t        nodes[NGX_HTTP_GMS_NODE_WORKERS]
                                    [NGX_HTTP_GMS_NNODES - 1];
} ngx_http_gms_metrics_t;


/* NULL until the zone is initialised: counting is then a no-op */
extern ngx_http_gms_metrics_t  *ngx_http_gms_metrics;


#define ngx_http_gms_count(field)                                            \
    do {                                                                     \
        if (ngx_http_gms_metrics) {                                          \
            (void) ngx_atomic_fetch_add(&ngx_http_gms_metrics->field, 1);    \
        }                                                                    \
    } while (0)

#define ngx_http_gms_count_down(field)                                       \
    do {                                                                     \
        if (ngx_http_gms_metrics) {                                          \
            (void) ngx_atomic_fetch_add(&ngx_http_gms_metrics->field, -1);   \
        }                                                                    \
    } while (0)


ngx_shm_zone_t *ngx_http_gms_metrics_add_zone(ngx_conf_t *cf);
void ngx_http_gms_metrics_node(ngx_uint_t role, ngx_str_t *peer,
    ngx_uint_t up);
void ngx_http_gms_metrics_latency(ngx_uint_t usec);
char *ngx_http_gms_metrics_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


extern const char * const
    ngx_http_gms_metrics_results[NGX_HTTP_GMS_NRESULTS];
extern const char * const
    ngx_http_gms_metrics_es_outcomes[NGX_HTTP_GMS_ES_NOUTCOMES];


#endif /* _NGX_HTTP_GMS_METRICS_H_INCLUDED_ */

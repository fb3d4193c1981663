
/*
 * Shared types of ngx_http_gms_module: its configuration, the request's
 * context (the token check's verdict, which ngx_http_gms_es_task_module
 * reads too), and the module itself.  Each file's functions are declared
 * in the header named for the file.
 */


#ifndef _NGX_HTTP_GMS_MODULE_H_INCLUDED_
#define _NGX_HTTP_GMS_MODULE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_jwt.h"
#include "gms_release.h"


typedef enum {
    NGX_HTTP_GMS_OFF = 0,
    NGX_HTTP_GMS_OK,
    NGX_HTTP_GMS_MISSING,
    NGX_HTTP_GMS_MALFORMED,
    NGX_HTTP_GMS_UNKNOWN,
    NGX_HTTP_GMS_EXPIRED,
    NGX_HTTP_GMS_INVALID,           /* signature, claims, system secret */
    NGX_HTTP_GMS_FORBIDDEN,
    NGX_HTTP_GMS_ERROR,
    NGX_HTTP_GMS_PASSED,            /* signed, unknown to Redis: to GMS */
    NGX_HTTP_GMS_GUEST,             /* no credential: GMS's guest user */
    NGX_HTTP_GMS_NRESULTS
} ngx_http_gms_result_e;


typedef struct ngx_http_gms_flight_s    ngx_http_gms_flight_t;
typedef struct ngx_http_gms_cache_sh_s  ngx_http_gms_cache_sh_t;
typedef struct ngx_http_gms_ctx_s       ngx_http_gms_ctx_t;


/* the subsystems' settings, which the main conf holds */
#include "ngx_http_gms_redis_conf.h"
#include "ngx_http_gms_credentials.h"


typedef struct {
    ngx_str_t                  name;
    ngx_slab_pool_t           *shpool;
    ngx_http_gms_cache_sh_t   *sh;
    uint32_t                   source;         /* where entries come from */
    ngx_msec_t                 ttl;
    ngx_msec_t                 negative_ttl;
    ngx_msec_t                 stale;
    ngx_msec_t                 changed;        /* ids published: kept so long */
    ngx_uint_t                 max_negative;
} ngx_http_gms_cache_t;


/* what a Redis connection is for: the metrics' target label */
typedef enum {
    NGX_HTTP_GMS_TARGET_MASTER = 0,
    NGX_HTTP_GMS_TARGET_REPLICA,
    NGX_HTTP_GMS_TARGET_SENTINEL,
    NGX_HTTP_GMS_TARGET_CLUSTER,       /* the slot map's seed node */
    NGX_HTTP_GMS_NTARGETS
} ngx_http_gms_target_e;


/*
 * Each subsystem's settings are its own type, in its own header, as
 * ngx_http_upstream_conf_t sits in proxy's conf: the Redis client's
 * (ngx_http_gms_redis_conf.h), the credentials' (ngx_http_gms_credentials.h)
 * and the cache's (above).
 */

typedef struct {
    ngx_http_gms_redis_conf_t        redis;
    ngx_http_gms_credentials_conf_t  credentials;

    ngx_http_gms_cache_t            *cache;
    ngx_shm_zone_t                  *metrics_zone;  /* NULL: module unused */
    ngx_array_t                      error_logs;    /* of ngx_log_t ** */
    ngx_array_t                      mask_headers;  /* of char *, lower */

    /*
     * what the locations use, noted as they are merged (es_task by
     * ngx_http_gms_es_task_module's merge): where none checks tokens,
     * answers getEsTaskStatus or serves metrics, neither module does
     * anything at all (ngx_http_gms_module.c)
     */
    unsigned                         checks:1;      /* gms_token_auth on */
    unsigned                         es_task:1;     /* gms_es_task_status */
    unsigned                         metrics:1;     /* gms_token_metrics */
} ngx_http_gms_main_conf_t;


#define NGX_HTTP_GMS_PHASE_ACCESS     0
#define NGX_HTTP_GMS_PHASE_PREACCESS  1


typedef struct {
    ngx_flag_t                 enable;
    ngx_uint_t                 phase;          /* gms_token_phase */
    ngx_uint_t                 preflight;      /* 1: pass */
    ngx_uint_t                 unknown_signed; /* 1: pass */
    ngx_http_complex_value_t  *source;         /* NULL: Authorization */
    ngx_int_t                  source_index;   /* its one variable, or -1 */
    ngx_str_t                  realm;
    ngx_array_t               *privileges;     /* of ngx_str_t */
    ngx_uint_t                 forbidden_status;

    /* gms_datahub_version, and what depends on it unless set */
    ngx_uint_t                 release;        /* a gms_release_t */
    ngx_flag_t                 guest;          /* gms_token_guest */
    ngx_uint_t                 forbidden_conf; /* 0: by release */

    /* WWW-Authenticate values, made at configuration time */
    ngx_str_t                  challenge;
    ngx_str_t                  challenge_invalid;
    ngx_str_t                  challenge_scope;
} ngx_http_gms_loc_conf_t;


struct ngx_http_gms_ctx_s {
    ngx_http_request_t        *request;
    ngx_http_gms_flight_t     *flight;         /* the lookup waited on */
    ngx_http_request_t        *subrequest;     /* the edge's own: no one's */

    /* ident must be after 3 pointers as in ngx_connection_t */
    ngx_int_t                  ident;

    ngx_http_gms_result_e      result;
    gms_token_type_e           type;
    ngx_str_t                  credential;     /* as a header carries it */
    ngx_uint_t                 generation;     /* the cache's, when passed */
    unsigned                   pending:1;
    unsigned                   no_privileges:1; /* a session's, not read */
    unsigned                   inactive:2;     /* gms_lookup_inactive_e */
    unsigned                   done:1;

    u_char                     id[GMS_TOKEN_ID_LEN + 1];
    ngx_str_t                  actor;
    ngx_str_t                  privileges;     /* comma-separated */

    ngx_queue_t                queue;          /* in the flight's waiters */
    ngx_event_t                deadline;
    ngx_event_t                wake;

    /* a cache entry past its ttl, for when Redis fails */
    ngx_str_t                  stale_actor;
    ngx_str_t                  stale_privileges;
    gms_token_type_e           stale_type;
    unsigned                   has_stale:1;
    unsigned                   stale_inactive:2;
};


extern ngx_module_t  ngx_http_gms_module;


#endif /* _NGX_HTTP_GMS_MODULE_H_INCLUDED_ */

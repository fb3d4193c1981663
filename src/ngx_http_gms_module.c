
/*
 * ngx_http_gms_module: personal access tokens checked at the edge of
 * DataHub's metadata service (GMS), against a Redis cache that GMS fills.
 *
 * The top of the module: its directives and configuration, its variables,
 * the phase handlers it registers, and each worker's Redis started and
 * stopped.  The work itself is in the files named for it.  getEsTaskStatus
 * is a module of its own in the same .so, reading this one's verdict
 * (ngx_http_gms_es_task_module.c).
 *
 * Loaded but not used (no location checks tokens, answers getEsTaskStatus
 * or serves metrics), neither module registers a handler or filter, makes
 * no shared memory, leaves the error logs alone and starts nothing in the
 * workers: nginx runs as if it were not loaded.  Redis is reached only
 * where a location checks tokens.
 */


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_variables.h"
#include "ngx_http_gms_log.h"
#include "ngx_http_gms_source.h"
#include "ngx_http_gms_credentials.h"
#include "ngx_http_gms_oauth.h"
#include "ngx_http_gms_privilege.h"
#include "ngx_http_gms_auth.h"
#include "ngx_http_gms_verdict.h"
#include "ngx_http_gms_redis_conf.h"
#include "ngx_http_gms_invalidate.h"
#include "ngx_http_gms_redis.h"
#include "ngx_http_gms_replica.h"
#include "ngx_http_gms_discovery.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_metrics.h"
#include "ngx_http_gms_release.h"


/* application.yml's authentication.tokenService.salt before DataHub 1.5 */
#define NGX_HTTP_GMS_SALT_DEFAULT_PRE15                                      \
    "ohDVbJBvHHVJh9S/UA4BYF9COuNnqqVhr9MLKEGXk1O="

/* a location checks tokens, answers getEsTaskStatus or serves metrics */
#define ngx_http_gms_used(gmcf)                                              \
    ((gmcf)->checks || (gmcf)->es_task || (gmcf)->metrics)


static char *ngx_http_gms_forbidden_status(ngx_conf_t *cf, void *post,
    void *data);
static void *ngx_http_gms_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_gms_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_gms_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_gms_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_gms_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_gms_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_gms_init_process(ngx_cycle_t *cycle);
static void ngx_http_gms_master_moved(struct sockaddr *sa, socklen_t socklen);
static void ngx_http_gms_exit_process(ngx_cycle_t *cycle);


static ngx_conf_post_handler_pt  ngx_http_gms_forbidden_status_p =
    ngx_http_gms_forbidden_status;


static ngx_conf_enum_t  ngx_http_gms_phases[] = {
    { ngx_string("access"), NGX_HTTP_GMS_PHASE_ACCESS },
    { ngx_string("preaccess"), NGX_HTTP_GMS_PHASE_PREACCESS },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_gms_preflights[] = {
    { ngx_string("check"), 0 },
    { ngx_string("pass"), 1 },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_gms_unknown_signed[] = {
    { ngx_string("refuse"), 0 },
    { ngx_string("pass"), 1 },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_http_gms_commands[] = {

    { ngx_string("gms_token_auth"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_gms_loc_conf_t, enable),
      NULL },

    { ngx_string("gms_token_phase"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_gms_loc_conf_t, phase),
      &ngx_http_gms_phases },

    { ngx_string("gms_token_preflight"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_gms_loc_conf_t, preflight),
      &ngx_http_gms_preflights },

    { ngx_string("gms_token_unknown_signed"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_gms_loc_conf_t, unknown_signed),
      &ngx_http_gms_unknown_signed },

    { ngx_string("gms_token_source"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_set_complex_value_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_gms_loc_conf_t, source),
      NULL },

    { ngx_string("gms_token_redis"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_gms_redis_conf_redis,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, redis),
      NULL },

    { ngx_string("gms_token_redis_sentinel"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_gms_redis_conf_sentinel,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, redis),
      NULL },

    { ngx_string("gms_token_redis_cluster"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_gms_redis_conf_cluster,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, redis),
      NULL },

    { ngx_string("gms_token_redis_ssl_trusted_certificate"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, redis.ssl_trusted_certificate),
      NULL },

    { ngx_string("gms_token_redis_ssl_verify"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, redis.ssl_verify),
      NULL },

    { ngx_string("gms_token_redis_ssl_name"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, redis.ssl_name),
      NULL },

    { ngx_string("gms_token_redis_ssl_certificate"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, redis.ssl_certificate),
      NULL },

    { ngx_string("gms_token_redis_ssl_certificate_key"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, redis.ssl_certificate_key),
      NULL },

    { ngx_string("gms_token_redis_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, redis.timeout),
      &ngx_http_gms_redis_conf_timeout_p },

    { ngx_string("gms_token_key_prefix"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, redis.prefix),
      NULL },

    { ngx_string("gms_token_salt"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, credentials.salt),
      NULL },

    { ngx_string("gms_token_salt_file"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_gms_credentials_salt_file,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, credentials),
      NULL },

    { ngx_string("gms_token_signing_key_file"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_gms_credentials_signing_key_file,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, credentials),
      NULL },

    { ngx_string("gms_token_jwt_leeway"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, credentials.jwt_leeway),
      &ngx_http_gms_jwt_leeway_p },

    { ngx_string("gms_token_oauth"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_2MORE,
      ngx_http_gms_oauth_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("gms_token_system_client"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE2,
      ngx_http_gms_credentials_system_client,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_gms_main_conf_t, credentials),
      NULL },

    { ngx_string("gms_token_realm"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_gms_loc_conf_t, realm),
      NULL },

    { ngx_string("gms_token_require_privilege"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_gms_privilege_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("gms_token_forbidden_status"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_gms_loc_conf_t, forbidden_conf),
      &ngx_http_gms_forbidden_status_p },

    { ngx_string("gms_token_cache"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_gms_cache_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("gms_token_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_gms_metrics_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("gms_datahub_version"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_gms_release_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("gms_token_guest"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_gms_loc_conf_t, guest),
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_gms_module_ctx = {
    ngx_http_gms_variables_add,            /* preconfiguration */
    ngx_http_gms_init,                     /* postconfiguration */

    ngx_http_gms_create_main_conf,         /* create main configuration */
    ngx_http_gms_init_main_conf,           /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_gms_create_loc_conf,          /* create location configuration */
    ngx_http_gms_merge_loc_conf            /* merge location configuration */
};


ngx_module_t  ngx_http_gms_module = {
    NGX_MODULE_V1,
    &ngx_http_gms_module_ctx,              /* module context */
    ngx_http_gms_commands,                 /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_http_gms_init_module,              /* init module */
    ngx_http_gms_init_process,             /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_gms_exit_process,             /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static char *
ngx_http_gms_forbidden_status(ngx_conf_t *cf, void *post, void *data)
{
    ngx_uint_t  *status = data;

    if (*status != NGX_HTTP_UNAUTHORIZED && *status != NGX_HTTP_FORBIDDEN) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid status \"%ui\": expected 401 or 403",
                           *status);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_gms_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_gms_main_conf_t));
    if (gmcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     gmcf->cache = NULL;
     *     gmcf->metrics_zone = NULL;
     *     gmcf->checks = 0;
     *     gmcf->es_task = 0;
     *     gmcf->metrics = 0;
     */

    ngx_http_gms_redis_conf_create(&gmcf->redis);
    ngx_http_gms_credentials_create_conf(&gmcf->credentials);

    if (ngx_array_init(&gmcf->error_logs, cf->pool, 16, sizeof(ngx_log_t **))
        != NGX_OK
        || ngx_array_init(&gmcf->mask_headers, cf->pool, 2, sizeof(char *))
           != NGX_OK)
    {
        return NULL;
    }

    return gmcf;
}


static char *
ngx_http_gms_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_gms_main_conf_t *gmcf = conf;

    uint32_t  crc;

    if (ngx_http_gms_redis_conf_init(cf, &gmcf->redis) != NGX_CONF_OK
        || ngx_http_gms_credentials_init_conf(cf, &gmcf->credentials)
           != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (gmcf->cache) {
        ngx_crc32_init(crc);
        ngx_http_gms_cache_source(gmcf, &crc);
        ngx_http_gms_oauth_source(gmcf, &crc);
        ngx_crc32_final(crc);
        gmcf->cache->source = crc;

        /* a token removed from Redis must not go on to GMS: see verdict.c */
        gmcf->cache->changed = gmcf->credentials.nkeys
                               ? NGX_HTTP_GMS_CACHE_CHANGED_TIME : 0;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_gms_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_gms_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_gms_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->realm = { 0, NULL };
     *     conf->challenge = { 0, NULL };
     *     conf->challenge_invalid = { 0, NULL };
     *     conf->challenge_scope = { 0, NULL };
     */

    conf->enable = NGX_CONF_UNSET;
    conf->phase = NGX_CONF_UNSET_UINT;
    conf->preflight = NGX_CONF_UNSET_UINT;
    conf->unknown_signed = NGX_CONF_UNSET_UINT;
    conf->source = NGX_CONF_UNSET_PTR;
    conf->privileges = NGX_CONF_UNSET_PTR;
    conf->forbidden_conf = NGX_CONF_UNSET_UINT;
    conf->release = NGX_CONF_UNSET_UINT;
    conf->guest = NGX_CONF_UNSET;

    return conf;
}


static char *
ngx_http_gms_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_gms_loc_conf_t  *prev = parent;
    ngx_http_gms_loc_conf_t  *conf = child;

    ngx_log_t               ***slot;
    ngx_http_core_loc_conf_t  *clcf;
    ngx_http_gms_main_conf_t  *gmcf;

    /* the core module's merge is done: the location's log, to be masked */

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    gmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_gms_module);

    slot = ngx_array_push(&gmcf->error_logs);
    if (slot == NULL) {
        return NGX_CONF_ERROR;
    }

    *slot = &clcf->error_log;

    ngx_conf_merge_value(conf->enable, prev->enable, 0);
    ngx_conf_merge_uint_value(conf->phase, prev->phase,
                              NGX_HTTP_GMS_PHASE_ACCESS);
    ngx_conf_merge_uint_value(conf->preflight, prev->preflight, 0);

    /*
     * gms_token_unknown_signed: by default, pass where the edge can tell
     * such a token (a signing key) and remember GMS's refusals and
     * gms-token's removals (a cache)
     */

    ngx_conf_merge_uint_value(conf->unknown_signed, prev->unknown_signed,
                              gmcf->credentials.nkeys && gmcf->cache);

    if (conf->unknown_signed
        && (gmcf->credentials.nkeys == 0 || gmcf->cache == NULL))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
            "gms_token_unknown_signed pass needs gms_token_signing_key_file "
            "(to verify such a token) and gms_token_cache (to remember "
            "GMS's refusals and the tokens gms-token removed)");
        return NGX_CONF_ERROR;
    }

    ngx_conf_merge_ptr_value(conf->source, prev->source, NULL);

    if (conf->source && ngx_http_gms_source_conf(cf, conf, gmcf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_conf_merge_str_value(conf->realm, prev->realm, "DataHub");
    ngx_conf_merge_ptr_value(conf->privileges, prev->privileges, NULL);

    ngx_conf_merge_value(conf->guest, prev->guest, 0);

    /* forbidden_status: as set, or by release */
    if (ngx_http_gms_release_merge(cf, prev, conf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (conf->enable && !gmcf->credentials.salt_set) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
            "gms_token_auth is on, but no gms_token_salt is set: token ids "
            "are hashed with GMS's salt (DATAHUB_TOKEN_SERVICE_SALT, "
            "authentication.tokenService.salt in GMS's application.yml; "
            "before DataHub 1.5 its default is "
            "\"" NGX_HTTP_GMS_SALT_DEFAULT_PRE15 "\"): set "
            "gms_token_salt or gms_token_salt_file to the same value, or "
            "gms_token_salt \"\" if GMS really has none");
        return NGX_CONF_ERROR;
    }

    if (ngx_http_gms_auth_challenges(cf, prev, conf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (conf->enable) {
        gmcf->checks = 1;
    }

    return NGX_CONF_OK;
}


/*
 * Every location is merged by now: what they use decides what is set up.
 * The metrics' zone where anything is used; the token check's handlers
 * and filter where a location checks tokens or answers getEsTaskStatus
 * (ngx_http_gms_es_task_module registers its own).
 */

static ngx_int_t
ngx_http_gms_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_gms_main_conf_t   *gmcf;
    ngx_http_core_main_conf_t  *cmcf;

    gmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_gms_module);

    if (!ngx_http_gms_used(gmcf)) {
        return NGX_OK;
    }

    gmcf->metrics_zone = ngx_http_gms_metrics_add_zone(cf);
    if (gmcf->metrics_zone == NULL) {
        return NGX_ERROR;
    }

    if (!gmcf->checks && !gmcf->es_task) {
        return NGX_OK;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_ACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_gms_auth_access_handler;

    /*
     * gms_token_phase preaccess: handlers of a phase run in the reverse of
     * the order they were added, and this module's postconfiguration comes
     * after limit_req's and limit_conn's (a dynamic module is loaded after
     * the static ones; config lists a static build's among the
     * HTTP_AUX_FILTERs, after every HTTP module): so this handler runs
     * before theirs
     */

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_gms_auth_preaccess_handler;

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_gms_auth_subrequest_handler;

    if (ngx_http_gms_auth_init_bodies(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_gms_verdict_filter_init(cf);
}


/* once the cycle's logs and shared memory are set up, in the master */

static ngx_int_t
ngx_http_gms_init_module(ngx_cycle_t *cycle)
{
    ngx_http_gms_main_conf_t  *gmcf;

    if (cycle->conf_ctx[ngx_http_module.index] == NULL) {
        return NGX_OK;
    }

    gmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_gms_module);

    /* the cycle is taken: its counters, or none (never a previous one's) */
    ngx_http_gms_metrics = gmcf->metrics_zone ? gmcf->metrics_zone->data
                                              : NULL;

    if (!ngx_http_gms_used(gmcf)) {
        return NGX_OK;
    }

    return ngx_http_gms_log_init(cycle);
}


static ngx_int_t
ngx_http_gms_init_process(ngx_cycle_t *cycle)
{
    const char                *step;
    ngx_http_gms_discovery_t  *dc;
    ngx_http_gms_main_conf_t  *gmcf;

    if ((ngx_process != NGX_PROCESS_WORKER
         && ngx_process != NGX_PROCESS_SINGLE)
        || ngx_http_cycle_get_module_main_conf(cycle, ngx_http_core_module)
           == NULL)
    {
        return NGX_OK;
    }

    gmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_gms_module);

    if (!gmcf->checks) {
        /* Redis is for the token checks: where there are none, not used */
        return NGX_OK;
    }

    /*
     * the discovery's hooks: the lookups and the subscription follow the
     * master, the lookups the replica; a failure costs what failed to
     * start, not the worker: without invalidations, entries age out
     */

    dc = ngx_http_gms_discovery_init(gmcf);
    dc->master = ngx_http_gms_master_moved;
    dc->replica = ngx_http_gms_replica_set;
    dc->failed = ngx_http_gms_redis_discovery_failed;

    step = NULL;

    if (ngx_http_gms_redis_init_process(cycle, dc) != NGX_OK) {
        step = "the lookups";

    } else if (dc->start(cycle, dc) != NGX_OK) {
        step = "the discovery";

    } else if (ngx_http_gms_invalidate_init_process(cycle, dc) != NGX_OK) {
        step = "the invalidation subscription";
    }

    if (step) {
        ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                      "gms: redis: cannot start %s (%s)", step, dc->name);
    }

    return NGX_OK;
}


/*
 * the Sentinels (the cluster's map) named another master: the lookups and
 * the subscription
 */

static void
ngx_http_gms_master_moved(struct sockaddr *sa, socklen_t socklen)
{
    ngx_http_gms_redis_set_master(sa, socklen);
    ngx_http_gms_invalidate_set_master(sa, socklen);
}


static void
ngx_http_gms_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_gms_discovery_t  *dc;

    dc = ngx_http_gms_discovery_get();

    if (dc) {
        dc->stop();
    }

    ngx_http_gms_redis_exit_process(cycle);
    ngx_http_gms_invalidate_exit_process(cycle);
}

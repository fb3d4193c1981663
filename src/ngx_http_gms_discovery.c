
/*
 * The discovery interface (ngx_http_gms_discovery.h): the worker's one,
 * filled by the topology configured (ngx_http_gms_sentinel.c,
 * ngx_http_gms_cluster.c), or standalone: gms_token_redis names the
 * server, nobody is asked.
 */


#include "ngx_http_gms_discovery.h"
#include "ngx_http_gms_sentinel.h"
#include "ngx_http_gms_cluster.h"


static ngx_int_t ngx_http_gms_discovery_start(ngx_cycle_t *cycle,
    ngx_http_gms_discovery_t *dc);
static void ngx_http_gms_discovery_stop(void);
static void ngx_http_gms_discovery_ask(const char *why);


/* one per worker process */
static ngx_http_gms_discovery_t  ngx_http_gms_discovery;


ngx_http_gms_discovery_t *
ngx_http_gms_discovery_init(ngx_http_gms_main_conf_t *gmcf)
{
    ngx_http_gms_discovery_t  *dc;

    dc = &ngx_http_gms_discovery;
    ngx_memzero(dc, sizeof(ngx_http_gms_discovery_t));

    dc->gmcf = gmcf;

    if (gmcf->redis.sentinels) {
        ngx_http_gms_sentinel_discovery(dc);

    } else if (gmcf->redis.cluster) {
        ngx_http_gms_cluster_discovery(dc);

    } else {
        dc->name = "configured server";
        dc->addr = &gmcf->redis.server;
        dc->start = ngx_http_gms_discovery_start;
        dc->stop = ngx_http_gms_discovery_stop;
        dc->ask = ngx_http_gms_discovery_ask;
    }

    return dc;
}


/* the worker's, once initialised; NULL: Redis unused */

ngx_http_gms_discovery_t *
ngx_http_gms_discovery_get(void)
{
    return ngx_http_gms_discovery.gmcf ? &ngx_http_gms_discovery : NULL;
}


/* standalone: the server is configured, its connections go there */

static ngx_int_t
ngx_http_gms_discovery_start(ngx_cycle_t *cycle, ngx_http_gms_discovery_t *dc)
{
    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "gms: discovery: redis at %V, as configured",
                   &dc->addr->name);

    return NGX_OK;
}


static void
ngx_http_gms_discovery_stop(void)
{
}


/* nobody to ask: the connection's own retries find the server back */

static void
ngx_http_gms_discovery_ask(const char *why)
{
}

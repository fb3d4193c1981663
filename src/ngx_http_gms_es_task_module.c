
/*
 * ngx_http_gms_es_task_module: getEsTaskStatus answered at the edge, a
 * module of its own in the .so beside ngx_http_gms_module, as nginx pairs
 * ngx_http_v2_module with ngx_http_v2_filter_module.  The top of it: its
 * directive and location configuration, its precontent handler and the
 * body filter of its subrequest registered.  The work is in
 * ngx_http_gms_es_task.c; the token check's verdict (the user, their
 * privileges) is read through ngx_http_gms_auth.c.
 *
 * config declares it an HTTP_AUX_FILTER (ngx_module_order places it so in
 * a dynamic build): its postconfiguration runs after the write and
 * header filters have started the chains, or its body filter would be
 * dropped from a static build's.
 */


#include "ngx_http_gms_es_task_module.h"
#include "ngx_http_gms_es_task.h"
#include "ngx_http_gms_es_route.h"
#include "ngx_http_gms_privilege.h"


static char *ngx_http_gms_es_task_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static void *ngx_http_gms_es_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_gms_es_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_gms_es_init(ngx_conf_t *cf);


static ngx_command_t  ngx_http_gms_es_task_commands[] = {

    { ngx_string("gms_es_task_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE12,
      ngx_http_gms_es_task_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_gms_es_task_module_ctx = {
    NULL,                                  /* preconfiguration */
    ngx_http_gms_es_init,                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_gms_es_create_loc_conf,       /* create location configuration */
    ngx_http_gms_es_merge_loc_conf         /* merge location configuration */
};


ngx_module_t  ngx_http_gms_es_task_module = {
    NGX_MODULE_V1,
    &ngx_http_gms_es_task_module_ctx,      /* module context */
    ngx_http_gms_es_task_commands,         /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/*
 * gms_es_task_status URI [privilege=NAME[,NAME...] | privilege=off];
 * without privilege= those of gms_datahub_version's release, not what an
 * enclosing location's directive set
 */

static char *
ngx_http_gms_es_task_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_gms_es_loc_conf_t *eslcf = conf;

    ngx_str_t  *value, list;

    if (eslcf->uri.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 0 || value[1].data[0] != '/') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must start with \"/\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    eslcf->uri = value[1];

    if (cf->args->nelts == 2) {
        eslcf->privileges = &ngx_http_gms_es_route_by_release;
        return NGX_CONF_OK;
    }

    if (value[2].len <= sizeof("privilege=") - 1
        || ngx_strncmp(value[2].data, "privilege=", sizeof("privilege=") - 1)
           != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[2]);
        return NGX_CONF_ERROR;
    }

    list.data = value[2].data + sizeof("privilege=") - 1;
    list.len = value[2].len - (sizeof("privilege=") - 1);

    if (list.len == 3 && ngx_strncmp(list.data, "off", 3) == 0) {
        eslcf->privileges = NULL;
        return NGX_CONF_OK;
    }

    eslcf->privileges = ngx_array_create(cf->pool, 2, sizeof(ngx_str_t));
    if (eslcf->privileges == NULL) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_gms_privilege_list(cf, &list, eslcf->privileges) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_gms_es_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_gms_es_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_gms_es_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->uri = { 0, NULL };
     */

    conf->privileges = NGX_CONF_UNSET_PTR;

    return conf;
}


/*
 * Nothing here reads the token check's configuration: this module may be
 * merged before ngx_http_gms_module (a dynamic build) or after it (a
 * static one).  What the location's release implies is read at request
 * time (ngx_http_gms_es_route.c).
 */

static char *
ngx_http_gms_es_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_gms_es_loc_conf_t  *prev = parent;
    ngx_http_gms_es_loc_conf_t  *conf = child;

    ngx_http_gms_main_conf_t  *gmcf;

    ngx_conf_merge_str_value(conf->uri, prev->uri, "");
    ngx_conf_merge_ptr_value(conf->privileges, prev->privileges,
                             &ngx_http_gms_es_route_by_release);

    if (conf->uri.len) {
        /* what ngx_http_gms_module sets up where anything is used */
        gmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_gms_module);
        gmcf->es_task = 1;
    }

    return NGX_CONF_OK;
}


/* every location is merged by now: nothing registered where none answers */

static ngx_int_t
ngx_http_gms_es_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_gms_main_conf_t   *gmcf;
    ngx_http_core_main_conf_t  *cmcf;

    gmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_gms_module);

    if (!gmcf->es_task) {
        return NGX_OK;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_gms_es_task_precontent;

    return ngx_http_gms_es_task_filter_init(cf);
}

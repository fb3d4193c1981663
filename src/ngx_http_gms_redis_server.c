
/*
 * A connection to a data server (the lookups', the subscription's, a
 * cluster's seed node): the setup every one needs, AUTH, SELECT and the
 * like, and the answers that say the server cannot serve now (-READONLY,
 * -LOADING, -MASTERDOWN, a cluster's redirections), after which the
 * discovery is asked again through its interface.
 */


#include "ngx_http_gms_redis_server.h"
#include "ngx_http_gms_redis_secret.h"
#include "ngx_http_gms_metrics.h"

#include "gms_lookup.h"
#include "gms_slot.h"


static void ngx_http_gms_redis_server_ok(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);
static void ngx_http_gms_redis_server_auth(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);
static void ngx_http_gms_redis_server_loaded(ngx_http_gms_rconn_t *rc,
    void *data, redisReply *reply, const char *error);


/* the worker's discovery: asked again when a server cannot serve */
static ngx_http_gms_discovery_t  *ngx_http_gms_redis_server_dc;

/* the lookups' owner, told whether the server runs scripts */
static ngx_http_gms_redis_server_scripts_pt  ngx_http_gms_redis_server_scripts;


void
ngx_http_gms_redis_server_init(ngx_http_gms_discovery_t *dc,
    ngx_http_gms_redis_server_scripts_pt scripts)
{
    ngx_http_gms_redis_server_dc = dc;
    ngx_http_gms_redis_server_scripts = scripts;
}


/*
 * A connection to the data server and the setup every one needs: AUTH,
 * SELECT, READONLY on a cluster's replica and, with Sentinel or on a
 * replica, ROLE answered to role (the server must be what the discovery
 * said), pipelined ahead of whatever waits.  NGX_OK: under way;
 * else as ngx_http_gms_rconn_connect() (a failure to queue closes it).
 */

ngx_int_t
ngx_http_gms_redis_server_connect(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_rconn_reply_pt role)
{
    size_t                     lens[3];
    ngx_int_t                  rv;
    const char                *argv[3];
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = rc->gmcf;

    if ((gmcf->redis.sentinels || gmcf->redis.cluster) && rc->addr == NULL
        && rc->socklen == 0)
    {
        /* the Sentinels (the cluster) have not named a master yet */
        return NGX_DECLINED;
    }

    if (rc->node == NGX_HTTP_GMS_NODE_LOOKUP && rc->backoff
        && !ngx_http_gms_rconn_in_backoff(rc))
    {
        ngx_http_gms_count(reconnects);
    }

    rc->tls = gmcf->redis.tls;

    rv = ngx_http_gms_rconn_connect(rc);
    if (rv != NGX_OK) {
        return rv;
    }

    /* the password as it is now: a file's is read again as it changes */

    if (ngx_http_gms_redis_secret_auth(rc, NGX_HTTP_GMS_SECRET_SERVER, 0,
                                       ngx_http_gms_redis_server_auth)
        == NGX_ERROR)
    {
        goto failed;
    }

    if (gmcf->redis.db) {
        argv[0] = "SELECT";
        lens[0] = 6;
        argv[1] = (const char *) gmcf->redis.db_text.data;
        lens[1] = gmcf->redis.db_text.len;

        if (ngx_http_gms_rconn_setup(rc, 2, argv, lens,
                                     ngx_http_gms_redis_server_ok)
            != NGX_OK)
        {
            goto failed;
        }
    }

    if (gmcf->redis.cluster && rc->target == NGX_HTTP_GMS_TARGET_REPLICA) {
        /* a cluster's replica redirects reads to its master without it */
        argv[0] = "READONLY";
        lens[0] = sizeof("READONLY") - 1;

        if (ngx_http_gms_rconn_setup(rc, 1, argv, lens,
                                     ngx_http_gms_redis_server_ok)
            != NGX_OK)
        {
            goto failed;
        }
    }

    if (role
        && (gmcf->redis.sentinels || rc->target == NGX_HTTP_GMS_TARGET_REPLICA))
    {
        argv[0] = "ROLE";
        lens[0] = 4;

        if (ngx_http_gms_rconn_setup(rc, 1, argv, lens, role) != NGX_OK)
        {
            goto failed;
        }
    }

    return NGX_OK;

failed:

    ngx_http_gms_rconn_close(rc, NGX_LOG_ERR,
                             "cannot queue the connection setup");
    return NGX_ERROR;
}


/* a lookup connection: the setup, ROLE, and SCRIPT LOAD */

ngx_int_t
ngx_http_gms_redis_server_lookups(ngx_http_gms_rconn_t *rc,
    ngx_http_gms_rconn_reply_pt role)
{
    size_t       lens[3];
    ngx_int_t    rv;
    const char  *argv[3];

    rv = ngx_http_gms_redis_server_connect(rc, role);
    if (rv != NGX_OK) {
        return rv;
    }

    argv[0] = "SCRIPT";
    lens[0] = 6;
    argv[1] = "LOAD";
    lens[1] = 4;
    argv[2] = gms_lookup_script;
    lens[2] = gms_lookup_script_len;

    if (ngx_http_gms_rconn_setup(rc, 3, argv, lens,
                                 ngx_http_gms_redis_server_loaded)
        != NGX_OK)
    {
        ngx_http_gms_rconn_close(rc, NGX_LOG_ERR,
                                 "cannot queue the connection setup");
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * AUTH's answer: refused, and the password from a file, AUTH goes again
 * with the file read anew before the connection counts as failed (the
 * provider may have rotated it since the file was last read)
 */

static void
ngx_http_gms_redis_server_auth(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    if (reply != NULL && !ngx_http_gms_rconn_says(reply, "OK")
        && ngx_http_gms_redis_secret_refused(rc, NGX_HTTP_GMS_SECRET_SERVER,
                                             reply,
                                             ngx_http_gms_redis_server_auth))
    {
        return;
    }

    ngx_http_gms_redis_server_ok(rc, data, reply, error);
}


/* AUTH's, SELECT's and READONLY's +OK */

static void
ngx_http_gms_redis_server_ok(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    if (reply == NULL) {
        return;
    }

    if (ngx_http_gms_rconn_says(reply, "OK")) {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis at %V refused the connection's setup: %*s",
                  &rc->peer,
                  (size_t) (reply->type == REDIS_REPLY_ERROR
                            ? ngx_min(reply->len, 256) : 0),
                  reply->str);

    ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "setup refused");
}


static void
ngx_http_gms_redis_server_loaded(ngx_http_gms_rconn_t *rc, void *data,
    redisReply *reply, const char *error)
{
    if (reply == NULL) {
        return;
    }

    if (reply->type == REDIS_REPLY_STRING && reply->len == 40
        && ngx_strncmp(reply->str, rc->gmcf->redis.script_sha, 40) == 0)
    {
        ngx_http_gms_redis_server_scripts(rc, NULL);
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR
        && gms_lookup_scripts_refused(reply->str, reply->len))
    {
        /* no script here: the connection serves lookups without */
        ngx_http_gms_redis_server_scripts(rc, reply);
        return;
    }

    if (ngx_http_gms_redis_server_unavailable(rc, reply) == NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis at %V: unexpected answer to SCRIPT LOAD",
                      &rc->peer);
        ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "SCRIPT LOAD failed");
    }
}


/*
 * -READONLY (a master turned replica), -LOADING, -MASTERDOWN: no answer
 * from this server for now.  The connection is closed (and, with
 * Sentinel, the Sentinels asked again): NGX_DECLINED.  In a cluster, a
 * redirection or CLUSTERDOWN/TRYAGAIN where no lookup was asked (the
 * sync-age HGET, say) has the map asked for again: NGX_DECLINED too, the
 * connection kept (the node is there; what it serves changed).
 */

ngx_int_t
ngx_http_gms_redis_server_unavailable(ngx_http_gms_rconn_t *rc,
    redisReply *reply)
{
    static ngx_str_t  errors[] = {
        ngx_string("READONLY"),
        ngx_string("LOADING"),
        ngx_string("MASTERDOWN"),
        ngx_null_string
    };

    ngx_str_t       *e;
    gms_redirect_t   to;

    if (reply->type != REDIS_REPLY_ERROR) {
        return NGX_OK;
    }

    if (rc->gmcf->redis.cluster
        && (gms_slot_redirect((u_char *) reply->str, reply->len, &to) == 0
            || (reply->len >= sizeof("CLUSTERDOWN") - 1
                && ngx_strncmp(reply->str, "CLUSTERDOWN",
                               sizeof("CLUSTERDOWN") - 1) == 0)
            || (reply->len >= sizeof("TRYAGAIN") - 1
                && ngx_strncmp(reply->str, "TRYAGAIN",
                               sizeof("TRYAGAIN") - 1) == 0)))
    {
        ngx_http_gms_redis_server_dc->ask("a redirection or CLUSTERDOWN");
        return NGX_DECLINED;
    }

    for (e = errors; e->len; e++) {
        if (reply->len >= e->len
            && ngx_strncmp(reply->str, e->data, e->len) == 0)
        {
            break;
        }
    }

    if (e->len == 0) {
        return NGX_OK;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis at %V answered -%V", &rc->peer, e);

    /* before the close, whose hook would ask with a vaguer reason */

    if (rc->gmcf->redis.sentinels) {
        ngx_http_gms_redis_server_dc->ask("the server is unavailable");
    }

    ngx_http_gms_rconn_close(rc, NGX_LOG_DEBUG, "server unavailable");

    return NGX_DECLINED;
}


/*
 * The worker's view of a Redis password file (password_file=,
 * sentinel_password_file=), for providers whose passwords are tokens that
 * expire: ElastiCache's IAM authentication (15 minutes), Memorystore's
 * (an hour), Azure's Entra ID (about an hour).  Something beside nginx
 * writes the current token into the file (docs/operations.md, "Redis
 * credentials that rotate"); each new connection's AUTH takes the file's
 * content as it is now, read again when a second has passed since it
 * last was (an open, a stat and a read of at most a kilobyte of a local
 * file: as the JWKS file of ngx_http_gms_oauth.c, a blocking read a
 * worker can afford, and only when it connects), the way libpq reads its
 * passfile at each connection.  The rule of every secret file applies to
 * each read (ngx_http_gms_secret.c): a file that breaks it (two lines,
 * empty, gone) is logged and the password read before stays; a writer
 * replaces the file by a rename (as kubelet swaps a Secret's symlink),
 * never in place.  An AUTH refused is tried once more on the same
 * connection with the file read at once: the provider may have rotated
 * the password within the second.  No byte of a password reaches a log.
 */


#include "ngx_http_gms_redis_secret.h"
#include "ngx_http_gms_redis_conn.h"
#include "ngx_http_gms_secret.h"
#include "ngx_http_gms_metrics.h"


typedef struct {
    ngx_http_gms_redis_conf_t  *rcf;           /* what it was read for */
    time_t                      checked;
    size_t                      len;
    u_char                      value[NGX_HTTP_GMS_PASSWORD_MAX + 1];
} ngx_http_gms_redis_secret_t;


static ngx_str_t ngx_http_gms_redis_secret_get(ngx_http_gms_redis_conf_t *rcf,
    ngx_uint_t whose, ngx_uint_t again);
static void ngx_http_gms_redis_secret_reread(ngx_http_gms_redis_secret_t *sc,
    ngx_str_t *file);


/* per worker process: the data servers' and the Sentinels' */
static ngx_http_gms_redis_secret_t  ngx_http_gms_redis_secrets[2];


ngx_int_t
ngx_http_gms_redis_secret_auth(ngx_http_gms_rconn_t *rc, ngx_uint_t whose,
    ngx_uint_t again, ngx_http_gms_rconn_reply_pt handler)
{
    int                         n;
    size_t                      lens[3];
    ngx_str_t                   password, *file;
    const char                 *argv[3];
    ngx_http_gms_redis_conf_t  *rcf;

    rcf = &rc->gmcf->redis;

    password = ngx_http_gms_redis_secret_get(rcf, whose, again);

    if (password.len == 0) {
        return NGX_DECLINED;
    }

    argv[0] = "AUTH";
    lens[0] = sizeof("AUTH") - 1;
    n = 1;

    /* AUTH password, or with user=, AUTH user password (ACLs) */

    if (whose == NGX_HTTP_GMS_SECRET_SERVER && rcf->user.len) {
        argv[n] = (const char *) rcf->user.data;
        lens[n++] = rcf->user.len;
    }

    argv[n] = (const char *) password.data;
    lens[n++] = password.len;

    file = (whose == NGX_HTTP_GMS_SECRET_SERVER) ? &rcf->password_file
                                                 : &rcf->sentinel_password_file;

    if (file->len == 0) {
        /* a password in the configuration: no second AUTH to wait for */
        return ngx_http_gms_rconn_setup(rc, n, argv, lens, handler);
    }

    return ngx_http_gms_rconn_setup_first(rc, n, argv, lens, handler);
}


ngx_uint_t
ngx_http_gms_redis_secret_refused(ngx_http_gms_rconn_t *rc, ngx_uint_t whose,
    redisReply *reply, ngx_http_gms_rconn_reply_pt handler)
{
    ngx_str_t                  *file;
    ngx_http_gms_redis_conf_t  *rcf;

    rcf = &rc->gmcf->redis;
    file = (whose == NGX_HTTP_GMS_SECRET_SERVER) ? &rcf->password_file
                                                 : &rcf->sentinel_password_file;

    if (file->len == 0 || rc->auth_retried
        || reply->type != REDIS_REPLY_ERROR)
    {
        return 0;
    }

    rc->auth_retried = 1;

    ngx_http_gms_count(auth_retries);

    ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                  "gms: redis %s connection to %V: AUTH refused (%*s); "
                  "\"%V\" read again, AUTH once more", rc->what, &rc->peer,
                  (size_t) ngx_min(reply->len, 256), reply->str, file);

    return ngx_http_gms_redis_secret_auth(rc, whose, 1, handler) == NGX_OK;
}


/*
 * The password as it is now: the configuration's, or the file's as last
 * read (by the master at configuration, until a worker reads it)
 */

static ngx_str_t
ngx_http_gms_redis_secret_get(ngx_http_gms_redis_conf_t *rcf,
    ngx_uint_t whose, ngx_uint_t again)
{
    time_t                        now;
    ngx_str_t                     password, *conf, *file;
    ngx_http_gms_redis_secret_t  *sc;

    if (whose == NGX_HTTP_GMS_SECRET_SERVER) {
        conf = &rcf->password;
        file = &rcf->password_file;

    } else {
        conf = &rcf->sentinel_password;
        file = &rcf->sentinel_password_file;
    }

    if (file->len == 0) {
        return *conf;
    }

    sc = &ngx_http_gms_redis_secrets[whose];

    if (sc->rcf != rcf) {
        sc->rcf = rcf;
        sc->checked = 0;
        sc->len = conf->len;
        ngx_memcpy(sc->value, conf->data, conf->len);
    }

    now = ngx_time();

    if (again || sc->checked != now) {
        sc->checked = now;
        ngx_http_gms_redis_secret_reread(sc, file);
    }

    password.len = sc->len;
    password.data = sc->value;

    return password;
}


static void
ngx_http_gms_redis_secret_reread(ngx_http_gms_redis_secret_t *sc,
    ngx_str_t *file)
{
    size_t  len;
    u_char  buf[NGX_HTTP_GMS_PASSWORD_MAX + 3];

    if (ngx_http_gms_secret_read(NULL, file->data, buf,
                                 NGX_HTTP_GMS_PASSWORD_MAX, &len)
        != NGX_OK)
    {
        /* said why, and wiped */
        return;
    }

    if (len == 0) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: \"%V\" holds no password; the password read "
                      "before stays", file);

    } else if (len != sc->len || ngx_memcmp(buf, sc->value, len) != 0) {
        ngx_explicit_memzero(sc->value, sc->len);
        ngx_memcpy(sc->value, buf, len);
        sc->len = len;

        ngx_http_gms_count(password_reads);

        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "gms: \"%V\" changed: new connections authenticate "
                      "with the password it holds now", file);
    }

    ngx_explicit_memzero(buf, sizeof(buf));
}

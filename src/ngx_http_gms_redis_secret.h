
/*
 * The worker's view of password_file= and sentinel_password_file=, and
 * the AUTH a new connection sends with it; ngx_http_gms_redis_secret.c.
 */


#ifndef _NGX_HTTP_GMS_REDIS_SECRET_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_SECRET_H_INCLUDED_


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_redis_conn.h"


/* whose password: the data servers' or the Sentinels' */
#define NGX_HTTP_GMS_SECRET_SERVER    0
#define NGX_HTTP_GMS_SECRET_SENTINEL  1


/*
 * AUTH as a setup command of rc, with the password as it is now (read
 * again if a second has passed, or at once with again); NGX_DECLINED:
 * none configured.
 */
ngx_int_t ngx_http_gms_redis_secret_auth(ngx_http_gms_rconn_t *rc,
    ngx_uint_t whose, ngx_uint_t again, ngx_http_gms_rconn_reply_pt handler);

/*
 * AUTH's refusal, in its handler: 1 if AUTH went again, with the file
 * read anew (once a connection)
 */
ngx_uint_t ngx_http_gms_redis_secret_refused(ngx_http_gms_rconn_t *rc,
    ngx_uint_t whose, redisReply *reply, ngx_http_gms_rconn_reply_pt handler);


#endif /* _NGX_HTTP_GMS_REDIS_SECRET_H_INCLUDED_ */

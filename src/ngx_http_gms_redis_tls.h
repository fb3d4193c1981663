
/*
 * A Redis connection's TLS: the handshake, the certificate's check, and
 * the reads and writes over it.
 */


#ifndef _NGX_HTTP_GMS_REDIS_TLS_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_TLS_H_INCLUDED_


#include "ngx_http_gms_module.h"
#include "ngx_http_gms_redis_conn.h"


#if (NGX_SSL)

ngx_int_t ngx_http_gms_redis_tls_handshake(ngx_http_gms_rconn_t *rc,
    ngx_connection_handler_pt handler, const char **reason);
ngx_int_t ngx_http_gms_redis_tls_verify(ngx_http_gms_rconn_t *rc);
ssize_t ngx_http_gms_redis_tls_recv(ngx_connection_t *c, u_char *buf,
    size_t size);
ssize_t ngx_http_gms_redis_tls_send(ngx_connection_t *c, u_char *buf,
    size_t size);

#endif


#endif /* _NGX_HTTP_GMS_REDIS_TLS_H_INCLUDED_ */

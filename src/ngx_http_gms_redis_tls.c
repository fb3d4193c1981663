
/*
 * A Redis connection's TLS (ngx_http_gms_redis_conn.c calls it): the
 * handshake with SNI, the certificate checked against the configured name
 * or address, and one SSL_read() or SSL_write() per call where nginx's
 * own would make two.
 */


#include "ngx_http_gms_redis_tls.h"
#include "ngx_http_gms_metrics.h"


#if (NGX_SSL)

static ngx_int_t ngx_http_gms_redis_tls_check_name(ngx_connection_t *c,
    ngx_str_t *name);


/*
 * The client side of the handshake on a connected rc: NGX_OK when it
 * ended at once (ngx_http_gms_redis_tls_verify() says how), NGX_AGAIN
 * when handler will be called at its end, NGX_ERROR with *reason when it
 * could not start (logged as need be; the caller closes).
 */

ngx_int_t
ngx_http_gms_redis_tls_handshake(ngx_http_gms_rconn_t *rc,
    ngx_connection_handler_pt handler, const char **reason)
{
    ngx_int_t                  rv;
    ngx_str_t                 *name;
    ngx_connection_t          *c;
    ngx_http_gms_main_conf_t  *gmcf;

    c = rc->connection;
    gmcf = rc->gmcf;

    if (ngx_ssl_create_connection(gmcf->redis.ssl, c,
                                  NGX_SSL_BUFFER|NGX_SSL_CLIENT)
        != NGX_OK)
    {
        *reason = "cannot create a TLS connection";
        return NGX_ERROR;
    }

    /* SNI, unless the name is an address (RFC 6066, 3) */

    name = gmcf->redis.ssl_name.len ? &gmcf->redis.ssl_name
                              : (rc->addr ? &rc->addr->host : NULL);

    if (name && name->len
        && ngx_inet_addr(name->data, name->len) == INADDR_NONE
        && ngx_strlchr(name->data, name->data + name->len, ':') == NULL)
    {
        u_char  sni[256];

        if (name->len < sizeof(sni)) {
            ngx_cpystrn(sni, name->data, name->len + 1);

            if (SSL_set_tlsext_host_name(c->ssl->connection, (char *) sni)
                == 0)
            {
                ngx_ssl_error(NGX_LOG_ERR, c->log, 0,
                              "gms: redis SSL_set_tlsext_host_name(\"%V\") "
                              "failed", name);
                *reason = "SNI failed";
                return NGX_ERROR;
            }
        }
    }

    rv = ngx_ssl_handshake(c);

    if (rv == NGX_AGAIN) {
        c->ssl->handler = handler;
        return NGX_AGAIN;
    }

    return NGX_OK;
}


/*
 * The handshake's end: NGX_OK; NGX_DECLINED when it failed; NGX_ERROR
 * when the certificate does not do (logged).  Both failures counted.
 */

ngx_int_t
ngx_http_gms_redis_tls_verify(ngx_http_gms_rconn_t *rc)
{
    long                       rv;
    ngx_str_t                 *name;
    ngx_connection_t          *c;
    ngx_http_gms_main_conf_t  *gmcf;

    c = rc->connection;
    gmcf = rc->gmcf;

    if (!c->ssl->handshaked) {
        ngx_http_gms_count(tls_failures);
        return NGX_DECLINED;
    }

    if (!gmcf->redis.ssl_verify) {
        return NGX_OK;
    }

    rv = SSL_get_verify_result(c->ssl->connection);

    if (rv != X509_V_OK) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis %s at %V: the certificate does not "
                      "verify: (%l:%s)", rc->what, &rc->peer, rv,
                      X509_verify_cert_error_string(rv));
        ngx_http_gms_count(tls_failures);
        return NGX_ERROR;
    }

    name = gmcf->redis.ssl_name.len ? &gmcf->redis.ssl_name
                              : (rc->addr ? &rc->addr->host : NULL);

    if (name == NULL || name->len == 0) {
        /* an address a Sentinel named: the name must be configured */
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis %s at %V: no name to verify the "
                      "certificate against; set "
                      "\"gms_token_redis_ssl_name\"", rc->what,
                      &rc->peer);
        ngx_http_gms_count(tls_failures);
        return NGX_ERROR;
    }

    if (ngx_http_gms_redis_tls_check_name(c, name) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis %s at %V: the certificate does not "
                      "match \"%V\"", rc->what, &rc->peer, name);
        ngx_http_gms_count(tls_failures);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * The certificate against the name: a host name as nginx checks one, an
 * address (Redis is often reached by one) against the certificate's IP
 * address entries, which ngx_ssl_check_host() does not read.
 */

static ngx_int_t
ngx_http_gms_redis_tls_check_name(ngx_connection_t *c, ngx_str_t *name)
{
    int         rv;
    X509       *cert;
    ngx_str_t   ip;
    u_char      text[NGX_INET6_ADDRSTRLEN + 1];

    ip = *name;

    if (ip.len > 2 && ip.data[0] == '[' && ip.data[ip.len - 1] == ']') {
        ip.data++;
        ip.len -= 2;
    }

    if (ngx_inet_addr(ip.data, ip.len) == INADDR_NONE
        && ngx_strlchr(ip.data, ip.data + ip.len, ':') == NULL)
    {
        return ngx_ssl_check_host(c, name);
    }

    if (ip.len >= sizeof(text)) {
        return NGX_ERROR;
    }

    ngx_cpystrn(text, ip.data, ip.len + 1);

    cert = SSL_get_peer_certificate(c->ssl->connection);
    if (cert == NULL) {
        return NGX_ERROR;
    }

    rv = X509_check_ip_asc(cert, (const char *) text, 0);

    X509_free(cert);

    return rv == 1 ? NGX_OK : NGX_ERROR;
}


/*
 * A reply over TLS, in one SSL_read().  nginx's ngx_ssl_recv() reads until
 * SSL_read() finds nothing, to learn that the socket is empty: for a reply
 * in one record, a second SSL_read() (and a recv() that fails with
 * EAGAIN) after the one that brought it, and the error queue cleared
 * before them.  Here: nothing left in OpenSSL's buffer
 * (SSL_has_pending()), and its read from the socket short of what it
 * asked (with read_ahead, which nginx sets, OpenSSL asks for a whole
 * buffer, more than 16 KB, whenever its buffer is empty), is an empty
 * socket too (with epoll, edge-triggered, and EPOLLRDHUP: a FIN already
 * seen is read as nginx reads it), so ready is cleared and whatever comes
 * next is a new event.
 * Anything else (data left in OpenSSL, a long read, the error queue not
 * empty, SSL_read() wanting to write) goes to ngx_ssl_recv(); its errors
 * are judged as ngx_ssl_handle_recv() judges them.
 */

ssize_t
ngx_http_gms_redis_tls_recv(ngx_connection_t *c, u_char *buf, size_t size)
{
    int        n, sslerr;
    BIO       *rbio;
    SSL       *ssl;
    uint64_t   before;
    ngx_err_t  err;

    ssl = c->ssl->connection;

    if ((c->ssl->last != NGX_OK && c->ssl->last != NGX_AGAIN)
        || c->ssl->saved_write_handler
        || SSL_has_pending(ssl)
        || ERR_peek_error() != 0)
    {
        return c->recv(c, buf, size);
    }

    rbio = SSL_get_rbio(ssl);
    before = BIO_number_read(rbio);

    n = SSL_read(ssl, buf, size);

    if (n > 0) {
        c->ssl->last = NGX_OK;

#if (NGX_HAVE_EPOLLRDHUP)
        /* as ngx_unix_recv() after a short read: a FIN seen is read too */

        if ((ngx_event_flags & NGX_USE_EPOLL_EVENT) && ngx_use_epoll_rdhup
            && !c->read->pending_eof
            && !SSL_has_pending(ssl)
            && BIO_number_read(rbio) - before < SSL3_RT_MAX_PLAIN_LENGTH)
        {
            c->read->ready = 0;
        }
#endif

        return n;
    }

    sslerr = SSL_get_error(ssl, n);

    if (sslerr == SSL_ERROR_WANT_READ) {
        c->ssl->last = NGX_AGAIN;
        c->read->ready = 0;
        return NGX_AGAIN;
    }

    if (sslerr != SSL_ERROR_ZERO_RETURN && sslerr != SSL_ERROR_SYSCALL
        && sslerr != SSL_ERROR_SSL)
    {
        /* wanting to write, say: nginx's handling, SSL_read() again */
        return c->recv(c, buf, size);
    }

    err = (sslerr == SSL_ERROR_SYSCALL) ? ngx_errno : 0;

    c->ssl->no_wait_shutdown = 1;
    c->ssl->no_send_shutdown = 1;
    c->read->ready = 0;

    if (sslerr == SSL_ERROR_ZERO_RETURN || ERR_peek_error() == 0) {
        c->ssl->last = NGX_DONE;
        c->read->eof = 1;
        return 0;
    }

    ngx_ssl_error(NGX_LOG_ERR, c->log, err, "SSL_read() failed");

    c->ssl->last = NGX_ERROR;
    c->read->error = 1;

    return NGX_ERROR;
}


/*
 * The commands over TLS: SSL_write() without clearing the error queue
 * first when it is empty (ngx_ssl_write() clears it at each call, which
 * costs as much as a quarter of the write).  A write that cannot go on
 * goes to ngx_ssl_write(), which tries it again with the same bytes, as
 * OpenSSL wants, and waits as nginx does; a failure is logged and the
 * connection marked as ngx_ssl_write() does.
 */

ssize_t
ngx_http_gms_redis_tls_send(ngx_connection_t *c, u_char *buf, size_t size)
{
    int        n, sslerr;
    ngx_err_t  err;

    if (c->ssl->saved_read_handler || ERR_peek_error() != 0) {
        return c->send(c, buf, size);
    }

    n = SSL_write(c->ssl->connection, buf, size);

    if (n > 0) {
        c->sent += n;
        return n;
    }

    sslerr = SSL_get_error(c->ssl->connection, n);

    if (sslerr != SSL_ERROR_SYSCALL && sslerr != SSL_ERROR_SSL
        && sslerr != SSL_ERROR_ZERO_RETURN)
    {
        return c->send(c, buf, size);
    }

    err = (sslerr != SSL_ERROR_SSL) ? ngx_errno : 0;

    c->ssl->no_wait_shutdown = 1;
    c->ssl->no_send_shutdown = 1;
    c->write->error = 1;

    ngx_ssl_error(NGX_LOG_ERR, c->log, err, "SSL_write() failed");

    return NGX_ERROR;
}

#endif

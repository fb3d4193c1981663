
/*
 * The module's own answers: a header added, one buffer sent with its
 * length known, Rest.li error bodies.  The bottom of the module: every
 * handler (the token check, getEsTaskStatus, the metrics) calls it, and
 * it calls nothing of the module's.
 */


#include "ngx_http_gms_response.h"

#include "gms_restli.h"


static void ngx_http_gms_free_body(void *data);


ngx_int_t
ngx_http_gms_response_add_header(ngx_http_request_t *r, const char *key,
    ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->key.data = (u_char *) key;
    h->key.len = ngx_strlen(key);
    h->value = *value;

    /* as nginx's own header handlers leave it, for filters that look */
    h->lowcase_key = ngx_pnalloc(r->pool, h->key.len);
    if (h->lowcase_key == NULL) {
        return NGX_ERROR;
    }

    h->hash = ngx_hash_strlow(h->lowcase_key, h->key.data, h->key.len);

    return NGX_OK;
}


/*
 * A malloc()ed body sent as it is, freed with the request's pool: not
 * copied into the pool (a getEsTaskStatus answer would take a block more)
 */

ngx_int_t
ngx_http_gms_response_json(ngx_http_request_t *r, ngx_uint_t status, char *body)
{
    ngx_buf_t           *b;
    ngx_pool_cleanup_t  *cln;
    static ngx_str_t     type = ngx_string("application/json");

    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        free(body);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_gms_free_body;
    cln->data = body;

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = (u_char *) body;
    b->last = b->pos + ngx_strlen(body);
    b->memory = 1;

    if (ngx_http_discard_request_body(r) != NGX_OK) {
        r->keepalive = 0;
    }

    return ngx_http_gms_response_send(r, status, &type, b);
}


/* a body in the caller's scratch buffer, copied into the request's pool */

ngx_int_t
ngx_http_gms_response_json_copy(ngx_http_request_t *r, ngx_uint_t status,
    const char *body)
{
    size_t            len;
    ngx_buf_t        *b;
    static ngx_str_t  type = ngx_string("application/json");

    len = ngx_strlen(body);

    b = ngx_create_temp_buf(r->pool, len);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = ngx_cpymem(b->last, body, len);

    if (ngx_http_discard_request_body(r) != NGX_OK) {
        r->keepalive = 0;
    }

    return ngx_http_gms_response_send(r, status, &type, b);
}


/* the module's own answers: one buffer, its length known */

ngx_int_t
ngx_http_gms_response_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *type, ngx_buf_t *b)
{
    ngx_int_t    rc;
    ngx_chain_t  out;

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = status;
    r->headers_out.content_length_n = b->last - b->pos;
    r->headers_out.content_type = *type;
    r->headers_out.content_type_len = type->len;
    r->headers_out.content_type_lowcase = NULL;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


ngx_int_t
ngx_http_gms_response_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *message, size_t len)
{
    return ngx_http_gms_response_json(r, status,
                                      gms_restli_error_body((int) status,
                                                            message, len));
}


/* a body made at configuration time, sent as it is */

ngx_int_t
ngx_http_gms_response_body(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *body)
{
    ngx_buf_t        *b;
    static ngx_str_t  type = ngx_string("application/json");

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = body->data;
    b->last = body->data + body->len;
    b->memory = 1;

    if (ngx_http_discard_request_body(r) != NGX_OK) {
        r->keepalive = 0;
    }

    return ngx_http_gms_response_send(r, status, &type, b);
}


/* the Rest.li error body of a fixed message, into the cycle's pool */

ngx_int_t
ngx_http_gms_response_error_body(ngx_conf_t *cf, ngx_uint_t status,
    const char *message, ngx_str_t *out)
{
    char  *body;

    body = gms_restli_error_body((int) status, message, ngx_strlen(message));
    if (body == NULL) {
        return NGX_ERROR;
    }

    out->len = ngx_strlen(body);
    out->data = ngx_pnalloc(cf->pool, out->len);

    if (out->data != NULL) {
        ngx_memcpy(out->data, body, out->len);
    }

    free(body);

    return (out->data != NULL) ? NGX_OK : NGX_ERROR;
}


static void
ngx_http_gms_free_body(void *data)
{
    free(data);
}

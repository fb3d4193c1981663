
/*
 * Where the credential comes from and what the request carries on to GMS:
 * the Authorization header or gms_token_source's variable (its
 * configuration too), CORS preflights let through with gms_token_preflight
 * pass, and the request headers the module removes or sets.
 */


#include "ngx_http_gms_source.h"


static u_char *ngx_http_gms_name_end(u_char *p, u_char *last);
static ngx_table_elt_t *ngx_http_gms_find_header(ngx_http_request_t *r,
    ngx_str_t *name);


/*
 * gms_token_source: nginx's debug lines quote the request headers a source
 * reads ($http_x_gms_token: X-Gms-Token) as they quote Authorization, so
 * the log writer masks those too; a cookie's value is masked whatever the
 * source.  A source of one variable ($cookie_gms_token) is read as that
 * variable, not through the script engine, whose debug lines quote every
 * value it copies.
 */

ngx_int_t
ngx_http_gms_source_conf(ngx_conf_t *cf, ngx_http_gms_loc_conf_t *conf,
    ngx_http_gms_main_conf_t *gmcf)
{
    u_char      *p, *last, *name;
    char       **header;
    size_t       len;
    ngx_str_t    var, *value;
    ngx_uint_t   i, brace;

    value = &conf->source->value;
    last = value->data + value->len;

    for (p = value->data; p < last; p++) {

        if (*p != '$') {
            continue;
        }

        p += (p + 1 < last && p[1] == '{') ? 2 : 1;

        if (last - p <= 5 || ngx_strncasecmp(p, (u_char *) "http_", 5) != 0) {
            p--;
            continue;
        }

        name = p + 5;
        p = ngx_http_gms_name_end(name, last);
        len = p-- - name;

        header = gmcf->mask_headers.elts;

        for (i = 0; i < gmcf->mask_headers.nelts; i++) {
            if (ngx_strlen(header[i]) == len
                && ngx_strncasecmp((u_char *) header[i], name, len) == 0)
            {
                break;
            }
        }

        if (len == 0 || i < gmcf->mask_headers.nelts) {
            continue;
        }

        header = ngx_array_push(&gmcf->mask_headers);
        if (header == NULL) {
            return NGX_ERROR;
        }

        *header = ngx_pnalloc(cf->pool, len + 1);
        if (*header == NULL) {
            return NGX_ERROR;
        }

        ngx_strlow((u_char *) *header, name, len);
        (*header)[len] = '\0';
    }

    /* "$name" or "${name}", and nothing else */

    conf->source_index = NGX_ERROR;

    if (value->len < 2 || value->data[0] != '$') {
        return NGX_OK;
    }

    brace = (value->data[1] == '{');
    var.data = value->data + 1 + brace;
    p = ngx_http_gms_name_end(var.data, last);
    var.len = p - var.data;

    if (var.len == 0 || p + brace != last || (brace && *p != '}')) {
        return NGX_OK;
    }

    conf->source_index = ngx_http_get_variable_index(cf, &var);

    return conf->source_index == NGX_ERROR ? NGX_ERROR : NGX_OK;
}


/* the end of a variable's name: letters, digits and '_' */

static u_char *
ngx_http_gms_name_end(u_char *p, u_char *last)
{
    while (p < last
           && (*p == '_' || (*p >= '0' && *p <= '9')
               || ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')))
    {
        p++;
    }

    return p;
}


/*
 * A CORS preflight (Fetch standard, "CORS-preflight request"): OPTIONS
 * with Origin and Access-Control-Request-Method.  A browser sends it
 * without credentials, so it cannot carry a token.
 */

ngx_uint_t
ngx_http_gms_source_is_preflight(ngx_http_request_t *r)
{
    static ngx_str_t  origin = ngx_string("Origin");
    static ngx_str_t  method = ngx_string("Access-Control-Request-Method");

    return r->method == NGX_HTTP_OPTIONS
           && ngx_http_gms_find_header(r, &origin) != NULL
           && ngx_http_gms_find_header(r, &method) != NULL;
}


/*
 * The credential as a header value would carry it: the Authorization
 * header, or with gms_token_source the variable's value ("" when there
 * is none), taken as a bearer token whether or not it says "Bearer ".
 * value->data is NULL when there is no credential at all.
 */

ngx_int_t
ngx_http_gms_source_credential(ngx_http_request_t *r,
    ngx_http_gms_loc_conf_t *glcf, ngx_str_t *value)
{
    u_char                     *p;
    ngx_str_t                   v;
    ngx_http_variable_value_t  *vv;

    if (glcf->source == NULL) {
        if (r->headers_in.authorization == NULL) {
            ngx_str_null(value);

        } else {
            *value = r->headers_in.authorization->value;
        }

        return NGX_OK;
    }

    if (glcf->source_index == NGX_ERROR) {
        if (ngx_http_complex_value(r, glcf->source, &v) != NGX_OK) {
            return NGX_ERROR;
        }

    } else {
        /* not through the script engine: its debug lines quote the value */

        vv = ngx_http_get_flushed_variable(r, glcf->source_index);
        if (vv == NULL) {
            return NGX_ERROR;
        }

        v.data = vv->data;
        v.len = vv->not_found ? 0 : vv->len;
    }

    if (v.len == 0) {
        ngx_str_null(value);
        return NGX_OK;
    }

    if (v.len > sizeof("Bearer ") - 1
        && ngx_strncasecmp(v.data, (u_char *) "Bearer ", 7) == 0)
    {
        *value = v;
        return NGX_OK;
    }

    /* a bare token (a cookie's value, say): checked as "Bearer <token>" */

    p = ngx_pnalloc(r->pool, sizeof("Bearer ") - 1 + v.len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    value->data = p;
    value->len = ngx_cpymem(ngx_cpymem(p, "Bearer ", 7), v.data, v.len) - p;

    return NGX_OK;
}


/*
 * With gms_token_source, GMS must see the token the edge checked, as GMS
 * reads credentials: "Authorization: Bearer <token>", in place of any
 * Authorization header the client sent.
 */

ngx_int_t
ngx_http_gms_source_forward_token(ngx_http_request_t *r, ngx_str_t *credential)
{
    ngx_table_elt_t  *h;

    static ngx_str_t  authorization = ngx_string("Authorization");

    if (ngx_http_gms_source_drop_header(r, &authorization) != NGX_OK) {
        return NGX_ERROR;
    }

    h = ngx_list_push(&r->headers_in.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Authorization");
    h->lowcase_key = (u_char *) "authorization";
    h->value = *credential;

    r->headers_in.authorization = h;

    return NGX_OK;
}


/*
 * Every header of that name out of the request, so that no proxy_pass
 * forwards one; the list is made anew (nginx's lists cannot drop an
 * element), only when there is something to drop.
 */

ngx_int_t
ngx_http_gms_source_drop_header(ngx_http_request_t *r, ngx_str_t *name)
{
    ngx_uint_t        i, n, found;
    ngx_list_t        headers;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *copy;

    found = 0;
    n = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++, n++) {
            if (h[i].key.len == name->len
                && ngx_strncasecmp(h[i].key.data, name->data, name->len) == 0)
            {
                found++;
            }
        }
    }

    if (found == 0) {
        return NGX_OK;
    }

    if (ngx_list_init(&headers, r->pool, n - found + 1,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].key.len == name->len
                && ngx_strncasecmp(h[i].key.data, name->data, name->len) == 0)
            {
                continue;
            }

            copy = ngx_list_push(&headers);
            if (copy == NULL) {
                return NGX_ERROR;
            }

            *copy = h[i];
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "gms: %ui client %V header(s) dropped", found, name);

    r->headers_in.headers = headers;

    /* a list of one part points at it: here, not at the copy on the stack */

    if (headers.last == &headers.part) {
        r->headers_in.headers.last = &r->headers_in.headers.part;
    }

    return NGX_OK;
}


static ngx_table_elt_t *
ngx_http_gms_find_header(ngx_http_request_t *r, ngx_str_t *name)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].key.len == name->len
                && ngx_strncasecmp(h[i].key.data, name->data, name->len) == 0)
            {
                return &h[i];
            }
        }
    }

    return NULL;
}

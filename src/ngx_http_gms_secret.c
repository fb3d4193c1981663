
/*
 * Secret files: gms_token_salt_file, gms_token_signing_key_file, the
 * system client's secret, read when the configuration is loaded (and on
 * every reload); password_file= and sentinel_password_file= too, and
 * again by the workers when they change (ngx_http_gms_redis_secret.c).
 * One reader, the rule of src/lib/gms_secret.c (the one gms-token
 * follows): the file's bytes less one line ending at the end; a file of
 * two lines refused.  A relative path is relative to nginx's prefix.  No
 * byte of a secret ever reaches a log; the read buffer is wiped.
 */


#include "ngx_http_gms_secret.h"

#include "gms_secret.h"


static void ngx_http_gms_secret_error(ngx_conf_t *cf, ngx_err_t err,
    const char *fmt, ...);


/*
 * The secret in out (allocated from the configuration's pool), at most
 * max bytes: NGX_CONF_OK, or NGX_CONF_ERROR with the reason logged
 */

char *
ngx_http_gms_secret_file(ngx_conf_t *cf, ngx_str_t *name, size_t max,
    ngx_str_t *out)
{
    u_char     *buf;
    size_t      len;
    ngx_str_t   path;

    path = *name;

    if (ngx_conf_full_name(cf->cycle, &path, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    buf = ngx_pnalloc(cf->temp_pool, max + 3);
    if (buf == NULL) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_gms_secret_read(cf, path.data, buf, max, &len) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    out->len = len;
    out->data = ngx_pnalloc(cf->pool, len + 1);
    if (out->data == NULL) {
        ngx_explicit_memzero(buf, max + 3);
        return NGX_CONF_ERROR;
    }

    ngx_memcpy(out->data, buf, len);
    out->data[len] = '\0';
    ngx_explicit_memzero(buf, max + 3);

    return NGX_CONF_OK;
}


/*
 * The secret of the file at path (NUL-terminated) into buf, which has
 * room for max + 3 bytes (the secret and a CRLF, and a byte to tell a
 * longer file): NGX_OK, its length in *len; NGX_ERROR, buf wiped and why
 * logged: at configuration (cf) as an emergency, in a worker (cf NULL)
 * as an error.  Blocking, as a small local file may be: an open, a stat
 * and one read of at most max + 3 bytes.
 */

ngx_int_t
ngx_http_gms_secret_read(ngx_conf_t *cf, u_char *path, u_char *buf,
    size_t max, size_t *len)
{
    ssize_t          n;
    ngx_fd_t         fd;
    ngx_file_info_t  fi;

    fd = ngx_open_file(path, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (fd == NGX_INVALID_FILE) {
        ngx_http_gms_secret_error(cf, ngx_errno,
                                  ngx_open_file_n " \"%s\" failed", path);
        return NGX_ERROR;
    }

    n = -1;

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR) {
        ngx_http_gms_secret_error(cf, ngx_errno,
                                  ngx_fd_info_n " \"%s\" failed", path);

    } else if (!ngx_is_file(&fi) || ngx_file_size(&fi) > (off_t) max + 2) {
        ngx_http_gms_secret_error(cf, 0,
                                  "\"%s\" is not a file of at most %uz bytes",
                                  path, max);

    } else {
        n = ngx_read_fd(fd, buf, max + 3);

        if (n == -1) {
            ngx_http_gms_secret_error(cf, ngx_errno,
                                      ngx_read_fd_n " \"%s\" failed", path);
        }
    }

    if (ngx_close_file(fd) == NGX_FILE_ERROR) {
        ngx_log_error(NGX_LOG_ALERT, cf ? cf->log : ngx_cycle->log, ngx_errno,
                      ngx_close_file_n " \"%s\" failed", path);
    }

    if (n < 0) {
        return NGX_ERROR;
    }

    if (gms_secret_line((char *) buf, n, len) != 0) {
        ngx_explicit_memzero(buf, max + 3);
        ngx_http_gms_secret_error(cf, 0,
                                  "\"%s\" holds more than one line: a secret "
                                  "file is the secret, with at most one line "
                                  "ending", path);
        return NGX_ERROR;
    }

    if (*len > max) {
        ngx_explicit_memzero(buf, max + 3);
        ngx_http_gms_secret_error(cf, 0, "\"%s\" is longer than %uz bytes",
                                  path, max);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* at configuration an emergency, in a worker an error: the same words */

static void
ngx_http_gms_secret_error(ngx_conf_t *cf, ngx_err_t err, const char *fmt,
    ...)
{
    u_char   *p, text[NGX_MAX_CONF_ERRSTR];
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(text, text + sizeof(text), fmt, args);
    va_end(args);

    if (cf) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, err, "%*s", p - text, text);
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, err,
                  "gms: %*s; the secret read before stays", p - text, text);
}

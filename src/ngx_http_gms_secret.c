
/*
 * Secret files, read when the configuration is loaded (and on every
 * reload): gms_token_salt_file, gms_token_signing_key_file, the system
 * client's secret, password_file= and sentinel_password_file=.  One
 * reader, the rule of src/lib/gms_secret.c (the one gms-token follows):
 * the file's bytes less one line ending at the end; a file of two lines
 * refused.  A relative path is relative to nginx's prefix.  No byte of a
 * secret ever reaches a log; the read buffer is wiped.
 */


#include "ngx_http_gms_secret.h"

#include "gms_secret.h"


/*
 * The secret in out (allocated from the configuration's pool), at most
 * max bytes: NGX_CONF_OK, or NGX_CONF_ERROR with the reason logged
 */

char *
ngx_http_gms_secret_file(ngx_conf_t *cf, ngx_str_t *name, size_t max,
    ngx_str_t *out)
{
    u_char           *buf;
    size_t            len;
    ssize_t           n;
    ngx_fd_t          fd;
    ngx_str_t         path;
    ngx_file_info_t   fi;

    path = *name;

    if (ngx_conf_full_name(cf->cycle, &path, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    fd = ngx_open_file(path.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_open_file_n " \"%s\" failed", path.data);
        return NGX_CONF_ERROR;
    }

    buf = NULL;
    n = -1;

    /* room for the secret and a CRLF after it */

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_fd_info_n " \"%s\" failed", path.data);
        goto done;
    }

    if (!ngx_is_file(&fi) || ngx_file_size(&fi) > (off_t) max + 2) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%s\" is not a file of at most %uz bytes",
                           path.data, max);
        goto done;
    }

    buf = ngx_pnalloc(cf->temp_pool, max + 3);
    if (buf == NULL) {
        goto done;
    }

    n = ngx_read_fd(fd, buf, max + 3);

    if (n == -1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_read_fd_n " \"%s\" failed", path.data);
    }

done:

    if (ngx_close_file(fd) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_ALERT, cf, ngx_errno,
                           ngx_close_file_n " \"%s\" failed", path.data);
    }

    if (buf == NULL || n < 0) {
        return NGX_CONF_ERROR;
    }

    if (gms_secret_line((char *) buf, n, &len) != 0) {
        ngx_explicit_memzero(buf, max + 3);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%s\" holds more than one line: a secret file "
                           "is the secret, with at most one line ending",
                           path.data);
        return NGX_CONF_ERROR;
    }

    if (len > max) {
        ngx_explicit_memzero(buf, max + 3);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%s\" is longer than %uz bytes", path.data, max);
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

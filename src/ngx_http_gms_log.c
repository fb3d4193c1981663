
/*
 * Credentials masked in the error logs: every HTTP error log gets a
 * writer that masks tokens, and the request headers gms_token_source
 * reads, before nginx's debug lines reach the file.
 */


#include "ngx_http_gms_log.h"

#include "gms_mask.h"


static ngx_log_t *ngx_http_gms_masked_log(ngx_cycle_t *cycle, ngx_log_t *log,
    ngx_array_t *copies);
static void ngx_http_gms_log_writer(ngx_log_t *log, ngx_uint_t level,
    u_char *buf, size_t len);


/*
 * nginx logs every request header at debug level, the Authorization
 * header included.  Each HTTP location's error log (and the listening
 * sockets' copies of it) becomes a copy whose file logs have a writer that
 * masks credentials before writing (log->wdata: the main configuration,
 * which names the headers gms_token_source reads).  Copies, not the logs
 * themselves: nginx expects the cycle's own log chain to have a file log
 * without a writer.  Done at module init, once every log file of the cycle
 * is known, where the module is used (a module loaded for nothing leaves
 * nginx's logs as they are).
 */

ngx_int_t
ngx_http_gms_log_init(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i;
    ngx_log_t                ***slot;
    ngx_array_t                copies;
    ngx_listening_t           *ls;
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_gms_module);

    /* pairs: an original, its copy */
    if (ngx_array_init(&copies, cycle->pool, 8, 2 * sizeof(ngx_log_t *))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    slot = gmcf->error_logs.elts;

    for (i = 0; i < gmcf->error_logs.nelts; i++) {
        *slot[i] = ngx_http_gms_masked_log(cycle, *slot[i], &copies);

        if (*slot[i] == NULL) {
            return NGX_ERROR;
        }
    }

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {
        if (ls[i].log.writer == NULL) {
            ls[i].log.writer = ngx_http_gms_log_writer;
            ls[i].log.wdata = gmcf;
        }
    }

    return NGX_OK;
}


static ngx_log_t *
ngx_http_gms_masked_log(ngx_cycle_t *cycle, ngx_log_t *log,
    ngx_array_t *copies)
{
    ngx_uint_t   i;
    ngx_log_t  **pair, *copy;

    if (log == NULL) {
        return NULL;
    }

    pair = copies->elts;

    for (i = 0; i < copies->nelts; i++) {
        if (pair[2 * i] == log || pair[2 * i + 1] == log) {
            return pair[2 * i + 1];
        }
    }

    copy = ngx_palloc(cycle->pool, sizeof(ngx_log_t));
    if (copy == NULL) {
        return NULL;
    }

    *copy = *log;

    if (copy->writer == NULL) {
        copy->writer = ngx_http_gms_log_writer;
        copy->wdata = ngx_http_cycle_get_module_main_conf(cycle,
                                                          ngx_http_gms_module);
    }

    if (log->next) {
        copy->next = ngx_http_gms_masked_log(cycle, log->next, copies);

        if (copy->next == NULL) {
            return NULL;
        }
    }

    pair = ngx_array_push(copies);
    if (pair == NULL) {
        return NULL;
    }

    pair[0] = log;
    pair[1] = copy;

    return copy;
}


static void
ngx_http_gms_log_writer(ngx_log_t *log, ngx_uint_t level, u_char *buf,
    size_t len)
{
    ssize_t                    n;
    ngx_http_gms_main_conf_t  *gmcf;

    gmcf = log->wdata;

    gms_mask_credentials(buf, len, gmcf->mask_headers.elts,
                         gmcf->mask_headers.nelts);

    /* as ngx_log_error_core() writes a file log */

    if (ngx_time() == log->disk_full_time) {
        return;
    }

    n = ngx_write_fd(log->file->fd, buf, len);

    if (n == -1 && ngx_errno == NGX_ENOSPC) {
        log->disk_full_time = ngx_time();
    }
}

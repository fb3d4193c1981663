
/*
 * POST /operations?action=getEsTaskStatus answered at the edge: the task
 * reference from the body becomes an in-memory subrequest to the search
 * cluster's _tasks API, whose answer is mapped to the metadata service's
 * Rest.li action response.
 */


#include "ngx_http_gms_es_task.h"
#include "ngx_http_gms_es_task_module.h"
#include "ngx_http_gms_auth.h"
#include "ngx_http_gms_privilege.h"
#include "ngx_http_gms_es_route.h"
#include "ngx_http_gms_response.h"
#include "ngx_http_gms_metrics.h"
#include "ngx_http_gms_release.h"

#include "gms_restli.h"
#include "gms_es_openapi.h"


static ngx_int_t ngx_http_gms_es_task_handler(ngx_http_request_t *r);
static void ngx_http_gms_es_task_body(ngx_http_request_t *r);
static void ngx_http_gms_es_task_too_large(ngx_http_request_t *r);
static void ngx_http_gms_es_task_parse(ngx_http_request_t *r,
    ngx_http_gms_es_ctx_t *es);
static ngx_int_t ngx_http_gms_es_task_subrequest(ngx_http_request_t *r,
    ngx_http_gms_es_ctx_t *es);
static ngx_int_t ngx_http_gms_es_task_done(ngx_http_request_t *r,
    void *data, ngx_int_t rc);
static void ngx_http_gms_es_task_respond(ngx_http_request_t *r);
static ngx_int_t ngx_http_gms_es_task_refuse(ngx_http_request_t *r,
    ngx_uint_t status, const char *message);
static ngx_int_t ngx_http_gms_es_task_refuse_len(ngx_http_request_t *r,
    ngx_uint_t status, const char *message, size_t len);
static ngx_int_t ngx_http_gms_es_task_error(ngx_http_request_t *r,
    ngx_uint_t status, const char *message, size_t len);
static ngx_int_t ngx_http_gms_es_task_subrequest_phase(
    ngx_http_request_t *r);
static ngx_http_gms_es_ctx_t *ngx_http_gms_es_task_of(ngx_http_request_t *r);
static ngx_int_t ngx_http_gms_es_task_allowed(ngx_http_request_t *r,
    ngx_http_gms_ctx_t *ctx);
static ngx_http_gms_es_ctx_t *ngx_http_gms_es_task_ctx(ngx_http_request_t *r);
static void ngx_http_gms_es_task_count(ngx_http_request_t *r,
    ngx_uint_t outcome);
static ngx_int_t ngx_http_gms_es_task_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_gms_es_openapi_precontent(ngx_http_request_t *r,
    ngx_http_gms_loc_conf_t *glcf);
static ngx_int_t ngx_http_gms_es_openapi_accepts(ngx_http_request_t *r);
static ngx_int_t ngx_http_gms_es_openapi_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_gms_es_openapi_answer(ngx_http_request_t *r,
    ngx_http_gms_es_ctx_t *es, char *value, ngx_uint_t cluster_error);


static ngx_http_output_body_filter_pt  ngx_http_next_body_filter;


ngx_int_t
ngx_http_gms_es_task_precontent(ngx_http_request_t *r)
{
    ngx_int_t                    rc;
    ngx_uint_t                   status;
    ngx_http_gms_ctx_t          *ctx;
    ngx_http_gms_loc_conf_t     *glcf;
    ngx_http_gms_es_loc_conf_t  *eslcf;

    static ngx_str_t             post = ngx_string("POST");

    if (r != r->main) {
        return ngx_http_gms_es_task_subrequest_phase(r);
    }

    eslcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_es_task_module);

    if (eslcf->uri.len == 0) {
        return NGX_DECLINED;
    }

    /* the token check's: whether it is on, the release, the refusals */
    glcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_module);

    if (ngx_http_gms_es_route_openapi(r)) {
        return ngx_http_gms_es_openapi_precontent(r, glcf);
    }

    if (!ngx_http_gms_es_route_action(r)) {
        return NGX_DECLINED;
    }

    if (r->method != NGX_HTTP_POST) {
        if (ngx_http_gms_response_add_header(r, "Allow", &post) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        rc = ngx_http_gms_es_task_refuse(r, NGX_HTTP_NOT_ALLOWED,
                                         "getEsTaskStatus is a POST action");
        goto answered;
    }

    if (glcf->enable) {
        ctx = ngx_http_gms_auth_verdict(r);

        /*
         * An inactive user whose token GMS takes (0.15.0 to 1.1.x; an
         * external OAuth token's): OperationContext.asSession throws
         * ActorAccessException before the privilege check, Rest.li's 500
         * (RestliUtils.toTask, PR 12158), 403 from 1.7.0
         * (RestliUtils.asSession, PR 18003)
         */

        if (ctx && ctx->result == NGX_HTTP_GMS_OK
            && ngx_http_gms_release_inactive(glcf, ctx)
               == GMS_RELEASE_INACTIVE_ACTOR)
        {
            ngx_http_gms_auth_forbid(ctx);

            status = gms_release_es_inactive_status(glcf->release);

            rc = ngx_http_gms_es_task_refuse(r, status,
                                             status == NGX_HTTP_FORBIDDEN
                                             ? GMS_RELEASE_INACTIVE_MESSAGE
                                             : GMS_RELEASE_INACTIVE_RESTLI_500);
            goto answered;
        }

        /* the metadata service checks the privilege before the body */

        if (!ngx_http_gms_es_task_allowed(r, ctx)) {
            if (ngx_http_gms_response_add_header(r, "WWW-Authenticate",
                                                 &glcf->challenge_scope)
                != NGX_OK)
            {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            /* a valid token without the privilege: 401 or 403, by release */

            status = NGX_HTTP_UNAUTHORIZED;

            if (ctx && ctx->result == NGX_HTTP_GMS_OK) {
                status = glcf->forbidden_status;
                ngx_http_gms_auth_forbid(ctx);
            }

            rc = ngx_http_gms_es_task_refuse(r, status,
                                 "User is unauthorized to get ES task status");
            goto answered;
        }
    }

    r->content_handler = ngx_http_gms_es_task_handler;

    return NGX_DECLINED;

answered:

    /* answered from the precontent phase: no later phase runs */
    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


/*
 * The cluster's answer must not send the edge elsewhere: an
 * X-Accel-Redirect (or an error_page) in its answer would take the
 * subrequest, with no token, to another location, GMS's perhaps.  Our
 * subrequest passes this phase once; a second pass is such a redirect,
 * refused before the new location's handler runs.
 */

static ngx_int_t
ngx_http_gms_es_task_subrequest_phase(ngx_http_request_t *r)
{
    ngx_http_gms_es_ctx_t  *es;

    es = ngx_http_gms_es_task_of(r);

    if (es == NULL) {
        return NGX_DECLINED;
    }

    if (!es->started) {
        es->started = 1;
        return NGX_DECLINED;
    }

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "gms: task %s:%L: the search cluster's answer redirected "
                  "the subrequest to \"%V\", refused",
                  es->task.node, (int64_t) es->task.number, &r->uri);

    es->redirected = 1;

    return NGX_HTTP_FORBIDDEN;
}


/* the task status of the request whose subrequest r is, or NULL */

static ngx_http_gms_es_ctx_t *
ngx_http_gms_es_task_of(ngx_http_request_t *r)
{
    ngx_http_gms_es_ctx_t  *es;

    es = ngx_http_get_module_ctx(r->main, ngx_http_gms_es_task_module);

    if (es == NULL || es->subrequest != r) {
        return NULL;
    }

    return es;
}


/*
 * r's task status, made; the token check's context too where it made none
 * (its verdict "off"): every request whose getEsTaskStatus the edge
 * answers has one, where its subrequest is marked as no one's
 * (ngx_http_gms_auth_anonymous())
 */

static ngx_http_gms_es_ctx_t *
ngx_http_gms_es_task_ctx(ngx_http_request_t *r)
{
    ngx_http_gms_es_ctx_t  *es;

    if (ngx_http_gms_auth_ctx(r) == NULL) {
        return NULL;
    }

    es = ngx_pcalloc(r->pool, sizeof(ngx_http_gms_es_ctx_t));
    if (es == NULL) {
        return NULL;
    }

    ngx_http_set_ctx(r, es, ngx_http_gms_es_task_module);

    return es;
}


/*
 * An answer the edge made, by outcome: counted, and noted in the task
 * status of the request it answers ($gms_decision: ngx_http_gms_variables.c)
 */

static void
ngx_http_gms_es_task_count(ngx_http_request_t *r, ngx_uint_t outcome)
{
    ngx_http_gms_es_ctx_t  *es;

    ngx_http_gms_count(es_tasks[outcome]);

    es = ngx_http_get_module_ctx(r->main, ngx_http_gms_es_task_module);

    if (es == NULL) {
        es = ngx_http_gms_es_task_ctx(r->main);
        if (es == NULL) {
            return;
        }
    }

    es->outcome = outcome + 1;
}


/*
 * Any one of the location's privileges suffices (GMS 0.14 and later accept
 * GET_ES_TASK_STATUS_PRIVILEGE or MANAGE_SYSTEM_OPERATIONS); with
 * "privilege=off", as GMS 0.13.0 without REST API authorisation, any valid
 * token may ask.
 */

static ngx_int_t
ngx_http_gms_es_task_allowed(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx)
{
    return ctx != NULL && ctx->result == NGX_HTTP_GMS_OK
           && ngx_http_gms_privilege_has_any(ctx,
                                        ngx_http_gms_es_route_privileges(r));
}


static ngx_int_t
ngx_http_gms_es_task_handler(ngx_http_request_t *r)
{
    ngx_int_t               rc;
    ngx_http_gms_es_ctx_t  *es;

    if (r->headers_in.content_length_n > GMS_ES_TASK_BODY_MAX) {
        return ngx_http_gms_es_task_refuse(r,
                                           NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                           "Request body too large");
    }

    es = ngx_http_gms_es_task_ctx(r);
    if (es == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /*
     * Room for the Content-Length (nginx reads no more), else for the
     * limit: the usual body of a few dozen bytes is no 8 KB allocation.
     */

    es->body_size = (r->headers_in.content_length_n >= 0)
                    ? (size_t) r->headers_in.content_length_n
                    : GMS_ES_TASK_BODY_MAX;

    es->body = ngx_pnalloc(r->pool, es->body_size + 1);
    if (es->body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /*
     * Read unbuffered, into the module's own buffer: a body without a
     * Content-Length (chunked, HTTP/2) is refused as soon as more than
     * the limit has arrived, not once client_max_body_size of it has been
     * read (or written to a temporary file).
     */

    r->request_body_no_buffering = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_gms_es_task_body);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/* the body handler, then the read handler until the body is whole */

static void
ngx_http_gms_es_task_body(ngx_http_request_t *r)
{
    size_t                  n;
    ngx_int_t               rc;
    ngx_chain_t            *cl;
    ngx_http_gms_es_ctx_t  *es;

    es = ngx_http_get_module_ctx(r, ngx_http_gms_es_task_module);

    for ( ;; ) {

        for (cl = r->request_body->bufs; cl; cl = cl->next) {
            n = cl->buf->last - cl->buf->pos;

            if (n == 0) {
                /* the empty last_buf ending a chunked body: pos is NULL */
                continue;
            }

            if (n > es->body_size - es->body_len) {
                ngx_http_gms_es_task_too_large(r);
                return;
            }

            ngx_memcpy(es->body + es->body_len, cl->buf->pos, n);
            es->body_len += n;
            cl->buf->pos = cl->buf->last;
        }

        r->request_body->bufs = NULL;

        if (!r->reading_body) {
            break;
        }

        rc = ngx_http_read_unbuffered_request_body(r);

        if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
            ngx_http_finalize_request(r, rc);
            return;
        }

        if (r->request_body->bufs == NULL && r->reading_body) {
            /* more to come: this runs again when it arrives */
            r->read_event_handler = ngx_http_gms_es_task_body;
            return;
        }
    }

    r->read_event_handler = ngx_http_block_reading;

    ngx_http_gms_es_task_parse(r, es);
}


/*
 * More than the limit: refused with the rest of the body unread, so the
 * connection cannot be kept alive (the rest would be read as the next
 * request); nginx drains it while closing.
 */

static void
ngx_http_gms_es_task_too_large(ngx_http_request_t *r)
{
    r->keepalive = 0;
    r->lingering_close = 1;
    r->read_event_handler = ngx_http_block_reading;

    ngx_http_finalize_request(r,
        ngx_http_gms_es_task_refuse(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                    "Request body too large"));
}


static void
ngx_http_gms_es_task_parse(ngx_http_request_t *r, ngx_http_gms_es_ctx_t *es)
{
    char        buf[512], *msg;
    size_t      size, msg_len;
    ngx_int_t   rc;

    es->body[es->body_len] = '\0';

    /*
     * room for the metadata service's message echoing the task: on the
     * stack for the usual body, which the request's pool need not hold
     */

    size = es->body_len + 256;
    msg = buf;

    if (size > sizeof(buf)) {
        msg = ngx_pnalloc(r->pool, size);
        if (msg == NULL) {
            ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
    }

    if (gms_es_task_request_parse((char *) es->body, es->body_len,
                                  &es->task, msg, size, &msg_len)
        != 0)
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "gms: getEsTaskStatus refused: %*s", msg_len, msg);

        ngx_http_finalize_request(r,
            ngx_http_gms_es_task_refuse_len(r, NGX_HTTP_BAD_REQUEST, msg,
                                            msg_len));
        return;
    }

    rc = ngx_http_gms_es_task_subrequest(r, es);

    if (rc != NGX_OK) {
        ngx_http_finalize_request(r, rc);
    }
}


static ngx_int_t
ngx_http_gms_es_task_subrequest(ngx_http_request_t *r,
    ngx_http_gms_es_ctx_t *es)
{
    u_char                       *p, digits[NGX_INT64_LEN], *d;
    size_t                        node_len;
    int64_t                       n;
    ngx_str_t                     uri;
    ngx_table_elt_t              *h;
    ngx_http_request_t           *sr;
    ngx_http_gms_es_loc_conf_t   *eslcf;
    ngx_http_post_subrequest_t   *ps;

    eslcf = ngx_http_get_module_loc_conf(r, ngx_http_gms_es_task_module);

    /* the node is [A-Za-z0-9_-]+ and the number digits: the path stays */

    node_len = ngx_strlen(es->task.node);

    uri.data = ngx_pnalloc(r->pool, eslcf->uri.len + node_len
                                    + 1 + NGX_INT64_LEN);
    if (uri.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the number is positive: its digits from the last */

    d = digits + NGX_INT64_LEN;
    n = es->task.number;

    do {
        *--d = (u_char) ('0' + n % 10);
        n /= 10;
    } while (n != 0);

    p = ngx_cpymem(uri.data, eslcf->uri.data, eslcf->uri.len);
    p = ngx_cpymem(p, es->task.node, node_len);
    *p++ = ':';
    p = ngx_cpymem(p, d, digits + NGX_INT64_LEN - d);
    uri.len = p - uri.data;

    ps = ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t));
    if (ps == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ps->handler = ngx_http_gms_es_task_done;
    ps->data = es;

    if (ngx_http_subrequest(r, &uri, NULL, &sr, ps,
                            NGX_HTTP_SUBREQUEST_IN_MEMORY
                            |NGX_HTTP_SUBREQUEST_WAITED)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /*
     * Nothing of the client's request goes to the cluster but its Host
     * (for $host): not its Authorization or Cookie, not its body.
     */

    ngx_memzero(&sr->headers_in, sizeof(ngx_http_headers_in_t));

    if (ngx_list_init(&sr->headers_in.headers, r->pool, 1,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (r->headers_in.host) {
        h = ngx_list_push(&sr->headers_in.headers);
        if (h == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        *h = *r->headers_in.host;
        sr->headers_in.host = h;
    }

    sr->headers_in.server = r->headers_in.server;
    sr->headers_in.content_length_n = -1;
    sr->headers_in.keep_alive_n = -1;
    sr->request_body = NULL;

    es->subrequest = sr;

    if (ngx_http_gms_auth_anonymous(r, sr) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->write_event_handler = ngx_http_gms_es_task_respond;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "gms: getEsTaskStatus subrequest \"%V\"", &uri);

    return NGX_OK;
}


static ngx_int_t
ngx_http_gms_es_task_done(ngx_http_request_t *r, void *data, ngx_int_t rc)
{
    ngx_http_gms_es_ctx_t *es = data;

    es->done = 1;
    es->rc = rc;
    es->status = r->headers_out.status;

    /*
     * A status the cluster did not send is nginx's own: the cluster could
     * not be reached, timed out or sent a broken header (502, 504).
     */

    if (r->upstream && r->upstream->headers_in.status_n != es->status) {
        es->unreachable = 1;
    }

    /*
     * The answer's end not reached: the connection closed (or timed out)
     * before the Content-Length was met or before a chunked answer's last
     * chunk, "Connection: close" or not.  nginx's upstream then still
     * ends an in-memory subrequest with its status, 200, and what it got;
     * only an answer read to its end is followed by the last buffer
     * (ngx_http_upstream_finalize_request sends NGX_HTTP_LAST only with
     * rc 0, else NGX_HTTP_FLUSH).  An incomplete answer is no answer,
     * whatever JSON it seems to hold.
     */

    if (r->upstream && !es->too_big && !es->ended
        && es->status >= NGX_HTTP_OK
        && es->status < NGX_HTTP_SPECIAL_RESPONSE)
    {
        es->incomplete = 1;
    }

    if (r->out && r->out->buf) {
        es->answer.data = r->out->buf->pos;
        es->answer.len = r->out->buf->last - r->out->buf->pos;

    } else {
        ngx_str_null(&es->answer);
    }

    /*
     * A subrequest ending in NGX_ERROR (an invalid chunked answer, say)
     * would end the client's request too; its failure is recorded above
     * and becomes the failure value instead.
     */

    return (rc == NGX_ERROR) ? NGX_OK : rc;
}


/*
 * The metadata service's search client (ESSystemMetadataDAO.getTaskStatus)
 * gives "no task" for a 404, an unreachable cluster and an answer it
 * cannot parse, which becomes the failure value; any other error status
 * is thrown through, and Rest.li answers 500.
 */

static void
ngx_http_gms_es_task_respond(ngx_http_request_t *r)
{
    char                    reason[128], *value, *body;
    u_char                  msg[128], *last;
    ngx_http_gms_es_ctx_t  *es;

    /* the worker's, for one answer at a time: copied before the next */
    static char             scratch[16384];

    es = ngx_http_get_module_ctx(r, ngx_http_gms_es_task_module);

    if (!es->done) {
        return;
    }

    r->write_event_handler = ngx_http_request_empty_handler;

    value = NULL;

    if (es->redirected) {
        /* logged when it was refused */

    } else if (es->too_big) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "gms: task %s:%L: search cluster answer larger than "
                      "subrequest_output_buffer_size",
                      es->task.node, (int64_t) es->task.number);

    } else if (es->incomplete) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "gms: task %s:%L: search cluster answer incomplete",
                      es->task.node, (int64_t) es->task.number);

    } else if (es->rc != NGX_OK || es->unreachable) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "gms: task %s:%L: search cluster request failed "
                      "(%i, nginx's own %ui)",
                      es->task.node, (int64_t) es->task.number,
                      es->rc, es->status);

    } else if (es->status == NGX_HTTP_NOT_FOUND) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "gms: task %s:%L: search cluster answered 404",
                      es->task.node, (int64_t) es->task.number);

    } else if (es->status < NGX_HTTP_OK
               || es->status >= NGX_HTTP_SPECIAL_RESPONSE)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "gms: task %s:%L: search cluster answered %ui, "
                      "answering 500",
                      es->task.node, (int64_t) es->task.number,
                      es->status);

        last = ngx_snprintf(msg, sizeof(msg),
                            "Search cluster answered HTTP %ui to the task "
                            "status request for %s:%L", es->status,
                            es->task.node, (int64_t) es->task.number);

        ngx_http_gms_es_task_count(r, NGX_HTTP_GMS_ES_CLUSTER_ERROR);

        if (es->openapi) {
            ngx_http_finalize_request(r,
                ngx_http_gms_es_openapi_answer(r, es, NULL, 1));
            return;
        }

        ngx_http_finalize_request(r,
            ngx_http_gms_es_task_error(r, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                       (char *) msg, last - msg));
        return;

    } else {
        /*
         * the bare value for OpenAPI, Rest.li's body of it otherwise: into
         * the worker's scratch buffer when it fits (no malloc() of the
         * worst case, a few kilobytes), copied into the pool to be sent
         */

        if (es->openapi) {
            value = gms_es_task_value((char *) es->answer.data,
                                      es->answer.len, reason,
                                      sizeof(reason));

        } else {
            value = gms_es_task_value_body_buf((char *) es->answer.data,
                                               es->answer.len, scratch,
                                               sizeof(scratch), reason,
                                               sizeof(reason));
        }

        if (value == NULL) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "gms: task %s:%L: %s",
                          es->task.node, (int64_t) es->task.number,
                          reason);
        }
    }

    if (es->openapi) {
        ngx_http_gms_es_task_count(r, value ? NGX_HTTP_GMS_ES_STATUS
                                            : NGX_HTTP_GMS_ES_ERROR);
        ngx_http_finalize_request(r,
            ngx_http_gms_es_openapi_answer(r, es, value, 0));
        return;
    }

    if (value != NULL) {
        ngx_http_gms_es_task_count(r, NGX_HTTP_GMS_ES_STATUS);
        ngx_http_finalize_request(r,
            (value == scratch)
            ? ngx_http_gms_response_json_copy(r, NGX_HTTP_OK, value)
            : ngx_http_gms_response_json(r, NGX_HTTP_OK, value));
        return;
    }

    /* the metadata service's answer when it gets no task status */

    ngx_http_gms_es_task_count(r, NGX_HTTP_GMS_ES_ERROR);

    value = gms_es_task_error_value(&es->task);
    body = (value != NULL) ? gms_restli_value_body(value) : NULL;
    free(value);

    ngx_http_finalize_request(r, ngx_http_gms_response_json(r, NGX_HTTP_OK,
                                                            body));
}


/* a Rest.li error, as the metadata service's resource would raise it */

static ngx_int_t
ngx_http_gms_es_task_refuse(ngx_http_request_t *r, ngx_uint_t status,
    const char *message)
{
    return ngx_http_gms_es_task_refuse_len(r, status, message,
                                           ngx_strlen(message));
}


static ngx_int_t
ngx_http_gms_es_task_refuse_len(ngx_http_request_t *r, ngx_uint_t status,
    const char *message, size_t len)
{
    ngx_http_gms_es_task_count(r, NGX_HTTP_GMS_ES_REFUSED);

    return ngx_http_gms_es_task_error(r, status, message, len);
}


static ngx_int_t
ngx_http_gms_es_task_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *message, size_t len)
{
    static ngx_str_t  yes = ngx_string("true");

    if (ngx_http_gms_response_add_header(r, "X-RestLi-Error-Response", &yes)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_gms_response_error(r, status, message, len);
}


ngx_int_t
ngx_http_gms_es_task_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_gms_es_task_body_filter;

    return NGX_OK;
}


/*
 * The search cluster's answer to our subrequest is held in memory, up to
 * the location's subrequest_output_buffer_size.  nginx's own check of that
 * limit ends the client's request too; here a larger answer is swallowed
 * and becomes the failure value instead.
 */

static ngx_int_t
ngx_http_gms_es_task_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    off_t                      size, limit;
    ngx_chain_t               *cl;
    ngx_http_gms_es_ctx_t     *es;
    ngx_http_core_loc_conf_t  *clcf;

    if (r == r->main) {
        return ngx_http_next_body_filter(r, in);
    }

    es = ngx_http_gms_es_task_of(r);

    if (es == NULL) {
        return ngx_http_next_body_filter(r, in);
    }

    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_in_chain) {
            es->ended = 1;
        }
    }

    if (!es->too_big) {
        clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);
        limit = (off_t) clcf->subrequest_output_buffer_size;

        size = 0;

        for (cl = in; cl; cl = cl->next) {
            size += ngx_buf_size(cl->buf);
        }

        if (r->headers_out.content_length_n <= limit
            && es->received + size <= limit)
        {
            es->received += size;
            return ngx_http_next_body_filter(r, in);
        }

        es->too_big = 1;
    }

    for (cl = in; cl; cl = cl->next) {
        cl->buf->pos = cl->buf->last;
        cl->buf->file_pos = cl->buf->file_last;
    }

    return NGX_OK;
}


/*
 * The controller builds its session first (an inactive actor: 403, JSON,
 * where the release refuses one), checks the privilege (403, text), then
 * the task (400, text); all answered here, before any subrequest.  A
 * request the edge cannot be sure of (not a GET, an Accept without JSON,
 * no or more than one "task", a guest's) goes on to the location's
 * handler: GMS answers it itself.  ngx_http_gms_es_route_action() counts
 * this path as the edge's, for the access phase: the user's privileges
 * are read, and an unknown signed token or a guest is not let through to
 * GMS here.
 */

static ngx_int_t
ngx_http_gms_es_openapi_precontent(ngx_http_request_t *r,
    ngx_http_gms_loc_conf_t *glcf)
{
    int                     rc;
    char                   *body;
    size_t                  len;
    ngx_uint_t              status;
    ngx_array_t            *privileges;
    ngx_http_gms_ctx_t     *ctx;
    ngx_http_gms_es_ctx_t  *es;
    gms_es_task_ref_t       ref;
    char                    task[GMS_ES_OPENAPI_TASK_MAX];

    if (r->method != NGX_HTTP_GET || !ngx_http_gms_es_openapi_accepts(r)) {
        return NGX_DECLINED;
    }

    if (gms_es_openapi_query((char *) r->args.data, r->args.len, task, &len)
        != 0)
    {
        return NGX_DECLINED;
    }

    ctx = ngx_http_gms_auth_verdict(r);

    if (glcf->enable) {
        if (ctx == NULL || ctx->result != NGX_HTTP_GMS_OK) {
            /*
             * a guest, with privilege=off (elsewhere the access phase
             * refused it): what GMS's guest gets, GMS says
             */
            return NGX_DECLINED;
        }

        /* OperationContext.asSession, before the privilege (PR 12158) */

        if (ngx_http_gms_release_inactive(glcf, ctx)
            == GMS_RELEASE_INACTIVE_ACTOR)
        {
            ngx_http_gms_auth_forbid(ctx);
            ngx_http_gms_es_task_count(r, NGX_HTTP_GMS_ES_REFUSED);

            status = NGX_HTTP_FORBIDDEN;
            body = strdup(GMS_ES_OPENAPI_INACTIVE);
            goto answered;
        }

        privileges = ngx_http_gms_es_route_openapi_privileges(r);

        if (!ngx_http_gms_privilege_has_any(ctx, privileges)) {
            if (ngx_http_gms_response_add_header(r, "WWW-Authenticate",
                                                 &glcf->challenge_scope)
                != NGX_OK)
            {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            ngx_http_gms_auth_forbid(ctx);
            ngx_http_gms_es_task_count(r, NGX_HTTP_GMS_ES_REFUSED);

            /* 403 in every release; gms_token_forbidden_status, if set */
            status = glcf->forbidden_conf ? glcf->forbidden_conf
                                          : NGX_HTTP_FORBIDDEN;

            body = gms_es_openapi_forbidden((char *) ctx->actor.data,
                                            ctx->actor.len);
            goto answered;
        }
    }

    rc = gms_es_openapi_task(task, len, &ref);

    if (rc > 0) {
        return NGX_DECLINED;
    }

    if (rc < 0) {
        ngx_http_gms_es_task_count(r, NGX_HTTP_GMS_ES_REFUSED);
        status = NGX_HTTP_BAD_REQUEST;
        body = gms_es_openapi_bad_task(task, len);
        goto answered;
    }

    es = ngx_http_gms_es_task_ctx(r);
    if (es == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    es->openapi = 1;
    es->task = ref;

    r->content_handler = ngx_http_gms_es_openapi_handler;

    return NGX_DECLINED;

answered:

    ngx_http_finalize_request(r, ngx_http_gms_response_json(r, status, body));

    return NGX_DONE;
}


/* every Accept header the request has must be one the edge reads alike */

static ngx_int_t
ngx_http_gms_es_openapi_accepts(ngx_http_request_t *r)
{
    int               rc;
    ngx_uint_t        i, json, seen;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    json = 0;
    seen = 0;
    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len != sizeof("Accept") - 1
            || ngx_strncasecmp(h[i].key.data, (u_char *) "Accept",
                               sizeof("Accept") - 1) != 0)
        {
            continue;
        }

        seen = 1;
        rc = gms_es_openapi_accept((char *) h[i].value.data, h[i].value.len);

        if (rc < 0) {
            return 0;
        }

        json |= rc;
    }

    return !seen || json;
}


static ngx_int_t
ngx_http_gms_es_openapi_handler(ngx_http_request_t *r)
{
    ngx_int_t               rc;
    ngx_http_gms_es_ctx_t  *es;

    rc = ngx_http_discard_request_body(r);

    if (rc != NGX_OK) {
        return rc;
    }

    es = ngx_http_get_module_ctx(r, ngx_http_gms_es_task_module);

    rc = ngx_http_gms_es_task_subrequest(r, es);

    if (rc != NGX_OK) {
        return rc;
    }

    /* ended by ngx_http_gms_es_task_respond */
    r->main->count++;

    return NGX_DONE;
}


/*
 * The task, bare (the same org.json text as the Rest.li value), 200; no
 * task, 500 with the controller's text; an exception from GMS's search
 * client (the cluster answered another error), 500 with the body of
 * GlobalControllerExceptionHandler from 1.0.0 (before it, GMS's servlet
 * container's error page, not reproduced).
 */

static ngx_int_t
ngx_http_gms_es_openapi_answer(ngx_http_request_t *r,
    ngx_http_gms_es_ctx_t *es, char *value, ngx_uint_t cluster_error)
{
    if (cluster_error) {
        return ngx_http_gms_response_json(r, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                          strdup(GMS_ES_OPENAPI_INTERNAL));
    }

    if (value == NULL) {
        return ngx_http_gms_response_json(r, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                          gms_es_openapi_not_found(&es->task));
    }

    return ngx_http_gms_response_json(r, NGX_HTTP_OK, value);
}

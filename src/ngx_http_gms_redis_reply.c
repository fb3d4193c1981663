
/*
 * What a Redis reply may make hiredis allocate: its reply builders, behind
 * caps.  Every connection's reader builds with these (a subscription's
 * are tighter still: ngx_http_gms_invalidate.c).
 */


#include "ngx_http_gms_redis_reply.h"


/*
 * A lookup's reply is 4 elements, strings of at most a few hundred bytes
 * and up to 256 privileges in an array of their own; a Sentinel's list of
 * replicas is a few arrays of some 40 strings; a master's ROLE lists its
 * replicas as arrays in an array, the deepest nesting any reply needs (an
 * array at depth 2, the root being 0).  Beyond these the connection is
 * dropped: 503, never an allocation the size a peer chose.  The whole
 * reply is capped as well as each part (a peer streaming arrays of 1024
 * arrays of 1024 integers would make the worker allocate some 16 times
 * what it sent); unparsed input is capped by the connection.
 */
#define NGX_HTTP_GMS_REPLY_STRING_MAX    65536
#define NGX_HTTP_GMS_REPLY_ELEMENTS_MAX  1024
#define NGX_HTTP_GMS_REPLY_DEPTH_MAX     2
#define NGX_HTTP_GMS_REPLY_OBJECTS_MAX   4096
#define NGX_HTTP_GMS_REPLY_BYTES_MAX     (1024 * 1024)

/*
 * A cluster's map (ngx_http_gms_cluster.c) nests deeper: CLUSTER SHARDS's
 * nodes are field arrays in an array in a shard's array (depth 3), as
 * CLUSTER SLOTS's node metadata; some 20 objects a node, a few hundred
 * nodes at most.
 */
#define NGX_HTTP_GMS_MAP_DEPTH_MAX       3
#define NGX_HTTP_GMS_MAP_OBJECTS_MAX     32768


static void *ngx_http_gms_reply_string(const redisReadTask *task, char *str,
    size_t len);
static void *ngx_http_gms_reply_array(const redisReadTask *task,
    int elements);
static void *ngx_http_gms_reply_integer(const redisReadTask *task,
    long long value);
static void *ngx_http_gms_reply_nil(const redisReadTask *task);
static ngx_int_t ngx_http_gms_reply_count(const redisReadTask *task,
    size_t len);


redisReplyObjectFunctions  *ngx_http_gms_reply_hiredis;
redisReplyObjectFunctions   ngx_http_gms_reply_capped;
redisReplyObjectFunctions   ngx_http_gms_reply_map;


/* made once, from the builders of the first reader hiredis creates */

void
ngx_http_gms_reply_init(redisReplyObjectFunctions *hiredis)
{
    if (ngx_http_gms_reply_hiredis != NULL) {
        return;
    }

    ngx_http_gms_reply_hiredis = hiredis;
    ngx_http_gms_reply_capped = *hiredis;
    ngx_http_gms_reply_capped.createString = ngx_http_gms_reply_string;
    ngx_http_gms_reply_capped.createArray = ngx_http_gms_reply_array;
    ngx_http_gms_reply_capped.createInteger = ngx_http_gms_reply_integer;
    ngx_http_gms_reply_capped.createNil = ngx_http_gms_reply_nil;

    /* the same builders: they tell the two apart by the connection's */
    ngx_http_gms_reply_map = ngx_http_gms_reply_capped;
}


/*
 * Over a cap, the builder says why and returns NULL: the reader then
 * fails, and the connection is dropped as a protocol error.
 */

static void *
ngx_http_gms_reply_string(const redisReadTask *task, char *str, size_t len)
{
    if (len > NGX_HTTP_GMS_REPLY_STRING_MAX) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis reply over the module's limits: "
                      "a string of %uz bytes", len);
        return NULL;
    }

    if (ngx_http_gms_reply_count(task, len) != NGX_OK) {
        return NULL;
    }

    return ngx_http_gms_reply_hiredis->createString(task, str, len);
}


static void *
ngx_http_gms_reply_array(const redisReadTask *task, int elements)
{
    ngx_uint_t             depth, max;
    const redisReadTask   *t;
    ngx_http_gms_rconn_t  *rc;

    if (elements < 0 || elements > NGX_HTTP_GMS_REPLY_ELEMENTS_MAX) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis reply over the module's limits: "
                      "an array of %d elements", elements);
        return NULL;
    }

    depth = 0;

    for (t = task->parent; t; t = t->parent) {
        depth++;
    }

    rc = task->privdata;
    max = (rc->builders == &ngx_http_gms_reply_map)
          ? NGX_HTTP_GMS_MAP_DEPTH_MAX : NGX_HTTP_GMS_REPLY_DEPTH_MAX;

    if (depth > max) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis reply over the module's limits: "
                      "an array nested %ui deep", depth);
        return NULL;
    }

    if (ngx_http_gms_reply_count(task, 0) != NGX_OK) {
        return NULL;
    }

    return ngx_http_gms_reply_hiredis->createArray(task, elements);
}


static void *
ngx_http_gms_reply_integer(const redisReadTask *task, long long value)
{
    if (ngx_http_gms_reply_count(task, 0) != NGX_OK) {
        return NULL;
    }

    return ngx_http_gms_reply_hiredis->createInteger(task, value);
}


static void *
ngx_http_gms_reply_nil(const redisReadTask *task)
{
    if (ngx_http_gms_reply_count(task, 0) != NGX_OK) {
        return NULL;
    }

    return ngx_http_gms_reply_hiredis->createNil(task);
}


/*
 * The objects and string bytes of the reply being built: a root object
 * (built first) starts the count of a new reply.
 */

static ngx_int_t
ngx_http_gms_reply_count(const redisReadTask *task, size_t len)
{
    ngx_http_gms_rconn_t *rc = task->privdata;

    ngx_uint_t  max;

    max = (rc->builders == &ngx_http_gms_reply_map)
          ? NGX_HTTP_GMS_MAP_OBJECTS_MAX : NGX_HTTP_GMS_REPLY_OBJECTS_MAX;

    if (task->parent == NULL) {
        rc->reply_objects = 0;
        rc->reply_bytes = 0;
    }

    rc->reply_objects++;
    rc->reply_bytes += len;

    if (rc->reply_objects > max
        || rc->reply_bytes > NGX_HTTP_GMS_REPLY_BYTES_MAX)
    {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis reply over the module's limits: "
                      "more than %ui objects or %d bytes of strings",
                      max, NGX_HTTP_GMS_REPLY_BYTES_MAX);
        return NGX_ERROR;
    }

    return NGX_OK;
}

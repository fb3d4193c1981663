
/*
 * What a Redis reply may make hiredis allocate: its reply builders, behind
 * caps.  Every connection's reader builds with these (a subscription's
 * are tighter still: ngx_http_gms_invalidate.c).
 *
 * The objects come from the connection's arena, not from malloc(): a
 * lookup's reply is some ten objects (the array, its strings, the
 * privileges' array and strings), each allocated and freed by hiredis's
 * own builders, which cost a lookup more than the rest of its parsing.
 * A reply lives until its handler returns (ngx_http_gms_rconn_dispatch()
 * then calls ngx_http_gms_redis_reply_done(), where hiredis's freeReplyObject()
 * was called), and hiredis builds one reply at a time, so the arena is
 * rewound there: no handler keeps a pointer into a reply past its return.
 * The reader's own freeObject (on an error, on redisReaderFree()) frees
 * nothing: the next rewind does.
 */


#include "ngx_http_gms_redis_reply.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif


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

/*
 * The arena's first block holds a lookup's reply with some 40 privileges;
 * a larger reply takes more blocks, freed at the rewind, unless all of
 * them come to at most ARENA_KEEP: then one block that size replaces
 * them, so that a worker whose replies are larger does not allocate for
 * each.
 */
#define NGX_HTTP_GMS_ARENA_FIRST         4096
#define NGX_HTTP_GMS_ARENA_MORE          16384
#define NGX_HTTP_GMS_ARENA_KEEP          65536


struct ngx_http_gms_arena_block_s {
    ngx_http_gms_arena_block_t    *next;
    u_char                        *last;
    u_char                        *end;
};

#define NGX_HTTP_GMS_ARENA_HEADER                                            \
    ngx_align(sizeof(ngx_http_gms_arena_block_t), NGX_ALIGNMENT)

/*
 * Under AddressSanitizer (make test-asan) what the arena has not handed
 * out, or has taken back at a rewind, is poisoned: a handler that kept a
 * pointer into a reply past its return is reported, as it was when
 * hiredis freed the reply.
 */
#if defined(__SANITIZE_ADDRESS__)
#define ngx_http_gms_arena_poison(p, n)    ASAN_POISON_MEMORY_REGION(p, n)
#define ngx_http_gms_arena_unpoison(p, n)  ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define ngx_http_gms_arena_poison(p, n)
#define ngx_http_gms_arena_unpoison(p, n)
#endif


static void *ngx_http_gms_reply_string(const redisReadTask *task, char *str,
    size_t len);
static void *ngx_http_gms_reply_array(const redisReadTask *task,
    gms_hiredis_count_t elements);
static void *ngx_http_gms_reply_integer(const redisReadTask *task,
    long long value);
static void *ngx_http_gms_reply_nil(const redisReadTask *task);
static ngx_int_t ngx_http_gms_reply_count(const redisReadTask *task,
    size_t len);
static redisReply *ngx_http_gms_reply_object(const redisReadTask *task,
    int type, size_t size);
static void *ngx_http_gms_reply_alloc(ngx_http_gms_rconn_t *rc,
    size_t size);
static void *ngx_http_gms_arena_string(const redisReadTask *task, char *str,
    size_t len);
static void *ngx_http_gms_arena_array(const redisReadTask *task,
    gms_hiredis_count_t elements);
static void *ngx_http_gms_arena_integer(const redisReadTask *task,
    long long value);
static void *ngx_http_gms_arena_nil(const redisReadTask *task);
static void ngx_http_gms_arena_free(void *reply);


/* hiredis's builders, with the objects from the connection's arena */
static redisReplyObjectFunctions  ngx_http_gms_reply_arena = {
    .createString = ngx_http_gms_arena_string,
    .createArray = ngx_http_gms_arena_array,
    .createInteger = ngx_http_gms_arena_integer,
    GMS_HIREDIS_RESP3_BUILDERS(ngx_http_gms_redis_reply_double,
                               ngx_http_gms_redis_reply_bool)
    .createNil = ngx_http_gms_arena_nil,
    .freeObject = ngx_http_gms_arena_free
};

redisReplyObjectFunctions  *ngx_http_gms_reply_hiredis =
    &ngx_http_gms_reply_arena;

/* the capped builders, over the arena's */
#define NGX_HTTP_GMS_REPLY_CAPPED                                            \
    {                                                                        \
        .createString = ngx_http_gms_reply_string,                           \
        .createArray = ngx_http_gms_reply_array,                             \
        .createInteger = ngx_http_gms_reply_integer,                         \
        GMS_HIREDIS_RESP3_BUILDERS(ngx_http_gms_redis_reply_double,          \
                                   ngx_http_gms_redis_reply_bool)            \
        .createNil = ngx_http_gms_reply_nil,                                 \
        .freeObject = ngx_http_gms_arena_free                                \
    }

redisReplyObjectFunctions  ngx_http_gms_reply_capped =
    NGX_HTTP_GMS_REPLY_CAPPED;

/* the same builders: they tell the two apart by the connection's */
redisReplyObjectFunctions  ngx_http_gms_reply_map = NGX_HTTP_GMS_REPLY_CAPPED;


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
ngx_http_gms_reply_array(const redisReadTask *task,
    gms_hiredis_count_t elements)
{
    ngx_uint_t             depth, max;
    const redisReadTask   *t;
    ngx_http_gms_rconn_t  *rc;

    /* hiredis 0.14's int: a negative count is over any cap, as size_t */
    if ((size_t) elements > NGX_HTTP_GMS_REPLY_ELEMENTS_MAX) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "gms: redis reply over the module's limits: "
                      "an array of %L elements", (int64_t) elements);
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


#if (GMS_HIREDIS_RESP3)

/*
 * RESP3's double and boolean (hiredis 1.x) come only after HELLO 3, which
 * nothing here sends: a server that sends them anyway is refused
 */

void *
ngx_http_gms_redis_reply_double(const redisReadTask *task, double value,
    char *str, size_t len)
{
    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis reply of RESP3 (a double), never asked for");
    return NULL;
}


void *
ngx_http_gms_redis_reply_bool(const redisReadTask *task, int value)
{
    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "gms: redis reply of RESP3 (a boolean), never asked for");
    return NULL;
}

#endif


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


/*
 * hiredis's builders (createStringObject() and the others in hiredis.c),
 * but from the arena: the same objects, linked into their parent array.
 */

static void *
ngx_http_gms_arena_string(const redisReadTask *task, char *str, size_t len)
{
    char        *buf;
    redisReply  *r;

    r = ngx_http_gms_reply_object(task, task->type,
                                  sizeof(redisReply) + len + 1);
    if (r == NULL) {
        return NULL;
    }

    buf = (char *) r + sizeof(redisReply);
    ngx_memcpy(buf, str, len);
    buf[len] = '\0';

    r->str = buf;
    r->len = len;

    return r;
}


static void *
ngx_http_gms_arena_array(const redisReadTask *task,
    gms_hiredis_count_t elements)
{
    size_t       size;
    redisReply  *r;

    size = sizeof(redisReply) + (size_t) elements * sizeof(redisReply *);

    r = ngx_http_gms_reply_object(task, REDIS_REPLY_ARRAY, size);
    if (r == NULL) {
        return NULL;
    }

    if (elements > 0) {
        r->element = (redisReply **) ((u_char *) r + sizeof(redisReply));
        ngx_memzero(r->element, (size_t) elements * sizeof(redisReply *));
    }

    r->elements = elements;

    return r;
}


static void *
ngx_http_gms_arena_integer(const redisReadTask *task, long long value)
{
    redisReply  *r;

    r = ngx_http_gms_reply_object(task, REDIS_REPLY_INTEGER,
                                  sizeof(redisReply));
    if (r == NULL) {
        return NULL;
    }

    r->integer = value;

    return r;
}


static void *
ngx_http_gms_arena_nil(const redisReadTask *task)
{
    /* the task's type is the bulk string's or array's that was nil */
    return ngx_http_gms_reply_object(task, REDIS_REPLY_NIL,
                                     sizeof(redisReply));
}


/* the reader's: the objects go with the arena's next rewind */

static void
ngx_http_gms_arena_free(void *reply)
{
}


/* an object, size bytes with what follows it, linked into its parent */

static redisReply *
ngx_http_gms_reply_object(const redisReadTask *task, int type, size_t size)
{
    redisReply  *r, *parent;

    r = ngx_http_gms_reply_alloc(task->privdata, size);
    if (r == NULL) {
        return NULL;
    }

    ngx_memzero(r, sizeof(redisReply));
    r->type = type;

    if (task->parent) {
        parent = task->parent->obj;
        parent->element[task->idx] = r;
    }

    return r;
}


static void *
ngx_http_gms_reply_alloc(ngx_http_gms_rconn_t *rc, size_t size)
{
    u_char                      *p;
    size_t                       len;
    ngx_http_gms_arena_block_t  *b;

    size = ngx_align(size, NGX_ALIGNMENT);
    b = rc->arena_block;

    if (b && (size_t) (b->end - b->last) >= size) {
        p = b->last;
        b->last += size;
        ngx_http_gms_arena_unpoison(p, size);
        return p;
    }

    /* a block more, after the one in use (the last) */

    len = b ? NGX_HTTP_GMS_ARENA_MORE : NGX_HTTP_GMS_ARENA_FIRST;
    len = ngx_max(len, NGX_HTTP_GMS_ARENA_HEADER + size);

    p = ngx_alloc(len, ngx_cycle->log);
    if (p == NULL) {
        return NULL;
    }

    if (b) {
        b->next = (ngx_http_gms_arena_block_t *) p;

    } else {
        rc->arena = (ngx_http_gms_arena_block_t *) p;
    }

    b = (ngx_http_gms_arena_block_t *) p;
    b->next = NULL;
    b->end = p + len;
    b->last = p + NGX_HTTP_GMS_ARENA_HEADER + size;

    ngx_http_gms_arena_poison(b->last, b->end - b->last);

    rc->arena_block = b;

    return p + NGX_HTTP_GMS_ARENA_HEADER;
}


/*
 * A reply handled: the arena is rewound for the next.  Blocks beyond the
 * first are freed, or, when they all come to at most ARENA_KEEP, kept as
 * one of that size.
 */

void
ngx_http_gms_redis_reply_done(ngx_http_gms_rconn_t *rc)
{
    size_t                       total;
    ngx_http_gms_arena_block_t  *b, *next;

    b = rc->arena;

    if (b == NULL) {
        return;
    }

    if (b->next == NULL) {
        b->last = (u_char *) b + NGX_HTTP_GMS_ARENA_HEADER;
        ngx_http_gms_arena_poison(b->last, b->end - b->last);
        rc->arena_block = b;
        return;
    }

    total = 0;

    for (b = rc->arena; b; b = next) {
        next = b->next;
        total += b->end - (u_char *) b;
        ngx_free(b);
    }

    rc->arena = NULL;
    rc->arena_block = NULL;

    if (total <= NGX_HTTP_GMS_ARENA_KEEP) {
        b = ngx_alloc(total, ngx_cycle->log);

        if (b) {
            b->next = NULL;
            b->last = (u_char *) b + NGX_HTTP_GMS_ARENA_HEADER;
            b->end = (u_char *) b + total;
            ngx_http_gms_arena_poison(b->last, b->end - b->last);
            rc->arena = b;
            rc->arena_block = b;
        }
    }
}

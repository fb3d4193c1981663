
/*
 * The token cache.  Entries are keyed by token id and hold the lookup's
 * outcome: the actor and privileges of a valid token, or the fact that a
 * token is unknown or expired (negative entries).  Positive and negative
 * entries sit on separate LRU queues, and negative ones have a budget of
 * their own (a quarter of the zone): a flood of random tokens recycles
 * negative entries and never evicts a real user's.  A positive entry is
 * fresh for ttl, never past the token's expiresAt; with stale= set it may
 * stand in for a failing Redis for that long after its ttl.
 *
 * With signing keys, two more kinds of negative entries: a signed token
 * that Redis does not have, to be passed to GMS (NGX_HTTP_GMS_PASSED),
 * and a token id gms-token published lately (a "changed" node, no entry:
 * a lookup is made all the same), so that a token removed from Redis is
 * refused here, not passed to a GMS that may still accept it.
 */


#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_metrics.h"

#include <openssl/sha.h>


typedef struct {
    u_char                     color;
    u_char                     result;
    u_char                     type;
    u_char                     no_privileges;
    u_char                     inactive;       /* gms_lookup_inactive_e */
    uint32_t                   source;         /* the cache's, when put */
    uint32_t                   actor_len;
    uint32_t                   privileges_len;
    ngx_queue_t                queue;
    int64_t                    fresh_until;    /* ms since the epoch */
    int64_t                    usable_until;   /* with the stale window */
    u_char                     id[GMS_TOKEN_ID_LEN];
    u_char                     data[1];        /* actor, privileges */
} ngx_http_gms_cache_node_t;


struct ngx_http_gms_cache_sh_s {
    ngx_rbtree_t               rbtree;
    ngx_rbtree_node_t          sentinel;
    ngx_queue_t                positive;
    ngx_queue_t                negative;
    ngx_uint_t                 npositive;
    ngx_uint_t                 nnegative;
    /* bumped by every invalidation: lookups begun before do not cache */
    ngx_uint_t                 generation;
};


/* a TIME parameter of gms_token_cache and its field */
typedef struct {
    ngx_str_t                  name;
    size_t                     offset;
} ngx_http_gms_time_t;


/*
 * A node's result beyond the lookups' own: a token id that gms-token
 * published lately.  It answers no request; it makes a later "unknown"
 * from Redis a removal, not a token GMS has yet to be asked about.
 */
#define NGX_HTTP_GMS_CACHE_CHANGED  NGX_HTTP_GMS_NRESULTS


#define ngx_http_gms_cache_node(node)                                        \
    ((ngx_http_gms_cache_node_t *) &(node)->color)

#define ngx_http_gms_cache_node_size(len)                                    \
    (offsetof(ngx_rbtree_node_t, color)                                       \
     + offsetof(ngx_http_gms_cache_node_t, data) + (len))


/* the largest entry the lookup accepts: an actor, its privileges, commas */
static u_char  ngx_http_gms_cache_scratch[GMS_ACTOR_MAX
                                          + GMS_PRIVILEGES_MAX
                                            * (GMS_PRIVILEGE_MAX + 1)];


static ngx_rbtree_node_t *ngx_http_gms_cache_find(ngx_http_gms_cache_t *cache,
    u_char *id, uint32_t hash);
static void ngx_http_gms_cache_remove(ngx_http_gms_cache_t *cache,
    ngx_rbtree_node_t *node);
static ngx_int_t ngx_http_gms_cache_evict(ngx_http_gms_cache_t *cache,
    ngx_queue_t *queue);
static ngx_rbtree_node_t *ngx_http_gms_cache_alloc_locked(
    ngx_http_gms_cache_t *cache, size_t size, ngx_uint_t positive);
static void ngx_http_gms_cache_changed_locked(ngx_http_gms_cache_t *cache,
    u_char *id, uint32_t hash);
static void ngx_http_gms_cache_rbtree_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static ngx_int_t ngx_http_gms_cache_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);


int64_t
ngx_http_gms_cache_now_ms(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (int64_t) tp->sec * 1000 + tp->msec;
}


ngx_http_gms_cache_rc_e
ngx_http_gms_cache_get(ngx_http_gms_cache_t *cache, u_char *id,
    ngx_pool_t *pool, ngx_http_gms_cache_entry_t *entry)
{
    u_char                     *p;
    size_t                      len, actor_len;
    int64_t                     now;
    uint32_t                    hash;
    ngx_uint_t                  result, type, no_privileges, inactive;
    ngx_rbtree_node_t          *node;
    ngx_http_gms_cache_rc_e     rc;
    ngx_http_gms_cache_node_t  *cn;

    if (cache == NULL) {
        return NGX_HTTP_GMS_CACHE_MISS;
    }

    len = 0;
    actor_len = 0;
    result = 0;
    type = 0;
    no_privileges = 0;
    inactive = 0;

    now = ngx_http_gms_cache_now_ms();
    hash = ngx_http_gms_id_hash(id);

    ngx_shmtx_lock(&cache->shpool->mutex);

    node = ngx_http_gms_cache_find(cache, id, hash);

    if (node == NULL) {
        rc = NGX_HTTP_GMS_CACHE_MISS;
        goto done;
    }

    cn = ngx_http_gms_cache_node(node);

    /*
     * An entry read from another Redis, key prefix or salt (a reload
     * changed them; old workers may still be writing) is no entry.
     */

    if (now >= cn->usable_until || cn->source != cache->source) {
        ngx_http_gms_cache_remove(cache, node);
        rc = NGX_HTTP_GMS_CACHE_MISS;
        goto done;
    }

    if (cn->result == NGX_HTTP_GMS_CACHE_CHANGED) {
        /* kept for the lookup's answer: ngx_http_gms_cache_changed() */
        rc = NGX_HTTP_GMS_CACHE_MISS;
        goto done;
    }

    len = cn->actor_len + cn->privileges_len;

    if (len > sizeof(ngx_http_gms_cache_scratch)) {
        /* written by a module of other limits before a reload */
        ngx_http_gms_cache_remove(cache, node);
        rc = NGX_HTTP_GMS_CACHE_MISS;
        goto done;
    }

    rc = (now < cn->fresh_until) ? NGX_HTTP_GMS_CACHE_FRESH
                                 : NGX_HTTP_GMS_CACHE_STALE;

    /* copied out under the mutex; the pool is not touched while held */

    result = cn->result;
    type = cn->type;
    no_privileges = cn->no_privileges;
    inactive = cn->inactive;
    actor_len = cn->actor_len;
    ngx_memcpy(ngx_http_gms_cache_scratch, cn->data, len);

    ngx_queue_remove(&cn->queue);
    ngx_queue_insert_head(cn->result == NGX_HTTP_GMS_OK
                          ? &cache->sh->positive : &cache->sh->negative,
                          &cn->queue);

done:

    ngx_shmtx_unlock(&cache->shpool->mutex);

    if (rc == NGX_HTTP_GMS_CACHE_MISS) {
        return rc;
    }

    p = ngx_pnalloc(pool, len ? len : 1);
    if (p == NULL) {
        return NGX_HTTP_GMS_CACHE_MISS;
    }

    ngx_memcpy(p, ngx_http_gms_cache_scratch, len);

    entry->result = result;
    entry->type = (type < GMS_TOKEN_NTYPES) ? type : GMS_TOKEN_NONE;
    entry->no_privileges = no_privileges;
    entry->inactive = inactive;
    entry->actor.data = p;
    entry->actor.len = actor_len;
    entry->privileges.data = p + actor_len;
    entry->privileges.len = len - actor_len;

    return rc;
}


void
ngx_http_gms_cache_put(ngx_http_gms_cache_t *cache, u_char *id,
    ngx_http_gms_cache_entry_t *entry, int64_t expires_at,
    ngx_uint_t generation)
{
    size_t                      len, size;
    int64_t                     now;
    uint32_t                    hash;
    ngx_uint_t                  positive;
    ngx_queue_t                *queue;
    ngx_rbtree_node_t          *node;
    ngx_http_gms_cache_node_t  *cn;

    if (cache == NULL) {
        return;
    }

    now = ngx_http_gms_cache_now_ms();
    positive = (entry->result == NGX_HTTP_GMS_OK);
    len = entry->actor.len + entry->privileges.len;
    size = ngx_http_gms_cache_node_size(len);
    hash = ngx_http_gms_id_hash(id);
    queue = positive ? &cache->sh->positive : &cache->sh->negative;

    /*
     * An entry that would take more than 1/16 of the zone is not cached:
     * making room for it would evict many others, and a zone that cannot
     * hold it would raise an alert on every lookup.
     */

    if (len > sizeof(ngx_http_gms_cache_scratch)
        || size > (size_t) (cache->shpool->end - (u_char *) cache->shpool) / 16)
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: token id \"%*s\" not cached: entry too large",
                       (size_t) GMS_TOKEN_ID_LEN, id);
        return;
    }

    ngx_shmtx_lock(&cache->shpool->mutex);

    /*
     * An invalidation arrived while this answer was on its way from Redis:
     * the answer may be older than the change, so it is used once (by the
     * requests that asked) and not kept.
     */

    if (generation != cache->sh->generation) {
        ngx_shmtx_unlock(&cache->shpool->mutex);

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "gms: token id \"%*s\" not cached: invalidated "
                       "meanwhile", (size_t) GMS_TOKEN_ID_LEN, id);
        return;
    }

    node = ngx_http_gms_cache_find(cache, id, hash);

    if (node) {
        ngx_http_gms_cache_remove(cache, node);
    }

    node = ngx_http_gms_cache_alloc_locked(cache, size, positive);

    if (node == NULL) {
        ngx_shmtx_unlock(&cache->shpool->mutex);

        if (positive) {
            ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, 0,
                          "gms: could not cache token id \"%*s\" "
                          "in zone \"%V\"", (size_t) GMS_TOKEN_ID_LEN, id,
                          &cache->name);
        }

        return;
    }

    cn = ngx_http_gms_cache_node(node);

    node->key = hash;
    cn->source = cache->source;
    cn->result = (u_char) entry->result;
    cn->type = (u_char) entry->type;
    cn->no_privileges = (u_char) entry->no_privileges;
    cn->inactive = (u_char) entry->inactive;
    cn->actor_len = entry->actor.len;
    cn->privileges_len = entry->privileges.len;
    ngx_memcpy(cn->id, id, GMS_TOKEN_ID_LEN);

    /* a negative entry has neither: no copy from a NULL pointer */

    if (entry->actor.len) {
        ngx_memcpy(cn->data, entry->actor.data, entry->actor.len);
    }

    if (entry->privileges.len) {
        ngx_memcpy(cn->data + entry->actor.len, entry->privileges.data,
                   entry->privileges.len);
    }

    if (positive) {
        cn->fresh_until = now + cache->ttl;
        cn->usable_until = cn->fresh_until + cache->stale;

        if (expires_at != 0) {
            /* an entry never outlives its token */
            cn->fresh_until = ngx_min(cn->fresh_until, expires_at);
            cn->usable_until = ngx_min(cn->usable_until, expires_at);
        }

        cache->sh->npositive++;

    } else {
        /* expires_at: the end its maker chose instead of negative_ttl */
        cn->fresh_until = expires_at ? expires_at
                                     : now + (int64_t) cache->negative_ttl;
        cn->usable_until = cn->fresh_until;
        cache->sh->nnegative++;
    }

    ngx_rbtree_insert(&cache->sh->rbtree, node);
    ngx_queue_insert_head(queue, &cn->queue);

    ngx_shmtx_unlock(&cache->shpool->mutex);
}


/*
 * A node of size bytes, room made for it under the lock: a negative one
 * within the negative budget; when the zone is full, negative entries go
 * first, then, for a positive entry only, the least recently used
 * positive ones.  NULL: no room.
 */

static ngx_rbtree_node_t *
ngx_http_gms_cache_alloc_locked(ngx_http_gms_cache_t *cache, size_t size,
    ngx_uint_t positive)
{
    ngx_uint_t          tries;
    ngx_rbtree_node_t  *node;

    if (!positive) {
        while (cache->sh->nnegative >= cache->max_negative
               && ngx_http_gms_cache_evict(cache, &cache->sh->negative)
                  == NGX_OK)
        {
            /* void */
        }
    }

    node = ngx_slab_alloc_locked(cache->shpool, size);

    for (tries = 0; node == NULL && tries < 64; tries++) {

        if (ngx_http_gms_cache_evict(cache, &cache->sh->negative) != NGX_OK
            && (!positive
                || ngx_http_gms_cache_evict(cache, &cache->sh->positive)
                   != NGX_OK))
        {
            break;
        }

        node = ngx_slab_alloc_locked(cache->shpool, size);
    }

    return node;
}


/*
 * The end of the "changed" node of a token id (gms-token published it
 * lately), or 0: none.
 */

int64_t
ngx_http_gms_cache_changed(ngx_http_gms_cache_t *cache, u_char *id)
{
    int64_t                     until;
    ngx_rbtree_node_t          *node;
    ngx_http_gms_cache_node_t  *cn;

    if (cache == NULL || cache->sh == NULL || cache->changed == 0) {
        return 0;
    }

    until = 0;

    ngx_shmtx_lock(&cache->shpool->mutex);

    node = ngx_http_gms_cache_find(cache, id, ngx_http_gms_id_hash(id));

    if (node) {
        cn = ngx_http_gms_cache_node(node);

        if (cn->result == NGX_HTTP_GMS_CACHE_CHANGED
            && cn->source == cache->source
            && cn->usable_until > ngx_http_gms_cache_now_ms())
        {
            until = cn->usable_until;
        }
    }

    ngx_shmtx_unlock(&cache->shpool->mutex);

    return until;
}


/*
 * A token id published: whatever its entry was, a "changed" node takes
 * its place for cache->changed (each worker receives each message: the
 * last one's stands).  No room for it: only the entry is gone, as before.
 */

static void
ngx_http_gms_cache_changed_locked(ngx_http_gms_cache_t *cache, u_char *id,
    uint32_t hash)
{
    ngx_rbtree_node_t          *node;
    ngx_http_gms_cache_node_t  *cn;

    node = ngx_http_gms_cache_alloc_locked(cache,
                                           ngx_http_gms_cache_node_size(0),
                                           0);
    if (node == NULL) {
        return;
    }

    cn = ngx_http_gms_cache_node(node);

    node->key = hash;
    cn->source = cache->source;
    cn->result = NGX_HTTP_GMS_CACHE_CHANGED;
    cn->type = GMS_TOKEN_NONE;
    cn->no_privileges = 0;
    cn->inactive = 0;
    cn->actor_len = 0;
    cn->privileges_len = 0;
    ngx_memcpy(cn->id, id, GMS_TOKEN_ID_LEN);

    cn->fresh_until = ngx_http_gms_cache_now_ms() + (int64_t) cache->changed;
    cn->usable_until = cn->fresh_until;

    cache->sh->nnegative++;

    ngx_rbtree_insert(&cache->sh->rbtree, node);
    ngx_queue_insert_head(&cache->sh->negative, &cn->queue);
}


void
ngx_http_gms_cache_sizes(ngx_http_gms_cache_t *cache, ngx_uint_t *positive,
    ngx_uint_t *negative)
{
    if (cache == NULL || cache->sh == NULL) {
        *positive = 0;
        *negative = 0;
        return;
    }

    /* a gauge: a racy read is good enough */
    *positive = cache->sh->npositive;
    *negative = cache->sh->nnegative;
}


ngx_uint_t
ngx_http_gms_cache_generation(ngx_http_gms_cache_t *cache)
{
    if (cache == NULL || cache->sh == NULL) {
        return 0;
    }

    /* read without the mutex: a torn read only costs one entry not kept */
    return *(volatile ngx_uint_t *) &cache->sh->generation;
}


/*
 * What gms-token publishes on <prefix>invalidate: a token id drops that
 * token's entry (positive or negative; with signing keys, a "changed"
 * node takes its place), a user's URN every entry of the user (its
 * privileges changed), "*" everything.  Any other message drops
 * everything too: a stale entry is the one thing it must not leave.
 * Dropping by user walks the entries under the mutex: privilege changes
 * are rare, and a walk of the largest zones takes milliseconds.
 * Returns the number of entries dropped.
 */

ngx_uint_t
ngx_http_gms_cache_drop(ngx_http_gms_cache_t *cache, u_char *what,
    size_t len)
{
    uint32_t                    hash;
    ngx_uint_t                  n, all, i;
    ngx_queue_t                *q, *next, *queues[2];
    ngx_rbtree_node_t          *node;
    ngx_http_gms_cache_node_t  *cn;

    if (cache == NULL || cache->sh == NULL) {
        return 0;
    }

    n = 0;

    ngx_shmtx_lock(&cache->shpool->mutex);

    cache->sh->generation++;

    if (len == GMS_TOKEN_ID_LEN && gms_token_id_valid((char *) what, len)) {
        hash = ngx_http_gms_id_hash(what);
        node = ngx_http_gms_cache_find(cache, what, hash);

        if (node) {
            n = (ngx_http_gms_cache_node(node)->result
                 != NGX_HTTP_GMS_CACHE_CHANGED);
            ngx_http_gms_cache_remove(cache, node);
        }

        if (cache->changed) {
            ngx_http_gms_cache_changed_locked(cache, what, hash);
        }

        ngx_shmtx_unlock(&cache->shpool->mutex);

        return n;
    }

    all = !gms_token_actor_valid((char *) what, len);

    if (all && !(len == 1 && what[0] == '*')) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "gms: invalidation \"%*s\" is neither a token id nor "
                      "a user: dropping every cached token",
                      ngx_min(len, 64), what);
    }

    queues[0] = &cache->sh->positive;
    queues[1] = &cache->sh->negative;

    for (i = 0; i < (all ? 2 : 1); i++) {

        for (q = ngx_queue_head(queues[i]);
             q != ngx_queue_sentinel(queues[i]);
             q = next)
        {
            next = ngx_queue_next(q);
            cn = ngx_queue_data(q, ngx_http_gms_cache_node_t, queue);

            if (!all
                && (cn->actor_len != len
                    || ngx_memcmp(cn->data, what, len) != 0))
            {
                continue;
            }

            ngx_http_gms_cache_remove(cache, (ngx_rbtree_node_t *)
                        ((u_char *) cn - offsetof(ngx_rbtree_node_t, color)));
            n++;
        }
    }

    ngx_shmtx_unlock(&cache->shpool->mutex);

    return n;
}


static ngx_rbtree_node_t *
ngx_http_gms_cache_find(ngx_http_gms_cache_t *cache, u_char *id,
    uint32_t hash)
{
    ngx_int_t                   rc;
    ngx_rbtree_node_t          *node, *sentinel;

    node = cache->sh->rbtree.root;
    sentinel = cache->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash != node->key) {
            node = (hash < node->key) ? node->left : node->right;
            continue;
        }

        rc = ngx_memcmp(id, ngx_http_gms_cache_node(node)->id,
                        GMS_TOKEN_ID_LEN);

        if (rc == 0) {
            return node;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


static void
ngx_http_gms_cache_remove(ngx_http_gms_cache_t *cache,
    ngx_rbtree_node_t *node)
{
    ngx_http_gms_cache_node_t  *cn;

    cn = ngx_http_gms_cache_node(node);

    if (cn->result == NGX_HTTP_GMS_OK) {
        cache->sh->npositive--;

    } else {
        cache->sh->nnegative--;
    }

    ngx_queue_remove(&cn->queue);
    ngx_rbtree_delete(&cache->sh->rbtree, node);
    ngx_slab_free_locked(cache->shpool, node);
}


static ngx_int_t
ngx_http_gms_cache_evict(ngx_http_gms_cache_t *cache, ngx_queue_t *queue)
{
    ngx_queue_t                *q;
    ngx_http_gms_cache_node_t  *cn;

    if (ngx_queue_empty(queue)) {
        return NGX_DECLINED;
    }

    q = ngx_queue_last(queue);
    cn = ngx_queue_data(q, ngx_http_gms_cache_node_t, queue);

    if (queue == &cache->sh->positive) {
        ngx_http_gms_count(cache_evictions[0]);

    } else {
        ngx_http_gms_count(cache_evictions[1]);
    }

    ngx_http_gms_cache_remove(cache, (ngx_rbtree_node_t *)
                        ((u_char *) cn - offsetof(ngx_rbtree_node_t, color)));

    return NGX_OK;
}


static void
ngx_http_gms_cache_rbtree_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t  **p;

    for ( ;; ) {

        if (node->key != temp->key) {
            p = (node->key < temp->key) ? &temp->left : &temp->right;

        } else {
            p = (ngx_memcmp(ngx_http_gms_cache_node(node)->id,
                            ngx_http_gms_cache_node(temp)->id,
                            GMS_TOKEN_ID_LEN) < 0)
                ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


static ngx_int_t
ngx_http_gms_cache_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_gms_cache_t  *ocache = data;

    size_t                 len, slot;
    ngx_http_gms_cache_t  *cache;

    cache = shm_zone->data;

    /*
     * what a negative entry's node takes of the zone, for their budget: the
     * slab hands out powers of two
     */
    len = ngx_http_gms_cache_node_size(0);

    slot = 8;

    while (slot < len) {
        slot <<= 1;
    }

    cache->max_negative = shm_zone->shm.size / 4 / slot;

    if (ocache) {
        /* a reload with the same zone: the entries stay */
        cache->sh = ocache->sh;
        cache->shpool = ocache->shpool;
        return NGX_OK;
    }

    cache->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        cache->sh = cache->shpool->data;
        return NGX_OK;
    }

    cache->sh = ngx_slab_alloc(cache->shpool,
                               sizeof(ngx_http_gms_cache_sh_t));
    if (cache->sh == NULL) {
        return NGX_ERROR;
    }

    cache->shpool->data = cache->sh;

    ngx_rbtree_init(&cache->sh->rbtree, &cache->sh->sentinel,
                    ngx_http_gms_cache_rbtree_insert);
    ngx_queue_init(&cache->sh->positive);
    ngx_queue_init(&cache->sh->negative);

    len = sizeof(" in gms_token_cache zone \"\"") + shm_zone->shm.name.len;

    cache->shpool->log_ctx = ngx_slab_alloc(cache->shpool, len);
    if (cache->shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(cache->shpool->log_ctx, " in gms_token_cache zone \"%V\"%Z",
                &shm_zone->shm.name);

    cache->shpool->log_nomem = 0;

    return NGX_OK;
}


/*
 * gms_token_cache zone=NAME:SIZE [ttl=TIME] [negative_ttl=TIME]
 *     [stale=TIME];
 */

char *
ngx_http_gms_cache_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_gms_main_conf_t *gmcf = conf;

    u_char                *p;
    ssize_t                size;
    ngx_str_t             *value, name, s;
    ngx_int_t              ms;
    ngx_uint_t             i;
    ngx_shm_zone_t        *shm_zone;
    ngx_http_gms_cache_t  *cache;
    ngx_http_gms_time_t   *t;

    /* ttl= is first: the only one that may not be 0 */
    static ngx_http_gms_time_t  times[] = {
        { ngx_string("ttl="), offsetof(ngx_http_gms_cache_t, ttl) },
        { ngx_string("negative_ttl="),
          offsetof(ngx_http_gms_cache_t, negative_ttl) },
        { ngx_string("stale="), offsetof(ngx_http_gms_cache_t, stale) },
        { ngx_null_string, 0 }
    };

    if (gmcf->cache != NULL) {
        return "is duplicate";
    }

    cache = ngx_pcalloc(cf->pool, sizeof(ngx_http_gms_cache_t));
    if (cache == NULL) {
        return NGX_CONF_ERROR;
    }

    cache->ttl = 30000;
    cache->negative_ttl = 5000;
    cache->stale = 0;

    value = cf->args->elts;
    size = 0;
    ngx_str_null(&name);

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {

            name.data = value[i].data + 5;
            p = (u_char *) ngx_strchr(name.data, ':');

            if (p == NULL) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone size \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            name.len = p - name.data;

            s.data = p + 1;
            s.len = value[i].data + value[i].len - s.data;

            size = ngx_parse_size(&s);

            if (size == NGX_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone size \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            if (size < (ssize_t) (8 * ngx_pagesize)) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "zone \"%V\" is too small", &value[i]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        for (t = times; t->name.len; t++) {
            if (value[i].len > t->name.len
                && ngx_strncmp(value[i].data, t->name.data, t->name.len) == 0)
            {
                break;
            }
        }

        if (t->name.len == 0) {
            goto invalid;
        }

        s.data = value[i].data + t->name.len;
        s.len = value[i].len - t->name.len;
        ms = ngx_parse_time(&s, 0);

        if (ms == NGX_ERROR || (ms == 0 && t == times)) {
            goto invalid;
        }

        *(ngx_msec_t *) ((char *) cache + t->offset) = (ngx_msec_t) ms;
        continue;
    }

    if (name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must have \"zone\" parameter",
                           &cmd->name);
        return NGX_CONF_ERROR;
    }

    shm_zone = ngx_shared_memory_add(cf, &name, size, &ngx_http_gms_module);
    if (shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (shm_zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate zone \"%V\"", &name);
        return NGX_CONF_ERROR;
    }

    cache->name = name;
    shm_zone->init = ngx_http_gms_cache_init_zone;
    shm_zone->data = cache;
    gmcf->cache = cache;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\"", &value[i]);
    return NGX_CONF_ERROR;
}


/*
 * What the cached entries depend on: a reload that changes any of it
 * must not serve entries read under the old values.  The caller starts
 * and ends the CRC, and adds what the OAuth issuers' entries depend on
 * (ngx_http_gms_oauth_source()).
 */

void
ngx_http_gms_cache_source(ngx_http_gms_main_conf_t *gmcf, uint32_t *crc)
{
    ngx_uint_t                        i;
    unsigned char                     key_md[SHA256_DIGEST_LENGTH];
    ngx_http_gms_redis_conf_t        *rcf;
    ngx_http_gms_credentials_conf_t  *ccf;

    rcf = &gmcf->redis;
    ccf = &gmcf->credentials;

    ngx_crc32_update(crc, rcf->server.name.data, rcf->server.name.len);
    ngx_crc32_update(crc, rcf->master_name.data, rcf->master_name.len);
    ngx_crc32_update(crc, (u_char *) &rcf->db, sizeof(rcf->db));
    ngx_crc32_update(crc, (u_char *) &rcf->prefix.len,
                     sizeof(rcf->prefix.len));
    ngx_crc32_update(crc, rcf->prefix.data, rcf->prefix.len);
    ngx_crc32_update(crc, (u_char *) &ccf->salt.len, sizeof(ccf->salt.len));
    ngx_crc32_update(crc, ccf->salt.data, ccf->salt.len);

    /*
     * entries of signed tokens were verified under these keys: their
     * digests count, so no linear function of a key sits in the zone
     */
    for (i = 0; i < ccf->nkeys; i++) {
        SHA256(ccf->keys[i].data, ccf->keys[i].len, key_md);
        ngx_crc32_update(crc, key_md, SHA256_DIGEST_LENGTH);
    }

    ngx_crc32_update(crc, (u_char *) &ccf->jwt_leeway,
                     sizeof(ccf->jwt_leeway));
}

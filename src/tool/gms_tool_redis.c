
/*
 * gms-token's Redis room: connecting (AUTH and SELECT as the module
 * does; the socket and TLS are gms_tool_conn.c's), the key layout's
 * names, the transaction that writes a token, and the invalidation
 * message every edge listens for; where the server refuses scripts, the
 * writes that compare before they write, with WATCH and MULTI/EXEC.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_lookup.h"
#include "gms_topology.h"
#include "gms_tool_redis.h"
#include "gms_tool_conn.h"
#include "gms_tool_sentinel.h"
#include "gms_tool_cluster.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"


/*
 * The connection the commands use, t->conn: to --redis, or to the master
 * the Sentinels name; AUTH and SELECT as the module does.  Returns an
 * exit code: a bad option is a usage error, not Redis's.
 */

int
gms_tool_redis_connect(gms_tool_t *t)
{
    int          rc;
    char        *password, err[256];
    size_t       password_len;
    redisReply  *reply;

    rc = gms_tool_conn_password(t, &password, &password_len);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    if (t->cluster) {
        rc = gms_tool_cluster_connect(t, password, password_len);

    } else if (t->sentinel) {
        rc = gms_tool_sentinel_connect(t, password, password_len);

    } else {
        rc = gms_tool_conn_peer_open(t, "--redis", t->redis, t->user, password,
                                     password_len, &t->conn, err, sizeof(err));

        if (rc == GMS_TOOL_USAGE) {
            gms_tool_msgs_error(t, "%s", err);

        } else if (rc != GMS_TOOL_OK) {
            gms_tool_msgs_error(t, "redis %s: %s", t->redis, err);
        }
    }

    if (password) {
        OPENSSL_cleanse(password, password_len);
        free(password);
    }

    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    /* another server, maybe: its replicas are counted afresh, its scripts */
    t->replicas_at = 0;
    t->scripts_known = 0;
    t->noscript = 0;

    if (t->db) {
        reply = gms_tool_conn_command(t, "SELECT %ld", t->db);

        if (gms_tool_redis_reply_error(t, reply, "SELECT") != 0) {
            return GMS_TOOL_REDIS;
        }

        freeReplyObject(reply);
    }

    return GMS_TOOL_OK;
}


/* <prefix><kind><name>, with its length: names and prefix are any bytes */

char *
gms_tool_redis_key(gms_tool_t *t, const char *kind, const char *name,
    size_t len, size_t *key_len)
{
    char    *key;
    size_t   kind_len;

    kind_len = strlen(kind);
    *key_len = t->prefix_len + kind_len + len;

    key = malloc(*key_len + 1);
    if (key == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return NULL;
    }

    memcpy(key, t->prefix, t->prefix_len);
    memcpy(key + t->prefix_len, kind, kind_len);
    memcpy(key + t->prefix_len + kind_len, name, len);
    key[*key_len] = '\0';

    return key;
}


int64_t
gms_tool_redis_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/*
 * One token, one transaction: the old fields (for the counts), then the
 * hash replaced whole, so that a re-put leaves no stale field, and the
 * key's expiry set to the token's.  put, create and sync all write a
 * token so: put and create here, sync in pipelined batches of the two
 * halves, gms_tool_redis_put_append and gms_tool_redis_put_read.  -1: reported.
 */

int
gms_tool_redis_put_token(gms_tool_t *t, const char *id,
    const gms_tool_token_t *tok, gms_tool_put_rc_e *rc)
{
    if (gms_tool_redis_put_append(t, id, tok) != 0) {
        return -1;
    }

    return gms_tool_redis_put_read(t, tok, rc);
}


int
gms_tool_redis_put_append(gms_tool_t *t, const char *id,
    const gms_tool_token_t *tok)
{
    int          n;
    char        *key, ms[24], created[24];
    size_t       key_len, lens[10];
    const char  *argv[10];

    key = gms_tool_redis_key(t, GMS_KEY_TOKEN, id, GMS_TOKEN_ID_LEN, &key_len);
    if (key == NULL) {
        return -1;
    }

    snprintf(ms, sizeof(ms), "%lld", (long long) tok->expires_at);

    gms_tool_conn_append(t, "MULTI");
    gms_tool_conn_append(t, "HMGET %b actor expiresAt type", key, key_len);
    gms_tool_conn_append(t, "DEL %b", key, key_len);

    n = 0;
    argv[n] = "HSET";
    lens[n++] = 4;
    argv[n] = key;
    lens[n++] = key_len;
    argv[n] = "actor";
    lens[n++] = 5;
    argv[n] = tok->actor;
    lens[n++] = tok->actor_len;

    if (tok->expires_at) {
        argv[n] = "expiresAt";
        lens[n++] = 9;
        argv[n] = ms;
        lens[n++] = strlen(ms);
    }

    if (tok->type) {
        argv[n] = "type";
        lens[n++] = 4;
        argv[n] = tok->type;
        lens[n++] = strlen(tok->type);
    }

    if (tok->created_at) {
        snprintf(created, sizeof(created), "%lld",
                 (long long) tok->created_at);
        argv[n] = "createdAt";
        lens[n++] = 9;
        argv[n] = created;
        lens[n++] = strlen(created);
    }

    gms_tool_conn_append_argv(t, n, argv, lens);

    if (tok->expires_at) {
        gms_tool_conn_append(t, "PEXPIREAT %b %s", key, key_len, ms);
    }

    gms_tool_conn_append(t, "EXEC");

    free(key);

    return 0;
}


static int
gms_tool_field_is(redisReply *field, const char *value, size_t len)
{
    if (value == NULL) {
        return field->type == REDIS_REPLY_NIL;
    }

    return field->type == REDIS_REPLY_STRING && field->len == len
           && memcmp(field->str, value, len) == 0;
}


int
gms_tool_redis_put_read(gms_tool_t *t, const gms_tool_token_t *tok,
    gms_tool_put_rc_e *rc)
{
    char         ms[24];
    size_t       i, queued;
    redisReply  *reply, *old;

    queued = tok->expires_at ? 4 : 3;

    reply = gms_tool_redis_exec_read(t, queued);
    if (reply == NULL) {
        return -1;
    }

    /* an error in HMGET (a key of another type) is repaired by the DEL */
    for (i = 1; i < queued; i++) {
        if (reply->element[i]->type == REDIS_REPLY_ERROR) {
            gms_tool_msgs_error(t, "redis %s: %s", t->redis,
                                reply->element[i]->str);
            freeReplyObject(reply);
            return -1;
        }
    }

    old = reply->element[0];

    if (old->type != REDIS_REPLY_ARRAY || old->elements != 3) {
        *rc = GMS_TOOL_UPDATED;

    } else if (old->element[0]->type == REDIS_REPLY_NIL) {
        *rc = GMS_TOOL_ADDED;

    } else {
        snprintf(ms, sizeof(ms), "%lld", (long long) tok->expires_at);

        *rc = gms_tool_field_is(old->element[0], tok->actor, tok->actor_len)
              && gms_tool_field_is(old->element[1],
                                   tok->expires_at ? ms : NULL, strlen(ms))
              && gms_tool_field_is(old->element[2], tok->type,
                                   tok->type ? strlen(tok->type) : 0)
              ? GMS_TOOL_UNCHANGED : GMS_TOOL_UPDATED;
    }

    freeReplyObject(reply);

    return 0;
}


/*
 * the replies of MULTI, "queued" commands and EXEC: EXEC's array of their
 * "queued" replies (each may be an error), or NULL, said in t->error
 */

redisReply *
gms_tool_redis_exec_read(gms_tool_t *t, size_t queued)
{
    size_t       i;
    redisReply  *reply;

    /* MULTI's +OK and a +QUEUED for each command */
    for (i = 0; i < 1 + queued; i++) {
        (void) gms_tool_conn_get_reply(t, &reply);

        if (gms_tool_redis_reply_error(t, reply, "MULTI") != 0) {
            return NULL;
        }

        freeReplyObject(reply);
    }

    (void) gms_tool_conn_get_reply(t, &reply);

    if (gms_tool_redis_reply_error(t, reply, "EXEC") != 0) {
        return NULL;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != queued) {
        gms_tool_msgs_error(t, "redis %s: EXEC: the transaction was not run",
                            t->redis);
        freeReplyObject(reply);
        return NULL;
    }

    return reply;
}


/*
 * 1: the reply (freed) says the server runs no script for this client (an
 * ACL without @scripting, EVAL renamed away, no Lua engine:
 * gms_lookup_scripts_refused()); the connection's writes go without
 * scripts from now on, silently: the writes keep the scripts' guarantees
 * and the edges say it (docs/redis-contract.md).  0: any other reply, left
 * as it is.
 */

int
gms_tool_redis_refused(gms_tool_t *t, redisReply *reply)
{
    if (reply == NULL || reply->type != REDIS_REPLY_ERROR
        || !gms_lookup_scripts_refused(reply->str, reply->len))
    {
        return 0;
    }

    t->scripts_known = 1;
    t->noscript = 1;

    freeReplyObject(reply);

    return 1;
}


/*
 * Before a pipeline of scripts: whether this connection runs them, asked
 * once (t->noscript then says).  -1: the connection failed.
 */

int
gms_tool_redis_scripts(gms_tool_t *t)
{
    redisReply  *reply;

    if (t->scripts_known) {
        return 0;
    }

    reply = gms_tool_conn_command(t, "EVAL %s 0", "return 1");

    if (gms_tool_redis_refused(t, reply)) {
        return 0;
    }

    if (gms_tool_redis_reply_error(t, reply, "EVAL") != 0) {
        return -1;
    }

    freeReplyObject(reply);
    t->scripts_known = 1;

    return 0;
}


/*
 * Without scripts, gms_sync_delete_script's step: the token's key deleted
 * unless created after cutoff (*n -1), and the id published in the same
 * transaction, after the DEL, unless id_len is 0 (*n 1; 0: no such key).
 * WATCH makes the read and the write one step: a key changed in between
 * (written again by GMS's newer token, say) fails EXEC, and it is read
 * again.  A key that is no hash has no createdAt, and goes.
 */

int
gms_tool_redis_delete(gms_tool_t *t, const char *key, size_t key_len,
    int64_t cutoff, const char *channel, size_t channel_len, const char *id,
    size_t id_len, long long *n)
{
    int          i, exists;
    char        *end;
    long long    created;
    redisReply  *reply;

    for (i = 0; i < GMS_TOOL_WATCH_TRIES; i++) {
        gms_tool_conn_append(t, "WATCH %b", key, key_len);
        gms_tool_conn_append(t, "EXISTS %b", key, key_len);
        gms_tool_conn_append(t, "HGET %b createdAt", key, key_len);

        (void) gms_tool_conn_get_reply(t, &reply);

        if (gms_tool_redis_reply_error(t, reply, "WATCH") != 0) {
            return -1;
        }

        freeReplyObject(reply);

        (void) gms_tool_conn_get_reply(t, &reply);

        if (gms_tool_redis_reply_error(t, reply, "EXISTS") != 0) {
            return -1;
        }

        exists = reply->type == REDIS_REPLY_INTEGER && reply->integer > 0;
        freeReplyObject(reply);

        /* -WRONGTYPE: no hash, no createdAt */
        (void) gms_tool_conn_get_reply(t, &reply);

        if (reply == NULL) {
            gms_tool_redis_reply_error(t, reply, "HGET");
            return -1;
        }

        created = -1;

        if (reply->type == REDIS_REPLY_STRING && reply->len > 0) {
            created = strtoll(reply->str, &end, 10);

            if (*end != '\0') {
                created = -1;
            }
        }

        freeReplyObject(reply);

        if (!exists || created > cutoff) {
            reply = gms_tool_conn_command(t, "UNWATCH");

            if (gms_tool_redis_reply_error(t, reply, "UNWATCH") != 0) {
                return -1;
            }

            freeReplyObject(reply);

            *n = exists ? -1 : 0;
            return 0;
        }

        gms_tool_conn_append(t, "MULTI");
        gms_tool_conn_append(t, "DEL %b", key, key_len);

        if (id_len) {
            gms_tool_conn_append(t, "PUBLISH %b %b", channel, channel_len,
                                 id, id_len);
        }

        switch (gms_tool_redis_watch_exec(t, id_len ? 2 : 1, &reply)) {

        case 0:
            *n = reply->element[0]->type == REDIS_REPLY_INTEGER
                 ? reply->element[0]->integer : 0;
            freeReplyObject(reply);
            return 0;

        case 1:
            /* the key changed since WATCH: read again */
            continue;

        default:
            return -1;
        }
    }

    gms_tool_msgs_error(t, "redis %s: a token's key changed under each of "
                        "%d tries to delete it", t->redis,
                        GMS_TOOL_WATCH_TRIES);

    return -1;
}


/*
 * EXEC sent after a WATCH, MULTI and queued commands, and the replies
 * read: 0, *reply the commands' replies; 1: a watched key changed,
 * nothing was run (EXEC's nil); -1: failed, said.
 */

int
gms_tool_redis_watch_exec(gms_tool_t *t, size_t queued, redisReply **reply)
{
    size_t       i;
    redisReply  *r;

    gms_tool_conn_append(t, "EXEC");

    for (i = 0; i < 1 + queued; i++) {
        (void) gms_tool_conn_get_reply(t, &r);

        if (gms_tool_redis_reply_error(t, r, "MULTI") != 0) {
            /* EXEC's answer, -EXECABORT, read and dropped */
            for (i++; i < 2 + queued; i++) {
                (void) gms_tool_conn_get_reply(t, &r);

                if (r == NULL) {
                    break;
                }

                freeReplyObject(r);
            }

            return -1;
        }

        freeReplyObject(r);
    }

    (void) gms_tool_conn_get_reply(t, &r);

    if (gms_tool_redis_reply_error(t, r, "EXEC") != 0) {
        return -1;
    }

    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return 1;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != queued) {
        gms_tool_msgs_error(t, "redis %s: EXEC: the transaction was not run",
                            t->redis);
        freeReplyObject(r);
        return -1;
    }

    *reply = r;

    return 0;
}


/*
 * reports a failed command (reply NULL: the connection) and frees it; a
 * cluster's redirection or refusal is said for what it is
 */

int
gms_tool_redis_reply_error(gms_tool_t *t, redisReply *reply, const char *what)
{
    const char  *why;

    if (reply == NULL) {
        gms_tool_msgs_error(t, "redis %s: %s: %s", t->redis, what,
                            gms_tool_conn_peer_error(t->conn)
                            ? gms_tool_conn_peer_error(t->conn) : "no reply");
        return -1;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        why = gms_tool_cluster_why(t, reply);

        if (why) {
            gms_tool_msgs_error(t, "redis %s: %s: %s (%s)", t->redis, what,
                                reply->str, why);

        } else {
            gms_tool_msgs_error(t, "redis %s: %s: %s", t->redis, what,
                                reply->str);
        }

        freeReplyObject(reply);
        return -1;
    }

    return 0;
}


/* for qsort: replies (strings) in the order of their bytes */

int
gms_tool_redis_reply_cmp(const void *one, const void *two)
{
    int                r;
    size_t             len;
    const redisReply  *a, *b;

    a = *(const redisReply **) one;
    b = *(const redisReply **) two;

    len = a->len < b->len ? a->len : b->len;
    r = memcmp(a->str, b->str, len);

    if (r != 0) {
        return r;
    }

    return (a->len > b->len) - (a->len < b->len);
}


/*
 * Before an invalidation is published: the master's replicas given
 * --wait-timeout to acknowledge the writes so far (WAIT), so that an edge
 * that reads a replica after the message finds the change there.  The
 * replicas are counted (ROLE: one may have joined or left) after each
 * connect and at most every GMS_TOOL_ROLE_AGE ms; none, no WAIT.  A WAIT
 * that expires is a warning, and the message goes anyway: one that may
 * come early is better than none.  After one expired, none is waited
 * for GMS_TOOL_WAIT_PAUSE ms, so that a sync publishing for many users
 * does not wait the timeout for each.  Returns the number of
 * replicas waited for (0: none, or not waited for).
 */

int
gms_tool_redis_wait(gms_tool_t *t)
{
    int                   n;
    int64_t               now;
    const char           *why;
    redisReply           *reply;
    struct timespec       ts;
    gms_topology_role_t   role;

    if (t->wait_ms == 0 || t->conn == NULL) {
        return 0;
    }

    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;

    if (now < t->wait_skip_until) {
        return 0;
    }

    if (t->replicas_at && now - t->replicas_at < GMS_TOOL_ROLE_AGE) {
        n = t->replicas;
        goto wait;
    }

    /* ROLE, as gms_topology.c reads it: a master's names its replicas */
    reply = gms_tool_conn_command(t, "ROLE");

    if (reply == NULL) {
        return 0;
    }

    if (gms_topology_role(reply, &role, &why) != GMS_TOPOLOGY_OK
        || role.role != GMS_TOPOLOGY_MASTER)
    {
        if (reply->type == REDIS_REPLY_ERROR && !t->role_warned) {
            t->role_warned = 1;
            gms_tool_msgs_warn(t, "redis %s: ROLE: %s: invalidations are "
                               "published without waiting for the replicas",
                               t->redis, reply->str);
        }

        freeReplyObject(reply);
        return 0;
    }

    n = (int) role.replicas;
    freeReplyObject(reply);

    t->replicas = n;
    t->replicas_at = now;

wait:

    if (n == 0) {
        return 0;
    }

    reply = gms_tool_conn_command(t, "WAIT %d %ld", n, t->wait_ms);

    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER) {
        gms_tool_msgs_warn(t, "redis %s: WAIT: %s; publishing anyway", t->redis,
                           reply == NULL ? gms_tool_conn_peer_error(t->conn)
                           : reply->type == REDIS_REPLY_ERROR ? reply->str
                           : "unexpected reply");

    } else if (reply->integer < n) {
        gms_tool_msgs_warn(t, "redis %s: WAIT: %lld of %d replicas "
                           "acknowledged the change within %ld ms; publishing "
                           "anyway (an edge reading a lagging replica may "
                           "cache the old entry), and not waiting for the "
                           "next %d s", t->redis,
                           reply->integer, n, t->wait_ms,
                           GMS_TOOL_WAIT_PAUSE / 1000);
        t->wait_skip_until = now + GMS_TOOL_WAIT_PAUSE;
    }

    if (reply) {
        freeReplyObject(reply);
    }

    return n;
}


/*
 * Tells every edge to drop what it cached for a token id or a user URN
 * (GMS_INVALIDATE_ALL: everything).  A failure is reported, and is the
 * caller's failure: Redis changed but the edges may keep the old answer
 * until their ttl runs out.
 */

int
gms_tool_redis_publish(gms_tool_t *t, const char *what, size_t len)
{
    char        *channel;
    size_t       channel_len;
    redisReply  *reply;

    channel = gms_tool_redis_key(t, GMS_KEY_INVALIDATE, "", 0, &channel_len);
    if (channel == NULL) {
        return -1;
    }

    (void) gms_tool_redis_wait(t);

    reply = gms_tool_conn_command(t, "PUBLISH %b %b", channel, channel_len,
                                  what, len);
    free(channel);

    if (gms_tool_redis_reply_error(t, reply, "PUBLISH") != 0) {
        return -1;
    }

    freeReplyObject(reply);

    return 0;
}


/*
 * A token out of the cache: its key deleted, then its id published (an
 * edge may hold it although Redis did not).  1: deleted, 0: it was not
 * cached, -1: a failure, reported.
 */

int
gms_tool_redis_uncache(gms_tool_t *t, const char *id)
{
    int          deleted;
    char        *key;
    size_t       key_len;
    redisReply  *reply;

    key = gms_tool_redis_key(t, GMS_KEY_TOKEN, id, GMS_TOKEN_ID_LEN, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_conn_command(t, "DEL %b", key, key_len);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "DEL") != 0) {
        return -1;
    }

    deleted = reply->type == REDIS_REPLY_INTEGER && reply->integer > 0;

    freeReplyObject(reply);

    if (gms_tool_redis_publish(t, id, GMS_TOKEN_ID_LEN) != 0) {
        return -1;
    }

    return deleted;
}


/* the prefix is any bytes: its glob characters must match themselves */

int
gms_tool_redis_scan_open(gms_tool_t *t, gms_tool_scan_t *s, const char *kind)
{
    char    *p;
    size_t   i, kind_len;

    memset(s, 0, sizeof(gms_tool_scan_t));

    kind_len = strlen(kind);

    s->pattern = malloc(2 * t->prefix_len + kind_len + 2);
    if (s->pattern == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    for (p = s->pattern, i = 0; i < t->prefix_len; i++) {
        if (strchr("*?[]\\", t->prefix[i]) && t->prefix[i] != '\0') {
            *p++ = '\\';
        }

        *p++ = t->prefix[i];
    }

    memcpy(p, kind, kind_len);
    p += kind_len;
    *p++ = '*';

    s->len = p - s->pattern;
    strcpy(s->cursor, "0");

    return 0;
}


/*
 * The keys of the next batch (an array of replies to check one by one),
 * valid until the next call; NULL: reported.  s->done once SCAN's cursor
 * is back to 0.
 */

redisReply *
gms_tool_redis_scan_next(gms_tool_t *t, gms_tool_scan_t *s)
{
    redisReply  *reply;

    if (s->reply) {
        freeReplyObject(s->reply);
        s->reply = NULL;
    }

    reply = gms_tool_conn_command(t, "SCAN %s MATCH %b COUNT 1000", s->cursor,
                                  s->pattern, s->len);

    if (gms_tool_redis_reply_error(t, reply, "SCAN") != 0) {
        return NULL;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2
        || reply->element[0]->type != REDIS_REPLY_STRING
        || reply->element[0]->len >= sizeof(s->cursor)
        || reply->element[1]->type != REDIS_REPLY_ARRAY)
    {
        gms_tool_msgs_error(t, "redis %s: SCAN: unexpected reply", t->redis);
        freeReplyObject(reply);
        return NULL;
    }

    memcpy(s->cursor, reply->element[0]->str, reply->element[0]->len + 1);
    s->done = (strcmp(s->cursor, "0") == 0);
    s->reply = reply;

    return reply->element[1];
}


void
gms_tool_redis_scan_close(gms_tool_scan_t *s)
{
    if (s->reply) {
        freeReplyObject(s->reply);
    }

    free(s->pattern);
}

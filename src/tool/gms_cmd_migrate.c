
/*
 * gms-token migrate: the contract's keys copied from one Redis and prefix
 * (--from-redis or --from-sentinel, --from-prefix) to the one the usual
 * connection options name, under --prefix: the way from a standalone or
 * Sentinel-managed Redis (gms:) to a Redis Cluster ({gms}:).  The keys
 * are the tokens (hashes), the users' privileges and <prefix>inactive,
 * <prefix>deleted (sets) and <prefix>sync (a hash); never <prefix>lease
 * (a follower's, of the old Redis).  Each is read whole in a transaction
 * (TYPE, PTTL and its content, pipelined a SCAN batch at a time) and
 * written whole in a transaction of its own (DEL, HSET or SADD, PEXPIRE
 * with the milliseconds it had left), so that running it again gives the
 * same keys; a key that had an expiry is never written without one.  A
 * key of an unexpected type is reported and skipped; the other keys
 * under the prefix are not the contract's and are left.  At the end '*' is
 * published on the target's <prefix>invalidate: every edge reading it
 * drops its cache.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gms_contract.h"
#include "gms_cmd_migrate.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_tool_msgs.h"
#include "gms_tool_progress.h"


typedef enum {
    GMS_MIGRATE_TOKEN = 0,
    GMS_MIGRATE_ACTOR,
    GMS_MIGRATE_INACTIVE,
    GMS_MIGRATE_DELETED,
    GMS_MIGRATE_SYNC,
    GMS_MIGRATE_KINDS,
    GMS_MIGRATE_OTHER = GMS_MIGRATE_KINDS
} gms_migrate_kind_e;


typedef struct {
    size_t                 copied[GMS_MIGRATE_KINDS];
    size_t                 skipped;        /* of another type */
    size_t                 gone;           /* deleted meanwhile */
} gms_migrate_counts_t;


static int gms_cmd_migrate_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_migrate_source(gms_tool_t *t, gms_tool_args_t *a,
    gms_tool_t *from);
static gms_migrate_kind_e gms_migrate_kind(gms_tool_t *from,
    redisReply *key);
static int gms_migrate_batch(gms_tool_t *t, gms_tool_t *from,
    redisReply *keys, gms_migrate_counts_t *counts);
static int gms_migrate_write(gms_tool_t *t, gms_tool_t *from,
    redisReply *key, gms_migrate_kind_e kind, redisReply *ttl,
    redisReply *value);


static const char  *gms_migrate_names[] = {
    "tokens", "actors", "inactive", "deleted", "sync"
};

/* the type each kind must have */
static const char  *gms_migrate_types[] = {
    "hash", "set", "set", "set", "hash"
};


const gms_tool_command_t  gms_cmd_migrate = {
    "migrate", gms_cmd_migrate_handler,
    GMS_OPTS_CONN | GMS_OPT(GMS_OPT_FROM_REDIS)
    | GMS_OPT(GMS_OPT_FROM_SENTINEL) | GMS_OPT(GMS_OPT_FROM_MASTER)
    | GMS_OPT(GMS_OPT_FROM_PREFIX) | GMS_OPT(GMS_OPT_FROM_PASSWORD_FILE)
    | GMS_OPT(GMS_OPT_FROM_TLS),
    0, 0,
    "Usage: gms-token migrate [--from-redis ADDR | --from-sentinel ADDR,...\n"
    "                         --from-master NAME] [--from-prefix STRING]\n"
    "                         [--from-password-file FILE] [--from-tls]\n"
    "                         [connection options]\n"
    "\n"
    "Copies the cache from one Redis to another: the tokens, the users'\n"
    "privileges, <prefix>inactive, <prefix>deleted and <prefix>sync (not\n"
    "<prefix>lease), each key whole and with the time it had left to live,\n"
    "from --from-redis (or the master --from-sentinel names) under\n"
    "--from-prefix to the Redis of the connection options under --prefix,\n"
    "as from a standalone Redis (gms:) to a Redis Cluster ({gms}:).  A key\n"
    "of an unexpected type is reported and skipped.  Running it again\n"
    "copies the same keys again; keys of the target that the source lacks\n"
    "are left.  Then '*' is published on the target's <prefix>invalidate.\n"
    "Prints what it copied: tokens=N actors=N inactive=N deleted=N sync=N\n"
    "skipped=N.  Stop the followers writing to the source first.\n"
    "\n"
    "Source options:\n"
    "  --from-redis ADDR     the source Redis (default 127.0.0.1:6379)\n"
    "  --from-sentinel ADDR,...\n"
    "                        instead: these Sentinels name its master\n"
    "  --from-master NAME    the master's name at the Sentinels\n"
    "  --from-prefix STRING  the source's key prefix (default gms:)\n"
    "  --from-password-file FILE\n"
    "                        the source's password (default: none)\n"
    "  --from-tls            TLS to the source, with the --tls-* files\n"
    GMS_TOOL_CONN_USAGE
};


static int
gms_cmd_migrate_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    int                   rc;
    size_t                i, n;
    redisReply           *keys;
    gms_tool_t            from;
    gms_tool_progress_t   progress;
    gms_tool_scan_t       scan;
    gms_migrate_counts_t  counts;

    rc = gms_migrate_source(t, a, &from);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    memset(&counts, 0, sizeof(gms_migrate_counts_t));

    rc = gms_tool_redis_connect(&from);
    if (rc != GMS_TOOL_OK) {
        memcpy(t->error, from.error, sizeof(t->error));
        return rc;
    }

    rc = gms_tool_redis_connect(t);
    if (rc != GMS_TOOL_OK) {
        gms_tool_conn_close(&from);
        return rc;
    }

    if (gms_tool_redis_scan_open(&from, &scan, "") != 0) {
        gms_tool_conn_close(&from);
        return GMS_TOOL_REDIS;
    }

    rc = GMS_TOOL_REDIS;

    gms_tool_progress_open(t, &progress);

    do {
        keys = gms_tool_redis_scan_next(&from, &scan);
        if (keys == NULL) {
            goto done;
        }

        if (gms_migrate_batch(t, &from, keys, &counts) != 0) {
            goto done;
        }

        for (i = 0, n = 0; i < GMS_MIGRATE_KINDS; i++) {
            n += counts.copied[i];
        }

        gms_tool_progress_show(t->progress, "keys copied", n, 0);

    } while (!scan.done);

    gms_tool_progress_close(t);

    if (gms_tool_redis_publish(t, GMS_INVALIDATE_ALL,
                               sizeof(GMS_INVALIDATE_ALL) - 1)
        != 0)
    {
        goto done;
    }

    for (i = 0; i < GMS_MIGRATE_KINDS; i++) {
        printf("%s%s=%zu", i ? " " : "", gms_migrate_names[i],
               counts.copied[i]);
    }

    printf(" skipped=%zu\n", counts.skipped);

    rc = GMS_TOOL_OK;

done:

    gms_tool_progress_close(t);
    gms_tool_redis_scan_close(&scan);
    gms_tool_conn_close(&from);

    return rc;
}


/* the source's connection: t's TLS files, the --from-* options */

static int
gms_migrate_source(gms_tool_t *t, gms_tool_args_t *a, gms_tool_t *from)
{
    memcpy(from, t, sizeof(gms_tool_t));

    from->conn = NULL;
    from->cluster = NULL;
    from->user = NULL;
    from->db = 0;
    from->wait_ms = 0;
    from->redis = a->val[GMS_OPT_FROM_REDIS] ? a->val[GMS_OPT_FROM_REDIS]
                                             : "127.0.0.1:6379";
    from->sentinel = a->val[GMS_OPT_FROM_SENTINEL];
    from->master = a->val[GMS_OPT_FROM_MASTER];
    from->sentinel_password_file = NULL;
    from->password_file = a->val[GMS_OPT_FROM_PASSWORD_FILE];
    from->prefix = a->val[GMS_OPT_FROM_PREFIX] ? a->val[GMS_OPT_FROM_PREFIX]
                                               : "gms:";
    from->prefix_len = strlen(from->prefix);
    from->tls = a->val[GMS_OPT_FROM_TLS] != NULL;

    /* GMS_REDIS_PASSWORD is the target's */
    from->password_env_off = 1;

    if (from->sentinel) {
        if (a->val[GMS_OPT_FROM_REDIS]) {
            gms_tool_msgs_error(t, "give --from-redis or --from-sentinel, not "
                                "both");
            return GMS_TOOL_USAGE;
        }

        if (from->master == NULL || from->master[0] == '\0') {
            gms_tool_msgs_error(t, "--from-sentinel needs --from-master NAME");
            return GMS_TOOL_USAGE;
        }

        from->redis = from->sentinel;

    } else if (from->master) {
        gms_tool_msgs_error(t, "--from-master goes with --from-sentinel");
        return GMS_TOOL_USAGE;
    }

    return GMS_TOOL_OK;
}


static gms_migrate_kind_e
gms_migrate_kind(gms_tool_t *from, redisReply *key)
{
    size_t       len;
    const char  *name;

    if (key->type != REDIS_REPLY_STRING || key->len < from->prefix_len) {
        return GMS_MIGRATE_OTHER;
    }

    name = key->str + from->prefix_len;
    len = key->len - from->prefix_len;

#define GMS_MIGRATE_IS(k)                                                     \
    (len == sizeof(k) - 1 && memcmp(name, k, sizeof(k) - 1) == 0)
#define GMS_MIGRATE_UNDER(k)                                                  \
    (len > sizeof(k) - 1 && memcmp(name, k, sizeof(k) - 1) == 0)

    if (GMS_MIGRATE_UNDER(GMS_KEY_TOKEN)) {
        return GMS_MIGRATE_TOKEN;
    }

    if (GMS_MIGRATE_UNDER(GMS_KEY_ACTOR)) {
        return GMS_MIGRATE_ACTOR;
    }

    if (GMS_MIGRATE_IS(GMS_KEY_INACTIVE)) {
        return GMS_MIGRATE_INACTIVE;
    }

    if (GMS_MIGRATE_IS(GMS_KEY_DELETED)) {
        return GMS_MIGRATE_DELETED;
    }

    if (GMS_MIGRATE_IS(GMS_KEY_SYNC)) {
        return GMS_MIGRATE_SYNC;
    }

    return GMS_MIGRATE_OTHER;
}


/*
 * One SCAN batch: each key read in a transaction of its own on the source
 * (TYPE, PTTL and the content, HGETALL or SMEMBERS as its kind wants), so
 * that its time to live and its content are of one moment, pipelined;
 * then each key written in a transaction of its own, pipelined on the
 * target.  A key in its last millisecond (PTTL 0) or gone (-2) is not
 * copied: PEXPIRE 0 would delete it, and without PEXPIRE it would live
 * for ever.
 */

static int
gms_migrate_batch(gms_tool_t *t, gms_tool_t *from, redisReply *keys,
    gms_migrate_counts_t *counts)
{
    int                  rc;
    size_t               i, n;
    redisReply          *key, **read, *type, *ttl, *value;
    gms_migrate_kind_e  *kinds;

    rc = -1;
    n = keys->elements;
    read = calloc(n + 1, sizeof(redisReply *));
    kinds = calloc(n + 1, sizeof(gms_migrate_kind_e));

    if (read == NULL || kinds == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        goto done;
    }

    for (i = 0; i < n; i++) {
        key = keys->element[i];
        kinds[i] = gms_migrate_kind(from, key);

        if (kinds[i] == GMS_MIGRATE_OTHER) {
            continue;
        }

        gms_tool_conn_append(from, "MULTI");
        gms_tool_conn_append(from, "TYPE %b", key->str, key->len);
        gms_tool_conn_append(from, "PTTL %b", key->str, key->len);
        gms_tool_conn_append(from, gms_migrate_types[kinds[i]][0] == 'h'
                                   ? "HGETALL %b" : "SMEMBERS %b",
                             key->str, key->len);
        gms_tool_conn_append(from, "EXEC");
    }

    for (i = 0; i < n; i++) {
        if (kinds[i] == GMS_MIGRATE_OTHER) {
            continue;
        }

        read[i] = gms_tool_redis_exec_read(from, 3);

        if (read[i] == NULL) {
            memcpy(t->error, from->error, sizeof(t->error));
            goto done;
        }
    }

    for (i = 0; i < n; i++) {
        if (kinds[i] == GMS_MIGRATE_OTHER) {
            continue;
        }

        key = keys->element[i];
        type = read[i]->element[0];
        ttl = read[i]->element[1];
        value = read[i]->element[2];

        if (type->type == REDIS_REPLY_STATUS
            && strcmp(type->str, "none") == 0)
        {
            counts->gone++;
            kinds[i] = GMS_MIGRATE_OTHER;
            continue;
        }

        if (type->type != REDIS_REPLY_STATUS
            || strcmp(type->str, gms_migrate_types[kinds[i]]) != 0
            || ttl->type != REDIS_REPLY_INTEGER
            || value->type != REDIS_REPLY_ARRAY)
        {
            gms_tool_msgs_warn(t, "%s: a %s, not a %s: skipped",
                               gms_tool_msgs_shown(key->str),
                               type->type == REDIS_REPLY_STATUS
                               ? type->str : "key that cannot be read",
                               gms_migrate_types[kinds[i]]);
            counts->skipped++;
            kinds[i] = GMS_MIGRATE_OTHER;
            continue;
        }

        if (value->elements == 0 || (ttl->integer != -1 && ttl->integer < 1))
        {
            counts->gone++;
            kinds[i] = GMS_MIGRATE_OTHER;
            continue;
        }

        if (gms_migrate_write(t, from, key, kinds[i], ttl, value) != 0) {
            goto done;
        }
    }

    for (i = 0; i < n; i++) {
        if (kinds[i] == GMS_MIGRATE_OTHER) {
            continue;
        }

        /* DEL, HSET or SADD, PEXPIRE or not */
        key = gms_tool_redis_exec_read(t, read[i]->element[1]->integer > 0
                                          ? 3 : 2);
        if (key == NULL) {
            goto done;
        }

        freeReplyObject(key);
        counts->copied[kinds[i]]++;
    }

    rc = 0;

done:

    if (read) {
        for (i = 0; i < n; i++) {
            if (read[i]) {
                freeReplyObject(read[i]);
            }
        }
    }

    free(read);
    free(kinds);

    return rc;
}


/* the key under the target's prefix, whole, with the time it had left */

static int
gms_migrate_write(gms_tool_t *t, gms_tool_t *from, redisReply *key,
    gms_migrate_kind_e kind, redisReply *ttl, redisReply *value)
{
    char         *name;
    size_t        i, n, len, *lens;
    const char  **argv;

    name = gms_tool_redis_key(t, "", key->str + from->prefix_len,
                              key->len - from->prefix_len, &len);
    if (name == NULL) {
        return -1;
    }

    n = value->elements + 2;
    argv = malloc(n * sizeof(char *));
    lens = malloc(n * sizeof(size_t));

    if (argv == NULL || lens == NULL) {
        free(argv);
        free(lens);
        free(name);
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    argv[0] = gms_migrate_types[kind][0] == 'h' ? "HSET" : "SADD";
    lens[0] = 4;
    argv[1] = name;
    lens[1] = len;

    for (i = 0; i < value->elements; i++) {
        argv[i + 2] = value->element[i]->str;
        lens[i + 2] = value->element[i]->len;
    }

    gms_tool_conn_append(t, "MULTI");
    gms_tool_conn_append(t, "DEL %b", name, len);
    gms_tool_conn_append_argv(t, (int) n, argv, lens);

    if (ttl->integer > 0) {
        gms_tool_conn_append(t, "PEXPIRE %b %lld", name, len, ttl->integer);
    }

    gms_tool_conn_append(t, "EXEC");

    free(argv);
    free(lens);
    free(name);

    return 0;
}

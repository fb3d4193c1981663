
/*
 * gms-token --redis-cluster ADDR,...: every key of the contract lies in
 * the slot of the prefix's hash tag ({gms}: by default), so the tool
 * writes to that slot's master exactly as to a standalone Redis: MULTI,
 * scripts and SCAN all stay on the one node.  The seeds are asked in
 * the order given for the cluster's map, CLUSTER SHARDS (CLUSTER SLOTS
 * before Redis 7), and the master that serves the slot is connected to.
 * Asked at every connect: follow connects afresh after a Redis failure,
 * so it follows a failover or a slot moved to another master.  A single
 * command answered -MOVED is sent again, once, to the node named (the
 * map's update); -ASK (a slot in migration) sends it once to the node
 * named, after ASKING, and keeps the connection.  A pipeline or a
 * transaction redirected fails, its message naming the redirection.
 * With --tls every node is reached over TLS, with the same CAs, name
 * and client certificate; --user and the password are every node's.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gms_slot.h"
#include "gms_tool_cluster.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_tool_msgs.h"


static int gms_cluster_ask(gms_tool_t *t, const char *seed,
    gms_tool_conn_t *c, unsigned slot, char *err, size_t size);
static int gms_cluster_shards(gms_tool_t *t, const char *seed,
    redisReply *reply, unsigned slot, char *err, size_t size);
static redisReply *gms_cluster_field(redisReply *map, const char *name);
static int gms_cluster_slots(gms_tool_t *t, const char *seed,
    redisReply *reply, unsigned slot, char *err, size_t size);
static int gms_cluster_addr(gms_tool_t *t, const char *seed,
    const char *host, size_t host_len, long long port);
static int gms_cluster_target(const redisReply *reply, char *addr,
    size_t size);


int
gms_tool_cluster_connect(gms_tool_t *t, const char *password,
    size_t password_len)
{
    int               rc;
    char             *list, *seed, *next, err[300], reason[256];
    unsigned          slot;
    gms_tool_conn_t  *c;

    slot = gms_slot((const unsigned char *) t->prefix, t->prefix_len);

    list = strdup(t->cluster);
    if (list == NULL) {
        gms_tool_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    snprintf(err, sizeof(err), "no node given");
    rc = GMS_TOOL_REDIS;

    for (seed = list; seed; seed = next) {
        next = strchr(seed, ',');

        if (next) {
            *next++ = '\0';
        }

        rc = gms_tool_open(t, "--redis-cluster", seed, t->user, password,
                           password_len, &c, reason, sizeof(reason));

        if (rc == GMS_TOOL_USAGE) {
            gms_tool_error(t, "%s", reason);
            goto done;
        }

        if (rc != GMS_TOOL_OK) {
            snprintf(err, sizeof(err), "%.100s: %.190s", seed, reason);
            continue;
        }

        rc = gms_cluster_ask(t, seed, c, slot, err, sizeof(err));

        if (rc != GMS_TOOL_OK) {
            gms_tool_conn_close(c);
            continue;
        }

        /* the seed is the slot's master: its connection is kept */
        if (strcmp(seed, t->master_addr) == 0) {
            t->conn = c;
            t->redis = t->master_addr;
            goto done;
        }

        gms_tool_conn_close(c);

        rc = gms_tool_open(t, "--redis-cluster", t->master_addr, t->user,
                           password, password_len, &t->conn, reason,
                           sizeof(reason));

        if (rc == GMS_TOOL_USAGE) {
            gms_tool_error(t, "%s", reason);
            goto done;
        }

        if (rc == GMS_TOOL_OK) {
            t->redis = t->master_addr;
            goto done;
        }

        snprintf(err, sizeof(err), "%.100s named %.100s: %.90s", seed,
                 t->master_addr, reason);
    }

    gms_tool_error(t, "redis cluster %s: no node led to the master of slot "
                   "%u, the prefix's hash tag's (the last: %s)", t->cluster,
                   slot, err);

done:

    free(list);

    return rc;
}


/* the slot's master as one node's map has it, into t->master_addr */

static int
gms_cluster_ask(gms_tool_t *t, const char *seed, gms_tool_conn_t *c,
    unsigned slot, char *err, size_t size)
{
    int          rc;
    redisReply  *reply;

    reply = gms_tool_conn_command(c, "CLUSTER SHARDS");

    if (reply && reply->type == REDIS_REPLY_ERROR
        && strstr(reply->str, "nknown subcommand"))
    {
        /* Redis 6 and earlier */
        freeReplyObject(reply);
        reply = gms_tool_conn_command(c, "CLUSTER SLOTS");

        if (reply && reply->type == REDIS_REPLY_ARRAY) {
            rc = gms_cluster_slots(t, seed, reply, slot, err, size);
            freeReplyObject(reply);
            return rc;
        }
    }

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        snprintf(err, size, "%s: CLUSTER SHARDS: %s", seed,
                 reply == NULL ? gms_tool_conn_error(c)
                 : reply->type == REDIS_REPLY_ERROR ? reply->str
                 : "unexpected reply");

        if (reply) {
            freeReplyObject(reply);
        }

        return GMS_TOOL_REDIS;
    }

    rc = gms_cluster_shards(t, seed, reply, slot, err, size);

    freeReplyObject(reply);

    return rc;
}


/*
 * CLUSTER SHARDS (RESP2): [ ["slots", [start, end, ...], "nodes",
 * [ ["id", ..., "port", N, "tls-port", N, "ip", ..., "endpoint", ...,
 * "role", "master", ..., "health", "online"], ...] ], ... ]
 */

static int
gms_cluster_shards(gms_tool_t *t, const char *seed, redisReply *reply,
    unsigned slot, char *err, size_t size)
{
    size_t       i, j, k;
    redisReply  *shard, *slots, *nodes, *node, *role, *health, *host, *port;

    for (i = 0; i < reply->elements; i++) {
        shard = reply->element[i];
        slots = gms_cluster_field(shard, "slots");
        nodes = gms_cluster_field(shard, "nodes");

        if (slots == NULL || slots->type != REDIS_REPLY_ARRAY
            || nodes == NULL || nodes->type != REDIS_REPLY_ARRAY)
        {
            continue;
        }

        for (j = 0; j + 1 < slots->elements; j += 2) {
            if (slots->element[j]->type != REDIS_REPLY_INTEGER
                || slots->element[j + 1]->type != REDIS_REPLY_INTEGER
                || (long long) slot < slots->element[j]->integer
                || (long long) slot > slots->element[j + 1]->integer)
            {
                continue;
            }

            for (k = 0; k < nodes->elements; k++) {
                node = nodes->element[k];
                role = gms_cluster_field(node, "role");
                health = gms_cluster_field(node, "health");

                if (role == NULL || role->type != REDIS_REPLY_STRING
                    || strcmp(role->str, "master") != 0
                    || (health && health->type == REDIS_REPLY_STRING
                        && strcmp(health->str, "online") != 0))
                {
                    continue;
                }

                host = gms_cluster_field(node, "endpoint");

                if (host == NULL || host->type != REDIS_REPLY_STRING
                    || host->len == 0 || strcmp(host->str, "?") == 0)
                {
                    host = gms_cluster_field(node, "ip");
                }

                port = gms_cluster_field(node, t->tls ? "tls-port" : "port");

                if (host == NULL || host->type != REDIS_REPLY_STRING
                    || port == NULL || port->type != REDIS_REPLY_INTEGER
                    || gms_cluster_addr(t, seed, host->str, host->len,
                                        port->integer)
                       != 0)
                {
                    snprintf(err, size, "%s: CLUSTER SHARDS: the master of "
                             "slot %u has no %saddress", seed, slot,
                             t->tls ? "TLS " : "");
                    return GMS_TOOL_REDIS;
                }

                return GMS_TOOL_OK;
            }

            snprintf(err, size, "%s: CLUSTER SHARDS: slot %u has no "
                     "master online", seed, slot);
            return GMS_TOOL_REDIS;
        }
    }

    snprintf(err, size, "%s: CLUSTER SHARDS: no shard serves slot %u", seed,
             slot);

    return GMS_TOOL_REDIS;
}


/* a field of a RESP2 map: [name, value, name, value, ...] */

static redisReply *
gms_cluster_field(redisReply *map, const char *name)
{
    size_t  i;

    if (map->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }

    for (i = 0; i + 1 < map->elements; i += 2) {
        if (map->element[i]->type == REDIS_REPLY_STRING
            && strcmp(map->element[i]->str, name) == 0)
        {
            return map->element[i + 1];
        }
    }

    return NULL;
}


/* CLUSTER SLOTS: [ [start, end, [ip, port, id, ...], replicas...], ... ] */

static int
gms_cluster_slots(gms_tool_t *t, const char *seed, redisReply *reply,
    unsigned slot, char *err, size_t size)
{
    size_t       i;
    redisReply  *range, *master;

    for (i = 0; i < reply->elements; i++) {
        range = reply->element[i];

        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3
            || range->element[0]->type != REDIS_REPLY_INTEGER
            || range->element[1]->type != REDIS_REPLY_INTEGER
            || (long long) slot < range->element[0]->integer
            || (long long) slot > range->element[1]->integer)
        {
            continue;
        }

        master = range->element[2];

        if (master->type != REDIS_REPLY_ARRAY || master->elements < 2
            || master->element[0]->type != REDIS_REPLY_STRING
            || master->element[1]->type != REDIS_REPLY_INTEGER
            || gms_cluster_addr(t, seed, master->element[0]->str,
                                master->element[0]->len,
                                master->element[1]->integer)
               != 0)
        {
            snprintf(err, size, "%s: CLUSTER SLOTS: unexpected reply", seed);
            return GMS_TOOL_REDIS;
        }

        return GMS_TOOL_OK;
    }

    snprintf(err, size, "%s: CLUSTER SLOTS: no node serves slot %u", seed,
             slot);

    return GMS_TOOL_REDIS;
}


/*
 * host:port or [ipv6]:port into t->master_addr; an empty host or "?" is
 * the seed's own (a node that does not know how it is reached)
 */

static int
gms_cluster_addr(gms_tool_t *t, const char *seed, const char *host,
    size_t host_len, long long port)
{
    const char  *end;

    if (port <= 0 || port > 65535 || host_len > 256
        || strlen(host) != host_len)
    {
        return -1;
    }

    if (host_len == 0 || strcmp(host, "?") == 0) {
        end = strrchr(seed, ':');

        if (end == NULL || end - seed > 256) {
            return -1;
        }

        snprintf(t->master_addr, sizeof(t->master_addr), "%.*s:%lld",
                 (int) (end - seed), seed, port);
        return 0;
    }

    snprintf(t->master_addr, sizeof(t->master_addr),
             strchr(host, ':') ? "[%s]:%lld" : "%s:%lld", host, port);

    return 0;
}


/*
 * A command (cmd, in Redis's protocol) answered -MOVED or -ASK: MOVED
 * connects t->conn to the node named and sends the command there again,
 * once; ASK sends ASKING and the command to the node named on a
 * connection of its own, once, and keeps t->conn.  Returns the new
 * reply (the old one freed), or the old one when it is neither or the
 * redirection cannot be followed (a connection failure then makes it
 * NULL: the reason is in t->error).
 */

redisReply *
gms_tool_cluster_redirect(gms_tool_t *t, redisReply *reply, const char *cmd,
    size_t len)
{
    int               rc, ask;
    char             *password, addr[300], reason[256];
    size_t            password_len;
    redisReply       *asking;
    gms_tool_conn_t  *c;

    if (t->cluster == NULL || reply == NULL
        || reply->type != REDIS_REPLY_ERROR)
    {
        return reply;
    }

    ask = strncmp(reply->str, "ASK ", 4) == 0;

    if (!ask && strncmp(reply->str, "MOVED ", 6) != 0) {
        return reply;
    }

    if (gms_cluster_target(reply, addr, sizeof(addr)) != 0) {
        return reply;
    }

    if (gms_tool_password(t, &password, &password_len) != GMS_TOOL_OK) {
        return reply;
    }

    rc = gms_tool_open(t, "--redis-cluster", addr, t->user, password,
                       password_len, &c, reason, sizeof(reason));

    if (password) {
        OPENSSL_cleanse(password, password_len);
        free(password);
    }

    if (rc != GMS_TOOL_OK) {
        gms_tool_error(t, "redis %s: %s, and %s: %s", t->redis, reply->str,
                       addr, reason);
        return reply;
    }

    if (ask) {
        gms_tool_conn_append(c, "ASKING");
    }

    gms_tool_conn_append_raw(c, cmd, len);

    if (ask) {
        (void) gms_tool_conn_get_reply(c, &asking);

        if (asking) {
            freeReplyObject(asking);
        }
    }

    freeReplyObject(reply);
    (void) gms_tool_conn_get_reply(c, &reply);

    if (ask) {
        if (reply == NULL) {
            gms_tool_error(t, "redis %s (ASK): %s", addr,
                           gms_tool_conn_error(c));
        }

        gms_tool_conn_close(c);
        return reply;
    }

    /* MOVED: the node named is the slot's master from now on */
    gms_tool_close(t);
    t->conn = c;
    t->replicas_at = 0;
    snprintf(t->master_addr, sizeof(t->master_addr), "%s", addr);
    t->redis = t->master_addr;

    return reply;
}


/* "MOVED 11641 127.0.0.1:7002" or "ASK ...": the address */

static int
gms_cluster_target(const redisReply *reply, char *addr, size_t size)
{
    const char  *p;

    p = strrchr(reply->str, ' ');

    if (p == NULL || p == strchr(reply->str, ' ') || strlen(p + 1) == 0
        || strlen(p + 1) >= size || p[1] == ':')
    {
        return -1;
    }

    snprintf(addr, size, "%s", p + 1);

    return 0;
}


/*
 * What an error reply means in a cluster, for a message: NULL for an
 * error that is none of the cluster's
 */

const char *
gms_tool_cluster_why(gms_tool_t *t, const redisReply *reply)
{
    if (reply == NULL || reply->type != REDIS_REPLY_ERROR) {
        return NULL;
    }

    if (t->cluster == NULL
        && (strncmp(reply->str, "MOVED ", 6) == 0
            || strncmp(reply->str, "ASK ", 4) == 0
            || strncmp(reply->str, "CLUSTERDOWN", 11) == 0))
    {
        return "a node of a Redis Cluster: give --redis-cluster, and a "
               "prefix with a hash tag, as {gms}:";
    }

    if (strncmp(reply->str, "MOVED ", 6) == 0) {
        return "the slot of the prefix's hash tag moved to another node; "
               "the next connection asks the cluster again";
    }

    if (strncmp(reply->str, "ASK ", 4) == 0) {
        return "the slot of the prefix's hash tag is being migrated; "
               "try again once it is done";
    }

    if (strncmp(reply->str, "TRYAGAIN", 8) == 0) {
        return "the slot of the prefix's hash tag is being migrated, its "
               "keys on two nodes; try again once it is done";
    }

    if (strncmp(reply->str, "CLUSTERDOWN", 11) == 0) {
        return "the cluster is down (a failover under way, or slots "
               "unserved)";
    }

    return NULL;
}

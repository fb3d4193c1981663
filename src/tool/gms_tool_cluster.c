
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
#include "gms_topology.h"
#include "gms_tool_cluster.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_tool_msgs.h"


static int gms_cluster_ask(gms_tool_t *t, const char *seed,
    gms_tool_conn_t *c, unsigned slot, char *err, size_t size);
static int gms_cluster_map(gms_tool_t *t, const char *seed,
    redisReply *reply, unsigned slot, int slots, char *err, size_t size);
static void gms_cluster_addr(gms_tool_t *t, const char *host,
    size_t host_len, unsigned port);
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

    /* the connection's commands follow the nodes' redirections */
    t->redirect = gms_tool_cluster_redirect;

    list = strdup(t->cluster);
    if (list == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    snprintf(err, sizeof(err), "no node given");
    rc = GMS_TOOL_REDIS;

    for (seed = list; seed; seed = next) {
        next = strchr(seed, ',');

        if (next) {
            *next++ = '\0';
        }

        rc = gms_tool_conn_peer_open(t, "--redis-cluster", seed, t->user,
                                     password, password_len, &c, reason,
                                     sizeof(reason));

        if (rc == GMS_TOOL_USAGE) {
            gms_tool_msgs_error(t, "%s", reason);
            goto done;
        }

        if (rc != GMS_TOOL_OK) {
            snprintf(err, sizeof(err), "%.100s: %.190s", seed, reason);
            continue;
        }

        rc = gms_cluster_ask(t, seed, c, slot, err, sizeof(err));

        if (rc != GMS_TOOL_OK) {
            gms_tool_conn_peer_close(c);
            continue;
        }

        /* the seed is the slot's master: its connection is kept */
        if (strcmp(seed, t->master_addr) == 0) {
            t->conn = c;
            t->redis = t->master_addr;
            goto done;
        }

        gms_tool_conn_peer_close(c);

        rc = gms_tool_conn_peer_open(t, "--redis-cluster", t->master_addr,
                                     t->user, password, password_len, &t->conn,
                                     reason, sizeof(reason));

        if (rc == GMS_TOOL_USAGE) {
            gms_tool_msgs_error(t, "%s", reason);
            goto done;
        }

        if (rc == GMS_TOOL_OK) {
            t->redis = t->master_addr;
            goto done;
        }

        snprintf(err, sizeof(err), "%.100s named %.100s: %.90s", seed,
                 t->master_addr, reason);
    }

    gms_tool_msgs_error(t, "redis cluster %s: no node led to the master of "
                        "slot %u, the prefix's hash tag's (the last: %s)",
                        t->cluster, slot, err);

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

    reply = gms_tool_conn_peer_command(c, "CLUSTER SHARDS");

    if (reply && reply->type == REDIS_REPLY_ERROR
        && strstr(reply->str, "nknown subcommand"))
    {
        /* Redis 6 and earlier */
        freeReplyObject(reply);
        reply = gms_tool_conn_peer_command(c, "CLUSTER SLOTS");

        if (reply && reply->type == REDIS_REPLY_ARRAY) {
            rc = gms_cluster_map(t, seed, reply, slot, 1, err, size);
            freeReplyObject(reply);
            return rc;
        }
    }

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        snprintf(err, size, "%s: CLUSTER SHARDS: %s", seed,
                 reply == NULL ? gms_tool_conn_peer_error(c)
                 : reply->type == REDIS_REPLY_ERROR ? reply->str
                 : "unexpected reply");

        if (reply) {
            freeReplyObject(reply);
        }

        return GMS_TOOL_REDIS;
    }

    rc = gms_cluster_map(t, seed, reply, slot, 0, err, size);

    freeReplyObject(reply);

    return rc;
}


/*
 * The slot's master in the map a node answered (gms_topology.c reads it,
 * refusing a map not of the documented shape), into t->master_addr: the
 * master must be online.
 */

static int
gms_cluster_map(gms_tool_t *t, const char *seed, redisReply *reply,
    unsigned slot, int slots, char *err, size_t size)
{
    int                   rc;
    const char           *why, *cmd;
    gms_topology_slot_t   s;

    cmd = slots ? "CLUSTER SLOTS" : "CLUSTER SHARDS";

    rc = slots ? gms_topology_slots(reply, slot, &s, &why)
               : gms_topology_shards(reply, slot, t->tls, &s, &why);

    if (rc == GMS_TOPOLOGY_MALFORMED) {
        snprintf(err, size, "%s: %s: unexpected reply (%s)", seed, cmd, why);
        return GMS_TOOL_REDIS;
    }

    if (rc == GMS_TOPOLOGY_UNSERVED) {
        snprintf(err, size, "%s: %s: slot %u: %s", seed, cmd, slot, why);
        return GMS_TOOL_REDIS;
    }

    if (!s.master.online) {
        snprintf(err, size, "%s: %s: slot %u has no master online", seed, cmd,
                 slot);
        return GMS_TOOL_REDIS;
    }

    gms_cluster_addr(t, s.master.host, s.master.host_len, s.master.port);

    return GMS_TOOL_OK;
}


/* host:port or [ipv6]:port into t->master_addr */

static void
gms_cluster_addr(gms_tool_t *t, const char *host, size_t host_len,
    unsigned port)
{
    snprintf(t->master_addr, sizeof(t->master_addr),
             memchr(host, ':', host_len) ? "[%.*s]:%u" : "%.*s:%u",
             (int) host_len, host, port);
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

    if (gms_tool_conn_password(t, &password, &password_len) != GMS_TOOL_OK) {
        return reply;
    }

    rc = gms_tool_conn_peer_open(t, "--redis-cluster", addr, t->user, password,
                                 password_len, &c, reason, sizeof(reason));

    if (password) {
        OPENSSL_cleanse(password, password_len);
        free(password);
    }

    if (rc != GMS_TOOL_OK) {
        gms_tool_msgs_error(t, "redis %s: %s, and %s: %s", t->redis, reply->str,
                            addr, reason);
        return reply;
    }

    if (ask) {
        gms_tool_conn_peer_append(c, "ASKING");
    }

    gms_tool_conn_peer_append_raw(c, cmd, len);

    if (ask) {
        (void) gms_tool_conn_peer_get_reply(c, &asking);

        if (asking) {
            freeReplyObject(asking);
        }
    }

    freeReplyObject(reply);
    (void) gms_tool_conn_peer_get_reply(c, &reply);

    if (ask) {
        if (reply == NULL) {
            gms_tool_msgs_error(t, "redis %s (ASK): %s", addr,
                                gms_tool_conn_peer_error(c));
        }

        gms_tool_conn_peer_close(c);
        return reply;
    }

    /* MOVED: the node named is the slot's master from now on */
    gms_tool_conn_close(t);
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

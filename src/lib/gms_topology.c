
/*
 * Redis's topology replies, parsed once (the Redis Cluster specification;
 * Redis's cluster.c, addNodeDetailsToShardReply and
 * addNodeReplyForClusterSlot; replication.c's roleCommand).  The module
 * (ngx_http_gms_cluster.c, ngx_http_gms_redis.c) and gms-token
 * (gms_tool_cluster.c, gms_tool_sentinel.c) read the same replies and
 * used to read them each their own way; where they differed, the rule
 * here is the stricter one:
 *
 *  - a shard, a range or a node not of the documented shape refuses the
 *    whole map (the tool skipped a shard it could not read, the module a
 *    node); so does a slot range outside 0-16383, or two that overlap,
 *    or a port outside 0-65535, which neither checked;
 *  - a node's address is its "endpoint", else its "ip", else its
 *    "hostname"; empty or "?" is no address (the tool took the seed's
 *    own); a node without one, or without a port, serves no one;
 *  - a node is online when its health says "online" (the module's rule;
 *    the tool took a node without a health for online);
 *  - over TLS, a node's "tls-port", else its "port" (Redis 7.0 announces
 *    a TLS-only node's port as "port"; the tool asked for "tls-port");
 *  - ROLE is one of the three documented shapes, each field of its type
 *    (both read only its first element).
 *
 * The slot's master is the shard's online master, else its first master
 * with an address (the module goes to it; the tool refuses one that is
 * not online); its replica, the first online replica with an address.
 */


#include <string.h>

#include "gms_slot.h"
#include "gms_topology.h"


/* ROLE's elements at most: later releases may add some */
#define GMS_TOPOLOGY_ROLE_MAX  16


static int gms_topology_served(int served, const gms_topology_slot_t *out,
    const char **why);
static int gms_topology_range(const redisReply *start, const redisReply *end,
    unsigned char *taken, const char **why);
static int gms_topology_shard(const redisReply *shard, unsigned slot, int tls,
    unsigned char *taken, gms_topology_slot_t *out, const char **why);
static int gms_topology_shard_node(const redisReply *r, int tls,
    gms_topology_node_t *node, const char **why);
static int gms_topology_slots_node(const redisReply *r,
    gms_topology_node_t *node, const char **why);
static int gms_topology_host(const redisReply *r);
static int gms_topology_master(const redisReply *reply,
    gms_topology_role_t *role, const char **why);
static int gms_topology_replica(const redisReply *reply,
    gms_topology_role_t *role, const char **why);
static int gms_topology_sentinel(const redisReply *reply, const char **why);
static int gms_topology_is(const redisReply *r, int type);
static int gms_topology_says(const redisReply *r, const char *s);


/*
 * CLUSTER SHARDS (Redis 7): [["slots", [start, end, ...], "nodes",
 * [[field, value, ...], ...]], ...]
 */

int
gms_topology_shards(const redisReply *reply, unsigned slot, int tls,
    gms_topology_slot_t *out, const char **why)
{
    size_t         i;
    int            rc, served;
    unsigned char  taken[GMS_SLOTS / 8];

    memset(out, 0, sizeof(gms_topology_slot_t));
    memset(taken, 0, sizeof(taken));

    if (!gms_topology_is(reply, REDIS_REPLY_ARRAY)
        || reply->elements > GMS_SLOTS)
    {
        *why = "not an array of shards";
        return GMS_TOPOLOGY_MALFORMED;
    }

    served = 0;

    for (i = 0; i < reply->elements; i++) {
        rc = gms_topology_shard(reply->element[i], slot, tls, taken, out, why);

        if (rc < 0) {
            return GMS_TOPOLOGY_MALFORMED;
        }

        served |= rc;
    }

    return gms_topology_served(served, out, why);
}


/* 1: the shard serves the slot (out filled), 0: it does not, -1: bad */

static int
gms_topology_shard(const redisReply *shard, unsigned slot, int tls,
    unsigned char *taken, gms_topology_slot_t *out, const char **why)
{
    size_t                j;
    int                   serves;
    redisReply           *k, *v, *slots, *nodes;
    gms_topology_node_t   node;

    if (!gms_topology_is(shard, REDIS_REPLY_ARRAY) || shard->elements % 2
        || shard->elements > 2 * GMS_TOPOLOGY_FIELDS_MAX)
    {
        *why = "a shard is not a map";
        return -1;
    }

    slots = NULL;
    nodes = NULL;

    for (j = 0; j < shard->elements; j += 2) {
        k = shard->element[j];
        v = shard->element[j + 1];

        if (!gms_topology_is(k, REDIS_REPLY_STRING) || v == NULL) {
            *why = "a shard's field is not named";
            return -1;
        }

        if (gms_topology_says(k, "slots")) {
            slots = v;

        } else if (gms_topology_says(k, "nodes")) {
            nodes = v;
        }
    }

    if (!gms_topology_is(slots, REDIS_REPLY_ARRAY) || slots->elements % 2
        || !gms_topology_is(nodes, REDIS_REPLY_ARRAY))
    {
        *why = "a shard without its slots and nodes";
        return -1;
    }

    if (nodes->elements > GMS_TOPOLOGY_NODES_MAX) {
        *why = "a shard of too many nodes";
        return -1;
    }

    serves = 0;

    for (j = 0; j < slots->elements; j += 2) {
        if (gms_topology_range(slots->element[j], slots->element[j + 1],
                               taken, why)
            != 0)
        {
            return -1;
        }

        if (slots->element[j]->integer <= (long long) slot
            && (long long) slot <= slots->element[j + 1]->integer)
        {
            serves = 1;
            out->start = (unsigned) slots->element[j]->integer;
            out->end = (unsigned) slots->element[j + 1]->integer;
        }
    }

    for (j = 0; j < nodes->elements; j++) {
        if (gms_topology_shard_node(nodes->element[j], tls, &node, why)
            != 0)
        {
            return -1;
        }

        if (!serves || node.host == NULL) {
            continue;
        }

        /* an online master over one that is failing */

        if (node.master
            && (out->master.host == NULL
                || (node.online && !out->master.online)))
        {
            out->master = node;

        } else if (!node.master && node.online && out->replica.host == NULL) {
            out->replica = node;
        }
    }

    return serves;
}


/* a node's fields: id, port, tls-port, ip, endpoint, hostname, role ... */

static int
gms_topology_shard_node(const redisReply *r, int tls,
    gms_topology_node_t *node, const char **why)
{
    size_t       j;
    unsigned     port, tls_port, role;
    redisReply  *k, *v, *ip, *endpoint, *hostname;

    memset(node, 0, sizeof(gms_topology_node_t));

    if (!gms_topology_is(r, REDIS_REPLY_ARRAY) || r->elements % 2
        || r->elements > 2 * GMS_TOPOLOGY_FIELDS_MAX)
    {
        *why = "a node is not a map";
        return -1;
    }

    ip = NULL;
    endpoint = NULL;
    hostname = NULL;
    port = 0;
    tls_port = 0;
    role = 0;

    for (j = 0; j < r->elements; j += 2) {
        k = r->element[j];
        v = r->element[j + 1];

        if (!gms_topology_is(k, REDIS_REPLY_STRING) || v == NULL) {
            *why = "a node's field is not named";
            return -1;
        }

        if (gms_topology_says(k, "port") || gms_topology_says(k, "tls-port"))
        {
            if (v->type != REDIS_REPLY_INTEGER || v->integer < 0
                || v->integer > 65535)
            {
                *why = "a node's port is not a port";
                return -1;
            }

            if (gms_topology_says(k, "port")) {
                port = (unsigned) v->integer;

            } else {
                tls_port = (unsigned) v->integer;
            }

            continue;
        }

        if (!gms_topology_says(k, "ip") && !gms_topology_says(k, "endpoint")
            && !gms_topology_says(k, "hostname")
            && !gms_topology_says(k, "role")
            && !gms_topology_says(k, "health"))
        {
            /* id, replication-offset, and what later releases add */
            continue;
        }

        if (v->type != REDIS_REPLY_STRING) {
            *why = "a node's address, role or health is not a string";
            return -1;
        }

        if (gms_topology_says(k, "role")) {
            role = gms_topology_says(v, "master") ? 1
                   : gms_topology_says(v, "replica") ? 2 : 3;

            if (role == 3) {
                *why = "a node's role is neither master nor replica";
                return -1;
            }

            node->master = (role == 1);

        } else if (gms_topology_says(k, "health")) {
            node->online = gms_topology_says(v, "online");

        } else if (!gms_topology_host(v)) {
            *why = "a node's address is not a host";
            return -1;

        } else if (gms_topology_says(k, "ip")) {
            ip = v;

        } else if (gms_topology_says(k, "endpoint")) {
            endpoint = v;

        } else {
            hostname = v;
        }
    }

    if (role == 0) {
        *why = "a node without a role";
        return -1;
    }

    /* where the cluster prefers its clients to go, then what else it said */

    if (endpoint && endpoint->len && !gms_topology_says(endpoint, "?")) {
        ip = endpoint;

    } else if (ip == NULL || ip->len == 0 || gms_topology_says(ip, "?")) {
        ip = (hostname && hostname->len) ? hostname : NULL;
    }

    node->port = (tls && tls_port) ? tls_port : port;

    if (ip && node->port) {
        node->host = ip->str;
        node->host_len = ip->len;
    }

    return 0;
}


/*
 * CLUSTER SLOTS (before Redis 7): [[start, end, [host, port, id, ...],
 * replicas' ...], ...]; failed replicas are left out by the node
 */

int
gms_topology_slots(const redisReply *reply, unsigned slot,
    gms_topology_slot_t *out, const char **why)
{
    size_t               i, j;
    int                  served;
    redisReply          *range;
    unsigned char        taken[GMS_SLOTS / 8];
    gms_topology_node_t  node;

    memset(out, 0, sizeof(gms_topology_slot_t));
    memset(taken, 0, sizeof(taken));

    if (!gms_topology_is(reply, REDIS_REPLY_ARRAY)
        || reply->elements > GMS_SLOTS)
    {
        *why = "not an array of slot ranges";
        return GMS_TOPOLOGY_MALFORMED;
    }

    served = 0;

    for (i = 0; i < reply->elements; i++) {
        range = reply->element[i];

        if (!gms_topology_is(range, REDIS_REPLY_ARRAY) || range->elements < 3
            || range->elements > GMS_TOPOLOGY_NODES_MAX + 2)
        {
            *why = "a range is not [start, end, master, replicas]";
            return GMS_TOPOLOGY_MALFORMED;
        }

        if (gms_topology_range(range->element[0], range->element[1], taken,
                               why)
            != 0)
        {
            return GMS_TOPOLOGY_MALFORMED;
        }

        for (j = 2; j < range->elements; j++) {
            if (gms_topology_slots_node(range->element[j], &node, why) != 0)
            {
                return GMS_TOPOLOGY_MALFORMED;
            }

            if (range->element[0]->integer > (long long) slot
                || (long long) slot > range->element[1]->integer)
            {
                continue;
            }

            if (j == 2) {
                served = 1;
                out->start = (unsigned) range->element[0]->integer;
                out->end = (unsigned) range->element[1]->integer;
                node.master = 1;
                out->master = node;

            } else if (node.host && out->replica.host == NULL) {
                out->replica = node;
            }
        }
    }

    return gms_topology_served(served, out, why);
}


static int
gms_topology_slots_node(const redisReply *r, gms_topology_node_t *node,
    const char **why)
{
    redisReply  *host, *port;

    memset(node, 0, sizeof(gms_topology_node_t));

    if (!gms_topology_is(r, REDIS_REPLY_ARRAY) || r->elements < 2
        || r->elements > GMS_TOPOLOGY_FIELDS_MAX)
    {
        *why = "a range's node is not [host, port, id]";
        return -1;
    }

    host = r->element[0];
    port = r->element[1];

    if (!gms_topology_is(host, REDIS_REPLY_STRING) || !gms_topology_host(host))
    {
        *why = "a range's node has no host";
        return -1;
    }

    if (!gms_topology_is(port, REDIS_REPLY_INTEGER) || port->integer < 0
        || port->integer > 65535)
    {
        *why = "a range's node has no port";
        return -1;
    }

    /* SLOTS lists only the nodes that are not failing */
    node->online = 1;
    node->port = (unsigned) port->integer;

    if (host->len && !gms_topology_says(host, "?") && node->port) {
        node->host = host->str;
        node->host_len = host->len;
    }

    return 0;
}


/* the map read whole: whether it names a master for the slot */

static int
gms_topology_served(int served, const gms_topology_slot_t *out,
    const char **why)
{
    if (!served) {
        *why = "no shard or range serves the slot";
        return GMS_TOPOLOGY_UNSERVED;
    }

    if (out->master.host == NULL) {
        *why = "the slot's master has no address";
        return GMS_TOPOLOGY_UNSERVED;
    }

    return GMS_TOPOLOGY_OK;
}


/* a range's bounds, within the slots, marked taken: overlaps are refused */

static int
gms_topology_range(const redisReply *start, const redisReply *end,
    unsigned char *taken, const char **why)
{
    long long  i;

    if (!gms_topology_is(start, REDIS_REPLY_INTEGER)
        || !gms_topology_is(end, REDIS_REPLY_INTEGER))
    {
        *why = "a slot range's bounds are not integers";
        return -1;
    }

    if (start->integer < 0 || end->integer >= GMS_SLOTS
        || start->integer > end->integer)
    {
        *why = "a slot range is not within 0-16383";
        return -1;
    }

    for (i = start->integer; i <= end->integer; i++) {
        if (taken[i / 8] & (1u << (i % 8))) {
            *why = "two slot ranges overlap";
            return -1;
        }

        taken[i / 8] |= (unsigned char) (1u << (i % 8));
    }

    return 0;
}


/* a host name or address as a node may announce it: printable, short */

static int
gms_topology_host(const redisReply *r)
{
    size_t  i;

    if (r->len > 255) {
        return 0;
    }

    for (i = 0; i < r->len; i++) {
        if ((unsigned char) r->str[i] <= ' ' || r->str[i] == 0x7f) {
            return 0;
        }
    }

    return 1;
}


int
gms_topology_role(const redisReply *reply, gms_topology_role_t *role,
    const char **why)
{
    int                  rc;
    gms_topology_role_e  is;

    memset(role, 0, sizeof(gms_topology_role_t));
    role->offset = -1;

    if (!gms_topology_is(reply, REDIS_REPLY_ARRAY) || reply->elements < 1
        || reply->elements > GMS_TOPOLOGY_ROLE_MAX
        || !gms_topology_is(reply->element[0], REDIS_REPLY_STRING))
    {
        *why = "not a ROLE reply";
        return GMS_TOPOLOGY_MALFORMED;
    }

    if (gms_topology_says(reply->element[0], "master")) {
        rc = gms_topology_master(reply, role, why);
        is = GMS_TOPOLOGY_MASTER;

    } else if (gms_topology_says(reply->element[0], "slave")) {
        rc = gms_topology_replica(reply, role, why);
        is = GMS_TOPOLOGY_REPLICA;

    } else if (gms_topology_says(reply->element[0], "sentinel")) {
        rc = gms_topology_sentinel(reply, why);
        is = GMS_TOPOLOGY_SENTINEL;

    } else {
        *why = "an unknown role";
        return GMS_TOPOLOGY_MALFORMED;
    }

    if (rc != GMS_TOPOLOGY_OK) {
        /* nothing of a refused reply is taken */
        memset(role, 0, sizeof(gms_topology_role_t));
        role->offset = -1;
        return rc;
    }

    role->role = is;
    role->name = reply->element[0]->str;

    return GMS_TOPOLOGY_OK;
}


/* ["master", offset, [[host, port, offset], ...]] */

static int
gms_topology_master(const redisReply *reply, gms_topology_role_t *role,
    const char **why)
{
    size_t       i, j;
    redisReply  *replicas, *r;

    if (reply->elements < 3
        || !gms_topology_is(reply->element[1], REDIS_REPLY_INTEGER)
        || reply->element[1]->integer < 0
        || !gms_topology_is(reply->element[2], REDIS_REPLY_ARRAY))
    {
        *why = "a master's ROLE is not [master, offset, replicas]";
        return GMS_TOPOLOGY_MALFORMED;
    }

    replicas = reply->element[2];

    if (replicas->elements > GMS_TOPOLOGY_NODES_MAX) {
        *why = "a master's ROLE names too many replicas";
        return GMS_TOPOLOGY_MALFORMED;
    }

    for (i = 0; i < replicas->elements; i++) {
        r = replicas->element[i];

        if (!gms_topology_is(r, REDIS_REPLY_ARRAY) || r->elements < 3
            || r->elements > GMS_TOPOLOGY_ROLE_MAX)
        {
            *why = "a master's replica is not [host, port, offset]";
            return GMS_TOPOLOGY_MALFORMED;
        }

        for (j = 0; j < 3; j++) {
            if (!gms_topology_is(r->element[j], REDIS_REPLY_STRING)) {
                *why = "a master's replica is not [host, port, offset]";
                return GMS_TOPOLOGY_MALFORMED;
            }
        }
    }

    role->offset = reply->element[1]->integer;
    role->replicas = replicas->elements;

    return GMS_TOPOLOGY_OK;
}


/* ["slave", host, port, state, offset] */

static int
gms_topology_replica(const redisReply *reply, gms_topology_role_t *role,
    const char **why)
{
    redisReply  *host, *port, *state, *offset;

    if (reply->elements < 5) {
        *why = "a replica's ROLE is not [slave, host, port, state, offset]";
        return GMS_TOPOLOGY_MALFORMED;
    }

    host = reply->element[1];
    port = reply->element[2];
    state = reply->element[3];
    offset = reply->element[4];

    if (!gms_topology_is(host, REDIS_REPLY_STRING) || !gms_topology_host(host)
        || !gms_topology_is(port, REDIS_REPLY_INTEGER)
        || port->integer < 0 || port->integer > 65535
        || !gms_topology_is(state, REDIS_REPLY_STRING)
        || !gms_topology_is(offset, REDIS_REPLY_INTEGER)
        || offset->integer < -1)
    {
        *why = "a replica's ROLE is not [slave, host, port, state, offset]";
        return GMS_TOPOLOGY_MALFORMED;
    }

    role->master_host = host->str;
    role->master_host_len = host->len;
    role->master_port = (unsigned) port->integer;
    role->state = state->str;
    role->state_len = state->len;
    role->offset = offset->integer;

    return GMS_TOPOLOGY_OK;
}


/* ["sentinel", [master name, ...]] */

static int
gms_topology_sentinel(const redisReply *reply, const char **why)
{
    size_t       i;
    redisReply  *names;

    names = (reply->elements >= 2) ? reply->element[1] : NULL;

    if (!gms_topology_is(names, REDIS_REPLY_ARRAY)) {
        *why = "a Sentinel's ROLE is not [sentinel, names]";
        return GMS_TOPOLOGY_MALFORMED;
    }

    for (i = 0; i < names->elements; i++) {
        if (!gms_topology_is(names->element[i], REDIS_REPLY_STRING)) {
            *why = "a Sentinel's ROLE is not [sentinel, names]";
            return GMS_TOPOLOGY_MALFORMED;
        }
    }

    return GMS_TOPOLOGY_OK;
}


/* a reply of that type (a NULL element, which no reader makes, is not) */

static int
gms_topology_is(const redisReply *r, int type)
{
    return r != NULL && r->type == type;
}


static int
gms_topology_says(const redisReply *r, const char *s)
{
    size_t  len;

    len = strlen(s);

    return r->type == REDIS_REPLY_STRING && (size_t) r->len == len
           && memcmp(r->str, s, len) == 0;
}


/*
 * What Redis says of its topology, parsed once for the module and
 * gms-token: a cluster's slot map (CLUSTER SHARDS, CLUSTER SLOTS before
 * Redis 7) and a server's ROLE, from hiredis's reply trees, whoever read
 * them.  Nothing of a reply is trusted: a reply not of the documented
 * shape is refused with the reason.  Strings point into the reply: they
 * live as long as it does.
 */


#ifndef _GMS_TOPOLOGY_H_INCLUDED_
#define _GMS_TOPOLOGY_H_INCLUDED_


#include <stddef.h>

#include <hiredis/hiredis.h>


#define GMS_TOPOLOGY_OK          0
#define GMS_TOPOLOGY_UNSERVED    1     /* a map, but no master for the slot */
#define GMS_TOPOLOGY_MALFORMED  -1     /* not a map or ROLE: see why */

/* a map names at most this many nodes a shard (or range), fields a node */
#define GMS_TOPOLOGY_NODES_MAX   1024
#define GMS_TOPOLOGY_FIELDS_MAX  64


/* a node of the map, where it announced itself */
typedef struct {
    const char            *host;           /* NULL: no usable address */
    size_t                 host_len;
    unsigned               port;           /* 1 to 65535 */
    unsigned               master:1;
    unsigned               online:1;       /* its health says "online" */
} gms_topology_node_t;


/* the nodes that serve one slot */
typedef struct {
    gms_topology_node_t    master;         /* online over failing */
    gms_topology_node_t    replica;        /* the first online, or none */
    unsigned               start;          /* the range holding the slot */
    unsigned               end;
} gms_topology_slot_t;


typedef enum {
    GMS_TOPOLOGY_MASTER = 1,
    GMS_TOPOLOGY_REPLICA,                  /* "slave" */
    GMS_TOPOLOGY_SENTINEL
} gms_topology_role_e;


/*
 * ROLE: ["master", offset, [[host, port, offset], ...]],
 * ["slave", host, port, state, offset] or ["sentinel", [name, ...]]
 */
typedef struct {
    gms_topology_role_e    role;
    const char            *name;           /* as the server said it */
    long long              offset;         /* master: its replication
                                              offset; replica: how far it
                                              applied it (-1: not yet) */
    size_t                 replicas;       /* master: replicas it names */
    const char            *master_host;    /* replica: its master */
    size_t                 master_host_len;
    unsigned               master_port;
    const char            *state;          /* replica: its link, e.g.
                                              "connected", "sync" */
    size_t                 state_len;
} gms_topology_role_t;


/*
 * The master and replica of slot from a whole map, every range and node
 * checked first.  tls: a node's "tls-port" over its "port" (SHARDS); a
 * node answers SLOTS with the ports of the connection's kind itself.
 */
int gms_topology_shards(const redisReply *reply, unsigned slot, int tls,
    gms_topology_slot_t *out, const char **why);
int gms_topology_slots(const redisReply *reply, unsigned slot,
    gms_topology_slot_t *out, const char **why);

int gms_topology_role(const redisReply *reply, gms_topology_role_t *role,
    const char **why);


#endif /* _GMS_TOPOLOGY_H_INCLUDED_ */

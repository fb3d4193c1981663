
/*
 * libFuzzer: bytes from Redis, through hiredis's reader, to the topology
 * parsers (src/lib/gms_topology.c): CLUSTER SHARDS, CLUSTER SLOTS, ROLE.
 * What they accept must be usable as it stands: an address within the
 * reply, printable and short, a port, the slot within its range.
 */


#include <stdlib.h>
#include <string.h>

#include "gms_slot.h"
#include "gms_topology.h"

#include "fuzz_hiredis.h"


/* "{gms}:"'s slot, and the ends of the range */
static const unsigned  gms_fuzz_slots[] = { 11641, 0, GMS_SLOTS - 1 };


static void
gms_fuzz_node(const gms_topology_node_t *n)
{
    size_t  i;

    if (n->host == NULL) {
        return;
    }

    if (n->host_len == 0 || n->host_len > 255 || n->port == 0
        || n->port > 65535)
    {
        abort();
    }

    for (i = 0; i < n->host_len; i++) {
        if ((unsigned char) n->host[i] <= ' ' || n->host[i] == 0x7f) {
            abort();
        }
    }
}


static void
gms_fuzz_map(int rc, const gms_topology_slot_t *s, unsigned slot,
    const char *why)
{
    if (rc != GMS_TOPOLOGY_OK) {
        if (why == NULL || (rc != GMS_TOPOLOGY_UNSERVED
                            && rc != GMS_TOPOLOGY_MALFORMED))
        {
            abort();
        }

        return;
    }

    if (s->master.host == NULL || !s->master.master
        || s->start > slot || slot > s->end || s->end >= GMS_SLOTS
        || (s->replica.host && (s->replica.master || !s->replica.online)))
    {
        abort();
    }

    gms_fuzz_node(&s->master);
    gms_fuzz_node(&s->replica);
}


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    int                   rc;
    void                 *reply;
    size_t                i;
    const char           *why;
    redisReader          *reader;
    gms_topology_role_t   role;
    gms_topology_slot_t   s;

    if (gms_huge_array(data, size)) {
        return 0;
    }

    reader = redisReaderCreate();
    if (reader == NULL) {
        return 0;
    }

    redisReaderFeed(reader, (const char *) data, size);

    while (redisReaderGetReply(reader, &reply) == REDIS_OK && reply != NULL) {

        for (i = 0; i < sizeof(gms_fuzz_slots) / sizeof(unsigned); i++) {
            why = NULL;
            rc = gms_topology_shards(reply, gms_fuzz_slots[i], (int) (i & 1),
                                     &s, &why);
            gms_fuzz_map(rc, &s, gms_fuzz_slots[i], why);

            why = NULL;
            rc = gms_topology_slots(reply, gms_fuzz_slots[i], &s, &why);
            gms_fuzz_map(rc, &s, gms_fuzz_slots[i], why);
        }

        why = NULL;
        rc = gms_topology_role(reply, &role, &why);

        if (rc == GMS_TOPOLOGY_OK) {
            if (role.role < GMS_TOPOLOGY_MASTER
                || role.role > GMS_TOPOLOGY_SENTINEL || role.offset < -1
                || role.master_port > 65535
                || (role.role == GMS_TOPOLOGY_REPLICA
                    && (role.master_host == NULL || role.state == NULL))
                || (role.role == GMS_TOPOLOGY_MASTER && role.offset < 0))
            {
                abort();
            }

        } else if (rc != GMS_TOPOLOGY_MALFORMED || why == NULL) {
            abort();
        }

        freeReplyObject(reply);
    }

    redisReaderFree(reader);

    return 0;
}


/*
 * Unit tests of src/lib/gms_topology.c: CLUSTER SHARDS, CLUSTER SLOTS and
 * ROLE as Redis 6 to 8 and Valkey answer them (redis-cli's RESP2 output of
 * each), and hostile replies refused with their reason.  The replies go
 * through hiredis's own reader, as the module's and the tool's do.
 */


#include <hiredis/hiredis.h>

#include "tap.h"
#include "gms_slot.h"
#include "gms_topology.h"


/* slot 11641: "{gms}:"'s */
#define SLOT  11641


/*
 * A reply written short: "[" and "]" an array, ":N" an integer, "$s" a
 * bulk string ("$" alone: empty), "+s" a status, "-s" an error, "_" nil;
 * tokens between spaces, "~" a space within one.  Into RESP2, then through
 * hiredis's reader.
 */

static const char *
resp_token(const char *p, char *out, size_t *len)
{
    const char  *end;
    size_t       i, n, count, depth;

    while (*p == ' ') {
        p++;
    }

    if (*p == '[') {
        count = 0;
        depth = 0;
        end = p + 1;

        /* the elements at this depth */
        for (;;) {
            while (*end == ' ') {
                end++;
            }

            if (*end == ']' && depth == 0) {
                break;
            }

            if (*end == '[') {
                if (depth++ == 0) {
                    count++;
                }
                end++;
                continue;
            }

            if (*end == ']') {
                depth--;
                end++;
                continue;
            }

            if (depth == 0) {
                count++;
            }

            while (*end && *end != ' ' && *end != ']') {
                end++;
            }
        }

        *len += sprintf(out + *len, "*%zu\r\n", count);
        p++;

        for (i = 0; i < count; i++) {
            p = resp_token(p, out, len);
        }

        while (*p == ' ') {
            p++;
        }

        return p + 1;
    }

    for (n = 0; p[n] && p[n] != ' ' && p[n] != ']'; n++) {
        /* the token */
    }

    if (*p == '_') {
        *len += sprintf(out + *len, "$-1\r\n");

    } else if (*p == '$') {
        *len += sprintf(out + *len, "$%zu\r\n", n - 1);

        for (i = 1; i < n; i++) {
            out[(*len)++] = p[i] == '~' ? ' ' : p[i];
        }

        *len += sprintf(out + *len, "\r\n");

    } else {
        for (i = 0; i < n; i++) {
            out[(*len)++] = p[i] == '~' ? ' ' : p[i];
        }

        *len += sprintf(out + *len, "\r\n");
    }

    return p + n;
}


/* the last reply read: what a result points into lives until the next */
static redisReply  *last;


static redisReply *
reply_of(const char *shape)
{
    void         *reply;
    size_t        len;
    static char   buf[1 << 20];
    redisReader  *reader;

    len = 0;
    resp_token(shape, buf, &len);

    reader = redisReaderCreate();
    redisReaderFeed(reader, buf, len);

    if (redisReaderGetReply(reader, &reply) != REDIS_OK || reply == NULL) {
        printf("# unread: %.*s\n", (int) len, buf);
        reply = NULL;
    }

    redisReaderFree(reader);

    if (last) {
        freeReplyObject(last);
    }

    last = reply;

    return reply;
}


static int
host_is(const gms_topology_node_t *n, const char *host, unsigned port)
{
    return n->host != NULL && n->host_len == strlen(host)
           && memcmp(n->host, host, n->host_len) == 0 && n->port == port;
}


/* a node of CLUSTER SHARDS, as Redis 7.2 lists it */
#define NODE(port, ip, role, health)                                          \
    "[ $id $e1f3 $port :" port " $ip $" ip " $endpoint $" ip                  \
    " $role $" role " $replication-offset :1890 $health $" health " ] "


static int
shards(const char *shape, unsigned slot, int tls, gms_topology_slot_t *out,
    const char **why)
{
    int          rc;
    redisReply  *r;

    *why = NULL;
    r = reply_of(shape);

    if (r == NULL) {
        return -2;
    }

    rc = gms_topology_shards(r, slot, tls, out, why);

    return rc;
}


static void
test_shards(void)
{
    const char           *why;
    gms_topology_slot_t   s;

    ok(shards("[ [ $slots [ :0 :5460 ] $nodes [ " NODE("7000", "10.0.0.1",
              "master", "online") "] ] [ $slots [ :5461 :10922 ] $nodes [ "
              NODE("7001", "10.0.0.2", "master", "online") "] ] "
              "[ $slots [ :10923 :16383 ] $nodes [ "
              NODE("7005", "10.0.0.6", "replica", "online")
              NODE("7002", "10.0.0.3", "master", "online") "] ] ]",
              SLOT, 0, &s, &why) == GMS_TOPOLOGY_OK
       && host_is(&s.master, "10.0.0.3", 7002) && s.master.master
       && s.master.online && host_is(&s.replica, "10.0.0.6", 7005)
       && s.start == 10923 && s.end == 16383,
       "SHARDS: the slot's master and its replica, the range");

    ok(shards("[ [ $slots [ :0 :16383 ] $nodes [ "
              NODE("7000", "10.0.0.1", "master", "failed")
              NODE("7001", "10.0.0.2", "master", "online")
              NODE("7002", "10.0.0.3", "replica", "loading") "] ] ]",
              SLOT, 0, &s, &why) == GMS_TOPOLOGY_OK
       && host_is(&s.master, "10.0.0.2", 7001) && s.replica.host == NULL,
       "SHARDS: an online master over a failing one; no replica loading");

    ok(shards("[ [ $slots [ :0 :16383 ] $nodes [ "
              NODE("7000", "10.0.0.1", "master", "failed") "] ] ]",
              SLOT, 0, &s, &why) == GMS_TOPOLOGY_OK
       && host_is(&s.master, "10.0.0.1", 7000) && !s.master.online,
       "SHARDS: a failing master alone is the master, not online");

    ok(shards("[ [ $slots [ :0 :100 :11000 :12000 ] $nodes [ "
              "[ $port :7000 $tls-port :7100 $ip $10.0.0.1 $endpoint "
              "$node-a.example $hostname $a $role $master $health $online ] "
              "] ] ]", SLOT, 1, &s, &why) == GMS_TOPOLOGY_OK
       && host_is(&s.master, "node-a.example", 7100)
       && s.start == 11000,
       "SHARDS over TLS: the endpoint, the tls-port; a second range");

    ok(shards("[ [ $slots [ :0 :16383 ] $nodes [ "
              "[ $port :7000 $ip $10.0.0.1 $endpoint $? $role $master "
              "$health $online ] ] ] ]", SLOT, 1, &s, &why)
       == GMS_TOPOLOGY_OK && host_is(&s.master, "10.0.0.1", 7000),
       "SHARDS: endpoint ? gives way to the ip; over TLS, the only port");

    ok(shards("[ [ $slots [ :0 :16383 ] $nodes [ "
              "[ $port :7000 $ip $ $endpoint $? $hostname $n.example "
              "$role $master $health $online ] ] ] ]", SLOT, 0, &s, &why)
       == GMS_TOPOLOGY_OK && host_is(&s.master, "n.example", 7000),
       "SHARDS: then the hostname");

    ok(shards("[ [ $slots [ :0 :16383 ] $nodes [ "
              "[ $port :7000 $ip $? $endpoint $? $role $master "
              "$health $online ] ] ] ]", SLOT, 0, &s, &why)
       == GMS_TOPOLOGY_UNSERVED && s.master.host == NULL
       && strcmp(why, "the slot's master has no address")
          == 0,
       "SHARDS: a master without an address serves no one");

    ok(shards("[ [ $slots [ :0 :16383 ] $nodes [ "
              "[ $tls-port :7100 $ip $10.0.0.1 $role $master "
              "$health $online ] ] ] ]", SLOT, 0, &s, &why)
       == GMS_TOPOLOGY_UNSERVED,
       "SHARDS: without TLS, a node with only a tls-port serves no one");

    ok(shards("[ [ $slots [ :0 :100 ] $nodes [ "
              NODE("7000", "10.0.0.1", "master", "online") "] ] "
              "[ $slots [ ] $nodes [ "
              NODE("7001", "10.0.0.2", "master", "online") "] ] ]",
              SLOT, 0, &s, &why) == GMS_TOPOLOGY_UNSERVED
       && strcmp(why, "no shard or range serves the slot") == 0,
       "SHARDS: no shard serves the slot (an empty shard is fine)");

    ok(shards("[ ]", SLOT, 0, &s, &why) == GMS_TOPOLOGY_UNSERVED,
       "SHARDS: an empty map serves nothing");

    ok(shards("[ [ $slots [ :0 :16383 ] $nodes [ "
              "[ $port :7000 $ip $10.0.0.1 $role $master $health $online "
              "$availability-zone $z1 $shard-id [ :1 ] ] ] ] ]",
              SLOT, 0, &s, &why) == GMS_TOPOLOGY_OK,
       "SHARDS: fields it does not know, of any type, are left");
}


/* each: a hostile map and the reason it is refused for */
static const char  *bad_shards[][2] = {
    { ":5", "not an array of shards" },
    { "-ERR~nope", "not an array of shards" },
    { "[ :1 ]", "a shard is not a map" },
    { "[ [ $slots ] ]", "a shard is not a map" },
    { "[ [ :1 :2 ] ]", "a shard's field is not named" },
    { "[ [ $slots $abc ] ]", "a shard without its slots and nodes" },
    { "[ [ $slots [ :0 ] $nodes [ ] ] ]",
      "a shard without its slots and nodes" },
    { "[ [ $slots [ :0 :16383 ] ] ]", "a shard without its slots and nodes" },
    { "[ [ $slots [ :0 $x ] $nodes [ ] ] ]",
      "a slot range's bounds are not integers" },
    { "[ [ $slots [ :0 :16384 ] $nodes [ ] ] ]",
      "a slot range is not within 0-16383" },
    { "[ [ $slots [ :-1 :5 ] $nodes [ ] ] ]",
      "a slot range is not within 0-16383" },
    { "[ [ $slots [ :9 :5 ] $nodes [ ] ] ]",
      "a slot range is not within 0-16383" },
    { "[ [ $slots [ :0 :100 :50 :200 ] $nodes [ ] ] ]",
      "two slot ranges overlap" },
    { "[ [ $slots [ :0 :100 ] $nodes [ ] ] [ $slots [ :100 :100 ] "
      "$nodes [ ] ] ]", "two slot ranges overlap" },
    { "[ [ $slots [ :0 :16383 ] $nodes [ :1 ] ] ]", "a node is not a map" },
    { "[ [ $slots [ :0 :16383 ] $nodes [ [ $port ] ] ] ]",
      "a node is not a map" },
    { "[ [ $slots [ :0 :16383 ] $nodes [ [ :1 :1 ] ] ] ]",
      "a node's field is not named" },
    { "[ [ $slots [ :0 :16383 ] $nodes [ [ $port :70000 $ip $a "
      "$role $master ] ] ] ]", "a node's port is not a port" },
    { "[ [ $slots [ :0 :16383 ] $nodes [ [ $port :-1 $ip $a "
      "$role $master ] ] ] ]", "a node's port is not a port" },
    { "[ [ $slots [ :0 :16383 ] $nodes [ [ $port $7000 $ip $a "
      "$role $master ] ] ] ]", "a node's port is not a port" },
    { "[ [ $slots [ :0 :16383 ] $nodes [ [ $port :7000 $ip :1 "
      "$role $master ] ] ] ]",
      "a node's address, role or health is not a string" },
    { "[ [ $slots [ :0 :16383 ] $nodes [ [ $port :7000 $ip $a "
      "$role $king ] ] ] ]", "a node's role is neither master nor replica" },
    { "[ [ $slots [ :0 :16383 ] $nodes [ [ $port :7000 $ip $a ] ] ] ]",
      "a node without a role" },
    { "[ [ $slots [ :0 :16383 ] $nodes [ [ $port :7000 $ip $a~b "
      "$role $master ] ] ] ]", "a node's address is not a host" },
};


static void
test_bad_shards(void)
{
    size_t                i;
    const char           *why;
    gms_topology_slot_t   s;

    for (i = 0; i < sizeof(bad_shards) / sizeof(bad_shards[0]); i++) {
        ok(shards(bad_shards[i][0], SLOT, 0, &s, &why)
           == GMS_TOPOLOGY_MALFORMED && why
           && strcmp(why, bad_shards[i][1]) == 0,
           "SHARDS refused: %s (%s)", bad_shards[i][1], bad_shards[i][0]);
    }
}


static int
slots(const char *shape, gms_topology_slot_t *out, const char **why)
{
    int          rc;
    redisReply  *r;

    *why = NULL;
    r = reply_of(shape);

    if (r == NULL) {
        return -2;
    }

    rc = gms_topology_slots(r, SLOT, out, why);

    return rc;
}


static void
test_slots(void)
{
    const char           *why;
    gms_topology_slot_t   s;

    ok(slots("[ [ :0 :5460 [ $10.0.0.1 :7000 $id1 ] [ $10.0.0.4 :7003 $id4 ] ] "
             "[ :10923 :16383 [ $10.0.0.3 :7002 $id3 [ $hostname $c ] ] "
             "[ $10.0.0.6 :7005 $id6 ] ] ]", &s, &why) == GMS_TOPOLOGY_OK
       && host_is(&s.master, "10.0.0.3", 7002) && s.master.master
       && s.master.online && host_is(&s.replica, "10.0.0.6", 7005)
       && s.replica.online && !s.replica.master && s.start == 10923,
       "SLOTS: the slot's master and replica (Redis 7's metadata left)");

    ok(slots("[ [ :0 :16383 [ $10.0.0.1 :7000 $id1 ] [ $? :7003 $id4 ] "
             "[ $10.0.0.5 :7004 $id5 ] ] ]", &s, &why) == GMS_TOPOLOGY_OK
       && host_is(&s.replica, "10.0.0.5", 7004),
       "SLOTS: a replica without an address is passed over");

    ok(slots("[ [ :0 :16383 [ $? :7000 $id1 ] ] ]", &s, &why)
       == GMS_TOPOLOGY_UNSERVED
       && strcmp(why, "the slot's master has no address") == 0,
       "SLOTS: a master at ? serves no one");

    ok(slots("[ [ :0 :16383 [ $ :7000 $id1 ] ] ]", &s, &why)
       == GMS_TOPOLOGY_UNSERVED, "SLOTS: nor one at an empty host");

    ok(slots("[ [ :0 :100 [ $a :1 ] ] ]", &s, &why) == GMS_TOPOLOGY_UNSERVED
       && strcmp(why, "no shard or range serves the slot") == 0,
       "SLOTS: no range holds the slot");

    ok(slots(":5", &s, &why) == GMS_TOPOLOGY_MALFORMED
       && strcmp(why, "not an array of slot ranges") == 0,
       "SLOTS refused: not an array");
    ok(slots("[ [ :0 :16383 ] ]", &s, &why) == GMS_TOPOLOGY_MALFORMED
       && strcmp(why, "a range is not [start, end, master, replicas]") == 0,
       "SLOTS refused: a range without a master");
    ok(slots("[ [ :0 $x [ $a :1 ] ] ]", &s, &why) == GMS_TOPOLOGY_MALFORMED
       && strcmp(why, "a slot range's bounds are not integers") == 0,
       "SLOTS refused: a bound not an integer");
    ok(slots("[ [ :0 :100 [ $a :1 ] ] [ :100 :200 [ $b :1 ] ] ]", &s, &why)
       == GMS_TOPOLOGY_MALFORMED
       && strcmp(why, "two slot ranges overlap") == 0,
       "SLOTS refused: overlapping ranges");
    ok(slots("[ [ :0 :16383 [ $a :65536 ] ] ]", &s, &why)
       == GMS_TOPOLOGY_MALFORMED
       && strcmp(why, "a range's node has no port") == 0,
       "SLOTS refused: port 65536");
    ok(slots("[ [ :0 :16383 [ $a :1 ] [ :1 :1 ] ] ]", &s, &why)
       == GMS_TOPOLOGY_MALFORMED
       && strcmp(why, "a range's node has no host") == 0,
       "SLOTS refused: a replica's host not a string");
    ok(slots("[ [ :0 :16383 [ $a ] ] ]", &s, &why) == GMS_TOPOLOGY_MALFORMED
       && strcmp(why, "a range's node is not [host, port, id]") == 0,
       "SLOTS refused: a node without its port");
    ok(slots("[ [ :0 :100 [ $a :1 ] ] [ :200 :300 :1 ] ]", &s, &why)
       == GMS_TOPOLOGY_MALFORMED,
       "SLOTS refused: a bad range after the slot's");
}


/* a map of 2000 nodes, and one of 16385 shards, refused before a lookup */

static void
test_huge(void)
{
    char                 *p;
    size_t                i;
    const char           *why;
    gms_topology_slot_t   s;
    static char           shape[1 << 19];

    p = shape;
    p += sprintf(p, "[ [ $slots [ :0 :16383 ] $nodes [ ");

    for (i = 0; i < 2000; i++) {
        p += sprintf(p, "[ $role $replica ] ");
    }

    sprintf(p, "] ] ]");

    ok(shards(shape, SLOT, 0, &s, &why) == GMS_TOPOLOGY_MALFORMED
       && strcmp(why, "a shard of too many nodes") == 0,
       "SHARDS: 2000 nodes in a shard refused");

    p = shape;
    p += sprintf(p, "[ ");

    for (i = 0; i < GMS_SLOTS + 1; i++) {
        p += sprintf(p, "[ ] ");
    }

    sprintf(p, "]");

    ok(shards(shape, SLOT, 0, &s, &why) == GMS_TOPOLOGY_MALFORMED
       && strcmp(why, "not an array of shards") == 0,
       "SHARDS: more shards than slots refused");

    p = shape;
    p += sprintf(p, "[ ");

    for (i = 0; i < GMS_SLOTS; i++) {
        p += sprintf(p, "[ :%zu :%zu [ $h :1 ] ] ", i, i);
    }

    sprintf(p, "]");

    ok(slots(shape, &s, &why) == GMS_TOPOLOGY_OK && s.start == SLOT
       && s.end == SLOT,
       "SLOTS: 16384 ranges of one slot each");
}


static int
role(const char *shape, gms_topology_role_t *out, const char **why)
{
    int          rc;
    redisReply  *r;

    *why = NULL;
    r = reply_of(shape);

    if (r == NULL) {
        return -2;
    }

    rc = gms_topology_role(r, out, why);

    return rc;
}


static void
test_role(void)
{
    const char           *why;
    gms_topology_role_t   r;

    ok(role("[ $master :3129659 [ [ $127.0.0.1 $9001 $3129242 ] "
            "[ $127.0.0.1 $9002 $3129543 ] ] ]", &r, &why)
       == GMS_TOPOLOGY_OK && r.role == GMS_TOPOLOGY_MASTER
       && r.offset == 3129659 && r.replicas == 2,
       "ROLE of a master: its offset, its replicas");

    ok(role("[ $master :0 [ ] ]", &r, &why) == GMS_TOPOLOGY_OK
       && r.offset == 0 && r.replicas == 0, "ROLE of a master alone");

    ok(role("[ $slave $127.0.0.1 :6379 $connected :1000000000000 ]", &r,
            &why) == GMS_TOPOLOGY_OK && r.role == GMS_TOPOLOGY_REPLICA
       && r.master_host_len == 9 && memcmp(r.master_host, "127.0.0.1", 9) == 0
       && r.master_port == 6379 && r.state_len == 9
       && memcmp(r.state, "connected", 9) == 0
       && r.offset == 1000000000000LL && strcmp(r.name, "slave") == 0,
       "ROLE of a replica: its master, its link, its offset");

    ok(role("[ $slave $10.0.0.1 :6379 $connect :-1 ]", &r, &why)
       == GMS_TOPOLOGY_OK && r.offset == -1,
       "ROLE of a replica not yet connected: offset -1");

    ok(role("[ $sentinel [ $mymaster $other ] ]", &r, &why)
       == GMS_TOPOLOGY_OK && r.role == GMS_TOPOLOGY_SENTINEL,
       "ROLE of a Sentinel");

    ok(role("[ $master :5 [ ] $later ]", &r, &why) == GMS_TOPOLOGY_OK,
       "ROLE: a later release's extra element is left");
}


static const char  *bad_roles[][2] = {
    { ":1", "not a ROLE reply" },
    { "[ ]", "not a ROLE reply" },
    { "[ :1 ]", "not a ROLE reply" },
    { "[ +master :0 [ ] ]", "not a ROLE reply" },
    { "[ $king ]", "an unknown role" },
    { "[ $master ]", "a master's ROLE is not [master, offset, replicas]" },
    { "[ $master $0 [ ] ]",
      "a master's ROLE is not [master, offset, replicas]" },
    { "[ $master :-5 [ ] ]",
      "a master's ROLE is not [master, offset, replicas]" },
    { "[ $master :0 $none ]",
      "a master's ROLE is not [master, offset, replicas]" },
    { "[ $master :0 [ [ $h $1 ] ] ]",
      "a master's replica is not [host, port, offset]" },
    { "[ $master :0 [ [ $h :1 $2 ] ] ]",
      "a master's replica is not [host, port, offset]" },
    { "[ $slave $h :1 $connected ]",
      "a replica's ROLE is not [slave, host, port, state, offset]" },
    { "[ $slave $h $1 $connected :5 ]",
      "a replica's ROLE is not [slave, host, port, state, offset]" },
    { "[ $slave $h :99999 $connected :5 ]",
      "a replica's ROLE is not [slave, host, port, state, offset]" },
    { "[ $slave $h :1 :1 :5 ]",
      "a replica's ROLE is not [slave, host, port, state, offset]" },
    { "[ $slave $h :1 $connected $5 ]",
      "a replica's ROLE is not [slave, host, port, state, offset]" },
    { "[ $slave $h~x :1 $connected :5 ]",
      "a replica's ROLE is not [slave, host, port, state, offset]" },
    { "[ $sentinel ]", "a Sentinel's ROLE is not [sentinel, names]" },
    { "[ $sentinel [ :1 ] ]", "a Sentinel's ROLE is not [sentinel, names]" },
};


static void
test_bad_roles(void)
{
    char                  shape[2048], *p;
    size_t                i;
    const char           *why;
    gms_topology_role_t   r;

    for (i = 0; i < sizeof(bad_roles) / sizeof(bad_roles[0]); i++) {
        ok(role(bad_roles[i][0], &r, &why) == GMS_TOPOLOGY_MALFORMED && why
           && strcmp(why, bad_roles[i][1]) == 0 && r.role == 0
           && r.name == NULL && r.offset == -1 && r.replicas == 0,
           "ROLE refused: %s (%s)", bad_roles[i][1], bad_roles[i][0]);
    }

    p = shape;
    p += sprintf(p, "[ $master :0 [ ] ");

    for (i = 0; i < 20; i++) {
        p += sprintf(p, ":1 ");
    }

    sprintf(p, "]");

    ok(role(shape, &r, &why) == GMS_TOPOLOGY_MALFORMED
       && strcmp(why, "not a ROLE reply") == 0,
       "ROLE refused: 23 elements");
}


int
main(void)
{
    test_shards();
    test_bad_shards();
    test_huge();
    test_slots();
    test_role();
    test_bad_roles();

    if (last) {
        freeReplyObject(last);
    }

    return done_testing();
}

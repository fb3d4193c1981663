
/*
 * gms-token follow's lease, <prefix>lease (docs/redis-contract.md).
 * Several followers may share one Redis, one beside each edge: the one
 * whose value the key holds works, the others stand by and write nothing
 * but their attempts to take it.  Redis's recipe for a lease: a random
 * value per process (host:pid:nonce), set only where there is none, with
 * an expiry (PX), renewed and released only by the process whose value
 * it holds.  A follower that dies keeps the lease until PX runs out; a
 * standby learns how long that is (PTTL) and tries again then, so it
 * takes over at most PX after the holder's last renewal.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "gms_contract.h"
#include "gms_follow_lease.h"
#include "gms_follow_cycle.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_tool_msgs.h"


/*
 * KEYS[1] the lease, KEYS[2] <prefix>sync; ARGV[1] this follower's value,
 * ARGV[2] PX, ARGV[3] now (ms since the epoch).  A script runs alone: its
 * GET then SET is SET NX PX, and a renewal extends only this follower's
 * lease (compare and set).  Whoever takes the lease names itself in
 * <prefix>sync in the same step.  {1}: renewed; {2}: taken; {0, value,
 * PTTL}: another's.
 */
static const char  gms_follow_lease_script[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if v == ARGV[1] then\n"
    "    redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "    return {1}\n"
    "end\n"
    "if v then return {0, v, redis.call('PTTL', KEYS[1])} end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "redis.call('HSET', KEYS[2], 'holder', ARGV[1], 'holder_since', ARGV[3])\n"
    "return {2}\n";

/*
 * The same keys; ARGV[1] this follower's value.  Deletes the lease only
 * if it is this follower's (compare and delete), and then its name in
 * <prefix>sync: nobody works until a standby takes the lease.
 */
static const char  gms_follow_release_script[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "redis.call('DEL', KEYS[1])\n"
    "if redis.call('HGET', KEYS[2], 'holder') == ARGV[1] then\n"
    "    redis.call('HSET', KEYS[2], 'holder', '')\n"
    "end\n"
    "return 1\n";


static int gms_follow_lease_keys(gms_tool_t *t, char **lease,
    size_t *lease_len, char **sync, size_t *sync_len);


/*
 * host:pid:nonce: the host and pid say which follower it is, the nonce
 * tells apart two processes with the same pid (a restart in a container
 * is pid 1 again).
 */

void
gms_follow_lease_init(gms_follow_lease_t *l)
{
    long           r;
    char           host[256];
    unsigned char  nonce[8];

    memset(l, 0, sizeof(gms_follow_lease_t));

    if (gethostname(host, sizeof(host)) != 0) {
        snprintf(host, sizeof(host), "unknown");
    }

    host[sizeof(host) - 1] = '\0';

    if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
        /* not a secret: it only has to differ from a previous run's */
        r = random() ^ (long) gms_follow_monotonic();
        memcpy(nonce, &r, sizeof(nonce) < sizeof(r) ? sizeof(nonce)
                                                    : sizeof(r));
    }

    snprintf(l->me, sizeof(l->me),
             "%s:%ld:%02x%02x%02x%02x%02x%02x%02x%02x", host,
             (long) getpid(), nonce[0], nonce[1], nonce[2], nonce[3],
             nonce[4], nonce[5], nonce[6], nonce[7]);

    gms_follow_clean(l->me);
    l->left = -1;
}


/* takes or renews the lease for px ms; an exit code, and what it found */

int
gms_follow_lease_keep(gms_tool_t *t, gms_follow_lease_t *l, int64_t px,
    gms_follow_lease_e *event)
{
    int          rc;
    char        *lease, *sync;
    size_t       lease_len, sync_len, len;
    redisReply  *reply, *code, *value, *left;

    if (t->conn == NULL) {
        rc = gms_tool_connect(t);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    if (gms_follow_lease_keys(t, &lease, &lease_len, &sync, &sync_len)
        != 0)
    {
        return GMS_TOOL_REDIS;
    }

    reply = gms_tool_command(t, "EVAL %s 2 %b %b %s %lld %lld",
                             gms_follow_lease_script, lease, lease_len,
                             sync, sync_len, l->me, (long long) px,
                             (long long) gms_tool_now_ms());
    free(lease);
    free(sync);

    if (gms_tool_reply_error(t, reply, "the lease") != 0) {
        return GMS_TOOL_REDIS;
    }

    code = reply->type == REDIS_REPLY_ARRAY && reply->elements > 0
           ? reply->element[0] : NULL;

    if (code == NULL || code->type != REDIS_REPLY_INTEGER
        || (code->integer == 0
            && (reply->elements != 3
                || reply->element[1]->type != REDIS_REPLY_STRING
                || reply->element[2]->type != REDIS_REPLY_INTEGER)))
    {
        gms_tool_error(t, "redis %s: the lease: an unexpected reply",
                       t->redis);
        freeReplyObject(reply);
        return GMS_TOOL_REDIS;
    }

    if (code->integer == 1) {
        *event = l->held ? GMS_FOLLOW_LEASE_KEPT : GMS_FOLLOW_LEASE_TAKEN;
        l->held = 1;

    } else if (code->integer == 2) {
        *event = l->held ? GMS_FOLLOW_LEASE_RETAKEN : GMS_FOLLOW_LEASE_TAKEN;
        l->held = 1;

    } else {
        value = reply->element[1];
        left = reply->element[2];

        len = value->len < sizeof(l->holder) - 1 ? value->len
                                                 : sizeof(l->holder) - 1;

        if (l->held) {
            *event = GMS_FOLLOW_LEASE_LOST;

        } else if (!l->seen || strlen(l->holder) != len
                   || memcmp(l->holder, value->str, len) != 0)
        {
            *event = GMS_FOLLOW_LEASE_STANDBY;

        } else {
            *event = GMS_FOLLOW_LEASE_WAITING;
        }

        memcpy(l->holder, value->str, len);
        l->holder[len] = '\0';
        gms_follow_clean(l->holder);

        l->left = left->integer;
        l->held = 0;
        l->seen = 1;
    }

    if (l->held) {
        l->holder[0] = '\0';
        l->seen = 0;
        l->left = -1;
    }

    freeReplyObject(reply);

    return GMS_TOOL_OK;
}


/* on the way out: a standby need not wait for PX to run out */

int
gms_follow_lease_release(gms_tool_t *t, gms_follow_lease_t *l)
{
    int          rc;
    char        *lease, *sync;
    size_t       lease_len, sync_len;
    redisReply  *reply;

    if (!l->held) {
        return GMS_TOOL_OK;
    }

    l->held = 0;

    if (t->conn == NULL) {
        rc = gms_tool_connect(t);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    if (gms_follow_lease_keys(t, &lease, &lease_len, &sync, &sync_len)
        != 0)
    {
        return GMS_TOOL_REDIS;
    }

    reply = gms_tool_command(t, "EVAL %s 2 %b %b %s",
                             gms_follow_release_script, lease, lease_len,
                             sync, sync_len, l->me);
    free(lease);
    free(sync);

    if (gms_tool_reply_error(t, reply, "the lease") != 0) {
        return GMS_TOOL_REDIS;
    }

    rc = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1
         ? GMS_TOOL_OK : GMS_TOOL_NOT_FOUND;

    freeReplyObject(reply);

    return rc;
}


static int
gms_follow_lease_keys(gms_tool_t *t, char **lease, size_t *lease_len,
    char **sync, size_t *sync_len)
{
    *lease = gms_tool_key(t, GMS_KEY_LEASE, "", 0, lease_len);
    if (*lease == NULL) {
        return -1;
    }

    *sync = gms_tool_key(t, GMS_KEY_SYNC, "", 0, sync_len);
    if (*sync == NULL) {
        free(*lease);
        return -1;
    }

    return 0;
}

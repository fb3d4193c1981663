
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
 *
 * The follower's threads block for as long as a token cycle or a mirror
 * takes (a minute at 100,000 tokens), far longer than PX: the holder's
 * lease is kept by a keeper of its own.  Its thread renews the lease
 * every so often on its own Redis connection; finding another's value,
 * it says the lease is lost and stops the work (the lost callback: the
 * working threads abandon a GMS request under way and write nothing
 * more).  A second thread, the watch, gives the lease up once it went
 * unrenewed for PX less GMS_FOLLOW_KEEPER_SAFETY, even while the first
 * still waits for Redis (a connection that hangs): past PX a standby may
 * have taken it, and the holder cannot know.  Both threads start with
 * the signals blocked: they go to the main thread.
 */


#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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


/*
 * The keeper gives the lease up this long before it could run out: the
 * working threads abandon a GMS request within a second (libcurl's
 * progress callback), before a standby may take over.
 */
#define GMS_FOLLOW_KEEPER_SAFETY  1000


static int gms_follow_lease_keys(gms_tool_t *t, char **lease,
    size_t *lease_len, char **sync, size_t *sync_len);
static int gms_follow_lease_watch(gms_tool_t *t, gms_follow_lease_t *l,
    int64_t px, const char *lease, size_t lease_len, const char *sync,
    size_t sync_len, long long *code, char *found, size_t size,
    long long *left);
static int gms_follow_release_watch(gms_tool_t *t, gms_follow_lease_t *l,
    const char *lease, size_t lease_len, const char *sync, size_t sync_len,
    long long *released);
static int gms_follow_lease_read(gms_tool_t *t, redisReply **reply);
static int gms_follow_lease_unwatch(gms_tool_t *t);
static void *gms_follow_keeper_thread(void *data);
static void gms_follow_keeper_renewed(gms_follow_keeper_t *k,
    const gms_follow_lease_t *l, int rc, gms_follow_lease_e event,
    int64_t sent);
static void *gms_follow_keeper_watch(void *data);
static void gms_follow_keeper_drop(gms_follow_keeper_t *k);
static void gms_follow_keeper_wait(gms_follow_keeper_t *k, int64_t until);


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
        r = random() ^ (long) gms_follow_cycle_monotonic();
        memcpy(nonce, &r, sizeof(nonce) < sizeof(r) ? sizeof(nonce)
                                                    : sizeof(r));
    }

    snprintf(l->me, sizeof(l->me),
             "%s:%ld:%02x%02x%02x%02x%02x%02x%02x%02x", host,
             (long) getpid(), nonce[0], nonce[1], nonce[2], nonce[3],
             nonce[4], nonce[5], nonce[6], nonce[7]);

    gms_follow_cycle_clean(l->me);
    l->left = -1;
}


/* takes or renews the lease for px ms; an exit code, and what it found */

int
gms_follow_lease_keep(gms_tool_t *t, gms_follow_lease_t *l, int64_t px,
    gms_follow_lease_e *event)
{
    int          rc;
    char        *lease, *sync, found[GMS_FOLLOW_LEASE_MAX];
    size_t       lease_len, sync_len, len;
    long long    c, left;
    redisReply  *reply, *code, *value;

    if (t->conn == NULL) {
        rc = gms_tool_redis_connect(t);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    if (gms_follow_lease_keys(t, &lease, &lease_len, &sync, &sync_len)
        != 0)
    {
        return GMS_TOOL_REDIS;
    }

    reply = NULL;

    if (!t->noscript) {
        reply = gms_tool_conn_command(t, "EVAL %s 2 %b %b %s %lld %lld",
                                      gms_follow_lease_script, lease,
                                      lease_len, sync, sync_len, l->me,
                                      (long long) px,
                                      (long long) gms_tool_redis_now_ms());

        if (gms_tool_redis_refused(t, reply)) {
            reply = NULL;
        }
    }

    if (t->noscript) {
        /* the script's compare and set, with WATCH */
        rc = gms_follow_lease_watch(t, l, px, lease, lease_len, sync,
                                    sync_len, &c, found, sizeof(found),
                                    &left);
        free(lease);
        free(sync);

        if (rc != 0) {
            return GMS_TOOL_REDIS;
        }

        len = strlen(found);

    } else {
        free(lease);
        free(sync);

        if (gms_tool_redis_reply_error(t, reply, "the lease") != 0) {
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
            gms_tool_msgs_error(t, "redis %s: the lease: an unexpected "
                                "reply", t->redis);
            freeReplyObject(reply);
            return GMS_TOOL_REDIS;
        }

        c = code->integer;
        value = c == 0 ? reply->element[1] : NULL;
        left = c == 0 ? reply->element[2]->integer : -1;
        len = 0;

        if (value) {
            len = value->len < sizeof(found) - 1 ? value->len
                                                 : sizeof(found) - 1;
            memcpy(found, value->str, len);
        }

        freeReplyObject(reply);
    }

    found[len] = '\0';

    if (c == 1) {
        *event = l->held ? GMS_FOLLOW_LEASE_KEPT : GMS_FOLLOW_LEASE_TAKEN;
        l->held = 1;

    } else if (c == 2) {
        *event = l->held ? GMS_FOLLOW_LEASE_RETAKEN : GMS_FOLLOW_LEASE_TAKEN;
        l->held = 1;

    } else {
        if (l->held) {
            *event = GMS_FOLLOW_LEASE_LOST;

        } else if (!l->seen || strlen(l->holder) != len
                   || memcmp(l->holder, found, len) != 0)
        {
            *event = GMS_FOLLOW_LEASE_STANDBY;

        } else {
            *event = GMS_FOLLOW_LEASE_WAITING;
        }

        memcpy(l->holder, found, len + 1);
        gms_follow_cycle_clean(l->holder);

        l->left = left;
        l->held = 0;
        l->seen = 1;
    }

    if (l->held) {
        l->holder[0] = '\0';
        l->seen = 0;
        l->left = -1;
    }

    return GMS_TOOL_OK;
}


/* on the way out: a standby need not wait for PX to run out */

int
gms_follow_lease_release(gms_tool_t *t, gms_follow_lease_t *l)
{
    int          rc;
    char        *lease, *sync;
    size_t       lease_len, sync_len;
    long long    released;
    redisReply  *reply;

    if (!l->held) {
        return GMS_TOOL_OK;
    }

    l->held = 0;

    if (t->conn == NULL) {
        rc = gms_tool_redis_connect(t);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    if (gms_follow_lease_keys(t, &lease, &lease_len, &sync, &sync_len)
        != 0)
    {
        return GMS_TOOL_REDIS;
    }

    reply = NULL;

    if (!t->noscript) {
        reply = gms_tool_conn_command(t, "EVAL %s 2 %b %b %s",
                                      gms_follow_release_script, lease,
                                      lease_len, sync, sync_len, l->me);

        if (gms_tool_redis_refused(t, reply)) {
            reply = NULL;
        }
    }

    if (t->noscript) {
        rc = gms_follow_release_watch(t, l, lease, lease_len, sync, sync_len,
                                      &released);
        free(lease);
        free(sync);

        if (rc != 0) {
            return GMS_TOOL_REDIS;
        }

        return released ? GMS_TOOL_OK : GMS_TOOL_NOT_FOUND;
    }

    free(lease);
    free(sync);

    if (gms_tool_redis_reply_error(t, reply, "the lease") != 0) {
        return GMS_TOOL_REDIS;
    }

    rc = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1
         ? GMS_TOOL_OK : GMS_TOOL_NOT_FOUND;

    freeReplyObject(reply);

    return rc;
}


/*
 * Without scripts, gms_follow_lease_script's step: the lease read under
 * WATCH, then renewed (PEXPIRE), or taken (SET PX and the holder's name
 * in <prefix>sync) in a MULTI/EXEC that runs only if nobody wrote the
 * lease in between; else read again.  *code as the script's, with the
 * other's value in found and its PTTL in *left.
 */

static int
gms_follow_lease_watch(gms_tool_t *t, gms_follow_lease_t *l, int64_t px,
    const char *lease, size_t lease_len, const char *sync, size_t sync_len,
    long long *code, char *found, size_t size, long long *left)
{
    int          i, mine;
    size_t       len;
    redisReply  *v, *ttl, *done;

    for (i = 0; i < GMS_TOOL_WATCH_TRIES; i++) {
        gms_tool_conn_append(t, "WATCH %b", lease, lease_len);
        gms_tool_conn_append(t, "GET %b", lease, lease_len);
        gms_tool_conn_append(t, "PTTL %b", lease, lease_len);

        if (gms_follow_lease_read(t, &v) != 0) {
            return -1;
        }

        freeReplyObject(v);

        if (gms_follow_lease_read(t, &v) != 0) {
            return -1;
        }

        if (gms_follow_lease_read(t, &ttl) != 0) {
            freeReplyObject(v);
            return -1;
        }

        mine = v->type == REDIS_REPLY_STRING && strlen(l->me) == v->len
               && memcmp(l->me, v->str, v->len) == 0;

        if (v->type == REDIS_REPLY_STRING && !mine) {
            len = v->len < size - 1 ? v->len : size - 1;
            memcpy(found, v->str, len);
            found[len] = '\0';
            *left = ttl->type == REDIS_REPLY_INTEGER ? ttl->integer : -1;
            *code = 0;

            freeReplyObject(v);
            freeReplyObject(ttl);

            return gms_follow_lease_unwatch(t);
        }

        freeReplyObject(v);
        freeReplyObject(ttl);

        gms_tool_conn_append(t, "MULTI");

        if (mine) {
            gms_tool_conn_append(t, "PEXPIRE %b %lld", lease, lease_len,
                                 (long long) px);

        } else {
            gms_tool_conn_append(t, "SET %b %s PX %lld", lease, lease_len,
                                 l->me, (long long) px);
            gms_tool_conn_append(t, "HSET %b holder %s holder_since %lld",
                                 sync, sync_len, l->me,
                                 (long long) gms_tool_redis_now_ms());
        }

        switch (gms_tool_redis_watch_exec(t, mine ? 1 : 2, &done)) {

        case 0:
            freeReplyObject(done);
            *code = mine ? 1 : 2;
            found[0] = '\0';
            *left = -1;
            return 0;

        case 1:
            continue;

        default:
            return -1;
        }
    }

    gms_tool_msgs_error(t, "redis %s: the lease changed under each of %d "
                        "tries", t->redis, GMS_TOOL_WATCH_TRIES);

    return -1;
}


/*
 * Without scripts, gms_follow_release_script's step: the lease deleted
 * (and the holder's name in <prefix>sync emptied) only if it is this
 * follower's, under WATCH of both keys.
 */

static int
gms_follow_release_watch(gms_tool_t *t, gms_follow_lease_t *l,
    const char *lease, size_t lease_len, const char *sync, size_t sync_len,
    long long *released)
{
    int          i, mine, named;
    redisReply  *v, *holder, *done;

    for (i = 0; i < GMS_TOOL_WATCH_TRIES; i++) {
        gms_tool_conn_append(t, "WATCH %b %b", lease, lease_len, sync,
                             sync_len);
        gms_tool_conn_append(t, "GET %b", lease, lease_len);
        gms_tool_conn_append(t, "HGET %b holder", sync, sync_len);

        if (gms_follow_lease_read(t, &v) != 0) {
            return -1;
        }

        freeReplyObject(v);

        if (gms_follow_lease_read(t, &v) != 0) {
            return -1;
        }

        if (gms_follow_lease_read(t, &holder) != 0) {
            freeReplyObject(v);
            return -1;
        }

        mine = v->type == REDIS_REPLY_STRING && strlen(l->me) == v->len
               && memcmp(l->me, v->str, v->len) == 0;
        named = holder->type == REDIS_REPLY_STRING
                && strlen(l->me) == holder->len
                && memcmp(l->me, holder->str, holder->len) == 0;

        freeReplyObject(v);
        freeReplyObject(holder);

        if (!mine) {
            *released = 0;

            return gms_follow_lease_unwatch(t);
        }

        gms_tool_conn_append(t, "MULTI");
        gms_tool_conn_append(t, "DEL %b", lease, lease_len);

        if (named) {
            gms_tool_conn_append(t, "HSET %b holder %s", sync, sync_len, "");
        }

        switch (gms_tool_redis_watch_exec(t, named ? 2 : 1, &done)) {

        case 0:
            freeReplyObject(done);
            *released = 1;
            return 0;

        case 1:
            continue;

        default:
            return -1;
        }
    }

    gms_tool_msgs_error(t, "redis %s: the lease changed under each of %d "
                        "tries", t->redis, GMS_TOOL_WATCH_TRIES);

    return -1;
}


/* nothing to write: the keys no longer watched */

static int
gms_follow_lease_unwatch(gms_tool_t *t)
{
    redisReply  *reply;

    reply = gms_tool_conn_command(t, "UNWATCH");

    if (gms_tool_redis_reply_error(t, reply, "the lease") != 0) {
        return -1;
    }

    freeReplyObject(reply);

    return 0;
}


/* one pipelined reply of the lease's: -1, said, when it is an error */

static int
gms_follow_lease_read(gms_tool_t *t, redisReply **reply)
{
    (void) gms_tool_conn_get_reply(t, reply);

    if (gms_tool_redis_reply_error(t, *reply, "the lease") != 0) {
        return -1;
    }

    return 0;
}


static int
gms_follow_lease_keys(gms_tool_t *t, char **lease, size_t *lease_len,
    char **sync, size_t *sync_len)
{
    *lease = gms_tool_redis_key(t, GMS_KEY_LEASE, "", 0, lease_len);
    if (*lease == NULL) {
        return -1;
    }

    *sync = gms_tool_redis_key(t, GMS_KEY_SYNC, "", 0, sync_len);
    if (*sync == NULL) {
        free(*lease);
        return -1;
    }

    return 0;
}


/*
 * l: the follower's lease, for its value; px and every: the renewals'.
 * lost(data) is called, in a thread of the keeper's and under its mutex,
 * when the lease is lost or given up.  0, or an errno.
 */

int
gms_follow_lease_start(gms_follow_keeper_t *k, const gms_tool_t *t,
    const gms_follow_lease_t *l, int64_t px, int64_t every,
    void (*lost)(void *data), void *data)
{
    int  rc;

    memset(k, 0, sizeof(gms_follow_keeper_t));

    k->tool = *t;
    k->tool.conn = NULL;
    k->tool.quiet = 1;
    k->tool.error[0] = '\0';

    k->lease = *l;
    k->px = px;
    k->every = every;
    k->lost = lost;
    k->data = data;
    k->left = -1;

    /* the deadlines count on the monotonic clock */
    rc = gms_follow_cycle_lock_init(&k->mutex, &k->cond);
    if (rc != 0) {
        return rc;
    }

    rc = gms_follow_cycle_thread_create(&k->keeper, gms_follow_keeper_thread,
                                        k);

    if (rc == 0) {
        rc = gms_follow_cycle_thread_create(&k->watch,
                                            gms_follow_keeper_watch, k);

        if (rc != 0) {
            pthread_mutex_lock(&k->mutex);
            k->stop = 1;
            pthread_cond_broadcast(&k->cond);
            pthread_mutex_unlock(&k->mutex);

            pthread_join(k->keeper, NULL);
        }
    }

    if (rc != 0) {
        pthread_cond_destroy(&k->cond);
        pthread_mutex_destroy(&k->mutex);
    }

    return rc;
}


/*
 * The lease taken (by the main thread, as a standby's try); sent: when
 * that try was sent, from which on the lease lasts PX at least.
 */

void
gms_follow_lease_hold(gms_follow_keeper_t *k, int64_t sent)
{
    pthread_mutex_lock(&k->mutex);

    k->renewed = sent;
    k->next = sent + k->every;
    k->takes++;
    k->holder[0] = '\0';
    k->left = -1;
    k->error[0] = '\0';

    __atomic_store_n(&k->held, 1, __ATOMIC_SEQ_CST);

    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->mutex);
}


/* whether the lease is this process's: read by the working threads */

int
gms_follow_lease_held(gms_follow_keeper_t *k)
{
    return __atomic_load_n(&k->held, __ATOMIC_SEQ_CST);
}


/*
 * The lease lost or given up: what the keeper learnt of the holder, for
 * the standby's next try (which then says nothing of a holder the lost
 * line named).
 */

void
gms_follow_lease_view(gms_follow_keeper_t *k, gms_follow_lease_t *l)
{
    pthread_mutex_lock(&k->mutex);

    memcpy(l->holder, k->holder, sizeof(l->holder));
    l->seen = k->holder[0] != '\0';
    l->left = l->seen ? k->left : -1;
    l->held = 0;

    pthread_mutex_unlock(&k->mutex);
}


/*
 * Ends both threads: a Redis command under way is finished (it is
 * short); whether the lease was still held then, to be released.
 */

int
gms_follow_lease_stop(gms_follow_keeper_t *k)
{
    int  held;

    pthread_mutex_lock(&k->mutex);
    k->stop = 1;
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->mutex);

    pthread_join(k->keeper, NULL);
    pthread_join(k->watch, NULL);

    held = k->held;

    pthread_cond_destroy(&k->cond);
    pthread_mutex_destroy(&k->mutex);

    return held;
}


/*
 * The renewals, every k->every while the lease is held, the sooner after
 * a failure.  Redis is asked without the mutex: the watch gives the
 * lease up meanwhile if Redis takes too long, and an answer that comes
 * after that belongs to a lease no longer held.
 */

static void *
gms_follow_keeper_thread(void *data)
{
    gms_follow_keeper_t *k = data;

    int                 rc;
    int64_t             sent;
    unsigned            takes, mine;
    gms_follow_lease_t  l;
    gms_follow_lease_e  event;

    l = k->lease;
    mine = 0;

    pthread_mutex_lock(&k->mutex);

    while (!k->stop) {
        if (!k->held) {
            pthread_cond_wait(&k->cond, &k->mutex);
            continue;
        }

        sent = gms_follow_cycle_monotonic();

        if (sent < k->next) {
            gms_follow_keeper_wait(k, k->next);
            continue;
        }

        takes = k->takes;

        pthread_mutex_unlock(&k->mutex);

        if (takes != mine) {
            /* a new take: held from the start, nobody else seen */
            l.held = 1;
            l.seen = 0;
            l.holder[0] = '\0';
            l.left = -1;
            mine = takes;
        }

        k->tool.error[0] = '\0';

        rc = gms_follow_lease_keep(&k->tool, &l, k->px, &event);

        if (rc != GMS_TOOL_OK) {
            gms_tool_conn_close(&k->tool);
        }

        pthread_mutex_lock(&k->mutex);

        if (k->held && k->takes == takes) {
            gms_follow_keeper_renewed(k, &l, rc, event, sent);
        }
    }

    pthread_mutex_unlock(&k->mutex);

    gms_tool_conn_close(&k->tool);

    return NULL;
}


/* a renewal's answer, under the mutex */

static void
gms_follow_keeper_renewed(gms_follow_keeper_t *k, const gms_follow_lease_t *l,
    int rc, gms_follow_lease_e event, int64_t sent)
{
    char  now[32];

    if (rc != GMS_TOOL_OK) {
        /* for the watch's line, should it come to that */
        memcpy(k->error, k->tool.error, sizeof(k->error));
        k->error[sizeof(k->error) - 1] = '\0';
        gms_follow_cycle_clean(k->error);

        k->next = gms_follow_cycle_monotonic() + k->every / 4;
        return;
    }

    switch (event) {

    case GMS_FOLLOW_LEASE_LOST:
        memcpy(k->holder, l->holder, sizeof(k->holder));
        k->left = l->left;

        fprintf(stderr, "gms-token follow: %s lease lost to %s; standing "
                "by\n", gms_follow_cycle_time(now, sizeof(now)), k->holder);

        gms_follow_keeper_drop(k);
        return;

    case GMS_FOLLOW_LEASE_RETAKEN:
        fprintf(stderr, "gms-token follow: %s lease taken again: it had "
                "expired (not renewed within %lldms, or Redis lost it)\n",
                gms_follow_cycle_time(now, sizeof(now)), (long long) k->px);
        break;

    default:
        /* kept: a holder's renewal finds nothing else */
        break;
    }

    k->error[0] = '\0';
    k->renewed = sent;
    k->next = sent + k->every;
}


/*
 * Gives the lease up once it went unrenewed for PX less the safety: from
 * the last renewal sent, not answered, as Redis counts PX from its
 * arrival.
 */

static void *
gms_follow_keeper_watch(void *data)
{
    gms_follow_keeper_t *k = data;

    char     now[32];
    int64_t  at, until;

    pthread_mutex_lock(&k->mutex);

    while (!k->stop) {
        if (!k->held) {
            pthread_cond_wait(&k->cond, &k->mutex);
            continue;
        }

        until = k->renewed + k->px - GMS_FOLLOW_KEEPER_SAFETY;
        at = gms_follow_cycle_monotonic();

        if (at < until) {
            gms_follow_keeper_wait(k, until);
            continue;
        }

        k->holder[0] = '\0';
        k->left = -1;

        fprintf(stderr, "gms-token follow: %s lease given up: not renewed "
                "for %lldms (%s); standing by\n",
                gms_follow_cycle_time(now, sizeof(now)),
                (long long) (at - k->renewed),
                k->error[0] ? k->error : "Redis did not answer");

        gms_follow_keeper_drop(k);
    }

    pthread_mutex_unlock(&k->mutex);

    return NULL;
}


/* under the mutex: the flag down first, then the work stopped */

static void
gms_follow_keeper_drop(gms_follow_keeper_t *k)
{
    __atomic_store_n(&k->held, 0, __ATOMIC_SEQ_CST);

    pthread_cond_broadcast(&k->cond);

    if (k->lost) {
        k->lost(k->data);
    }
}


/* under the mutex, until the monotonic ms until or a broadcast */

static void
gms_follow_keeper_wait(gms_follow_keeper_t *k, int64_t until)
{
    struct timespec  ts;

    ts.tv_sec = until / 1000;
    ts.tv_nsec = (long) (until % 1000) * 1000000;

    (void) pthread_cond_timedwait(&k->cond, &k->mutex, &ts);
}

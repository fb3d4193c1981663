
/*
 * gms-token follow's second thread.  The privileges mirror and the users'
 * status cost GMS requests by the user, the token cycle by the page of
 * tokens: run one after the other, a revoked token waited for every
 * user's privileges (minutes at thousands of users).  Here they run
 * beside the token cycle, on their own cadence (--privileges-interval
 * from the end of the last, give or take a tenth; backing off after
 * failures as the token cycle does), from the latest token holders the
 * token cycle handed over; the thread waits for the first.  The mirror
 * comes first, then the users' status (gms_tool_users_check), read even
 * when the mirror failed: a suspended user's tokens go without waiting
 * for the policies to be readable again.  The thread works only while
 * this process holds the lease: losing it, or a signal, abandons a GMS
 * request under way, and the holders it had are dropped (another
 * process works now).
 *
 * The thread has its own copy of gms_tool_t (its own Redis connection and
 * error message) and opens its own GraphQL handle at each mirror.  Its
 * line is its own, and so are its fields of <prefix>sync: privileges_at,
 * users, privileges_interval, privileges_error, privileges_error_at,
 * privileges_failures.  Signals go to the main thread: they are blocked
 * here from the start.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gms_contract.h"
#include "gms_follow_privileges.h"
#include "gms_follow_cycle.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_sync_users.h"


static void *gms_follow_privileges_thread(void *data);
static int gms_follow_privileges_next(gms_follow_privileges_t *p);
static void gms_follow_privileges_sleep(gms_follow_privileges_t *p,
    int64_t ms);
static int gms_follow_privileges_health_ok(gms_follow_privileges_t *p,
    const gms_tool_privileges_counts_t *counts);
static void gms_follow_privileges_abandon(gms_follow_privileges_t *p,
    int abandon);


/*
 * The thread starts with the signals blocked (it inherits the mask in
 * place at pthread_create); 0, or an errno.
 */

int
gms_follow_privileges_start(gms_follow_privileges_t *p, const gms_tool_t *t,
    const gms_graphql_conf_t *gms, gms_tool_privileges_e mode, int refuse,
    int64_t interval_ms)
{
    int  rc;

    memset(p, 0, sizeof(gms_follow_privileges_t));

    p->tool = *t;
    p->tool.conn = NULL;
    p->tool.quiet = 1;
    p->tool.error[0] = '\0';

    p->gms = *gms;
    p->gms.stop = &p->abandon;
    p->mode = mode;
    p->refuse = refuse;
    p->interval_ms = interval_ms;

    /* the waits count on the monotonic clock, as the token cycle's */
    rc = gms_follow_lock_init(&p->mutex, &p->cond);
    if (rc != 0) {
        return rc;
    }

    rc = gms_follow_thread(&p->thread, gms_follow_privileges_thread, p);

    if (rc != 0) {
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->mutex);
    }

    return rc;
}


/* the token cycle's holders, taken over: the next mirror starts from them */

void
gms_follow_privileges_hand(gms_follow_privileges_t *p,
    gms_tool_holders_t *holders)
{
    pthread_mutex_lock(&p->mutex);

    gms_tool_holders_free(&p->latest);
    p->latest = *holders;
    p->fresh = 1;
    memset(holders, 0, sizeof(gms_tool_holders_t));

    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mutex);
}


/* the lease taken or lost; lost, a mirror under way is abandoned */

void
gms_follow_privileges_lease(gms_follow_privileges_t *p, int held)
{
    pthread_mutex_lock(&p->mutex);

    if (p->held != held) {
        p->held = held;

        if (!held) {
            gms_follow_privileges_abandon(p, 1);
            gms_tool_holders_free(&p->latest);
            p->fresh = 0;
        }

        pthread_cond_broadcast(&p->cond);
    }

    pthread_mutex_unlock(&p->mutex);
}


/* ends the thread: a GMS request is abandoned, a Redis command finished */

void
gms_follow_privileges_stop(gms_follow_privileges_t *p)
{
    pthread_mutex_lock(&p->mutex);
    p->stop = 1;
    gms_follow_privileges_abandon(p, 1);
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mutex);

    pthread_join(p->thread, NULL);

    gms_tool_holders_free(&p->latest);
    gms_tool_holders_free(&p->holders);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->mutex);
}


static void *
gms_follow_privileges_thread(void *data)
{
    gms_follow_privileges_t *p = data;

    int                           rc, urc, abandoned;
    char                          now[32], error[sizeof(p->tool.error)];
    int64_t                       start, took, wait;
    unsigned                      failures;
    gms_tool_t                   *t;
    gms_tool_users_counts_t       users;
    gms_tool_privileges_counts_t  counts;

    t = &p->tool;
    failures = 0;

    while (gms_follow_privileges_next(p) == 0) {
        memset(&counts, 0, sizeof(gms_tool_privileges_counts_t));
        memset(&users, 0, sizeof(gms_tool_users_counts_t));
        t->error[0] = '\0';

        start = gms_follow_monotonic();

        rc = gms_tool_privileges_mirror(t, &p->gms, p->mode, &p->holders,
                                        &counts);

        memcpy(error, t->error, sizeof(error));

        if (rc == GMS_TOOL_REDIS) {
            gms_tool_close(t);
        }

        if (!__atomic_load_n(&p->abandon, __ATOMIC_RELAXED)) {
            urc = gms_tool_users_check(t, &p->gms, p->refuse, &p->holders,
                                       &users);

            /* the mirror's failure first, if both failed */
            if (rc == GMS_TOOL_OK) {
                rc = urc;

            } else {
                memcpy(t->error, error, sizeof(error));
            }
        }

        if (rc == GMS_TOOL_OK
            && __atomic_load_n(&p->abandon, __ATOMIC_RELAXED))
        {
            /* the lease lost, or a signal, since: no more writes */
            rc = GMS_TOOL_GMS;
        }

        if (rc == GMS_TOOL_OK) {
            rc = gms_follow_privileges_health_ok(p, &counts);
        }

        took = gms_follow_monotonic() - start;

        abandoned = __atomic_load_n(&p->abandon, __ATOMIC_RELAXED);

        if (rc != GMS_TOOL_OK && abandoned) {
            /* a signal, or the lease lost: no failure of GMS or Redis */
            continue;
        }

        if (rc == GMS_TOOL_OK) {
            failures = 0;
            wait = gms_follow_jitter(p->interval_ms);

            printf("gms-token follow: %s privileges ok users=%zu "
                   "changed=%zu removed=%zu skipped=%zu checked=%zu "
                   "inactive=%zu newly=%zu reactivated=%zu dropped=%zu "
                   "unknown=%zu in %lldms\n",
                   gms_follow_time(now, sizeof(now)), counts.users,
                   counts.changed, counts.removed, counts.skipped,
                   users.checked, users.inactive, users.newly,
                   users.reactivated, users.dropped, users.unknown,
                   (long long) took);

        } else {
            failures++;

            if (rc == GMS_TOOL_REDIS) {
                gms_tool_close(t);
            }

            gms_follow_clean(t->error);
            gms_follow_health_failed(t, "privileges_", failures);

            wait = gms_follow_jitter(gms_follow_backoff(p->interval_ms,
                                                        failures));

            fprintf(stderr, "gms-token follow: %s privileges failed (%s): "
                    "%s; next try in %.1fs\n",
                    gms_follow_time(now, sizeof(now)),
                    rc == GMS_TOOL_REDIS ? "Redis"
                    : rc == GMS_TOOL_GMS ? "GMS" : "bad input",
                    t->error[0] ? t->error : "no message",
                    (double) wait / 1000);
        }

        gms_follow_privileges_sleep(p, wait);
    }

    gms_tool_close(t);

    return NULL;
}


/*
 * Waits until the lease is held and some holders were handed over (the
 * latest taken if fresh); -1 once told to stop.  Holders from before the
 * lease was lost are dropped: the next mirror waits for the next token
 * cycle's.
 */

static int
gms_follow_privileges_next(gms_follow_privileges_t *p)
{
    int  rc;

    pthread_mutex_lock(&p->mutex);

    for ( ;; ) {
        if (p->stop) {
            rc = -1;
            break;
        }

        if (!p->held && p->have) {
            gms_tool_holders_free(&p->holders);
            p->have = 0;
        }

        if (p->held && p->fresh) {
            gms_tool_holders_free(&p->holders);
            p->holders = p->latest;
            memset(&p->latest, 0, sizeof(gms_tool_holders_t));
            p->fresh = 0;
            p->have = 1;
        }

        if (p->held && p->have) {
            gms_follow_privileges_abandon(p, 0);
            rc = 0;
            break;
        }

        pthread_cond_wait(&p->cond, &p->mutex);
    }

    pthread_mutex_unlock(&p->mutex);

    return rc;
}


static void
gms_follow_privileges_sleep(gms_follow_privileges_t *p, int64_t ms)
{
    int64_t          end;
    struct timespec  ts;

    end = gms_follow_monotonic() + ms;

    ts.tv_sec = end / 1000;
    ts.tv_nsec = (long) (end % 1000) * 1000000;

    pthread_mutex_lock(&p->mutex);

    while (!p->stop) {
        if (pthread_cond_timedwait(&p->cond, &p->mutex, &ts) == ETIMEDOUT) {
            break;
        }
    }

    pthread_mutex_unlock(&p->mutex);
}


/* one HSET: a reader never sees one mirror's users with another's time */

static int
gms_follow_privileges_health_ok(gms_follow_privileges_t *p,
    const gms_tool_privileges_counts_t *counts)
{
    int          rc;
    char        *key;
    size_t       key_len;
    redisReply  *reply;
    gms_tool_t  *t;

    t = &p->tool;

    if (t->conn == NULL) {
        rc = gms_tool_connect(t);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    key = gms_tool_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return GMS_TOOL_REDIS;
    }

    /* hiredis's format knows no %zu */
    reply = gms_tool_command(t, "HSET %b privileges_at %lld users %llu "
                             "privileges_error %s privileges_failures 0 "
                             "privileges_interval %lld", key, key_len,
                             (long long) gms_tool_now_ms(),
                             (unsigned long long) counts->users, "",
                             (long long) p->interval_ms);
    free(key);

    if (gms_tool_reply_error(t, reply, "HSET") != 0) {
        return GMS_TOOL_REDIS;
    }

    freeReplyObject(reply);

    return GMS_TOOL_OK;
}


/*
 * The flag libcurl's progress callback reads in the thread while the
 * main thread sets it: an atomic store, never a torn or cached one.
 */

static void
gms_follow_privileges_abandon(gms_follow_privileges_t *p, int abandon)
{
    __atomic_store_n(&p->abandon, abandon, __ATOMIC_RELAXED);
}

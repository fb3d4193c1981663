
/*
 * gms-token follow: what its two loops share.  A cycle runs an interval
 * after the last one ended, give or take a tenth (so that followers
 * started together drift apart); a failed cycle waits twice as long as
 * the one before, up to five minutes or the interval if that is longer.
 * Both threads call these: nothing here keeps state (random() is
 * glibc's, which locks).
 */


#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gms_contract.h"
#include "gms_follow_cycle.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/* the longest wait after failures, unless the interval is longer */
#define GMS_FOLLOW_BACKOFF_MAX 300000

/* the wait varies by up to this many thousandths either way */
#define GMS_FOLLOW_JITTER      100


/* interval * 2^failures, up to GMS_FOLLOW_BACKOFF_MAX or the interval */

int64_t
gms_follow_cycle_backoff(int64_t interval, unsigned failures)
{
    int64_t   ms, max;
    unsigned  i;

    max = interval > GMS_FOLLOW_BACKOFF_MAX ? interval
                                            : GMS_FOLLOW_BACKOFF_MAX;
    ms = interval;

    for (i = 0; i < failures && ms < max; i++) {
        ms *= 2;
    }

    return ms < max ? ms : max;
}


int64_t
gms_follow_cycle_jitter(int64_t ms)
{
    long  r;

    r = random() % (2 * GMS_FOLLOW_JITTER + 1) - GMS_FOLLOW_JITTER;

    return ms + ms / 1000 * r;
}


/* GMS's messages are any text: one line in the log and the hash */

void
gms_follow_cycle_clean(char *s)
{
    for ( /* void */ ; *s; s++) {
        if ((unsigned char) *s < 0x20 || *s == 0x7f) {
            *s = ' ';
        }
    }
}


const char *
gms_follow_cycle_time(char *buf, size_t size)
{
    time_t     now;
    struct tm  tm;

    now = time(NULL);

    if (gmtime_r(&now, &tm) == NULL
        || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    {
        snprintf(buf, size, "%lld", (long long) now);
    }

    return buf;
}


int64_t
gms_follow_cycle_monotonic(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/*
 * A cycle's failure in <prefix>sync: its error and when, and how many in
 * a row, beside the last success's fields; prefix: "" for the token
 * cycle's, "privileges_" for the mirror's.  Redis itself may be what
 * failed: then the failure is only logged, and t's error is the cycle's
 * again.
 */

void
gms_follow_cycle_health_failed(gms_tool_t *t, const char *prefix,
    unsigned failures)
{
    char        *key, error[sizeof(t->error)];
    size_t       key_len;
    redisReply  *reply;

    /* the cycle's error is the one to log, not this one's */
    memcpy(error, t->error, sizeof(error));

    if (t->conn == NULL && gms_tool_redis_connect(t) != GMS_TOOL_OK) {
        gms_tool_conn_close(t);
        goto done;
    }

    key = gms_tool_redis_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        goto done;
    }

    /* hiredis joins %s and the text beside it into one argument */
    reply = gms_tool_conn_command(t, "HSET %b %serror %s %serror_at %lld "
                                  "%sfailures %u", key, key_len, prefix, error,
                                  prefix, (long long) gms_tool_redis_now_ms(),
                                  prefix, failures);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HSET") != 0) {
        gms_tool_conn_close(t);
        goto done;
    }

    freeReplyObject(reply);

done:

    memcpy(t->error, error, sizeof(error));
}


/*
 * A failed cycle's line on stderr, the same for every loop: what failed
 * ("" the token cycle, "privileges ", "stream "), the side at fault, its
 * error, the wait before the next try
 */

void
gms_follow_cycle_say_failed(const char *what, int rc, const char *error,
    int64_t wait)
{
    char  now[32];

    fprintf(stderr, "gms-token follow: %s %sfailed (%s): %s; next try in "
            "%.1fs\n", gms_follow_cycle_time(now, sizeof(now)), what,
            rc == GMS_TOOL_REDIS ? "Redis"
            : rc == GMS_TOOL_GMS ? "GMS" : "bad input",
            error[0] ? error : "no message", (double) wait / 1000);
}


/* a mutex, and a condition whose timed waits count on CLOCK_MONOTONIC */

int
gms_follow_cycle_lock_init(pthread_mutex_t *mutex, pthread_cond_t *cond)
{
    int                 rc;
    pthread_condattr_t  attr;

    rc = pthread_mutex_init(mutex, NULL);
    if (rc != 0) {
        return rc;
    }

    rc = pthread_condattr_init(&attr);
    if (rc != 0) {
        pthread_mutex_destroy(mutex);
        return rc;
    }

    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);

    if (rc == 0) {
        rc = pthread_cond_init(cond, &attr);
    }

    pthread_condattr_destroy(&attr);

    if (rc != 0) {
        pthread_mutex_destroy(mutex);
    }

    return rc;
}


/*
 * A thread that SIGTERM, SIGINT and SIGQUIT never reach: the main thread
 * takes them (its handler sets the flags the threads read).
 */

int
gms_follow_cycle_thread_create(pthread_t *thread, void *(*run)(void *),
    void *arg)
{
    int       rc;
    sigset_t  set, old;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGQUIT);

    pthread_sigmask(SIG_BLOCK, &set, &old);
    rc = pthread_create(thread, NULL, run, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    return rc;
}

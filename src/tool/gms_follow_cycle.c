
/*
 * gms-token follow: what its two loops share.  A cycle runs an interval
 * after the last one ended, give or take a tenth (so that followers
 * started together drift apart); a failed cycle waits twice as long as
 * the one before, up to five minutes or the interval if that is longer.
 * Both threads call these: nothing here keeps state (random() is
 * glibc's, which locks).
 */


#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gms_follow_cycle.h"


/* the longest wait after failures, unless the interval is longer */
#define GMS_FOLLOW_BACKOFF_MAX 300000

/* the wait varies by up to this many thousandths either way */
#define GMS_FOLLOW_JITTER      100


/* interval * 2^failures, up to GMS_FOLLOW_BACKOFF_MAX or the interval */

int64_t
gms_follow_backoff(int64_t interval, unsigned failures)
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
gms_follow_jitter(int64_t ms)
{
    long  r;

    r = random() % (2 * GMS_FOLLOW_JITTER + 1) - GMS_FOLLOW_JITTER;

    return ms + ms / 1000 * r;
}


/* GMS's messages are any text: one line in the log and the hash */

void
gms_follow_clean(char *s)
{
    for ( /* void */ ; *s; s++) {
        if ((unsigned char) *s < 0x20 || *s == 0x7f) {
            *s = ' ';
        }
    }
}


const char *
gms_follow_time(char *buf, size_t size)
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
gms_follow_monotonic(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

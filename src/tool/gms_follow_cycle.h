
/*
 * gms-token follow: what its two loops share, the tokens' and the
 * privileges': when the next cycle runs, the time on a log line, a GMS
 * message made one line, the waits, a failure in <prefix>sync, and how
 * their threads are made; gms_follow_cycle.c.
 */


#ifndef _GMS_FOLLOW_CYCLE_H_INCLUDED_
#define _GMS_FOLLOW_CYCLE_H_INCLUDED_


#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "gms_tool.h"


int64_t gms_follow_cycle_backoff(int64_t interval, unsigned failures);
int64_t gms_follow_cycle_jitter(int64_t ms);
void gms_follow_cycle_clean(char *s);
const char *gms_follow_cycle_time(char *buf, size_t size);
int64_t gms_follow_cycle_monotonic(void);
void gms_follow_cycle_health_failed(gms_tool_t *t, const char *prefix,
    unsigned failures);
void gms_follow_cycle_say_failed(const char *what, int rc, const char *error,
    int64_t wait);
int gms_follow_cycle_lock_init(pthread_mutex_t *mutex, pthread_cond_t *cond);
int gms_follow_cycle_thread_create(pthread_t *thread, void *(*run)(void *),
    void *arg);


#endif /* _GMS_FOLLOW_CYCLE_H_INCLUDED_ */

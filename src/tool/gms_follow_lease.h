
/*
 * gms-token follow's lease: which of the followers sharing one Redis
 * works, <prefix>lease, and the keeper that renews it while this process
 * holds it; gms_follow_lease.c.
 */


#ifndef _GMS_FOLLOW_LEASE_H_INCLUDED_
#define _GMS_FOLLOW_LEASE_H_INCLUDED_


#include <pthread.h>
#include <stdint.h>

#include "gms_tool.h"


/* host:pid:nonce, and another follower's value as shown */
#define GMS_FOLLOW_LEASE_MAX   320


/* what a step of the lease found */
typedef enum {
    GMS_FOLLOW_LEASE_KEPT = 0,             /* held, renewed */
    GMS_FOLLOW_LEASE_TAKEN,                /* held from now on */
    GMS_FOLLOW_LEASE_RETAKEN,              /* held, but it had expired:
                                              nobody took it meanwhile */
    GMS_FOLLOW_LEASE_LOST,                 /* was held, another has it */
    GMS_FOLLOW_LEASE_STANDBY,              /* another has it: the first
                                              seen, or a new one */
    GMS_FOLLOW_LEASE_WAITING               /* the same other has it */
} gms_follow_lease_e;


typedef struct {
    char                   me[GMS_FOLLOW_LEASE_MAX];
    char                   holder[GMS_FOLLOW_LEASE_MAX];  /* another's */
    int64_t                left;           /* ms another's lease has left,
                                              -1: no expiry */
    unsigned               held:1;
    unsigned               seen:1;         /* holder is the last seen */
} gms_follow_lease_t;


/*
 * The keeper: two threads of their own while the follower runs.  One
 * renews the lease every so often on a Redis connection of its own; the
 * other gives it up once it went unrenewed for nearly PX, even while the
 * first waits for Redis.  held is what the working threads read.
 */
typedef struct {
    gms_tool_t             tool;           /* a copy: its own connection */
    gms_follow_lease_t     lease;          /* its value, me; read only */
    int64_t                px;
    int64_t                every;          /* between renewals */
    void                 (*lost)(void *data);   /* the lease lost or given
                                                   up: stop the work */
    void                  *data;

    pthread_t              keeper;
    pthread_t              watch;
    pthread_mutex_t        mutex;
    pthread_cond_t         cond;

    /* under the mutex */
    int64_t                renewed;        /* monotonic: the last renewal
                                              (or the take) was sent */
    int64_t                next;           /* the next renewal */
    unsigned               takes;          /* a renewal answered after a
                                              take that followed it is
                                              not this take's */
    int                    stop;
    char                   holder[GMS_FOLLOW_LEASE_MAX];  /* lost to */
    int64_t                left;           /* its PTTL, ms */
    char                   error[256];     /* the last renewal's failure */

    /* written under the mutex, read by the working threads without it */
    int                    held;
} gms_follow_keeper_t;


void gms_follow_lease_init(gms_follow_lease_t *l);
int gms_follow_lease_keep(gms_tool_t *t, gms_follow_lease_t *l, int64_t px,
    gms_follow_lease_e *event);
int gms_follow_lease_release(gms_tool_t *t, gms_follow_lease_t *l);

int gms_follow_lease_start(gms_follow_keeper_t *k, const gms_tool_t *t,
    const gms_follow_lease_t *l, int64_t px, int64_t every,
    void (*lost)(void *data), void *data);
void gms_follow_lease_hold(gms_follow_keeper_t *k, int64_t sent);
int gms_follow_lease_held(gms_follow_keeper_t *k);
void gms_follow_lease_view(gms_follow_keeper_t *k, gms_follow_lease_t *l);
int gms_follow_lease_stop(gms_follow_keeper_t *k);


#endif /* _GMS_FOLLOW_LEASE_H_INCLUDED_ */

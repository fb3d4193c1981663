
/*
 * gms-token follow's lease: which of the followers sharing one Redis
 * works, <prefix>lease; gms_follow_lease.c.
 */


#ifndef _GMS_FOLLOW_LEASE_H_INCLUDED_
#define _GMS_FOLLOW_LEASE_H_INCLUDED_


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


void gms_follow_lease_init(gms_follow_lease_t *l);
int gms_follow_lease_keep(gms_tool_t *t, gms_follow_lease_t *l, int64_t px,
    gms_follow_lease_e *event);
int gms_follow_lease_release(gms_tool_t *t, gms_follow_lease_t *l);


#endif /* _GMS_FOLLOW_LEASE_H_INCLUDED_ */


/*
 * gms-token follow's second thread: the work that grows with the users
 * (the privileges mirror, the users' status), on its own cadence, from
 * the token holders the token cycle hands over; gms_follow_privileges.c.
 */


#ifndef _GMS_FOLLOW_PRIVILEGES_H_INCLUDED_
#define _GMS_FOLLOW_PRIVILEGES_H_INCLUDED_


#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "gms_tool.h"
#include "gms_graphql.h"
#include "gms_sync_tokens.h"
#include "gms_sync_privileges.h"
#include "gms_follow_journal.h"


/* what a kick asks for, now rather than at the next interval */
#define GMS_FOLLOW_KICK_MIRROR  1   /* the privileges mirror, now */
#define GMS_FOLLOW_KICK_USERS   2   /* every user's status, now */
#define GMS_FOLLOW_KICK_MEMBERS 4   /* with MIRROR: who is in the groups
                                       and roles read again */


/* a token's holder the stream cached, until a token cycle lists it */
typedef struct {
    char                         *urn;
    size_t                        len;
    unsigned                      age;     /* hand-overs that lacked it */
    unsigned                      merged:1;  /* into the thread's holders */
} gms_follow_holder_t;


typedef struct {
    gms_tool_t                    tool;    /* a copy: its own connection */
    gms_graphql_conf_t            gms;     /* its stop is abandon */
    gms_tool_privileges_e         mode;
    int                           refuse;  /* --inactive refuse */
    gms_follow_journal_t         *journal; /* NULL: none (polling) */

    pthread_t                     thread;
    pthread_mutex_t               mutex;
    pthread_cond_t                cond;

    /* under the mutex */
    gms_tool_holders_t            latest;  /* handed over, not yet taken */
    int                           fresh;   /* latest holds some */
    int                           held;    /* the lease is this process's */
    int                           stop;
    int64_t                       interval_ms;
    int64_t                       due;     /* the next whole run, on the
                                              monotonic clock; 0: at once */
    unsigned                      kick;    /* GMS_FOLLOW_KICK_* asked */
    int                           whole;   /* a whole run asked, now */
    unsigned                      failures;  /* in a row: backing off */
    gms_follow_holder_t          *added;   /* the stream's new holders */
    size_t                        nadded;
    size_t                        nalloc_added;

    /* set under the mutex, read by libcurl's progress callback */
    volatile sig_atomic_t         abandon;

    /* the thread's own */
    gms_tool_holders_t            holders;
    int                           have;    /* holders holds some */
    gms_tool_privileges_memo_t   *memo;    /* the last mirror's members */
} gms_follow_privileges_t;


int gms_follow_privileges_start(gms_follow_privileges_t *p,
    const gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_tool_privileges_e mode, int refuse, int64_t interval_ms);
void gms_follow_privileges_hand(gms_follow_privileges_t *p,
    gms_tool_holders_t *holders, int whole);
void gms_follow_privileges_lease(gms_follow_privileges_t *p, int held);
void gms_follow_privileges_stop(gms_follow_privileges_t *p);
void gms_follow_privileges_kick(gms_follow_privileges_t *p, unsigned what);
void gms_follow_privileges_holder(gms_follow_privileges_t *p,
    const char *urn, size_t len);
void gms_follow_privileges_cadence(gms_follow_privileges_t *p,
    int64_t interval_ms);
void gms_follow_privileges_journal(gms_follow_privileges_t *p,
    gms_follow_journal_t *j);


#endif /* _GMS_FOLLOW_PRIVILEGES_H_INCLUDED_ */

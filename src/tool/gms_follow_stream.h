
/*
 * gms-token follow's stream thread: DataHub's Events API (the Metadata
 * Change Log) long-polled, each change applied as it comes, the offset
 * kept in <prefix>sync; gms_follow_stream.c.
 */


#ifndef _GMS_FOLLOW_STREAM_H_INCLUDED_
#define _GMS_FOLLOW_STREAM_H_INCLUDED_


#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "gms_tool.h"
#include "gms_graphql.h"
#include "gms_follow_journal.h"
#include "gms_follow_privileges.h"


/* --changes */
typedef enum {
    GMS_FOLLOW_CHANGES_AUTO = 0,
    GMS_FOLLOW_CHANGES_STREAM,
    GMS_FOLLOW_CHANGES_POLL
} gms_follow_changes_e;


/* what runs now, as the main thread sees it */
typedef enum {
    GMS_FOLLOW_STREAM_STARTING = 0,        /* the lease taken, no answer yet */
    GMS_FOLLOW_STREAM_RUNNING,             /* changes come by the stream */
    GMS_FOLLOW_STREAM_DOWN                 /* polling runs */
} gms_follow_stream_state_e;


/* what the thread is given */
typedef struct {
    gms_follow_changes_e          mode;    /* stream or auto */
    int                           refuse;  /* --inactive */
    int64_t                       interval_ms;
    int64_t                       privileges_interval_ms;
    int64_t                       full_interval_ms;
    gms_follow_privileges_t      *privileges;
    gms_follow_journal_t         *journal;
    void                        (*wake)(void *data);  /* the main thread */
    void                         *wake_data;
} gms_follow_stream_conf_t;


typedef struct {
    gms_tool_t                    tool;    /* a copy: its own connection */
    gms_graphql_conf_t            gms;     /* its stop is abandon */
    gms_follow_stream_conf_t      conf;

    pthread_t                     thread;
    pthread_mutex_t               mutex;
    pthread_cond_t                cond;

    /* under the mutex */
    int                           held;    /* the lease is this process's */
    int                           taken;   /* ... since the thread looked */
    int                           stop;
    int                           reconcile;   /* asked, not yet taken */
    gms_follow_stream_state_e     state;

    /* set under the mutex, read by libcurl's progress callback */
    volatile sig_atomic_t         abandon;

    /* the thread's own */
    gms_graphql_t                *g;
    char                         *offset;  /* NULL: from the end */
    long                          limit;
    unsigned                      full;    /* full polls in a row */
    unsigned                      failures;
    unsigned                      said_down:1; /* auto's line printed */
    unsigned                      unread:1;    /* the kept offset to read */
    unsigned                      owed:1;  /* a reconciliation owed, as
                                              <prefix>sync counts it */
    uint64_t                      events;  /* since the lease was taken */
    uint64_t                      rejected;
} gms_follow_stream_t;


int gms_follow_stream_start(gms_follow_stream_t *s, const gms_tool_t *t,
    const gms_graphql_conf_t *gms, const gms_follow_stream_conf_t *conf);
void gms_follow_stream_lease(gms_follow_stream_t *s, int held);
gms_follow_stream_state_e gms_follow_stream_state(gms_follow_stream_t *s);
int gms_follow_stream_reconcile(gms_follow_stream_t *s);
void gms_follow_stream_stop(gms_follow_stream_t *s);


#endif /* _GMS_FOLLOW_STREAM_H_INCLUDED_ */

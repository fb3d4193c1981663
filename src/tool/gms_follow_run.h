
/*
 * gms-token follow's main thread: the token cycle, the lease, the other
 * threads started and stopped, the waits and signals; gms_follow_run.c.
 */


#ifndef _GMS_FOLLOW_RUN_H_INCLUDED_
#define _GMS_FOLLOW_RUN_H_INCLUDED_


#include <stdint.h>

#include "gms_tool.h"
#include "gms_graphql.h"
#include "gms_sync_tokens.h"
#include "gms_sync_privileges.h"
#include "gms_follow_stream.h"


/* gms-token follow: its options */
typedef struct {
    const gms_graphql_conf_t  *gms;
    gms_tool_sync_conf_t       sync;       /* its gms is the run's own */
    gms_tool_privileges_e      privileges;
    int                        refuse;     /* --inactive refuse */
    int64_t                    interval_ms;
    int64_t                    privileges_interval_ms;
    int64_t                    full_interval_ms;   /* 0: always whole */
    gms_follow_changes_e       changes;
    const char                *metrics_file;   /* NULL: none written */
} gms_follow_conf_t;


int gms_follow_run(gms_tool_t *t, const gms_follow_conf_t *conf);


#endif /* _GMS_FOLLOW_RUN_H_INCLUDED_ */


/*
 * gms-token follow's own metrics, in Prometheus's text format, in the
 * file --metrics-file names (node_exporter's textfile collector's
 * convention); gms_follow_metrics.c.
 */


#ifndef _GMS_FOLLOW_METRICS_H_INCLUDED_
#define _GMS_FOLLOW_METRICS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* the cycles counted, each with its outcome */
typedef enum {
    GMS_FOLLOW_METRICS_TOKENS = 0,         /* the token cycle */
    GMS_FOLLOW_METRICS_PRIVILEGES,         /* the privileges mirror */
    GMS_FOLLOW_METRICS_USERS,              /* the users' status */
    GMS_FOLLOW_METRICS_STREAM,             /* a poll of the change stream */
    GMS_FOLLOW_METRICS_KINDS
} gms_follow_metrics_kind_e;


int gms_follow_metrics_open(const char *path, char *error, size_t size);
void gms_follow_metrics_close(void);
void gms_follow_metrics_cycle(gms_follow_metrics_kind_e kind, int ok);
void gms_follow_metrics_tokens(size_t tokens, size_t pruned,
    size_t published);
void gms_follow_metrics_users(size_t users, size_t published);
void gms_follow_metrics_inactive(size_t inactive, size_t published);
void gms_follow_metrics_stream(int running, size_t events, int64_t lag_ms,
    size_t published);
void gms_follow_metrics_lease(int held);
void gms_follow_metrics_request(const char *api, double seconds, int failed);


#endif /* _GMS_FOLLOW_METRICS_H_INCLUDED_ */

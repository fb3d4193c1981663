
/*
 * gms-token: fills and inspects the Redis cache that ngx_http_gms_module
 * reads.  What every file of the tool shares: the state of a run and the
 * exit codes.  The functions are declared by the header of the file that
 * holds them (gms_tool_msgs.h, gms_tool_redis.h, ...).
 */


#ifndef _GMS_TOOL_H_INCLUDED_
#define _GMS_TOOL_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define GMS_TOOL_OK            0
#define GMS_TOOL_NOT_FOUND     1
#define GMS_TOOL_USAGE         2
#define GMS_TOOL_REDIS         3
#define GMS_TOOL_GMS           4


/* a connection to Redis or a Sentinel: gms_tool_conn.c */
typedef struct gms_tool_conn_s  gms_tool_conn_t;

/* the progress shown on a terminal: gms_tool_progress.c */
typedef struct gms_tool_progress_s  gms_tool_progress_t;


typedef struct gms_tool_s  gms_tool_t;

struct gms_tool_s {
    const char            *command;        /* for messages */
    const char            *redis;          /* the address connected to */
    const char            *password_file;
    const char            *prefix;
    size_t                 prefix_len;
    long                   db;
    gms_tool_conn_t       *conn;           /* NULL: not connected */

    unsigned               tls:1;          /* --tls, for Sentinels too */
    const char            *tls_ca_file;    /* NULL: the system's CAs */
    const char            *tls_cert;       /* with tls_key: mutual TLS */
    const char            *tls_key;
    const char            *tls_name;       /* NULL: the host connected to */

    const char            *sentinel;       /* ADDR,ADDR,...: NULL, --redis */
    const char            *master;         /* the master's Sentinel name */
    const char            *sentinel_password_file;
    char                   master_addr[300];   /* the one last named */

    const char            *cluster;        /* ADDR,ADDR,...: the seeds */

    /*
     * a command answered -MOVED or -ASK: gms_tool_cluster_redirect, which
     * --redis-cluster's connect sets, so that the connection calls down
     * into the cluster's code it knows nothing of
     */
    struct redisReply   *(*redirect)(gms_tool_t *t, struct redisReply *reply,
                                     const char *cmd, size_t len);
    const char            *user;           /* NULL: AUTH with a password */
    long                   wait_ms;        /* WAIT's bound, 0: no WAIT */
    int64_t                wait_skip_until;    /* monotonic ms */
    int64_t                replicas_at;    /* monotonic ms, 0: not known */
    int                    replicas;       /* the master's, by ROLE */
    unsigned               role_warned:1;  /* ROLE refused: said once */
    unsigned               scripts_known:1;    /* on this connection */
    unsigned               noscript:1;     /* it refuses scripts */
    unsigned               password_env_off:1; /* GMS_REDIS_PASSWORD not
                                                  this one's */

    int                    quiet;          /* errors kept, not printed */
    gms_tool_progress_t   *progress;       /* NULL: none shown */
    unsigned               inactive_mark:1;    /* --inactive mark */
    char                   error[256];     /* the last error message */
};


#endif /* _GMS_TOOL_H_INCLUDED_ */

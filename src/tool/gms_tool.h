
/*
 * gms-token: fills and inspects the Redis cache that ngx_http_gms_module
 * reads.  What the commands share: the connection, messages, exit codes,
 * and the one transaction that writes a token.
 */


#ifndef _GMS_TOOL_H_INCLUDED_
#define _GMS_TOOL_H_INCLUDED_


#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "gms_token.h"


#define GMS_TOOL_OK            0
#define GMS_TOOL_NOT_FOUND     1
#define GMS_TOOL_USAGE         2
#define GMS_TOOL_REDIS         3
#define GMS_TOOL_GMS           4

/* the longest actor URN accepted; DataHub's own URNs are far shorter */


/* a connection to Redis or a Sentinel: gms_tool_conn.c */
typedef struct gms_tool_conn_s  gms_tool_conn_t;


typedef struct {
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

    int                    quiet;          /* errors kept, not printed */
    char                   error[256];     /* the last error message */
} gms_tool_t;


/* one token as written: the whole hash, replaced at once */
typedef struct {
    const char            *actor;
    size_t                 actor_len;
    int64_t                expires_at;     /* ms since the epoch, 0: never */
    int64_t                created_at;     /* ms since the epoch, 0: unknown */
    const char            *type;           /* NULL: none */
} gms_tool_token_t;


typedef enum {
    GMS_TOOL_ADDED = 0,
    GMS_TOOL_UPDATED,
    GMS_TOOL_UNCHANGED
} gms_tool_put_rc_e;


void gms_tool_error(gms_tool_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gms_tool_warn(gms_tool_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int gms_tool_connect(gms_tool_t *t);
int gms_tool_open(gms_tool_t *t, const char *option, const char *addr,
    const char *password, size_t password_len, gms_tool_conn_t **conn,
    char *err, size_t size);
int gms_tool_sentinel_connect(gms_tool_t *t, const char *password,
    size_t password_len);


/*
 * The connection: commands in hiredis's format ("%s", "%b" ...), replies
 * as hiredis's redisReply (freeReplyObject); appended commands are
 * written at the next get_reply, as with hiredis's redisAppendCommand.
 * A failure leaves the reply NULL and the reason in gms_tool_conn_error.
 */
int gms_tool_conn_open(gms_tool_t *t, const char *option, const char *addr,
    gms_tool_conn_t **conn, char *err, size_t size);
void gms_tool_conn_append(gms_tool_conn_t *c, const char *fmt, ...);
void gms_tool_conn_vappend(gms_tool_conn_t *c, const char *fmt,
    va_list args);
void gms_tool_conn_append_argv(gms_tool_conn_t *c, int argc,
    const char **argv, const size_t *lens);
int gms_tool_conn_get_reply(gms_tool_conn_t *c, redisReply **reply);
redisReply *gms_tool_conn_command(gms_tool_conn_t *c, const char *fmt, ...);
const char *gms_tool_conn_error(gms_tool_conn_t *c);
void gms_tool_conn_close(gms_tool_conn_t *c);

/* the same on t->conn */
redisReply *gms_tool_command(gms_tool_t *t, const char *fmt, ...);
redisReply *gms_tool_command_argv(gms_tool_t *t, int argc, const char **argv,
    const size_t *lens);
void gms_tool_append(gms_tool_t *t, const char *fmt, ...);
void gms_tool_append_argv(gms_tool_t *t, int argc, const char **argv,
    const size_t *lens);
int gms_tool_get_reply(gms_tool_t *t, redisReply **reply);
void gms_tool_close(gms_tool_t *t);

char *gms_tool_key(gms_tool_t *t, const char *kind, const char *name,
    size_t len, size_t *key_len);
int64_t gms_tool_now_ms(void);

void gms_tool_put_append(gms_tool_t *t, const char *key, size_t key_len,
    const gms_tool_token_t *tok);
int gms_tool_put_read(gms_tool_t *t, const gms_tool_token_t *tok,
    gms_tool_put_rc_e *rc);
int gms_tool_reply_error(gms_tool_t *t, redisReply *reply, const char *what);

int gms_tool_publish(gms_tool_t *t, const char *what, size_t len);


/* SCAN MATCH <prefix><kind>*, a batch at a time, never KEYS */
typedef struct {
    char                  *pattern;
    size_t                 len;
    char                   cursor[32];
    unsigned               done:1;
    redisReply            *reply;          /* the last batch's */
} gms_tool_scan_t;


int gms_tool_scan_open(gms_tool_t *t, gms_tool_scan_t *s, const char *kind);
redisReply *gms_tool_scan_next(gms_tool_t *t, gms_tool_scan_t *s);
void gms_tool_scan_close(gms_tool_scan_t *s);
int gms_tool_uncache(gms_tool_t *t, const char *id);

char *gms_tool_read_file(gms_tool_t *t, const char *option,
    const char *path, size_t *len);
int gms_tool_check_id(gms_tool_t *t, const char *id);
int gms_tool_check_actor(gms_tool_t *t, const char *urn);
int gms_tool_parse_duration(const char *s, int64_t *ms);
const char *gms_tool_shown(const char *s);

/* what a sync did, for its line on stdout and follow's log and health */
typedef struct {
    size_t                 tokens;         /* listed */
    size_t                 added;
    size_t                 updated;
    size_t                 unchanged;
    size_t                 expired;
    size_t                 pruned;
    size_t                 kept;           /* spared: the grace period, or
                                              found when asked by urn */
} gms_tool_sync_counts_t;


/*
 * Who holds a token, as a sync from GMS listed them: the privileges
 * mirror starts from it rather than listing the tokens again.
 */
typedef struct {
    char                 **urns;           /* actorUrn of each token */
    size_t                 n;
    size_t                 listed;         /* tokens, each once */
    int64_t                total;          /* listAccessTokens' total */
} gms_tool_holders_t;


struct gms_graphql_conf_s;
int gms_tool_sync(gms_tool_t *t, int prune,
    const struct gms_graphql_conf_s *gms, long page_size,
    gms_tool_sync_counts_t *counts, gms_tool_holders_t *holders);
void gms_tool_sync_print(const gms_tool_sync_counts_t *counts);
void gms_tool_holders_free(gms_tool_holders_t *holders);


/* where users' privileges come from: --privileges */
typedef enum {
    GMS_TOOL_PRIVILEGES_OFF = 0,
    GMS_TOOL_PRIVILEGES_POLICIES,          /* listPolicies, matched here */
    GMS_TOOL_PRIVILEGES_GRAPHQL            /* getGrantedPrivileges a user */
} gms_tool_privileges_e;


/* what a privileges mirror did */
typedef struct {
    size_t                 users;          /* users whose set was computed */
    size_t                 changed;        /* sets replaced */
    size_t                 removed;        /* sets of users no longer known */
    size_t                 skipped;        /* too large to write: left */
} gms_tool_privileges_counts_t;


int gms_tool_privileges_mirror(gms_tool_t *t,
    const struct gms_graphql_conf_s *gms, gms_tool_privileges_e mode,
    const gms_tool_holders_t *holders, gms_tool_privileges_counts_t *counts);
void gms_tool_privileges_print(const gms_tool_privileges_counts_t *counts);


/* create: what DataHub is asked for, and the edge's salt to check it by */
typedef struct {
    const char            *actor;
    const char            *name;
    const char            *description;    /* NULL: none */
    const char            *duration;       /* AccessTokenDuration */
    const char            *salt;
    size_t                 salt_len;
} gms_tool_create_t;


int gms_tool_duration_valid(const char *name);
int gms_tool_manage_create(gms_tool_t *t,
    const struct gms_graphql_conf_s *gms, const gms_tool_create_t *c);
int gms_tool_manage_revoke(gms_tool_t *t,
    const struct gms_graphql_conf_s *gms, const char *id);
int gms_tool_manage_list(gms_tool_t *t,
    const struct gms_graphql_conf_s *gms, const char *actor,
    long page_size);
int gms_tool_manage_check_salt(gms_tool_t *t,
    const struct gms_graphql_conf_s *gms, const char *token,
    size_t token_len, const char *salt, size_t salt_len);


/* gms-token follow: sync and the mirror, every interval, until a signal */
typedef struct {
    const struct gms_graphql_conf_s  *gms;
    long                              page_size;
    gms_tool_privileges_e             privileges;
    int64_t                           interval_ms;
} gms_tool_follow_conf_t;


int gms_tool_follow(gms_tool_t *t, const gms_tool_follow_conf_t *conf);


#endif /* _GMS_TOOL_H_INCLUDED_ */

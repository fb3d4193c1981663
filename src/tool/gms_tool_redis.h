
/*
 * gms-token's Redis: the connection the commands use, the key layout's
 * names, the transaction that writes a token, the invalidation message,
 * SCAN; gms_tool_redis.c.
 */


#ifndef _GMS_TOOL_REDIS_H_INCLUDED_
#define _GMS_TOOL_REDIS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "gms_tool.h"


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


/* SCAN MATCH <prefix><kind>*, a batch at a time, never KEYS */
typedef struct {
    char                  *pattern;
    size_t                 len;
    char                   cursor[32];
    unsigned               done:1;
    redisReply            *reply;          /* the last batch's */
} gms_tool_scan_t;


/* after a WAIT that expired, none for this long */
#define GMS_TOOL_WAIT_PAUSE    10000

/* the master's replicas are counted again after this long */
#define GMS_TOOL_ROLE_AGE      1000

/*
 * Without scripts, a write that compares first (WATCH, read, MULTI/EXEC)
 * is tried this often while another client changes its keys meanwhile
 */
#define GMS_TOOL_WATCH_TRIES   16


int gms_tool_redis_connect(gms_tool_t *t);

char *gms_tool_redis_key(gms_tool_t *t, const char *kind, const char *name,
    size_t len, size_t *key_len);
int64_t gms_tool_redis_now_ms(void);

int gms_tool_redis_put_token(gms_tool_t *t, const char *id,
    const gms_tool_token_t *tok, gms_tool_put_rc_e *rc);
int gms_tool_redis_put_append(gms_tool_t *t, const char *id,
    const gms_tool_token_t *tok);
int gms_tool_redis_put_read(gms_tool_t *t, const gms_tool_token_t *tok,
    gms_tool_put_rc_e *rc);
redisReply *gms_tool_redis_exec_read(gms_tool_t *t, size_t queued);
int gms_tool_redis_reply_error(gms_tool_t *t, redisReply *reply,
    const char *what);
int gms_tool_redis_reply_cmp(const void *one, const void *two);

int gms_tool_redis_refused(gms_tool_t *t, redisReply *reply);
int gms_tool_redis_scripts(gms_tool_t *t);
int gms_tool_redis_delete(gms_tool_t *t, const char *key, size_t key_len,
    int64_t cutoff, const char *channel, size_t channel_len, const char *id,
    size_t id_len, long long *n);
int gms_tool_redis_watch_exec(gms_tool_t *t, size_t queued,
    redisReply **reply);
int gms_tool_redis_wait(gms_tool_t *t);
int gms_tool_redis_publish(gms_tool_t *t, const char *what, size_t len);
int gms_tool_redis_uncache(gms_tool_t *t, const char *id);

int gms_tool_redis_scan_open(gms_tool_t *t, gms_tool_scan_t *s,
    const char *kind);
redisReply *gms_tool_redis_scan_next(gms_tool_t *t, gms_tool_scan_t *s);
void gms_tool_redis_scan_close(gms_tool_scan_t *s);


#endif /* _GMS_TOOL_REDIS_H_INCLUDED_ */

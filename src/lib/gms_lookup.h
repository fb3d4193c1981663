
/*
 * A token's Redis lookup: the script, and its reply parsed (hiredis's
 * replies, whoever read them: the module's reader or gms-token's); the
 * same lookup made of plain commands, for a server that refuses scripts.
 */


#ifndef _GMS_LOOKUP_H_INCLUDED_
#define _GMS_LOOKUP_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>


typedef enum {
    GMS_LOOKUP_FOUND = 0,
    GMS_LOOKUP_UNKNOWN,
    GMS_LOOKUP_BAD_REPLY
} gms_lookup_rc_e;


/* the user's status, as gms-token wrote it */
typedef enum {
    GMS_LOOKUP_ACTIVE = 0,
    GMS_LOOKUP_INACTIVE,        /* suspended or soft-removed */
    GMS_LOOKUP_DELETED          /* hard-deleted only: no corpUserKey */
} gms_lookup_inactive_e;


typedef struct {
    const char            *actor;
    size_t                 actor_len;
    const char            *type;
    size_t                 type_len;
    int64_t                expires_at;     /* ms since the epoch, 0: never */
    redisReply           **privileges;     /* string elements */
    size_t                 nprivileges;
    unsigned               inactive;       /* gms_lookup_inactive_e */
    const char            *error;          /* with GMS_LOOKUP_BAD_REPLY */
} gms_lookup_t;


/*
 * Longer than any token type's name: a type copied into this many bytes,
 * cut, is still no token type.
 */
#define GMS_LOOKUP_TYPE_MAX  32


gms_lookup_rc_e gms_lookup_reply_parse(const redisReply *reply,
    gms_lookup_t *lookup);
gms_lookup_rc_e gms_lookup_members_parse(const redisReply *reply,
    gms_lookup_t *lookup);

/*
 * Without scripts: HMGET <prefix>token:<id> actor expiresAt type, then
 * MULTI, SISMEMBER <prefix>inactive <actor>, SISMEMBER <prefix>deleted
 * <actor>, SMEMBERS <prefix>actor:<actor>, EXEC.  The first sets the
 * token's fields (GMS_LOOKUP_FOUND: the user's to be read), the second
 * (EXEC's reply) the user's, leaving the token's: the same gms_lookup_t
 * as the script's reply gives.
 */
gms_lookup_rc_e gms_lookup_token_parse(const redisReply *reply,
    gms_lookup_t *lookup);
gms_lookup_rc_e gms_lookup_user_parse(const redisReply *reply,
    gms_lookup_t *lookup);

/* an error reply that says the server runs no script for this client */
int gms_lookup_scripts_refused(const char *error, size_t len);

extern const char    gms_lookup_script[];
extern const size_t  gms_lookup_script_len;


#endif /* _GMS_LOOKUP_H_INCLUDED_ */

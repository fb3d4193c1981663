
/*
 * Pure token helpers shared by the nginx module and the gms-token tool:
 * no nginx types here, so that unit tests and fuzzers can call them alone.
 */


#ifndef _GMS_TOKEN_H_INCLUDED_
#define _GMS_TOKEN_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>


/* DataHub's PATs are JWTs of a few hundred bytes; 4k leaves ample room */
#define GMS_TOKEN_MAX_LEN      4096

/* the key layout: <prefix>token:<id> (a hash), <prefix>actor:<urn> (a set) */
#define GMS_KEY_TOKEN          "token:"
#define GMS_KEY_ACTOR          "actor:"
/*
 * <prefix>invalidate: the channel every edge subscribes to.  A message is
 * a token id (drop that token), a user URN (drop every token of the user:
 * its privileges changed) or "*" (drop everything).
 */
#define GMS_KEY_INVALIDATE     "invalidate"
#define GMS_INVALIDATE_ALL     "*"
/*
 * <prefix>sync: the hash gms-token follow keeps its health in: at (ms
 * since the epoch of the last complete sync), tokens, users, interval
 * (ms), error (the last failure, "" after a success), error_at, failures
 * (in a row, 0 after a success).
 */
#define GMS_KEY_SYNC           "sync"

/* standard base64, with padding, of a 32-byte SHA-256 digest */
#define GMS_TOKEN_ID_LEN       44

/*
 * What a cache entry may hold, checked by gms-token when it writes and by
 * the module when it reads: an actor goes into a request header to GMS,
 * privileges into $gms_token_privileges and the privilege checks.
 */
#define GMS_ACTOR_MAX          512
#define GMS_PRIVILEGE_MAX      128
#define GMS_PRIVILEGES_MAX     256


/* what $gms_token_type says; the names as DataHub's TokenType spells them */
typedef enum {
    GMS_TOKEN_NONE = 0,
    GMS_TOKEN_PERSONAL,
    GMS_TOKEN_SESSION,
    GMS_TOKEN_SERVICE_ACCOUNT,
    GMS_TOKEN_SYSTEM,               /* the system client, not a token */
    GMS_TOKEN_NTYPES
} gms_token_type_e;


typedef enum {
    GMS_LOOKUP_FOUND = 0,
    GMS_LOOKUP_UNKNOWN,
    GMS_LOOKUP_BAD_REPLY
} gms_lookup_rc_e;


typedef struct {
    const char            *actor;
    size_t                 actor_len;
    const char            *type;
    size_t                 type_len;
    int64_t                expires_at;     /* ms since the epoch, 0: never */
    redisReply           **privileges;     /* string elements */
    size_t                 nprivileges;
    const char            *error;          /* with GMS_LOOKUP_BAD_REPLY */
} gms_lookup_t;


int gms_bearer_parse(const unsigned char *value, size_t len,
    const unsigned char **token, size_t *token_len);
int gms_basic_parse(const unsigned char *value, size_t len,
    const unsigned char **credentials, size_t *credentials_len);
gms_token_type_e gms_token_type_parse(const char *name, size_t len);
void gms_token_id(const unsigned char *token, size_t token_len,
    const unsigned char *salt, size_t salt_len,
    char id[GMS_TOKEN_ID_LEN + 1]);
int gms_token_id_valid(const char *id, size_t len);
int gms_parse_ms(const char *s, size_t len, int64_t *ms);
int gms_privilege_valid(const char *name, size_t len);
int gms_actor_valid(const char *urn, size_t len);

void gms_mask_credentials(unsigned char *buf, size_t len,
    const char *const *headers, size_t nheaders);

gms_lookup_rc_e gms_lookup_reply_parse(const redisReply *reply,
    gms_lookup_t *lookup);
gms_lookup_rc_e gms_members_reply_parse(const redisReply *reply,
    gms_lookup_t *lookup);

extern const char   *gms_token_type_names[GMS_TOKEN_NTYPES];

extern const char    gms_lookup_script[];
extern const size_t  gms_lookup_script_len;


#endif /* _GMS_TOKEN_H_INCLUDED_ */

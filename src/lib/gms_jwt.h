
/*
 * DataHub's access tokens, verified without asking anyone: HS256 JWTs as
 * GMS's StatelessTokenService signs them (claims actorType, actorId, type,
 * version, exp).  Pure: no nginx types, for unit tests and fuzzers.
 */


#ifndef _GMS_JWT_H_INCLUDED_
#define _GMS_JWT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "gms_contract.h"
#include "gms_token.h"


/* gms_token_signing_key_file may be given twice: the old key and the new */
#define GMS_JWT_KEYS_MAX       2

#define GMS_JWT_ACTOR_PREFIX   "urn:li:corpuser:"


typedef enum {
    GMS_JWT_OK = 0,
    GMS_JWT_MALFORMED,          /* not a JWT of DataHub's claims */
    GMS_JWT_BAD_SIGNATURE,      /* no key signed it, or not HS256 */
    GMS_JWT_EXPIRED,            /* exp passed */
    GMS_JWT_PREMATURE           /* nbf not reached */
} gms_jwt_rc_e;


typedef struct {
    const unsigned char   *data;
    size_t                 len;
} gms_jwt_key_t;


typedef struct {
    gms_token_type_e       type;
    int                    version;        /* 1: stateless, 2: stateful */
    int64_t                expires_at;     /* exp, in ms; 0: none */
    char                   actor[GMS_ACTOR_MAX + 1];  /* urn:li:corpuser: */
    size_t                 actor_len;
    const char            *error;          /* why, when not GMS_JWT_OK */
} gms_jwt_claims_t;


gms_jwt_rc_e gms_jwt_verify(const unsigned char *token, size_t len,
    const gms_jwt_key_t *keys, size_t nkeys, int64_t now_ms,
    int64_t leeway_ms, gms_jwt_claims_t *claims);
gms_jwt_rc_e gms_jwt_payload_json(const unsigned char *json, size_t len,
    int64_t now_ms, int64_t leeway_ms, int scan, gms_jwt_claims_t *claims);
const char *gms_jwt_string(json_t *obj, const char *name, size_t *len);


/*
 * Whether GMS checks the token against its store: version 2 tokens
 * (StatefulTokenService's); the edge also asks for every token that is
 * not a session token, so a stateless personal token needs an entry too.
 * An external OAuth token (gms_oauth.c) has no entry: as a session token,
 * only its user's privileges are read.
 */
#define gms_jwt_stateful(claims)                                             \
    ((claims)->version == 2                                                  \
     || ((claims)->type != GMS_TOKEN_SESSION                                 \
         && (claims)->type != GMS_TOKEN_OAUTH))


#endif /* _GMS_JWT_H_INCLUDED_ */

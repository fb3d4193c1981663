
/*
 * External OAuth tokens, as DataHub's DataHubOAuthAuthenticator (1.3.0)
 * accepts them: JWTs of a trusted issuer and audience, signed with a key
 * of the issuer's JWKS, for the user __oauth_<issuer>_<subject>.  Pure:
 * no nginx types, for unit tests and fuzzers.
 */


#ifndef _GMS_OAUTH_H_INCLUDED_
#define _GMS_OAUTH_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "gms_contract.h"
#include "gms_oauth_jwks.h"


#define GMS_OAUTH_AUDIENCES_MAX   16
#define GMS_OAUTH_CLAIM_MAX       64

/* ServiceAccountService.USER_ID_PREFIX, under the corpuser urn */
#define GMS_OAUTH_ACTOR_PREFIX    "urn:li:corpuser:__oauth_"


/* GMS's "algorithm": RSA only (its resolver refuses ES*, and HS*) */
typedef enum {
    GMS_OAUTH_RS256 = 0,
    GMS_OAUTH_RS384,
    GMS_OAUTH_RS512,
    GMS_OAUTH_PS256,
    GMS_OAUTH_PS384,
    GMS_OAUTH_PS512,
    GMS_OAUTH_NALGS
} gms_oauth_alg_e;


typedef enum {
    GMS_OAUTH_OK = 0,
    GMS_OAUTH_NOT_OAUTH,        /* HS256 and no trusted issuer: DataHub's */
    GMS_OAUTH_MALFORMED,        /* not a JWT, or a claim missing or wrong */
    GMS_OAUTH_UNTRUSTED,        /* no provider has its iss and an aud */
    GMS_OAUTH_BAD_SIGNATURE,    /* alg, kid or signature */
    GMS_OAUTH_EXPIRED,          /* exp passed */
    GMS_OAUTH_PREMATURE         /* nbf not reached */
} gms_oauth_rc_e;


typedef struct {
    const char            *issuer;         /* NUL-terminated, all these */
    const char            *audiences[GMS_OAUTH_AUDIENCES_MAX];
    size_t                 naudiences;
    const char            *user_claim;     /* "sub" by default */
    gms_oauth_alg_e        alg;
    const gms_jwks_t      *jwks;
} gms_oauth_provider_t;


typedef struct {
    size_t                 provider;       /* the index of the one used */
    int64_t                expires_at;     /* exp, in ms; 0: none */
    char                   actor[GMS_ACTOR_MAX + 1];
    size_t                 actor_len;
    const char            *error;          /* why, when not GMS_OAUTH_OK */
} gms_oauth_claims_t;


gms_oauth_rc_e gms_oauth_verify(const unsigned char *token, size_t len,
    const gms_oauth_provider_t *providers, size_t nproviders,
    int64_t now_ms, int64_t leeway_ms, gms_oauth_claims_t *claims);
int gms_oauth_actor(const char *issuer, size_t issuer_len,
    const char *subject, size_t subject_len, char *actor, size_t *len);
int gms_oauth_alg_parse(const char *name, size_t len,
    gms_oauth_alg_e *alg);

extern const char  *gms_oauth_alg_names[GMS_OAUTH_NALGS];


#endif /* _GMS_OAUTH_H_INCLUDED_ */

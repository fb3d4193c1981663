
/*
 * An identity provider's JSON Web Key Set (RFC 7517), the public keys its
 * OAuth tokens are signed with, as DataHub's DataHubOAuthSigningKeyResolver
 * (1.3.0) reads its jwks_uri: the RSA keys of "keys", each found by its
 * kid.  Pure: no nginx types, for unit tests, fuzzers and gms-token.
 */


#ifndef _GMS_OAUTH_JWKS_H_INCLUDED_
#define _GMS_OAUTH_JWKS_H_INCLUDED_


#include <stddef.h>

#include <openssl/evp.h>


/* a JWKS is a file of a few kilobytes; what is past these is refused */
#define GMS_JWKS_MAX_LEN       (1024 * 1024)
#define GMS_JWKS_KEYS_MAX      64
#define GMS_JWKS_KID_MAX       256

/* jjwt 0.11 (GMS's) refuses a weaker RSA key: WeakKeyException */
#define GMS_JWKS_RSA_MIN_BITS  2048


typedef struct gms_jwks_s  gms_jwks_t;


gms_jwks_t *gms_oauth_jwks_parse(const char *data, size_t len,
    const char **error);
void gms_oauth_jwks_free(gms_jwks_t *jwks);
size_t gms_oauth_jwks_nkeys(const gms_jwks_t *jwks);
EVP_PKEY *gms_oauth_jwks_find(const gms_jwks_t *jwks, const char *kid,
    size_t kid_len);

/* base64url, padding optional; *out is malloc'ed; 0 or -1 */
int gms_oauth_jwks_b64url_decode(const char *in, size_t len,
    unsigned char **out, size_t *out_len);


#endif /* _GMS_OAUTH_JWKS_H_INCLUDED_ */

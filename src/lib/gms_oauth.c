
/*
 * External OAuth tokens, checked as DataHub's DataHubOAuthAuthenticator
 * checks them (metadata-service/auth-impl, 1.3.0, PR 14707; unchanged in
 * what follows through 1.6.x):
 *
 *   - the payload's iss, a string, and its aud, a string or an array of
 *     them, pick the first provider whose issuer is iss and whose
 *     audiences hold one of aud (OAuthConfigurationFetcher.
 *     findMatchingProvider: exact, case-sensitive matches);
 *   - the header's alg must be that provider's algorithm (RS256 unless
 *     configured; RS384/512 and PS256/384/512 as well, never ES* or HS*),
 *     its kid a key of the provider's JWKS
 *     (DataHubOAuthSigningKeyResolver), and the signature good;
 *   - jjwt 0.11 then checks exp and nbf (no clock skew unless given);
 *   - the user claim ("sub", or userIdClaim) must be a string, and the
 *     user is ServiceAccountService.buildServiceUserUrn's:
 *     __oauth_<iss without "http://"/"https://", each other character not
 *     [A-Za-z0-9] made '_'>_<subject>, as urn:li:corpuser:.
 *
 * A JWT signed HS256 whose iss is no provider's is DataHub's own kind:
 * GMS_OAUTH_NOT_OAUTH, for the caller's other checks, as GMS's
 * DataHubTokenAuthenticator comes before this one.  Any other token of
 * three parts is refused here when it fails, whatever its iss.
 */


#include "gms_jwt.h"
#include "gms_oauth.h"
#include "gms_token.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/rsa.h>


const char  *gms_oauth_alg_names[GMS_OAUTH_NALGS] = {
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"
};


static json_t *gms_oauth_part(const unsigned char *in, size_t len);
static int gms_oauth_audience(json_t *aud, const gms_oauth_provider_t *p);
static int gms_oauth_signed(const gms_oauth_provider_t *p, EVP_PKEY *pkey,
    const unsigned char *data, size_t data_len, const unsigned char *sig,
    size_t sig_len);
static int gms_oauth_seconds(json_t *obj, const char *name, int64_t *ms);


gms_oauth_rc_e
gms_oauth_verify(const unsigned char *token, size_t len,
    const gms_oauth_provider_t *providers, size_t nproviders,
    int64_t now_ms, int64_t leeway_ms, gms_oauth_claims_t *claims)
{
    int                          hs256;
    size_t                       i, dot1, dot2, alg_len, iss_len, kid_len;
    size_t                       sub_len;
    json_t                      *header, *payload, *aud;
    int64_t                      nbf;
    EVP_PKEY                    *pkey;
    const char                  *alg, *iss, *kid, *sub;
    gms_oauth_rc_e               rc;
    const gms_oauth_provider_t  *p;

    memset(claims, 0, sizeof(gms_oauth_claims_t));

    dot1 = 0;
    dot2 = 0;

    for (i = 0; i < len && len <= GMS_TOKEN_MAX_LEN; i++) {
        if (token[i] == '.') {
            if (dot1 == 0) {
                dot1 = i;

            } else if (dot2 == 0) {
                dot2 = i;

            } else {
                break;
            }
        }
    }

    if (len > GMS_TOKEN_MAX_LEN || i != len || dot1 == 0 || dot2 == 0
        || dot2 == dot1 + 1)
    {
        claims->error = "not a JWT";
        return GMS_OAUTH_NOT_OAUTH;
    }

    header = gms_oauth_part(token, dot1);
    payload = gms_oauth_part(token + dot1 + 1, dot2 - dot1 - 1);

    rc = GMS_OAUTH_NOT_OAUTH;

    if (header == NULL) {
        claims->error = "not a JWT: its header is no JSON object";
        goto done;
    }

    alg = gms_jwt_string(header, "alg", &alg_len);
    hs256 = (alg != NULL && alg_len == 5 && memcmp(alg, "HS256", 5) == 0);

    iss = (payload != NULL) ? gms_jwt_string(payload, "iss", &iss_len)
                            : NULL;

    if (hs256) {
        for (i = 0; iss != NULL && i < nproviders; i++) {
            if (strlen(providers[i].issuer) == iss_len
                && memcmp(providers[i].issuer, iss, iss_len) == 0)
            {
                break;
            }
        }

        if (iss == NULL || i == nproviders) {
            claims->error = "HS256 and no trusted issuer: DataHub's kind";
            goto done;
        }
    }

    rc = GMS_OAUTH_MALFORMED;

    if (payload == NULL) {
        claims->error = "payload is no JSON object";
        goto done;
    }

    if (iss == NULL) {
        claims->error = "missing issuer claim";
        goto done;
    }

    aud = json_object_get(payload, "aud");

    if (!json_is_string(aud) && !json_is_array(aud)) {
        claims->error = "missing audience claim";
        goto done;
    }

    rc = GMS_OAUTH_UNTRUSTED;
    p = NULL;

    for (i = 0; i < nproviders; i++) {
        if (strlen(providers[i].issuer) == iss_len
            && memcmp(providers[i].issuer, iss, iss_len) == 0
            && gms_oauth_audience(aud, &providers[i]))
        {
            p = &providers[i];
            claims->provider = i;
            break;
        }
    }

    if (p == NULL) {
        claims->error = "no gms_token_oauth has its issuer and audience";
        goto done;
    }

    rc = GMS_OAUTH_BAD_SIGNATURE;

    if (alg == NULL || strlen(gms_oauth_alg_names[p->alg]) != alg_len
        || memcmp(alg, gms_oauth_alg_names[p->alg], alg_len) != 0)
    {
        claims->error = "alg is not the issuer's algorithm";
        goto done;
    }

    kid = gms_jwt_string(header, "kid", &kid_len);

    if (kid == NULL) {
        claims->error = "header has no kid";
        goto done;
    }

    pkey = gms_oauth_jwks_find(p->jwks, kid, kid_len);

    if (pkey == NULL) {
        claims->error = "kid is not in the issuer's JWKS";
        goto done;
    }

    if (!gms_oauth_signed(p, pkey, token, dot2, token + dot2 + 1,
                          len - dot2 - 1))
    {
        claims->error = "signature does not verify";
        goto done;
    }

    rc = GMS_OAUTH_MALFORMED;

    if (gms_oauth_seconds(payload, "exp", &claims->expires_at) != 0
        || gms_oauth_seconds(payload, "nbf", &nbf) != 0)
    {
        claims->error = "exp or nbf is not a number of seconds";
        goto done;
    }

    if (claims->expires_at != 0 && now_ms - leeway_ms > claims->expires_at) {
        claims->error = "expired";
        rc = GMS_OAUTH_EXPIRED;
        goto done;
    }

    if (nbf != 0 && now_ms + leeway_ms < nbf) {
        claims->error = "not valid yet (nbf)";
        rc = GMS_OAUTH_PREMATURE;
        goto done;
    }

    sub = gms_jwt_string(payload, p->user_claim, &sub_len);

    if (sub == NULL) {
        claims->error = "the user claim is missing or not a string";
        goto done;
    }

    if (gms_oauth_actor(iss, iss_len, sub, sub_len, claims->actor,
                        &claims->actor_len)
        != 0)
    {
        claims->error = "the user's urn is too long or holds control bytes";
        goto done;
    }

    claims->error = NULL;
    rc = GMS_OAUTH_OK;

done:

    json_decref(header);
    json_decref(payload);

    return rc;
}


/*
 * ServiceAccountService.buildServiceUserUrn, as urn:li:corpuser:<id>:
 * issuer.replaceAll("https?://", "").replaceAll("[^a-zA-Z0-9]", "_"),
 * Java's regular expressions matching code points, a character past the
 * basic plane (a surrogate pair) included: one '_' for each character.
 */

int
gms_oauth_actor(const char *issuer, size_t issuer_len, const char *subject,
    size_t subject_len, char *actor, size_t *len)
{
    size_t          i, n, units;
    unsigned char   ch;

    n = sizeof(GMS_OAUTH_ACTOR_PREFIX) - 1;
    memcpy(actor, GMS_OAUTH_ACTOR_PREFIX, n);

    for (i = 0; i < issuer_len; /* void */) {

        if (issuer_len - i >= 8 && memcmp(issuer + i, "https://", 8) == 0) {
            i += 8;
            continue;
        }

        if (issuer_len - i >= 7 && memcmp(issuer + i, "http://", 7) == 0) {
            i += 7;
            continue;
        }

        ch = (unsigned char) issuer[i++];

        if (ch >= 0x80 && ch < 0xc0) {
            continue;               /* a continuation byte: no unit */
        }

        units = 1;

        if (n + units > GMS_ACTOR_MAX) {
            return -1;
        }

        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
            || (ch >= '0' && ch <= '9'))
        {
            actor[n++] = (char) ch;
            continue;
        }

        while (units--) {
            actor[n++] = '_';
        }
    }

    if (n + 1 + subject_len > GMS_ACTOR_MAX) {
        return -1;
    }

    actor[n++] = '_';
    memcpy(actor + n, subject, subject_len);
    n += subject_len;
    actor[n] = '\0';

    if (!gms_token_actor_valid(actor, n)) {
        return -1;
    }

    *len = n;

    return 0;
}


int
gms_oauth_alg_parse(const char *name, size_t len, gms_oauth_alg_e *alg)
{
    size_t  i;

    for (i = 0; i < GMS_OAUTH_NALGS; i++) {
        if (strlen(gms_oauth_alg_names[i]) == len
            && memcmp(gms_oauth_alg_names[i], name, len) == 0)
        {
            *alg = (gms_oauth_alg_e) i;
            return 0;
        }
    }

    return -1;
}


/* a part of the token as a JSON object (a member twice is refused), or NULL */

static json_t *
gms_oauth_part(const unsigned char *in, size_t len)
{
    size_t          n;
    json_t         *obj;
    unsigned char  *buf;

    if (memchr(in, '=', len) != NULL
        || gms_oauth_jwks_b64url_decode((const char *) in, len, &buf, &n) != 0)
    {
        return NULL;
    }

    obj = json_loadb((const char *) buf, n, JSON_REJECT_DUPLICATES, NULL);

    free(buf);

    if (obj != NULL && !json_is_object(obj)) {
        json_decref(obj);
        return NULL;
    }

    return obj;
}


/* whether one of the token's audiences is one of the provider's */

static int
gms_oauth_audience(json_t *aud, const gms_oauth_provider_t *p)
{
    size_t   i, k, len;
    json_t  *v;

    for (i = 0; i < (json_is_array(aud) ? json_array_size(aud) : 1); i++) {
        v = json_is_array(aud) ? json_array_get(aud, i) : aud;

        if (!json_is_string(v)) {
            continue;
        }

        len = json_string_length(v);

        for (k = 0; k < p->naudiences; k++) {
            if (strlen(p->audiences[k]) == len
                && memcmp(p->audiences[k], json_string_value(v), len) == 0)
            {
                return 1;
            }
        }
    }

    return 0;
}


/* RSASSA-PKCS1-v1_5 (RS*) or RSASSA-PSS, salt of the hash's length (PS*) */

static int
gms_oauth_signed(const gms_oauth_provider_t *p, EVP_PKEY *pkey,
    const unsigned char *data, size_t data_len, const unsigned char *sig,
    size_t sig_len)
{
    int              ok;
    size_t           n;
    EVP_MD_CTX      *mctx;
    const EVP_MD    *md;
    EVP_PKEY_CTX    *pctx;
    unsigned char   *bytes;

    switch (p->alg) {
    case GMS_OAUTH_RS384:
    case GMS_OAUTH_PS384:
        md = EVP_sha384();
        break;

    case GMS_OAUTH_RS512:
    case GMS_OAUTH_PS512:
        md = EVP_sha512();
        break;

    default:
        md = EVP_sha256();
        break;
    }

    if (memchr(sig, '=', sig_len) != NULL
        || gms_oauth_jwks_b64url_decode((const char *) sig, sig_len, &bytes,
                                        &n)
           != 0)
    {
        return 0;
    }

    ok = 0;
    mctx = EVP_MD_CTX_new();

    if (mctx != NULL
        && EVP_DigestVerifyInit(mctx, &pctx, md, NULL, pkey) == 1
        && (p->alg < GMS_OAUTH_PS256
            || (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING)
                    == 1
                && EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx,
                                                    RSA_PSS_SALTLEN_DIGEST)
                   == 1)))
    {
        ok = (EVP_DigestVerify(mctx, bytes, n, data, data_len) == 1);
    }

    EVP_MD_CTX_free(mctx);
    free(bytes);

    return ok;
}


/*
 * An optional NumericDate, as ms; absent: 0.  RFC 7519 allows fractions
 * of a second; past what ms can hold is held as the largest.
 */

static int
gms_oauth_seconds(json_t *obj, const char *name, int64_t *ms)
{
    json_t  *v;
    double   s;

    v = json_object_get(obj, name);
    *ms = 0;

    if (v == NULL) {
        return 0;
    }

    if (!json_is_number(v)) {
        return -1;
    }

    s = json_number_value(v);

    if (!(s > 0)) {
        /* before the epoch (or NaN): long gone, and never "absent" */
        *ms = 1;

    } else if (s > (double) (INT64_MAX / 1000 / 2)) {
        *ms = INT64_MAX / 2;

    } else {
        /* jjwt: whole seconds (Number.longValue), an exp of 0.5 expired */
        *ms = (int64_t) s * 1000;

        if (*ms == 0) {
            *ms = 1;
        }
    }

    return 0;
}


/*
 * DataHub's access tokens, verified at the edge.
 *
 * GMS signs every token it issues with HS256 and its signing key, used as
 * the UTF-8 bytes of DATAHUB_TOKEN_SERVICE_SIGNING_KEY
 * (StatelessTokenService.generateAccessToken), and accepts a token when
 * (StatelessTokenService.validateAccessToken, jjwt's parser):
 *
 *   - it is header.payload.signature, each base64url, the signature an
 *     HMAC-SHA256 of "header.payload" under the key;
 *   - exp, when present, has not passed (jjwt: expired when now > exp),
 *     and nbf, when present, has been reached;
 *   - the claims type, actorId and actorType are strings, type a
 *     TokenType (SESSION, PERSONAL; SERVICE_ACCOUNT in later releases),
 *     actorType an ActorType (USER), version "1" or "2" (TokenVersion).
 *
 * The header must say alg HS256: GMS is configured with that algorithm
 * only, and "none" or another HMAC would let a forger choose the rules.
 * Signatures are compared in constant time, and the payload is parsed
 * only once its signature is known to be good.
 */


#include "gms_jwt.h"

#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>


/* the decoded header and payload; a token is at most GMS_TOKEN_MAX_LEN */
#define GMS_JWT_DECODED_MAX    (GMS_TOKEN_MAX_LEN / 4 * 3 + 3)

/* base64url of a SHA-256 HMAC, without padding */
#define GMS_JWT_SIG_LEN        43


static int gms_jwt_b64url_decode(const unsigned char *in, size_t len,
    unsigned char *out, size_t *out_len);
static int gms_jwt_b64url_char(unsigned char ch);
static json_t *gms_jwt_object(const unsigned char *in, size_t len,
    gms_jwt_claims_t *claims, const char *bad_base64, const char *bad_json);
static gms_jwt_rc_e gms_jwt_header(const unsigned char *in, size_t len,
    gms_jwt_claims_t *claims);
static int gms_jwt_signed(const unsigned char *token, size_t signed_len,
    const unsigned char *sig, size_t sig_len, const gms_jwt_key_t *keys,
    size_t nkeys);
static gms_jwt_rc_e gms_jwt_payload(const unsigned char *in, size_t len,
    int64_t now_ms, int64_t leeway_ms, gms_jwt_claims_t *claims);
static int gms_jwt_seconds(json_t *obj, const char *name, int64_t *ms);


gms_jwt_rc_e
gms_jwt_verify(const unsigned char *token, size_t len,
    const gms_jwt_key_t *keys, size_t nkeys, int64_t now_ms,
    int64_t leeway_ms, gms_jwt_claims_t *claims)
{
    size_t                i, dot1, dot2;
    gms_jwt_rc_e          rc;
    const unsigned char  *sig;

    memset(claims, 0, sizeof(gms_jwt_claims_t));

    if (len > GMS_TOKEN_MAX_LEN) {
        claims->error = "longer than a token may be";
        return GMS_JWT_MALFORMED;
    }

    dot1 = 0;
    dot2 = 0;

    for (i = 0; i < len; i++) {
        if (token[i] == '.') {
            if (dot1 == 0) {
                dot1 = i;

            } else if (dot2 == 0) {
                dot2 = i;

            } else {
                claims->error = "more than three parts";
                return GMS_JWT_MALFORMED;
            }

        } else if (!gms_jwt_b64url_char(token[i])) {
            claims->error = "not base64url";
            return GMS_JWT_MALFORMED;
        }
    }

    if (dot1 == 0 || dot2 == 0 || dot2 == dot1 + 1) {
        claims->error = "not a JWT: header.payload.signature";
        return GMS_JWT_MALFORMED;
    }

    rc = gms_jwt_header(token, dot1, claims);
    if (rc != GMS_JWT_OK) {
        return rc;
    }

    sig = token + dot2 + 1;

    if (!gms_jwt_signed(token, dot2, sig, len - dot2 - 1, keys, nkeys)) {
        claims->error = "signature does not verify";
        return GMS_JWT_BAD_SIGNATURE;
    }

    return gms_jwt_payload(token + dot1 + 1, dot2 - dot1 - 1, now_ms,
                           leeway_ms, claims);
}


static gms_jwt_rc_e
gms_jwt_header(const unsigned char *in, size_t len, gms_jwt_claims_t *claims)
{
    size_t          alg_len;
    json_t         *header;
    const char     *alg;
    gms_jwt_rc_e    rc;

    header = gms_jwt_object(in, len, claims, "header is not base64url",
                            "header is not a JSON object");
    if (header == NULL) {
        return GMS_JWT_MALFORMED;
    }

    alg = gms_jwt_string(header, "alg", &alg_len);

    if (alg == NULL) {
        claims->error = "header has no alg";
        rc = GMS_JWT_MALFORMED;

    } else if (alg_len != sizeof("HS256") - 1
               || memcmp(alg, "HS256", alg_len) != 0)
    {
        claims->error = "alg is not HS256";
        rc = GMS_JWT_BAD_SIGNATURE;

    } else {
        rc = GMS_JWT_OK;
    }

    json_decref(header);

    return rc;
}


/* whether any key's HMAC-SHA256 of the signed part is the signature */

static int
gms_jwt_signed(const unsigned char *token, size_t signed_len,
    const unsigned char *sig, size_t sig_len, const gms_jwt_key_t *keys,
    size_t nkeys)
{
    size_t          i, k;
    int             ok;
    unsigned int    md_len;
    unsigned char   md[EVP_MAX_MD_SIZE];
    unsigned char   expected[GMS_JWT_SIG_LEN + 2];

    if (sig_len != GMS_JWT_SIG_LEN) {
        return 0;
    }

    ok = 0;

    for (k = 0; k < nkeys; k++) {
        if (HMAC(EVP_sha256(), keys[k].data, (int) keys[k].len, token,
                 signed_len, md, &md_len)
            == NULL || md_len != 32)
        {
            continue;
        }

        /* 32 bytes: 44 characters with one '=', dropped, made URL-safe */
        (void) EVP_EncodeBlock(expected, md, 32);

        for (i = 0; i < GMS_JWT_SIG_LEN; i++) {
            if (expected[i] == '+') {
                expected[i] = '-';

            } else if (expected[i] == '/') {
                expected[i] = '_';
            }
        }

        ok |= (CRYPTO_memcmp(expected, sig, GMS_JWT_SIG_LEN) == 0);
    }

    OPENSSL_cleanse(md, sizeof(md));

    return ok;
}


static gms_jwt_rc_e
gms_jwt_payload(const unsigned char *in, size_t len, int64_t now_ms,
    int64_t leeway_ms, gms_jwt_claims_t *claims)
{
    size_t          actor_type_len, actor_id_len, type_len, version_len;
    json_t         *payload;
    int64_t         nbf;
    const char     *actor_type, *actor_id, *type, *version;
    gms_jwt_rc_e    rc;

    payload = gms_jwt_object(in, len, claims, "payload is not base64url",
                             "payload is not a JSON object");
    if (payload == NULL) {
        return GMS_JWT_MALFORMED;
    }

    rc = GMS_JWT_MALFORMED;

    actor_type = gms_jwt_string(payload, "actorType", &actor_type_len);
    actor_id = gms_jwt_string(payload, "actorId", &actor_id_len);
    type = gms_jwt_string(payload, "type", &type_len);
    version = gms_jwt_string(payload, "version", &version_len);

    if (actor_type == NULL || actor_id == NULL || type == NULL
        || version == NULL)
    {
        claims->error = "a claim of actorType, actorId, type, version "
                        "is missing or not a string";
        goto done;
    }

    if (actor_type_len != sizeof("USER") - 1
        || memcmp(actor_type, "USER", actor_type_len) != 0)
    {
        claims->error = "actorType is not USER";
        goto done;
    }

    claims->type = gms_token_type_parse(type, type_len);

    if (claims->type == GMS_TOKEN_NONE || claims->type == GMS_TOKEN_SYSTEM) {
        claims->error = "type is not SESSION, PERSONAL or SERVICE_ACCOUNT";
        goto done;
    }

    if (version_len != 1 || (version[0] != '1' && version[0] != '2')) {
        claims->error = "version is not \"1\" or \"2\"";
        goto done;
    }

    claims->version = version[0] - '0';

    if (actor_id_len == 0
        || actor_id_len > GMS_ACTOR_MAX - (sizeof(GMS_JWT_ACTOR_PREFIX) - 1))
    {
        claims->error = "actorId is empty or too long";
        goto done;
    }

    memcpy(claims->actor, GMS_JWT_ACTOR_PREFIX,
           sizeof(GMS_JWT_ACTOR_PREFIX) - 1);
    memcpy(claims->actor + sizeof(GMS_JWT_ACTOR_PREFIX) - 1, actor_id,
           actor_id_len);
    claims->actor_len = sizeof(GMS_JWT_ACTOR_PREFIX) - 1 + actor_id_len;
    claims->actor[claims->actor_len] = '\0';

    /* the actor goes into a header to GMS: the lookup's rules apply */

    if (!gms_actor_valid(claims->actor, claims->actor_len)) {
        claims->error = "actorId holds control bytes";
        goto done;
    }

    if (gms_jwt_seconds(payload, "exp", &claims->expires_at) != 0
        || gms_jwt_seconds(payload, "nbf", &nbf) != 0)
    {
        claims->error = "exp or nbf is not a number of seconds";
        goto done;
    }

    if (claims->expires_at != 0 && now_ms - leeway_ms > claims->expires_at) {
        claims->error = "expired";
        rc = GMS_JWT_EXPIRED;
        goto done;
    }

    if (nbf != 0 && now_ms + leeway_ms < nbf) {
        claims->error = "not valid yet (nbf)";
        rc = GMS_JWT_PREMATURE;
        goto done;
    }

    claims->error = NULL;
    rc = GMS_JWT_OK;

done:

    json_decref(payload);

    return rc;
}


/* a part of the token as a JSON object (a member twice is refused), or NULL */

static json_t *
gms_jwt_object(const unsigned char *in, size_t len, gms_jwt_claims_t *claims,
    const char *bad_base64, const char *bad_json)
{
    size_t          n;
    json_t         *obj;
    unsigned char   buf[GMS_JWT_DECODED_MAX];

    if (gms_jwt_b64url_decode(in, len, buf, &n) != 0) {
        claims->error = bad_base64;
        return NULL;
    }

    obj = json_loadb((const char *) buf, n, JSON_REJECT_DUPLICATES, NULL);

    if (obj == NULL || !json_is_object(obj)) {
        json_decref(obj);
        claims->error = bad_json;
        return NULL;
    }

    return obj;
}


/* a string member without NUL bytes, or NULL (gms_oauth.c's claims too) */

const char *
gms_jwt_string(json_t *obj, const char *name, size_t *len)
{
    json_t      *v;
    const char  *s;

    v = json_object_get(obj, name);

    if (!json_is_string(v)) {
        return NULL;
    }

    s = json_string_value(v);
    *len = json_string_length(v);

    return (memchr(s, '\0', *len) == NULL) ? s : NULL;
}


/*
 * An optional NumericDate (RFC 7519: seconds), as ms; absent: 0.  DataHub
 * writes integers; a value past what ms can hold is held as the largest.
 */

static int
gms_jwt_seconds(json_t *obj, const char *name, int64_t *ms)
{
    json_t      *v;
    json_int_t   s;

    v = json_object_get(obj, name);
    *ms = 0;

    if (v == NULL) {
        return 0;
    }

    if (!json_is_integer(v)) {
        return -1;
    }

    s = json_integer_value(v);

    if (s <= 0) {
        /* before the epoch: long gone, and never "absent" */
        *ms = 1;

    } else if (s > INT64_MAX / 1000 / 2) {
        *ms = INT64_MAX / 2;

    } else {
        *ms = (int64_t) s * 1000;
    }

    return 0;
}


static int
gms_jwt_b64url_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
           || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
}


/*
 * base64url without padding (RFC 7515, 2), through libcrypto's decoder:
 * the alphabet is mapped to the standard one and the padding put back.
 * The input is known to hold only base64url characters.
 */

static int
gms_jwt_b64url_decode(const unsigned char *in, size_t len,
    unsigned char *out, size_t *out_len)
{
    int             n;
    size_t          i, pad;
    unsigned char   std[GMS_TOKEN_MAX_LEN + 3];

    if (len == 0 || len % 4 == 1 || len > GMS_TOKEN_MAX_LEN) {
        return -1;
    }

    for (i = 0; i < len; i++) {
        std[i] = (in[i] == '-') ? '+' : (in[i] == '_') ? '/' : in[i];
    }

    pad = (4 - len % 4) % 4;
    memset(std + len, '=', pad);

    n = EVP_DecodeBlock(out, std, (int) (len + pad));

    if (n < 0 || (size_t) n < pad) {
        return -1;
    }

    *out_len = (size_t) n - pad;

    return 0;
}

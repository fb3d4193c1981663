
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
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>


/* the decoded header and payload; a token is at most GMS_TOKEN_MAX_LEN */
#define GMS_JWT_DECODED_MAX    (GMS_TOKEN_MAX_LEN / 4 * 3 + 3)

/* base64url of a SHA-256 HMAC, without padding */
#define GMS_JWT_SIG_LEN        43

/* the keys a process keeps a keyed HMAC context for */
#define GMS_JWT_MACS           4

/* the longest header remembered as good ({"alg":"HS256","typ":"JWT"}: 36) */
#define GMS_JWT_HEADER_MAX     128


/*
 * An HMAC-SHA256 context keyed once: OpenSSL 3 fetches the algorithm and
 * the digest anew at each HMAC() call, which costs more than the HMAC of
 * a token; a keyed context is only initialized again.  Per process, as
 * gms_token_id()'s digest (callers are single-threaded); the key is a
 * copy, cleansed when its context makes room for another key's.
 */
typedef struct {
    unsigned char         *key;
    size_t                 len;
    EVP_MAC_CTX           *ctx;
} gms_jwt_mac_t;


/* the payload's claims as read, by the scanner or by jansson */

enum {
    GMS_JWT_ACTOR_TYPE = 0,
    GMS_JWT_ACTOR_ID,
    GMS_JWT_TYPE,
    GMS_JWT_VERSION,
    GMS_JWT_NSTRINGS
};

typedef struct {
    const char            *str[GMS_JWT_NSTRINGS];  /* NULL: not a string */
    size_t                 len[GMS_JWT_NSTRINGS];
    int                    bad_time;       /* exp or nbf not an integer */
    int64_t                exp;            /* ms; 0: absent */
    int64_t                nbf;
} gms_jwt_read_t;

typedef struct {
    const char            *data;
    size_t                 len;
} gms_jwt_kv_t;

/* the members a flat payload may have for the scanner (GMS's have 8) */
#define GMS_JWT_FLAT_KEYS      32


static int gms_jwt_b64url_decode(const unsigned char *in, size_t len,
    unsigned char *out, size_t *out_len);
static EVP_MAC_CTX *gms_jwt_mac(const gms_jwt_key_t *key);
static int gms_jwt_hmac(const gms_jwt_key_t *key, const unsigned char *in,
    size_t len, unsigned char md[32]);
static json_t *gms_jwt_object(const unsigned char *in, size_t len,
    gms_jwt_claims_t *claims, const char *bad_base64, const char *bad_json);
static gms_jwt_rc_e gms_jwt_header(const unsigned char *in, size_t len,
    gms_jwt_claims_t *claims);
static int gms_jwt_signed(const unsigned char *token, size_t signed_len,
    const unsigned char *sig, size_t sig_len, const gms_jwt_key_t *keys,
    size_t nkeys);
static gms_jwt_rc_e gms_jwt_payload(const unsigned char *in, size_t len,
    int64_t now_ms, int64_t leeway_ms, gms_jwt_claims_t *claims);
static gms_jwt_rc_e gms_jwt_claims(gms_jwt_read_t *rd, int64_t now_ms,
    int64_t leeway_ms, gms_jwt_claims_t *claims);
static int gms_jwt_flat(const char *p, size_t len, gms_jwt_read_t *rd);
static int gms_jwt_flat_string(const char **pp, const char *end,
    const char **s, size_t *len);
static int gms_jwt_flat_integer(const char **pp, const char *end,
    int64_t *v);
static const char *gms_jwt_ws(const char *p, const char *end);
static int gms_jwt_seconds(json_t *obj, const char *name, int64_t *ms);
static int64_t gms_jwt_ms(int64_t s);


/* the base64url alphabet (RFC 4648, 5): each character's value + 1; 0: none */
static const unsigned char  gms_jwt_b64url[256] = {
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, 63,  0,  0,
    53, 54, 55, 56, 57, 58, 59, 60, 61, 62,  0,  0,  0,  0,  0,  0,
     0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,  0,  0,  0,  0, 64,
     0, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
    42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52,  0,  0,  0,  0,  0
};


static EVP_MAC        *gms_jwt_hmac_alg;
static gms_jwt_mac_t   gms_jwt_macs[GMS_JWT_MACS];
static size_t          gms_jwt_macs_next;

/*
 * The last header found good: GMS writes the same one in every token, so
 * it is parsed once, not at each token (the same bytes, the same answer).
 */
static unsigned char   gms_jwt_good_header[GMS_JWT_HEADER_MAX];
static size_t          gms_jwt_good_header_len;


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

        } else if (gms_jwt_b64url[token[i]] == 0) {
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

    if (len != 0 && len == gms_jwt_good_header_len
        && memcmp(in, gms_jwt_good_header, len) == 0)
    {
        return GMS_JWT_OK;
    }

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

        if (len <= GMS_JWT_HEADER_MAX) {
            memcpy(gms_jwt_good_header, in, len);
            gms_jwt_good_header_len = len;
        }
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
    unsigned char   md[32];
    unsigned char   expected[GMS_JWT_SIG_LEN + 2];

    if (sig_len != GMS_JWT_SIG_LEN) {
        return 0;
    }

    ok = 0;

    for (k = 0; k < nkeys; k++) {
        if (gms_jwt_hmac(&keys[k], token, signed_len, md) != 0) {
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
    size_t         n;
    unsigned char  buf[GMS_JWT_DECODED_MAX];

    if (gms_jwt_b64url_decode(in, len, buf, &n) != 0) {
        claims->error = "payload is not base64url";
        return GMS_JWT_MALFORMED;
    }

    return gms_jwt_payload_json(buf, n, now_ms, leeway_ms, 1, claims);
}


/*
 * The payload's JSON as claims.  GMS's payloads are flat objects of
 * ASCII strings and integers, which gms_jwt_flat() reads (scan set);
 * anything else it leaves to jansson, as does scan 0 (the fuzzer checks
 * that both read every text alike).
 */

gms_jwt_rc_e
gms_jwt_payload_json(const unsigned char *json, size_t len, int64_t now_ms,
    int64_t leeway_ms, int scan, gms_jwt_claims_t *claims)
{
    json_t          *payload;
    gms_jwt_rc_e     rc;
    gms_jwt_read_t   rd;

    memset(claims, 0, sizeof(gms_jwt_claims_t));

    if (scan && gms_jwt_flat((const char *) json, len, &rd) == 0) {
        return gms_jwt_claims(&rd, now_ms, leeway_ms, claims);
    }

    payload = json_loadb((const char *) json, len, JSON_REJECT_DUPLICATES,
                         NULL);

    if (payload == NULL || !json_is_object(payload)) {
        json_decref(payload);
        claims->error = "payload is not a JSON object";
        return GMS_JWT_MALFORMED;
    }

    rd.str[GMS_JWT_ACTOR_TYPE] = gms_jwt_string(payload, "actorType",
                                                &rd.len[GMS_JWT_ACTOR_TYPE]);
    rd.str[GMS_JWT_ACTOR_ID] = gms_jwt_string(payload, "actorId",
                                              &rd.len[GMS_JWT_ACTOR_ID]);
    rd.str[GMS_JWT_TYPE] = gms_jwt_string(payload, "type",
                                          &rd.len[GMS_JWT_TYPE]);
    rd.str[GMS_JWT_VERSION] = gms_jwt_string(payload, "version",
                                             &rd.len[GMS_JWT_VERSION]);
    rd.bad_time = (gms_jwt_seconds(payload, "exp", &rd.exp) != 0
                   || gms_jwt_seconds(payload, "nbf", &rd.nbf) != 0);

    /* the strings live in payload: claims copies what it keeps */
    rc = gms_jwt_claims(&rd, now_ms, leeway_ms, claims);

    json_decref(payload);

    return rc;
}


static gms_jwt_rc_e
gms_jwt_claims(gms_jwt_read_t *rd, int64_t now_ms, int64_t leeway_ms,
    gms_jwt_claims_t *claims)
{
    size_t       actor_type_len, actor_id_len, type_len, version_len;
    const char  *actor_type, *actor_id, *type, *version;

    actor_type = rd->str[GMS_JWT_ACTOR_TYPE];
    actor_type_len = rd->len[GMS_JWT_ACTOR_TYPE];
    actor_id = rd->str[GMS_JWT_ACTOR_ID];
    actor_id_len = rd->len[GMS_JWT_ACTOR_ID];
    type = rd->str[GMS_JWT_TYPE];
    type_len = rd->len[GMS_JWT_TYPE];
    version = rd->str[GMS_JWT_VERSION];
    version_len = rd->len[GMS_JWT_VERSION];

    if (actor_type == NULL || actor_id == NULL || type == NULL
        || version == NULL)
    {
        claims->error = "a claim of actorType, actorId, type, version "
                        "is missing or not a string";
        return GMS_JWT_MALFORMED;
    }

    if (actor_type_len != sizeof("USER") - 1
        || memcmp(actor_type, "USER", actor_type_len) != 0)
    {
        claims->error = "actorType is not USER";
        return GMS_JWT_MALFORMED;
    }

    claims->type = gms_token_type_parse(type, type_len);

    if (claims->type == GMS_TOKEN_NONE || claims->type == GMS_TOKEN_SYSTEM) {
        claims->error = "type is not SESSION, PERSONAL or SERVICE_ACCOUNT";
        return GMS_JWT_MALFORMED;
    }

    if (version_len != 1 || (version[0] != '1' && version[0] != '2')) {
        claims->error = "version is not \"1\" or \"2\"";
        return GMS_JWT_MALFORMED;
    }

    claims->version = version[0] - '0';

    if (actor_id_len == 0
        || actor_id_len > GMS_ACTOR_MAX - (sizeof(GMS_JWT_ACTOR_PREFIX) - 1))
    {
        claims->error = "actorId is empty or too long";
        return GMS_JWT_MALFORMED;
    }

    memcpy(claims->actor, GMS_JWT_ACTOR_PREFIX,
           sizeof(GMS_JWT_ACTOR_PREFIX) - 1);
    memcpy(claims->actor + sizeof(GMS_JWT_ACTOR_PREFIX) - 1, actor_id,
           actor_id_len);
    claims->actor_len = sizeof(GMS_JWT_ACTOR_PREFIX) - 1 + actor_id_len;
    claims->actor[claims->actor_len] = '\0';

    /* the actor goes into a header to GMS: the lookup's rules apply */

    if (!gms_token_actor_valid(claims->actor, claims->actor_len)) {
        claims->error = "actorId holds control bytes";
        return GMS_JWT_MALFORMED;
    }

    if (rd->bad_time) {
        claims->error = "exp or nbf is not a number of seconds";
        return GMS_JWT_MALFORMED;
    }

    claims->expires_at = rd->exp;

    if (claims->expires_at != 0 && now_ms - leeway_ms > claims->expires_at) {
        claims->error = "expired";
        return GMS_JWT_EXPIRED;
    }

    if (rd->nbf != 0 && now_ms + leeway_ms < rd->nbf) {
        claims->error = "not valid yet (nbf)";
        return GMS_JWT_PREMATURE;
    }

    claims->error = NULL;

    return GMS_JWT_OK;
}


/*
 * The claims of a flat object of ASCII strings without escapes, integers
 * of at most 18 digits, true, false and null, each member once: 0.  Such
 * a text jansson reads the same, and a string's value is its bytes.  Any
 * other text, JSON or not: -1, for jansson to read.
 */

static int
gms_jwt_flat(const char *p, size_t len, gms_jwt_read_t *rd)
{
    size_t        i, n, nkeys, key_len, value_len;
    int64_t       v;
    const char   *end, *key, *value;
    gms_jwt_kv_t  keys[GMS_JWT_FLAT_KEYS];

    static const char  *names[] = {
        "actorType", "actorId", "type", "version", "exp", "nbf"
    };

    memset(rd, 0, sizeof(gms_jwt_read_t));

    end = p + len;
    nkeys = 0;

    p = gms_jwt_ws(p, end);

    if (p == end || *p++ != '{') {
        return -1;
    }

    p = gms_jwt_ws(p, end);

    if (p < end && *p == '}') {
        p++;
        goto tail;
    }

    for ( ;; ) {

        if (gms_jwt_flat_string(&p, end, &key, &key_len) != 0
            || nkeys == GMS_JWT_FLAT_KEYS)
        {
            return -1;
        }

        for (i = 0; i < nkeys; i++) {
            if (keys[i].len == key_len
                && memcmp(keys[i].data, key, key_len) == 0)
            {
                /* a member twice: jansson refuses it */
                return -1;
            }
        }

        keys[nkeys].data = key;
        keys[nkeys].len = key_len;
        nkeys++;

        p = gms_jwt_ws(p, end);

        if (p == end || *p++ != ':') {
            return -1;
        }

        p = gms_jwt_ws(p, end);

        if (p == end) {
            return -1;
        }

        value = NULL;
        value_len = 0;
        v = 0;
        n = 0;

        if (*p == '"') {
            if (gms_jwt_flat_string(&p, end, &value, &value_len) != 0) {
                return -1;
            }

        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            if (gms_jwt_flat_integer(&p, end, &v) != 0) {
                return -1;
            }

            n = 1;

        } else if ((size_t) (end - p) >= 4 && memcmp(p, "null", 4) == 0) {
            p += 4;

        } else if ((size_t) (end - p) >= 4 && memcmp(p, "true", 4) == 0) {
            p += 4;

        } else if ((size_t) (end - p) >= 5 && memcmp(p, "false", 5) == 0) {
            p += 5;

        } else {
            return -1;
        }

        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            if (strlen(names[i]) == key_len
                && memcmp(names[i], key, key_len) == 0)
            {
                break;
            }
        }

        if (i < GMS_JWT_NSTRINGS) {
            /* not a string: as absent (gms_jwt_string()) */
            rd->str[i] = value;
            rd->len[i] = value_len;

        } else if (i < sizeof(names) / sizeof(names[0])) {
            if (!n) {
                rd->bad_time = 1;

            } else if (i == GMS_JWT_NSTRINGS) {
                rd->exp = gms_jwt_ms(v);

            } else {
                rd->nbf = gms_jwt_ms(v);
            }
        }

        p = gms_jwt_ws(p, end);

        if (p == end) {
            return -1;
        }

        if (*p == '}') {
            p++;
            break;
        }

        if (*p++ != ',') {
            return -1;
        }

        p = gms_jwt_ws(p, end);
    }

tail:

    return (gms_jwt_ws(p, end) == end) ? 0 : -1;
}


/* a string of printable ASCII other than '"' and '\': its bytes */

static int
gms_jwt_flat_string(const char **pp, const char *end, const char **s,
    size_t *len)
{
    const char  *p;

    p = *pp;

    if (p == end || *p++ != '"') {
        return -1;
    }

    *s = p;

    while (p < end && *p != '"') {
        if ((unsigned char) (*p - 0x20) >= 0x5f || *p == '\\') {
            return -1;
        }

        p++;
    }

    if (p == end) {
        return -1;
    }

    *len = p - *s;
    *pp = p + 1;

    return 0;
}


/* -?(0|[1-9][0-9]{0,17}), then a blank, ',' or '}' */

static int
gms_jwt_flat_integer(const char **pp, const char *end, int64_t *v)
{
    int          neg;
    size_t       digits;
    const char  *p;

    p = *pp;
    neg = 0;

    if (*p == '-') {
        neg = 1;
        p++;
    }

    if (p == end || *p < '0' || *p > '9' || (*p == '0' && p + 1 < end
                                             && p[1] >= '0' && p[1] <= '9'))
    {
        return -1;
    }

    *v = 0;

    for (digits = 0; p < end && *p >= '0' && *p <= '9'; digits++, p++) {
        if (digits == 18) {
            return -1;
        }

        *v = *v * 10 + (*p - '0');
    }

    if (p < end && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r'
        && *p != ',' && *p != '}')
    {
        return -1;
    }

    if (neg) {
        *v = -*v;
    }

    *pp = p;

    return 0;
}


static const char *
gms_jwt_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
        p++;
    }

    return p;
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
    json_t  *v;

    v = json_object_get(obj, name);
    *ms = 0;

    if (v == NULL) {
        return 0;
    }

    if (!json_is_integer(v)) {
        return -1;
    }

    *ms = gms_jwt_ms(json_integer_value(v));

    return 0;
}


/* seconds as ms, held in range */

static int64_t
gms_jwt_ms(int64_t s)
{
    if (s <= 0) {
        /* before the epoch: long gone, and never "absent" */
        return 1;
    }

    if (s > INT64_MAX / 1000 / 2) {
        return INT64_MAX / 2;
    }

    return s * 1000;
}


/* HMAC-SHA256 of in under key; 0, or -1 (libcrypto failed) */

static int
gms_jwt_hmac(const gms_jwt_key_t *key, const unsigned char *in, size_t len,
    unsigned char md[32])
{
    size_t         n;
    unsigned int   md_len;
    EVP_MAC_CTX   *ctx;

    ctx = gms_jwt_mac(key);

    if (ctx != NULL) {
        /* no key: the context starts again from its own */
        return (EVP_MAC_init(ctx, NULL, 0, NULL) == 1
                && EVP_MAC_update(ctx, in, len) == 1
                && EVP_MAC_final(ctx, md, &n, 32) == 1 && n == 32)
               ? 0 : -1;
    }

    return (HMAC(EVP_sha256(), key->data, (int) key->len, in, len, md,
                 &md_len)
            != NULL && md_len == 32)
           ? 0 : -1;
}


/* the key's keyed context, made when there is none; NULL: none made */

static EVP_MAC_CTX *
gms_jwt_mac(const gms_jwt_key_t *key)
{
    size_t          i;
    OSSL_PARAM      params[2];
    EVP_MAC_CTX    *ctx;
    unsigned char  *copy;
    gms_jwt_mac_t  *m;

    for (i = 0; i < GMS_JWT_MACS; i++) {
        m = &gms_jwt_macs[i];

        if (m->ctx != NULL && m->len == key->len
            && memcmp(m->key, key->data, key->len) == 0)
        {
            return m->ctx;
        }
    }

    if (gms_jwt_hmac_alg == NULL) {
        gms_jwt_hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);

        if (gms_jwt_hmac_alg == NULL) {
            return NULL;
        }
    }

    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 (char *) "SHA2-256", 0);
    params[1] = OSSL_PARAM_construct_end();

    ctx = EVP_MAC_CTX_new(gms_jwt_hmac_alg);
    copy = OPENSSL_malloc(key->len ? key->len : 1);

    if (ctx == NULL || copy == NULL
        || EVP_MAC_init(ctx, key->data, key->len, params) != 1)
    {
        EVP_MAC_CTX_free(ctx);
        OPENSSL_free(copy);
        return NULL;
    }

    memcpy(copy, key->data, key->len);

    m = &gms_jwt_macs[gms_jwt_macs_next];
    gms_jwt_macs_next = (gms_jwt_macs_next + 1) % GMS_JWT_MACS;

    EVP_MAC_CTX_free(m->ctx);
    OPENSSL_clear_free(m->key, m->len);

    m->key = copy;
    m->len = key->len;
    m->ctx = ctx;

    return ctx;
}


/*
 * base64url without padding (RFC 7515, 2): four characters make three
 * bytes, a last two one and a last three two; the bits left over are
 * ignored, as libcrypto's decoder ignores them.
 */

static int
gms_jwt_b64url_decode(const unsigned char *in, size_t len,
    unsigned char *out, size_t *out_len)
{
    size_t                       i, n;
    uint32_t                     v;
    unsigned char                c[4];
    const unsigned char * const  b64 = gms_jwt_b64url;

    if (len == 0 || len % 4 == 1 || len > GMS_TOKEN_MAX_LEN) {
        return -1;
    }

    n = 0;

    for (i = 0; i < len; i += 4) {
        c[0] = b64[in[i]];
        c[1] = b64[in[i + 1]];
        c[2] = (i + 2 < len) ? b64[in[i + 2]] : 1;
        c[3] = (i + 3 < len) ? b64[in[i + 3]] : 1;

        if (c[0] == 0 || c[1] == 0 || c[2] == 0 || c[3] == 0) {
            return -1;
        }

        v = (uint32_t) (c[0] - 1) << 18 | (uint32_t) (c[1] - 1) << 12
            | (uint32_t) (c[2] - 1) << 6 | (uint32_t) (c[3] - 1);

        out[n++] = (unsigned char) (v >> 16);

        if (i + 2 < len) {
            out[n++] = (unsigned char) (v >> 8);
        }

        if (i + 3 < len) {
            out[n++] = (unsigned char) v;
        }
    }

    *out_len = n;

    return 0;
}

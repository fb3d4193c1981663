
/*
 * Unit tests of src/lib/gms_jwt.c and the system client's credentials: tokens
 * minted here as DataHub's StatelessTokenService mints them (HS256 over
 * base64url header and payload, the key's UTF-8 bytes), with libcrypto.
 */


#include <stdlib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "tap.h"
#include "gms_jwt.h"
#include "b64url.h"


#define NOW_MS  1800000000000LL         /* 2027-01-15 */

static const char  *key1 = "test-signing-key-of-gms";
static const char  *key2 = "the-next-signing-key";

static char  token[GMS_TOKEN_MAX_LEN + 64];


/* header and payload as given; signed with key (NULL: signature as given) */

static const char *
mint(const char *header, const char *payload, const char *key,
    const char *sig)
{
    size_t          n;
    unsigned int    md_len;
    unsigned char   md[32];

    n = b64url((const unsigned char *) header, strlen(header), token);
    token[n++] = '.';
    n += b64url((const unsigned char *) payload, strlen(payload), token + n);

    if (key == NULL) {
        token[n++] = '.';
        strcpy(token + n, sig);
        return token;
    }

    HMAC(EVP_sha256(), key, (int) strlen(key), (unsigned char *) token, n,
         md, &md_len);

    token[n++] = '.';
    b64url(md, 32, token + n);

    return token;
}


static gms_jwt_rc_e
verify(const char *t, int64_t leeway_ms, gms_jwt_claims_t *c)
{
    gms_jwt_key_t  keys[2];

    keys[0].data = (const unsigned char *) key1;
    keys[0].len = strlen(key1);
    keys[1].data = (const unsigned char *) key2;
    keys[1].len = strlen(key2);

    return gms_jwt_verify((const unsigned char *) t, strlen(t), keys, 2,
                          NOW_MS, leeway_ms, c);
}


#define HS256  "{\"alg\":\"HS256\"}"
#define SESSION                                                              \
    "{\"actorType\":\"USER\",\"actorId\":\"alice\",\"type\":\"SESSION\","    \
    "\"version\":\"1\",\"jti\":\"j\",\"sub\":\"alice\",\"exp\":1900000000}"
#define PERSONAL                                                             \
    "{\"actorType\":\"USER\",\"actorId\":\"bob\",\"type\":\"PERSONAL\","     \
    "\"version\":\"2\",\"jti\":\"j\",\"sub\":\"bob\",\"exp\":1900000000,"    \
    "\"iss\":\"datahub-metadata-service\"}"


static void
test_good(void)
{
    gms_jwt_claims_t  c;

    ok(verify(mint(HS256, SESSION, key1, NULL), 0, &c) == GMS_JWT_OK
       && c.type == GMS_TOKEN_SESSION && c.version == 1
       && strcmp(c.actor, "urn:li:corpuser:alice") == 0
       && c.expires_at == 1900000000000LL && !gms_jwt_stateful(&c),
       "session token: claims, actor urn, not stateful");

    ok(verify(mint(HS256, PERSONAL, key2, NULL), 0, &c) == GMS_JWT_OK
       && c.type == GMS_TOKEN_PERSONAL && c.version == 2
       && strcmp(c.actor, "urn:li:corpuser:bob") == 0
       && gms_jwt_stateful(&c),
       "personal token signed by the second key: stateful");

    ok(verify(mint(HS256, "{\"actorType\":\"USER\",\"actorId\":\"svc\","
                   "\"type\":\"SERVICE_ACCOUNT\",\"version\":\"2\"}",
                   key1, NULL), 0, &c) == GMS_JWT_OK
       && c.type == GMS_TOKEN_SERVICE_ACCOUNT && c.expires_at == 0,
       "service account token without exp: never expires");

    ok(verify(mint(HS256, "{\"actorType\":\"USER\",\"actorId\":\"old\","
                   "\"type\":\"PERSONAL\",\"version\":\"1\"}",
                   key1, NULL), 0, &c) == GMS_JWT_OK && gms_jwt_stateful(&c),
       "a version 1 personal token is looked up too");

    ok(verify(mint("{\"typ\":\"JWT\",\"alg\":\"HS256\"}", SESSION, key1,
                   NULL), 0, &c) == GMS_JWT_OK,
       "other header members are ignored");
}


static void
test_refused(void)
{
    char              *p;
    gms_jwt_claims_t   c;

    ok(verify(mint(HS256, SESSION, "another key", NULL), 0, &c)
       == GMS_JWT_BAD_SIGNATURE, "wrong key");

    mint(HS256, SESSION, key1, NULL);
    p = strrchr(token, '.') + 1;
    p[0] = (p[0] == 'A') ? 'B' : 'A';
    ok(verify(token, 0, &c) == GMS_JWT_BAD_SIGNATURE, "tampered signature");

    mint(HS256, SESSION, key1, NULL);
    p = strchr(token, '.') + 1;
    p[3] = (p[3] == 'A') ? 'B' : 'A';
    ok(verify(token, 0, &c) == GMS_JWT_BAD_SIGNATURE, "tampered payload");

    ok(verify(mint("{\"alg\":\"none\"}", SESSION, NULL, ""), 0, &c)
       == GMS_JWT_BAD_SIGNATURE, "alg none, no signature");
    ok(verify(mint("{\"alg\":\"none\"}", SESSION, key1, NULL), 0, &c)
       == GMS_JWT_BAD_SIGNATURE, "alg none, signed anyway");
    ok(verify(mint("{\"alg\":\"HS512\"}", SESSION, key1, NULL), 0, &c)
       == GMS_JWT_BAD_SIGNATURE, "alg HS512");
    ok(verify(mint("{\"alg\":\"hs256\"}", SESSION, key1, NULL), 0, &c)
       == GMS_JWT_BAD_SIGNATURE, "alg spelled otherwise");
    ok(verify(mint("{}", SESSION, key1, NULL), 0, &c) == GMS_JWT_MALFORMED,
       "no alg");
    ok(verify(mint("{\"alg\":\"HS256\",\"alg\":\"none\"}", SESSION, key1,
                   NULL), 0, &c) == GMS_JWT_MALFORMED, "alg twice");
    ok(verify(mint("[1]", SESSION, key1, NULL), 0, &c) == GMS_JWT_MALFORMED,
       "header not an object");

    ok(verify("abc", 0, &c) == GMS_JWT_MALFORMED, "not a JWT");
    ok(verify("a.b", 0, &c) == GMS_JWT_MALFORMED, "two parts");
    ok(verify("a.b.c.d", 0, &c) == GMS_JWT_MALFORMED, "four parts");
    ok(verify("eyJ.eyJ.a+b", 0, &c) == GMS_JWT_MALFORMED,
       "standard base64 characters");
    ok(verify("eyJhbGciOiJIUzI1NiJ9=.eyJ.abc", 0, &c) == GMS_JWT_MALFORMED,
       "padding");
    ok(verify("", 0, &c) == GMS_JWT_MALFORMED, "empty");
}


static void
test_claims(void)
{
    gms_jwt_claims_t  c;

#define CLAIMS(s)  verify(mint(HS256, s, key1, NULL), 0, &c)

    ok(CLAIMS("{\"actorId\":\"a\",\"type\":\"SESSION\",\"version\":\"1\"}")
       == GMS_JWT_MALFORMED, "no actorType");
    ok(CLAIMS("{\"actorType\":\"USER\",\"type\":\"SESSION\","
              "\"version\":\"1\"}") == GMS_JWT_MALFORMED, "no actorId");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"a\","
              "\"version\":\"1\"}") == GMS_JWT_MALFORMED, "no type");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"a\","
              "\"type\":\"SESSION\"}") == GMS_JWT_MALFORMED, "no version");
    ok(CLAIMS("{\"actorType\":\"SERVICE\",\"actorId\":\"a\","
              "\"type\":\"SESSION\",\"version\":\"1\"}") == GMS_JWT_MALFORMED,
       "actorType not USER");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"a\","
              "\"type\":\"SYSTEM\",\"version\":\"1\"}") == GMS_JWT_MALFORMED,
       "type SYSTEM is not a token type");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"a\","
              "\"type\":\"SESSION\",\"version\":\"3\"}") == GMS_JWT_MALFORMED,
       "version 3");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"a\","
              "\"type\":\"SESSION\",\"version\":1}") == GMS_JWT_MALFORMED,
       "version a number");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":7,"
              "\"type\":\"SESSION\",\"version\":\"1\"}") == GMS_JWT_MALFORMED,
       "actorId a number");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"\","
              "\"type\":\"SESSION\",\"version\":\"1\"}") == GMS_JWT_MALFORMED,
       "actorId empty");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"a\\r\\nX: y\","
              "\"type\":\"SESSION\",\"version\":\"1\"}") == GMS_JWT_MALFORMED,
       "actorId with CR LF");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"a\\u0000b\","
              "\"type\":\"SESSION\",\"version\":\"1\"}") == GMS_JWT_MALFORMED,
       "actorId with NUL");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"a\","
              "\"type\":\"SESSION\",\"version\":\"1\",\"exp\":\"9\"}")
       == GMS_JWT_MALFORMED, "exp a string");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"a\","
              "\"type\":\"SESSION\",\"version\":\"1\",\"exp\":1.9e9}")
       == GMS_JWT_MALFORMED, "exp not an integer");
    ok(CLAIMS("[]") == GMS_JWT_MALFORMED, "payload not an object");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorType\":\"USER\","
              "\"actorId\":\"a\",\"type\":\"SESSION\",\"version\":\"1\"}")
       == GMS_JWT_MALFORMED, "a claim twice");
    ok(CLAIMS("{\"actorType\":\"USER\",\"actorId\":\"a\","
              "\"type\":\"SESSION\",\"version\":\"1\","
              "\"exp\":99999999999999999}") == GMS_JWT_OK
       && c.expires_at > NOW_MS, "a far exp does not overflow");
}


static void
test_time(void)
{
    gms_jwt_claims_t  c;

#define EXP(s)                                                               \
    "{\"actorType\":\"USER\",\"actorId\":\"a\",\"type\":\"SESSION\","        \
    "\"version\":\"1\",\"exp\":" s "}"

    ok(verify(mint(HS256, EXP("1799999999"), key1, NULL), 0, &c)
       == GMS_JWT_EXPIRED, "exp a second ago");
    ok(verify(mint(HS256, EXP("1800000000"), key1, NULL), 0, &c)
       == GMS_JWT_OK, "exp now: still valid, as jjwt (now > exp)");
    ok(verify(mint(HS256, EXP("1799999940"), key1, NULL), 60000, &c)
       == GMS_JWT_OK, "60 s ago with a 60 s leeway");
    ok(verify(mint(HS256, EXP("1799999939"), key1, NULL), 60000, &c)
       == GMS_JWT_EXPIRED, "61 s ago with a 60 s leeway");
    ok(verify(mint(HS256, EXP("0"), key1, NULL), 0, &c) == GMS_JWT_EXPIRED,
       "exp 0");
    ok(verify(mint(HS256, EXP("-5"), key1, NULL), 0, &c) == GMS_JWT_EXPIRED,
       "exp negative");
    ok(verify(mint(HS256, "{\"actorType\":\"USER\",\"actorId\":\"a\","
                   "\"type\":\"SESSION\",\"version\":\"1\",\"nbf\":1800000100}",
                   key1, NULL), 0, &c) == GMS_JWT_PREMATURE,
       "nbf in the future");
    ok(verify(mint(HS256, EXP("1799999999"), "another key", NULL), 0, &c)
       == GMS_JWT_BAD_SIGNATURE, "an expired forgery is a bad signature");
}


/*
 * Many keys in turn, more than the process keeps keyed contexts for, each
 * token checked against the right key and a wrong one; and headers good
 * and bad in turn (the last good one is remembered).
 */

static void
test_keys(void)
{
    int               i, good, bad;
    char              key[32];
    gms_jwt_key_t     k, other;
    gms_jwt_claims_t  c;

    good = 0;
    bad = 0;

    for (i = 0; i < 40; i++) {
        snprintf(key, sizeof(key), "signing-key-number-%d", i % 7);
        mint(HS256, SESSION, key, NULL);

        k.data = (const unsigned char *) key;
        k.len = strlen(key);
        other.data = (const unsigned char *) key2;
        other.len = strlen(key2);

        good += (gms_jwt_verify((const unsigned char *) token, strlen(token),
                                &k, 1, NOW_MS, 0, &c)
                 == GMS_JWT_OK);
        bad += (gms_jwt_verify((const unsigned char *) token, strlen(token),
                               &other, 1, NOW_MS, 0, &c)
                == GMS_JWT_BAD_SIGNATURE);
    }

    ok(good == 40 && bad == 40, "7 keys in turn: %d of 40 verified, %d of "
       "40 refused under another key", good, bad);

    good = 0;

    for (i = 0; i < 10; i++) {
        good += (verify(mint(HS256, SESSION, key1, NULL), 0, &c)
                 == GMS_JWT_OK);
        good += (verify(mint("{\"alg\":\"none\"}", SESSION, key1, NULL), 0,
                        &c)
                 == GMS_JWT_BAD_SIGNATURE);
        good += (verify(mint("{\"alg\":\"HS256\",\"typ\":\"JWT\"}",
                             SESSION, key1, NULL), 0, &c)
                 == GMS_JWT_OK);
        good += (verify(mint("[1]", SESSION, key1, NULL), 0, &c)
                 == GMS_JWT_MALFORMED);
    }

    ok(good == 40, "headers good and bad in turn: %d of 40 as they should",
       good);
}


/* payloads of every length modulo 4, through the base64url decoder */

static void
test_lengths(void)
{
    int               i, good;
    char              payload[256], want[64];
    gms_jwt_claims_t  c;

    good = 0;

    for (i = 1; i <= 24; i++) {
        snprintf(payload, sizeof(payload),
                 "{\"actorType\":\"USER\",\"actorId\":\"%.*s\","
                 "\"type\":\"SESSION\",\"version\":\"1\"}", i,
                 "abcdefghijklmnopqrstuvwxyz");
        snprintf(want, sizeof(want), "urn:li:corpuser:%.*s", i,
                 "abcdefghijklmnopqrstuvwxyz");

        good += (verify(mint(HS256, payload, key1, NULL), 0, &c)
                 == GMS_JWT_OK
                 && strcmp(c.actor, want) == 0);
    }

    ok(good == 24, "actorId of 1 to 24 characters: %d of 24 read", good);
}


static void
test_basic(void)
{
    size_t                len;
    const unsigned char  *cred;

#define BASIC(s)                                                             \
    gms_token_basic_parse((const unsigned char *) s, strlen(s), 0, &cred, &len)
#define BASIC14(s)                                                           \
    gms_token_basic_parse((const unsigned char *) s, strlen(s), 1, &cred, &len)

    ok(BASIC("Basic __datahub_system:s3cret") == 0 && len == 23
       && memcmp(cred, "__datahub_system:s3cret", len) == 0, "raw form");
    ok(BASIC("basic id:secret") == 0, "lower-case scheme");
    ok(BASIC("BASIC id:secret") != 0, "upper-case scheme, as GMS");
    ok(BASIC("Basic id:secret::") == 0 && len == 9,
       "trailing colons dropped, as Java's split");
    ok(BASIC("Basic id:se:cret") == -2, "three parts");
    ok(BASIC("Basic aWQ6c2VjcmV0") == -2, "base64: no colon");
    ok(BASIC("Basic :") == -2, "a colon alone");
    ok(BASIC("Basic ") == -1, "nothing");
    ok(BASIC("Bearer id:secret") == -1, "another scheme");

    /* DataHub 1.4.0: split(":", 2) (PR 15023) */
    ok(BASIC14("Basic id:se:cret") == 0 && len == 10
       && memcmp(cred, "id:se:cret", len) == 0,
       "1.4.0: the secret holds a colon");
    ok(BASIC14("Basic id:secret::") == 0 && len == 11,
       "1.4.0: trailing colons are the secret's");
    ok(BASIC14("Basic aWQ6c2VjcmV0") == -2, "1.4.0: base64: no colon");
    ok(BASIC14("Basic ") == -1 && BASIC14("Bearer a:b") == -1,
       "1.4.0: nothing, another scheme");

    ok(gms_token_type_parse("SESSION", 7) == GMS_TOKEN_SESSION
       && gms_token_type_parse("PERSONAL", 8) == GMS_TOKEN_PERSONAL
       && gms_token_type_parse("SERVICE_ACCOUNT", 15)
          == GMS_TOKEN_SERVICE_ACCOUNT
       && gms_token_type_parse("personal", 8) == GMS_TOKEN_NONE
       && gms_token_type_parse("", 0) == GMS_TOKEN_NONE
       && gms_token_type_parse("SYSTEM", 6) == GMS_TOKEN_NONE
       && gms_token_type_parse("GUEST", 5) == GMS_TOKEN_NONE,
       "token type names");
}


int
main(void)
{
    test_good();
    test_refused();
    test_claims();
    test_time();
    test_keys();
    test_lengths();
    test_basic();

    return done_testing();
}


/*
 * Unit tests of src/lib/gms_oauth.c and gms_oauth_jwks.c: RSA key pairs
 * made here with libcrypto, their JWKS written as an identity provider
 * publishes it, tokens minted and signed as the provider signs them, and
 * checked as DataHub's DataHubOAuthAuthenticator (1.3.0) checks them.
 */


#include <stdlib.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "tap.h"
#include "gms_oauth.h"
#include "b64url.h"


#define NOW_MS   1800000000000LL        /* 2027-01-15 */
#define ISS      "https://idp.example.com/"
#define ACTOR    "urn:li:corpuser:__oauth_idp_example_com__"

static EVP_PKEY  *key1, *key2, *weak;
static char       token[8192];
static char       jwks_text[16384];


/* {"kty":"RSA","kid":..,"n":..,"e":..} of a key pair's public half */

static void
jwk(EVP_PKEY *pkey, const char *kid, char *out)
{
    int             len;
    BIGNUM         *n, *e;
    unsigned char   buf[1024];
    char            n64[1400], e64[16];

    n = NULL;
    e = NULL;
    EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_N, &n);
    EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, &e);

    len = BN_bn2bin(n, buf);
    b64url(buf, (size_t) len, n64);
    len = BN_bn2bin(e, buf);
    b64url(buf, (size_t) len, e64);

    sprintf(out, "{\"kty\":\"RSA\",\"use\":\"sig\",\"kid\":\"%s\","
            "\"n\":\"%s\",\"e\":\"%s\"}", kid, n64, e64);

    BN_free(n);
    BN_free(e);
}


/* header and payload as given, signed by alg with pkey (NULL: sig as is) */

static const char *
mint(const char *header, const char *payload, const char *alg,
    EVP_PKEY *pkey, const char *sig)
{
    size_t           n, sig_len;
    EVP_MD_CTX      *mctx;
    const EVP_MD    *md;
    EVP_PKEY_CTX    *pctx;
    unsigned char    sigbuf[1024];

    n = b64url((const unsigned char *) header, strlen(header), token);
    token[n++] = '.';
    n += b64url((const unsigned char *) payload, strlen(payload), token + n);
    token[n] = '\0';

    if (pkey == NULL) {
        token[n++] = '.';
        strcpy(token + n, sig);
        return token;
    }

    md = (strstr(alg, "384")) ? EVP_sha384()
         : (strstr(alg, "512")) ? EVP_sha512() : EVP_sha256();

    mctx = EVP_MD_CTX_new();
    EVP_DigestSignInit(mctx, &pctx, md, NULL, pkey);

    if (alg[0] == 'P') {
        EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
        EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
    }

    sig_len = sizeof(sigbuf);
    EVP_DigestSign(mctx, sigbuf, &sig_len, (unsigned char *) token, n);
    EVP_MD_CTX_free(mctx);

    token[n++] = '.';
    b64url(sigbuf, sig_len, token + n);

    return token;
}


static const char *
claims(const char *iss, const char *aud, long exp, const char *extra)
{
    static char  buf[1024];

    snprintf(buf, sizeof(buf), "{\"iss\":\"%s\",\"aud\":%s,\"sub\":\"alice\","
             "\"exp\":%ld%s}", iss, aud, exp, extra);

    return buf;
}


static gms_oauth_rc_e
verify(const char *t, const gms_oauth_provider_t *p, size_t np,
    gms_oauth_claims_t *c)
{
    return gms_oauth_verify((const unsigned char *) t, strlen(t), p, np,
                            NOW_MS, 0, c);
}


static void
test_jwks(void)
{
    gms_jwks_t  *jwks;
    const char  *err;
    char         a[2000], b[2000], w[2000], text[8000];

    jwk(key1, "k1", a);
    jwk(key2, "k2", b);
    jwk(weak, "weak", w);

    sprintf(text, "{\"keys\":[%s,%s]}", a, b);
    jwks = gms_oauth_jwks_parse(text, strlen(text), &err);
    ok(jwks != NULL && gms_oauth_jwks_nkeys(jwks) == 2, "jwks: two RSA keys");
    ok(gms_oauth_jwks_find(jwks, "k2", 2) != NULL
       && gms_oauth_jwks_find(jwks, "k3", 2) == NULL, "jwks: found by kid");
    gms_oauth_jwks_free(jwks);

    sprintf(text, "{\"keys\":[{\"kty\":\"EC\",\"kid\":\"e1\",\"crv\":"
            "\"P-256\",\"x\":\"AA\",\"y\":\"AA\"},{\"kty\":\"RSA\"},%s]}", a);
    jwks = gms_oauth_jwks_parse(text, strlen(text), &err);
    ok(jwks != NULL && gms_oauth_jwks_nkeys(jwks) == 1,
       "jwks: an EC key and a key without kid skipped");
    gms_oauth_jwks_free(jwks);

    sprintf(text, "{\"keys\":[%s,%s]}", a, a);
    jwks = gms_oauth_jwks_parse(text, strlen(text), &err);
    ok(jwks != NULL && gms_oauth_jwks_nkeys(jwks) == 1,
       "jwks: a kid twice: one");
    gms_oauth_jwks_free(jwks);

    sprintf(text, "{\"keys\":[%s,%s]}", a, w);
    ok(gms_oauth_jwks_parse(text, strlen(text), &err) == NULL
       && strstr(err, "2048") != NULL, "jwks: a 1024-bit key refused: %s",
       err);

    /* e = 1: the padded digest its own signature; e = 2: even */
    sprintf(text, "{\"keys\":[%s]}", a);
    memcpy(strstr(text, "\"e\":\"AQAB\""), "\"e\":\"AQ\"  ", 10);
    ok(gms_oauth_jwks_parse(text, strlen(text), &err) == NULL
       && strstr(err, "exponent") != NULL, "jwks: e = 1 refused: %s", err);
    sprintf(text, "{\"keys\":[%s]}", a);
    memcpy(strstr(text, "\"e\":\"AQAB\""), "\"e\":\"Ag\"  ", 10);
    ok(gms_oauth_jwks_parse(text, strlen(text), &err) == NULL
       && strstr(err, "exponent") != NULL, "jwks: e = 2 refused: %s", err);

    ok(gms_oauth_jwks_parse("[]", 2, &err) == NULL, "jwks: not an object: %s",
       err);
    ok(gms_oauth_jwks_parse("{\"keys\":{}}", 11, &err) == NULL,
       "jwks: keys not an array: %s", err);
    ok(gms_oauth_jwks_parse("{\"keys\":[1]}", 12, &err) == NULL,
       "jwks: a member not an object: %s", err);
    ok(gms_oauth_jwks_parse("{\"keys\":[]}", 11, &err) == NULL,
       "jwks: no key: %s", err);
    strcpy(text, "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"x\",\"n\":\"!!\","
           "\"e\":\"AQAB\"}]}");
    ok(gms_oauth_jwks_parse(text, strlen(text), &err) == NULL,
       "jwks: n not base64url: %s", err);
    ok(gms_oauth_jwks_parse("{\"keys\":[", 9, &err) == NULL, "jwks: cut short");
}


static void
test_actor(void)
{
    size_t  len;
    char    actor[GMS_ACTOR_MAX + 1];

    ok(gms_oauth_actor("https://login.example.com/tenant/v2.0", 37, "bob", 3,
                       actor, &len) == 0, "actor: derived");
    is_str(actor, "urn:li:corpuser:__oauth_login_example_com_tenant_v2_0_bob",
           "actor: https:// dropped, the rest [A-Za-z0-9] or _");

    gms_oauth_actor("http://a:8080/https://b", 23, "s", 1, actor, &len);
    is_str(actor, "urn:li:corpuser:__oauth_a_8080_b_s",
           "actor: every http:// and https:// dropped, as replaceAll");

    gms_oauth_actor("https://\xc3\xa9t\xc3\xa9.fr", 16, "s", 1, actor,
                    &len);
    is_str(actor, "urn:li:corpuser:__oauth__t__fr_s",
           "actor: a character of two bytes is one '_' (one UTF-16 unit)");

    gms_oauth_actor("x\xf0\x9f\x98\x80y", 6, "s", 1, actor, &len);
    is_str(actor, "urn:li:corpuser:__oauth_x_y_s",
           "actor: a character past the BMP is one '_' (regex: a code point)");

    ok(gms_oauth_actor("i", 1, "a\nb", 3, actor, &len) != 0,
       "actor: a control byte in the subject refused");
}


static void
test_verify(void)
{
    size_t                n;
    gms_jwks_t           *jwks;
    const char           *err, *t;
    unsigned char        *pem;
    gms_oauth_claims_t    c;
    gms_oauth_provider_t  p[2];
    char                  a[2000], b[2000], hs[2048];
    unsigned char         md[32];
    unsigned int          md_len;
    BIO                  *bio;

    jwk(key1, "k1", a);
    jwk(key2, "k2", b);
    sprintf(jwks_text, "{\"keys\":[%s,%s]}", a, b);
    jwks = gms_oauth_jwks_parse(jwks_text, strlen(jwks_text), &err);

    memset(p, 0, sizeof(p));
    p[0].issuer = ISS;
    p[0].audiences[0] = "api://datahub";
    p[0].audiences[1] = "datahub";
    p[0].naudiences = 2;
    p[0].user_claim = "sub";
    p[0].alg = GMS_OAUTH_RS256;
    p[0].jwks = jwks;

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\",\"typ\":\"JWT\"}",
             claims(ISS, "\"datahub\"", 1800000600, ""), "RS256", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_OK, "RS256, k1: ok");
    is_str(c.actor, ACTOR "alice", "the user as GMS derives it");
    ok(c.expires_at == 1800000600000LL, "exp in ms");

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k2\"}",
             claims(ISS, "[\"other\",\"api://datahub\"]", 1800000600, ""),
             "RS256", key2, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_OK, "aud an array, one allowed");

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\"}",
             claims(ISS, "\"datahub\"", 1800000600, ""), "RS256", key2, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_BAD_SIGNATURE,
       "signed by k2, says k1: %s", c.error);

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k3\"}",
             claims(ISS, "\"datahub\"", 1800000600, ""), "RS256", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_BAD_SIGNATURE,
       "unknown kid: %s", c.error);

    t = mint("{\"alg\":\"RS256\"}",
             claims(ISS, "\"datahub\"", 1800000600, ""), "RS256", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_BAD_SIGNATURE, "no kid: %s",
       c.error);

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\"}",
             claims("https://evil.example.com/", "\"datahub\"", 1800000600,
                    ""), "RS256", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_UNTRUSTED, "wrong issuer: %s",
       c.error);

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\"}",
             claims(ISS, "\"other\"", 1800000600, ""), "RS256", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_UNTRUSTED, "wrong audience: %s",
       c.error);

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\"}",
             "{\"iss\":\"" ISS "\",\"sub\":\"alice\"}", "RS256", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_MALFORMED, "no aud: %s", c.error);

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\"}",
             claims(ISS, "\"datahub\"", 1799999999, ""), "RS256", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_EXPIRED, "expired: %s", c.error);
    ok(gms_oauth_verify((const unsigned char *) t, strlen(t), p, 1, NOW_MS,
                        5000, &c) == GMS_OAUTH_OK, "expired, in the leeway");

    /* jjwt takes whole seconds: 0.5 is 0 s, long expired, not "no exp" */
    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\"}",
             "{\"iss\":\"" ISS "\",\"aud\":\"datahub\",\"sub\":\"alice\","
             "\"exp\":0.5}", "RS256", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_EXPIRED, "exp 0.5: expired: %s",
       c.error);

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\"}",
             claims(ISS, "\"datahub\"", 1800000600, ",\"nbf\":1800000060"),
             "RS256", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_PREMATURE, "nbf not reached: %s",
       c.error);

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\"}",
             "{\"iss\":\"" ISS "\",\"aud\":\"datahub\",\"sub\":\"alice\","
             "\"nbf\":1799999999.5}", "RS256", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_OK && c.expires_at == 0,
       "no exp, nbf a fraction passed: ok (jjwt asks for no exp)");

    t = mint("{\"alg\":\"none\",\"kid\":\"k1\"}",
             claims(ISS, "\"datahub\"", 1800000600, ""), NULL, NULL, "");
    ok(verify(t, p, 1, &c) == GMS_OAUTH_BAD_SIGNATURE,
       "alg none, an empty signature (RFC 7519's unsecured JWT): %s",
       c.error);

    t = mint("{\"alg\":\"none\",\"kid\":\"k1\"}",
             claims(ISS, "\"datahub\"", 1800000600, ""), NULL, NULL, "AAAA");
    ok(verify(t, p, 1, &c) == GMS_OAUTH_BAD_SIGNATURE, "alg none: %s",
       c.error);

    t = mint("{\"alg\":\"none\"}",
             claims("https://evil/", "\"datahub\"", 1800000600, ""), NULL,
             NULL, "AAAA");
    ok(verify(t, p, 1, &c) == GMS_OAUTH_UNTRUSTED,
       "alg none, another issuer: refused too");

    /* HS256 keyed with the public key's PEM, the classic confusion */

    bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, key1);
    n = (size_t) BIO_get_mem_data(bio, (char **) &pem);

    t = mint("{\"alg\":\"HS256\",\"kid\":\"k1\"}",
             claims(ISS, "\"datahub\"", 1800000600, ""), NULL, NULL, "");
    HMAC(EVP_sha256(), pem, (int) n, (unsigned char *) token, strlen(token),
         md, &md_len);
    b64url(md, 32, hs);
    strcat(token, hs);
    BIO_free(bio);

    ok(verify(token, p, 1, &c) == GMS_OAUTH_BAD_SIGNATURE,
       "HS256 signed with the public key: %s", c.error);

    t = mint("{\"alg\":\"HS256\"}",
             "{\"iss\":\"datahub-metadata-service\",\"actorId\":\"a\"}", NULL,
             NULL, "c2ln");
    ok(verify(t, p, 1, &c) == GMS_OAUTH_NOT_OAUTH,
       "HS256 of another issuer: DataHub's, not ours");
    ok(verify("opaque-token", p, 1, &c) == GMS_OAUTH_NOT_OAUTH,
       "not a JWT: not ours");

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\"}", "[1]", "RS256", key1,
             NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_MALFORMED,
       "RS256, the payload no object: refused");

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k1\"}",
             claims(ISS, "\"datahub\"", 1800000600, ""), "RS256", key1, NULL);
    strcpy(hs, t);
    hs[strlen(hs) - 2] = (hs[strlen(hs) - 2] == 'A') ? 'B' : 'A';
    ok(verify(hs, p, 1, &c) == GMS_OAUTH_BAD_SIGNATURE, "tampered");

    /* a second provider: PS256, the user in another claim */

    p[1] = p[0];
    p[1].issuer = "https://other.example.org";
    p[1].audiences[0] = "dh";
    p[1].naudiences = 1;
    p[1].user_claim = "email";
    p[1].alg = GMS_OAUTH_PS256;

    t = mint("{\"alg\":\"PS256\",\"kid\":\"k2\"}",
             "{\"iss\":\"https://other.example.org\",\"aud\":\"dh\","
             "\"sub\":\"x\",\"email\":\"eve@example.org\"}", "PS256", key2,
             NULL);
    ok(verify(t, p, 2, &c) == GMS_OAUTH_OK && c.provider == 1,
       "PS256 of the second provider: ok");
    is_str(c.actor, "urn:li:corpuser:__oauth_other_example_org_"
           "eve@example.org", "the user of user_claim=email");

    t = mint("{\"alg\":\"RS256\",\"kid\":\"k2\"}",
             "{\"iss\":\"https://other.example.org\",\"aud\":\"dh\","
             "\"email\":\"eve@example.org\"}", "RS256", key2, NULL);
    ok(verify(t, p, 2, &c) == GMS_OAUTH_BAD_SIGNATURE,
       "RS256 where the issuer's algorithm is PS256: %s", c.error);

    t = mint("{\"alg\":\"PS256\",\"kid\":\"k2\"}",
             "{\"iss\":\"https://other.example.org\",\"aud\":\"dh\","
             "\"email\":7}", "PS256", key2, NULL);
    ok(verify(t, p, 2, &c) == GMS_OAUTH_MALFORMED,
       "the user claim not a string: %s", c.error);

    p[0].alg = GMS_OAUTH_RS512;
    t = mint("{\"alg\":\"RS512\",\"kid\":\"k1\"}",
             claims(ISS, "\"datahub\"", 1800000600, ""), "RS512", key1, NULL);
    ok(verify(t, p, 1, &c) == GMS_OAUTH_OK, "RS512: ok");

    gms_oauth_jwks_free(jwks);
}


int
main(void)
{
    gms_oauth_alg_e  alg;

    key1 = EVP_RSA_gen(2048);
    key2 = EVP_RSA_gen(2048);
    weak = EVP_RSA_gen(1024);

    test_jwks();
    test_actor();
    test_verify();

    ok(gms_oauth_alg_parse("PS384", 5, &alg) == 0 && alg == GMS_OAUTH_PS384
       && gms_oauth_alg_parse("ES256", 5, &alg) != 0
       && gms_oauth_alg_parse("HS256", 5, &alg) != 0,
       "algorithms: RS* and PS* only, as GMS's resolver");

    EVP_PKEY_free(key1);
    EVP_PKEY_free(key2);
    EVP_PKEY_free(weak);

    return done_testing();
}


/*
 * libFuzzer: external OAuth tokens and JWKS files (src/lib/gms_oauth.c,
 * gms_oauth_jwks.c).  The input is parsed as a JWKS (what gms-token jwks
 * fetches from an issuer), verified as a token, and, as "header\npayload",
 * made a token signed with the fuzzer's own RSA key, which takes the
 * claims' checks where a forger cannot: what is accepted must name a
 * user safe in a header.
 */


#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "gms_oauth.h"
#include "gms_token.h"
#include "b64url.h"


#define NOW_MS  1800000000000LL


static EVP_PKEY              *key;
static gms_jwks_t            *jwks;
static gms_oauth_provider_t   provider;


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    int             len;
    BIGNUM         *n, *e;
    const char     *error;
    unsigned char   buf[512];
    char            n64[400], e64[16], text[1024];

    (void) argc;
    (void) argv;

    key = EVP_RSA_gen(2048);

    n = NULL;
    e = NULL;
    EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_N, &n);
    EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_E, &e);
    len = BN_bn2bin(n, buf);
    b64url(buf, (size_t) len, n64);
    len = BN_bn2bin(e, buf);
    b64url(buf, (size_t) len, e64);
    BN_free(n);
    BN_free(e);

    snprintf(text, sizeof(text), "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"k1\","
             "\"n\":\"%s\",\"e\":\"%s\"}]}", n64, e64);

    jwks = gms_oauth_jwks_parse(text, strlen(text), &error);
    if (jwks == NULL) {
        abort();
    }

    provider.issuer = "https://idp.example.test/";
    provider.audiences[0] = "datahub";
    provider.naudiences = 1;
    provider.user_claim = "sub";
    provider.alg = GMS_OAUTH_RS256;
    provider.jwks = jwks;

    return 0;
}


static void
check(gms_oauth_rc_e rc, gms_oauth_claims_t *c)
{
    if (rc != GMS_OAUTH_OK) {
        if (c->error == NULL) {
            abort();
        }

        return;
    }

    if (c->actor_len > GMS_ACTOR_MAX || strlen(c->actor) != c->actor_len
        || strncmp(c->actor, GMS_OAUTH_ACTOR_PREFIX,
                   sizeof(GMS_OAUTH_ACTOR_PREFIX) - 1) != 0
        || !gms_token_actor_valid(c->actor, c->actor_len)
        || c->provider != 0)
    {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char                *token;
    size_t               n, sig_len;
    gms_jwks_t          *parsed;
    EVP_MD_CTX          *mctx;
    const char          *error;
    gms_oauth_claims_t   c;
    unsigned char        sig[256];
    const unsigned char *nl;

    parsed = gms_oauth_jwks_parse((const char *) data, size, &error);

    if ((parsed == NULL) == (error == NULL)
        || (parsed != NULL && gms_oauth_jwks_nkeys(parsed) == 0))
    {
        abort();
    }

    gms_oauth_jwks_free(parsed);

    check(gms_oauth_verify(data, size, &provider, 1, NOW_MS, 0, &c), &c);

    nl = memchr(data, '\n', size);

    if (nl == NULL || size > GMS_TOKEN_MAX_LEN / 2) {
        return 0;
    }

    token = malloc(size * 2 + 400);
    if (token == NULL) {
        return 0;
    }

    n = b64url(data, nl - data, token);
    token[n++] = '.';
    n += b64url(nl + 1, size - (nl - data) - 1, token + n);

    sig_len = sizeof(sig);
    mctx = EVP_MD_CTX_new();

    if (mctx != NULL
        && EVP_DigestSignInit(mctx, NULL, EVP_sha256(), NULL, key) == 1
        && EVP_DigestSign(mctx, sig, &sig_len, (unsigned char *) token, n)
           == 1)
    {
        token[n++] = '.';
        n += b64url(sig, sig_len, token + n);

        check(gms_oauth_verify((unsigned char *) token, n, &provider, 1,
                               NOW_MS, 60000, &c), &c);
    }

    EVP_MD_CTX_free(mctx);
    free(token);

    return 0;
}

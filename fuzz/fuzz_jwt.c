
/*
 * libFuzzer: a bearer token to gms_jwt_verify(), and the system client's
 * Basic credentials.  A forger cannot sign, so the fuzzer also signs what
 * it is given: input "header\npayload" is made a JWT under the key, which
 * takes the payload's parser where an attacker cannot, for the day the key
 * leaks or a bug lets a payload through.
 */


#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "gms_jwt.h"


static const gms_jwt_key_t  key = {
    (const unsigned char *) "fuzz-signing-key", sizeof("fuzz-signing-key") - 1
};


static size_t
b64url(const unsigned char *in, size_t len, unsigned char *out)
{
    size_t  i, n;

    n = (size_t) EVP_EncodeBlock(out, in, (int) len);

    while (n > 0 && out[n - 1] == '=') {
        n--;
    }

    for (i = 0; i < n; i++) {
        out[i] = (out[i] == '+') ? '-' : (out[i] == '/') ? '_' : out[i];
    }

    return n;
}


static void
check(gms_jwt_rc_e rc, gms_jwt_claims_t *c)
{
    if (rc != GMS_JWT_OK) {
        if (c->error == NULL) {
            abort();
        }

        return;
    }

    /* what is accepted is a DataHub user's urn, safe in a header */
    if (c->actor_len > GMS_ACTOR_MAX
        || strlen(c->actor) != c->actor_len
        || strncmp(c->actor, GMS_JWT_ACTOR_PREFIX,
                   sizeof(GMS_JWT_ACTOR_PREFIX) - 1) != 0
        || !gms_token_actor_valid(c->actor, c->actor_len)
        || (c->version != 1 && c->version != 2)
        || c->type == GMS_TOKEN_NONE || c->type == GMS_TOKEN_SYSTEM)
    {
        abort();
    }
}


/* the payload's scanner reads every text as jansson does */

static void
same_claims(const unsigned char *data, size_t size)
{
    gms_jwt_rc_e      rc_scan, rc_jansson;
    gms_jwt_claims_t  scan, jansson;

    rc_scan = gms_jwt_payload_json(data, size, 1800000000000LL, 60000, 1,
                                   &scan);
    rc_jansson = gms_jwt_payload_json(data, size, 1800000000000LL, 60000, 0,
                                      &jansson);

    if (rc_scan != rc_jansson
        || (scan.error == NULL) != (jansson.error == NULL)
        || (scan.error && strcmp(scan.error, jansson.error) != 0))
    {
        abort();
    }

    if (rc_scan == GMS_JWT_OK
        && (scan.type != jansson.type || scan.version != jansson.version
            || scan.expires_at != jansson.expires_at
            || scan.actor_len != jansson.actor_len
            || memcmp(scan.actor, jansson.actor, scan.actor_len) != 0))
    {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    size_t                 n, len;
    unsigned int           md_len;
    unsigned char          md[32];
    unsigned char         *token;
    const unsigned char   *nl, *cred;
    gms_jwt_claims_t       c;

    check(gms_jwt_verify(data, size, &key, 1, 1800000000000LL, 0, &c), &c);

    if (size <= GMS_TOKEN_MAX_LEN) {
        same_claims(data, size);
    }

    if ((gms_token_basic_parse(data, size, 0, &cred, &len) == 0
         && (cred < data || cred + len > data + size
             || memchr(cred, ':', len) == NULL))
        || (gms_token_basic_parse(data, size, 1, &cred, &len) == 0
            && (cred < data || cred + len > data + size
                || memchr(cred, ':', len) == NULL)))
    {
        abort();
    }

    nl = memchr(data, '\n', size);

    if (nl == NULL || size > GMS_TOKEN_MAX_LEN / 2) {
        return 0;
    }

    token = malloc(size * 2 + 64);
    if (token == NULL) {
        return 0;
    }

    n = b64url(data, nl - data, token);
    token[n++] = '.';
    n += b64url(nl + 1, size - (nl - data) - 1, token + n);

    HMAC(EVP_sha256(), key.data, (int) key.len, token, n, md, &md_len);

    token[n++] = '.';
    n += b64url(md, 32, token + n);

    check(gms_jwt_verify(token, n, &key, 1, 1800000000000LL, 60000, &c), &c);

    free(token);

    return 0;
}

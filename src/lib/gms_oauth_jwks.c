
/*
 * A JWKS file as GMS reads its issuer's jwks_uri (DataHubOAuthSigningKey-
 * Resolver in metadata-service/auth-impl, DataHub 1.3.0, PR 14707): the
 * members of "keys" are looked up by kid, and only RSA keys are usable
 * ("ECDSA algorithms not yet supported", 1.3.0 to 1.6.x).  A key is made
 * from n and e (RFC 7518, 6.3.1) with libcrypto's EVP_PKEY_fromdata.
 *
 * The edge is stricter where GMS would fail later: the file must be a JSON
 * object whose "keys" is an array of objects; an RSA key with a kid must
 * have a good n and e and at least 2048 bits, or the whole file is
 * refused (so that gms-token jwks never writes one that is half broken);
 * members without a kid, and keys of other types, are skipped.  A file
 * with no usable key is refused.  When two keys have one kid, the first
 * is used, as GMS's loop finds it.
 */


#include "gms_oauth_jwks.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>


typedef struct {
    char        kid[GMS_JWKS_KID_MAX + 1];
    size_t      kid_len;
    EVP_PKEY   *pkey;
} gms_jwks_key_t;


struct gms_jwks_s {
    size_t          nkeys;
    gms_jwks_key_t  keys[GMS_JWKS_KEYS_MAX];
};


static const char *gms_jwks_rsa(json_t *jwk, EVP_PKEY **pkey);
static BIGNUM *gms_jwks_bignum(json_t *jwk, const char *name);


gms_jwks_t *
gms_oauth_jwks_parse(const char *data, size_t len, const char **error)
{
    size_t           i;
    json_t          *root, *keys, *jwk, *kid, *kty;
    EVP_PKEY        *pkey;
    gms_jwks_t      *jwks;
    const char      *err;
    gms_jwks_key_t  *key;

    *error = NULL;

    if (len > GMS_JWKS_MAX_LEN) {
        *error = "longer than 1 MiB";
        return NULL;
    }

    root = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);

    if (root == NULL || !json_is_object(root)) {
        json_decref(root);
        *error = "not a JSON object";
        return NULL;
    }

    keys = json_object_get(root, "keys");

    if (!json_is_array(keys)) {
        json_decref(root);
        *error = "\"keys\" is missing or not an array";
        return NULL;
    }

    jwks = calloc(1, sizeof(gms_jwks_t));
    if (jwks == NULL) {
        json_decref(root);
        *error = "out of memory";
        return NULL;
    }

    json_array_foreach(keys, i, jwk) {

        if (!json_is_object(jwk)) {
            *error = "a member of \"keys\" is not an object";
            goto failed;
        }

        kid = json_object_get(jwk, "kid");
        kty = json_object_get(jwk, "kty");

        if (!json_is_string(kid) || !json_is_string(kty)
            || strcmp(json_string_value(kty), "RSA") != 0)
        {
            continue;
        }

        if (json_string_length(kid) == 0
            || json_string_length(kid) > GMS_JWKS_KID_MAX
            || memchr(json_string_value(kid), '\0', json_string_length(kid)))
        {
            *error = "a kid is empty, longer than 256 bytes or holds a NUL";
            goto failed;
        }

        if (gms_oauth_jwks_find(jwks, json_string_value(kid),
                                json_string_length(kid))
            != NULL)
        {
            continue;
        }

        if (jwks->nkeys == GMS_JWKS_KEYS_MAX) {
            *error = "more than 64 RSA keys";
            goto failed;
        }

        err = gms_jwks_rsa(jwk, &pkey);
        if (err != NULL) {
            *error = err;
            goto failed;
        }

        key = &jwks->keys[jwks->nkeys++];
        key->kid_len = json_string_length(kid);
        memcpy(key->kid, json_string_value(kid), key->kid_len);
        key->pkey = pkey;
    }

    if (jwks->nkeys == 0) {
        *error = "no RSA key with a kid";
        goto failed;
    }

    json_decref(root);

    return jwks;

failed:

    json_decref(root);
    gms_oauth_jwks_free(jwks);

    return NULL;
}


void
gms_oauth_jwks_free(gms_jwks_t *jwks)
{
    size_t  i;

    if (jwks == NULL) {
        return;
    }

    for (i = 0; i < jwks->nkeys; i++) {
        EVP_PKEY_free(jwks->keys[i].pkey);
    }

    free(jwks);
}


size_t
gms_oauth_jwks_nkeys(const gms_jwks_t *jwks)
{
    return jwks ? jwks->nkeys : 0;
}


EVP_PKEY *
gms_oauth_jwks_find(const gms_jwks_t *jwks, const char *kid, size_t kid_len)
{
    size_t  i;

    if (jwks == NULL) {
        return NULL;
    }

    for (i = 0; i < jwks->nkeys; i++) {
        if (jwks->keys[i].kid_len == kid_len
            && memcmp(jwks->keys[i].kid, kid, kid_len) == 0)
        {
            return jwks->keys[i].pkey;
        }
    }

    return NULL;
}


/* an RSA public key of n and e; NULL, or why not */

static const char *
gms_jwks_rsa(json_t *jwk, EVP_PKEY **pkey)
{
    BIGNUM          *n, *e;
    OSSL_PARAM      *params;
    const char      *err;
    EVP_PKEY_CTX    *ctx;
    OSSL_PARAM_BLD  *bld;

    *pkey = NULL;
    params = NULL;
    ctx = NULL;
    bld = NULL;
    err = "an RSA key's n or e is missing or not base64url";

    n = gms_jwks_bignum(jwk, "n");
    e = gms_jwks_bignum(jwk, "e");

    if (n == NULL || e == NULL || BN_is_zero(n) || BN_is_zero(e)) {
        goto done;
    }

    /*
     * Java's RSAKeyFactory refuses an exponent under 3 (and OpenSSL's
     * public checks want it odd): with e = 1 the padded digest is its own
     * signature, anyone could forge one
     */
    if (!BN_is_odd(e) || BN_num_bits(e) < 2 || BN_num_bits(e) > 64
        || BN_cmp(e, n) >= 0)
    {
        err = "an RSA key's exponent is not an odd number from 3 to 2^64 "
              "(GMS's Java refuses it)";
        goto done;
    }

    err = "an RSA key is not one libcrypto accepts";

    bld = OSSL_PARAM_BLD_new();

    if (bld == NULL
        || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n)
        || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
    {
        goto done;
    }

    params = OSSL_PARAM_BLD_to_param(bld);
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);

    if (params == NULL || ctx == NULL
        || EVP_PKEY_fromdata_init(ctx) != 1
        || EVP_PKEY_fromdata(ctx, pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
    {
        *pkey = NULL;
        goto done;
    }

    if (EVP_PKEY_get_bits(*pkey) < GMS_JWKS_RSA_MIN_BITS) {
        EVP_PKEY_free(*pkey);
        *pkey = NULL;
        err = "an RSA key is shorter than 2048 bits (GMS's jjwt refuses it)";
        goto done;
    }

    err = NULL;

done:

    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(n);
    BN_free(e);

    return err;
}


static BIGNUM *
gms_jwks_bignum(json_t *jwk, const char *name)
{
    size_t          len;
    json_t         *v;
    BIGNUM         *bn;
    unsigned char  *bytes;

    v = json_object_get(jwk, name);

    if (!json_is_string(v)
        || gms_oauth_jwks_b64url_decode(json_string_value(v),
                                        json_string_length(v), &bytes, &len)
           != 0)
    {
        return NULL;
    }

    bn = (len > 0 && len <= 2048) ? BN_bin2bn(bytes, (int) len, NULL) : NULL;

    free(bytes);

    return bn;
}


/*
 * base64url (RFC 7515, 2), padding optional, through libcrypto's decoder:
 * the alphabet is mapped to the standard one and the padding put back.
 */

int
gms_oauth_jwks_b64url_decode(const char *in, size_t len, unsigned char **out,
    size_t *out_len)
{
    int             n;
    size_t          i, pad;
    unsigned char   ch, *std;

    *out = NULL;

    while (len > 0 && in[len - 1] == '=') {
        len--;
    }

    if (len == 0 || len % 4 == 1 || len > GMS_JWKS_MAX_LEN) {
        return -1;
    }

    pad = (4 - len % 4) % 4;

    std = malloc(len + pad + 1);
    if (std == NULL) {
        return -1;
    }

    for (i = 0; i < len; i++) {
        ch = (unsigned char) in[i];

        if (ch == '-') {
            ch = '+';

        } else if (ch == '_') {
            ch = '/';

        } else if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
                     || (ch >= '0' && ch <= '9')))
        {
            free(std);
            return -1;
        }

        std[i] = ch;
    }

    memset(std + len, '=', pad);

    /* decoded in place: the output is shorter than the input */
    n = EVP_DecodeBlock(std, std, (int) (len + pad));

    if (n < 0 || (size_t) n < pad) {
        free(std);
        return -1;
    }

    *out = std;
    *out_len = (size_t) n - pad;

    return 0;
}

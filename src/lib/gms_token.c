
/*
 * The bearer token: the Authorization header parsed (Bearer, and the
 * system client's Basic), the token id computed and checked, and the
 * fields of a cache entry checked as gms-token writes them and the module
 * reads them.
 */


#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "gms_token.h"


const char  *gms_token_type_names[GMS_TOKEN_NTYPES] = {
    "", "PERSONAL", "SESSION", "SERVICE_ACCOUNT", "SYSTEM", "OAUTH", "GUEST"
};


/* token68 characters (RFC 7235): 1; '=': 2; SP and HTAB: 4; else 0 */
static const unsigned char  gms_bearer_class[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1,     /*  +-./ */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 2, 0, 0,     /* 0-9 = */
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,     /* A-O */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1,     /* P-Z _ */
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,     /* a-o */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0      /* p-z ~ */
};


/*
 * credentials = "Bearer" 1*SP token68 (RFC 6750, 2.1), the scheme
 * case-insensitive; returns 0 and the token, or -1 for anything else.
 * Every request's token goes through here, a signed one is some 300
 * bytes: its characters are looked up four at a time.
 */

int
gms_token_bearer_parse(const unsigned char *value, size_t len,
    const unsigned char **token, size_t *token_len)
{
    size_t                       i, start, end;
    static const size_t          scheme_len = sizeof("Bearer") - 1;
    const unsigned char * const  cls = gms_bearer_class;

    if (len <= scheme_len
        || strncasecmp((const char *) value, "Bearer", scheme_len) != 0
        || cls[value[scheme_len]] != 4)
    {
        return -1;
    }

    for (i = scheme_len; i < len && cls[value[i]] == 4; i++) {
        /* void */
    }

    start = i;

    while (i + 4 <= len
           && (cls[value[i]] & cls[value[i + 1]] & cls[value[i + 2]]
               & cls[value[i + 3]] & 1))
    {
        i += 4;
    }

    while (i < len && cls[value[i]] == 1) {
        i++;
    }

    if (i == start) {
        return -1;
    }

    while (i < len && cls[value[i]] == 2) {
        i++;
    }

    end = i;

    while (i < len && cls[value[i]] == 4) {
        i++;
    }

    if (i != len || end - start > GMS_TOKEN_MAX_LEN) {
        return -1;
    }

    *token = value + start;
    *token_len = end - start;

    return 0;
}


/*
 * Where a Bearer credential's token would be: after the scheme and its
 * spaces, up to the trailing spaces; 0, or -1 when there is none.  Not a
 * check of the token: where gms_token_bearer_parse() takes the header, it
 * finds the same token.
 */

int
gms_token_bearer_span(const unsigned char *value, size_t len,
    const unsigned char **token, size_t *token_len)
{
    size_t                       i;
    static const size_t          scheme_len = sizeof("Bearer") - 1;
    const unsigned char * const  cls = gms_bearer_class;

    if (len <= scheme_len
        || strncasecmp((const char *) value, "Bearer", scheme_len) != 0
        || cls[value[scheme_len]] != 4)
    {
        return -1;
    }

    for (i = scheme_len; i < len && cls[value[i]] == 4; i++) {
        /* void */
    }

    while (len > i && cls[value[len - 1]] == 4) {
        len--;
    }

    if (len == i) {
        return -1;
    }

    *token = value + i;
    *token_len = len - i;

    return 0;
}


/*
 * The system client's credentials as DataHubSystemAuthenticator reads
 * them: the scheme "Basic " or "basic ", then "<client id>:<secret>" as
 * they are, not base64.  Before DataHub 1.4.0, Java's split(":") drops
 * trailing empty parts and GMS wants exactly two, so trailing colons are
 * ignored and one colon must remain; from 1.4.0 (split_first), split(":",
 * 2): the id ends at the first colon, the rest, colons and all, is the
 * secret.  Returns 0 and "id:secret"; -1: another scheme; -2: Basic, but
 * not an id and a secret.
 */

int
gms_token_basic_parse(const unsigned char *value, size_t len, int split_first,
    const unsigned char **credentials, size_t *credentials_len)
{
    size_t                i, colons;
    static const size_t   scheme_len = sizeof("Basic ") - 1;

    if (len <= scheme_len
        || (memcmp(value, "Basic ", scheme_len) != 0
            && memcmp(value, "basic ", scheme_len) != 0))
    {
        return -1;
    }

    value += scheme_len;
    len -= scheme_len;

    if (split_first) {
        if (memchr(value, ':', len) == NULL) {
            return -2;
        }

        *credentials = value;
        *credentials_len = len;

        return 0;
    }

    while (len > 0 && value[len - 1] == ':') {
        len--;
    }

    colons = 0;

    for (i = 0; i < len; i++) {
        colons += (value[i] == ':');
    }

    if (colons != 1) {
        return -2;
    }

    *credentials = value;
    *credentials_len = len;

    return 0;
}


gms_token_type_e
gms_token_type_parse(const char *name, size_t len)
{
    size_t  i;

    /* a token's types only: SYSTEM, OAUTH and GUEST are no token's */

    for (i = 1; i < GMS_TOKEN_SYSTEM; i++) {
        if (strlen(gms_token_type_names[i]) == len
            && memcmp(gms_token_type_names[i], name, len) == 0)
        {
            return (gms_token_type_e) i;
        }
    }

    return GMS_TOKEN_NONE;
}


/*
 * The id DataHub gives its access-token entity: b64(SHA-256(token || salt)).
 * The digest is fetched and the context made once per process: with
 * OpenSSL 3 both cost more than hashing a token (callers are
 * single-threaded: an nginx worker, the tool, a fuzzer).
 */

void
gms_token_id(const unsigned char *token, size_t token_len,
    const unsigned char *salt, size_t salt_len,
    char id[GMS_TOKEN_ID_LEN + 1])
{
    unsigned char       md[SHA256_DIGEST_LENGTH];
    static EVP_MD      *sha256;
    static EVP_MD_CTX  *ctx;

    if (ctx == NULL) {
        sha256 = EVP_MD_fetch(NULL, "SHA2-256", NULL);
        ctx = EVP_MD_CTX_new();
    }

    if (sha256 == NULL || ctx == NULL
        || EVP_DigestInit_ex(ctx, sha256, NULL) != 1
        || EVP_DigestUpdate(ctx, token, token_len) != 1
        || EVP_DigestUpdate(ctx, salt, salt_len) != 1
        || EVP_DigestFinal_ex(ctx, md, NULL) != 1)
    {
        /* no usable id: an empty one never matches a Redis key */
        id[0] = '\0';
        return;
    }

    EVP_EncodeBlock((unsigned char *) id, md, SHA256_DIGEST_LENGTH);
}


int
gms_token_id_valid(const char *id, size_t len)
{
    unsigned char  md[SHA256_DIGEST_LENGTH + 2];
    size_t         i;

    if (len != GMS_TOKEN_ID_LEN || id[len - 1] != '=' || id[len - 2] == '=') {
        return 0;
    }

    for (i = 0; i < len - 1; i++) {
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z')
              || (id[i] >= '0' && id[i] <= '9') || id[i] == '+'
              || id[i] == '/'))
        {
            return 0;
        }
    }

    /* 44 chars decode to 33 bytes with the padding byte counted */
    return EVP_DecodeBlock(md, (const unsigned char *) id, (int) len) == 33;
}


/* milliseconds since the epoch: digits only, no sign; "" means 0 */

int
gms_token_parse_ms(const char *s, size_t len, int64_t *ms)
{
    size_t   i;
    int64_t  v;

    v = 0;

    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - 9) / 10) {
            return -1;
        }

        v = v * 10 + (s[i] - '0');
    }

    *ms = v;

    return 0;
}


/* DataHub privilege names: letters, digits, '_', '-', '.' and ':' */

static const unsigned char  gms_privilege_char[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1,
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0
};


int
gms_token_privilege_valid(const char *name, size_t len)
{
    size_t                i;
    const unsigned char  *p;

    if (len == 0 || len > GMS_PRIVILEGE_MAX) {
        return 0;
    }

    p = (const unsigned char *) name;

    for (i = 0; i < len; i++) {
        if (!gms_privilege_char[p[i]]) {
            return 0;
        }
    }

    return 1;
}


/*
 * An actor as the module hands it to GMS in X-DataHub-Actor: a DataHub
 * URN, valid UTF-8 (as jansson checks it: overlong forms and surrogates
 * refused), without control characters (no header splitting).
 */

int
gms_token_actor_valid(const char *urn, size_t len)
{
    size_t                i, n;
    const unsigned char  *p;

    if (len <= sizeof("urn:li:") - 1 || len > GMS_ACTOR_MAX
        || memcmp(urn, "urn:li:", sizeof("urn:li:") - 1) != 0)
    {
        return 0;
    }

    p = (const unsigned char *) urn;

    for (i = 0; i < len; i += n) {

        /* printable ASCII: 0x20 to 0x7e */

        if ((unsigned char) (p[i] - 0x20) < 0x5f) {
            n = 1;
            continue;
        }

        if (p[i] < 0x80) {
            return 0;
        }

        n = gms_token_utf8_len(p + i, p + len);

        if (n == 0) {
            return 0;
        }
    }

    return 1;
}


/* the bytes of one UTF-8 sequence starting at p, or 0 if it is not one */

size_t
gms_token_utf8_len(const unsigned char *p, const unsigned char *end)
{
    size_t    n, i;
    uint32_t  c, min;

    if (p[0] < 0x80) {
        return 1;
    }

    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        n = 2; c = p[0] & 0x1f; min = 0x80;

    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3; c = p[0] & 0x0f; min = 0x800;

    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4; c = p[0] & 0x07; min = 0x10000;

    } else {
        return 0;
    }

    if ((size_t) (end - p) < n) {
        return 0;
    }

    for (i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }

        c = (c << 6) | (p[i] & 0x3f);
    }

    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        return 0;
    }

    return n;
}

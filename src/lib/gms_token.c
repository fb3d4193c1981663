
/*
 * Bearer header parsing, token id computation and the Redis lookup
 * script with the parser of its reply.
 */


#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <jansson.h>

#include "gms_token.h"


/*
 * One round trip per lookup: the token hash and the actor's privilege set.
 * KEYS[1] = <prefix>token:<id>, ARGV[1] = <prefix>actor:
 * Reply: nil when the token is unknown, else
 * [actor, expiresAt or "", type or "", [privilege, ...]].
 */
const char  gms_lookup_script[] =
    "local t = redis.call('HMGET', KEYS[1], 'actor', 'expiresAt', 'type')\n"
    "if not t[1] then return false end\n"
    "return {t[1], t[2] or '', t[3] or '',"
    " redis.call('SMEMBERS', ARGV[1] .. t[1])}\n";

const size_t  gms_lookup_script_len = sizeof(gms_lookup_script) - 1;

const char  *gms_token_type_names[GMS_TOKEN_NTYPES] = {
    "", "PERSONAL", "SESSION", "SERVICE_ACCOUNT", "SYSTEM"
};


static int gms_privileges_check(const redisReply *e, gms_lookup_t *lookup);


static int
gms_is_token68_char(unsigned char ch)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
        || (ch >= '0' && ch <= '9'))
    {
        return 1;
    }

    return ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '+'
           || ch == '/';
}


/*
 * credentials = "Bearer" 1*SP token68 (RFC 6750, 2.1), the scheme
 * case-insensitive; returns 0 and the token, or -1 for anything else.
 */

int
gms_bearer_parse(const unsigned char *value, size_t len,
    const unsigned char **token, size_t *token_len)
{
    size_t                i, start, end;
    static const size_t   scheme_len = sizeof("Bearer") - 1;

    if (len <= scheme_len
        || strncasecmp((const char *) value, "Bearer", scheme_len) != 0
        || (value[scheme_len] != ' ' && value[scheme_len] != '\t'))
    {
        return -1;
    }

    for (i = scheme_len; i < len && (value[i] == ' ' || value[i] == '\t');
         i++)
    {
        /* void */
    }

    start = i;

    while (i < len && gms_is_token68_char(value[i])) {
        i++;
    }

    if (i == start) {
        return -1;
    }

    while (i < len && value[i] == '=') {
        i++;
    }

    end = i;

    while (i < len && (value[i] == ' ' || value[i] == '\t')) {
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
 * The system client's credentials as DataHubSystemAuthenticator reads
 * them: the scheme "Basic " or "basic ", then "<client id>:<secret>" as
 * they are, not base64.  Java's split(":") drops trailing empty parts and
 * GMS wants exactly two, so trailing colons are ignored and one colon must
 * remain.  Returns 0 and "id:secret"; -1: another scheme; -2: Basic, but
 * not an id and a secret.
 */

int
gms_basic_parse(const unsigned char *value, size_t len,
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

    for (i = 1; i < GMS_TOKEN_NTYPES; i++) {
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


/*
 * A credential runs to the end of its line: a quote or a backslash can be
 * part of what a client sent (Bearer "eyJ..."), so only CR and LF end it.
 */

static size_t
gms_mask_until(unsigned char *buf, size_t len, size_t j)
{
    for ( /* void */ ; j < len; j++) {
        if (buf[j] == '\r' || buf[j] == '\n') {
            break;
        }

        buf[j] = '*';
    }

    return j;
}


/*
 * "name=value; name=value": each value to its ';' or the line end, the
 * names kept.  An element without '=' is all value.
 */

static size_t
gms_mask_cookies(unsigned char *buf, size_t len, size_t j)
{
    size_t  k;

    for ( ;; ) {
        while (j < len && (buf[j] == ' ' || buf[j] == '\t')) {
            j++;
        }

        for (k = j; k < len; k++) {
            if (buf[k] == '=' || buf[k] == ';' || buf[k] == '\r'
                || buf[k] == '\n')
            {
                break;
            }
        }

        j = (k < len && buf[k] == '=') ? k + 1 : j;

        for ( /* void */ ; j < len; j++) {
            if (buf[j] == ';' || buf[j] == '\r' || buf[j] == '\n') {
                break;
            }

            buf[j] = '*';
        }

        if (j == len || buf[j] != ';') {
            return j;
        }

        j++;
    }
}


/*
 * The length of "<name>:" and the blanks after it at buf + i, 0 if it is
 * not there.  name is lower case; its '_' stands for '-' or '_', as in
 * nginx's $http_ variables.
 */

static size_t
gms_mask_header(const unsigned char *buf, size_t len, size_t i,
    const char *name)
{
    size_t         n;
    unsigned char  c;

    for (n = 0; name[n] != '\0'; n++) {
        if (i + n == len) {
            return 0;
        }

        c = buf[i + n];

        if (c >= 'A' && c <= 'Z') {
            c |= 0x20;
        }

        if (name[n] == '_' ? (c != '_' && c != '-') : c != name[n]) {
            return 0;
        }
    }

    if (n == 0 || i + n == len || buf[i + n] != ':') {
        return 0;
    }

    for (n++; i + n < len && (buf[i + n] == ' ' || buf[i + n] == '\t'); n++)
    {
        /* void */
    }

    return n;
}


/*
 * Masks credentials in a log line, in place, as far as the line end (a
 * closing quote of nginx's included): the value of an Authorization
 * header, whatever its scheme, and of each header in headers (those
 * gms_token_source reads); whatever follows "Bearer " elsewhere (a
 * variable's value, say); the value of every cookie in a Cookie (or
 * Set-Cookie) header, the names kept.  nginx's debug lines quote request
 * headers and whole requests to upstreams; a token must not reach a log
 * file even then.  A WWW-Authenticate challenge (Bearer realm=...) is
 * left alone.
 */

void
gms_mask_credentials(unsigned char *buf, size_t len,
    const char *const *headers, size_t nheaders)
{
    size_t  i, j, h, n;

    for (i = 0; i < len; i++) {

        n = gms_mask_header(buf, len, i, "authorization");

        for (h = 0; n == 0 && h < nheaders; h++) {
            n = gms_mask_header(buf, len, i, headers[h]);
        }

        if (n) {
            i = gms_mask_until(buf, len, i + n);
            continue;
        }

        n = gms_mask_header(buf, len, i, "cookie");

        if (n) {
            i = gms_mask_cookies(buf, len, i + n);
            continue;
        }

        if ((buf[i] | 0x20) != 'b' || len - i <= 7
            || strncasecmp((const char *) buf + i, "bearer", 6) != 0
            || (buf[i + 6] != ' ' && buf[i + 6] != '\t'))
        {
            continue;
        }

        for (j = i + 7; j < len && (buf[j] == ' ' || buf[j] == '\t'); j++) {
            /* void */
        }

        if (len - j >= 6 && strncmp((const char *) buf + j, "realm=", 6) == 0)
        {
            continue;
        }

        i = gms_mask_until(buf, len, j);
    }
}


/* milliseconds since the epoch: digits only, no sign; "" means 0 */

int
gms_parse_ms(const char *s, size_t len, int64_t *ms)
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


/* DataHub privilege names: upper-case letters, digits and underscores */

int
gms_privilege_valid(const char *name, size_t len)
{
    size_t  i;

    if (len == 0 || len > GMS_PRIVILEGE_MAX) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (!((name[i] >= 'A' && name[i] <= 'Z')
              || (name[i] >= 'a' && name[i] <= 'z')
              || (name[i] >= '0' && name[i] <= '9') || name[i] == '_'
              || name[i] == '-' || name[i] == '.' || name[i] == ':'))
        {
            return 0;
        }
    }

    return 1;
}


/*
 * An actor as the module hands it to GMS in X-DataHub-Actor: a DataHub
 * URN, valid UTF-8, without control characters (no header splitting).
 */

int
gms_actor_valid(const char *urn, size_t len)
{
    size_t   i;
    json_t  *utf8;

    if (len <= sizeof("urn:li:") - 1 || len > GMS_ACTOR_MAX
        || memcmp(urn, "urn:li:", sizeof("urn:li:") - 1) != 0)
    {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) urn[i] < 0x20 || urn[i] == 0x7f) {
            return 0;
        }
    }

    /* jansson's check of UTF-8: overlong forms and surrogates refused */
    utf8 = json_stringn(urn, len);
    if (utf8 == NULL) {
        return 0;
    }

    json_decref(utf8);

    return 1;
}


gms_lookup_rc_e
gms_lookup_reply_parse(const redisReply *reply, gms_lookup_t *lookup)
{
    size_t       i;
    redisReply  *e;

    memset(lookup, 0, sizeof(gms_lookup_t));

    if (reply == NULL) {
        lookup->error = "no reply";
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->type == REDIS_REPLY_NIL) {
        return GMS_LOOKUP_UNKNOWN;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        lookup->error = reply->str;
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 4) {
        lookup->error = "unexpected reply shape";
        return GMS_LOOKUP_BAD_REPLY;
    }

    for (i = 0; i < 3; i++) {
        if (reply->element[i]->type != REDIS_REPLY_STRING) {
            lookup->error = "unexpected reply element type";
            return GMS_LOOKUP_BAD_REPLY;
        }
    }

    e = reply->element[3];

    if (gms_privileges_check(e, lookup) != 0) {
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->element[0]->len == 0) {
        return GMS_LOOKUP_UNKNOWN;
    }

    if (!gms_actor_valid(reply->element[0]->str, reply->element[0]->len)) {
        lookup->error = "invalid actor: not a urn:li: URN of valid UTF-8 "
                        "without control bytes, at most 512 bytes";
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (gms_parse_ms(reply->element[1]->str, reply->element[1]->len,
                     &lookup->expires_at)
        != 0)
    {
        lookup->error = "expiresAt is not a number of milliseconds";
        return GMS_LOOKUP_BAD_REPLY;
    }

    lookup->actor = reply->element[0]->str;
    lookup->actor_len = reply->element[0]->len;
    lookup->type = reply->element[2]->str;
    lookup->type_len = reply->element[2]->len;
    lookup->privileges = e->element;
    lookup->nprivileges = e->elements;

    return GMS_LOOKUP_FOUND;
}


/*
 * SMEMBERS <prefix>actor:<urn>: the privileges of a session token's user
 * (a user with no set holds none).
 */

gms_lookup_rc_e
gms_members_reply_parse(const redisReply *reply, gms_lookup_t *lookup)
{
    memset(lookup, 0, sizeof(gms_lookup_t));

    if (reply == NULL) {
        lookup->error = "no reply";
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        lookup->error = reply->str;
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (gms_privileges_check(reply, lookup) != 0) {
        return GMS_LOOKUP_BAD_REPLY;
    }

    lookup->privileges = reply->element;
    lookup->nprivileges = reply->elements;

    return GMS_LOOKUP_FOUND;
}


/* a set of privilege names, as the lookup accepts them */

static int
gms_privileges_check(const redisReply *e, gms_lookup_t *lookup)
{
    size_t  i;

    if (e->type != REDIS_REPLY_ARRAY) {
        lookup->error = "privileges are not an array";
        return -1;
    }

    if (e->elements > GMS_PRIVILEGES_MAX) {
        lookup->error = "more privileges than an entry may hold";
        return -1;
    }

    for (i = 0; i < e->elements; i++) {
        if (e->element[i]->type != REDIS_REPLY_STRING) {
            lookup->error = "privilege is not a string";
            return -1;
        }

        if (!gms_privilege_valid(e->element[i]->str, e->element[i]->len)) {
            lookup->error = "invalid privilege name";
            return -1;
        }
    }

    return 0;
}

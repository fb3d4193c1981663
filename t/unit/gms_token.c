
/* Unit tests of src/gms_token.c: header parsing, ids, Redis replies. */


#include <stdlib.h>

#include "tap.h"
#include "gms_token.h"
#include "gms_mask.h"
#include "gms_lookup.h"


/* the parser's token, which gms_bearer_span() finds where it takes one */

static int
bearer(const char *header, const char *want)
{
    size_t                len, span_len;
    char                  got[GMS_TOKEN_MAX_LEN + 1];
    const unsigned char  *token, *span;

    if (gms_bearer_parse((const unsigned char *) header, strlen(header),
                         &token, &len)
        != 0)
    {
        return want == NULL;
    }

    if (gms_bearer_span((const unsigned char *) header, strlen(header),
                        &span, &span_len)
        != 0
        || span != token || span_len != len)
    {
        return 0;
    }

    memcpy(got, token, len);
    got[len] = '\0';

    return want != NULL && strcmp(got, want) == 0;
}


static int
span(const char *header, const char *want)
{
    size_t                len;
    const unsigned char  *token;

    if (gms_bearer_span((const unsigned char *) header, strlen(header),
                        &token, &len)
        != 0)
    {
        return want == NULL;
    }

    return want != NULL && len == strlen(want)
           && memcmp(token, want, len) == 0;
}


static void
test_bearer(void)
{
    char  *big;

    ok(bearer("Bearer abc", "abc"), "plain bearer token");
    ok(bearer("bearer abc", "abc"), "scheme is case-insensitive");
    ok(bearer("BEARER abc", "abc"), "scheme upper case");
    ok(bearer("Bearer    abc", "abc"), "several spaces before the token");
    ok(bearer("Bearer abc  ", "abc"), "trailing spaces dropped");
    ok(bearer("Bearer a-b.c_d~e+f/g==", "a-b.c_d~e+f/g=="),
       "every token68 character and padding");
    ok(bearer("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.sig",
              "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.sig"), "a JWT");
    ok(bearer("Bearer", NULL), "scheme only");
    ok(bearer("Bearer ", NULL), "scheme and space only");
    ok(bearer("Bearerabc", NULL), "no space after the scheme");
    ok(bearer("Basic YWxhZGRpbjpvcGVuc2VzYW1l", NULL), "basic scheme");
    ok(bearer("Bearer abc def", NULL), "space inside the token");
    ok(bearer("Bearer abc,def", NULL), "comma inside the token");
    ok(bearer("Bearer =abc", NULL), "padding first");
    ok(bearer("Bearer abc=d", NULL), "padding inside");
    ok(bearer("Bearer ab\"c", NULL), "quote inside");
    ok(bearer("Bearer \xc3\xa9t\xc3\xa9", NULL), "UTF-8 bytes");
    ok(bearer("", NULL), "empty header");
    ok(bearer("Bearer\tabc\t", "abc"), "tabs around the token");
    ok(span("Bearer  ab c  ", "ab c"), "span: up to the trailing spaces");
    ok(span("bearer x", "x"), "span: one character");
    ok(span("Bearer   ", NULL), "span: none after the scheme");
    ok(span("Bearerx", NULL), "span: no space after the scheme");
    ok(span("Basic abc", NULL), "span: another scheme");

    big = malloc(GMS_TOKEN_MAX_LEN + 16);
    memcpy(big, "Bearer ", 7);
    memset(big + 7, 'a', GMS_TOKEN_MAX_LEN);
    big[7 + GMS_TOKEN_MAX_LEN] = '\0';
    ok(bearer(big, big + 7), "token of the longest length accepted");

    big[7 + GMS_TOKEN_MAX_LEN] = 'a';
    big[8 + GMS_TOKEN_MAX_LEN] = '\0';
    ok(bearer(big, NULL), "one byte longer is refused");
    free(big);
}


static void
test_id(void)
{
    char  id[GMS_TOKEN_ID_LEN + 1];

    /* expected values from: printf ... | openssl dgst -sha256 -binary | base64 */

    gms_token_id((const unsigned char *) "secret-token", 12,
                 (const unsigned char *) "", 0, id);
    is_str(id, "kwu9xRtq7VwqVnj9bije56BeiktkPPwLRCfD77hsDZQ=",
           "id of a token without salt");

    gms_token_id((const unsigned char *) "secret-token", 12,
                 (const unsigned char *) "\xc3\xa9\xe2\x82\xacsalt", 9, id);
    is_str(id, "elU0kl8rCfh9VRSENXP4YIkEIM/PzNC7v/v17U6tCzs=",
           "id with a non-ASCII salt appended");

    gms_token_id((const unsigned char *) "", 0,
                 (const unsigned char *) "", 0, id);
    is_str(id, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
           "id of the empty string");

    ok(gms_token_id_valid("kwu9xRtq7VwqVnj9bije56BeiktkPPwLRCfD77hsDZQ=", 44),
       "a real id is valid");
    ok(!gms_token_id_valid("kwu9xRtq7VwqVnj9bije56BeiktkPPwLRCfD77hsDZQ", 43),
       "missing padding");
    ok(!gms_token_id_valid("kwu9xRtq7VwqVnj9bije56BeiktkPPwLRCfD77hsD==", 44),
       "too much padding");
    ok(!gms_token_id_valid("kwu9xRtq7VwqVnj9bije56BeiktkPPwLRCfD77hs-ZQ=", 44),
       "url-safe alphabet refused");
    ok(!gms_token_id_valid("kwu9xRtq7V qVnj9bije56BeiktkPPwLRCfD77hsDZQ=", 44),
       "space refused");
}


static void
test_ms(void)
{
    int64_t  ms;

    ok(gms_parse_ms("1700000000000", 13, &ms) == 0 && ms == 1700000000000LL,
       "milliseconds parsed");
    ok(gms_parse_ms("", 0, &ms) == 0 && ms == 0, "empty means no expiry");
    ok(gms_parse_ms("-1", 2, &ms) != 0, "negative refused");
    ok(gms_parse_ms("12a", 3, &ms) != 0, "garbage refused");
    ok(gms_parse_ms("99999999999999999999", 20, &ms) != 0,
       "overflow refused");
}


static gms_lookup_rc_e
lookup(const char *resp, gms_lookup_t *lk, redisReply **reply)
{
    void         *r;
    redisReader  *reader;

    reader = redisReaderCreate();
    redisReaderFeed(reader, resp, strlen(resp));

    if (redisReaderGetReply(reader, &r) != REDIS_OK || r == NULL) {
        redisReaderFree(reader);
        *reply = NULL;
        return gms_lookup_reply_parse(NULL, lk);
    }

    redisReaderFree(reader);
    *reply = r;

    return gms_lookup_reply_parse(r, lk);
}


static void
test_names(void)
{
    char  big[GMS_ACTOR_MAX + 2];

#define actor(s)  gms_actor_valid(s, sizeof(s) - 1)
#define privilege(s)  gms_privilege_valid(s, sizeof(s) - 1)

    ok(actor("urn:li:corpuser:alice"), "actor: a user");
    ok(actor("urn:li:corpuser:al ice~!"), "actor: printable ASCII");
    ok(actor("urn:li:corpuser:\xc3\xa9l\xc3\xa8ve"), "actor: UTF-8");
    ok(actor("urn:li:corpuser:\xf0\x9f\x98\x80"), "actor: 4-byte UTF-8");
    ok(!actor("urn:li:"), "actor: the prefix only");
    ok(!actor("urn:xx:corpuser:a"), "actor: not urn:li:");
    ok(!actor("urn:li:corpuser:a\r\nX: y"), "actor: CR LF");
    ok(!actor("urn:li:corpuser:a\x7f"), "actor: DEL");
    ok(!actor("urn:li:corpuser:a\tb"), "actor: a tab");
    ok(!gms_actor_valid("urn:li:corpuser:a\0b", 19), "actor: NUL");
    ok(!actor("urn:li:corpuser:\xc0\xaf"), "actor: overlong UTF-8");
    ok(!actor("urn:li:corpuser:\xed\xa0\x80"), "actor: a surrogate");
    ok(!actor("urn:li:corpuser:\xf4\x90\x80\x80"), "actor: past U+10FFFF");
    ok(!actor("urn:li:corpuser:\xc3"), "actor: a cut sequence");
    ok(!actor("urn:li:corpuser:\x80"), "actor: a lone continuation");

    memset(big, 'a', sizeof(big));
    memcpy(big, "urn:li:", 7);
    ok(gms_actor_valid(big, GMS_ACTOR_MAX), "actor: the longest");
    ok(!gms_actor_valid(big, GMS_ACTOR_MAX + 1), "actor: too long");

    ok(privilege("EDIT_ENTITY"), "privilege: DataHub's");
    ok(privilege("a-b.c:d_0"), "privilege: every allowed character");
    ok(!privilege(""), "privilege: empty");
    ok(!privilege("EDIT ENTITY"), "privilege: a space");
    ok(!privilege("EDIT,ENTITY"), "privilege: a comma");
    ok(!privilege("\xc3\xa9"), "privilege: UTF-8");
    ok(gms_privilege_valid(big + 7, GMS_PRIVILEGE_MAX), "privilege: longest");
    ok(!gms_privilege_valid(big + 7, GMS_PRIVILEGE_MAX + 1),
       "privilege: too long");

#undef actor
#undef privilege
}


static void
test_reply(void)
{
    redisReply    *r;
    gms_lookup_t   lk;

    ok(lookup("$-1\r\n", &lk, &r) == GMS_LOOKUP_UNKNOWN, "nil is unknown");
    freeReplyObject(r);

    ok(lookup("*4\r\n$21\r\nurn:li:corpuser:alice\r\n$13\r\n1700000000000\r\n"
              "$8\r\nPERSONAL\r\n*2\r\n$1\r\nA\r\n$2\r\nBB\r\n", &lk, &r)
       == GMS_LOOKUP_FOUND
       && lk.actor_len == 21 && memcmp(lk.actor, "urn:li:corpuser:alice", 21)
          == 0
       && lk.expires_at == 1700000000000LL && lk.nprivileges == 2
       && strcmp(lk.privileges[1]->str, "BB") == 0,
       "found token with expiry and privileges");
    freeReplyObject(r);

    ok(lookup("*4\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n",
              &lk, &r)
       == GMS_LOOKUP_FOUND && lk.expires_at == 0 && lk.nprivileges == 0
       && lk.inactive == 0,
       "no expiry, no privileges; without the flag, active");
    freeReplyObject(r);

    ok(lookup("*5\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n"
              ":1\r\n", &lk, &r)
       == GMS_LOOKUP_FOUND && lk.inactive == 1,
       "the user in <prefix>inactive");
    freeReplyObject(r);

    ok(lookup("*5\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n"
              ":0\r\n", &lk, &r)
       == GMS_LOOKUP_FOUND && lk.inactive == 0,
       "the user not in <prefix>inactive");
    freeReplyObject(r);

    ok(lookup("*5\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n"
              ":2\r\n", &lk, &r)
       == GMS_LOOKUP_FOUND && lk.inactive == GMS_LOOKUP_DELETED,
       "the user in <prefix>deleted too: hard-deleted only");
    freeReplyObject(r);

    ok(lookup("*5\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n"
              ":3\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY,
       "an inactive flag other than 0, 1 or 2 is an error");
    freeReplyObject(r);

    ok(lookup("*5\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n"
              "$1\r\n1\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY,
       "an inactive flag that is no integer is an error");
    freeReplyObject(r);

    ok(lookup("*4\r\n$1\r\nu\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "an actor that is no urn:li: URN");
    freeReplyObject(r);

    ok(lookup("*4\r\n$13\r\nurn:li:a\r\nX:1\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n",
              &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "an actor with CR LF");
    freeReplyObject(r);

    ok(lookup("*4\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*1\r\n"
              "$5\r\nA,B,C\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "a privilege with commas");
    freeReplyObject(r);

    ok(lookup("-LOADING Redis is loading the dataset in memory\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY && strncmp(lk.error, "LOADING", 7) == 0,
       "error reply is an error");
    freeReplyObject(r);

    ok(lookup("*4\r\n$1\r\nu\r\n$3\r\nabc\r\n$0\r\n\r\n*0\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "bad expiresAt is an error");
    freeReplyObject(r);

    ok(lookup("*3\r\n$1\r\nu\r\n$0\r\n\r\n$0\r\n\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "short array is an error");
    freeReplyObject(r);

    ok(lookup("*4\r\n$1\r\nu\r\n$0\r\n\r\n$0\r\n\r\n*1\r\n:5\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "integer privilege is an error");
    freeReplyObject(r);

    ok(lookup(":1\r\n", &lk, &r) == GMS_LOOKUP_BAD_REPLY,
       "integer reply is an error");
    freeReplyObject(r);

    ok(gms_lookup_reply_parse(NULL, &lk) == GMS_LOOKUP_BAD_REPLY,
       "no reply is an error");
}


/* a user's lookup: [[privilege, ...], inactive] */

static gms_lookup_rc_e
user(const char *resp, gms_lookup_t *lk, redisReply **reply)
{
    void         *r;
    redisReader  *reader;

    reader = redisReaderCreate();
    redisReaderFeed(reader, resp, strlen(resp));

    if (redisReaderGetReply(reader, &r) != REDIS_OK) {
        r = NULL;
    }

    redisReaderFree(reader);
    *reply = r;

    return gms_members_reply_parse(r, lk);
}


static void
test_user_reply(void)
{
    redisReply    *r;
    gms_lookup_t   lk;

    ok(user("*2\r\n*2\r\n$1\r\nA\r\n$2\r\nBB\r\n:0\r\n", &lk, &r)
       == GMS_LOOKUP_FOUND && lk.nprivileges == 2 && lk.inactive == 0
       && strcmp(lk.privileges[1]->str, "BB") == 0,
       "user: privileges, active");
    freeReplyObject(r);

    ok(user("*2\r\n*0\r\n:1\r\n", &lk, &r) == GMS_LOOKUP_FOUND
       && lk.nprivileges == 0 && lk.inactive == GMS_LOOKUP_INACTIVE,
       "user: no set, in <prefix>inactive");
    freeReplyObject(r);

    ok(user("*2\r\n*0\r\n:2\r\n", &lk, &r) == GMS_LOOKUP_FOUND
       && lk.inactive == GMS_LOOKUP_DELETED,
       "user: in <prefix>deleted too");
    freeReplyObject(r);

    ok(user("*2\r\n*0\r\n:3\r\n", &lk, &r) == GMS_LOOKUP_BAD_REPLY,
       "user: a flag other than 0, 1 or 2");
    freeReplyObject(r);

    ok(user("*2\r\n*0\r\n$1\r\n0\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "user: a flag that is no integer");
    freeReplyObject(r);

    ok(user("*2\r\n:0\r\n*0\r\n", &lk, &r) == GMS_LOOKUP_BAD_REPLY,
       "user: the two swapped");
    freeReplyObject(r);

    ok(user("*1\r\n$1\r\nA\r\n", &lk, &r) == GMS_LOOKUP_BAD_REPLY,
       "user: a bare SMEMBERS answer is not the script's");
    freeReplyObject(r);

    ok(user("*2\r\n*1\r\n$3\r\nA,B\r\n:0\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "user: a privilege with a comma");
    freeReplyObject(r);

    ok(user("-NOSCRIPT No matching script\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY && strncmp(lk.error, "NOSCRIPT", 8) == 0,
       "user: an error reply");
    freeReplyObject(r);

    ok(user("$-1\r\n", &lk, &r) == GMS_LOOKUP_BAD_REPLY,
       "user: nil (the token's answer) is not a user's");
    freeReplyObject(r);

    ok(gms_members_reply_parse(NULL, &lk) == GMS_LOOKUP_BAD_REPLY,
       "user: no reply");
}


static void
mask(char *line)
{
    static const char  *headers[] = { "x_gms_token", "x_other" };

    gms_mask_credentials((unsigned char *) line, strlen(line), headers, 2);
}


static void
test_mask(void)
{
    char  line[160];

    strcpy(line, "http header: \"Authorization: Bearer abc.def-1\"");
    mask(line);
    is_str(line, "http header: \"Authorization: *****************",
           "an Authorization header's value masked, to the line end");

    strcpy(line, "http header: \"Authorization: Bearer \"eyJ.a\\\"b\"\n"
                 "next");
    mask(line);
    is_str(line, "http header: \"Authorization: *****************\nnext",
           "quotes and backslashes in the value masked too");

    strcpy(line, "AUTHORIZATION:Token a b c\r\nHost: x");
    mask(line);
    is_str(line, "AUTHORIZATION:***********\r\nHost: x",
           "any scheme, up to the line end");

    strcpy(line, "http script var: \"bearer xyz\"");
    mask(line);
    is_str(line, "http script var: \"bearer ****",
           "a bearer token outside a header");

    strcpy(line, "var: \"Bearer \"eyJhbGciOi.x\"\"\r\nHost: h");
    mask(line);
    is_str(line, "var: \"Bearer ***************\r\nHost: h",
           "a quoted bearer token outside a header");

    strcpy(line, "WWW-Authenticate: Bearer realm=\"DataHub\"");
    mask(line);
    is_str(line, "WWW-Authenticate: Bearer realm=\"DataHub\"",
           "a challenge is left alone");

    strcpy(line, "gms: token id \"kwu9xRtq7VwqVnj9bije56BeiktkPPw=\"");
    mask(line);
    is_str(line, "gms: token id \"kwu9xRtq7VwqVnj9bije56BeiktkPPw=\"",
           "other lines are left alone");

    strcpy(line, "http header: \"Cookie: a=1; gms_token=eyJ.x;b=\"q;\"\"");
    mask(line);
    is_str(line, "http header: \"Cookie: a=*; gms_token=*****;b=**;**",
           "every cookie's value masked, the names kept");

    strcpy(line, "cookie:gms_token=abc ; bare;  c=\r\nHost: x");
    mask(line);
    is_str(line, "cookie:gms_token=****; ****;  c=\r\nHost: x",
           "a cookie without a name is all value; the line end stops it");

    strcpy(line, "Set-Cookie: s=secret; Path=/");
    mask(line);
    is_str(line, "Set-Cookie: s=******; Path=*", "Set-Cookie too");

    strcpy(line, "http header: \"X-Gms-Token: bare-token\"\nX-GMS_token:t");
    mask(line);
    is_str(line, "http header: \"X-Gms-Token: ***********\nX-GMS_token:*",
           "a gms_token_source header, '_' for '-' or '_', any case");

    strcpy(line, "x-other:  v w\r\nX-Gms-Tokens: kept\r\nX-Gms: kept");
    mask(line);
    is_str(line, "x-other:  ***\r\nX-Gms-Tokens: kept\r\nX-Gms: kept",
           "each header given; longer or shorter names left alone");

    strcpy(line, "X-Gms-Token: abc");
    gms_mask_credentials((unsigned char *) line, strlen(line), NULL, 0);
    is_str(line, "X-Gms-Token: abc", "no header given: only the usual ones");
}


int
main(void)
{
    test_bearer();
    test_id();
    test_ms();
    test_names();
    test_reply();
    test_user_reply();
    test_mask();

    return done_testing();
}


/* Unit tests of src/lib/gms_token.c: header parsing, ids, an entry's fields. */


#include <stdlib.h>

#include "tap.h"
#include "gms_token.h"


/* the parser's token, which gms_token_bearer_span() finds where it takes one */

static int
bearer(const char *header, const char *want)
{
    size_t                len, span_len;
    char                  got[GMS_TOKEN_MAX_LEN + 1];
    const unsigned char  *token, *span;

    if (gms_token_bearer_parse((const unsigned char *) header, strlen(header),
                               &token, &len)
        != 0)
    {
        return want == NULL;
    }

    if (gms_token_bearer_span((const unsigned char *) header, strlen(header),
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

    if (gms_token_bearer_span((const unsigned char *) header, strlen(header),
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

    ok(gms_token_parse_ms("1700000000000", 13, &ms) == 0
       && ms == 1700000000000LL, "milliseconds parsed");
    ok(gms_token_parse_ms("", 0, &ms) == 0 && ms == 0, "empty means no expiry");
    ok(gms_token_parse_ms("-1", 2, &ms) != 0, "negative refused");
    ok(gms_token_parse_ms("12a", 3, &ms) != 0, "garbage refused");
    ok(gms_token_parse_ms("99999999999999999999", 20, &ms) != 0,
       "overflow refused");
}


static void
test_names(void)
{
    char  big[GMS_ACTOR_MAX + 2];

#define actor(s)  gms_token_actor_valid(s, sizeof(s) - 1)
#define privilege(s)  gms_token_privilege_valid(s, sizeof(s) - 1)

    ok(actor("urn:li:corpuser:alice"), "actor: a user");
    ok(actor("urn:li:corpuser:al ice~!"), "actor: printable ASCII");
    ok(actor("urn:li:corpuser:\xc3\xa9l\xc3\xa8ve"), "actor: UTF-8");
    ok(actor("urn:li:corpuser:\xf0\x9f\x98\x80"), "actor: 4-byte UTF-8");
    ok(!actor("urn:li:"), "actor: the prefix only");
    ok(!actor("urn:xx:corpuser:a"), "actor: not urn:li:");
    ok(!actor("urn:li:corpuser:a\r\nX: y"), "actor: CR LF");
    ok(!actor("urn:li:corpuser:a\x7f"), "actor: DEL");
    ok(!actor("urn:li:corpuser:a\tb"), "actor: a tab");
    ok(!gms_token_actor_valid("urn:li:corpuser:a\0b", 19), "actor: NUL");
    ok(!actor("urn:li:corpuser:\xc0\xaf"), "actor: overlong UTF-8");
    ok(!actor("urn:li:corpuser:\xed\xa0\x80"), "actor: a surrogate");
    ok(!actor("urn:li:corpuser:\xf4\x90\x80\x80"), "actor: past U+10FFFF");
    ok(!actor("urn:li:corpuser:\xc3"), "actor: a cut sequence");
    ok(!actor("urn:li:corpuser:\x80"), "actor: a lone continuation");

    memset(big, 'a', sizeof(big));
    memcpy(big, "urn:li:", 7);
    ok(gms_token_actor_valid(big, GMS_ACTOR_MAX), "actor: the longest");
    ok(!gms_token_actor_valid(big, GMS_ACTOR_MAX + 1), "actor: too long");

    ok(privilege("EDIT_ENTITY"), "privilege: DataHub's");
    ok(privilege("a-b.c:d_0"), "privilege: every allowed character");
    ok(!privilege(""), "privilege: empty");
    ok(!privilege("EDIT ENTITY"), "privilege: a space");
    ok(!privilege("EDIT,ENTITY"), "privilege: a comma");
    ok(!privilege("\xc3\xa9"), "privilege: UTF-8");
    ok(gms_token_privilege_valid(big + 7, GMS_PRIVILEGE_MAX),
       "privilege: longest");
    ok(!gms_token_privilege_valid(big + 7, GMS_PRIVILEGE_MAX + 1),
       "privilege: too long");

#undef actor
#undef privilege
}


int
main(void)
{
    test_bearer();
    test_id();
    test_ms();
    test_names();

    return done_testing();
}

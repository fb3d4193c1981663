
/*
 * Unit tests of src/lib/gms_json_scan.c: the scanner's verdict and where
 * it stops, the members it records (the last of a name, an object's own
 * members), the members' checks, and text quoted as org.json's
 * JSONObject.quote() writes it (what GMS's getEsTaskStatus answers hold).
 */


#include <stdlib.h>

#include "tap.h"
#include "gms_json_scan.h"


/* gms_json_scan() of a C string: 0 or -1, the offset where it stopped */
static int
scan(const char *text, gms_member_t *want, size_t *at)
{
    *at = (size_t) -1;
    return gms_json_scan(text, strlen(text), want, at);
}


/* a recorded member's value as text ("(absent)") */
static const char *
value(gms_member_t *m)
{
    static char  buf[256];

    if (m->value == NULL) {
        return "(absent)";
    }

    snprintf(buf, sizeof(buf), "%.*s", (int) m->len, m->value);

    return buf;
}


static void
test_scan(void)
{
    size_t  at;

    ok(scan("{\"a\":[1,2.5e3,-0,true,false,null,\"\\u00e9\"]}", NULL, &at)
       == 0, "an object of every kind of value");
    ok(scan(" \t\r\n[]\n ", NULL, &at) == 0, "blanks around a value");
    ok(scan("\"x\"", NULL, &at) == 0, "a string alone");

    ok(scan("{\"a\":1,}", NULL, &at) == -1 && at == 7,
       "a comma before '}': stops at the '}'");
    ok(scan("{\"a\":01}", NULL, &at) == -1 && at == 6,
       "a leading zero: stops after the 0");
    ok(scan("{} x", NULL, &at) == -1 && at == 3,
       "text after the value: stops there");
    ok(scan("{\"a\":\"\x01\"}", NULL, &at) == -1 && at == 5,
       "a control byte in a string: stops at the string");
    ok(scan("[\"\xc3\"]", NULL, &at) == -1, "a cut UTF-8 sequence");
    ok(scan("", NULL, &at) == -1, "nothing");
    ok(scan("{\"a\":1", NULL, &at) == -1 && at == 6, "an object not closed");
}


static void
test_members(void)
{
    size_t        at;
    json_int_t    n;
    gms_member_t  inner[] = {
        gms_member("d", GMS_JSON_BOOLEAN, 1, NULL),
        gms_member_end
    };
    gms_member_t  want[] = {
        gms_member("a", GMS_JSON_INTEGER, 1, NULL),
        gms_member("b", GMS_JSON_STRING, 1, NULL),
        gms_member("c", GMS_JSON_OBJECT, 1, inner),
        gms_member("e", GMS_JSON_STRING, 0, NULL),
        gms_member_end
    };

    ok(scan("{\"a\":7,\"b\":\"x\",\"c\":{\"d\":true,\"a\":9},\"b\":\"y\"}",
            want, &at)
       == 0, "an object scanned");
    is_str(value(&want[0]), "7", "a member recorded at the top, not inside");
    is_str(value(&want[1]), "\"y\"", "the last of a name recorded");
    is_str(value(&want[2]), "{\"d\":true,\"a\":9}", "an object's text");
    is_str(value(&inner[0]), "true", "the object's own member recorded");
    is_str(value(&want[3]), "(absent)", "a member not there: absent");
    ok(gms_json_scan_member_mismatch(want) == NULL, "all as wanted");
    ok(want[0].integer == 7, "the integer read");

    ok(scan("{\"a\":\"7\",\"b\":\"x\",\"c\":{\"d\":true}}", want, &at) == 0
       && gms_json_scan_member_mismatch(want) == &want[0],
       "a string where an integer is wanted: that member");
    ok(scan("{\"a\":7,\"c\":{\"d\":true}}", want, &at) == 0
       && gms_json_scan_member_mismatch(want) == &want[1],
       "a required member absent: that member");
    ok(scan("{\"a\":7,\"b\":\"x\",\"c\":{\"d\":1}}", want, &at) == 0
       && gms_json_scan_member_mismatch(want) == NULL
       && gms_json_scan_member_mismatch(inner) == &inner[0],
       "an object's members checked on their own");

    ok(scan("{\"a\":9223372036854775807}", want, &at) == 0
       && gms_json_scan_member_integer(&want[0], &n) == 0
       && n == 9223372036854775807LL, "the largest integer");
    ok(scan("{\"a\":9223372036854775808}", want, &at) == 0
       && gms_json_scan_member_integer(&want[0], &n) != 0, "one more: refused");
    ok(scan("{\"a\":1.0}", want, &at) == 0
       && gms_json_scan_member_integer(&want[0], &n) != 0,
       "a fraction: refused");
}


/* gms_json_scan_orgjson_quote() of a C string, as a C string */
static const char *
quote(const char *s, unsigned flags)
{
    static char  buf[512];
    char        *end;

    end = gms_json_scan_orgjson_quote(buf, s, strlen(s), flags);
    *end = '\0';

    return buf;
}


static void
test_quote(void)
{
    is_str(quote("plain text, long enough for words", 0),
           "plain text, long enough for words", "plain text as it is");
    is_str(quote("a\"b\\c", 0), "a\\\"b\\\\c", "'\"' and '\\' escaped");
    is_str(quote("a/b</c>", 0), "a/b<\\/c>", "'/' escaped after '<' only");
    is_str(quote("\b\t\n\f\r\x01\x1f", 0),
           "\\b\\t\\n\\f\\r\\u0001\\u001f", "controls as org.json's");
    is_str(quote("\xc2\x80\xc2\x9f\xc2\xa0", 0),
           "\\u0080\\u009f\xc2\xa0", "U+0080 to U+009F as \\u, U+00A0 kept");
    is_str(quote("\xe2\x80\x80\xe2\x82\xac\xe2\x84\x80", 0),
           "\\u2000\\u20ac\xe2\x84\x80",
           "U+2000 to U+20FF as \\u, U+2100 kept");
    is_str(quote("{ \"a\" : [1, 2],\n \"b c\": \"d e\" }", GMS_QUOTE_COMPACT),
           "{\\\"a\\\":[1,2],\\\"b c\\\":\\\"d e\\\"}",
           "compact: blanks outside strings dropped");
    is_str(quote("{\"a\\\"b \": 1}", GMS_QUOTE_COMPACT),
           "{\\\"a\\\\\\\"b \\\":1}", "compact: an escaped '\"' in a string");
    is_str(quote("a\"b\\c\n", GMS_QUOTE_TWICE), "a\\\\\\\"b\\\\\\\\c\\\\n",
           "twice: org.json's text as a JSON string's content");
}


int
main(void)
{
    test_scan();
    test_members();
    test_quote();

    return done_testing();
}


/*
 * A scanner for the search cluster's answer.  A completed task can carry
 * megabytes of "response" and a long "description" that the metadata
 * service drops: they are checked for JSON syntax and skipped, and only
 * the few members kept are handed to jansson.  And text quoted as
 * org.json writes it, for the answer's mapping.
 */


#include <ctype.h>
#include <string.h>

#include <jansson.h>

#include "gms_token.h"
#include "gms_json_scan.h"


#define GMS_SCAN_DEPTH  2048    /* as jansson's parser */


typedef struct {
    const char  *p;
    const char  *end;
    int          depth;
} gms_scan_t;


static void gms_scan_ws(gms_scan_t *s);
static int gms_scan_container(gms_scan_t *s, char close, gms_member_t *want);
static int gms_scan_value(gms_scan_t *s);


/*
 * text as one JSON value, with blanks around it or not; when the value is
 * an object, where the members want[] names lie is recorded in want[]
 * (the values inside are checked, not recorded).  Returns 0, or -1 with
 * in *at the offset of the byte where the text stops being JSON.
 */

int
gms_json_scan(const char *text, size_t len, gms_member_t *want, size_t *at)
{
    gms_scan_t  scan;

    scan.p = text;
    scan.end = text + len;
    scan.depth = 0;

    gms_scan_ws(&scan);

    if (scan.p < scan.end && *scan.p == '{') {
        if (gms_scan_container(&scan, '}', want) != 0) {
            goto not_json;
        }

    } else if (gms_scan_value(&scan) != 0) {
        goto not_json;
    }

    gms_scan_ws(&scan);

    if (scan.p == scan.end) {
        return 0;
    }

not_json:

    *at = scan.p - text;

    return -1;
}


static void
gms_scan_ws(gms_scan_t *s)
{
    while (s->p < s->end
           && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n'
               || *s->p == '\r'))
    {
        s->p++;
    }
}


/* the value of 4 hex digits at p, or -1 */

static long
gms_scan_hex4(const unsigned char *p, const unsigned char *end)
{
    long    c;
    size_t  i;

    if (end - p < 4) {
        return -1;
    }

    c = 0;

    for (i = 0; i < 4; i++) {
        if (!isxdigit(p[i])) {
            return -1;
        }

        c = c * 16 + (isdigit(p[i]) ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
    }

    return c;
}


/* a string as strict as jansson's: escapes, UTF-8, no control bytes */

static int
gms_scan_string(gms_scan_t *s)
{
    long                  c;
    size_t                n;
    const unsigned char  *p, *end;

    if (s->p == s->end || *s->p != '"') {
        return -1;
    }

    p = (const unsigned char *) s->p + 1;
    end = (const unsigned char *) s->end;

    while (p < end) {

        if (*p == '"') {
            s->p = (const char *) p + 1;
            return 0;
        }

        if (*p < 0x20) {
            return -1;
        }

        if (*p == '\\') {
            if (++p == end) {
                return -1;
            }

            if (*p == 'u') {
                c = gms_scan_hex4(p + 1, end);

                /* as jansson: no NUL, surrogates only in pairs */

                if (c <= 0 || (c >= 0xdc00 && c <= 0xdfff)) {
                    return -1;
                }

                p += 5;

                if (c >= 0xd800 && c <= 0xdbff) {
                    if (end - p < 2 || p[0] != '\\' || p[1] != 'u') {
                        return -1;
                    }

                    c = gms_scan_hex4(p + 2, end);

                    if (c < 0xdc00 || c > 0xdfff) {
                        return -1;
                    }

                    p += 6;
                }

                continue;
            }

            if (strchr("\"\\/bfnrt", *p) == NULL || *p == '\0') {
                return -1;
            }

            p++;
            continue;
        }

        n = gms_utf8_len(p, end);

        if (n == 0) {
            return -1;
        }

        p += n;
    }

    return -1;
}


static int
gms_scan_digits(gms_scan_t *s)
{
    const char  *start;

    for (start = s->p; s->p < s->end && *s->p >= '0' && *s->p <= '9'; s->p++)
    {
        /* void */
    }

    return (s->p == start) ? -1 : 0;
}


/* a number as JSON writes it: no leading zeros, no '+', digits after '.' */

static int
gms_scan_number(gms_scan_t *s)
{
    if (*s->p == '-') {
        s->p++;
    }

    if (s->p < s->end && *s->p == '0') {
        s->p++;

    } else if (gms_scan_digits(s) != 0) {
        return -1;
    }

    if (s->p < s->end && *s->p == '.') {
        s->p++;

        if (gms_scan_digits(s) != 0) {
            return -1;
        }
    }

    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;

        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) {
            s->p++;
        }

        return gms_scan_digits(s);
    }

    return 0;
}


static int
gms_scan_literal(gms_scan_t *s, const char *word, size_t len)
{
    if ((size_t) (s->end - s->p) < len || memcmp(s->p, word, len) != 0) {
        return -1;
    }

    s->p += len;

    return 0;
}


/*
 * One member of an object; its value is recorded if want[] names it (the
 * last one, for a repeated name, as jansson does).
 */

static int
gms_scan_member(gms_scan_t *s, gms_member_t *want)
{
    size_t         key_len;
    const char    *key, *value;
    gms_member_t  *m;

    key = s->p;

    if (gms_scan_string(s) != 0) {
        return -1;
    }

    /* the key between its quotes, known to be there only now */
    key++;
    key_len = s->p - 1 - key;

    gms_scan_ws(s);

    if (s->p == s->end || *s->p++ != ':') {
        return -1;
    }

    gms_scan_ws(s);
    value = s->p;

    if (gms_scan_value(s) != 0) {
        return -1;
    }

    for (m = want; m && m->name; m++) {
        if (strlen(m->name) == key_len && memcmp(m->name, key, key_len) == 0)
        {
            m->value = value;
            m->len = s->p - value;
        }
    }

    return 0;
}


/* an object (close '}', members) or an array (close ']', values) */

static int
gms_scan_container(gms_scan_t *s, char close, gms_member_t *want)
{
    if (++s->depth > GMS_SCAN_DEPTH) {
        return -1;
    }

    s->p++;
    gms_scan_ws(s);

    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        return 0;
    }

    for ( ;; ) {

        if ((close == '}' ? gms_scan_member(s, want) : gms_scan_value(s))
            != 0)
        {
            return -1;
        }

        gms_scan_ws(s);

        if (s->p == s->end) {
            return -1;
        }

        if (*s->p == close) {
            s->p++;
            s->depth--;
            return 0;
        }

        if (*s->p++ != ',') {
            return -1;
        }

        gms_scan_ws(s);
    }
}


static int
gms_scan_value(gms_scan_t *s)
{
    if (s->p == s->end) {
        return -1;
    }

    switch (*s->p) {
    case '{':
        return gms_scan_container(s, '}', NULL);
    case '[':
        return gms_scan_container(s, ']', NULL);
    case '"':
        return gms_scan_string(s);
    case 't':
        return gms_scan_literal(s, "true", 4);
    case 'f':
        return gms_scan_literal(s, "false", 5);
    case 'n':
        return gms_scan_literal(s, "null", 4);
    default:
        return gms_scan_number(s);
    }
}


/* a recorded member's value as jansson's; NULL when absent or invalid */

json_t *
gms_member_load(gms_member_t *m)
{
    if (m->value == NULL) {
        return NULL;
    }

    return json_loadb(m->value, m->len, JSON_DECODE_ANY, NULL);
}


/*
 * One character of a string as org.json's JSONObject.quote() writes it
 * (JSON-java 20231013, the version the metadata service builds with):
 * '"' and '\' escaped, "</" as "<\/", the C0 controls by their short
 * escapes or \u00xx, and U+0080-U+009F and U+2000-U+20FF as \uxxxx (lower
 * case hex).  c is the code point, prev the one before it, n the bytes
 * the character took in UTF-8, which are copied when no escape is due.
 */

static char *
gms_orgjson_char(char *p, uint32_t c, uint32_t prev, const char *utf8,
    size_t n)
{
    static const char  hex[] = "0123456789abcdef";

    switch (c) {
    case '"':
    case '\\':
        *p++ = '\\';
        *p++ = (char) c;
        return p;
    case '/':
        if (prev == '<') {
            *p++ = '\\';
        }
        *p++ = '/';
        return p;
    case '\b':
        *p++ = '\\'; *p++ = 'b';
        return p;
    case '\t':
        *p++ = '\\'; *p++ = 't';
        return p;
    case '\n':
        *p++ = '\\'; *p++ = 'n';
        return p;
    case '\f':
        *p++ = '\\'; *p++ = 'f';
        return p;
    case '\r':
        *p++ = '\\'; *p++ = 'r';
        return p;
    }

    if (c < 0x20 || (c >= 0x80 && c < 0xa0) || (c >= 0x2000 && c < 0x2100)) {
        *p++ = '\\';
        *p++ = 'u';
        *p++ = hex[(c >> 12) & 0xf];
        *p++ = hex[(c >> 8) & 0xf];
        *p++ = hex[(c >> 4) & 0xf];
        *p++ = hex[c & 0xf];
        return p;
    }

    memcpy(p, utf8, n);

    return p + n;
}


/* the code point of a valid UTF-8 sequence of n bytes */

static uint32_t
gms_utf8_decode(const unsigned char *p, size_t n)
{
    size_t    i;
    uint32_t  c;

    if (n == 1) {
        return p[0];
    }

    c = p[0] & (0xff >> (n + 1));

    for (i = 1; i < n; i++) {
        c = (c << 6) | (p[i] & 0x3f);
    }

    return c;
}


/*
 * UTF-8 text (already checked) quoted as org.json does, without the
 * surrounding quotes; at most 6 bytes out for each byte in.  When
 * compact is set, the text is JSON and its whitespace outside strings is
 * dropped on the way, which is how the search client's copy of the
 * task's status reads (a compact copy of the cluster's object).
 */

char *
gms_orgjson_quote(char *p, const char *s, size_t len, int compact)
{
    int                   in_string, escaped;
    size_t                n;
    uint32_t              c, prev;
    const unsigned char  *u, *end;

    u = (const unsigned char *) s;
    end = u + len;
    prev = 0;
    in_string = 0;
    escaped = 0;

    while (u < end) {

        if (compact && !in_string
            && (*u == ' ' || *u == '\t' || *u == '\n' || *u == '\r'))
        {
            u++;
            continue;
        }

        n = gms_utf8_len(u, end);

        if (n == 0) {
            /* not reached for checked text; never copy past the end */
            n = 1;
        }

        c = gms_utf8_decode(u, n);

        if (compact) {
            if (escaped) {
                escaped = 0;

            } else if (in_string && c == '\\') {
                escaped = 1;

            } else if (c == '"') {
                in_string = !in_string;
            }
        }

        p = gms_orgjson_char(p, c, prev, (const char *) u, n);
        prev = c;
        u += n;
    }

    return p;
}


/* a JSON integer's text, as the scanner found it, checked by jansson */

int
gms_member_integer(gms_member_t *m, json_int_t *out)
{
    json_t  *v;

    v = gms_member_load(m);

    if (!json_is_integer(v)) {
        json_decref(v);
        return -1;
    }

    *out = json_integer_value(v);
    json_decref(v);

    return 0;
}


const char  *gms_json_type_names[] = {
    "any value", "a string", "an integer", "a boolean", "an object"
};


/*
 * The first member of want[] that is required and absent, or there with
 * another type; NULL when all are as wanted.
 */

gms_member_t *
gms_member_mismatch(gms_member_t *want)
{
    json_int_t     n;
    gms_member_t  *m;

    for (m = want; m->name; m++) {

        if (m->value == NULL) {
            if (m->required) {
                return m;
            }

            continue;
        }

        switch (m->type) {

        case GMS_JSON_STRING:
            if (*m->value != '"') {
                return m;
            }
            break;

        case GMS_JSON_INTEGER:
            if (gms_member_integer(m, &n) != 0) {
                return m;
            }
            break;

        case GMS_JSON_BOOLEAN:
            if (*m->value != 't' && *m->value != 'f') {
                return m;
            }
            break;

        case GMS_JSON_OBJECT:
            if (*m->value != '{') {
                return m;
            }
            break;

        default:
            break;
        }
    }

    return NULL;
}

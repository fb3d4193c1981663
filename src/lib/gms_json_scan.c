
/*
 * A scanner for the search cluster's answer.  A completed task can carry
 * megabytes of "response" and a long "description" that the metadata
 * service drops: they are checked for JSON syntax and skipped, and only
 * the few members kept are handed to jansson.  And text quoted as
 * org.json writes it, for the answer's mapping.
 */


#include <ctype.h>
#include <limits.h>
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


/*
 * The bytes a JSON string holds as they are, one a character (printable
 * ASCII but '"' and '\\'): GMS_JSON_PLAIN; GMS_ORGJSON_PLAIN too when
 * org.json also writes them as they are (all but '/', which it escapes
 * after '<').  A string's run of these is skipped or copied a byte at a
 * time, without decoding.
 */

#define GMS_JSON_PLAIN     1
#define GMS_ORGJSON_PLAIN  2
#define GMS_ORGJSON_WORD   4    /* the same but ' ' */

static const unsigned char  gms_json_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    3, 7, 0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 1,    /*  !"#$%&'()*+,-./ */
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 0, 7, 7, 7,    /* PQRSTUVWXYZ[\]^_ */
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7
    /* 0x80-0xff: 0, UTF-8 */
};


/*
 * Eight bytes at a time: whether any of the eight is not plain, tested
 * on a 64-bit word (any byte below n: (x - n * ones) & ~x & highs, exact
 * for n <= 0x80), so that long runs of plain text cost a few
 * instructions for eight bytes, not for each.
 */

#define GMS_ONES   0x0101010101010101ULL
#define GMS_HIGHS  0x8080808080808080ULL

#define gms_word_below(x, n)  (((x) - GMS_ONES * (n)) & ~(x) & GMS_HIGHS)
#define gms_word_has(x, c)    gms_word_below((x) ^ (GMS_ONES * (c)), 1)

#define gms_word_json_special(x)                                             \
    (((x) & GMS_HIGHS) | gms_word_below(x, 0x20) | gms_word_has(x, '"')      \
     | gms_word_has(x, '\\'))

/*
 * The plain bytes before the first that is not, from such a test of a
 * word loaded from memory: a borrow only runs towards the later bytes,
 * so the lowest flag is exact where the first byte is the lowest
 * (little-endian); elsewhere 0, and the bytes are read one at a time.
 */

#if (defined __GNUC__ || defined __clang__)                                  \
    && defined __BYTE_ORDER__ && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define gms_word_plain_bytes(special)  (__builtin_ctzll(special) >> 3)
#else
#define gms_word_plain_bytes(special)  0
#endif


/*
 * With SSE2 (every x86-64), sixteen bytes at a time: a signed comparison
 * with 0x20 takes the controls and the bytes of 0x80 and above at once.
 */

#if defined __SSE2__ && (defined __GNUC__ || defined __clang__)

#include <emmintrin.h>

#define GMS_SCAN_SSE2  1

static unsigned
gms_sse2_json_special(const unsigned char *p)
{
    __m128i  v;

    v = _mm_loadu_si128((const __m128i *) p);

    return (unsigned) _mm_movemask_epi8(
        _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                     _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                  _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')))));
}

#else

#define GMS_SCAN_SSE2  0

#endif


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
    uint64_t              word, special;
#if (GMS_SCAN_SSE2)
    unsigned              mask;
#endif
    const unsigned char  *p, *end;

    if (s->p == s->end || *s->p != '"') {
        return -1;
    }

    p = (const unsigned char *) s->p + 1;
    end = (const unsigned char *) s->end;

    while (p < end) {

        /* plain bytes sixteen or eight at a time, the last few one by one */

#if (GMS_SCAN_SSE2)
        if (end - p >= 16) {
            mask = gms_sse2_json_special(p);

            if (mask == 0) {
                p += 16;
                continue;
            }

            p += __builtin_ctz(mask);

        } else
#endif
        if (end - p >= 8) {
            memcpy(&word, p, 8);
            special = gms_word_json_special(word);

            if (special == 0) {
                p += 8;
                continue;
            }

            p += gms_word_plain_bytes(special);
        }

        while (p < end && gms_json_plain[*p]) {
            p++;
        }

        if (p == end) {
            break;
        }

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

            switch (*p) {
            case '"': case '\\': case '/':
            case 'b': case 'f': case 'n': case 'r': case 't':
                p++;
                continue;
            default:
                return -1;
            }
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
 * last one, for a repeated name, as jansson does), and, for an object
 * whose members want[] asks too, theirs.
 */

static int
gms_scan_member(gms_scan_t *s, gms_member_t *want)
{
    size_t         key_len;
    const char    *key, *value;
    gms_member_t  *m, *sub;

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

    for (m = want; m && m->name; m++) {
        if (m->name[0] == *key && strncmp(m->name, key, key_len) == 0
            && m->name[key_len] == '\0')
        {
            break;
        }
    }

    if (m == NULL || m->name == NULL) {
        return gms_scan_value(s);
    }

    if (m->members != NULL && s->p < s->end && *s->p == '{') {
        for (sub = m->members; sub->name; sub++) {
            sub->value = NULL;
        }

        if (gms_scan_container(s, '}', m->members) != 0) {
            return -1;
        }

    } else if (gms_scan_value(s) != 0) {
        return -1;
    }

    m->value = value;
    m->len = s->p - value;

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
 * surrounding quotes; at most 6 bytes out for each byte in, 7 with
 * GMS_QUOTE_TWICE.  With GMS_QUOTE_COMPACT the text is JSON and its
 * whitespace outside strings is dropped on the way, which is how the
 * search client's copy of the task's status reads (a compact copy of the
 * cluster's object).  With GMS_QUOTE_TWICE what org.json writes is
 * written as a JSON string's content again (its '"' and '\\' escaped):
 * the value inside Rest.li's {"value": "..."} in one pass.
 */

char *
gms_orgjson_quote(char *p, const char *s, size_t len, unsigned flags)
{
    int                   compact, in_string, escaped;
    char                  one[6], *q, *last;
    size_t                n;
    unsigned              plain;
    uint32_t              c, prev;
    const unsigned char  *u, *end;

    u = (const unsigned char *) s;
    end = u + len;
    prev = 0;
    in_string = 0;
    escaped = 0;
    compact = (flags & GMS_QUOTE_COMPACT) != 0;

    while (u < end) {

        /*
         * bytes written as they are (but a compact text's ' ', which may
         * be outside a string); the byte after an escaping '\\' may be
         * one of them.  One at a time: a status is short members and
         * values, and a word's test would not pay.
         */

        plain = (compact && !in_string) ? GMS_ORGJSON_WORD
                                         : GMS_ORGJSON_PLAIN;

        if (gms_json_plain[*u] & plain) {
            do {
                *p++ = (char) *u++;
            } while (u < end && (gms_json_plain[*u] & plain));

            escaped = 0;
            prev = u[-1];
            continue;
        }

        if (compact && !in_string
            && (*u == ' ' || *u == '\t' || *u == '\n' || *u == '\r'))
        {
            u++;
            continue;
        }

        if (*u == '"' || *u == '\\') {
            c = *u++;

            if (compact) {
                if (escaped) {
                    escaped = 0;

                } else if (c == '\\') {
                    escaped = in_string;

                } else {
                    in_string = !in_string;
                }
            }

            /* org.json's \" and \\, quoted again: \\\" and \\\\ */

            if (flags & GMS_QUOTE_TWICE) {
                *p++ = '\\';
                *p++ = '\\';
            }

            *p++ = '\\';
            *p++ = (char) c;
            prev = c;
            continue;
        }

        if (*u < 0x80) {
            n = 1;
            c = *u;

        } else {
            n = gms_utf8_len(u, end);

            if (n == 0) {
                /* not reached for checked text; never copy past the end */
                n = 1;
            }

            c = gms_utf8_decode(u, n);
        }

        if (compact) {
            if (escaped) {
                escaped = 0;

            } else if (in_string && c == '\\') {
                escaped = 1;

            } else if (c == '"') {
                in_string = !in_string;
            }
        }

        if (flags & GMS_QUOTE_TWICE) {
            last = gms_orgjson_char(one, c, prev, (const char *) u, n);

            for (q = one; q < last; q++) {
                if (*q == '"' || *q == '\\') {
                    *p++ = '\\';
                }

                *p++ = *q;
            }

        } else {
            p = gms_orgjson_char(p, c, prev, (const char *) u, n);
        }

        prev = c;
        u += n;
    }

    return p;
}


/*
 * A member's value as jansson's integer: JSON number text (the scanner
 * checked it) without a fraction or an exponent, within json_int_t (a
 * long long: jansson refuses a larger one, "too big integer").
 */

int
gms_member_integer(gms_member_t *m, json_int_t *out)
{
    int                  negative;
    size_t               i;
    unsigned long long   n, limit;

    if (m->value == NULL || m->len == 0) {
        return -1;
    }

    negative = (m->value[0] == '-');
    i = negative;

    if (i == m->len) {
        return -1;
    }

    limit = negative ? (unsigned long long) LLONG_MAX + 1 : LLONG_MAX;
    n = 0;

    for ( /* void */ ; i < m->len; i++) {
        if (m->value[i] < '0' || m->value[i] > '9') {
            return -1;
        }

        /* 18 digits cannot overflow */
        if (i >= 18 && n > (limit - (m->value[i] - '0')) / 10) {
            return -1;
        }

        n = n * 10 + (m->value[i] - '0');
    }

    if (negative) {
        *out = (n == (unsigned long long) LLONG_MAX + 1) ? LLONG_MIN
                                                      : -(json_int_t) n;

    } else {
        *out = (json_int_t) n;
    }

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

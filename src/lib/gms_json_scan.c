
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


#define GMS_SCAN_DEPTH       2048    /* as jansson's parser */
#define GMS_SCAN_WANT_DEPTH  8       /* want[] within members[] within ... */


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
#define GMS_WORD_LE  1
#define gms_word_plain_bytes(special)  (__builtin_ctzll(special) >> 3)
#else
#define GMS_WORD_LE  0
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


#if (defined __GNUC__ || defined __clang__)
#define gms_scan_inline  inline __attribute__((always_inline))
#else
#define gms_scan_inline  inline
#endif

static gms_scan_inline const unsigned char *gms_scan_string(
    const unsigned char *p, const unsigned char *end);


/* the escapes of a JSON string that stand for one character: \" \\ \/ ... */

static const unsigned char  gms_json_escape[256] = {
    ['"'] = 1, ['\\'] = 1, ['/'] = 1, ['b'] = 1, ['f'] = 1, ['n'] = 1,
    ['r'] = 1, ['t'] = 1
};


#define gms_json_ws(c)                                                       \
    ((c) <= ' ' && ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t'))

#define gms_json_digit(c)  ((unsigned) ((c) - '0') < 10)


/*
 * text as one JSON value, with blanks around it or not; when the value is
 * an object, where the members want[] names lie is recorded in want[]
 * (the values inside are checked, not recorded; a member's own members[]
 * when its value is an object, and so on).  Returns 0, or -1 with in *at
 * the offset of the byte where the text stops being JSON.
 *
 * One loop with the open containers on a stack of their own, not a call
 * a value: a task's answer is hundreds of short members and values.
 */

int
gms_json_scan(const char *text, size_t len, gms_member_t *want, size_t *at)
{
    int                   depth, live;
    size_t                key_len;
    gms_member_t         *pending, *m, *list;
    const unsigned char  *p, *end, *key, *q;
    unsigned char         close[GMS_SCAN_DEPTH + 1];
    gms_member_t         *wants[GMS_SCAN_WANT_DEPTH + 1];
    gms_member_t         *hint[GMS_SCAN_WANT_DEPTH + 1];
    gms_member_t         *rec[GMS_SCAN_WANT_DEPTH + 1];
    const unsigned char  *start[GMS_SCAN_WANT_DEPTH + 1];

    p = (const unsigned char *) text;
    end = p + len;

    /*
     * depth: containers open; live: the depth down to which every open
     * container is an object with members to record (wants[]); pending:
     * the list the next value gets if it is an object
     */

    depth = 0;
    live = 0;
    pending = want;

value:

    /* blanks are rare in a cluster's answer: each is a turn of the switch */

    if (p == end) {
        goto fail;
    }

    switch (*p) {

    case ' ': case '\t': case '\n': case '\r':
        p++;
        goto value;

    case '{':
        if (depth == GMS_SCAN_DEPTH) {
            goto fail;
        }

        close[++depth] = '}';

        if (pending != NULL && depth - 1 == live
            && depth <= GMS_SCAN_WANT_DEPTH)
        {
            for (m = pending; m->name; m++) {
                m->value = NULL;
            }

            live = depth;
            wants[depth] = pending;
            hint[depth] = pending;
        }

        p++;

        while (p < end && gms_json_ws(*p)) {
            p++;
        }

        if (p < end && *p == '}') {
            p++;
            goto closed;
        }

        goto key_here;

    case '[':
        if (depth == GMS_SCAN_DEPTH) {
            goto fail;
        }

        close[++depth] = ']';
        pending = NULL;
        p++;

        while (p < end && gms_json_ws(*p)) {
            p++;
        }

        if (p < end && *p == ']') {
            p++;
            goto closed;
        }

        goto value;

    case '"':
        q = gms_scan_string(p + 1, end);

        if (q == NULL) {
            goto fail;
        }

        p = q;
        goto next;

    case 't':
        if (end - p < 4 || memcmp(p, "true", 4) != 0) {
            goto fail;
        }

        p += 4;
        goto next;

    case 'f':
        if (end - p < 5 || memcmp(p, "false", 5) != 0) {
            goto fail;
        }

        p += 5;
        goto next;

    case 'n':
        if (end - p < 4 || memcmp(p, "null", 4) != 0) {
            goto fail;
        }

        p += 4;
        goto next;

    default:
        /* a number as JSON writes it: no leading zeros, no '+' */

        if (*p == '-') {
            p++;
        }

        if (p < end && *p == '0') {
            p++;

        } else {
            if (p == end || !gms_json_digit(*p)) {
                goto fail;
            }

            do { p++; } while (p < end && gms_json_digit(*p));
        }

        if (p < end && *p == '.') {
            p++;

            if (p == end || !gms_json_digit(*p)) {
                goto fail;
            }

            do { p++; } while (p < end && gms_json_digit(*p));
        }

        if (p < end && (*p == 'e' || *p == 'E')) {
            p++;

            if (p < end && (*p == '+' || *p == '-')) {
                p++;
            }

            if (p == end || !gms_json_digit(*p)) {
                goto fail;
            }

            do { p++; } while (p < end && gms_json_digit(*p));
        }

        goto next;
    }

closed:

    /* the container at depth has ended, at p */

    if (live == depth) {
        live--;
    }

    depth--;

next:

    /* a value has ended at p: recorded if its member was wanted */

    if (depth == 0) {
        goto done;
    }

    if (depth <= live && rec[depth] != NULL) {
        rec[depth]->value = (const char *) start[depth];
        rec[depth]->len = p - start[depth];
    }

after:

    if (p == end) {
        goto fail;
    }

    if (*p == ',') {
        p++;

        if (close[depth] == ']') {
            pending = NULL;
            goto value;
        }

        goto key;
    }

    if (*p == close[depth]) {
        p++;
        goto closed;
    }

    if (gms_json_ws(*p)) {
        p++;
        goto after;
    }

    goto fail;

key:

    while (p < end && gms_json_ws(*p)) {
        p++;
    }

key_here:

    if (p == end || *p != '"') {
        goto fail;
    }

    key = p + 1;
    q = gms_scan_string(key, end);

    if (q == NULL) {
        goto fail;
    }

    p = q;
    key_len = p - 1 - key;

    while (p < end && *p != ':') {
        if (!gms_json_ws(*p)) {
            goto fail;
        }

        p++;
    }

    if (p == end) {
        goto fail;
    }

    p++;

    while (p < end && gms_json_ws(*p)) {
        p++;
    }

    pending = NULL;

    if (depth != live) {
        goto value;
    }

    /*
     * One of the members to record?  Looked for from the one after the
     * last found: a cluster writes them in the order they are listed.
     * The name as it is between the quotes (no escape is decoded).
     */

    list = wants[depth];

    for (m = hint[depth]; m->name; m++) {
        if (m->name_len == key_len && memcmp(m->name, key, key_len) == 0) {
            goto found;
        }
    }

    for (m = list; m != hint[depth]; m++) {
        if (m->name_len == key_len && memcmp(m->name, key, key_len) == 0) {
            goto found;
        }
    }

    rec[depth] = NULL;
    goto value;

found:

    /* the last of a repeated name counts, as in jansson */

    rec[depth] = m;
    start[depth] = p;
    pending = m->members;
    hint[depth] = (m[1].name != NULL) ? m + 1 : list;

    goto value;

done:

    while (p < end && gms_json_ws(*p)) {
        p++;
    }

    if (p == end) {
        return 0;
    }

fail:

    *at = (const char *) p - text;

    return -1;
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


/*
 * A string's rest after its opening quote, as strict as jansson's:
 * escapes, UTF-8, no control bytes.  Returns what follows the closing
 * quote, or NULL.
 */

static gms_scan_inline const unsigned char *
gms_scan_string(const unsigned char *p, const unsigned char *end)
{
    long      c;
    size_t    n;
    uint64_t  word, special;
#if (GMS_SCAN_SSE2)
    unsigned  mask;
#endif

    for ( ;; ) {

        /* plain bytes sixteen or eight at a time, the last few one by one */

#if (GMS_SCAN_SSE2)
        if (end - p >= 16) {
            mask = gms_sse2_json_special(p);

            if (mask == 0) {
                p += 16;
                continue;
            }

            /* p at a byte that is not plain */
            p += __builtin_ctz(mask);
            goto special;
        }
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
            return NULL;
        }

#if (GMS_SCAN_SSE2)
    special:
#endif

        if (*p == '"') {
            return p + 1;
        }

        if (*p == '\\') {
            if (end - p < 2) {
                return NULL;
            }

            if (gms_json_escape[p[1]]) {
                p += 2;
                continue;
            }

            if (p[1] != 'u') {
                return NULL;
            }

            p += 2;
            c = gms_scan_hex4(p, end);

            /* as jansson: no NUL, surrogates only in pairs */

            if (c <= 0 || (c >= 0xdc00 && c <= 0xdfff)) {
                return NULL;
            }

            p += 4;

            if (c >= 0xd800 && c <= 0xdbff) {
                if (end - p < 2 || p[0] != '\\' || p[1] != 'u') {
                    return NULL;
                }

                c = gms_scan_hex4(p + 2, end);

                if (c < 0xdc00 || c > 0xdfff) {
                    return NULL;
                }

                p += 6;
            }

            continue;
        }

        if (*p < 0x20) {
            return NULL;
        }

        n = gms_token_utf8_len(p, end);

        if (n == 0) {
            return NULL;
        }

        p += n;
    }
}


/* a recorded member's value as jansson's; NULL when absent or invalid */

json_t *
gms_json_scan_member_load(gms_member_t *m)
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
 * GMS_QUOTE_TWICE, and the buffer must have GMS_QUOTE_SLACK bytes more:
 * plain bytes are copied eight at a time, a word written whole where
 * only its first bytes are kept.  With GMS_QUOTE_COMPACT the text is
 * JSON and its whitespace outside strings is dropped on the way, which is
 * how the search client's copy of the task's status reads (a compact copy
 * of the cluster's object).  With GMS_QUOTE_TWICE what org.json writes is
 * written as a JSON string's content again (its '"' and '\\' escaped):
 * the value inside Rest.li's {"value": "..."} in one pass.
 */

char *
gms_json_scan_orgjson_quote(char *p, const char *s, size_t len, unsigned flags)
{
    int                   compact, in_string, escaped;
    char                  one[6], *q, *last;
    size_t                n, j, k, quote_len;
    uint32_t              c, prev;
    uint64_t              word, special, rare, quotes, rest, y;
    unsigned              plain;
    const char           *quote;
    const unsigned char  *u, *start, *end;

    static const char     once[4] = { '\\', '"', 0, 0 },
                          twice[4] = { '\\', '\\', '\\', '"' };

    /* '"' as org.json writes it, quoted again with GMS_QUOTE_TWICE */
    quote = (flags & GMS_QUOTE_TWICE) ? twice : once;
    quote_len = (flags & GMS_QUOTE_TWICE) ? 4 : 2;

    u = (const unsigned char *) s;
    start = u;
    end = u + len;
    in_string = 0;
    escaped = 0;
    compact = (flags & GMS_QUOTE_COMPACT) != 0;

    while (u < end) {

        /*
         * bytes written as they are: all but the controls, '"', '\\',
         * '/', bytes of 0x80 and above, and a compact text's ' ' outside
         * strings, where all its blanks are; the byte after an escaping
         * '\\' may be one of them.  Eight at a time, the last few one by
         * one.
         */

        if (end - u >= 8) {
            memcpy(&word, u, 8);

            /*
             * Eight bytes of which none but '"' is to escape (no ' ' either,
             * in a string or not): a compact status's keys, numbers and
             * short values.  Each '"' found exactly (no borrow: a byte is
             * zero if adding 0x7f to its low bits sets no high bit) and
             * escaped where it is, the rest of the word written after it.
             */

#if (GMS_WORD_LE)
            rare = (word & GMS_HIGHS) | gms_word_below(word, 0x21)
                   | gms_word_has(word, '\\') | gms_word_has(word, '/');

            if (rare == 0 && !escaped) {
                y = word ^ (GMS_ONES * '"');
                quotes = ~(((y & ~GMS_HIGHS) + ~GMS_HIGHS) | y) & GMS_HIGHS;
                k = 0;

                while (quotes != 0) {
                    j = __builtin_ctzll(quotes) >> 3;
                    rest = word >> (8 * k);
                    memcpy(p, &rest, 8);
                    p += j - k;
                    memcpy(p, quote, 4);
                    p += quote_len;
                    in_string = !in_string;
                    k = j + 1;
                    quotes &= quotes - 1;
                }

                if (k < 8) {
                    rest = word >> (8 * k);
                    memcpy(p, &rest, 8);
                    p += 8 - k;
                }

                u += 8;
                continue;
            }
#endif

            special = (word & GMS_HIGHS)
                      | gms_word_below(word,
                                       (compact && !in_string) ? 0x21 : 0x20)
                      | gms_word_has(word, '"') | gms_word_has(word, '\\')
                      | gms_word_has(word, '/');

            memcpy(p, &word, 8);

            if (special == 0) {
                p += 8;
                u += 8;
                escaped = 0;
                continue;
            }

            n = gms_word_plain_bytes(special);

            if (n != 0) {
                p += n;
                u += n;
                escaped = 0;
            }
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
            continue;
        }

        plain = (compact && !in_string) ? GMS_ORGJSON_WORD
                                         : GMS_ORGJSON_PLAIN;

        if (gms_json_plain[*u] & plain) {
            do {
                *p++ = (char) *u++;
            } while (u < end && (gms_json_plain[*u] & plain));

            escaped = 0;
            continue;
        }

        if (compact && !in_string
            && (*u == ' ' || *u == '\t' || *u == '\n' || *u == '\r'))
        {
            u++;
            continue;
        }

        /*
         * the character before, for "</": a byte as it is (a '<' is
         * never dropped, nor the start of a longer character)
         */

        prev = (u > start) ? u[-1] : 0;

        if (*u < 0x80) {
            n = 1;
            c = *u;

        } else {
            n = gms_token_utf8_len(u, end);

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
gms_json_scan_member_integer(gms_member_t *m, json_int_t *out)
{
    int                  negative;
    unsigned             d;
    const char          *p, *end;
    unsigned long long   n, limit;

    if (m->value == NULL || m->len == 0) {
        return -1;
    }

    p = m->value;
    end = p + m->len;
    negative = (*p == '-');
    p += negative;

    /*
     * JSON writes no leading zeros: 20 digits are past a long long, and
     * 19 do not overflow an unsigned one, checked against the limit once
     */

    if (p == end || end - p > 19) {
        return -1;
    }

    limit = negative ? (unsigned long long) LLONG_MAX + 1 : LLONG_MAX;
    n = 0;

    do {
        d = (unsigned) (*p - '0');

        if (d > 9) {
            return -1;
        }

        n = n * 10 + d;
    } while (++p < end);

    if (n > limit) {
        return -1;
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
 * another type; NULL when all are as wanted, the integers' values read.
 */

gms_member_t *
gms_json_scan_member_mismatch(gms_member_t *want)
{
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
            if (gms_json_scan_member_integer(m, &m->integer) != 0) {
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

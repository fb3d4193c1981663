
/*
 * Redis Cluster's hash slots and redirections (the Redis Cluster
 * specification, "Key distribution model" and "Redirection and
 * resharding").  Nothing here trusts its input: a redirection is parsed
 * from bytes a server sent.
 */


#include "gms_slot.h"


uint16_t
gms_slot_crc16(const unsigned char *p, size_t len)
{
    int       i;
    uint16_t  crc;

    crc = 0;

    while (len--) {
        crc ^= (uint16_t) (*p++ << 8);

        for (i = 0; i < 8; i++) {
            crc = (crc & 0x8000) ? (uint16_t) ((crc << 1) ^ 0x1021)
                                 : (uint16_t) (crc << 1);
        }
    }

    return crc;
}


int
gms_slot_tag(const unsigned char *key, size_t len,
    const unsigned char **tag, size_t *tag_len)
{
    size_t  s, e;

    for (s = 0; s < len; s++) {
        if (key[s] == '{') {
            break;
        }
    }

    if (s == len) {
        return 0;
    }

    for (e = s + 1; e < len; e++) {
        if (key[e] == '}') {
            break;
        }
    }

    if (e == len || e == s + 1) {
        return 0;
    }

    *tag = key + s + 1;
    *tag_len = e - s - 1;

    return 1;
}


unsigned
gms_slot(const unsigned char *key, size_t len)
{
    size_t                tag_len;
    const unsigned char  *tag;

    if (gms_slot_tag(key, len, &tag, &tag_len)) {
        return gms_slot_crc16(tag, tag_len) & (GMS_SLOTS - 1);
    }

    return gms_slot_crc16(key, len) & (GMS_SLOTS - 1);
}


/* a decimal number of at most max, all of [p, last) */

static int
gms_slot_number(const unsigned char *p, const unsigned char *last,
    unsigned max, unsigned *n)
{
    unsigned  v;

    if (p == last || last - p > 5) {
        return -1;
    }

    for (v = 0; p < last; p++) {
        if (*p < '0' || *p > '9') {
            return -1;
        }

        v = v * 10 + (*p - '0');
    }

    if (v > max) {
        return -1;
    }

    *n = v;

    return 0;
}


int
gms_slot_redirect(const unsigned char *s, size_t len, gms_redirect_t *r)
{
    const unsigned char  *p, *last, *sp, *colon;

    last = s + len;

    if (len > 6 && s[0] == 'M' && s[1] == 'O' && s[2] == 'V' && s[3] == 'E'
        && s[4] == 'D' && s[5] == ' ')
    {
        r->kind = GMS_REDIRECT_MOVED;
        p = s + 6;

    } else if (len > 4 && s[0] == 'A' && s[1] == 'S' && s[2] == 'K'
               && s[3] == ' ')
    {
        r->kind = GMS_REDIRECT_ASK;
        p = s + 4;

    } else {
        return -1;
    }

    for (sp = p; sp < last && *sp != ' '; sp++) { /* void */ }

    if (sp == last || gms_slot_number(p, sp, GMS_SLOTS - 1, &r->slot) != 0) {
        return -1;
    }

    p = sp + 1;

    /* host:port, the last ':' ends the host (IPv6 has its own) */

    colon = NULL;

    for (sp = p; sp < last; sp++) {
        if (*sp == ':') {
            colon = sp;

        } else if (*sp <= ' ' || *sp >= 0x7f) {
            return -1;
        }
    }

    if (colon == NULL
        || gms_slot_number(colon + 1, last, 65535, &r->port) != 0
        || r->port == 0 || colon - p > 255)
    {
        return -1;
    }

    r->host = p;
    r->host_len = colon - p;

    return 0;
}


/*
 * Redis Cluster's hash slot: CRC16 (XMODEM: polynomial 0x1021, initial
 * value 0, no reflection) of the key mod 16384, or of its hash tag when
 * it has one: the bytes between the first '{' and the first '}' after
 * it, if there is at least one (Redis's keyHashSlot, cluster.c).
 */


#include <stdint.h>
#include <string.h>

#include "gms_slot.h"


static uint16_t gms_crc16(const char *buf, size_t len);


/*
 * 1 and where the tag lies in key when the key has a hash tag; 0: the
 * whole key is hashed
 */

int
gms_slot_tag(const char *key, size_t len, size_t *start, size_t *tag_len)
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

    *start = s + 1;
    *tag_len = e - s - 1;

    return 1;
}


unsigned
gms_slot(const char *key, size_t len)
{
    size_t  start, tag_len;

    if (gms_slot_tag(key, len, &start, &tag_len)) {
        return gms_crc16(key + start, tag_len) & (GMS_SLOTS - 1);
    }

    return gms_crc16(key, len) & (GMS_SLOTS - 1);
}


static uint16_t
gms_crc16(const char *buf, size_t len)
{
    int       i;
    size_t    n;
    uint16_t  crc;

    crc = 0;

    for (n = 0; n < len; n++) {
        crc ^= (uint16_t) ((unsigned char) buf[n]) << 8;

        for (i = 0; i < 8; i++) {
            crc = crc & 0x8000 ? (uint16_t) ((crc << 1) ^ 0x1021)
                               : (uint16_t) (crc << 1);
        }
    }

    return crc;
}

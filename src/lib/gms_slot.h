
/*
 * Redis Cluster's arithmetic, free of nginx: a key's hash slot (its hash
 * tag's, when it has one) and the redirections a node answers.
 */


#ifndef _GMS_SLOT_H_INCLUDED_
#define _GMS_SLOT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define GMS_SLOTS  16384


typedef enum {
    GMS_REDIRECT_NONE = 0,
    GMS_REDIRECT_MOVED,
    GMS_REDIRECT_ASK
} gms_redirect_e;


/* "MOVED 3999 127.0.0.1:6381": host points into the error text */
typedef struct {
    gms_redirect_e        kind;
    unsigned              slot;
    const unsigned char  *host;         /* an address or a name; no [] */
    size_t                host_len;
    unsigned              port;
} gms_redirect_t;


/* CRC16-CCITT (XMODEM), as the Redis Cluster specification's keyHashSlot */
uint16_t gms_slot_crc16(const unsigned char *p, size_t len);

/* the slot of a key: of its hash tag's bytes when it has one */
unsigned gms_slot(const unsigned char *key, size_t len);

/*
 * Redis's rule: the first '{', the first '}' after it, at least one byte
 * between.  1 and the tag's bytes, or 0 (the whole key is hashed).
 */
int gms_slot_tag(const unsigned char *key, size_t len,
    const unsigned char **tag, size_t *tag_len);

/*
 * An error reply's text: 0 and *r filled for a well-formed MOVED or ASK
 * ("MOVED <slot> <host>:<port>", the host possibly empty for "the node
 * that answered" (Redis 7's cluster-preferred-endpoint-type unknown-
 * endpoint), an IPv6 address without brackets); -1 for anything else.
 */
int gms_slot_redirect(const unsigned char *s, size_t len, gms_redirect_t *r);


#endif /* _GMS_SLOT_H_INCLUDED_ */

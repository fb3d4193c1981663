
/*
 * Redis Cluster's hash slot of a key (the cluster specification's
 * HASH_SLOT: CRC16 XMODEM of the key, or of its hash tag, mod 16384);
 * nginx-free, for the module and gms-token alike.
 */


#ifndef _GMS_SLOT_H_INCLUDED_
#define _GMS_SLOT_H_INCLUDED_


#include <stddef.h>


#define GMS_SLOTS              16384


unsigned gms_slot(const char *key, size_t len);
int gms_slot_tag(const char *key, size_t len, size_t *start,
    size_t *tag_len);


#endif /* _GMS_SLOT_H_INCLUDED_ */

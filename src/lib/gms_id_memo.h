
/*
 * The token ids a process computed lately, so that a token seen again is
 * not hashed again (gms_id_memo.c).  Pure: no nginx types, for unit
 * tests.
 */


#ifndef _GMS_ID_MEMO_H_INCLUDED_
#define _GMS_ID_MEMO_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "gms_contract.h"


/* 8,192 ids in sets of 4: 512 KB */
#define GMS_ID_MEMO_SETS       2048
#define GMS_ID_MEMO_WAYS       4


typedef struct {
    uint64_t               tag[2];         /* SipHash-2-4-128 of the token */
    char                   id[GMS_TOKEN_ID_LEN];
    uint32_t               used;
} gms_id_memo_slot_t;


typedef struct {
    uint64_t               key[2];
    const unsigned char   *salt;
    size_t                 salt_len;
    gms_id_memo_slot_t     slots[GMS_ID_MEMO_SETS][GMS_ID_MEMO_WAYS];
} gms_id_memo_t;


int gms_id_memo_init(gms_id_memo_t *memo, const unsigned char *salt,
    size_t salt_len);
int gms_id_memo_get(gms_id_memo_t *memo, const unsigned char *token,
    size_t len, uint64_t tag[2], char id[GMS_TOKEN_ID_LEN + 1]);
void gms_id_memo_put(gms_id_memo_t *memo, const uint64_t tag[2],
    const char *id);
void gms_id_memo_token_id(gms_id_memo_t *memo, const unsigned char *token,
    size_t len, char id[GMS_TOKEN_ID_LEN + 1]);
void gms_id_memo_siphash128(const uint64_t key[2], const unsigned char *in,
    size_t len, uint64_t out[2]);


#endif /* _GMS_ID_MEMO_H_INCLUDED_ */

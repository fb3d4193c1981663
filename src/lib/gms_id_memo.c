
/*
 * A memo of token ids.  A token's id, b64(SHA-256(token || salt)), is what
 * the shared cache and Redis are keyed by, so every request computes it;
 * a cached token's request does little else.  The memo keeps the ids of
 * the tokens seen lately, so a token seen again is not hashed again.
 *
 * The memo never holds a token: a slot is found by a tag of the token, a
 * SipHash-2-4 of it with a 128-bit output under a random key of the
 * memo's own (SipHash is a keyed pseudorandom function), and holds the
 * tag and the id.  To be served another token's id, a token would have to
 * have that token's tag under a key it cannot see: a chance of 2^-128 a
 * try.  A memo serves one salt (a process's); the tool and the fuzzers
 * call gms_token_id() itself.
 */


#include <string.h>

#include <openssl/rand.h>

#include "gms_token.h"
#include "gms_id_memo.h"


#define gms_rotl(x, b)  (uint64_t) (((x) << (b)) | ((x) >> (64 - (b))))

#define gms_sipround(v0, v1, v2, v3)                                         \
    do {                                                                      \
        v0 += v1; v1 = gms_rotl(v1, 13); v1 ^= v0; v0 = gms_rotl(v0, 32);     \
        v2 += v3; v3 = gms_rotl(v3, 16); v3 ^= v2;                            \
        v0 += v3; v3 = gms_rotl(v3, 21); v3 ^= v0;                            \
        v2 += v1; v1 = gms_rotl(v1, 17); v1 ^= v2; v2 = gms_rotl(v2, 32);     \
    } while (0)


static inline uint64_t gms_le64(const unsigned char *p);


/* a random key and no ids; -1: no randomness to be had */

int
gms_id_memo_init(gms_id_memo_t *memo, const unsigned char *salt,
    size_t salt_len)
{
    unsigned char  key[16];

    memset(memo, 0, sizeof(gms_id_memo_t));

    if (RAND_bytes(key, sizeof(key)) != 1) {
        return -1;
    }

    memo->key[0] = gms_le64(key);
    memo->key[1] = gms_le64(key + 8);
    memo->salt = salt;
    memo->salt_len = salt_len;

    memset(key, 0, sizeof(key));

    return 0;
}


/*
 * The token's id, as gms_token_id() computes it: from the memo when it
 * has it, else computed and remembered.
 */

void
gms_id_memo_token_id(gms_id_memo_t *memo, const unsigned char *token,
    size_t len, char id[GMS_TOKEN_ID_LEN + 1])
{
    uint64_t  tag[2];

    if (gms_id_memo_get(memo, token, len, tag, id) == 0) {
        return;
    }

    gms_token_id(token, len, memo->salt, memo->salt_len, id);

    if (id[0] != '\0') {
        gms_id_memo_put(memo, tag, id);
    }
}


/*
 * 0 and the id of the token when the memo has it (its slot moves to the
 * front of its set); -1 when it does not.  Either way, the token's tag,
 * for gms_id_memo_put().
 */

int
gms_id_memo_get(gms_id_memo_t *memo, const unsigned char *token, size_t len,
    uint64_t tag[2], char id[GMS_TOKEN_ID_LEN + 1])
{
    size_t               i;
    gms_id_memo_slot_t  *set, slot;

    gms_id_memo_siphash128(memo->key, token, len, tag);

    set = memo->slots[tag[0] & (GMS_ID_MEMO_SETS - 1)];

    for (i = 0; i < GMS_ID_MEMO_WAYS; i++) {

        if (!set[i].used || set[i].tag[0] != tag[0]
            || set[i].tag[1] != tag[1])
        {
            continue;
        }

        memcpy(id, set[i].id, GMS_TOKEN_ID_LEN);
        id[GMS_TOKEN_ID_LEN] = '\0';

        if (i > 0) {
            slot = set[i];
            memmove(&set[1], &set[0], i * sizeof(gms_id_memo_slot_t));
            set[0] = slot;
        }

        return 0;
    }

    return -1;
}


/* the id of a tag's token, in the place of its set's least recently used */

void
gms_id_memo_put(gms_id_memo_t *memo, const uint64_t tag[2], const char *id)
{
    gms_id_memo_slot_t  *set;

    set = memo->slots[tag[0] & (GMS_ID_MEMO_SETS - 1)];

    memmove(&set[1], &set[0],
            (GMS_ID_MEMO_WAYS - 1) * sizeof(gms_id_memo_slot_t));

    set[0].tag[0] = tag[0];
    set[0].tag[1] = tag[1];
    memcpy(set[0].id, id, GMS_TOKEN_ID_LEN);
    set[0].used = 1;
}


/*
 * SipHash-2-4 with a 128-bit output (Aumasson and Bernstein, the
 * reference implementation's siphash() with outlen 16): out[0] and out[1]
 * are its first and last 8 bytes, little-endian.
 */

void
gms_id_memo_siphash128(const uint64_t key[2], const unsigned char *in,
    size_t len, uint64_t out[2])
{
    size_t    i, left;
    uint64_t  v0, v1, v2, v3, m, b;

    v0 = 0x736f6d6570736575ULL ^ key[0];
    v1 = 0x646f72616e646f6dULL ^ key[1] ^ 0xee;
    v2 = 0x6c7967656e657261ULL ^ key[0];
    v3 = 0x7465646279746573ULL ^ key[1];

    for (i = 0; i + 8 <= len; i += 8) {
        m = gms_le64(in + i);
        v3 ^= m;
        gms_sipround(v0, v1, v2, v3);
        gms_sipround(v0, v1, v2, v3);
        v0 ^= m;
    }

    b = (uint64_t) len << 56;
    left = len - i;

    while (left--) {
        b |= (uint64_t) in[i + left] << (8 * left);
    }

    v3 ^= b;
    gms_sipround(v0, v1, v2, v3);
    gms_sipround(v0, v1, v2, v3);
    v0 ^= b;

    v2 ^= 0xee;
    gms_sipround(v0, v1, v2, v3);
    gms_sipround(v0, v1, v2, v3);
    gms_sipround(v0, v1, v2, v3);
    gms_sipround(v0, v1, v2, v3);
    out[0] = v0 ^ v1 ^ v2 ^ v3;

    v1 ^= 0xdd;
    gms_sipround(v0, v1, v2, v3);
    gms_sipround(v0, v1, v2, v3);
    gms_sipround(v0, v1, v2, v3);
    gms_sipround(v0, v1, v2, v3);
    out[1] = v0 ^ v1 ^ v2 ^ v3;
}


static inline uint64_t
gms_le64(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__

    uint64_t  v;

    memcpy(&v, p, sizeof(uint64_t));

    return v;

#else

    return (uint64_t) p[0] | (uint64_t) p[1] << 8 | (uint64_t) p[2] << 16
           | (uint64_t) p[3] << 24 | (uint64_t) p[4] << 32
           | (uint64_t) p[5] << 40 | (uint64_t) p[6] << 48
           | (uint64_t) p[7] << 56;

#endif
}


/*
 * Unit tests of src/lib/gms_id_memo.c: SipHash-2-4-128 against
 * libcrypto's, and the memo's ids against gms_token_id()'s, through hits,
 * misses and evictions.
 */


#include <stdlib.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "tap.h"
#include "gms_token.h"
#include "gms_id_memo.h"


/* libcrypto's SipHash-2-4 with a 16-byte output; -1: none */

static int
openssl_siphash128(const unsigned char key[16], const unsigned char *in,
    size_t len, unsigned char out[16])
{
    int            rc;
    size_t         n;
    EVP_MAC       *mac;
    OSSL_PARAM     params[2];
    EVP_MAC_CTX   *ctx;
    unsigned int   size;

    size = 16;
    params[0] = OSSL_PARAM_construct_uint(OSSL_MAC_PARAM_SIZE, &size);
    params[1] = OSSL_PARAM_construct_end();

    mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
    ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;

    rc = (ctx != NULL && EVP_MAC_init(ctx, key, 16, params) == 1
          && EVP_MAC_update(ctx, in, len) == 1
          && EVP_MAC_final(ctx, out, &n, 16) == 1 && n == 16)
         ? 0 : -1;

    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);

    return rc;
}


static void
le64_out(uint64_t v, unsigned char *p)
{
    int  i;

    for (i = 0; i < 8; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}


static void
test_siphash(void)
{
    size_t         i, len, same;
    uint64_t       key[2], tag[2];
    unsigned char  k[16], in[300], want[16], got[16];

    /* the reference implementation's first vector: key 00..0f, no input */
    static const unsigned char  empty[16] = {
        0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6,
        0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55, 0x02, 0x93
    };

    for (len = 0; len < 16; len++) {
        k[len] = (unsigned char) len;
    }

    key[0] = 0x0706050403020100ULL;
    key[1] = 0x0f0e0d0c0b0a0908ULL;
    gms_id_memo_siphash128(key, in, 0, tag);
    le64_out(tag[0], got);
    le64_out(tag[1], got + 8);
    ok(memcmp(got, empty, 16) == 0, "siphash128: the reference vector");

    same = 0;

    for (len = 0; len < sizeof(in); len++) {
        RAND_bytes(k, sizeof(k));
        RAND_bytes(in, sizeof(in));

        key[0] = 0;
        key[1] = 0;

        for (i = 0; i < 8; i++) {
            key[0] |= (uint64_t) k[i] << (8 * i);
            key[1] |= (uint64_t) k[8 + i] << (8 * i);
        }

        gms_id_memo_siphash128(key, in, len, tag);
        le64_out(tag[0], got);
        le64_out(tag[1], got + 8);

        if (openssl_siphash128(k, in, len, want) != 0) {
            break;
        }

        same += (memcmp(got, want, 16) == 0);
    }

    ok(same == sizeof(in), "siphash128: as libcrypto's for 0 to %zu bytes "
       "(%zu of %zu)", sizeof(in) - 1, same, sizeof(in));
}


static void
test_memo(void)
{
    size_t          i, t, round, n, same, len;
    gms_id_memo_t  *memo;
    unsigned char   salt[] = "pepper";
    char            got[GMS_TOKEN_ID_LEN + 1], want[GMS_TOKEN_ID_LEN + 1];

    static char     tokens[6000][64];

    memo = malloc(sizeof(gms_id_memo_t));

    if (memo == NULL || gms_id_memo_init(memo, salt, 6) != 0) {
        ok(0, "memo: made");
        free(memo);
        return;
    }

    n = sizeof(tokens) / sizeof(tokens[0]);

    for (i = 0; i < n; i++) {
        snprintf(tokens[i], sizeof(tokens[i]), "token-%zu-%08x", i,
                 (unsigned) rand());
    }

    /* more tokens than slots: hits, misses and evictions, in two orders */

    same = 0;

    for (round = 0; round < 4; round++) {
        for (i = 0; i < n; i++) {
            t = (round & 1) ? (i * 7919) % n : i;
            len = strlen(tokens[t]);
            gms_id_memo_token_id(memo, (unsigned char *) tokens[t], len, got);
            gms_token_id((unsigned char *) tokens[t], len, salt, 6, want);
            same += (strcmp(got, want) == 0);
        }
    }

    ok(same == 4 * n, "memo: every id as gms_token_id's (%zu of %zu)",
       same, 4 * n);

    /* the same token again and again, and a few in turn: hits */

    same = 0;

    for (i = 0; i < 1000; i++) {
        len = strlen(tokens[i % 3]);
        gms_id_memo_token_id(memo, (unsigned char *) tokens[i % 3], len, got);
        gms_token_id((unsigned char *) tokens[i % 3], len, salt, 6, want);
        same += (strcmp(got, want) == 0);
    }

    ok(same == 1000, "memo: a few tokens in turn");

    /* a token and its prefix, the empty token */

    gms_id_memo_token_id(memo, (unsigned char *) "abcdefgh", 8, got);
    gms_token_id((unsigned char *) "abcdefgh", 8, salt, 6, want);
    is_str(got, want, "memo: a token");
    gms_id_memo_token_id(memo, (unsigned char *) "abcdefg", 7, got);
    gms_token_id((unsigned char *) "abcdefg", 7, salt, 6, want);
    is_str(got, want, "memo: its prefix, another id");
    gms_id_memo_token_id(memo, (unsigned char *) "", 0, got);
    gms_token_id((unsigned char *) "", 0, salt, 6, want);
    is_str(got, want, "memo: the empty token");

    /* another memo, another salt: its own ids */

    gms_id_memo_init(memo, NULL, 0);
    gms_id_memo_token_id(memo, (unsigned char *) "abcdefgh", 8, got);
    gms_token_id((unsigned char *) "abcdefgh", 8, NULL, 0, want);
    is_str(got, want, "memo: no salt");

    free(memo);
}


int
main(void)
{
    test_siphash();
    test_memo();

    return done_testing();
}

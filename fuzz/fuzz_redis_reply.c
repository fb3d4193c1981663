
/* libFuzzer: bytes from Redis, through hiredis's reader, to a lookup. */


#include <stdlib.h>
#include <string.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_lookup.h"

#include "fuzz_hiredis.h"


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    void          *reply;
    size_t         i;
    redisReader   *reader;
    gms_lookup_t   lk;

    if (gms_huge_array(data, size)) {
        return 0;
    }

    reader = redisReaderCreate();
    if (reader == NULL) {
        return 0;
    }

    redisReaderFeed(reader, (const char *) data, size);

    while (redisReaderGetReply(reader, &reply) == REDIS_OK && reply != NULL) {

        if (gms_lookup_reply_parse(reply, &lk) == GMS_LOOKUP_FOUND) {

            if (lk.actor_len == 0 || lk.expires_at < 0) {
                abort();
            }

            for (i = 0; i < lk.nprivileges; i++) {
                if (lk.privileges[i]->type != REDIS_REPLY_STRING) {
                    abort();
                }
            }
        }

        /* a user's lookup: a session or OAuth token's */
        if (gms_lookup_members_parse(reply, &lk) == GMS_LOOKUP_FOUND) {

            if (lk.nprivileges > GMS_PRIVILEGES_MAX
                || lk.inactive > GMS_LOOKUP_DELETED)
            {
                abort();
            }

            for (i = 0; i < lk.nprivileges; i++) {
                if (!gms_token_privilege_valid(lk.privileges[i]->str,
                                               lk.privileges[i]->len))
                {
                    abort();
                }
            }
        }

        /* without scripts: HMGET's reply, EXEC's */
        if (gms_lookup_token_parse(reply, &lk) == GMS_LOOKUP_FOUND
            && (lk.actor_len == 0 || lk.expires_at < 0))
        {
            abort();
        }

        if (gms_lookup_user_parse(reply, &lk) == GMS_LOOKUP_FOUND
            && (lk.nprivileges > GMS_PRIVILEGES_MAX
                || lk.inactive > GMS_LOOKUP_DELETED))
        {
            abort();
        }

        freeReplyObject(reply);
    }

    redisReaderFree(reader);

    return 0;
}

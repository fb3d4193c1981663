
/*
 * Unit tests of src/lib/gms_lookup.c: the lookup script's replies parsed,
 * and those of the lookup made of plain commands.
 */


#include <stdlib.h>

#include "tap.h"
#include "gms_token.h"
#include "gms_lookup.h"


static gms_lookup_rc_e
lookup(const char *resp, gms_lookup_t *lk, redisReply **reply)
{
    void         *r;
    redisReader  *reader;

    reader = redisReaderCreate();
    redisReaderFeed(reader, resp, strlen(resp));

    if (redisReaderGetReply(reader, &r) != REDIS_OK || r == NULL) {
        redisReaderFree(reader);
        *reply = NULL;
        return gms_lookup_reply_parse(NULL, lk);
    }

    redisReaderFree(reader);
    *reply = r;

    return gms_lookup_reply_parse(r, lk);
}


static void
test_reply(void)
{
    redisReply    *r;
    gms_lookup_t   lk;

    ok(lookup("$-1\r\n", &lk, &r) == GMS_LOOKUP_UNKNOWN, "nil is unknown");
    freeReplyObject(r);

    ok(lookup("*4\r\n$21\r\nurn:li:corpuser:alice\r\n$13\r\n1700000000000\r\n"
              "$8\r\nPERSONAL\r\n*2\r\n$1\r\nA\r\n$2\r\nBB\r\n", &lk, &r)
       == GMS_LOOKUP_FOUND
       && lk.actor_len == 21 && memcmp(lk.actor, "urn:li:corpuser:alice", 21)
          == 0
       && lk.expires_at == 1700000000000LL && lk.nprivileges == 2
       && strcmp(lk.privileges[1]->str, "BB") == 0,
       "found token with expiry and privileges");
    freeReplyObject(r);

    ok(lookup("*4\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n",
              &lk, &r)
       == GMS_LOOKUP_FOUND && lk.expires_at == 0 && lk.nprivileges == 0
       && lk.inactive == 0,
       "no expiry, no privileges; without the flag, active");
    freeReplyObject(r);

    ok(lookup("*5\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n"
              ":1\r\n", &lk, &r)
       == GMS_LOOKUP_FOUND && lk.inactive == 1,
       "the user in <prefix>inactive");
    freeReplyObject(r);

    ok(lookup("*5\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n"
              ":0\r\n", &lk, &r)
       == GMS_LOOKUP_FOUND && lk.inactive == 0,
       "the user not in <prefix>inactive");
    freeReplyObject(r);

    ok(lookup("*5\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n"
              ":2\r\n", &lk, &r)
       == GMS_LOOKUP_FOUND && lk.inactive == GMS_LOOKUP_DELETED,
       "the user in <prefix>deleted too: hard-deleted only");
    freeReplyObject(r);

    ok(lookup("*5\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n"
              ":3\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY,
       "an inactive flag other than 0, 1 or 2 is an error");
    freeReplyObject(r);

    ok(lookup("*5\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n"
              "$1\r\n1\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY,
       "an inactive flag that is no integer is an error");
    freeReplyObject(r);

    ok(lookup("*4\r\n$1\r\nu\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "an actor that is no urn:li: URN");
    freeReplyObject(r);

    ok(lookup("*4\r\n$13\r\nurn:li:a\r\nX:1\r\n$0\r\n\r\n$0\r\n\r\n*0\r\n",
              &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "an actor with CR LF");
    freeReplyObject(r);

    ok(lookup("*4\r\n$9\r\nurn:li:xy\r\n$0\r\n\r\n$0\r\n\r\n*1\r\n"
              "$5\r\nA,B,C\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "a privilege with commas");
    freeReplyObject(r);

    ok(lookup("-LOADING Redis is loading the dataset in memory\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY && strncmp(lk.error, "LOADING", 7) == 0,
       "error reply is an error");
    freeReplyObject(r);

    ok(lookup("*4\r\n$1\r\nu\r\n$3\r\nabc\r\n$0\r\n\r\n*0\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "bad expiresAt is an error");
    freeReplyObject(r);

    ok(lookup("*3\r\n$1\r\nu\r\n$0\r\n\r\n$0\r\n\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "short array is an error");
    freeReplyObject(r);

    ok(lookup("*4\r\n$1\r\nu\r\n$0\r\n\r\n$0\r\n\r\n*1\r\n:5\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "integer privilege is an error");
    freeReplyObject(r);

    ok(lookup(":1\r\n", &lk, &r) == GMS_LOOKUP_BAD_REPLY,
       "integer reply is an error");
    freeReplyObject(r);

    ok(gms_lookup_reply_parse(NULL, &lk) == GMS_LOOKUP_BAD_REPLY,
       "no reply is an error");
}


/* a user's lookup: [[privilege, ...], inactive] */

static gms_lookup_rc_e
user(const char *resp, gms_lookup_t *lk, redisReply **reply)
{
    void         *r;
    redisReader  *reader;

    reader = redisReaderCreate();
    redisReaderFeed(reader, resp, strlen(resp));

    if (redisReaderGetReply(reader, &r) != REDIS_OK) {
        r = NULL;
    }

    redisReaderFree(reader);
    *reply = r;

    return gms_lookup_members_parse(r, lk);
}


static void
test_user_reply(void)
{
    redisReply    *r;
    gms_lookup_t   lk;

    ok(user("*2\r\n*2\r\n$1\r\nA\r\n$2\r\nBB\r\n:0\r\n", &lk, &r)
       == GMS_LOOKUP_FOUND && lk.nprivileges == 2 && lk.inactive == 0
       && strcmp(lk.privileges[1]->str, "BB") == 0,
       "user: privileges, active");
    freeReplyObject(r);

    ok(user("*2\r\n*0\r\n:1\r\n", &lk, &r) == GMS_LOOKUP_FOUND
       && lk.nprivileges == 0 && lk.inactive == GMS_LOOKUP_INACTIVE,
       "user: no set, in <prefix>inactive");
    freeReplyObject(r);

    ok(user("*2\r\n*0\r\n:2\r\n", &lk, &r) == GMS_LOOKUP_FOUND
       && lk.inactive == GMS_LOOKUP_DELETED,
       "user: in <prefix>deleted too");
    freeReplyObject(r);

    ok(user("*2\r\n*0\r\n:3\r\n", &lk, &r) == GMS_LOOKUP_BAD_REPLY,
       "user: a flag other than 0, 1 or 2");
    freeReplyObject(r);

    ok(user("*2\r\n*0\r\n$1\r\n0\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "user: a flag that is no integer");
    freeReplyObject(r);

    ok(user("*2\r\n:0\r\n*0\r\n", &lk, &r) == GMS_LOOKUP_BAD_REPLY,
       "user: the two swapped");
    freeReplyObject(r);

    ok(user("*1\r\n$1\r\nA\r\n", &lk, &r) == GMS_LOOKUP_BAD_REPLY,
       "user: a bare SMEMBERS answer is not the script's");
    freeReplyObject(r);

    ok(user("*2\r\n*1\r\n$3\r\nA,B\r\n:0\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY, "user: a privilege with a comma");
    freeReplyObject(r);

    ok(user("-NOSCRIPT No matching script\r\n", &lk, &r)
       == GMS_LOOKUP_BAD_REPLY && strncmp(lk.error, "NOSCRIPT", 8) == 0,
       "user: an error reply");
    freeReplyObject(r);

    ok(user("$-1\r\n", &lk, &r) == GMS_LOOKUP_BAD_REPLY,
       "user: nil (the token's answer) is not a user's");
    freeReplyObject(r);

    ok(gms_lookup_members_parse(NULL, &lk) == GMS_LOOKUP_BAD_REPLY,
       "user: no reply");
}


/* the lookup without scripts: HMGET's reply, then EXEC's */

static int
refused(const char *error)
{
    return gms_lookup_scripts_refused(error, strlen(error));
}


static redisReply *
reply_of(const char *resp)
{
    void         *r;
    redisReader  *reader;

    reader = redisReaderCreate();
    redisReaderFeed(reader, resp, strlen(resp));

    if (redisReaderGetReply(reader, &r) != REDIS_OK) {
        r = NULL;
    }

    redisReaderFree(reader);

    return r;
}


static void
test_plain(void)
{
    redisReply    *t, *u;
    gms_lookup_t   lk;

    t = reply_of("*3\r\n$21\r\nurn:li:corpuser:alice\r\n"
                 "$13\r\n1700000000000\r\n$8\r\nPERSONAL\r\n");
    u = reply_of("*3\r\n:0\r\n:0\r\n*2\r\n$1\r\nA\r\n$2\r\nBB\r\n");

    ok(gms_lookup_token_parse(t, &lk) == GMS_LOOKUP_FOUND
       && gms_lookup_user_parse(u, &lk) == GMS_LOOKUP_FOUND
       && lk.actor_len == 21
       && memcmp(lk.actor, "urn:li:corpuser:alice", 21) == 0
       && lk.expires_at == 1700000000000LL && lk.type_len == 8
       && lk.nprivileges == 2 && strcmp(lk.privileges[1]->str, "BB") == 0
       && lk.inactive == GMS_LOOKUP_ACTIVE,
       "plain: the token's fields, then the user's, as the script's");
    freeReplyObject(t);
    freeReplyObject(u);

    t = reply_of("*3\r\n$9\r\nurn:li:xy\r\n$-1\r\n$-1\r\n");
    ok(gms_lookup_token_parse(t, &lk) == GMS_LOOKUP_FOUND
       && lk.expires_at == 0 && lk.type_len == 0,
       "plain: no expiresAt, no type: never, none (the script's '')");
    freeReplyObject(t);

    t = reply_of("*3\r\n$-1\r\n$-1\r\n$-1\r\n");
    ok(gms_lookup_token_parse(t, &lk) == GMS_LOOKUP_UNKNOWN,
       "plain: no hash (or no actor) is unknown");
    freeReplyObject(t);

    t = reply_of("*3\r\n$0\r\n\r\n$-1\r\n$-1\r\n");
    ok(gms_lookup_token_parse(t, &lk) == GMS_LOOKUP_UNKNOWN,
       "plain: an empty actor is unknown");
    freeReplyObject(t);

    t = reply_of("*3\r\n$9\r\nurn:li:xy\r\n$3\r\nabc\r\n$-1\r\n");
    ok(gms_lookup_token_parse(t, &lk) == GMS_LOOKUP_BAD_REPLY,
       "plain: a bad expiresAt");
    freeReplyObject(t);

    t = reply_of("*3\r\n$1\r\nu\r\n$-1\r\n$-1\r\n");
    ok(gms_lookup_token_parse(t, &lk) == GMS_LOOKUP_BAD_REPLY,
       "plain: an actor that is no urn:li: URN");
    freeReplyObject(t);

    t = reply_of("*2\r\n$9\r\nurn:li:xy\r\n$-1\r\n");
    ok(gms_lookup_token_parse(t, &lk) == GMS_LOOKUP_BAD_REPLY,
       "plain: HMGET's reply of two fields");
    freeReplyObject(t);

    t = reply_of("*3\r\n:1\r\n$-1\r\n$-1\r\n");
    ok(gms_lookup_token_parse(t, &lk) == GMS_LOOKUP_BAD_REPLY,
       "plain: an integer field");
    freeReplyObject(t);

    t = reply_of("-WRONGTYPE Operation against a key\r\n");
    ok(gms_lookup_token_parse(t, &lk) == GMS_LOOKUP_BAD_REPLY
       && strncmp(lk.error, "WRONGTYPE", 9) == 0,
       "plain: an error reply to HMGET");
    freeReplyObject(t);

    ok(gms_lookup_token_parse(NULL, &lk) == GMS_LOOKUP_BAD_REPLY,
       "plain: no HMGET reply");

    u = reply_of("*3\r\n:1\r\n:0\r\n*0\r\n");
    ok(gms_lookup_user_parse(u, &lk) == GMS_LOOKUP_FOUND
       && lk.inactive == GMS_LOOKUP_INACTIVE && lk.nprivileges == 0,
       "plain: in <prefix>inactive");
    freeReplyObject(u);

    u = reply_of("*3\r\n:1\r\n:1\r\n*0\r\n");
    ok(gms_lookup_user_parse(u, &lk) == GMS_LOOKUP_FOUND
       && lk.inactive == GMS_LOOKUP_DELETED,
       "plain: in <prefix>deleted too: hard-deleted only");
    freeReplyObject(u);

    u = reply_of("*3\r\n:0\r\n:1\r\n*0\r\n");
    ok(gms_lookup_user_parse(u, &lk) == GMS_LOOKUP_FOUND
       && lk.inactive == GMS_LOOKUP_ACTIVE,
       "plain: in <prefix>deleted alone counts as the script counts it");
    freeReplyObject(u);

    u = reply_of("*3\r\n:2\r\n:0\r\n*0\r\n");
    ok(gms_lookup_user_parse(u, &lk) == GMS_LOOKUP_BAD_REPLY,
       "plain: SISMEMBER's 2");
    freeReplyObject(u);

    u = reply_of("*3\r\n:0\r\n:0\r\n*1\r\n$3\r\nA,B\r\n");
    ok(gms_lookup_user_parse(u, &lk) == GMS_LOOKUP_BAD_REPLY,
       "plain: a privilege with a comma");
    freeReplyObject(u);

    u = reply_of("*2\r\n:0\r\n*0\r\n");
    ok(gms_lookup_user_parse(u, &lk) == GMS_LOOKUP_BAD_REPLY,
       "plain: EXEC's reply of two");
    freeReplyObject(u);

    u = reply_of("*-1\r\n");
    ok(gms_lookup_user_parse(u, &lk) == GMS_LOOKUP_BAD_REPLY,
       "plain: EXEC's nil");
    freeReplyObject(u);

    u = reply_of("-EXECABORT Transaction discarded\r\n");
    ok(gms_lookup_user_parse(u, &lk) == GMS_LOOKUP_BAD_REPLY
       && strncmp(lk.error, "EXECABORT", 9) == 0,
       "plain: EXEC's error");
    freeReplyObject(u);

    ok(refused("NOPERM User gms has no permissions to run the 'evalsha' "
               "command")
       && refused("NOPERM this user has no permissions to run the 'eval' "
                  "command or its subcommand")
       && refused("ERR unknown command 'EVALSHA', with args beginning "
                  "with: ")
       && refused("ERR Could not find scripting engine 'lua'")
       && !refused("NOSCRIPT No matching script")
       && !refused("LOADING Redis is loading")
       && !refused("NOPERM")
       && !refused("NOPERM No permissions to access a key"),
       "plain: the refusals of scripts told from other errors");
}


int
main(void)
{
    test_reply();
    test_user_reply();
    test_plain();

    return done_testing();
}


/*
 * The Redis lookup of a token: the script the module and gms-token run,
 * and the parsers of its reply and of a user's privilege set; the parsers
 * of the same lookup made of plain commands, where the server refuses
 * scripts.  With gms_topology.c, the only nginx-free files that speak
 * hiredis.
 */


#include <string.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_lookup.h"


/*
 * One round trip per lookup: the token hash, the actor's privilege set,
 * and whether the actor is in <prefix>inactive, and then <prefix>deleted
 * (their names are ARGV[1] with "actor:" replaced: the command keeps its
 * shape).
 * KEYS[1] = <prefix>token:<id>, ARGV[1] = <prefix>actor:
 * Reply: nil when the token is unknown, else
 * [actor, expiresAt or "", type or "", [privilege, ...], inactive], the
 * last a gms_lookup_inactive_e.
 * A user's lookup (a session or external OAuth token, whose user the
 * token names and whose hash Redis does not have): ARGV[2] = <urn>,
 * KEYS[1] = <prefix>actor:<urn>, the set read (a cluster routes by it).
 * Reply: [[privilege, ...], inactive].
 */
const char  gms_lookup_script[] =
    "local a = ARGV[2]\n"
    "local t\n"
    "if not a then\n"
    "t = redis.call('HMGET', KEYS[1], 'actor', 'expiresAt', 'type')\n"
    "if not t[1] then return false end\n"
    "a = t[1]\n"
    "end\n"
    "local p = string.sub(ARGV[1], 1, -7)\n"
    "local i = redis.call('SISMEMBER', p .. 'inactive', a)\n"
    "if i == 1 then i = 1 + redis.call('SISMEMBER', p .. 'deleted', a) end\n"
    "local m = redis.call('SMEMBERS', ARGV[1] .. a)\n"
    "if not t then return {m, i} end\n"
    "return {t[1], t[2] or '', t[3] or '', m, i}\n";

const size_t  gms_lookup_script_len = sizeof(gms_lookup_script) - 1;


static gms_lookup_rc_e gms_lookup_token(const redisReply *actor,
    const redisReply *expires_at, const redisReply *type,
    gms_lookup_t *lookup);
static int gms_inactive_check(const redisReply *e, gms_lookup_t *lookup);
static int gms_privileges_check(const redisReply *e, gms_lookup_t *lookup);


gms_lookup_rc_e
gms_lookup_reply_parse(const redisReply *reply, gms_lookup_t *lookup)
{
    size_t       i;
    redisReply  *e;

    memset(lookup, 0, sizeof(gms_lookup_t));

    if (reply == NULL) {
        lookup->error = "no reply";
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->type == REDIS_REPLY_NIL) {
        return GMS_LOOKUP_UNKNOWN;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        lookup->error = reply->str;
        return GMS_LOOKUP_BAD_REPLY;
    }

    /* 4 elements: a script without the inactive flag */

    if (reply->type != REDIS_REPLY_ARRAY
        || (reply->elements != 4 && reply->elements != 5))
    {
        lookup->error = "unexpected reply shape";
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->elements == 5
        && gms_inactive_check(reply->element[4], lookup) != 0)
    {
        return GMS_LOOKUP_BAD_REPLY;
    }

    for (i = 0; i < 3; i++) {
        if (reply->element[i]->type != REDIS_REPLY_STRING) {
            lookup->error = "unexpected reply element type";
            return GMS_LOOKUP_BAD_REPLY;
        }
    }

    e = reply->element[3];

    if (gms_privileges_check(e, lookup) != 0) {
        return GMS_LOOKUP_BAD_REPLY;
    }

    lookup->privileges = e->element;
    lookup->nprivileges = e->elements;

    return gms_lookup_token(reply->element[0], reply->element[1],
                            reply->element[2], lookup);
}


/*
 * HMGET's reply, [actor, expiresAt, type], each nil where the hash lacks
 * it: the script's "t[2] or ''".  No actor: unknown, as the script's nil.
 */

gms_lookup_rc_e
gms_lookup_token_parse(const redisReply *reply, gms_lookup_t *lookup)
{
    size_t      i;
    redisReply  none;

    memset(lookup, 0, sizeof(gms_lookup_t));

    if (reply == NULL) {
        lookup->error = "no reply";
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        lookup->error = reply->str;
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        lookup->error = "unexpected reply shape";
        return GMS_LOOKUP_BAD_REPLY;
    }

    for (i = 0; i < 3; i++) {
        if (reply->element[i]->type != REDIS_REPLY_STRING
            && reply->element[i]->type != REDIS_REPLY_NIL)
        {
            lookup->error = "unexpected reply element type";
            return GMS_LOOKUP_BAD_REPLY;
        }
    }

    if (reply->element[0]->type == REDIS_REPLY_NIL) {
        return GMS_LOOKUP_UNKNOWN;
    }

    memset(&none, 0, sizeof(redisReply));
    none.type = REDIS_REPLY_STRING;
    none.str = (char *) "";

    return gms_lookup_token(reply->element[0],
                            reply->element[1]->type == REDIS_REPLY_NIL
                            ? &none : reply->element[1],
                            reply->element[2]->type == REDIS_REPLY_NIL
                            ? &none : reply->element[2],
                            lookup);
}


/* a token's fields, strings; the pointers are into the replies */

static gms_lookup_rc_e
gms_lookup_token(const redisReply *actor, const redisReply *expires_at,
    const redisReply *type, gms_lookup_t *lookup)
{
    if (actor->len == 0) {
        return GMS_LOOKUP_UNKNOWN;
    }

    if (!gms_token_actor_valid(actor->str, actor->len)) {
        lookup->error = "invalid actor: not a urn:li: URN of valid UTF-8 "
                        "without control bytes, at most 512 bytes";
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (gms_token_parse_ms(expires_at->str, expires_at->len,
                           &lookup->expires_at)
        != 0)
    {
        lookup->error = "expiresAt is not a number of milliseconds";
        return GMS_LOOKUP_BAD_REPLY;
    }

    lookup->actor = actor->str;
    lookup->actor_len = actor->len;
    lookup->type = type->str;
    lookup->type_len = type->len;

    return GMS_LOOKUP_FOUND;
}


/*
 * A user's lookup, [[privilege, ...], inactive]: a session or external
 * OAuth token's user (a user with no set holds none).
 */

gms_lookup_rc_e
gms_lookup_members_parse(const redisReply *reply, gms_lookup_t *lookup)
{
    memset(lookup, 0, sizeof(gms_lookup_t));

    if (reply == NULL) {
        lookup->error = "no reply";
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        lookup->error = reply->str;
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        lookup->error = "unexpected reply shape";
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (gms_privileges_check(reply->element[0], lookup) != 0
        || gms_inactive_check(reply->element[1], lookup) != 0)
    {
        return GMS_LOOKUP_BAD_REPLY;
    }

    lookup->privileges = reply->element[0]->element;
    lookup->nprivileges = reply->element[0]->elements;

    return GMS_LOOKUP_FOUND;
}


/*
 * EXEC's reply, [in <prefix>inactive, in <prefix>deleted, [privilege,
 * ...]]: the user's part of the lookup, the token's fields left as they
 * are.  The status as the script counts it: deleted only if inactive.
 */

gms_lookup_rc_e
gms_lookup_user_parse(const redisReply *reply, gms_lookup_t *lookup)
{
    int          i;
    redisReply  *e;

    lookup->privileges = NULL;
    lookup->nprivileges = 0;
    lookup->inactive = GMS_LOOKUP_ACTIVE;

    if (reply == NULL) {
        lookup->error = "no reply";
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        lookup->error = reply->str;
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        lookup->error = "unexpected reply shape";
        return GMS_LOOKUP_BAD_REPLY;
    }

    for (i = 0; i < 2; i++) {
        e = reply->element[i];

        if (e->type != REDIS_REPLY_INTEGER || e->integer < 0
            || e->integer > 1)
        {
            lookup->error = "SISMEMBER answered neither 0 nor 1";
            return GMS_LOOKUP_BAD_REPLY;
        }
    }

    if (gms_privileges_check(reply->element[2], lookup) != 0) {
        return GMS_LOOKUP_BAD_REPLY;
    }

    if (reply->element[0]->integer) {
        lookup->inactive = GMS_LOOKUP_INACTIVE + reply->element[1]->integer;
    }

    lookup->privileges = reply->element[2]->element;
    lookup->nprivileges = reply->element[2]->elements;

    return GMS_LOOKUP_FOUND;
}


/*
 * The server runs no script for this client: an ACL that denies
 * @scripting (-NOPERM ... to run the 'evalsha' command; not a key's
 * -NOPERM, which plain commands would meet too), EVALSHA or SCRIPT renamed
 * away (-ERR unknown command), or Valkey 9.1 without its Lua module
 * (src/eval.c: "Could not find scripting engine"; EVALSHA then says
 * -NOSCRIPT, which the caller judges: only after the script itself was
 * refused is it final).
 */

int
gms_lookup_scripts_refused(const char *error, size_t len)
{
    size_t  i, n;

    static const char  *refusals[] = {
        "ERR unknown command",
        "ERR Could not find scripting engine",
        NULL
    };

    if (len >= 6 && memcmp(error, "NOPERM", 6) == 0) {
        n = sizeof("command") - 1;

        for (i = 6; i + n <= len; i++) {
            if (memcmp(error + i, "command", n) == 0) {
                return 1;
            }
        }

        return 0;
    }

    for (i = 0; refusals[i]; i++) {
        n = strlen(refusals[i]);

        if (len >= n && memcmp(error, refusals[i], n) == 0) {
            return 1;
        }
    }

    return 0;
}


/* the user's status: a gms_lookup_inactive_e */

static int
gms_inactive_check(const redisReply *e, gms_lookup_t *lookup)
{
    if (e->type != REDIS_REPLY_INTEGER || e->integer < 0
        || e->integer > GMS_LOOKUP_DELETED)
    {
        lookup->error = "the inactive flag is not 0, 1 or 2";
        return -1;
    }

    lookup->inactive = (unsigned) e->integer;

    return 0;
}


/* a set of privilege names, as the lookup accepts them */

static int
gms_privileges_check(const redisReply *e, gms_lookup_t *lookup)
{
    size_t  i;

    if (e->type != REDIS_REPLY_ARRAY) {
        lookup->error = "privileges are not an array";
        return -1;
    }

    if (e->elements > GMS_PRIVILEGES_MAX) {
        lookup->error = "more privileges than an entry may hold";
        return -1;
    }

    for (i = 0; i < e->elements; i++) {
        if (e->element[i]->type != REDIS_REPLY_STRING) {
            lookup->error = "privilege is not a string";
            return -1;
        }

        if (!gms_token_privilege_valid(e->element[i]->str,
                                       e->element[i]->len))
        {
            lookup->error = "invalid privilege name";
            return -1;
        }
    }

    return 0;
}

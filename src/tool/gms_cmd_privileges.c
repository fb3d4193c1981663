
/*
 * gms-token grant, deny and privileges: one user's set of privileges,
 * <prefix>actor:<urn>, edited or printed by hand.  Every edit is
 * published on <prefix>invalidate, so that the edges drop what they
 * cached for the user.  (sync --gms and follow mirror DataHub's sets:
 * gms_sync_privileges.c.)
 */


#include <stdlib.h>
#include <string.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_cmd_privileges.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/* grant: how often a set changed by another writer is read again */
#define GMS_GRANT_TRIES        5


static int gms_cmd_grant_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_cmd_deny_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_cmd_privileges_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_privileges_edit(gms_tool_t *t, gms_tool_args_t *a,
    const char *verb);
static int gms_privileges_grant_capped(gms_tool_t *t, gms_tool_args_t *a,
    int n, const char **argv, const size_t *lens);


const gms_tool_command_t  gms_cmd_grant = {
    "grant", gms_cmd_grant_handler, GMS_OPTS_CONN, 2, -1,
    "Usage: gms-token grant URN PRIVILEGE... [connection options]\n"
    "\n"
    "Adds privileges (DataHub's names, as GET_ES_TASK_STATUS_PRIVILEGE)\n"
    "to the user's set <prefix>actor:<urn>: every token of the user has\n"
    "them from the next request on.  A set holds at most 256 (the edge\n"
    "answers 503 for a user with more): a grant past that is refused.\n"
    GMS_TOOL_CONN_USAGE
};


const gms_tool_command_t  gms_cmd_deny = {
    "deny", gms_cmd_deny_handler, GMS_OPTS_CONN, 2, -1,
    "Usage: gms-token deny URN PRIVILEGE... [connection options]\n"
    "\n"
    "Removes privileges from the user's set <prefix>actor:<urn>.\n"
    GMS_TOOL_CONN_USAGE
};


const gms_tool_command_t  gms_cmd_privileges = {
    "privileges", gms_cmd_privileges_handler, GMS_OPTS_CONN, 1, 1,
    "Usage: gms-token privileges URN [connection options]\n"
    "\n"
    "Prints the user's privileges, one a line, sorted (nothing if none).\n"
    GMS_TOOL_CONN_USAGE
};


static int
gms_cmd_grant_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    return gms_privileges_edit(t, a, "SADD");
}


static int
gms_cmd_deny_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    return gms_privileges_edit(t, a, "SREM");
}


static int
gms_privileges_edit(gms_tool_t *t, gms_tool_args_t *a, const char *verb)
{
    int           i, n, rc;
    char         *key;
    size_t        key_len, *lens;
    redisReply   *reply;
    const char  **argv;

    if (gms_tool_input_check_actor(t, a->argv[0]) != 0) {
        return GMS_TOOL_USAGE;
    }

    for (i = 1; i < a->argc; i++) {
        if (!gms_token_privilege_valid(a->argv[i], strlen(a->argv[i]))) {
            gms_tool_msgs_error(t, "'%s' is not a privilege name: letters, "
                                "digits, '_', '-', '.' and ':', 1 to %d of "
                                "them", gms_tool_msgs_shown(a->argv[i]),
                                GMS_PRIVILEGE_MAX);
            return GMS_TOOL_USAGE;
        }
    }

    rc = gms_tool_redis_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    key = gms_tool_redis_key(t, GMS_KEY_ACTOR, a->argv[0], strlen(a->argv[0]),
                             &key_len);

    n = a->argc + 1;
    argv = malloc(n * sizeof(char *));
    lens = malloc(n * sizeof(size_t));

    if (key == NULL || argv == NULL || lens == NULL) {
        free(key);
        free(argv);
        free(lens);
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    argv[0] = verb;
    lens[0] = strlen(verb);
    argv[1] = key;
    lens[1] = key_len;

    for (i = 1; i < a->argc; i++) {
        argv[i + 1] = a->argv[i];
        lens[i + 1] = strlen(a->argv[i]);
    }

    if (strcmp(verb, "SADD") == 0) {
        rc = gms_privileges_grant_capped(t, a, n, argv, lens);

    } else {
        reply = gms_tool_conn_command_argv(t, n, argv, lens);
        rc = gms_tool_redis_reply_error(t, reply, verb) != 0 ? GMS_TOOL_REDIS
                                                             : GMS_TOOL_OK;
        if (rc == GMS_TOOL_OK) {
            freeReplyObject(reply);
        }
    }

    free(key);
    free(argv);
    free(lens);

    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    if (gms_tool_redis_publish(t, a->argv[0], strlen(a->argv[0])) != 0) {
        return GMS_TOOL_REDIS;
    }

    return GMS_TOOL_OK;
}


/*
 * The SADD of argv, refused when the set would hold more privileges than
 * the module reads (GMS_PRIVILEGES_MAX: it answers 503 for every request
 * of a user with more).  The set's size and which of the privileges it
 * holds are read under WATCH; the SADD runs in MULTI/EXEC, read again
 * when the set changed in between.
 */

static int
gms_privileges_grant_capped(gms_tool_t *t, gms_tool_args_t *a, int n,
    const char **argv, const size_t *lens)
{
    int          i, j, try;
    long long    size;
    redisReply  *reply;

    for (try = 0; try < GMS_GRANT_TRIES; try++) {
        gms_tool_conn_append(t, "WATCH %b", argv[1], lens[1]);
        gms_tool_conn_append(t, "SCARD %b", argv[1], lens[1]);

        for (i = 2; i < n; i++) {
            gms_tool_conn_append(t, "SISMEMBER %b %b", argv[1], lens[1],
                                 argv[i], lens[i]);
        }

        size = 0;

        for (i = 0; i < n; i++) {
            (void) gms_tool_conn_get_reply(t, &reply);

            if (gms_tool_redis_reply_error(t, reply, i == 0 ? "WATCH"
                                                     : i == 1 ? "SCARD"
                                                     : "SISMEMBER")
                != 0)
            {
                return GMS_TOOL_REDIS;
            }

            if (i > 0 && reply->type != REDIS_REPLY_INTEGER) {
                gms_tool_msgs_error(t, "redis %s: %s: unexpected reply type %d",
                                    t->redis, i == 1 ? "SCARD" : "SISMEMBER",
                                    reply->type);
                freeReplyObject(reply);
                return GMS_TOOL_REDIS;
            }

            if (i == 1) {
                size = reply->integer;

            } else if (i > 1 && reply->integer == 0) {
                /* a privilege named twice is added once */
                for (j = 2; j < i; j++) {
                    if (strcmp(argv[j], argv[i]) == 0) {
                        break;
                    }
                }

                size += (j == i);
            }

            freeReplyObject(reply);
        }

        if (size > GMS_PRIVILEGES_MAX) {
            reply = gms_tool_conn_command(t, "UNWATCH");
            if (reply != NULL) {
                freeReplyObject(reply);
            }

            gms_tool_msgs_error(t, "%s would have %lld privileges, more than "
                                "the edge accepts (%d): nothing granted",
                                gms_tool_msgs_shown(a->argv[0]), size,
                                GMS_PRIVILEGES_MAX);
            return GMS_TOOL_USAGE;
        }

        gms_tool_conn_append(t, "MULTI");
        gms_tool_conn_append_argv(t, n, argv, lens);
        gms_tool_conn_append(t, "EXEC");

        for (i = 0; i < 2; i++) {
            (void) gms_tool_conn_get_reply(t, &reply);

            if (gms_tool_redis_reply_error(t, reply, "MULTI") != 0) {
                return GMS_TOOL_REDIS;
            }

            freeReplyObject(reply);
        }

        (void) gms_tool_conn_get_reply(t, &reply);

        if (gms_tool_redis_reply_error(t, reply, "EXEC") != 0) {
            return GMS_TOOL_REDIS;
        }

        if (reply->type == REDIS_REPLY_NIL) {
            /* the set changed since WATCH: nothing was written */
            freeReplyObject(reply);
            continue;
        }

        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 1
            || reply->element[0]->type == REDIS_REPLY_ERROR)
        {
            gms_tool_msgs_error(t, "redis %s: SADD: %s", t->redis,
                                reply->type == REDIS_REPLY_ARRAY
                                && reply->elements == 1
                                ? reply->element[0]->str
                                : "the transaction was not run");
            freeReplyObject(reply);
            return GMS_TOOL_REDIS;
        }

        freeReplyObject(reply);

        return GMS_TOOL_OK;
    }

    gms_tool_msgs_error(t, "redis %s: the set of %s changed under every one of "
                        "%d tries: nothing granted", t->redis,
                        gms_tool_msgs_shown(a->argv[0]), GMS_GRANT_TRIES);

    return GMS_TOOL_REDIS;
}


static int
gms_cmd_privileges_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    int          rc;
    char        *key;
    size_t       i, key_len;
    redisReply  *reply;

    if (gms_tool_input_check_actor(t, a->argv[0]) != 0) {
        return GMS_TOOL_USAGE;
    }

    rc = gms_tool_redis_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    key = gms_tool_redis_key(t, GMS_KEY_ACTOR, a->argv[0], strlen(a->argv[0]),
                             &key_len);
    if (key == NULL) {
        return GMS_TOOL_REDIS;
    }

    reply = gms_tool_conn_command(t, "SMEMBERS %b", key, key_len);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "SMEMBERS") != 0) {
        return GMS_TOOL_REDIS;
    }

    if (reply->type != REDIS_REPLY_ARRAY) {
        gms_tool_msgs_error(t, "redis %s: SMEMBERS: unexpected reply type %d",
                            t->redis, reply->type);
        freeReplyObject(reply);
        return GMS_TOOL_REDIS;
    }

    /* hiredis leaves element NULL for an empty array: no qsort of NULL */
    if (reply->elements > 1) {
        qsort(reply->element, reply->elements, sizeof(redisReply *),
              gms_tool_redis_reply_cmp);
    }

    for (i = 0; i < reply->elements; i++) {
        fwrite(reply->element[i]->str, 1, reply->element[i]->len, stdout);
        fputc('\n', stdout);
    }

    freeReplyObject(reply);

    return GMS_TOOL_OK;
}

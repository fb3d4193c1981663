
/*
 * gms-token id, put and show: one token, by its id.  id computes the id
 * of a token read on stdin as the module does; put caches a token as
 * the module reads it; show prints what the module's own lookup script
 * finds for an id.
 */


#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_lookup.h"
#include "gms_cmd_token.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_tool_cluster.h"


static int gms_cmd_id_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_cmd_put_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_cmd_show_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_cmd_show_plain(gms_tool_t *t, const char *key, size_t key_len,
    redisReply **token, redisReply **user, gms_lookup_t *lk,
    gms_lookup_rc_e *lrc);


const gms_tool_command_t  gms_cmd_id = {
    "id", gms_cmd_id_handler, GMS_OPTS_SALT, 0, 0,
    "Usage: gms-token id [--salt STRING | --salt-file FILE] < token\n"
    "\n"
    "Prints the id of the token read on stdin: base64(SHA-256(token salt)),\n"
    "the id DataHub gives the token (urn:li:dataHubAccessToken:<id>) and\n"
    "the id the module looks up.  The token is read on stdin, never from\n"
    "the command line, where ps would show it; one trailing newline is\n"
    "dropped.\n"
    "\n"
    "  --salt STRING     GMS's token salt, as gms_token_salt (default: "
    "none)\n"
    "  --salt-file FILE  the salt, from a file (one trailing newline "
    "dropped)\n"
};


const gms_tool_command_t  gms_cmd_put = {
    "put", gms_cmd_put_handler,
    GMS_OPTS_CONN | GMS_OPTS_SALT | GMS_OPT(GMS_OPT_ID)
    | GMS_OPT(GMS_OPT_TOKEN_STDIN) | GMS_OPT(GMS_OPT_ACTOR)
    | GMS_OPT(GMS_OPT_EXPIRES_AT) | GMS_OPT(GMS_OPT_EXPIRES_IN)
    | GMS_OPT(GMS_OPT_TYPE), 0, 0,
    "Usage: gms-token put (--id ID | --token-stdin) --actor URN\n"
    "                     [--expires-at MS | --expires-in DURATION]\n"
    "                     [--type PERSONAL|SESSION|SERVICE_ACCOUNT]\n"
    "                     [connection options]\n"
    "\n"
    "Caches a token: replaces the hash <prefix>token:<id> with the token's\n"
    "user, expiry and type, in one transaction, and makes the key expire\n"
    "with the token.  Prints the id.\n"
    "\n"
    "  --id ID                the token id (see 'gms-token id')\n"
    "  --token-stdin          read the token on stdin and compute its id\n"
    "  --salt STRING          with --token-stdin: GMS's token salt\n"
    "  --salt-file FILE       with --token-stdin: the salt, from a file\n"
    "  --actor URN            the token's user: urn:li:corpuser:...\n"
    "  --expires-at MS        expiry in milliseconds since the epoch;\n"
    "                         0 or none: the token never expires\n"
    "  --expires-in DURATION  expiry from now: 30d, 12h, 90m, 3600s, "
    "1d12h\n"
    "  --type TYPE            PERSONAL, SESSION or SERVICE_ACCOUNT "
    "(DataHub\n"
    "                         1.4 and later)\n"
    "\n"
    "An expiry already past is refused.\n"
    GMS_TOOL_CONN_USAGE
};


const gms_tool_command_t  gms_cmd_show = {
    "show", gms_cmd_show_handler, GMS_OPTS_CONN, 1, 1,
    "Usage: gms-token show ID [connection options]\n"
    "\n"
    "Prints the cached token as the module reads it, one line of JSON:\n"
    "{\"id\",\"actor\",\"expiresAt\",\"type\",\"privileges\":[...]}, "
    "expiresAt and\n"
    "type null when absent, and \"inactive\":true when its user is in\n"
    "<prefix>inactive.  Exit status 1 if it is not cached.\n"
    GMS_TOOL_CONN_USAGE
};


static int
gms_cmd_id_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    int     rc;
    char    id[GMS_TOKEN_ID_LEN + 1], *salt;
    size_t  salt_len;

    rc = gms_tool_options_salt(t, a, &salt, &salt_len);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    rc = gms_tool_input_token_stdin(t, salt, salt_len, id);

    free(salt);

    if (rc == GMS_TOOL_OK) {
        printf("%s\n", id);
    }

    return rc;
}


static int
gms_cmd_put_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    int                 rc;
    char               *salt, id[GMS_TOKEN_ID_LEN + 1];
    size_t              salt_len;
    int64_t             now, ms;
    const char         *type, *value;
    gms_tool_token_t    tok;
    gms_tool_put_rc_e   put_rc;

    if ((a->val[GMS_OPT_ID] == NULL) == (a->val[GMS_OPT_TOKEN_STDIN] == NULL))
    {
        gms_tool_msgs_error(t, "give one of --id and --token-stdin; see "
                            "'gms-token put --help'");
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_ACTOR] == NULL) {
        gms_tool_msgs_error(t, "--actor is required; see "
                            "'gms-token put --help'");
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_EXPIRES_AT] && a->val[GMS_OPT_EXPIRES_IN]) {
        gms_tool_msgs_error(t, "give --expires-at or --expires-in, not both");
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_ID] && (a->val[GMS_OPT_SALT]
                               || a->val[GMS_OPT_SALT_FILE]))
    {
        gms_tool_msgs_error(t, "--salt and --salt-file go with --token-stdin, "
                            "not with --id");
        return GMS_TOOL_USAGE;
    }

    if (gms_tool_input_check_actor(t, a->val[GMS_OPT_ACTOR]) != 0) {
        return GMS_TOOL_USAGE;
    }

    memset(&tok, 0, sizeof(gms_tool_token_t));
    tok.actor = a->val[GMS_OPT_ACTOR];
    tok.actor_len = strlen(tok.actor);

    type = a->val[GMS_OPT_TYPE];

    /* DataHub's TokenType, as the module's $gms_token_type takes it */
    if (type && strcmp(type, "PERSONAL") != 0 && strcmp(type, "SESSION") != 0
        && strcmp(type, "SERVICE_ACCOUNT") != 0)
    {
        gms_tool_msgs_error(t, "--type: '%s' is neither PERSONAL nor SESSION "
                            "nor SERVICE_ACCOUNT", gms_tool_msgs_shown(type));
        return GMS_TOOL_USAGE;
    }

    tok.type = type;
    now = gms_tool_redis_now_ms();

    /* for sync --prune's grace period: DataHub may not list it yet */
    tok.created_at = now;

    value = a->val[GMS_OPT_EXPIRES_AT];

    if (value) {
        if (value[0] == '\0'
            || gms_token_parse_ms(value, strlen(value), &ms) != 0)
        {
            gms_tool_msgs_error(t, "--expires-at: '%s' is not a number of "
                                "milliseconds since the epoch",
                                gms_tool_msgs_shown(value));
            return GMS_TOOL_USAGE;
        }

        tok.expires_at = ms;
    }

    value = a->val[GMS_OPT_EXPIRES_IN];

    if (value) {
        if (gms_tool_input_parse_duration(value, &ms) != 0
            || ms > INT64_MAX - now)
        {
            gms_tool_msgs_error(t, "--expires-in: '%s' is not a duration "
                                "such as 30d, 12h, 90m, 3600s or 1d12h",
                                gms_tool_msgs_shown(value));
            return GMS_TOOL_USAGE;
        }

        tok.expires_at = now + ms;
    }

    if (tok.expires_at != 0 && tok.expires_at <= now) {
        gms_tool_msgs_error(t, "the expiry %lld is already past (now %lld): "
                            "nothing to cache", (long long) tok.expires_at,
                            (long long) now);
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_ID]) {
        if (gms_tool_input_check_id(t, a->val[GMS_OPT_ID]) != 0) {
            return GMS_TOOL_USAGE;
        }

        memcpy(id, a->val[GMS_OPT_ID], GMS_TOKEN_ID_LEN + 1);

    } else {
        rc = gms_tool_options_salt(t, a, &salt, &salt_len);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }

        rc = gms_tool_input_token_stdin(t, salt, salt_len, id);

        free(salt);

        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    rc = gms_tool_redis_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    if (gms_tool_redis_put_token(t, id, &tok, &put_rc) != 0) {
        return GMS_TOOL_REDIS;
    }

    /* an edge may hold the id as unknown, or with its old user */

    if (put_rc != GMS_TOOL_UNCHANGED
        && gms_tool_redis_publish(t, id, GMS_TOKEN_ID_LEN) != 0)
    {
        return GMS_TOOL_REDIS;
    }

    printf("%s\n", id);

    return GMS_TOOL_OK;
}


static int
gms_cmd_show_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    int               rc;
    char             *key, *actor_key, *out;
    size_t            i, key_len, actor_key_len;
    json_t           *doc, *privileges, *v;
    redisReply       *reply, *user, **sorted;
    gms_lookup_t      lk;
    gms_lookup_rc_e   lrc;

    if (gms_tool_input_check_id(t, a->argv[0]) != 0) {
        return GMS_TOOL_USAGE;
    }

    rc = gms_tool_redis_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    key = gms_tool_redis_key(t, GMS_KEY_TOKEN, a->argv[0], GMS_TOKEN_ID_LEN,
                             &key_len);
    actor_key = gms_tool_redis_key(t, GMS_KEY_ACTOR, "", 0, &actor_key_len);

    if (key == NULL || actor_key == NULL) {
        free(key);
        return GMS_TOOL_REDIS;
    }

    /* the module's own lookup: what is shown is what the module sees */
    reply = gms_tool_conn_command(t, "EVAL %b 1 %b %b", gms_lookup_script,
                                  gms_lookup_script_len, key, key_len,
                                  actor_key, actor_key_len);
    user = NULL;
    free(actor_key);

    if (gms_tool_redis_refused(t, reply)) {
        /* as the module asks a server that refuses scripts */
        rc = gms_cmd_show_plain(t, key, key_len, &reply, &user, &lk, &lrc);
        free(key);

        if (rc != 0) {
            return GMS_TOOL_REDIS;
        }

    } else {
        free(key);

        /* a cluster's redirection, said for what it is */
        if (reply == NULL || gms_tool_cluster_why(t, reply)) {
            gms_tool_redis_reply_error(t, reply, "lookup");
            return GMS_TOOL_REDIS;
        }

        lrc = gms_lookup_reply_parse(reply, &lk);
    }

    if (lrc == GMS_LOOKUP_UNKNOWN) {
        freeReplyObject(reply);
        gms_tool_msgs_error(t, "token id %s is not cached", a->argv[0]);
        return GMS_TOOL_NOT_FOUND;
    }

    if (lrc == GMS_LOOKUP_BAD_REPLY) {
        gms_tool_msgs_error(t, "redis %s: lookup of token id %s: %s", t->redis,
                            a->argv[0], lk.error);
        freeReplyObject(reply);

        if (user) {
            freeReplyObject(user);
        }

        return GMS_TOOL_REDIS;
    }

    rc = GMS_TOOL_REDIS;
    out = NULL;
    sorted = NULL;

    doc = json_object();
    privileges = json_array();

    if (doc == NULL || privileges == NULL) {
        goto failed;
    }

    json_object_set_new(doc, "id", json_string(a->argv[0]));

    v = json_stringn(lk.actor, lk.actor_len);
    if (v == NULL) {
        gms_tool_msgs_error(t, "the cached actor of token id %s is not UTF-8",
                            a->argv[0]);
        goto done;
    }

    json_object_set_new(doc, "actor", v);
    json_object_set_new(doc, "expiresAt", lk.expires_at
                                          ? json_integer(lk.expires_at)
                                          : json_null());
    json_object_set_new(doc, "type", lk.type_len
                                     ? json_stringn(lk.type, lk.type_len)
                                     : json_null());

    if (lk.nprivileges) {
        sorted = malloc(lk.nprivileges * sizeof(redisReply *));
        if (sorted == NULL) {
            goto failed;
        }

        memcpy(sorted, lk.privileges, lk.nprivileges * sizeof(redisReply *));
        qsort(sorted, lk.nprivileges, sizeof(redisReply *),
              gms_tool_redis_reply_cmp);
    }

    for (i = 0; i < lk.nprivileges; i++) {
        v = json_stringn(sorted[i]->str, sorted[i]->len);
        if (v == NULL) {
            gms_tool_msgs_error(t, "a cached privilege of %.*s is not UTF-8",
                                (int) lk.actor_len, lk.actor);
            goto done;
        }

        json_array_append_new(privileges, v);
    }

    json_object_set(doc, "privileges", privileges);

    /* the user in <prefix>inactive: the edge answers by release */
    if (lk.inactive) {
        json_object_set_new(doc, "inactive", json_true());
    }

    out = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (out == NULL) {
        goto failed;
    }

    printf("%s\n", out);
    rc = GMS_TOOL_OK;
    goto done;

failed:

    gms_tool_msgs_error(t, "out of memory");

done:

    free(out);
    free(sorted);
    json_decref(privileges);
    json_decref(doc);
    freeReplyObject(reply);

    if (user) {
        freeReplyObject(user);
    }

    return rc;
}


/*
 * The module's lookup without scripts (src/ngx_http_gms_redis.c): HMGET
 * of the token, then the user's status and privileges in one MULTI/EXEC;
 * -1: failed, said.  *token and *user (NULL if not asked) hold what *lk
 * points into.
 */

static int
gms_cmd_show_plain(gms_tool_t *t, const char *key, size_t key_len,
    redisReply **token, redisReply **user, gms_lookup_t *lk,
    gms_lookup_rc_e *lrc)
{
    char    *inactive, *deleted, *members;
    size_t   inactive_len, deleted_len, members_len;

    *token = gms_tool_conn_command(t, "HMGET %b actor expiresAt type", key,
                                   key_len);

    if (*token == NULL || gms_tool_cluster_why(t, *token)) {
        gms_tool_redis_reply_error(t, *token, "lookup");
        return -1;
    }

    *lrc = gms_lookup_token_parse(*token, lk);

    if (*lrc != GMS_LOOKUP_FOUND) {
        return 0;
    }

    inactive = gms_tool_redis_key(t, GMS_KEY_INACTIVE, "", 0, &inactive_len);
    deleted = gms_tool_redis_key(t, GMS_KEY_DELETED, "", 0, &deleted_len);
    members = gms_tool_redis_key(t, GMS_KEY_ACTOR, lk->actor, lk->actor_len,
                                 &members_len);

    if (inactive && deleted && members) {
        gms_tool_conn_append(t, "MULTI");
        gms_tool_conn_append(t, "SISMEMBER %b %b", inactive, inactive_len,
                             lk->actor, lk->actor_len);
        gms_tool_conn_append(t, "SISMEMBER %b %b", deleted, deleted_len,
                             lk->actor, lk->actor_len);
        gms_tool_conn_append(t, "SMEMBERS %b", members, members_len);
        gms_tool_conn_append(t, "EXEC");

        *user = gms_tool_redis_exec_read(t, 3);
    }

    free(inactive);
    free(deleted);
    free(members);

    if (*user == NULL) {
        freeReplyObject(*token);
        *token = NULL;
        return -1;
    }

    *lrc = gms_lookup_user_parse(*user, lk);

    return 0;
}

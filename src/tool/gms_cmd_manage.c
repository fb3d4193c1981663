
/*
 * gms-token revoke, create, list and check-salt: DataHub's own
 * access-token API (GraphQL, auth.graphql: createAccessToken,
 * revokeAccessToken, listAccessTokens, getAccessTokenMetadata) with the
 * cache kept in step; revoke without --gms deletes the cached token
 * only.  A token made here is cached before it is printed, so the edges
 * take it at once; one revoked here is deleted from the cache and dropped
 * from the edges' caches (<prefix>invalidate) only once GMS has revoked
 * it.  The token is printed once, on stdout, and nowhere else.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "gms_contract.h"
#include "gms_token.h"
#include "gms_cmd_manage.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/* CreateAccessTokenResolver; the metadata is loaded by its urn */
#define GMS_MANAGE_CREATE_QUERY                                              \
    "mutation createAccessToken($input: CreateAccessTokenInput!) {\n"        \
    "  createAccessToken(input: $input) {\n"                                 \
    "    accessToken\n"                                                      \
    "    metadata {\n      urn\n      id\n      actorUrn\n      ownerUrn\n"  \
    "      name\n      description\n      createdAt\n      expiresAt\n"      \
    "    }\n  }\n}"

/* RevokeAccessTokenResolver: Boolean!, the argument is the token's id */
#define GMS_MANAGE_REVOKE_QUERY                                              \
    "mutation revokeAccessToken($tokenId: String!) {\n"                      \
    "  revokeAccessToken(tokenId: $tokenId)\n}"

/* GetAccessTokenMetadataResolver: GMS hashes the token with its own salt */
#define GMS_MANAGE_METADATA_QUERY                                            \
    "query getAccessTokenMetadata($token: String!) {\n"                      \
    "  getAccessTokenMetadata(token: $token) {\n"                            \
    "    urn\n    id\n    actorUrn\n    ownerUrn\n    name\n"                \
    "    createdAt\n    expiresAt\n  }\n}"

/* ListAccessTokensResolver, as sync asks it */
#define GMS_MANAGE_LIST_QUERY                                                \
    "query listAccessTokens($input: ListAccessTokenInput!) {\n"              \
    "  listAccessTokens(input: $input) {\n"                                  \
    "    start\n    count\n    total\n"                                      \
    "    tokens {\n      urn\n      id\n      actorUrn\n      ownerUrn\n"    \
    "      name\n      createdAt\n      expiresAt\n    }\n  }\n}"


/* create: what DataHub is asked for, and the edge's salt to check it by */
typedef struct {
    const char            *type;           /* AccessTokenType */
    const char            *actor;
    const char            *name;
    const char            *description;    /* NULL: none */
    const char            *duration;       /* AccessTokenDuration, or NULL */
    const char            *duration_iso;   /* durationIso, or NULL */
    const char            *salt;
    size_t                 salt_len;
} gms_manage_create_t;


static int gms_cmd_create_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_cmd_revoke_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_cmd_list_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_cmd_check_salt_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_manage_duration(gms_manage_create_t *c, const char *value);
static int gms_manage_create(gms_tool_t *t,
    const gms_graphql_conf_t *gms, gms_manage_create_t *c);
static json_t *gms_manage_create_ask(gms_tool_t *t, gms_graphql_t *g,
    gms_manage_create_t *c);
static int gms_manage_revoke(gms_tool_t *t,
    const gms_graphql_conf_t *gms, const char *id);
static int gms_manage_list(gms_tool_t *t,
    const gms_graphql_conf_t *gms, const char *actor, long page_size);
static int gms_manage_check_salt(gms_tool_t *t,
    const gms_graphql_conf_t *gms, const char *token, size_t token_len,
    const char *salt, size_t salt_len);
static int gms_manage_open(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_graphql_t **g);
static int gms_manage_expires(json_t *v, int64_t *ms);
static int gms_manage_revoke_at_gms(gms_tool_t *t, gms_graphql_t *g,
    const char *id);
static void gms_manage_undo(gms_tool_t *t, gms_graphql_t *g,
    const char *gms_url, const char *id, const char *why);
static int gms_manage_list_fetch(gms_tool_t *t, gms_graphql_t *g,
    const char *actor, long page_size, json_t *all);
static int gms_manage_list_token(gms_tool_t *t, json_t *v, size_t n);
static const char *gms_manage_mark(redisReply *reply, json_t *v,
    int64_t now);
static void gms_manage_print_name(const char *s);


const gms_tool_command_t  gms_cmd_revoke = {
    "revoke", gms_cmd_revoke_handler, GMS_OPTS_CONN | GMS_OPTS_GMS, 1, 1,
    "Usage: gms-token revoke ID [--gms URL [GMS options]] "
    "[connection options]\n"
    "\n"
    "Deletes the cached token: the module answers 401 to it at once.\n"
    "Exit status 1 if it was not cached.\n"
    "\n"
    "With --gms, GMS revokes the token first (revokeAccessToken; ID is\n"
    "the token's id, as 'gms-token list' prints it), then the cached one\n"
    "is deleted, whether it was cached or not (exit status 0).  If GMS\n"
    "refuses (exit status 4), the cache is left as it was; a token that\n"
    "GMS no longer knows is taken out of the cache without --gms.\n"
    GMS_TOOL_GMS_USAGE
    GMS_TOOL_CONN_USAGE
};


const gms_tool_command_t  gms_cmd_create = {
    "create", gms_cmd_create_handler,
    GMS_OPTS_GMS | GMS_OPTS_CONN | GMS_OPTS_SALT | GMS_OPT(GMS_OPT_ACTOR)
    | GMS_OPT(GMS_OPT_NAME) | GMS_OPT(GMS_OPT_DURATION)
    | GMS_OPT(GMS_OPT_DESCRIPTION) | GMS_OPT(GMS_OPT_TYPE), 0, 0,
    "Usage: gms-token create --gms URL --actor URN --name NAME\n"
    "                        [--type PERSONAL|SERVICE_ACCOUNT]\n"
    "                        [--duration DURATION] [--description TEXT]\n"
    "                        [--salt STRING | --salt-file FILE]\n"
    "                        [GMS options] [connection options]\n"
    "\n"
    "Has GMS make an access token for the user (createAccessToken; for\n"
    "another user than --gms-token-file's, that account needs Manage All\n"
    "Access Tokens, and Manage Service Accounts for a service account's),\n"
    "caches it as 'put' would (its type, DataHub's expiry), tells the\n"
    "edges to forget any miss for its id, and only then prints the token:\n"
    "once, on stdout, nothing else there.  The edges take it at once.\n"
    "\n"
    "  --actor URN          the token's user: urn:li:corpuser:...\n"
    "  --type TYPE          PERSONAL (the default) or SERVICE_ACCOUNT\n"
    "                       (DataHub 1.4 and later: --actor is then a\n"
    "                       service account, urn:li:corpuser:service_...)\n"
    "  --name NAME          the token's name in DataHub\n"
    "  --description TEXT   its description\n"
    "  --duration DURATION  ONE_HOUR, ONE_DAY, ONE_WEEK, ONE_MONTH "
    "(default),\n"
    "                       THREE_MONTHS, SIX_MONTHS, ONE_YEAR or "
    "NO_EXPIRY\n"
    "                       (DataHub's AccessTokenDuration; older "
    "releases\n"
    "                       lack ONE_WEEK), or an ISO-8601 duration such "
    "as\n"
    "                       P30D or PT12H (durationIso, DataHub after "
    "1.7.0.1;\n"
    "                       an older GMS is asked for the "
    "AccessTokenDuration\n"
    "                       of that length, if there is one)\n"
    "  --salt STRING        the edge's salt, as gms_token_salt (default: "
    "none)\n"
    "  --salt-file FILE     the salt, from a file\n"
    "\n"
    "The id the salt gives the new token must be GMS's own: else the edge\n"
    "would refuse it, and the token is revoked at GMS, not printed, and\n"
    "the exit status is 2.  Whenever the token cannot be cached (exit\n"
    "status 3) or GMS's answer is unusable (4), it is revoked too.  A\n"
    "duration GMS does not allow (DataHub after 1.7.0.1: "
    "ACCESS_TOKEN_ALLOWED_DURATIONS,\n"
    "and NO_EXPIRY only with ACCESS_TOKEN_ALLOW_NO_EXPIRY) is one line "
    "on\n"
    "stderr, exit status 4, as any other refusal of GMS's.\n"
    GMS_TOOL_GMS_USAGE
    GMS_TOOL_CONN_USAGE
};


const gms_tool_command_t  gms_cmd_list = {
    "list", gms_cmd_list_handler,
    GMS_OPTS_GMS | GMS_OPTS_CONN | GMS_OPT(GMS_OPT_ACTOR)
    | GMS_OPT(GMS_OPT_PAGE_SIZE), 0, 0,
    "Usage: gms-token list --gms URL [--actor URN] [--page-size N]\n"
    "                      [GMS options] [connection options]\n"
    "\n"
    "Prints the tokens DataHub lists (listAccessTokens), in its order\n"
    "(expiry, latest first), one a line, five fields separated by tabs:\n"
    "\n"
    "  ID  MARK  ACTOR  EXPIRES_AT  NAME\n"
    "\n"
    "MARK is what the cache has for the token: ok; missing (not cached:\n"
    "the edge refuses it); stale (cached with another user or expiry\n"
    "than DataHub's); expired (DataHub still lists it, nothing to "
    "cache).\n"
    "EXPIRES_AT is in milliseconds since the epoch, or never.  NAME is\n"
    "the rest of the line, '\\' written \"\\\\\" and control "
    "characters \"\\xHH\".\n"
    "'gms-token sync --gms URL' caches the missing and mends the stale.\n"
    "\n"
    "  --actor URN     only the tokens of this user\n"
    "  --page-size N   tokens asked of GMS at a time (default 100)\n"
    GMS_TOOL_GMS_USAGE
    GMS_TOOL_CONN_USAGE
};


const gms_tool_command_t  gms_cmd_check_salt = {
    "check-salt", gms_cmd_check_salt_handler,
    GMS_OPTS_GMS | GMS_OPTS_SALT | GMS_OPT(GMS_OPT_TOKEN_STDIN), 0, 0,
    "Usage: gms-token check-salt --gms URL --token-stdin\n"
    "                            [--salt STRING | --salt-file FILE] "
    "[GMS options]\n"
    "                            < token\n"
    "\n"
    "Asks GMS for the metadata of a token of DataHub's "
    "(getAccessTokenMetadata;\n"
    "--gms-token-file's account needs Manage All Access Tokens) and tells\n"
    "whether the salt gives the token GMS's own id: when every valid\n"
    "token gets 401 from the edge, a wrong gms_token_salt is the usual\n"
    "cause.  One line on stdout, \"salt right: ...\" (exit status 0) or\n"
    "\"salt wrong: ...\" with both ids (exit status 1).  The token is "
    "read\n"
    "on stdin, as 'gms-token id' reads it.\n"
    "\n"
    "  --token-stdin     read the token on stdin (required)\n"
    "  --salt STRING     the edge's salt, as gms_token_salt (default: "
    "none)\n"
    "  --salt-file FILE  the salt, from a file\n"
    GMS_TOOL_GMS_USAGE
};


/*
 * AccessTokenDuration of auth.graphql (v0.13.0 lacks ONE_WEEK) and its
 * length (AccessTokenUtil.mapDurationToMs; NO_EXPIRY: none)
 */
static const struct {
    const char            *name;
    int64_t                ms;
} gms_manage_durations[] = {
    { "ONE_HOUR", 3600000LL }, { "ONE_DAY", 86400000LL },
    { "ONE_WEEK", 7 * 86400000LL }, { "ONE_MONTH", 30 * 86400000LL },
    { "THREE_MONTHS", 90 * 86400000LL }, { "SIX_MONTHS", 180 * 86400000LL },
    { "ONE_YEAR", 365 * 86400000LL }, { "NO_EXPIRY", 0 }, { NULL, 0 }
};


/*
 * --duration: an AccessTokenDuration, or an ISO-8601 duration sent as
 * durationIso (CreateAccessTokenInput, DataHub's "Next", PR 19222) with
 * the AccessTokenDuration of the same length, if any, for a GMS without
 * durationIso
 */

static int
gms_manage_duration(gms_manage_create_t *c, const char *value)
{
    size_t   i;
    int64_t  ms;

    for (i = 0; gms_manage_durations[i].name; i++) {
        if (strcmp(gms_manage_durations[i].name, value) == 0) {
            c->duration = value;
            return 0;
        }
    }

    if (gms_tool_input_parse_iso_duration(value, &ms) != 0) {
        return -1;
    }

    c->duration_iso = value;

    for (i = 0; gms_manage_durations[i].name; i++) {
        if (gms_manage_durations[i].ms == ms) {
            c->duration = gms_manage_durations[i].name;
        }
    }

    return 0;
}


/* both ends a command needs: Redis, then GMS's GraphQL */

static int
gms_manage_open(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_graphql_t **g)
{
    int  rc;

    rc = gms_tool_redis_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    *g = gms_graphql_open(t, gms);

    return *g ? GMS_TOOL_OK : GMS_TOOL_GMS;
}


static int
gms_cmd_create_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    int                  rc;
    char                *salt;
    size_t               salt_len;
    gms_manage_create_t  c;
    gms_graphql_conf_t   gms;

    memset(&c, 0, sizeof(gms_manage_create_t));
    c.type = a->val[GMS_OPT_TYPE] ? a->val[GMS_OPT_TYPE] : "PERSONAL";
    c.actor = a->val[GMS_OPT_ACTOR];
    c.name = a->val[GMS_OPT_NAME];
    c.description = a->val[GMS_OPT_DESCRIPTION];

    if (gms_tool_options_gms(t, a, &gms) != 0) {
        return GMS_TOOL_USAGE;
    }

    if (c.actor == NULL || c.name == NULL) {
        gms_tool_msgs_error(t, "--actor and --name are required; see "
                            "'gms-token create --help'");
        return GMS_TOOL_USAGE;
    }

    if (gms_tool_input_check_actor(t, c.actor) != 0) {
        return GMS_TOOL_USAGE;
    }

    if (c.name[0] == '\0') {
        gms_tool_msgs_error(t, "--name: a token's name cannot be empty");
        return GMS_TOOL_USAGE;
    }

    /* AccessTokenType (auth.graphql): SERVICE_ACCOUNT since 1.4.0 */
    if (strcmp(c.type, "PERSONAL") != 0
        && strcmp(c.type, "SERVICE_ACCOUNT") != 0)
    {
        gms_tool_msgs_error(t, "--type: '%s' is neither PERSONAL nor "
                            "SERVICE_ACCOUNT", gms_tool_msgs_shown(c.type));
        return GMS_TOOL_USAGE;
    }

    if (gms_manage_duration(&c, a->val[GMS_OPT_DURATION]
                                ? a->val[GMS_OPT_DURATION] : "ONE_MONTH")
        != 0)
    {
        gms_tool_msgs_error(t, "--duration: '%s' is neither one of ONE_HOUR, "
                            "ONE_DAY, ONE_WEEK, ONE_MONTH, THREE_MONTHS, "
                            "SIX_MONTHS, ONE_YEAR, NO_EXPIRY nor an ISO-8601 "
                            "duration such as P30D or PT12H",
                            gms_tool_msgs_shown(a->val[GMS_OPT_DURATION]));
        return GMS_TOOL_USAGE;
    }

    rc = gms_tool_options_salt(t, a, &salt, &salt_len);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    c.salt = salt;
    c.salt_len = salt_len;

    rc = gms_manage_create(t, &gms, &c);

    OPENSSL_cleanse(salt, salt_len);
    free(salt);

    return rc;
}


/*
 * createAccessToken, then the token cached under the id the edge computes
 * (with its salt), which must be GMS's own; any failure after GMS made the
 * token revokes it there: a token nobody was given is no token to keep.
 */

static int
gms_manage_create(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_manage_create_t *c)
{
    int                 rc;
    char                id[GMS_TOKEN_ID_LEN + 1], why[512];
    size_t              token_len;
    json_t             *res, *meta, *v;
    int64_t             expires;
    const char         *token, *gms_id, *actor;
    gms_graphql_t      *g;
    gms_tool_token_t    tok;
    gms_tool_put_rc_e   put_rc;

    /*
     * Redis is reached before GMS is asked: a token made for a cache that
     * cannot be written would be made for nothing (and revoked).
     */
    rc = gms_manage_open(t, gms, &g);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    res = gms_manage_create_ask(t, g, c);
    if (res == NULL) {
        gms_graphql_close(g);
        return GMS_TOOL_GMS;
    }

    rc = GMS_TOOL_GMS;
    gms_id = NULL;

    meta = json_object_get(res, "metadata");
    v = json_object_get(meta, "id");

    if (json_is_string(v)
        && gms_token_id_valid(json_string_value(v), json_string_length(v)))
    {
        gms_id = json_string_value(v);
    }

    v = json_object_get(res, "accessToken");
    token = json_string_value(v);
    token_len = json_string_length(v);

    if (token == NULL || token_len == 0 || token_len > GMS_TOKEN_MAX_LEN
        || strcspn(token, " \t\r\n") != token_len)
    {
        gms_manage_undo(t, g, gms->url, gms_id,
                        "GMS's answer has no accessToken the edge could "
                        "take");
        goto done;
    }

    if (gms_id == NULL) {
        gms_manage_undo(t, g, gms->url, NULL,
                        "GMS's answer has no metadata.id (a token id)");
        goto done;
    }

    gms_token_id((const unsigned char *) token, token_len,
                 (const unsigned char *) c->salt, c->salt_len, id);

    if (id[0] == '\0') {
        gms_manage_undo(t, g, gms->url, gms_id, "cannot compute SHA-256");
        goto done;
    }

    if (strcmp(id, gms_id) != 0) {
        snprintf(why, sizeof(why), "the salt gives the new token the id %s, "
                 "GMS gives it %s: the edge's salt is not GMS's (see "
                 "'gms-token check-salt --help')", id, gms_id);
        gms_manage_undo(t, g, gms->url, gms_id, why);
        rc = GMS_TOOL_USAGE;
        goto done;
    }

    actor = json_string_value(json_object_get(meta, "actorUrn"));

    if (actor != NULL && strcmp(actor, c->actor) != 0) {
        snprintf(why, sizeof(why), "GMS made the token for %s, not %s",
                 gms_tool_msgs_shown(actor), c->actor);
        gms_manage_undo(t, g, gms->url, gms_id, why);
        goto done;
    }

    if (gms_manage_expires(json_object_get(meta, "expiresAt"), &expires)
        != 0)
    {
        gms_manage_undo(t, g, gms->url, gms_id,
                        "GMS's metadata.expiresAt is neither milliseconds "
                        "since the epoch nor null");
        goto done;
    }

    /* as 'put' writes it; expiresAt is DataHub's, as sync writes it */
    memset(&tok, 0, sizeof(gms_tool_token_t));
    tok.actor = c->actor;
    tok.actor_len = strlen(c->actor);
    tok.expires_at = expires;
    tok.created_at = gms_tool_redis_now_ms();
    tok.type = c->type;

    /* the id published: an edge drops a miss it may have cached for it */
    if (gms_tool_redis_put_token(t, id, &tok, &put_rc) != 0
        || gms_tool_redis_publish(t, id, GMS_TOKEN_ID_LEN) != 0)
    {
        if (gms_tool_conn_peer_error(t->conn) == NULL) {
            (void) gms_tool_redis_uncache(t, id);
        }

        gms_manage_undo(t, g, gms->url, gms_id,
                        "the token could not be cached");
        rc = GMS_TOOL_REDIS;
        goto done;
    }

    fwrite(token, 1, token_len, stdout);
    fputc('\n', stdout);

    rc = GMS_TOOL_OK;

done:

    json_decref(res);
    gms_graphql_close(g);

    return rc;
}


/*
 * createAccessToken asked, its data.createAccessToken, or NULL once the
 * failure is reported.  GMS up to 1.7.0.1 has no durationIso: graphql-
 * java refuses the variable before any resolver runs ("... contains a
 * field name 'durationIso' that is not defined for input object type
 * 'CreateAccessTokenInput'"), and is asked again for the
 * AccessTokenDuration of the same length, if there is one.  A later GMS
 * refuses a duration its AccessTokenConfiguration does not allow
 * (AccessTokenDurationPolicy: an IllegalArgumentException, the 400
 * BAD_REQUEST of DataHubDataFetcherExceptionHandler): one line saying
 * so.
 */

static json_t *
gms_manage_create_ask(gms_tool_t *t, gms_graphql_t *g,
    gms_manage_create_t *c)
{
    json_t      *vars, *input, *res, *errors, *e;
    json_int_t   code;
    const char  *message;

    input = json_pack("{s:s, s:s, s:s}", "type", c->type,
                      "actorUrn", c->actor, "name", c->name);

    if (input && c->duration_iso) {
        json_object_set_new(input, "durationIso",
                            json_string(c->duration_iso));

    } else if (input) {
        json_object_set_new(input, "duration", json_string(c->duration));
    }

    if (input && c->description) {
        json_object_set_new(input, "description",
                            json_string(c->description));
    }

    vars = input ? json_pack("{s:o}", "input", input) : NULL;

    if (vars == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return NULL;
    }

    res = gms_graphql_query_errors(g, GMS_MANAGE_CREATE_QUERY, vars,
                                   "createAccessToken", &errors);
    if (res != NULL || errors == NULL) {
        return res;
    }

    e = json_array_get(errors, 0);
    message = json_string_value(json_object_get(e, "message"));
    code = json_integer_value(json_object_get(json_object_get(e,
                                                              "extensions"),
                                              "code"));
    if (message == NULL) {
        message = "";
    }

    if (c->duration_iso && strstr(message, "'durationIso'")) {

        if (c->duration == NULL) {
            gms_tool_msgs_error(t, "--duration %s: this GMS takes no ISO-8601 "
                                "duration (durationIso: DataHub after 1.7.0.1) "
                                "and no AccessTokenDuration is that long; give "
                                "ONE_HOUR, ONE_DAY, ONE_WEEK, ONE_MONTH, "
                                "THREE_MONTHS, SIX_MONTHS or ONE_YEAR",
                                c->duration_iso);
            json_decref(errors);
            return NULL;
        }

        json_decref(errors);
        c->duration_iso = NULL;

        return gms_manage_create_ask(t, g, c);
    }

    if (code == 400
        && (strstr(message, "uration") || strstr(message, "NO_EXPIRY")))
    {
        gms_tool_msgs_error(t, "--duration %s: GMS does not allow it "
                            "(ACCESS_TOKEN_ALLOWED_DURATIONS, "
                            "ACCESS_TOKEN_ALLOW_NO_EXPIRY): %s",
                            c->duration_iso ? c->duration_iso : c->duration,
                            message);
        json_decref(errors);
        return NULL;
    }

    gms_graphql_report(g, errors);
    json_decref(errors);

    return NULL;
}


static int
gms_cmd_revoke_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    int                 rc;
    gms_graphql_conf_t  gms;

    if (gms_tool_input_check_id(t, a->argv[0]) != 0) {
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_GMS_TOKEN_FILE] || a->val[GMS_OPT_GMS_CA_FILE]
        || a->val[GMS_OPT_GMS_TIMEOUT] || a->val[GMS_OPT_GMS])
    {
        if (gms_tool_options_gms(t, a, &gms) != 0) {
            return GMS_TOOL_USAGE;
        }

        return gms_manage_revoke(t, &gms, a->argv[0]);
    }

    rc = gms_tool_redis_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    switch (gms_tool_redis_uncache(t, a->argv[0])) {
    case 1:
        return GMS_TOOL_OK;
    case 0:
        gms_tool_msgs_error(t, "token id %s is not cached", a->argv[0]);
        return GMS_TOOL_NOT_FOUND;
    default:
        return GMS_TOOL_REDIS;
    }
}


/*
 * revokeAccessToken, then the key deleted and the id published: when GMS
 * refuses, the cache keeps the token, which GMS still takes.
 */

static int
gms_manage_revoke(gms_tool_t *t, const gms_graphql_conf_t *gms,
    const char *id)
{
    int             rc;
    gms_graphql_t  *g;

    /*
     * Redis is reached before GMS is asked: a token revoked at GMS that
     * could not be deleted from the cache would still pass at the edges.
     */
    rc = gms_manage_open(t, gms, &g);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    rc = gms_manage_revoke_at_gms(t, g, id);
    gms_graphql_close(g);

    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    if (gms_tool_redis_uncache(t, id) < 0) {
        gms_tool_msgs_error(t, "GMS revoked token id %s, but the cache still "
                            "has it: run 'gms-token revoke %s'", id, id);
        return GMS_TOOL_REDIS;
    }

    return GMS_TOOL_OK;
}


static int
gms_manage_revoke_at_gms(gms_tool_t *t, gms_graphql_t *g, const char *id)
{
    int      ok;
    json_t  *vars, *data;

    vars = json_pack("{s:s}", "tokenId", id);
    if (vars == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    data = gms_graphql_query(g, GMS_MANAGE_REVOKE_QUERY, vars, NULL);
    if (data == NULL) {
        return GMS_TOOL_GMS;
    }

    ok = json_is_true(json_object_get(data, "revokeAccessToken"));
    json_decref(data);

    if (!ok) {
        gms_tool_msgs_error(t, "GMS did not revoke token id %s: "
                            "revokeAccessToken is not true", id);
        return GMS_TOOL_GMS;
    }

    return GMS_TOOL_OK;
}


/* a token GMS made but nobody will be given: revoked, and one line said */

static void
gms_manage_undo(gms_tool_t *t, gms_graphql_t *g, const char *gms_url,
    const char *id, const char *why)
{
    if (id != NULL && gms_manage_revoke_at_gms(t, g, id) == GMS_TOOL_OK) {
        gms_tool_msgs_error(t, "%s; the new token was revoked at GMS and is "
                            "not printed", why);
        return;
    }

    if (id != NULL) {
        gms_tool_msgs_error(t, "%s; the new token is not printed, and it "
                            "could not be revoked: run 'gms-token revoke "
                            "--gms %s %s'", why, gms_url, id);
        return;
    }

    gms_tool_msgs_error(t, "%s; the new token is not printed: revoke it in "
                        "DataHub (Settings, Access Tokens)", why);
}


/* DataHub's expiresAt: milliseconds since the epoch, null for never */

static int
gms_manage_expires(json_t *v, int64_t *ms)
{
    *ms = 0;

    if (v == NULL || json_is_null(v)) {
        return 0;
    }

    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        return -1;
    }

    *ms = json_integer_value(v);

    return 0;
}


static int
gms_cmd_list_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    long                page_size;
    gms_graphql_conf_t  gms;

    if (gms_tool_options_gms(t, a, &gms) != 0
        || gms_tool_options_page_size(t, a, &page_size) != 0)
    {
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_ACTOR]
        && gms_tool_input_check_actor(t, a->val[GMS_OPT_ACTOR]) != 0)
    {
        return GMS_TOOL_USAGE;
    }

    return gms_manage_list(t, &gms, a->val[GMS_OPT_ACTOR], page_size);
}


/*
 * Every token DataHub lists, one line each, in DataHub's order:
 *
 *   ID TAB MARK TAB ACTOR TAB EXPIRES_AT TAB NAME
 *
 * MARK: ok, missing, stale (the cached user or expiry is not DataHub's) or
 * expired; EXPIRES_AT: milliseconds since the epoch or "never"; NAME with
 * '\' as "\\" and control characters as "\xHH".
 */

static int
gms_manage_list(gms_tool_t *t, const gms_graphql_conf_t *gms,
    const char *actor, long page_size)
{
    int             rc;
    char           *key;
    size_t          i, n, key_len;
    json_t         *all, *v;
    int64_t         now, expires;
    redisReply     *reply;
    gms_graphql_t  *g;

    rc = gms_manage_open(t, gms, &g);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    all = json_array();
    if (all == NULL) {
        gms_graphql_close(g);
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    rc = gms_manage_list_fetch(t, g, actor, page_size, all);
    gms_graphql_close(g);

    if (rc != GMS_TOOL_OK) {
        json_decref(all);
        return rc;
    }

    n = json_array_size(all);

    for (i = 0; i < n; i++) {
        v = json_object_get(json_array_get(all, i), "id");

        key = gms_tool_redis_key(t, GMS_KEY_TOKEN, json_string_value(v),
                                 GMS_TOKEN_ID_LEN, &key_len);
        if (key == NULL) {
            json_decref(all);
            return GMS_TOOL_REDIS;
        }

        gms_tool_conn_append(t, "HMGET %b actor expiresAt", key, key_len);
        free(key);
    }

    now = gms_tool_redis_now_ms();

    for (i = 0; i < n; i++) {
        (void) gms_tool_conn_get_reply(t, &reply);

        if (gms_tool_redis_reply_error(t, reply, "HMGET") != 0) {
            json_decref(all);
            return GMS_TOOL_REDIS;
        }

        v = json_array_get(all, i);
        (void) gms_manage_expires(json_object_get(v, "expiresAt"), &expires);

        printf("%s\t%s\t%s\t", json_string_value(json_object_get(v, "id")),
               gms_manage_mark(reply, v, now),
               json_string_value(json_object_get(v, "actorUrn")));

        if (expires) {
            printf("%lld\t", (long long) expires);

        } else {
            fputs("never\t", stdout);
        }

        gms_manage_print_name(json_string_value(json_object_get(v, "name")));
        fputc('\n', stdout);

        freeReplyObject(reply);
    }

    json_decref(all);

    return GMS_TOOL_OK;
}


static int
gms_manage_list_fetch(gms_tool_t *t, gms_graphql_t *g, const char *actor,
    long page_size, json_t *all)
{
    size_t       i, before;
    json_t      *vars, *filters, *list, *tokens, *total;
    json_int_t   start, last;

    start = 0;

    for ( ;; ) {
        filters = actor ? json_pack("[{s:s, s:[s]}]", "field", "actorUrn",
                                    "values", actor)
                        : json_array();

        vars = filters ? json_pack("{s:{s:I, s:I, s:o}}", "input",
                                   "start", start,
                                   "count", (json_int_t) page_size,
                                   "filters", filters)
                       : NULL;

        if (vars == NULL) {
            gms_tool_msgs_error(t, "out of memory");
            return GMS_TOOL_REDIS;
        }

        list = gms_graphql_query(g, GMS_MANAGE_LIST_QUERY, vars,
                                 "listAccessTokens");
        if (list == NULL) {
            return GMS_TOOL_GMS;
        }

        tokens = json_object_get(list, "tokens");
        total = json_object_get(list, "total");

        if (!json_is_array(tokens) || !json_is_integer(total)) {
            gms_tool_msgs_error(t, "GMS's listAccessTokens at %lld has no "
                                "tokens array or no total", (long long) start);
            json_decref(list);
            return GMS_TOOL_GMS;
        }

        before = json_array_size(all);

        for (i = 0; i < json_array_size(tokens); i++) {
            if (gms_manage_list_token(t, json_array_get(tokens, i),
                                      before + i)
                != 0)
            {
                json_decref(list);
                return GMS_TOOL_GMS;
            }
        }

        json_array_extend(all, tokens);
        last = json_integer_value(total);
        json_decref(list);

        if (json_array_size(all) == before
            || (json_int_t) json_array_size(all) >= last)
        {
            return GMS_TOOL_OK;
        }

        start += json_array_size(all) - before;
    }
}


/* a listed token as sync takes it; its name may be anything, or absent */

static int
gms_manage_list_token(gms_tool_t *t, json_t *v, size_t n)
{
    int64_t   ms;
    json_t   *id, *actor;

    id = json_object_get(v, "id");
    actor = json_object_get(v, "actorUrn");

    if (!json_is_string(id)
        || !gms_token_id_valid(json_string_value(id), json_string_length(id)))
    {
        gms_tool_msgs_error(t, "GMS's token %zu has no id (base64 of 32 bytes)",
                            n + 1);
        return -1;
    }

    if (!json_is_string(actor)
        || !gms_token_actor_valid(json_string_value(actor),
                                  json_string_length(actor)))
    {
        gms_tool_msgs_error(t, "GMS's token id %s has no actorUrn (a user URN)",
                            json_string_value(id));
        return -1;
    }

    if (gms_manage_expires(json_object_get(v, "expiresAt"), &ms) != 0) {
        gms_tool_msgs_error(t, "GMS's token id %s: expiresAt is neither "
                            "milliseconds since the epoch nor null",
                            json_string_value(id));
        return -1;
    }

    return 0;
}


/* what the cache has for a listed token: HMGET actor expiresAt */

static const char *
gms_manage_mark(redisReply *reply, json_t *v, int64_t now)
{
    char           ms[24];
    int64_t        expires;
    const char    *actor;
    redisReply    *a, *e;

    (void) gms_manage_expires(json_object_get(v, "expiresAt"), &expires);

    if (expires != 0 && expires <= now) {
        return "expired";
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        return "stale";
    }

    a = reply->element[0];
    e = reply->element[1];

    if (a->type == REDIS_REPLY_NIL) {
        return "missing";
    }

    actor = json_string_value(json_object_get(v, "actorUrn"));

    if (a->type != REDIS_REPLY_STRING || a->len != strlen(actor)
        || memcmp(a->str, actor, a->len) != 0)
    {
        return "stale";
    }

    if (expires == 0) {
        return e->type == REDIS_REPLY_NIL ? "ok" : "stale";
    }

    snprintf(ms, sizeof(ms), "%lld", (long long) expires);

    if (e->type != REDIS_REPLY_STRING || e->len != strlen(ms)
        || memcmp(e->str, ms, e->len) != 0)
    {
        return "stale";
    }

    return "ok";
}


static void
gms_manage_print_name(const char *s)
{
    unsigned char  c;

    if (s == NULL) {
        return;
    }

    for ( /* void */ ; *s; s++) {
        c = (unsigned char) *s;

        if (c == '\\') {
            fputs("\\\\", stdout);

        } else if (c < 0x20 || c == 0x7f) {
            printf("\\x%02x", c);

        } else {
            fputc(c, stdout);
        }
    }
}


static int
gms_cmd_check_salt_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    int                 rc;
    char                buf[sizeof("Bearer ") + GMS_TOKEN_MAX_LEN + 8];
    char               *salt;
    size_t              salt_len, token_len;
    const char         *token;
    gms_graphql_conf_t  gms;

    if (gms_tool_options_gms(t, a, &gms) != 0) {
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_TOKEN_STDIN] == NULL) {
        gms_tool_msgs_error(t, "--token-stdin is required: the token is read "
                            "on stdin, never from the command line");
        return GMS_TOOL_USAGE;
    }

    rc = gms_tool_options_salt(t, a, &salt, &salt_len);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    rc = gms_tool_input_token_read(t, buf, sizeof(buf), &token, &token_len);

    if (rc == GMS_TOOL_OK) {
        rc = gms_manage_check_salt(t, &gms, token, token_len, salt,
                                        salt_len);
    }

    OPENSSL_cleanse(buf, sizeof(buf));
    OPENSSL_cleanse(salt, salt_len);
    free(salt);

    return rc;
}


/*
 * getAccessTokenMetadata: GMS hashes the token with its own salt; the
 * edge's salt is right when it gives the same id.  The answer is one line
 * on stdout; exit status 1 when the salt is wrong.
 */

static int
gms_manage_check_salt(gms_tool_t *t, const gms_graphql_conf_t *gms,
    const char *token, size_t token_len, const char *salt, size_t salt_len)
{
    int             rc;
    char            id[GMS_TOKEN_ID_LEN + 1];
    json_t         *vars, *meta, *v;
    const char     *gms_id, *actor;
    gms_graphql_t  *g;

    gms_token_id((const unsigned char *) token, token_len,
                 (const unsigned char *) salt, salt_len, id);

    if (id[0] == '\0') {
        gms_tool_msgs_error(t, "cannot compute SHA-256");
        return GMS_TOOL_REDIS;
    }

    g = gms_graphql_open(t, gms);
    if (g == NULL) {
        return GMS_TOOL_GMS;
    }

    vars = json_pack("{s:s%}", "token", token, token_len);
    if (vars == NULL) {
        gms_graphql_close(g);
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    meta = gms_graphql_query(g, GMS_MANAGE_METADATA_QUERY, vars,
                             "getAccessTokenMetadata");
    gms_graphql_close(g);

    if (meta == NULL) {
        return GMS_TOOL_GMS;
    }

    v = json_object_get(meta, "id");

    if (!json_is_string(v)
        || !gms_token_id_valid(json_string_value(v), json_string_length(v)))
    {
        gms_tool_msgs_error(t, "GMS's answer has no metadata id (base64 of 32 "
                            "bytes)");
        json_decref(meta);
        return GMS_TOOL_GMS;
    }

    gms_id = json_string_value(v);
    actor = json_string_value(json_object_get(meta, "actorUrn"));

    if (strcmp(id, gms_id) == 0) {
        printf("salt right: the token's id is %s, as GMS's (token of %s)\n",
               id, actor ? gms_tool_msgs_shown(actor) : "an unnamed user");
        rc = GMS_TOOL_OK;

    } else {
        printf("salt wrong: it gives the id %s, GMS's is %s: the edge "
               "refuses every token; give it GMS's salt "
               "(authentication.tokenService.salt)\n", id, gms_id);
        rc = GMS_TOOL_NOT_FOUND;
    }

    json_decref(meta);

    return rc;
}


/*
 * gms-token: the command line and the commands that edit one entry
 * (connecting and the writes are in gms_tool_redis.c, the connection
 * itself in gms_tool_conn.c, --sentinel in gms_tool_sentinel.c, sync in
 * gms_token_sync.c, follow in gms_token_follow.c, create, list,
 * check-salt and revoke --gms in gms_token_manage.c).  The token id, its
 * validation, the key layout and the lookup script come from
 * src/gms_token.c, so the tool writes and reads exactly what the module
 * reads.
 */


#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "gms_tool.h"
#include "gms_graphql.h"


#define GMS_TOOL_FILE_MAX      65536

/* grant: how often a set changed by another writer is read again */
#define GMS_TOOL_GRANT_TRIES   5

#define GMS_TOOL_CONN_USAGE                                                   \
    "\nConnection options:\n"                                                 \
    "  --redis ADDR          host:port, [ipv6]:port or unix:/path "           \
    "(default\n"                                                              \
    "                        127.0.0.1:6379); a name is resolved at each\n"   \
    "                        connect\n"                                       \
    "  --password-file FILE  the Redis password, from a file; else the\n"     \
    "                        environment variable GMS_REDIS_PASSWORD\n"       \
    "  --db N                the Redis database (default 0)\n"                \
    "  --prefix STRING       the key prefix (default gms:), as\n"             \
    "                        gms_token_key_prefix\n"                          \
    "  --tls                 TLS to Redis (and to the Sentinels); the\n"      \
    "                        certificate is always verified\n"                \
    "  --tls-ca-file FILE    the CAs to verify it with (default: the\n"       \
    "                        system's)\n"                                     \
    "  --tls-name NAME       the name it must hold, sent as SNI (default:\n"  \
    "                        the host of the address)\n"                      \
    "  --tls-cert FILE       a client certificate, PEM, for mutual TLS\n"     \
    "  --tls-key FILE        its key, PEM, not encrypted\n"                   \
    "  --sentinel ADDR,...   instead of --redis: ask these Sentinels, in\n"   \
    "                        order, for the master, and write there\n"        \
    "  --master NAME         the master's name at the Sentinels\n"           \
    "  --sentinel-password-file FILE\n"                                       \
    "                        the Sentinels' password, from a file\n"


#define GMS_TOOL_GMS_USAGE                                                    \
    "\nGMS options:\n"                                                        \
    "  --gms URL             GMS's base URL (GraphQL at URL/api/graphql)\n"   \
    "  --gms-token-file FILE a token of an account holding Manage All\n"      \
    "                        Access Tokens (and Manage Policies for\n"       \
    "                        --privileges), from a file (never an argument)\n"\
    "  --gms-ca-file FILE    the CAs to verify GMS's TLS certificate with\n"  \
    "                        (default: the system's)\n"                      \
    "  --gms-timeout TIME    a request's time limit (default 30s)\n"


typedef enum {
    GMS_OPT_REDIS = 0,
    GMS_OPT_PASSWORD_FILE,
    GMS_OPT_DB,
    GMS_OPT_PREFIX,
    GMS_OPT_SALT,
    GMS_OPT_SALT_FILE,
    GMS_OPT_ID,
    GMS_OPT_TOKEN_STDIN,
    GMS_OPT_ACTOR,
    GMS_OPT_EXPIRES_AT,
    GMS_OPT_EXPIRES_IN,
    GMS_OPT_TYPE,
    GMS_OPT_PRUNE,
    GMS_OPT_GMS,
    GMS_OPT_GMS_TOKEN_FILE,
    GMS_OPT_GMS_CA_FILE,
    GMS_OPT_GMS_TIMEOUT,
    GMS_OPT_PAGE_SIZE,
    GMS_OPT_PRIVILEGES,
    GMS_OPT_INTERVAL,
    GMS_OPT_NAME,
    GMS_OPT_DURATION,
    GMS_OPT_DESCRIPTION,
    GMS_OPT_TLS,
    GMS_OPT_TLS_CA_FILE,
    GMS_OPT_TLS_CERT,
    GMS_OPT_TLS_KEY,
    GMS_OPT_TLS_NAME,
    GMS_OPT_SENTINEL,
    GMS_OPT_MASTER,
    GMS_OPT_SENTINEL_PASSWORD_FILE,
    GMS_OPT_HELP,
    GMS_OPT_N
} gms_tool_opt_e;

#define GMS_OPT(o)             ((uint64_t) 1 << (o))
#define GMS_OPTS_CONN          (GMS_OPT(GMS_OPT_REDIS)                        \
                                | GMS_OPT(GMS_OPT_PASSWORD_FILE)              \
                                | GMS_OPT(GMS_OPT_DB)                         \
                                | GMS_OPT(GMS_OPT_PREFIX)                     \
                                | GMS_OPT(GMS_OPT_TLS)                        \
                                | GMS_OPT(GMS_OPT_TLS_CA_FILE)                \
                                | GMS_OPT(GMS_OPT_TLS_CERT)                   \
                                | GMS_OPT(GMS_OPT_TLS_KEY)                    \
                                | GMS_OPT(GMS_OPT_TLS_NAME)                   \
                                | GMS_OPT(GMS_OPT_SENTINEL)                   \
                                | GMS_OPT(GMS_OPT_MASTER)                     \
                                | GMS_OPT(GMS_OPT_SENTINEL_PASSWORD_FILE))
#define GMS_OPTS_SALT          (GMS_OPT(GMS_OPT_SALT)                         \
                                | GMS_OPT(GMS_OPT_SALT_FILE))
#define GMS_OPTS_GMS           (GMS_OPT(GMS_OPT_GMS)                          \
                                | GMS_OPT(GMS_OPT_GMS_TOKEN_FILE)             \
                                | GMS_OPT(GMS_OPT_GMS_CA_FILE)                \
                                | GMS_OPT(GMS_OPT_GMS_TIMEOUT))


typedef struct {
    const char            *val[GMS_OPT_N];     /* NULL: not given */
    int                    argc;
    char                 **argv;
} gms_tool_args_t;


typedef struct {
    const char            *name;
    int                  (*handler)(gms_tool_t *t, gms_tool_args_t *a);
    uint64_t               options;
    int                    min_args;
    int                    max_args;           /* -1: no limit */
    const char            *usage;
} gms_tool_command_t;


static int gms_tool_main(int argc, char **argv, char **args);
static int gms_tool_id(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_put(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_revoke(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_show(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_grant(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_deny(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_privileges(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_sync_command(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_create(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_list(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_check_salt(gms_tool_t *t, gms_tool_args_t *a);
static void gms_tool_vline(gms_tool_t *t, const char *fmt, va_list args);
static int gms_tool_gms_options(gms_tool_t *t, gms_tool_args_t *a,
    gms_graphql_conf_t *gms);
static int gms_tool_privileges_option(gms_tool_t *t, const char *value,
    gms_tool_privileges_e *mode);
static int gms_tool_follow_command(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_page_size(gms_tool_t *t, gms_tool_args_t *a,
    long *page_size);
static int gms_tool_conn_options(gms_tool_t *t, gms_tool_args_t *a);

static int gms_tool_salt(gms_tool_t *t, gms_tool_args_t *a, char **salt,
    size_t *len);
static int gms_tool_token_stdin(gms_tool_t *t, const char *salt,
    size_t salt_len, char id[GMS_TOKEN_ID_LEN + 1]);
static int gms_tool_token_read(gms_tool_t *t, char *buf, size_t size,
    const char **token, size_t *token_len);
static int gms_tool_page_size(gms_tool_t *t, gms_tool_args_t *a,
    long *page_size);
static int gms_tool_privileges_edit(gms_tool_t *t, gms_tool_args_t *a,
    const char *verb);
static int gms_tool_grant_capped(gms_tool_t *t, gms_tool_args_t *a, int n,
    const char **argv, const size_t *lens);
static int gms_tool_reply_cmp(const void *one, const void *two);


static const struct option  gms_tool_long_options[] = {
    { "redis",         required_argument, NULL, 256 + GMS_OPT_REDIS },
    { "password-file", required_argument, NULL, 256 + GMS_OPT_PASSWORD_FILE },
    { "db",            required_argument, NULL, 256 + GMS_OPT_DB },
    { "prefix",        required_argument, NULL, 256 + GMS_OPT_PREFIX },
    { "salt",          required_argument, NULL, 256 + GMS_OPT_SALT },
    { "salt-file",     required_argument, NULL, 256 + GMS_OPT_SALT_FILE },
    { "id",            required_argument, NULL, 256 + GMS_OPT_ID },
    { "token-stdin",   no_argument,       NULL, 256 + GMS_OPT_TOKEN_STDIN },
    { "actor",         required_argument, NULL, 256 + GMS_OPT_ACTOR },
    { "expires-at",    required_argument, NULL, 256 + GMS_OPT_EXPIRES_AT },
    { "expires-in",    required_argument, NULL, 256 + GMS_OPT_EXPIRES_IN },
    { "type",          required_argument, NULL, 256 + GMS_OPT_TYPE },
    { "prune",         no_argument,       NULL, 256 + GMS_OPT_PRUNE },
    { "gms",           required_argument, NULL, 256 + GMS_OPT_GMS },
    { "gms-token-file", required_argument, NULL,
      256 + GMS_OPT_GMS_TOKEN_FILE },
    { "gms-ca-file",   required_argument, NULL, 256 + GMS_OPT_GMS_CA_FILE },
    { "gms-timeout",   required_argument, NULL, 256 + GMS_OPT_GMS_TIMEOUT },
    { "page-size",     required_argument, NULL, 256 + GMS_OPT_PAGE_SIZE },
    { "privileges",    required_argument, NULL, 256 + GMS_OPT_PRIVILEGES },
    { "interval",      required_argument, NULL, 256 + GMS_OPT_INTERVAL },
    { "name",          required_argument, NULL, 256 + GMS_OPT_NAME },
    { "duration",      required_argument, NULL, 256 + GMS_OPT_DURATION },
    { "description",   required_argument, NULL, 256 + GMS_OPT_DESCRIPTION },
    { "tls",           no_argument,       NULL, 256 + GMS_OPT_TLS },
    { "tls-ca-file",   required_argument, NULL, 256 + GMS_OPT_TLS_CA_FILE },
    { "tls-cert",      required_argument, NULL, 256 + GMS_OPT_TLS_CERT },
    { "tls-key",       required_argument, NULL, 256 + GMS_OPT_TLS_KEY },
    { "tls-name",      required_argument, NULL, 256 + GMS_OPT_TLS_NAME },
    { "sentinel",      required_argument, NULL, 256 + GMS_OPT_SENTINEL },
    { "master",        required_argument, NULL, 256 + GMS_OPT_MASTER },
    { "sentinel-password-file", required_argument, NULL,
      256 + GMS_OPT_SENTINEL_PASSWORD_FILE },
    { "help",          no_argument,       NULL, 256 + GMS_OPT_HELP },
    { NULL, 0, NULL, 0 }
};


static const char  gms_tool_usage[] =
    "Usage: gms-token COMMAND [OPTIONS] [ARGS]\n"
    "\n"
    "Fills and inspects the Redis cache that ngx_http_gms_module reads.\n"
    "\n"
    "Commands:\n"
    "  id          print the id of a token read on stdin\n"
    "  put         cache a token: its id, user, expiry and type\n"
    "  revoke      delete a cached token\n"
    "  show        print a cached token, with its user's privileges, "
    "as JSON\n"
    "  grant       add privileges to a user\n"
    "  deny        remove privileges from a user\n"
    "  privileges  print a user's privileges\n"
    "  sync        make the cached tokens those DataHub lists "
    "(listAccessTokens),\n"
    "              and with --gms users' privileges those its policies "
    "grant\n"
    "  create      have GMS make a token, cache it, print it\n"
    "  list        print the tokens DataHub lists, marking those not "
    "cached\n"
    "  check-salt  tell whether the salt gives GMS's id of a token\n"
    "  follow      sync tokens and privileges from GMS every interval, "
    "until\n"
    "              stopped\n"
    "\n"
    "'gms-token COMMAND --help' describes a command and its options.\n"
    "Exit status: 0 ok, 1 not found, 2 usage or bad input, 3 Redis error,\n"
    "4 GMS error.\n";


static const gms_tool_command_t  gms_tool_commands[] = {

    { "id", gms_tool_id, GMS_OPTS_SALT, 0, 0,
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
      "dropped)\n" },

    { "put", gms_tool_put,
      GMS_OPTS_CONN | GMS_OPTS_SALT | GMS_OPT(GMS_OPT_ID)
      | GMS_OPT(GMS_OPT_TOKEN_STDIN) | GMS_OPT(GMS_OPT_ACTOR)
      | GMS_OPT(GMS_OPT_EXPIRES_AT) | GMS_OPT(GMS_OPT_EXPIRES_IN)
      | GMS_OPT(GMS_OPT_TYPE), 0, 0,
      "Usage: gms-token put (--id ID | --token-stdin) --actor URN\n"
      "                     [--expires-at MS | --expires-in DURATION]\n"
      "                     [--type PERSONAL|SESSION] [connection options]\n"
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
      "  --type TYPE            PERSONAL or SESSION\n"
      "\n"
      "An expiry already past is refused.\n"
      GMS_TOOL_CONN_USAGE },

    { "revoke", gms_tool_revoke, GMS_OPTS_CONN | GMS_OPTS_GMS, 1, 1,
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
      GMS_TOOL_CONN_USAGE },

    { "show", gms_tool_show, GMS_OPTS_CONN, 1, 1,
      "Usage: gms-token show ID [connection options]\n"
      "\n"
      "Prints the cached token as the module reads it, one line of JSON:\n"
      "{\"id\",\"actor\",\"expiresAt\",\"type\",\"privileges\":[...]}, "
      "expiresAt and\n"
      "type null when absent.  Exit status 1 if it is not cached.\n"
      GMS_TOOL_CONN_USAGE },

    { "grant", gms_tool_grant, GMS_OPTS_CONN, 2, -1,
      "Usage: gms-token grant URN PRIVILEGE... [connection options]\n"
      "\n"
      "Adds privileges (DataHub's names, as GET_ES_TASK_STATUS_PRIVILEGE)\n"
      "to the user's set <prefix>actor:<urn>: every token of the user has\n"
      "them from the next request on.  A set holds at most 256 (the edge\n"
      "answers 503 for a user with more): a grant past that is refused.\n"
      GMS_TOOL_CONN_USAGE },

    { "deny", gms_tool_deny, GMS_OPTS_CONN, 2, -1,
      "Usage: gms-token deny URN PRIVILEGE... [connection options]\n"
      "\n"
      "Removes privileges from the user's set <prefix>actor:<urn>.\n"
      GMS_TOOL_CONN_USAGE },

    { "privileges", gms_tool_privileges, GMS_OPTS_CONN, 1, 1,
      "Usage: gms-token privileges URN [connection options]\n"
      "\n"
      "Prints the user's privileges, one a line, sorted (nothing if none).\n"
      GMS_TOOL_CONN_USAGE },

    { "sync", gms_tool_sync_command,
      GMS_OPTS_CONN | GMS_OPTS_GMS | GMS_OPT(GMS_OPT_PRUNE)
      | GMS_OPT(GMS_OPT_PAGE_SIZE) | GMS_OPT(GMS_OPT_PRIVILEGES), 0, 0,
      "Usage: gms-token sync [--prune] [connection options] < tokens.json\n"
      "       gms-token sync --gms URL [--prune] [--page-size N]\n"
      "                      [--privileges policies|graphql|off] "
      "[GMS options]\n"
      "                      [connection options]\n"
      "\n"
      "With --gms, the pages are asked of GMS itself (listAccessTokens,\n"
      "--page-size tokens a page, default 100); a failed page changes\n"
      "nothing.  Then the users' privileges are mirrored into\n"
      "<prefix>actor:<urn>, for every user holding a token or named in a\n"
      "platform policy (a second line of counts: users, sets changed, sets\n"
      "of users no longer known removed, sets skipped: a user with more\n"
      "than 256 privileges, which the edge refuses, keeps the set it had,\n"
      "with a line on stderr):\n"
      "\n"
      "  --privileges policies  (the default) read listPolicies and match\n"
      "                         the active PLATFORM policies to each user,\n"
      "                         its groups and roles, as DataHub does\n"
      "  --privileges graphql   ask getGrantedPrivileges for each user\n"
      "                         (DataHub 1.0 and later)\n"
      "  --privileges off       leave privileges alone\n"
      "\n"
      "A set is replaced in one transaction, only when it changed; a failed\n"
      "or incomplete listing changes no set.  Without --gms:\n"
      "Caches every token of DataHub's GraphQL listAccessTokens answer read\n"
      "on stdin: {\"data\":{\"listAccessTokens\":{\"total\":T,\"tokens\":"
      "[{\"id\",\n"
      "\"actorUrn\",\"expiresAt\",...}]}}}, several pages as one document "
      "a line.\n"
      "id, actorUrn and expiresAt (null or 0: never) are required; the rest\n"
      "is ignored.  The whole input is checked before anything is written:\n"
      "bad input is reported with its line and changes nothing.  Tokens are\n"
      "written in pipelined batches, each as 'put' would; tokens already\n"
      "expired are deleted.  Prints counts.  Running it again with the same\n"
      "input changes nothing.\n"
      "\n"
      "  --prune  also delete cached tokens that are not in the input; "
      "refused\n"
      "           when the input has fewer tokens than its total says; "
      "tokens\n"
      "           created in the last minute are kept (DataHub's index "
      "lags)\n"
      GMS_TOOL_GMS_USAGE
      GMS_TOOL_CONN_USAGE },

    { "create", gms_tool_create,
      GMS_OPTS_GMS | GMS_OPTS_CONN | GMS_OPTS_SALT | GMS_OPT(GMS_OPT_ACTOR)
      | GMS_OPT(GMS_OPT_NAME) | GMS_OPT(GMS_OPT_DURATION)
      | GMS_OPT(GMS_OPT_DESCRIPTION), 0, 0,
      "Usage: gms-token create --gms URL --actor URN --name NAME\n"
      "                        [--duration DURATION] [--description TEXT]\n"
      "                        [--salt STRING | --salt-file FILE]\n"
      "                        [GMS options] [connection options]\n"
      "\n"
      "Has GMS make a personal access token for the user "
      "(createAccessToken;\n"
      "for another user than --gms-token-file's, that account needs "
      "Manage\n"
      "All Access Tokens), caches it as 'put' would (type PERSONAL, "
      "DataHub's\n"
      "expiry), tells the edges to forget any miss for its id, and only then\n"
      "prints the token: once, on stdout, nothing else there.  The edges\n"
      "take it at once.\n"
      "\n"
      "  --actor URN          the token's user: urn:li:corpuser:...\n"
      "  --name NAME          the token's name in DataHub\n"
      "  --description TEXT   its description\n"
      "  --duration DURATION  ONE_HOUR, ONE_DAY, ONE_WEEK, ONE_MONTH "
      "(default),\n"
      "                       THREE_MONTHS, SIX_MONTHS, ONE_YEAR or "
      "NO_EXPIRY\n"
      "                       (DataHub's AccessTokenDuration; older "
      "releases\n"
      "                       lack ONE_WEEK)\n"
      "  --salt STRING        the edge's salt, as gms_token_salt (default: "
      "none)\n"
      "  --salt-file FILE     the salt, from a file\n"
      "\n"
      "The id the salt gives the new token must be GMS's own: else the edge\n"
      "would refuse it, and the token is revoked at GMS, not printed, and\n"
      "the exit status is 2.  Whenever the token cannot be cached (exit\n"
      "status 3) or GMS's answer is unusable (4), it is revoked too.\n"
      GMS_TOOL_GMS_USAGE
      GMS_TOOL_CONN_USAGE },

    { "list", gms_tool_list,
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
      GMS_TOOL_CONN_USAGE },

    { "check-salt", gms_tool_check_salt,
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
      GMS_TOOL_GMS_USAGE },

    { "follow", gms_tool_follow_command,
      GMS_OPTS_CONN | GMS_OPTS_GMS | GMS_OPT(GMS_OPT_INTERVAL)
      | GMS_OPT(GMS_OPT_PAGE_SIZE) | GMS_OPT(GMS_OPT_PRIVILEGES), 0, 0,
      "Usage: gms-token follow --gms URL [--interval TIME] [--page-size N]\n"
      "                        [--privileges policies|graphql|off] "
      "[GMS options]\n"
      "                        [connection options]\n"
      "\n"
      "Runs until SIGTERM, SIGINT or SIGQUIT, then exits 0.  Every interval:\n"
      "'sync --gms URL --prune', then the users' privileges mirrored as\n"
      "--privileges says.  The first cycle runs at once, the next one an\n"
      "interval after the last ended, give or take 10%.  A failed cycle (GMS\n"
      "or Redis) never prunes, and is retried after twice the last wait, up\n"
      "to 5 minutes (or the interval if longer).  Each cycle is one line: on\n"
      "stdout with its counts, or on stderr with its error.  The hash\n"
      "<prefix>sync holds at (the last complete cycle, ms since the epoch),\n"
      "tokens, users, interval, and error, error_at, failures (of the last\n"
      "failure; error \"\" and failures 0 after a success).  Every token\n"
      "or user changed is published on <prefix>invalidate.  The GMS token\n"
      "file is read again at each cycle.\n"
      "\n"
      "  --interval TIME     between cycles: 15s (default), 1m, 1h; at "
      "least 1s\n"
      "  --page-size N       tokens asked a page (default 100)\n"
      "  --privileges MODE   policies (default): DataHub's policies, "
      "matched here;\n"
      "                      graphql: asked of GMS for each user; off: "
      "tokens only\n"
      GMS_TOOL_GMS_USAGE
      GMS_TOOL_CONN_USAGE },

    { NULL, NULL, 0, 0, 0, NULL }
};


int
main(int argc, char **argv)
{
    int     rc;
    char  **args;

    /* the operands, in order: freed whichever way the command ends */

    args = calloc(argc + 1, sizeof(char *));
    if (args == NULL) {
        fputs("gms-token: out of memory\n", stderr);
        return GMS_TOOL_REDIS;
    }

    rc = gms_tool_main(argc, argv, args);

    free(args);

    return rc;
}


static int
gms_tool_main(int argc, char **argv, char **args)
{
    int                        c, nargs, rc;
    gms_tool_t                 t;
    gms_tool_args_t            a;
    const gms_tool_command_t  *cmd;

    memset(&t, 0, sizeof(gms_tool_t));
    memset(&a, 0, sizeof(gms_tool_args_t));

    nargs = 0;
    opterr = 0;

    /* "-": operands come back in order, whatever POSIXLY_CORRECT says */
    while ((c = getopt_long(argc, argv, "-:", gms_tool_long_options, NULL))
           != -1)
    {
        if (c == 1) {
            args[nargs++] = optarg;
            continue;
        }

        if (c == ':') {
            gms_tool_error(&t, "option '%s' needs a value",
                           gms_tool_shown(argv[optind - 1]));
            return GMS_TOOL_USAGE;
        }

        if (c < 256 || c >= 256 + GMS_OPT_N) {
            gms_tool_error(&t, "unknown option '%s'; see 'gms-token --help'",
                           gms_tool_shown(argv[optind - 1]));
            return GMS_TOOL_USAGE;
        }

        a.val[c - 256] = optarg ? optarg : "";
    }

    while (optind < argc) {
        args[nargs++] = argv[optind++];
    }

    if (nargs == 0) {
        if (a.val[GMS_OPT_HELP]) {
            fputs(gms_tool_usage, stdout);
            return GMS_TOOL_OK;
        }

        gms_tool_error(&t, "no command; see 'gms-token --help'");
        return GMS_TOOL_USAGE;
    }

    for (cmd = gms_tool_commands; cmd->name; cmd++) {
        if (strcmp(cmd->name, args[0]) == 0) {
            break;
        }
    }

    if (cmd->name == NULL) {
        gms_tool_error(&t, "unknown command '%s'; see 'gms-token --help'",
                       gms_tool_shown(args[0]));
        return GMS_TOOL_USAGE;
    }

    t.command = cmd->name;

    if (a.val[GMS_OPT_HELP]) {
        fputs(cmd->usage, stdout);
        return GMS_TOOL_OK;
    }

    for (c = 0; c < GMS_OPT_N; c++) {
        if (a.val[c] && !(cmd->options & GMS_OPT(c))) {
            gms_tool_error(&t, "--%s is not an option of %s; see "
                           "'gms-token %s --help'",
                           gms_tool_long_options[c].name, cmd->name,
                           cmd->name);
            return GMS_TOOL_USAGE;
        }
    }

    a.argc = nargs - 1;
    a.argv = args + 1;

    if (a.argc < cmd->min_args
        || (cmd->max_args >= 0 && a.argc > cmd->max_args))
    {
        gms_tool_error(&t, "%s arguments; see 'gms-token %s --help'",
                       a.argc < cmd->min_args ? "missing" : "too many",
                       cmd->name);
        return GMS_TOOL_USAGE;
    }

    if (gms_tool_conn_options(&t, &a) != 0) {
        return GMS_TOOL_USAGE;
    }

    rc = cmd->handler(&t, &a);

    gms_tool_close(&t);

    if (rc == GMS_TOOL_OK && (fflush(stdout) != 0 || ferror(stdout))) {
        gms_tool_error(&t, "cannot write to stdout: %s", strerror(errno));
        return GMS_TOOL_REDIS;
    }

    return rc;
}


static int
gms_tool_id(gms_tool_t *t, gms_tool_args_t *a)
{
    int     rc;
    char    id[GMS_TOKEN_ID_LEN + 1], *salt;
    size_t  salt_len;

    rc = gms_tool_salt(t, a, &salt, &salt_len);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    rc = gms_tool_token_stdin(t, salt, salt_len, id);

    free(salt);

    if (rc == GMS_TOOL_OK) {
        printf("%s\n", id);
    }

    return rc;
}


static int
gms_tool_put(gms_tool_t *t, gms_tool_args_t *a)
{
    int                 rc;
    char               *key, *salt, id[GMS_TOKEN_ID_LEN + 1];
    size_t              key_len, salt_len;
    int64_t             now, ms;
    const char         *type;
    gms_tool_token_t    tok;
    gms_tool_put_rc_e   put_rc;

    if ((a->val[GMS_OPT_ID] == NULL) == (a->val[GMS_OPT_TOKEN_STDIN] == NULL))
    {
        gms_tool_error(t, "give one of --id and --token-stdin; see "
                       "'gms-token put --help'");
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_ACTOR] == NULL) {
        gms_tool_error(t, "--actor is required; see 'gms-token put --help'");
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_EXPIRES_AT] && a->val[GMS_OPT_EXPIRES_IN]) {
        gms_tool_error(t, "give --expires-at or --expires-in, not both");
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_ID] && (a->val[GMS_OPT_SALT]
                               || a->val[GMS_OPT_SALT_FILE]))
    {
        gms_tool_error(t, "--salt and --salt-file go with --token-stdin, "
                       "not with --id");
        return GMS_TOOL_USAGE;
    }

    if (gms_tool_check_actor(t, a->val[GMS_OPT_ACTOR]) != 0) {
        return GMS_TOOL_USAGE;
    }

    memset(&tok, 0, sizeof(gms_tool_token_t));
    tok.actor = a->val[GMS_OPT_ACTOR];
    tok.actor_len = strlen(tok.actor);

    type = a->val[GMS_OPT_TYPE];

    if (type && strcmp(type, "PERSONAL") != 0 && strcmp(type, "SESSION") != 0)
    {
        gms_tool_error(t, "--type: '%s' is neither PERSONAL nor SESSION",
                       gms_tool_shown(type));
        return GMS_TOOL_USAGE;
    }

    tok.type = type;
    now = gms_tool_now_ms();

    /* for sync --prune's grace period: DataHub may not list it yet */
    tok.created_at = now;

    if (a->val[GMS_OPT_EXPIRES_AT]) {
        if (a->val[GMS_OPT_EXPIRES_AT][0] == '\0'
            || gms_parse_ms(a->val[GMS_OPT_EXPIRES_AT],
                            strlen(a->val[GMS_OPT_EXPIRES_AT]), &ms)
               != 0)
        {
            gms_tool_error(t, "--expires-at: '%s' is not a number of "
                           "milliseconds since the epoch",
                           gms_tool_shown(a->val[GMS_OPT_EXPIRES_AT]));
            return GMS_TOOL_USAGE;
        }

        tok.expires_at = ms;
    }

    if (a->val[GMS_OPT_EXPIRES_IN]) {
        if (gms_tool_parse_duration(a->val[GMS_OPT_EXPIRES_IN], &ms) != 0
            || ms > INT64_MAX - now)
        {
            gms_tool_error(t, "--expires-in: '%s' is not a duration such as "
                           "30d, 12h, 90m, 3600s or 1d12h",
                           gms_tool_shown(a->val[GMS_OPT_EXPIRES_IN]));
            return GMS_TOOL_USAGE;
        }

        tok.expires_at = now + ms;
    }

    if (tok.expires_at != 0 && tok.expires_at <= now) {
        gms_tool_error(t, "the expiry %lld is already past (now %lld): "
                       "nothing to cache", (long long) tok.expires_at,
                       (long long) now);
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_ID]) {
        if (gms_tool_check_id(t, a->val[GMS_OPT_ID]) != 0) {
            return GMS_TOOL_USAGE;
        }

        memcpy(id, a->val[GMS_OPT_ID], GMS_TOKEN_ID_LEN + 1);

    } else {
        rc = gms_tool_salt(t, a, &salt, &salt_len);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }

        rc = gms_tool_token_stdin(t, salt, salt_len, id);

        free(salt);

        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    rc = gms_tool_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    key = gms_tool_key(t, GMS_KEY_TOKEN, id, GMS_TOKEN_ID_LEN, &key_len);
    if (key == NULL) {
        return GMS_TOOL_REDIS;
    }

    gms_tool_put_append(t, key, key_len, &tok);
    free(key);

    if (gms_tool_put_read(t, &tok, &put_rc) != 0) {
        return GMS_TOOL_REDIS;
    }

    /* an edge may hold the id as unknown, or with its old user */

    if (put_rc != GMS_TOOL_UNCHANGED
        && gms_tool_publish(t, id, GMS_TOKEN_ID_LEN) != 0)
    {
        return GMS_TOOL_REDIS;
    }

    printf("%s\n", id);

    return GMS_TOOL_OK;
}


static int
gms_tool_revoke(gms_tool_t *t, gms_tool_args_t *a)
{
    int                 rc;
    gms_graphql_conf_t  gms;

    if (gms_tool_check_id(t, a->argv[0]) != 0) {
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_GMS_TOKEN_FILE] || a->val[GMS_OPT_GMS_CA_FILE]
        || a->val[GMS_OPT_GMS_TIMEOUT] || a->val[GMS_OPT_GMS])
    {
        if (gms_tool_gms_options(t, a, &gms) != 0) {
            return GMS_TOOL_USAGE;
        }

        return gms_tool_manage_revoke(t, &gms, a->argv[0]);
    }

    rc = gms_tool_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    switch (gms_tool_uncache(t, a->argv[0])) {
    case 1:
        return GMS_TOOL_OK;
    case 0:
        gms_tool_error(t, "token id %s is not cached", a->argv[0]);
        return GMS_TOOL_NOT_FOUND;
    default:
        return GMS_TOOL_REDIS;
    }
}


static int
gms_tool_show(gms_tool_t *t, gms_tool_args_t *a)
{
    int               rc;
    char             *key, *actor_key, *out;
    size_t            i, key_len, actor_key_len;
    json_t           *doc, *privileges, *v;
    redisReply       *reply, **sorted;
    gms_lookup_t      lk;
    gms_lookup_rc_e   lrc;

    if (gms_tool_check_id(t, a->argv[0]) != 0) {
        return GMS_TOOL_USAGE;
    }

    rc = gms_tool_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    key = gms_tool_key(t, GMS_KEY_TOKEN, a->argv[0], GMS_TOKEN_ID_LEN,
                       &key_len);
    actor_key = gms_tool_key(t, GMS_KEY_ACTOR, "", 0, &actor_key_len);

    if (key == NULL || actor_key == NULL) {
        free(key);
        return GMS_TOOL_REDIS;
    }

    /* the module's own lookup: what is shown is what the module sees */
    reply = gms_tool_command(t, "EVAL %b 1 %b %b", gms_lookup_script,
                             gms_lookup_script_len, key, key_len, actor_key,
                             actor_key_len);
    free(key);
    free(actor_key);

    if (reply == NULL) {
        gms_tool_reply_error(t, reply, "lookup");
        return GMS_TOOL_REDIS;
    }

    lrc = gms_lookup_reply_parse(reply, &lk);

    if (lrc == GMS_LOOKUP_UNKNOWN) {
        freeReplyObject(reply);
        gms_tool_error(t, "token id %s is not cached", a->argv[0]);
        return GMS_TOOL_NOT_FOUND;
    }

    if (lrc == GMS_LOOKUP_BAD_REPLY) {
        gms_tool_error(t, "redis %s: lookup of token id %s: %s", t->redis,
                       a->argv[0], lk.error);
        freeReplyObject(reply);
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
        gms_tool_error(t, "the cached actor of token id %s is not UTF-8",
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
              gms_tool_reply_cmp);
    }

    for (i = 0; i < lk.nprivileges; i++) {
        v = json_stringn(sorted[i]->str, sorted[i]->len);
        if (v == NULL) {
            gms_tool_error(t, "a cached privilege of %.*s is not UTF-8",
                           (int) lk.actor_len, lk.actor);
            goto done;
        }

        json_array_append_new(privileges, v);
    }

    json_object_set(doc, "privileges", privileges);

    out = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (out == NULL) {
        goto failed;
    }

    printf("%s\n", out);
    rc = GMS_TOOL_OK;
    goto done;

failed:

    gms_tool_error(t, "out of memory");

done:

    free(out);
    free(sorted);
    json_decref(privileges);
    json_decref(doc);
    freeReplyObject(reply);

    return rc;
}


static int
gms_tool_grant(gms_tool_t *t, gms_tool_args_t *a)
{
    return gms_tool_privileges_edit(t, a, "SADD");
}


static int
gms_tool_deny(gms_tool_t *t, gms_tool_args_t *a)
{
    return gms_tool_privileges_edit(t, a, "SREM");
}


static int
gms_tool_privileges_edit(gms_tool_t *t, gms_tool_args_t *a, const char *verb)
{
    int           i, n, rc;
    char         *key;
    size_t        key_len, *lens;
    redisReply   *reply;
    const char  **argv;

    if (gms_tool_check_actor(t, a->argv[0]) != 0) {
        return GMS_TOOL_USAGE;
    }

    for (i = 1; i < a->argc; i++) {
        if (!gms_privilege_valid(a->argv[i], strlen(a->argv[i]))) {
            gms_tool_error(t, "'%s' is not a privilege name: letters, "
                           "digits, '_', '-', '.' and ':', 1 to %d of them",
                           gms_tool_shown(a->argv[i]), GMS_PRIVILEGE_MAX);
            return GMS_TOOL_USAGE;
        }
    }

    rc = gms_tool_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    key = gms_tool_key(t, GMS_KEY_ACTOR, a->argv[0], strlen(a->argv[0]),
                       &key_len);

    n = a->argc + 1;
    argv = malloc(n * sizeof(char *));
    lens = malloc(n * sizeof(size_t));

    if (key == NULL || argv == NULL || lens == NULL) {
        free(key);
        free(argv);
        free(lens);
        gms_tool_error(t, "out of memory");
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
        rc = gms_tool_grant_capped(t, a, n, argv, lens);

    } else {
        reply = gms_tool_command_argv(t, n, argv, lens);
        rc = gms_tool_reply_error(t, reply, verb) != 0 ? GMS_TOOL_REDIS
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

    if (gms_tool_publish(t, a->argv[0], strlen(a->argv[0])) != 0) {
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
gms_tool_grant_capped(gms_tool_t *t, gms_tool_args_t *a, int n,
    const char **argv, const size_t *lens)
{
    int          i, j, try;
    long long    size;
    redisReply  *reply;

    for (try = 0; try < GMS_TOOL_GRANT_TRIES; try++) {
        gms_tool_append(t, "WATCH %b", argv[1], lens[1]);
        gms_tool_append(t, "SCARD %b", argv[1], lens[1]);

        for (i = 2; i < n; i++) {
            gms_tool_append(t, "SISMEMBER %b %b", argv[1], lens[1], argv[i],
                            lens[i]);
        }

        size = 0;

        for (i = 0; i < n; i++) {
            (void) gms_tool_get_reply(t, &reply);

            if (gms_tool_reply_error(t, reply, i == 0 ? "WATCH"
                                               : i == 1 ? "SCARD"
                                               : "SISMEMBER")
                != 0)
            {
                return GMS_TOOL_REDIS;
            }

            if (i > 0 && reply->type != REDIS_REPLY_INTEGER) {
                gms_tool_error(t, "redis %s: %s: unexpected reply type %d",
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
            reply = gms_tool_command(t, "UNWATCH");
            if (reply != NULL) {
                freeReplyObject(reply);
            }

            gms_tool_error(t, "%s would have %lld privileges, more than the "
                           "edge accepts (%d): nothing granted",
                           gms_tool_shown(a->argv[0]), size,
                           GMS_PRIVILEGES_MAX);
            return GMS_TOOL_USAGE;
        }

        gms_tool_append(t, "MULTI");
        gms_tool_append_argv(t, n, argv, lens);
        gms_tool_append(t, "EXEC");

        for (i = 0; i < 2; i++) {
            (void) gms_tool_get_reply(t, &reply);

            if (gms_tool_reply_error(t, reply, "MULTI") != 0) {
                return GMS_TOOL_REDIS;
            }

            freeReplyObject(reply);
        }

        (void) gms_tool_get_reply(t, &reply);

        if (gms_tool_reply_error(t, reply, "EXEC") != 0) {
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
            gms_tool_error(t, "redis %s: SADD: %s", t->redis,
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

    gms_tool_error(t, "redis %s: the set of %s changed under every one of "
                   "%d tries: nothing granted", t->redis,
                   gms_tool_shown(a->argv[0]), GMS_TOOL_GRANT_TRIES);

    return GMS_TOOL_REDIS;
}


static int
gms_tool_privileges(gms_tool_t *t, gms_tool_args_t *a)
{
    int          rc;
    char        *key;
    size_t       i, key_len;
    redisReply  *reply;

    if (gms_tool_check_actor(t, a->argv[0]) != 0) {
        return GMS_TOOL_USAGE;
    }

    rc = gms_tool_connect(t);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    key = gms_tool_key(t, GMS_KEY_ACTOR, a->argv[0], strlen(a->argv[0]),
                       &key_len);
    if (key == NULL) {
        return GMS_TOOL_REDIS;
    }

    reply = gms_tool_command(t, "SMEMBERS %b", key, key_len);
    free(key);

    if (gms_tool_reply_error(t, reply, "SMEMBERS") != 0) {
        return GMS_TOOL_REDIS;
    }

    if (reply->type != REDIS_REPLY_ARRAY) {
        gms_tool_error(t, "redis %s: SMEMBERS: unexpected reply type %d",
                       t->redis, reply->type);
        freeReplyObject(reply);
        return GMS_TOOL_REDIS;
    }

    /* hiredis leaves element NULL for an empty array: no qsort of NULL */
    if (reply->elements > 1) {
        qsort(reply->element, reply->elements, sizeof(redisReply *),
              gms_tool_reply_cmp);
    }

    for (i = 0; i < reply->elements; i++) {
        fwrite(reply->element[i]->str, 1, reply->element[i]->len, stdout);
        fputc('\n', stdout);
    }

    freeReplyObject(reply);

    return GMS_TOOL_OK;
}


static int
gms_tool_sync_command(gms_tool_t *t, gms_tool_args_t *a)
{
    int                           rc;
    long                          page_size;
    gms_graphql_conf_t            gms;
    gms_tool_holders_t            holders;
    gms_tool_sync_counts_t        counts;
    gms_tool_privileges_e         mode;
    gms_tool_privileges_counts_t  privileges;

    memset(&counts, 0, sizeof(gms_tool_sync_counts_t));

    if (a->val[GMS_OPT_GMS] == NULL) {
        if (a->val[GMS_OPT_GMS_TOKEN_FILE] || a->val[GMS_OPT_GMS_CA_FILE]
            || a->val[GMS_OPT_GMS_TIMEOUT] || a->val[GMS_OPT_PAGE_SIZE]
            || a->val[GMS_OPT_PRIVILEGES])
        {
            gms_tool_error(t, "the GMS options, --page-size and --privileges "
                           "need --gms");
            return GMS_TOOL_USAGE;
        }

        rc = gms_tool_sync(t, a->val[GMS_OPT_PRUNE] != NULL, NULL, 0,
                           &counts, NULL);
        goto done;
    }

    if (gms_tool_gms_options(t, a, &gms) != 0
        || gms_tool_page_size(t, a, &page_size) != 0)
    {
        return GMS_TOOL_USAGE;
    }

    if (gms_tool_page_size(t, a, &page_size) != 0) {
        return GMS_TOOL_USAGE;
    }

    mode = GMS_TOOL_PRIVILEGES_POLICIES;

    if (a->val[GMS_OPT_PRIVILEGES]
        && gms_tool_privileges_option(t, a->val[GMS_OPT_PRIVILEGES], &mode)
           != 0)
    {
        return GMS_TOOL_USAGE;
    }

    rc = gms_tool_sync(t, a->val[GMS_OPT_PRUNE] != NULL, &gms, page_size,
                       &counts,
                       mode == GMS_TOOL_PRIVILEGES_OFF ? NULL : &holders);

    if (rc != GMS_TOOL_OK || mode == GMS_TOOL_PRIVILEGES_OFF) {
        goto done;
    }

    gms_tool_sync_print(&counts);
    fflush(stdout);

    memset(&privileges, 0, sizeof(gms_tool_privileges_counts_t));

    rc = gms_tool_privileges_mirror(t, &gms, mode, &holders, &privileges);
    gms_tool_holders_free(&holders);

    if (rc == GMS_TOOL_OK) {
        gms_tool_privileges_print(&privileges);
    }

    return rc;

done:

    if (rc == GMS_TOOL_OK) {
        gms_tool_sync_print(&counts);
    }

    return rc;
}


/* --privileges policies|graphql|off */

static int
gms_tool_privileges_option(gms_tool_t *t, const char *value,
    gms_tool_privileges_e *mode)
{
    if (strcmp(value, "policies") == 0) {
        *mode = GMS_TOOL_PRIVILEGES_POLICIES;

    } else if (strcmp(value, "graphql") == 0) {
        *mode = GMS_TOOL_PRIVILEGES_GRAPHQL;

    } else if (strcmp(value, "off") == 0) {
        *mode = GMS_TOOL_PRIVILEGES_OFF;

    } else {
        gms_tool_error(t, "--privileges: '%s' is none of policies, graphql "
                       "and off", gms_tool_shown(value));
        return -1;
    }

    return 0;
}


static int
gms_tool_create(gms_tool_t *t, gms_tool_args_t *a)
{
    int                 rc;
    char               *salt;
    size_t              salt_len;
    gms_tool_create_t   c;
    gms_graphql_conf_t  gms;

    memset(&c, 0, sizeof(gms_tool_create_t));
    c.actor = a->val[GMS_OPT_ACTOR];
    c.name = a->val[GMS_OPT_NAME];
    c.description = a->val[GMS_OPT_DESCRIPTION];
    c.duration = a->val[GMS_OPT_DURATION] ? a->val[GMS_OPT_DURATION]
                                          : "ONE_MONTH";

    if (gms_tool_gms_options(t, a, &gms) != 0) {
        return GMS_TOOL_USAGE;
    }

    if (c.actor == NULL || c.name == NULL) {
        gms_tool_error(t, "--actor and --name are required; see "
                       "'gms-token create --help'");
        return GMS_TOOL_USAGE;
    }

    if (gms_tool_check_actor(t, c.actor) != 0) {
        return GMS_TOOL_USAGE;
    }

    if (c.name[0] == '\0') {
        gms_tool_error(t, "--name: a token's name cannot be empty");
        return GMS_TOOL_USAGE;
    }

    if (!gms_tool_duration_valid(c.duration)) {
        gms_tool_error(t, "--duration: '%s' is not one of ONE_HOUR, ONE_DAY, "
                       "ONE_WEEK, ONE_MONTH, THREE_MONTHS, SIX_MONTHS, "
                       "ONE_YEAR, NO_EXPIRY", gms_tool_shown(c.duration));
        return GMS_TOOL_USAGE;
    }

    rc = gms_tool_salt(t, a, &salt, &salt_len);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    c.salt = salt;
    c.salt_len = salt_len;

    rc = gms_tool_manage_create(t, &gms, &c);

    OPENSSL_cleanse(salt, salt_len);
    free(salt);

    return rc;
}


static int
gms_tool_list(gms_tool_t *t, gms_tool_args_t *a)
{
    long                page_size;
    gms_graphql_conf_t  gms;

    if (gms_tool_gms_options(t, a, &gms) != 0
        || gms_tool_page_size(t, a, &page_size) != 0)
    {
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_ACTOR]
        && gms_tool_check_actor(t, a->val[GMS_OPT_ACTOR]) != 0)
    {
        return GMS_TOOL_USAGE;
    }

    return gms_tool_manage_list(t, &gms, a->val[GMS_OPT_ACTOR], page_size);
}


static int
gms_tool_check_salt(gms_tool_t *t, gms_tool_args_t *a)
{
    int                 rc;
    char                buf[sizeof("Bearer ") + GMS_TOKEN_MAX_LEN + 8];
    char               *salt;
    size_t              salt_len, token_len;
    const char         *token;
    gms_graphql_conf_t  gms;

    if (gms_tool_gms_options(t, a, &gms) != 0) {
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_TOKEN_STDIN] == NULL) {
        gms_tool_error(t, "--token-stdin is required: the token is read on "
                       "stdin, never from the command line");
        return GMS_TOOL_USAGE;
    }

    rc = gms_tool_salt(t, a, &salt, &salt_len);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    rc = gms_tool_token_read(t, buf, sizeof(buf), &token, &token_len);

    if (rc == GMS_TOOL_OK) {
        rc = gms_tool_manage_check_salt(t, &gms, token, token_len, salt,
                                        salt_len);
    }

    OPENSSL_cleanse(buf, sizeof(buf));
    OPENSSL_cleanse(salt, salt_len);
    free(salt);

    return rc;
}


static int
gms_tool_follow_command(gms_tool_t *t, gms_tool_args_t *a)
{
    gms_graphql_conf_t       gms;
    gms_tool_follow_conf_t   conf;

    memset(&conf, 0, sizeof(gms_tool_follow_conf_t));

    if (gms_tool_gms_options(t, a, &gms) != 0
        || gms_tool_page_size(t, a, &conf.page_size) != 0)
    {
        return GMS_TOOL_USAGE;
    }

    conf.gms = &gms;
    conf.interval_ms = 15000;

    if (a->val[GMS_OPT_INTERVAL]) {
        if (gms_tool_parse_duration(a->val[GMS_OPT_INTERVAL],
                                    &conf.interval_ms) != 0
            || conf.interval_ms < 1000 || conf.interval_ms > 86400000)
        {
            gms_tool_error(t, "--interval: '%s' is not a time from 1s to "
                           "1d (as 15s, 1m)",
                           gms_tool_shown(a->val[GMS_OPT_INTERVAL]));
            return GMS_TOOL_USAGE;
        }
    }

    conf.privileges = GMS_TOOL_PRIVILEGES_POLICIES;

    if (a->val[GMS_OPT_PRIVILEGES]
        && gms_tool_privileges_option(t, a->val[GMS_OPT_PRIVILEGES],
                                      &conf.privileges)
           != 0)
    {
        return GMS_TOOL_USAGE;
    }

    return gms_tool_follow(t, &conf);
}


static int
gms_tool_page_size(gms_tool_t *t, gms_tool_args_t *a, long *page_size)
{
    char  *end;

    *page_size = 100;

    if (a->val[GMS_OPT_PAGE_SIZE] == NULL) {
        return 0;
    }

    errno = 0;
    *page_size = strtol(a->val[GMS_OPT_PAGE_SIZE], &end, 10);

    if (errno || *end != '\0' || end == a->val[GMS_OPT_PAGE_SIZE]
        || *page_size < 1 || *page_size > 10000)
    {
        gms_tool_error(t, "--page-size: '%s' is not a count from 1 to 10000",
                       gms_tool_shown(a->val[GMS_OPT_PAGE_SIZE]));
        return -1;
    }

    return 0;
}


/*
 * The connection options: --redis or --sentinel and --master, --tls and
 * its files, --db, --prefix; a usage error is reported.
 */

static int
gms_tool_conn_options(gms_tool_t *t, gms_tool_args_t *a)
{
    int          i;
    char        *end;
    static int   tls_opts[] = { GMS_OPT_TLS_CA_FILE, GMS_OPT_TLS_CERT,
                                GMS_OPT_TLS_KEY, GMS_OPT_TLS_NAME };

    t->redis = a->val[GMS_OPT_REDIS] ? a->val[GMS_OPT_REDIS]
                                     : "127.0.0.1:6379";
    t->password_file = a->val[GMS_OPT_PASSWORD_FILE];
    t->prefix = a->val[GMS_OPT_PREFIX] ? a->val[GMS_OPT_PREFIX] : "gms:";
    t->prefix_len = strlen(t->prefix);

    if (a->val[GMS_OPT_DB]) {
        errno = 0;
        t->db = strtol(a->val[GMS_OPT_DB], &end, 10);

        if (errno || *end != '\0' || end == a->val[GMS_OPT_DB]
            || a->val[GMS_OPT_DB][0] == '-' || t->db > 1000000)
        {
            gms_tool_error(t, "--db: '%s' is not a database number",
                           gms_tool_shown(a->val[GMS_OPT_DB]));
            return -1;
        }
    }

    t->tls = a->val[GMS_OPT_TLS] != NULL;
    t->tls_ca_file = a->val[GMS_OPT_TLS_CA_FILE];
    t->tls_cert = a->val[GMS_OPT_TLS_CERT];
    t->tls_key = a->val[GMS_OPT_TLS_KEY];
    t->tls_name = a->val[GMS_OPT_TLS_NAME];

    /* a file given without --tls would leave the connection in clear */
    for (i = 0; !t->tls && i < (int) (sizeof(tls_opts) / sizeof(int)); i++) {
        if (a->val[tls_opts[i]]) {
            gms_tool_error(t, "--%s goes with --tls",
                           gms_tool_long_options[tls_opts[i]].name);
            return -1;
        }
    }

    if ((t->tls_cert == NULL) != (t->tls_key == NULL)) {
        gms_tool_error(t, "give --tls-cert and --tls-key together");
        return -1;
    }

    if (t->tls_name && t->tls_name[0] == '\0') {
        gms_tool_error(t, "--tls-name: the name cannot be empty");
        return -1;
    }

    t->sentinel = a->val[GMS_OPT_SENTINEL];
    t->master = a->val[GMS_OPT_MASTER];
    t->sentinel_password_file = a->val[GMS_OPT_SENTINEL_PASSWORD_FILE];

    if (t->sentinel == NULL) {
        if (t->master || t->sentinel_password_file) {
            gms_tool_error(t, "--%s goes with --sentinel",
                           t->master ? "master" : "sentinel-password-file");
            return -1;
        }

        return 0;
    }

    if (a->val[GMS_OPT_REDIS]) {
        gms_tool_error(t, "give --redis or --sentinel, not both");
        return -1;
    }

    if (t->sentinel[0] == '\0') {
        gms_tool_error(t, "--sentinel: no address");
        return -1;
    }

    if (t->master == NULL || t->master[0] == '\0') {
        gms_tool_error(t, "--sentinel needs --master NAME, the master's name "
                       "at the Sentinels");
        return -1;
    }

    /* for messages until a Sentinel names the master */
    t->redis = t->sentinel;

    return 0;
}


/* --gms URL and the options that go with it; a usage error is reported */

static int
gms_tool_gms_options(gms_tool_t *t, gms_tool_args_t *a,
    gms_graphql_conf_t *gms)
{
    int64_t  ms;

    memset(gms, 0, sizeof(gms_graphql_conf_t));
    gms->url = a->val[GMS_OPT_GMS];
    gms->token_file = a->val[GMS_OPT_GMS_TOKEN_FILE];
    gms->ca_file = a->val[GMS_OPT_GMS_CA_FILE];
    gms->timeout_ms = 30000;

    if (gms->url == NULL) {
        gms_tool_error(t, "--gms URL is required");
        return -1;
    }

    /* a usage error, not a GMS failure that follow would retry for ever */
    if (strncmp(gms->url, "http://", 7) != 0
        && strncmp(gms->url, "https://", 8) != 0)
    {
        gms_tool_error(t, "--gms: '%s' is not an http:// or https:// URL",
                       gms_tool_shown(gms->url));
        return -1;
    }

    if (a->val[GMS_OPT_GMS_TIMEOUT]) {
        if (gms_tool_parse_duration(a->val[GMS_OPT_GMS_TIMEOUT], &ms) != 0
            || ms <= 0 || ms > 3600000)
        {
            gms_tool_error(t, "--gms-timeout: '%s' is not a time from 1s "
                           "to 1h (as 30s, 2m)",
                           gms_tool_shown(a->val[GMS_OPT_GMS_TIMEOUT]));
            return -1;
        }

        gms->timeout_ms = (long) ms;
    }

    return 0;
}


void
gms_tool_error(gms_tool_t *t, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(t->error, sizeof(t->error), fmt, args);
    va_end(args);

    if (t->quiet) {
        return;
    }

    va_start(args, fmt);
    gms_tool_vline(t, fmt, args);
    va_end(args);
}


/* a line on stderr, even while errors are kept quiet (follow's cycles) */

void
gms_tool_warn(gms_tool_t *t, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    gms_tool_vline(t, fmt, args);
    va_end(args);
}


/* "gms-token: COMMAND: " and the message, one line on stderr */

static void
gms_tool_vline(gms_tool_t *t, const char *fmt, va_list args)
{
    fputs("gms-token: ", stderr);

    if (t->command) {
        fprintf(stderr, "%s: ", t->command);
    }

    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
}


/*
 * host:port, [v6]:port or unix:/path; AUTH and SELECT as the module does.
 * Returns an exit code: a bad option is a usage error, not Redis's.
 */

static int
gms_tool_salt(gms_tool_t *t, gms_tool_args_t *a, char **salt, size_t *len)
{
    if (a->val[GMS_OPT_SALT] && a->val[GMS_OPT_SALT_FILE]) {
        gms_tool_error(t, "give --salt or --salt-file, not both");
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_SALT_FILE]) {
        *salt = gms_tool_read_file(t, "--salt-file", a->val[GMS_OPT_SALT_FILE],
                                   len);
        return *salt ? GMS_TOOL_OK : GMS_TOOL_USAGE;
    }

    *salt = strdup(a->val[GMS_OPT_SALT] ? a->val[GMS_OPT_SALT] : "");
    if (*salt == NULL) {
        gms_tool_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    *len = strlen(*salt);

    return GMS_TOOL_OK;
}


/*
 * The token on stdin: one line, one trailing newline allowed, and a token
 * the module itself would take from "Authorization: Bearer <token>".
 */

static int
gms_tool_token_stdin(gms_tool_t *t, const char *salt, size_t salt_len,
    char id[GMS_TOKEN_ID_LEN + 1])
{
    int          rc;
    char         buf[sizeof("Bearer ") + GMS_TOKEN_MAX_LEN + 8];
    size_t       token_len;
    const char  *token;

    rc = gms_tool_token_read(t, buf, sizeof(buf), &token, &token_len);

    if (rc == GMS_TOOL_OK) {
        gms_token_id((const unsigned char *) token, token_len,
                     (const unsigned char *) salt, salt_len, id);

        if (id[0] == '\0') {
            gms_tool_error(t, "cannot compute SHA-256");
            rc = GMS_TOOL_REDIS;
        }
    }

    OPENSSL_cleanse(buf, sizeof(buf));

    return rc;
}


/*
 * The token on stdin, into buf (the caller cleanses it): its bytes at
 * *token, not NUL-terminated.
 */

static int
gms_tool_token_read(gms_tool_t *t, char *buf, size_t size,
    const char **token, size_t *token_len)
{
    size_t                n, len;
    const unsigned char  *p;

    len = sizeof("Bearer ") - 1;
    memcpy(buf, "Bearer ", len);

    while (len < size && (n = fread(buf + len, 1, size - len, stdin)) > 0) {
        len += n;
    }

    if (ferror(stdin)) {
        gms_tool_error(t, "stdin: cannot read: %s", strerror(errno));
        return GMS_TOOL_USAGE;
    }

    if (len == size) {
        gms_tool_error(t, "stdin:1: the token is longer than %d bytes",
                       GMS_TOKEN_MAX_LEN);
        return GMS_TOOL_USAGE;
    }

    if (len > 7 && buf[len - 1] == '\n') {
        len--;

        if (len > 7 && buf[len - 1] == '\r') {
            len--;
        }
    }

    if (len == sizeof("Bearer ") - 1) {
        gms_tool_error(t, "stdin: no token");
        return GMS_TOOL_USAGE;
    }

    if (len - (sizeof("Bearer ") - 1) > GMS_TOKEN_MAX_LEN) {
        gms_tool_error(t, "stdin:1: the token is longer than %d bytes",
                       GMS_TOKEN_MAX_LEN);
        return GMS_TOOL_USAGE;
    }

    if (gms_bearer_parse((unsigned char *) buf, len, &p, token_len) != 0) {
        gms_tool_error(t, "stdin:1: not a token: one line of letters, digits, "
                       "'-', '.', '_', '~', '+', '/' and trailing '=', "
                       "at most %d", GMS_TOKEN_MAX_LEN);
        return GMS_TOOL_USAGE;
    }

    *token = (const char *) p;

    return GMS_TOOL_OK;
}


/* a secret from a file: its bytes without one trailing newline */

char *
gms_tool_read_file(gms_tool_t *t, const char *option, const char *path,
    size_t *len)
{
    FILE    *f;
    char    *buf;
    size_t   n;

    f = fopen(path, "rb");
    if (f == NULL) {
        gms_tool_error(t, "%s: cannot open %s: %s", option,
                       gms_tool_shown(path), strerror(errno));
        return NULL;
    }

    buf = malloc(GMS_TOOL_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        gms_tool_error(t, "out of memory");
        return NULL;
    }

    n = fread(buf, 1, GMS_TOOL_FILE_MAX + 1, f);

    if (ferror(f) || n > GMS_TOOL_FILE_MAX) {
        gms_tool_error(t, "%s: %s: %s", option, gms_tool_shown(path),
                       ferror(f) ? strerror(errno) : "larger than 64k");
        fclose(f);
        OPENSSL_cleanse(buf, GMS_TOOL_FILE_MAX + 1);
        free(buf);
        return NULL;
    }

    fclose(f);

    if (n > 0 && buf[n - 1] == '\n') {
        n--;

        if (n > 0 && buf[n - 1] == '\r') {
            n--;
        }
    }

    buf[n] = '\0';
    *len = n;

    return buf;
}


int
gms_tool_check_id(gms_tool_t *t, const char *id)
{
    if (gms_token_id_valid(id, strlen(id))) {
        return 0;
    }

    gms_tool_error(t, "'%s' is not a token id: standard base64 of 32 bytes, "
                   "44 characters ending in '='", gms_tool_shown(id));

    return -1;
}


int
gms_tool_check_actor(gms_tool_t *t, const char *urn)
{
    if (gms_actor_valid(urn, strlen(urn))) {
        return 0;
    }

    gms_tool_error(t, "'%s' is not a user URN: urn:li:..., UTF-8, without "
                   "control characters", gms_tool_shown(urn));

    return -1;
}


/* 30d, 12h, 90m, 3600s, and sums of them: 1d12h */

int
gms_tool_parse_duration(const char *s, int64_t *ms)
{
    int64_t  n, unit, total;

    if (*s == '\0') {
        return -1;
    }

    total = 0;

    while (*s) {
        if (*s < '0' || *s > '9') {
            return -1;
        }

        for (n = 0; *s >= '0' && *s <= '9'; s++) {
            if (n > (INT64_MAX / 1000 - 9) / 10) {
                return -1;
            }

            n = n * 10 + (*s - '0');
        }

        switch (*s) {
        case 's':
            unit = 1;
            break;
        case 'm':
            unit = 60;
            break;
        case 'h':
            unit = 3600;
            break;
        case 'd':
            unit = 86400;
            break;
        default:
            return -1;
        }

        s++;

        if (n > (INT64_MAX / 1000 - total) / unit) {
            return -1;
        }

        total += n * unit;
    }

    *ms = total * 1000;

    return 0;
}


static int
gms_tool_reply_cmp(const void *one, const void *two)
{
    int                r;
    size_t             len;
    const redisReply  *a, *b;

    a = *(const redisReply **) one;
    b = *(const redisReply **) two;

    len = a->len < b->len ? a->len : b->len;
    r = memcmp(a->str, b->str, len);

    if (r != 0) {
        return r;
    }

    return (a->len > b->len) - (a->len < b->len);
}


/* a value from the command line, fit for a one-line message */

const char *
gms_tool_shown(const char *s)
{
    char                *p, *buf;
    size_t               i;
    unsigned char        c;
    static int           next;
    static char          bufs[4][128];
    static const char    hex[] = "0123456789abcdef";

    buf = bufs[next++ % 4];
    p = buf;

    for (i = 0; s[i] && p < buf + sizeof(bufs[0]) - 8; i++) {
        c = (unsigned char) s[i];

        if (c < 0x20 || c == 0x7f) {
            *p++ = '\\';
            *p++ = 'x';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 0xf];
            continue;
        }

        *p++ = c;
    }

    if (s[i]) {
        memcpy(p, "...", 3);
        p += 3;
    }

    *p = '\0';

    return buf;
}

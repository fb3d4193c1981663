
/*
 * gms-token's options: every option of the command line, the groups of
 * them that several commands take (with their help), a command's
 * description (gms_tool_command_t), and the checks of the shared groups.
 */


#ifndef _GMS_TOOL_OPTIONS_H_INCLUDED_
#define _GMS_TOOL_OPTIONS_H_INCLUDED_


#include <stdint.h>

#include "gms_tool.h"
#include "gms_graphql.h"
#include "gms_sync_privileges.h"


/* every option; GMS_OPT(o) is its bit in a command's mask */
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
    GMS_OPT_PRIVILEGES_INTERVAL,
    GMS_OPT_FULL_INTERVAL,
    GMS_OPT_MAX_PRUNE,
    GMS_OPT_INACTIVE,
    GMS_OPT_CHANGES,
    GMS_OPT_METRICS_FILE,
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
    GMS_OPT_REDIS_CLUSTER,
    GMS_OPT_USER,
    GMS_OPT_WAIT_TIMEOUT,
    GMS_OPT_FROM_REDIS,
    GMS_OPT_FROM_SENTINEL,
    GMS_OPT_FROM_MASTER,
    GMS_OPT_FROM_PREFIX,
    GMS_OPT_FROM_PASSWORD_FILE,
    GMS_OPT_FROM_TLS,
    GMS_OPT_ISSUER,
    GMS_OPT_OUT,
    GMS_OPT_CA_FILE,
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
                                | GMS_OPT(GMS_OPT_SENTINEL_PASSWORD_FILE)     \
                                | GMS_OPT(GMS_OPT_REDIS_CLUSTER)              \
                                | GMS_OPT(GMS_OPT_USER)                       \
                                | GMS_OPT(GMS_OPT_WAIT_TIMEOUT))
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


/* a command, as gms_tool_main.c dispatches it; each gms_cmd_*.c has its own */
typedef struct {
    const char            *name;
    int                  (*handler)(gms_tool_t *t, gms_tool_args_t *a);
    uint64_t               options;
    int                    min_args;
    int                    max_args;           /* -1: no limit */
    const char            *usage;
} gms_tool_command_t;


/* the groups' help, which ends the usage of the commands taking them */
#define GMS_TOOL_CONN_USAGE                                                   \
    "\nConnection options:\n"                                                 \
    "  --redis ADDR          host:port, [ipv6]:port or unix:/path "           \
    "(default\n"                                                              \
    "                        127.0.0.1:6379); a name is resolved at each\n"   \
    "                        connect\n"                                       \
    "  --password-file FILE  the Redis password, from a file; else the\n"     \
    "                        environment variable GMS_REDIS_PASSWORD\n"       \
    "  --db N                the Redis database (default 0)\n"                \
    "  --prefix STRING       the key prefix (default gms:, {gms}: with\n"    \
    "                        --redis-cluster), as gms_token_key_prefix\n"    \
    "  --user NAME           the Redis ACL user (AUTH NAME PASSWORD)\n"      \
    "  --tls                 TLS to Redis (and to the Sentinels, or every\n"  \
    "                        cluster node); the certificate is always\n"      \
    "                        verified\n"                                      \
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
    "                        the Sentinels' password, from a file\n"       \
    "  --redis-cluster ADDR,...\n"                                            \
    "                        instead of --redis: a Redis Cluster; these\n"    \
    "                        nodes, in order, name the master of the\n"      \
    "                        prefix's hash slot (the prefix must hold a\n"   \
    "                        hash tag, as {gms}:)\n"                          \
    "  --wait-timeout TIME   before an invalidation is published, wait\n"    \
    "                        that long at most for the master's replicas\n"  \
    "                        to acknowledge the change (WAIT; default 1s,\n" \
    "                        0: do not wait)\n"


#define GMS_TOOL_GMS_USAGE                                                    \
    "\nGMS options:\n"                                                        \
    "  --gms URL             GMS's base URL (GraphQL at URL/api/graphql)\n"   \
    "  --gms-token-file FILE a token of an account holding Manage All\n"      \
    "                        Access Tokens (and Manage Policies for\n"       \
    "                        --privileges), from a file (never an argument)\n"\
    "  --gms-ca-file FILE    the CAs to verify GMS's TLS certificate with\n"  \
    "                        (default: the system's)\n"                      \
    "  --gms-timeout TIME    a request's time limit (default 30s)\n"


int gms_tool_options_parse(gms_tool_t *t, int argc, char **argv,
    gms_tool_args_t *a, char **args);
const char *gms_tool_options_name(gms_tool_opt_e opt);
int gms_tool_options_conn(gms_tool_t *t, gms_tool_args_t *a);
int gms_tool_options_gms(gms_tool_t *t, gms_tool_args_t *a,
    gms_graphql_conf_t *gms);
int gms_tool_options_salt(gms_tool_t *t, gms_tool_args_t *a, char **salt,
    size_t *len);
int gms_tool_options_page_size(gms_tool_t *t, gms_tool_args_t *a,
    long *page_size);
int gms_tool_options_privileges(gms_tool_t *t, const char *value,
    gms_tool_privileges_e *mode);


#endif /* _GMS_TOOL_OPTIONS_H_INCLUDED_ */

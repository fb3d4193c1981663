
/*
 * gms-token's command line: every option parsed into gms_tool_args_t
 * (which of them a command takes is its mask, checked by the dispatch),
 * and the checks of the groups several commands share: the connection,
 * --gms and the options that go with it, --salt or --salt-file,
 * --page-size and --privileges.  A usage error is reported.
 */


#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gms_tool_options.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"
#include "gms_slot.h"


static int gms_tool_cluster_options(gms_tool_t *t, gms_tool_args_t *a);
static int gms_tool_wait_option(gms_tool_t *t, const char *value);

/* in the order of gms_tool_opt_e */
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
    { "privileges-interval", required_argument, NULL,
      256 + GMS_OPT_PRIVILEGES_INTERVAL },
    { "full-interval", required_argument, NULL,
      256 + GMS_OPT_FULL_INTERVAL },
    { "max-prune",     required_argument, NULL, 256 + GMS_OPT_MAX_PRUNE },
    { "inactive",      required_argument, NULL, 256 + GMS_OPT_INACTIVE },
    { "changes",       required_argument, NULL, 256 + GMS_OPT_CHANGES },
    { "metrics-file",  required_argument, NULL, 256 + GMS_OPT_METRICS_FILE },
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
    { "redis-cluster", required_argument, NULL, 256 + GMS_OPT_REDIS_CLUSTER },
    { "user",          required_argument, NULL, 256 + GMS_OPT_USER },
    { "wait-timeout",  required_argument, NULL, 256 + GMS_OPT_WAIT_TIMEOUT },
    { "from-redis",    required_argument, NULL, 256 + GMS_OPT_FROM_REDIS },
    { "from-sentinel", required_argument, NULL, 256 + GMS_OPT_FROM_SENTINEL },
    { "from-master",   required_argument, NULL, 256 + GMS_OPT_FROM_MASTER },
    { "from-prefix",   required_argument, NULL, 256 + GMS_OPT_FROM_PREFIX },
    { "from-password-file", required_argument, NULL,
      256 + GMS_OPT_FROM_PASSWORD_FILE },
    { "from-tls",      no_argument,       NULL, 256 + GMS_OPT_FROM_TLS },
    { "issuer",        required_argument, NULL, 256 + GMS_OPT_ISSUER },
    { "out",           required_argument, NULL, 256 + GMS_OPT_OUT },
    { "ca-file",       required_argument, NULL, 256 + GMS_OPT_CA_FILE },
    { "help",          no_argument,       NULL, 256 + GMS_OPT_HELP },
    { NULL, 0, NULL, 0 }
};


/*
 * The command line into a->val (an option without a value: "") and its
 * operands, in order, into args; returns how many, or -1: reported.
 */

int
gms_tool_options_parse(gms_tool_t *t, int argc, char **argv,
    gms_tool_args_t *a, char **args)
{
    int  c, nargs;

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
            gms_tool_msgs_error(t, "option '%s' needs a value",
                                gms_tool_msgs_shown(argv[optind - 1]));
            return -1;
        }

        if (c < 256 || c >= 256 + GMS_OPT_N) {
            gms_tool_msgs_error(t, "unknown option '%s'; see "
                                "'gms-token --help'",
                                gms_tool_msgs_shown(argv[optind - 1]));
            return -1;
        }

        a->val[c - 256] = optarg ? optarg : "";
    }

    while (optind < argc) {
        args[nargs++] = argv[optind++];
    }

    return nargs;
}


const char *
gms_tool_options_name(gms_tool_opt_e opt)
{
    return gms_tool_long_options[opt].name;
}


/*
 * The connection options: --redis or --sentinel and --master, --tls and
 * its files, --db, --prefix; a usage error is reported.
 */

int
gms_tool_options_conn(gms_tool_t *t, gms_tool_args_t *a)
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
            gms_tool_msgs_error(t, "--db: '%s' is not a database number",
                                gms_tool_msgs_shown(a->val[GMS_OPT_DB]));
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
            gms_tool_msgs_error(t, "--%s goes with --tls",
                                gms_tool_long_options[tls_opts[i]].name);
            return -1;
        }
    }

    if ((t->tls_cert == NULL) != (t->tls_key == NULL)) {
        gms_tool_msgs_error(t, "give --tls-cert and --tls-key together");
        return -1;
    }

    if (t->tls_name && t->tls_name[0] == '\0') {
        gms_tool_msgs_error(t, "--tls-name: the name cannot be empty");
        return -1;
    }

    t->user = a->val[GMS_OPT_USER];

    if (t->user && t->user[0] == '\0') {
        gms_tool_msgs_error(t, "--user: the name cannot be empty");
        return -1;
    }

    if (gms_tool_wait_option(t, a->val[GMS_OPT_WAIT_TIMEOUT]) != 0) {
        return -1;
    }

    t->cluster = a->val[GMS_OPT_REDIS_CLUSTER];

    if (t->cluster && gms_tool_cluster_options(t, a) != 0) {
        return -1;
    }

    t->sentinel = a->val[GMS_OPT_SENTINEL];
    t->master = a->val[GMS_OPT_MASTER];
    t->sentinel_password_file = a->val[GMS_OPT_SENTINEL_PASSWORD_FILE];

    if (t->sentinel == NULL) {
        if (t->master || t->sentinel_password_file) {
            gms_tool_msgs_error(t, "--%s goes with --sentinel",
                                t->master ? "master"
                                          : "sentinel-password-file");
            return -1;
        }

        return 0;
    }

    if (a->val[GMS_OPT_REDIS]) {
        gms_tool_msgs_error(t, "give --redis or --sentinel, not both");
        return -1;
    }

    if (t->sentinel[0] == '\0') {
        gms_tool_msgs_error(t, "--sentinel: no address");
        return -1;
    }

    if (t->master == NULL || t->master[0] == '\0') {
        gms_tool_msgs_error(t, "--sentinel needs --master NAME, the master's "
                            "name at the Sentinels");
        return -1;
    }

    /* for messages until a Sentinel names the master */
    t->redis = t->sentinel;

    return 0;
}


/*
 * --redis-cluster ADDR,...: neither --redis nor --sentinel nor --db (a
 * cluster has database 0 only), and a prefix with a hash tag, {gms}: by
 * default, so that every key lies in one slot.
 */

static int
gms_tool_cluster_options(gms_tool_t *t, gms_tool_args_t *a)
{
    size_t                len;
    const unsigned char  *tag;

    if (a->val[GMS_OPT_REDIS] || a->val[GMS_OPT_SENTINEL]) {
        gms_tool_msgs_error(t, "give one of --redis, --sentinel and "
                            "--redis-cluster");
        return -1;
    }

    if (t->cluster[0] == '\0') {
        gms_tool_msgs_error(t, "--redis-cluster: no address");
        return -1;
    }

    if (t->db) {
        gms_tool_msgs_error(t, "--db goes with --redis or --sentinel: a Redis "
                            "Cluster has database 0 only");
        return -1;
    }

    if (a->val[GMS_OPT_PREFIX] == NULL) {
        t->prefix = "{gms}:";
        t->prefix_len = 6;

    } else if (!gms_slot_tag((const unsigned char *) t->prefix, t->prefix_len,
                             &tag, &len))
    {
        gms_tool_msgs_error(t, "--prefix: '%s' has no hash tag: with "
                            "--redis-cluster every key must lie in one slot, "
                            "so the prefix needs one, as {gms}: (a non-empty "
                            "{...})", gms_tool_msgs_shown(t->prefix));
        return -1;
    }

    /* for messages until a node names the slot's master */
    t->redis = t->cluster;

    return 0;
}


/* --wait-timeout TIME: 0, N ms, or a duration (1s, the default) */

static int
gms_tool_wait_option(gms_tool_t *t, const char *value)
{
    char     *end;
    int64_t   ms;

    t->wait_ms = 1000;

    if (value == NULL) {
        return 0;
    }

    errno = 0;
    ms = strtoll(value, &end, 10);

    if (end != value && value[0] != '-' && errno == 0
        && (strcmp(end, "ms") == 0 || (ms == 0 && *end == '\0')))
    {
        /* as given */

    } else if (gms_tool_input_parse_duration(value, &ms) != 0) {
        ms = -1;
    }

    if (ms < 0 || ms > 60000) {
        gms_tool_msgs_error(t, "--wait-timeout: '%s' is not a time from 0 to "
                            "60s (as 500ms, 2s)", gms_tool_msgs_shown(value));
        return -1;
    }

    t->wait_ms = (long) ms;

    return 0;
}


/* --gms URL and the options that go with it; a usage error is reported */

int
gms_tool_options_gms(gms_tool_t *t, gms_tool_args_t *a,
    gms_graphql_conf_t *gms)
{
    int64_t      ms;
    const char  *value;

    memset(gms, 0, sizeof(gms_graphql_conf_t));
    gms->url = a->val[GMS_OPT_GMS];
    gms->token_file = a->val[GMS_OPT_GMS_TOKEN_FILE];
    gms->ca_file = a->val[GMS_OPT_GMS_CA_FILE];
    gms->timeout_ms = 30000;

    if (gms->url == NULL) {
        gms_tool_msgs_error(t, "--gms URL is required");
        return -1;
    }

    /* a usage error, not a GMS failure that follow would retry for ever */
    if (strncmp(gms->url, "http://", 7) != 0
        && strncmp(gms->url, "https://", 8) != 0)
    {
        gms_tool_msgs_error(t, "--gms: '%s' is not an http:// or https:// URL",
                            gms_tool_msgs_shown(gms->url));
        return -1;
    }

    value = a->val[GMS_OPT_GMS_TIMEOUT];

    if (value) {
        if (gms_tool_input_parse_duration(value, &ms) != 0
            || ms <= 0 || ms > 3600000)
        {
            gms_tool_msgs_error(t, "--gms-timeout: '%s' is not a time from 1s "
                                "to 1h (as 30s, 2m)",
                                gms_tool_msgs_shown(value));
            return -1;
        }

        gms->timeout_ms = (long) ms;
    }

    return 0;
}


/*
 * --salt STRING or --salt-file FILE (one trailing newline dropped), none:
 * the empty salt; *salt is the caller's to cleanse and free.  Returns an
 * exit code.
 */

int
gms_tool_options_salt(gms_tool_t *t, gms_tool_args_t *a, char **salt,
    size_t *len)
{
    if (a->val[GMS_OPT_SALT] && a->val[GMS_OPT_SALT_FILE]) {
        gms_tool_msgs_error(t, "give --salt or --salt-file, not both");
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_SALT_FILE]) {
        *salt = gms_tool_input_read_file(t, "--salt-file",
                                         a->val[GMS_OPT_SALT_FILE], len);
        return *salt ? GMS_TOOL_OK : GMS_TOOL_USAGE;
    }

    *salt = strdup(a->val[GMS_OPT_SALT] ? a->val[GMS_OPT_SALT] : "");
    if (*salt == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    *len = strlen(*salt);

    return GMS_TOOL_OK;
}


int
gms_tool_options_page_size(gms_tool_t *t, gms_tool_args_t *a, long *page_size)
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
        gms_tool_msgs_error(t, "--page-size: '%s' is not a count from 1 to "
                            "10000",
                            gms_tool_msgs_shown(a->val[GMS_OPT_PAGE_SIZE]));
        return -1;
    }

    return 0;
}


/* --privileges policies|graphql|off */

int
gms_tool_options_privileges(gms_tool_t *t, const char *value,
    gms_tool_privileges_e *mode)
{
    if (strcmp(value, "policies") == 0) {
        *mode = GMS_TOOL_PRIVILEGES_POLICIES;

    } else if (strcmp(value, "graphql") == 0) {
        *mode = GMS_TOOL_PRIVILEGES_GRAPHQL;

    } else if (strcmp(value, "off") == 0) {
        *mode = GMS_TOOL_PRIVILEGES_OFF;

    } else {
        gms_tool_msgs_error(t, "--privileges: '%s' is none of policies, "
                            "graphql and off", gms_tool_msgs_shown(value));
        return -1;
    }

    return 0;
}

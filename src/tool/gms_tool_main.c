
/*
 * gms-token: main() and the dispatch over the commands, and nothing else
 * (no other file calls into this one).  A command is described by the
 * gms_cmd_*.c that holds it: its name, its handler, the options it takes,
 * its operands and its help.  Below the commands: the options
 * (gms_tool_options.c), what the user hands in (gms_tool_input.c), the
 * messages (gms_tool_msgs.c), the clients of Redis (gms_tool_redis.c,
 * gms_tool_conn.c, gms_tool_sentinel.c) and of GMS (gms_graphql.c).  The
 * token id, its validation, the key layout and the lookup script come
 * from src/gms_token.c, so the tool writes and reads exactly what the
 * module reads.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gms_tool.h"
#include "gms_tool_options.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_cmd_token.h"
#include "gms_cmd_privileges.h"
#include "gms_cmd_sync.h"
#include "gms_cmd_manage.h"
#include "gms_cmd_follow.h"
#include "gms_cmd_jwks.h"
#include "gms_cmd_migrate.h"


static int gms_tool_main(int argc, char **argv, char **args);


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
    "  jwks        fetch an OAuth issuer's JWKS into gms_token_oauth's "
    "file\n"
    "  migrate     copy the cache from one Redis and prefix to another "
    "(as to a\n"
    "              Redis Cluster)\n"
    "\n"
    "'gms-token COMMAND --help' describes a command and its options.\n"
    "Exit status: 0 ok, 1 not found, 2 usage or bad input, 3 Redis error,\n"
    "4 GMS error.\n";


/* looked up by name; their order is that of the usage above */
static const gms_tool_command_t  *gms_tool_commands[] = {
    &gms_cmd_id,
    &gms_cmd_put,
    &gms_cmd_revoke,
    &gms_cmd_show,
    &gms_cmd_grant,
    &gms_cmd_deny,
    &gms_cmd_privileges,
    &gms_cmd_sync,
    &gms_cmd_create,
    &gms_cmd_list,
    &gms_cmd_check_salt,
    &gms_cmd_follow,
    &gms_cmd_jwks,
    &gms_cmd_migrate,
    NULL
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
    int                        c, i, nargs, rc;
    gms_tool_t                 t;
    gms_tool_args_t            a;
    const gms_tool_command_t  *cmd;

    memset(&t, 0, sizeof(gms_tool_t));
    memset(&a, 0, sizeof(gms_tool_args_t));

    nargs = gms_tool_options_parse(&t, argc, argv, &a, args);
    if (nargs < 0) {
        return GMS_TOOL_USAGE;
    }

    if (nargs == 0) {
        if (a.val[GMS_OPT_HELP]) {
            fputs(gms_tool_usage, stdout);
            return GMS_TOOL_OK;
        }

        gms_tool_msgs_error(&t, "no command; see 'gms-token --help'");
        return GMS_TOOL_USAGE;
    }

    for (i = 0; gms_tool_commands[i]; i++) {
        if (strcmp(gms_tool_commands[i]->name, args[0]) == 0) {
            break;
        }
    }

    cmd = gms_tool_commands[i];

    if (cmd == NULL) {
        gms_tool_msgs_error(&t, "unknown command '%s'; see 'gms-token --help'",
                            gms_tool_msgs_shown(args[0]));
        return GMS_TOOL_USAGE;
    }

    t.command = cmd->name;

    if (a.val[GMS_OPT_HELP]) {
        fputs(cmd->usage, stdout);
        return GMS_TOOL_OK;
    }

    for (c = 0; c < GMS_OPT_N; c++) {
        if (a.val[c] && !(cmd->options & GMS_OPT(c))) {
            gms_tool_msgs_error(&t, "--%s is not an option of %s; see "
                                "'gms-token %s --help'",
                                gms_tool_options_name(c), cmd->name, cmd->name);
            return GMS_TOOL_USAGE;
        }
    }

    a.argc = nargs - 1;
    a.argv = args + 1;

    if (a.argc < cmd->min_args
        || (cmd->max_args >= 0 && a.argc > cmd->max_args))
    {
        gms_tool_msgs_error(&t, "%s arguments; see 'gms-token %s --help'",
                            a.argc < cmd->min_args ? "missing" : "too many",
                            cmd->name);
        return GMS_TOOL_USAGE;
    }

    if (gms_tool_options_conn(&t, &a) != 0) {
        return GMS_TOOL_USAGE;
    }

    rc = cmd->handler(&t, &a);

    gms_tool_conn_close(&t);

    if (rc == GMS_TOOL_OK && (fflush(stdout) != 0 || ferror(stdout))) {
        gms_tool_msgs_error(&t, "cannot write to stdout: %s", strerror(errno));
        return GMS_TOOL_REDIS;
    }

    return rc;
}

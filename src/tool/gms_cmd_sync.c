
/*
 * gms-token sync: the command; its options checked, then the tokens
 * written (gms_sync_tokens.c) and, with --gms, the users' privileges
 * mirrored (gms_sync_privileges.c), each with its line of counts.
 */


#include <stdio.h>
#include <string.h>

#include "gms_cmd_sync.h"
#include "gms_tool_msgs.h"
#include "gms_sync_tokens.h"
#include "gms_sync_privileges.h"


static int gms_cmd_sync_handler(gms_tool_t *t, gms_tool_args_t *a);


const gms_tool_command_t  gms_cmd_sync = {
    "sync", gms_cmd_sync_handler,
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
    GMS_TOOL_CONN_USAGE
};


static int
gms_cmd_sync_handler(gms_tool_t *t, gms_tool_args_t *a)
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

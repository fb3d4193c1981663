
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
#include "gms_sync_users.h"
#include "gms_tool_progress.h"


static int gms_cmd_sync_handler(gms_tool_t *t, gms_tool_args_t *a);
static void gms_cmd_sync_print(gms_tool_t *t,
    const gms_tool_sync_counts_t *counts);


const gms_tool_command_t  gms_cmd_sync = {
    "sync", gms_cmd_sync_handler,
    GMS_OPTS_CONN | GMS_OPTS_GMS | GMS_OPT(GMS_OPT_PRUNE)
    | GMS_OPT(GMS_OPT_MAX_PRUNE) | GMS_OPT(GMS_OPT_PAGE_SIZE)
    | GMS_OPT(GMS_OPT_PRIVILEGES) | GMS_OPT(GMS_OPT_INACTIVE), 0, 0,
    "Usage: gms-token sync [--prune [--max-prune N|P%]] [connection options]\n"
    "                      < tokens.json\n"
    "       gms-token sync --gms URL [--prune [--max-prune N|P%]] "
    "[--page-size N]\n"
    "                      [--privileges policies|graphql|off]\n"
    "                      [--inactive refuse|keep|mark] [GMS options]\n"
    "                      [connection options]\n"
    "\n"
    "With --gms, the pages are asked of GMS itself (listAccessTokens,\n"
    "--page-size tokens a page, default 100); a failed page changes\n"
    "nothing, nor does a GMS whose pages never end (a page with no token\n"
    "the pages before lacked, more pages than its first total allows).\n"
    "Then the users' privileges are mirrored into\n"
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
    "Then the status of every token holder, and of DataHub's OAuth users\n"
    "(__oauth_..., the users of external OAuth tokens), is read (a last\n"
    "line of counts: users checked, inactive, newly inactive, reactivated,\n"
    "tokens dropped, users GMS failed on):\n"
    "\n"
    "  --inactive refuse      (the default) the users DataHub 1.2 and later\n"
    "                         refuse (suspended, removed, deleted) go into\n"
    "                         <prefix>inactive and their tokens out of the\n"
    "                         cache; back once they are active again\n"
    "  --inactive keep        (DataHub before 1.2) nobody refused, the set\n"
    "                         emptied\n"
    "  --inactive mark        the set kept as with refuse, their tokens\n"
    "                         cached: the edge reads the set and answers by\n"
    "                         its gms_datahub_version (403 from 0.15, 401\n"
    "                         from 1.2); a user entering or leaving the set\n"
    "                         is published on <prefix>invalidate\n"
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
    "Tokens of a user in <prefix>inactive are not cached (a cached one is\n"
    "deleted), counted inactive=N; with --inactive mark they are.\n"
    "\n"
    "  --prune  also delete cached tokens that are not in the input; "
    "refused\n"
    "           when the input has fewer tokens than its total says; "
    "tokens\n"
    "           created in the last minute are kept (DataHub's index "
    "lags)\n"
    "           unless GMS confirms them gone.  With --gms, each unlisted\n"
    "           token is asked of GMS's entity store (entityExists, 100 a\n"
    "           request), which a reindex of the search index leaves "
    "whole:\n"
    "           one GMS still has is kept (kept=), one it has not is\n"
    "           pruned, however young\n"
    "  --max-prune N|P%  of the cached tokens, how many (N) or what share\n"
    "           (P%) may be pruned without GMS confirming each one gone\n"
    "           (entityExists failing; stdin: always).  Over it none is,\n"
    "           counted held=N, with a warning.  Default with --gms: "
    GMS_TOOL_MAX_PRUNE_DEFAULT ";\n"
    "           from stdin: no bound.  A listing lacking most of the cache\n"
    "           is a warning on stderr too, with the numbers\n"
    GMS_TOOL_GMS_USAGE
    GMS_TOOL_CONN_USAGE
};


static int
gms_cmd_sync_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    int                           rc, refuse;
    gms_graphql_conf_t            gms;
    gms_tool_holders_t            holders;
    gms_tool_progress_t           progress;
    gms_tool_sync_conf_t          conf;
    gms_tool_sync_counts_t        counts;
    gms_tool_privileges_e         mode;
    gms_tool_users_counts_t       users;
    gms_tool_privileges_counts_t  privileges;

    memset(&conf, 0, sizeof(gms_tool_sync_conf_t));
    memset(&counts, 0, sizeof(gms_tool_sync_counts_t));

    conf.prune = a->val[GMS_OPT_PRUNE] != NULL;

    if (a->val[GMS_OPT_MAX_PRUNE] && !conf.prune) {
        gms_tool_msgs_error(t, "--max-prune needs --prune");
        return GMS_TOOL_USAGE;
    }

    /* from stdin, no bound unless asked: nothing can confirm a token gone */
    if ((a->val[GMS_OPT_GMS] || a->val[GMS_OPT_MAX_PRUNE])
        && gms_sync_tokens_max_prune_option(t, a->val[GMS_OPT_MAX_PRUNE],
                                            &conf.max_prune)
           != 0)
    {
        return GMS_TOOL_USAGE;
    }

    if (a->val[GMS_OPT_GMS] == NULL) {
        if (a->val[GMS_OPT_GMS_TOKEN_FILE] || a->val[GMS_OPT_GMS_CA_FILE]
            || a->val[GMS_OPT_GMS_TIMEOUT] || a->val[GMS_OPT_PAGE_SIZE]
            || a->val[GMS_OPT_PRIVILEGES] || a->val[GMS_OPT_INACTIVE])
        {
            gms_tool_msgs_error(t, "the GMS options, --page-size, --privileges "
                                "and --inactive need --gms");
            return GMS_TOOL_USAGE;
        }

        gms_tool_progress_open(t, &progress);
        rc = gms_sync_tokens_run(t, &conf, &counts, NULL);
        gms_tool_progress_close(t);

        if (rc == GMS_TOOL_OK) {
            gms_cmd_sync_print(t, &counts);
        }

        return rc;
    }

    if (gms_tool_options_gms(t, a, &gms) != 0
        || gms_tool_options_page_size(t, a, &conf.page_size) != 0
        || gms_sync_users_inactive_option(t, a->val[GMS_OPT_INACTIVE], &refuse)
           != 0)
    {
        return GMS_TOOL_USAGE;
    }

    conf.gms = &gms;
    mode = GMS_TOOL_PRIVILEGES_POLICIES;

    if (a->val[GMS_OPT_PRIVILEGES]
        && gms_tool_options_privileges(t, a->val[GMS_OPT_PRIVILEGES], &mode)
           != 0)
    {
        return GMS_TOOL_USAGE;
    }

    gms_tool_progress_open(t, &progress);
    rc = gms_sync_tokens_run(t, &conf, &counts, &holders);
    gms_tool_progress_close(t);

    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    gms_cmd_sync_print(t, &counts);
    fflush(stdout);

    if (mode != GMS_TOOL_PRIVILEGES_OFF) {
        memset(&privileges, 0, sizeof(gms_tool_privileges_counts_t));

        rc = gms_sync_privileges_mirror(t, &gms, mode, &holders, NULL, 0,
                                        &privileges);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }

        gms_sync_privileges_print(&privileges);
        fflush(stdout);
    }

    /* the holders' status, then their tokens out of the cache or back */
    memset(&users, 0, sizeof(gms_tool_users_counts_t));

    rc = gms_sync_users_check(t, &gms, refuse, &holders, NULL, &users);

    if (rc == GMS_TOOL_OK) {
        gms_sync_users_print(&users);
    }

done:

    gms_sync_tokens_holders_free(&holders);

    return rc;
}


/*
 * The counts on stdout; a warning (a listing lacking most of the cache,
 * tokens held back) on stderr, after them.
 */

static void
gms_cmd_sync_print(gms_tool_t *t, const gms_tool_sync_counts_t *counts)
{
    gms_sync_tokens_print(counts);

    if (counts->warning[0]) {
        fflush(stdout);
        gms_tool_msgs_warn(t, "warning: %s", counts->warning);
    }
}

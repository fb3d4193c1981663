
/*
 * gms-token follow: a long-running process that keeps the cache equal to
 * DataHub.  Two loops, so that a revocation never waits for the users:
 *
 *  - the token cycle, in the main thread: 'sync --prune' from GMS (the
 *    listing, the prune, the invalidations), every --interval;
 *  - the privileges mirror and the users' status, in a second thread
 *    (gms_follow_privileges.c), every --privileges-interval, from the
 *    token holders the last token cycle handed over (the tokens are
 *    listed once, by the token cycle).
 *
 * With --changes auto or stream, a third thread (gms_follow_stream.c)
 * follows DataHub's change stream (its Events API, 1.3+) and applies each
 * change as it comes.  While it runs, both loops above become the
 * reconciliation: whole every --full-interval, and once more when the
 * stream asks (no offset, a gap), which wakes the main thread's wait.
 * Whenever it does not run, the token cycle polls every --interval as
 * before.
 *
 * The first token cycle runs at once, the next one an interval after the
 * end of the last, give or take a tenth; a failed cycle waits twice as
 * long as the one before, up to five minutes or the interval if that is
 * longer (gms_follow_cycle.c), and a failed listing never prunes
 * (gms_sync_tokens_run writes nothing unless every page came, and prunes
 * no more than --max-prune without GMS's entity store's word).
 *
 * Several followers may share one Redis: only the one holding the lease
 * (gms_follow_lease.c) works; the others try to take it at each of their
 * cycles, and as soon as it expires.  Once the main thread took it, the
 * lease keeper's threads renew it every half interval, however long a
 * cycle blocks, and stop both working threads at once if it is lost or
 * goes unrenewed for nearly its PX.
 *
 * Each cycle is one line: on stdout when it succeeded, on stderr when it
 * failed, with the error the cycle stopped at; so is each change of the
 * lease.  The outcome is kept in the hash <prefix>sync (gms_contract.h),
 * for monitoring.  SIGTERM, SIGINT and SIGQUIT (the container image's
 * STOPSIGNAL, nginx's graceful stop) end the waits of both threads at
 * once, abandon a GMS request under way, release the lease, and exit 0.
 */


#include <string.h>

#include "gms_cmd_follow.h"
#include "gms_follow_run.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"
#include "gms_sync_users.h"


static int gms_cmd_follow_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_follow_interval(gms_tool_t *t, const char *option,
    const char *value, int64_t *ms);
static int gms_follow_zero(const char *value);
static int gms_follow_changes_option(gms_tool_t *t, const char *value,
    gms_follow_changes_e *changes);


const gms_tool_command_t  gms_cmd_follow = {
    "follow", gms_cmd_follow_handler,
    GMS_OPTS_CONN | GMS_OPTS_GMS | GMS_OPT(GMS_OPT_INTERVAL)
    | GMS_OPT(GMS_OPT_PRIVILEGES_INTERVAL) | GMS_OPT(GMS_OPT_PAGE_SIZE)
    | GMS_OPT(GMS_OPT_FULL_INTERVAL)
    | GMS_OPT(GMS_OPT_PRIVILEGES) | GMS_OPT(GMS_OPT_MAX_PRUNE)
    | GMS_OPT(GMS_OPT_INACTIVE) | GMS_OPT(GMS_OPT_CHANGES)
    | GMS_OPT(GMS_OPT_METRICS_FILE), 0, 0,
    "Usage: gms-token follow --gms URL [--interval TIME] [--page-size N]\n"
    "                        [--full-interval TIME]\n"
    "                        [--changes auto|stream|poll]\n"
    "                        [--max-prune N|P%]\n"
    "                        [--privileges policies|graphql|off]\n"
    "                        [--inactive refuse|keep|mark]\n"
    "                        [--privileges-interval TIME]\n"
    "                        [--metrics-file PATH] [GMS options]\n"
    "                        [connection options]\n"
    "\n"
    "Runs until SIGTERM, SIGINT or SIGQUIT, then exits 0.  Every interval:\n"
    "'sync --gms URL --prune' (the tokens: listed, cached, pruned), the\n"
    "listing read whole every --full-interval; in between, by spans of\n"
    "createdAt: every span counted, those whose count changed and the\n"
    "last one listed again, the others' tokens taken as last listed\n"
    "('spans=LISTED/SPANS' on the line).\n"
    "Beside it, in a thread of its own, every --privileges-interval: the\n"
    "privileges of the users holding a token, mirrored as --privileges\n"
    "says, then their status read as --inactive says (a revocation never\n"
    "waits for either).  The first token cycle runs at once, the first\n"
    "mirror as soon as that cycle listed the holders; each next one an\n"
    "interval after the last ended, give or take 10%.  A failed cycle (GMS\n"
    "or Redis) never prunes, and is retried after twice the last wait, up\n"
    "to 5 minutes (or the interval if longer).  Each cycle is one line: on\n"
    "stdout with its counts ('ok tokens=...', 'privileges ok users=...'),\n"
    "or on stderr with its error.  The hash <prefix>sync holds, of the\n"
    "tokens: at (the last complete cycle, ms since the epoch), tokens,\n"
    "interval, error, error_at, failures (of the last failure; error \"\"\n"
    "and failures 0 after a success), warning, warning_at,\n"
    "listing_epoch (of the last whole listing); of the\n"
    "privileges: privileges_at, users, privileges_interval,\n"
    "privileges_error, privileges_error_at, privileges_failures; holder,\n"
    "holder_since (the follower that works).  Every token or user changed\n"
    "is published on <prefix>invalidate.  The GMS token file is read again\n"
    "at each cycle.\n"
    "\n"
    "With the stream (--changes; DataHub 1.3+, its Events API enabled,\n"
    "the account holding GET_METADATA_CHANGE_LOG_EVENTS or\n"
    "GET_TOPIC_EVENTS), a thread of its own long-polls GMS's\n"
    "/openapi/v1/events/poll (its Metadata Change Log) and applies each\n"
    "change as it comes: a revoked token deleted, a new one cached, a\n"
    "user's status read again, the privileges mirrored again; its offset\n"
    "is kept in <prefix>sync (stream_offset), where a restarted follower\n"
    "or a standby resumes.  No offset, one GMS refuses, or a gap: from\n"
    "the end, then one whole listing and mirror.  Meanwhile the tokens\n"
    "are listed whole, and the privileges mirrored, every\n"
    "--full-interval only.  Lines: 'changes: stream (...)', 'stream ok\n"
    "events=...', on stderr 'changes: polling ...: WHY' and 'stream gap:\n"
    "...'.  <prefix>sync: changes, stream_at, stream_lag_ms,\n"
    "stream_events, stream_rejected, stream_reconcile (whole listings\n"
    "owed: a follower stopped in one leaves it to the next).\n"
    "\n"
    "Several followers may run against one Redis: the one holding the\n"
    "lease <prefix>lease (host:pid:nonce, for 2 intervals and 2s, renewed\n"
    "every half interval by a thread of its own, however long a cycle\n"
    "takes) works, the others stand by, write nothing, and try to take it\n"
    "at each of their cycles and as soon as it expires; a stopped\n"
    "follower releases it.  A holder that loses it, or cannot renew it\n"
    "for nearly that long, stops working at once.  Taking, losing and\n"
    "standing by are each a line.\n"
    "\n"
    "  --interval TIME     between token cycles: 15s (default), 1m, 1h; at "
    "least 1s\n"
    "  --page-size N       tokens asked a page (default 1000)\n"
    "  --max-prune N|P%    of the cached tokens, how many or what share a\n"
    "                      cycle may prune without GMS's entity store\n"
    "                      confirming each one gone (default "
    GMS_TOOL_MAX_PRUNE_DEFAULT "; as sync)\n"
    "  --privileges MODE   policies (default): DataHub's policies, "
    "matched here;\n"
    "                      graphql: asked of GMS for each user; off: "
    "none\n"
    "  --inactive MODE     refuse (default): the tokens of users DataHub\n"
    "                      refuses (suspended, removed, deleted) out of\n"
    "                      the cache; keep: DataHub before 1.2; mark:\n"
    "                      cached, in <prefix>inactive: the edge answers\n"
    "                      by its gms_datahub_version (as sync)\n"
    "  --privileges-interval TIME\n"
    "                      between mirrors: 60s (default); at least 1s\n"
    "  --full-interval TIME\n"
    "                      between whole listings: 10m (default); 0: every\n"
    "                      listing whole\n"
    "  --changes MODE      auto (default): the stream where GMS serves it,\n"
    "                      polling where it answers 404 or 403 (the stream\n"
    "                      tried again every --full-interval), so that any\n"
    "                      DataHub works; stream: the stream required;\n"
    "                      poll: every --interval only\n"
    "  --metrics-file PATH the follower's metrics, in Prometheus's text\n"
    "                      format, rewritten whole (a temporary file in\n"
    "                      the same directory, renamed) at each cycle:\n"
    "                      node_exporter's textfile collector reads it\n"
    "                      (a name ending in .prom); gms_follow_* as\n"
    "                      docs/gms-token.md lists them\n"
    GMS_TOOL_GMS_USAGE
    GMS_TOOL_CONN_USAGE
};


static int
gms_cmd_follow_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    gms_graphql_conf_t  gms;
    gms_follow_conf_t   conf;

    memset(&conf, 0, sizeof(gms_follow_conf_t));

    if (gms_tool_options_gms(t, a, &gms) != 0
        || gms_tool_options_page_size(t, a, &conf.sync.page_size) != 0
        || gms_sync_tokens_max_prune_option(t, a->val[GMS_OPT_MAX_PRUNE],
                                            &conf.sync.max_prune)
           != 0
        || gms_sync_users_inactive_option(t, a->val[GMS_OPT_INACTIVE],
                                          &conf.refuse)
           != 0)
    {
        return GMS_TOOL_USAGE;
    }

    /*
     * A revocation waits for the whole listing: at tens of thousands of
     * tokens its requests (and GMS's latency each) are what it costs, so
     * follow asks 1,000 a page where sync asks 100
     */
    if (a->val[GMS_OPT_PAGE_SIZE] == NULL) {
        conf.sync.page_size = 1000;
    }

    conf.gms = &gms;
    conf.sync.prune = 1;
    conf.sync.health = 1;
    conf.interval_ms = 15000;
    conf.privileges_interval_ms = 60000;
    conf.full_interval_ms = 600000;

    if (gms_follow_interval(t, "--interval", a->val[GMS_OPT_INTERVAL],
                            &conf.interval_ms)
        != 0
        || gms_follow_interval(t, "--privileges-interval",
                               a->val[GMS_OPT_PRIVILEGES_INTERVAL],
                               &conf.privileges_interval_ms)
           != 0
        || (!gms_follow_zero(a->val[GMS_OPT_FULL_INTERVAL])
            && gms_follow_interval(t, "--full-interval",
                                   a->val[GMS_OPT_FULL_INTERVAL],
                                   &conf.full_interval_ms)
               != 0))
    {
        return GMS_TOOL_USAGE;
    }

    if (gms_follow_zero(a->val[GMS_OPT_FULL_INTERVAL])) {
        conf.full_interval_ms = 0;
    }

    if (gms_follow_changes_option(t, a->val[GMS_OPT_CHANGES], &conf.changes)
        != 0)
    {
        return GMS_TOOL_USAGE;
    }

    conf.metrics_file = a->val[GMS_OPT_METRICS_FILE];
    conf.privileges = GMS_TOOL_PRIVILEGES_POLICIES;

    if (a->val[GMS_OPT_PRIVILEGES]
        && gms_tool_options_privileges(t, a->val[GMS_OPT_PRIVILEGES],
                                       &conf.privileges)
           != 0)
    {
        return GMS_TOOL_USAGE;
    }

    return gms_follow_run(t, &conf);
}


/*
 * --changes: auto by default, the stream where DataHub serves it (1.3+,
 * EVENTS_API_ENABLED, the account's privilege) and polling elsewhere, so
 * that a follower upgraded in front of any DataHub goes on working
 */

static int
gms_follow_changes_option(gms_tool_t *t, const char *value,
    gms_follow_changes_e *changes)
{
    if (value == NULL || strcmp(value, "auto") == 0) {
        *changes = GMS_FOLLOW_CHANGES_AUTO;

    } else if (strcmp(value, "stream") == 0) {
        *changes = GMS_FOLLOW_CHANGES_STREAM;

    } else if (strcmp(value, "poll") == 0) {
        *changes = GMS_FOLLOW_CHANGES_POLL;

    } else {
        gms_tool_msgs_error(t, "--changes: '%s' is not auto, stream or poll",
                            gms_tool_msgs_shown(value));
        return -1;
    }

    return 0;
}


/* a time from 1s to 1d; value NULL: the default stays */

static int
gms_follow_interval(gms_tool_t *t, const char *option, const char *value,
    int64_t *ms)
{
    if (value == NULL) {
        return 0;
    }

    if (gms_tool_input_parse_duration(value, ms) != 0
        || *ms < 1000 || *ms > 86400000)
    {
        gms_tool_msgs_error(t, "%s: '%s' is not a time from 1s to 1d (as 15s, "
                            "1m)", option, gms_tool_msgs_shown(value));
        return -1;
    }

    return 0;
}


/* --full-interval 0 (0s, 0m ...): every listing whole */

static int
gms_follow_zero(const char *value)
{
    int64_t  ms;

    if (value == NULL) {
        return 0;
    }

    return strcmp(value, "0") == 0
           || (gms_tool_input_parse_duration(value, &ms) == 0 && ms == 0);
}

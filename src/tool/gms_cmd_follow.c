
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
 * (gms_tool_sync_run writes nothing unless every page came, and prunes
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


#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "gms_contract.h"
#include "gms_cmd_follow.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_sync_tokens.h"
#include "gms_sync_privileges.h"
#include "gms_sync_users.h"
#include "gms_follow_cycle.h"
#include "gms_follow_lease.h"
#include "gms_follow_privileges.h"
#include "gms_follow_stream.h"


/*
 * The lease lasts two intervals and this margin (PX); the keeper renews
 * it every half interval, whatever the working threads do: a holder that
 * misses three renewals in a row keeps it, a dead one loses it PX after
 * its last renewal.
 */
#define GMS_FOLLOW_LEASE_MARGIN  2000

/* a standby tries again this long after the holder's lease runs out */
#define GMS_FOLLOW_LEASE_AFTER   50


/* gms-token follow: its options */
typedef struct {
    const gms_graphql_conf_t  *gms;
    gms_tool_sync_conf_t       sync;       /* its gms is the run's own */
    gms_tool_privileges_e      privileges;
    int                        refuse;     /* --inactive refuse */
    int64_t                    interval_ms;
    int64_t                    privileges_interval_ms;
    int64_t                    full_interval_ms;   /* 0: always whole */
    gms_follow_changes_e       changes;
} gms_follow_conf_t;


/* the token cycle's state, in the main thread */
typedef struct {
    gms_tool_t                *tool;
    const gms_follow_conf_t   *conf;
    gms_graphql_conf_t         gms;        /* its stop: a signal, the
                                              lease lost */
    gms_tool_sync_conf_t       sync;       /* with that gms, and spans */
    gms_sync_spans_t           spans;      /* the listing kept */
    gms_follow_lease_t         lease;      /* the standby's tries' */
    int64_t                    px;         /* the lease's */
    int                        mirror;     /* the second thread runs */
    int                        streaming;  /* the stream thread runs */
    int                        keeping;    /* the keeper's threads run */
    int                        wake[2];    /* the stream wakes the wait */
    int                        reconcile;  /* a whole listing owed */
    int                        working;    /* the lease held at the last
                                              cycle */
    int                        failed;     /* the last token cycle */
    int64_t                    last;       /* the last token cycle's end
                                              (monotonic), 0: none since
                                              the lease was taken */
    int64_t                    after;      /* the next one after it, when
                                              polling */
    int64_t                    after_stream;   /* ... the stream running */
    gms_follow_journal_t       journal;
    uint64_t                   listing;    /* the journal's seq when the
                                              token cycle began */
    gms_follow_privileges_t    privileges;
    gms_follow_stream_t        stream;
    gms_follow_keeper_t        keeper;
} gms_follow_t;


static int gms_cmd_follow_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_follow_interval(gms_tool_t *t, const char *option,
    const char *value, int64_t *ms);
static int gms_follow_zero(const char *value);
static int gms_follow_changes_option(gms_tool_t *t, const char *value,
    gms_follow_changes_e *changes);
static int gms_follow_run(gms_tool_t *t, const gms_follow_conf_t *conf);
static int gms_follow_start(gms_follow_t *f);
static void gms_follow_stop(gms_follow_t *f);
static int gms_follow_lease(gms_follow_t *f);
static void gms_follow_lost(void *data);
static int gms_follow_due(gms_follow_t *f, int64_t *wait);
static int gms_follow_resumed(gms_follow_t *f);
static int gms_follow_tokens(gms_follow_t *f);
static const char *gms_follow_changes(gms_follow_t *f);
static void gms_follow_wake(void *data);
static int gms_follow_owed(gms_follow_t *f, long long *owed);
static int gms_follow_owed_paid(gms_follow_t *f, long long owed);
static int gms_follow_revoked(void *data, const char *id);
static void gms_follow_writing(void *data, int begin);
static int64_t gms_follow_standby_wait(gms_follow_t *f);
static void gms_follow_on_signal(int signo);
static int gms_follow_signals(void);
static int gms_follow_health_ok(gms_follow_t *f,
    const gms_tool_sync_counts_t *sync);
static void gms_follow_wait(gms_follow_t *f, int64_t ms);
static void gms_follow_drop(gms_tool_t *t);


const gms_tool_command_t  gms_cmd_follow = {
    "follow", gms_cmd_follow_handler,
    GMS_OPTS_CONN | GMS_OPTS_GMS | GMS_OPT(GMS_OPT_INTERVAL)
    | GMS_OPT(GMS_OPT_PRIVILEGES_INTERVAL) | GMS_OPT(GMS_OPT_PAGE_SIZE)
    | GMS_OPT(GMS_OPT_FULL_INTERVAL)
    | GMS_OPT(GMS_OPT_PRIVILEGES) | GMS_OPT(GMS_OPT_MAX_PRUNE)
    | GMS_OPT(GMS_OPT_INACTIVE) | GMS_OPT(GMS_OPT_CHANGES), 0, 0,
    "Usage: gms-token follow --gms URL [--interval TIME] [--page-size N]\n"
    "                        [--full-interval TIME]\n"
    "                        [--changes auto|stream|poll]\n"
    "                        [--max-prune N|P%]\n"
    "                        [--privileges policies|graphql|off]\n"
    "                        [--inactive refuse|keep|mark]\n"
    "                        [--privileges-interval TIME] [GMS options]\n"
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
    GMS_TOOL_GMS_USAGE
    GMS_TOOL_CONN_USAGE
};


static volatile sig_atomic_t  gms_follow_signal;

/* the token cycle's GMS request abandoned: a signal, or the lease lost */
static volatile sig_atomic_t  gms_follow_abandon;


static int
gms_cmd_follow_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    gms_graphql_conf_t  gms;
    gms_follow_conf_t   conf;

    memset(&conf, 0, sizeof(gms_follow_conf_t));

    if (gms_tool_gms_options(t, a, &gms) != 0
        || gms_tool_page_size(t, a, &conf.sync.page_size) != 0
        || gms_tool_max_prune_option(t, a->val[GMS_OPT_MAX_PRUNE],
                                     &conf.sync.max_prune)
           != 0
        || gms_tool_inactive_option(t, a->val[GMS_OPT_INACTIVE],
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

    conf.privileges = GMS_TOOL_PRIVILEGES_POLICIES;

    if (a->val[GMS_OPT_PRIVILEGES]
        && gms_tool_privileges_option(t, a->val[GMS_OPT_PRIVILEGES],
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
        gms_tool_error(t, "--changes: '%s' is not auto, stream or poll",
                       gms_tool_shown(value));
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

    if (gms_tool_parse_duration(value, ms) != 0
        || *ms < 1000 || *ms > 86400000)
    {
        gms_tool_error(t, "%s: '%s' is not a time from 1s to 1d (as 15s, "
                       "1m)", option, gms_tool_shown(value));
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
           || (gms_tool_parse_duration(value, &ms) == 0 && ms == 0);
}


static int
gms_follow_run(gms_tool_t *t, const gms_follow_conf_t *conf)
{
    int                     rc, working, cycle;
    char                    now[32], error[sizeof(t->error)];
    int64_t                 wait;
    unsigned                failures;
    gms_follow_t            f;

    if (gms_follow_signals() != 0) {
        gms_tool_error(t, "cannot set the signal handlers: %s",
                       strerror(errno));
        return GMS_TOOL_USAGE;
    }

    /* a log line is seen when it is written, through a pipe as well */
    setvbuf(stdout, NULL, _IOLBF, 0);

    srandom((unsigned) getpid() ^ (unsigned) gms_tool_now_ms());

    memset(&f, 0, sizeof(gms_follow_t));
    f.tool = t;
    f.conf = conf;
    f.gms = *conf->gms;
    f.gms.stop = &gms_follow_abandon;
    f.sync = conf->sync;
    f.sync.gms = &f.gms;
    f.spans.full_interval = conf->full_interval_ms;
    f.sync.spans = &f.spans;
    f.sync.revoked = gms_follow_revoked;
    f.sync.writing = gms_follow_writing;
    f.sync.revoked_data = &f;
    f.px = 2 * conf->interval_ms + GMS_FOLLOW_LEASE_MARGIN;
    f.wake[0] = -1;
    f.wake[1] = -1;

    /* a cycle's errors go into its one line, not on lines of their own */
    t->quiet = 1;
    failures = 0;

    /*
     * A bad --redis or --password-file is a usage error, not an outage.
     * This first connection also sets up, once, what gms_tool_conn.c
     * keeps in statics (hiredis's reply functions), before the other
     * threads connect.
     */
    rc = gms_tool_connect(t);

    if (rc == GMS_TOOL_USAGE) {
        memcpy(error, t->error, sizeof(error));
        t->quiet = 0;
        gms_tool_error(t, "%s", error);
        return GMS_TOOL_USAGE;
    }

    if (rc != GMS_TOOL_OK) {
        gms_follow_drop(t);
    }

    rc = gms_follow_start(&f);
    if (rc != GMS_TOOL_OK) {
        t->quiet = 0;
        gms_tool_error(t, "%s", f.tool->error);
        return rc;
    }

    while (!gms_follow_signal) {

        /* a cycle: a standby's try for the lease, the tokens if held */

        t->error[0] = '\0';
        working = 0;
        cycle = 0;
        wait = conf->interval_ms;

        rc = gms_follow_lease(&f);

        if (rc == GMS_TOOL_OK) {
            /*
             * Cleared before the lease is read: a loss from then on
             * abandons this cycle; a signal since the test above ends it.
             */
            __atomic_store_n(&gms_follow_abandon, 0, __ATOMIC_SEQ_CST);

            if (gms_follow_signal) {
                break;
            }

            working = gms_follow_keeper_held(&f.keeper);

            if (working && !f.working) {
                /* the lease taken: the first cycle as soon as it may */
                f.last = 0;
                f.reconcile = 0;
            }

            f.working = working;

            /* with the stream running, a cycle only when it is due */
            if (working) {
                cycle = gms_follow_due(&f, &wait);
            }

            if (cycle) {
                rc = gms_follow_tokens(&f);
            }
        }

        if (rc != GMS_TOOL_OK && gms_follow_signal) {
            /* abandoned for the signal: not a failure of GMS or Redis */
            break;
        }

        if (rc != GMS_TOOL_OK && working
            && !gms_follow_keeper_held(&f.keeper))
        {
            /* abandoned for the lease, lost as the keeper's line said */
            rc = GMS_TOOL_OK;
        }

        if (rc == GMS_TOOL_OK && working && !cycle) {
            /* not due: wait for it, or for the stream's word */

        } else if (rc == GMS_TOOL_OK) {
            failures = 0;
            wait = gms_follow_keeper_held(&f.keeper)
                   ? gms_follow_jitter(conf->interval_ms)
                   : gms_follow_standby_wait(&f);

            f.failed = 0;
            f.after = wait;
            f.after_stream = gms_follow_jitter(conf->full_interval_ms
                                               ? conf->full_interval_ms
                                               : conf->interval_ms);
            f.last = gms_follow_monotonic();

        } else {
            failures++;

            if (rc == GMS_TOOL_REDIS) {
                gms_follow_drop(t);
            }

            gms_follow_clean(t->error);

            /* a standby writes nothing but its tries for the lease */
            if (gms_follow_keeper_held(&f.keeper)) {
                gms_follow_health_failed(t, "", failures);
            }

            wait = gms_follow_jitter(gms_follow_backoff(conf->interval_ms,
                                                        failures));

            f.failed = 1;
            f.after = wait;
            f.after_stream = wait;
            f.last = gms_follow_monotonic();

            gms_follow_say_failed("", rc, t->error, wait);
        }

        gms_follow_wait(&f, wait);
    }

    gms_follow_stop(&f);

    printf("gms-token follow: %s stopped by %s\n",
           gms_follow_time(now, sizeof(now)),
           gms_follow_signal == SIGINT ? "SIGINT"
           : gms_follow_signal == SIGQUIT ? "SIGQUIT" : "SIGTERM");

    t->quiet = 0;

    return GMS_TOOL_OK;
}


/*
 * What the libraries keep global is set up here, once, before the other
 * threads: libcurl's global state (gms_graphql_open calls
 * curl_global_init again, which then only counts) and jansson's hash
 * seed.  The privileges thread and the lease keeper get their own copies
 * of the tool's state and connect on their own.  The keeper renews every
 * half interval: four tries, at least, before the lease could run out.
 */

static int
gms_follow_start(gms_follow_t *f)
{
    int                       rc;
    gms_follow_stream_conf_t  stream;

    gms_follow_lease_init(&f->lease);

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        gms_tool_error(f->tool, "cannot initialise libcurl");
        return GMS_TOOL_GMS;
    }

    json_object_seed(0);

    /* the stream's wake-ups: never a write that blocks, nor one lost */
    if (pipe(f->wake) != 0
        || fcntl(f->wake[0], F_SETFL, O_NONBLOCK) != 0
        || fcntl(f->wake[1], F_SETFL, O_NONBLOCK) != 0
        || fcntl(f->wake[0], F_SETFD, FD_CLOEXEC) != 0
        || fcntl(f->wake[1], F_SETFD, FD_CLOEXEC) != 0)
    {
        gms_tool_error(f->tool, "cannot make a pipe: %s", strerror(errno));
        return GMS_TOOL_USAGE;
    }

    if (gms_follow_journal_init(&f->journal) != 0) {
        gms_tool_error(f->tool, "out of memory");
        return GMS_TOOL_USAGE;
    }

    rc = gms_follow_privileges_start(&f->privileges, f->tool, &f->gms,
                                     f->conf->privileges, f->conf->refuse,
                                     f->conf->privileges_interval_ms);
    if (rc != 0) {
        gms_tool_error(f->tool, "cannot start the privileges thread: %s",
                       strerror(rc));
        return GMS_TOOL_USAGE;
    }

    f->mirror = 1;

    gms_follow_privileges_journal(&f->privileges, &f->journal);

    if (f->conf->changes != GMS_FOLLOW_CHANGES_POLL) {
        memset(&stream, 0, sizeof(gms_follow_stream_conf_t));
        stream.mode = f->conf->changes;
        stream.refuse = f->conf->refuse;
        stream.interval_ms = f->conf->interval_ms;
        stream.privileges_interval_ms = f->conf->privileges_interval_ms;
        stream.full_interval_ms = f->conf->full_interval_ms
                                  ? f->conf->full_interval_ms
                                  : f->conf->interval_ms;
        stream.privileges = &f->privileges;
        stream.journal = &f->journal;
        stream.wake = gms_follow_wake;
        stream.wake_data = f;

        rc = gms_follow_stream_start(&f->stream, f->tool, &f->gms, &stream);
        if (rc != 0) {
            gms_follow_privileges_stop(&f->privileges);
            f->mirror = 0;

            gms_tool_error(f->tool, "cannot start the stream thread: %s",
                           strerror(rc));
            return GMS_TOOL_USAGE;
        }

        f->streaming = 1;
    }

    rc = gms_follow_keeper_start(&f->keeper, f->tool, &f->lease, f->px,
                                 f->conf->interval_ms / 2, gms_follow_lost,
                                 f);
    if (rc != 0) {
        if (f->streaming) {
            gms_follow_stream_stop(&f->stream);
            f->streaming = 0;
        }

        gms_follow_privileges_stop(&f->privileges);
        f->mirror = 0;

        gms_tool_error(f->tool, "cannot start the lease keeper: %s",
                       strerror(rc));
        return GMS_TOOL_USAGE;
    }

    f->keeping = 1;

    return GMS_TOOL_OK;
}


/*
 * The keeper first, so that it neither renews nor calls back any more;
 * the stream and the mirror next, so that nothing is written after the
 * lease is released; then the lease, which a standby takes at its next
 * try rather than after it expires.  The release compares: a lease the
 * keeper lost is left alone.
 */

static void
gms_follow_stop(gms_follow_t *f)
{
    char  now[32];

    if (f->keeping) {
        if (gms_follow_keeper_stop(&f->keeper)) {
            f->lease.held = 1;
        }

        f->keeping = 0;
    }

    if (f->streaming) {
        gms_follow_stream_stop(&f->stream);
        f->streaming = 0;
    }

    if (f->mirror) {
        gms_follow_privileges_stop(&f->privileges);
        f->mirror = 0;
    }

    if (f->lease.held
        && gms_follow_lease_release(f->tool, &f->lease) == GMS_TOOL_OK)
    {
        printf("gms-token follow: %s lease released: %s\n",
               gms_follow_time(now, sizeof(now)), f->lease.me);
    }

    gms_sync_spans_free(&f->spans);
    gms_follow_journal_free(&f->journal);

    if (f->wake[0] != -1) {
        close(f->wake[0]);
        close(f->wake[1]);
    }
}


/*
 * A standby's try for the lease, for PX: taken, the privileges thread is
 * told and the keeper renews it from then on; another's, a line when it
 * is a holder not yet named.  A holder's lease is the keeper's alone.
 */

static int
gms_follow_lease(gms_follow_t *f)
{
    int                 rc;
    char                now[32];
    int64_t             sent;
    gms_follow_lease_e  event;

    if (gms_follow_keeper_held(&f->keeper)) {
        return GMS_TOOL_OK;
    }

    if (f->lease.held) {
        /* lost or given up, as the keeper's line said: what it learnt */
        gms_follow_keeper_view(&f->keeper, &f->lease);
    }

    /* PX runs from when Redis got the try: from this, at the latest */
    sent = gms_follow_monotonic();

    rc = gms_follow_lease_keep(f->tool, &f->lease, f->px, &event);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    switch (event) {

    case GMS_FOLLOW_LEASE_TAKEN:
        printf("gms-token follow: %s lease taken: %s works\n",
               gms_follow_time(now, sizeof(now)), f->lease.me);

        /* before the keeper, which alone may tell them the lease lost */
        gms_follow_privileges_lease(&f->privileges, 1);

        if (f->streaming) {
            gms_follow_stream_lease(&f->stream, 1);
        }

        gms_follow_keeper_hold(&f->keeper, sent);
        break;

    case GMS_FOLLOW_LEASE_STANDBY:
        printf("gms-token follow: %s lease held by %s; standing by\n",
               gms_follow_time(now, sizeof(now)), f->lease.holder);
        break;

    default:
        /* the holder named already */
        break;
    }

    return GMS_TOOL_OK;
}


/*
 * The keeper lost the lease or gave it up (in a thread of its own): the
 * work under way stops, a GMS request abandoned in every thread.  The
 * mirror and the stream run as long as the keeper does.
 */

static void
gms_follow_lost(void *data)
{
    gms_follow_t *f = data;

    __atomic_store_n(&gms_follow_abandon, 1, __ATOMIC_SEQ_CST);

    gms_follow_privileges_lease(&f->privileges, 0);

    if (f->streaming) {
        gms_follow_stream_lease(&f->stream, 0);
    }

    gms_follow_wake(f);
}


/*
 * 1: a token cycle is due now; 0: *wait until it is, or until the stream
 * wakes the wait.  Polling (the stream not running): every --interval
 * from the end of the last, as before.  The stream running: a whole
 * listing every --full-interval, and at once when the stream asks for
 * one (a reconciliation, kept until a cycle succeeds).  The lease just
 * taken, the stream's first answer is waited for: a stream resumed at
 * its kept offset lists nothing.  After a failure, the backoff in any
 * case.
 */

static int
gms_follow_due(gms_follow_t *f, int64_t *wait)
{
    int64_t                    after, left;
    gms_follow_stream_state_e  state;

    if (!f->streaming) {
        return 1;
    }

    if (gms_follow_stream_reconcile(&f->stream)) {
        f->reconcile = 1;
    }

    state = gms_follow_stream_state(&f->stream);

    if (f->last == 0) {
        if (f->reconcile || state == GMS_FOLLOW_STREAM_DOWN) {
            return 1;
        }

        if (state == GMS_FOLLOW_STREAM_STARTING) {
            *wait = f->conf->interval_ms;
            return 0;
        }

        /*
         * Resumed at the kept offset: the first listing a period on; the
         * privileges thread starts from the holders the cache has
         */
        if (gms_follow_resumed(f) != GMS_TOOL_OK) {
            return 1;
        }

        f->last = gms_follow_monotonic();
        f->failed = 0;
        f->after = gms_follow_jitter(f->conf->interval_ms);
        f->after_stream = gms_follow_jitter(f->conf->full_interval_ms
                                            ? f->conf->full_interval_ms
                                            : f->conf->interval_ms);
    }

    if (f->failed) {
        /* the backoff, whatever runs */
        after = f->after;

    } else if (f->reconcile) {
        return 1;

    } else {
        after = state == GMS_FOLLOW_STREAM_RUNNING ? f->after_stream
                                                   : f->after;
    }

    left = f->last + after - gms_follow_monotonic();

    if (left <= 0) {
        return 1;
    }

    *wait = left;

    return 0;
}


/*
 * The stream resumed: the token holders read from the cache, handed over
 * to the privileges thread as a listing's.  A failure: a whole listing
 * instead.
 */

static int
gms_follow_resumed(gms_follow_t *f)
{
    gms_tool_holders_t  holders;

    if (gms_tool_holders_cached(f->tool, &holders) != 0) {
        gms_tool_close(f->tool);
        return GMS_TOOL_REDIS;
    }

    gms_follow_privileges_hand(&f->privileges, &holders, 0);

    return GMS_TOOL_OK;
}


/* a token cycle: sync --prune, the holders handed over, its line */

static int
gms_follow_tokens(gms_follow_t *f)
{
    int                     rc, n, whole;
    char                    now[32], extra[96];
    long long               owed;
    int64_t                 start, took;
    gms_tool_t             *t;
    gms_tool_holders_t      holders;
    gms_tool_sync_counts_t  counts;

    t = f->tool;

    memset(&counts, 0, sizeof(gms_tool_sync_counts_t));
    memset(&holders, 0, sizeof(gms_tool_holders_t));

    start = gms_follow_monotonic();

    whole = f->reconcile
            || (f->streaming && gms_follow_stream_state(&f->stream)
                                == GMS_FOLLOW_STREAM_RUNNING);

    if (whole) {
        /* the stream's reconciliation: the listing read whole */
        f->spans.ready = 0;
    }

    /* the reconciliations the stream counted as owed, this one covers */
    owed = 0;

    if (f->reconcile && gms_follow_owed(f, &owed) != 0) {
        return GMS_TOOL_REDIS;
    }

    /* what the stream changes from now on, the listing never undoes */
    f->listing = gms_follow_journal_begin(&f->journal,
                                          GMS_FOLLOW_JOURNAL_TOKENS);

    rc = gms_tool_sync_run(t, &f->sync, &counts, &holders);

    gms_follow_journal_end(&f->journal, GMS_FOLLOW_JOURNAL_TOKENS);

    if (rc == GMS_TOOL_OK
        && __atomic_load_n(&gms_follow_abandon, __ATOMIC_SEQ_CST))
    {
        /* the lease lost, or a signal, after the listing: no more writes */
        gms_tool_holders_free(&holders);
        gms_tool_error(t, "stopped");
        rc = GMS_TOOL_GMS;
    }

    if (rc == GMS_TOOL_OK) {
        /* reconciling: and the privileges mirror and users' status, now */
        gms_follow_privileges_hand(&f->privileges, &holders, f->reconcile);

        if (f->reconcile) {
            f->reconcile = 0;

            if (owed && gms_follow_owed_paid(f, owed) != 0) {
                rc = GMS_TOOL_REDIS;
            }
        }
    }

    if (rc == GMS_TOOL_OK) {
        rc = gms_follow_health_ok(f, &counts);
    }

    took = gms_follow_monotonic() - start;

    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    /* held= and inactive= only when not 0, as sync prints them */

    n = 0;
    extra[0] = '\0';

    if (counts.held) {
        n = snprintf(extra, sizeof(extra), " held=%zu", counts.held);
    }

    if (counts.inactive) {
        n += snprintf(extra + n, sizeof(extra) - n, " inactive=%zu",
                      counts.inactive);
    }

    /* a cycle by spans: how many were listed again */
    if (counts.spans) {
        snprintf(extra + n, sizeof(extra) - n, " spans=%zu/%zu",
                 counts.spans_listed, counts.spans);
    }

    printf("gms-token follow: %s ok tokens=%zu added=%zu updated=%zu "
           "unchanged=%zu expired=%zu pruned=%zu kept=%zu%s in %lldms\n",
           gms_follow_time(now, sizeof(now)), counts.tokens, counts.added,
           counts.updated, counts.unchanged, counts.expired, counts.pruned,
           counts.kept, extra, (long long) took);

    /* a listing lacking most of the cache, tokens held back */
    if (counts.warning[0]) {
        gms_follow_clean(counts.warning);
        fprintf(stderr, "gms-token follow: %s warning: %s\n",
                gms_follow_time(now, sizeof(now)), counts.warning);
    }

    return GMS_TOOL_OK;
}


/*
 * <prefix>sync's stream_reconcile: the reconciliations the stream asked
 * and counted (gms_follow_stream.c) before it kept the offset that needs
 * them, so that a holder stopped before one was done leaves it owed to
 * the next.  Read when one starts; what it covered taken back once it is
 * done (HINCRBY, never a reset: an ask that came meanwhile stays owed).
 */

static int
gms_follow_owed(gms_follow_t *f, long long *owed)
{
    char        *key, *end;
    size_t       key_len;
    redisReply  *reply;
    gms_tool_t  *t;

    t = f->tool;
    *owed = 0;

    if (t->conn == NULL && gms_tool_connect(t) != GMS_TOOL_OK) {
        return -1;
    }

    key = gms_tool_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_command(t, "HGET %b stream_reconcile", key, key_len);
    free(key);

    if (gms_tool_reply_error(t, reply, "HGET") != 0) {
        return -1;
    }

    if (reply->type == REDIS_REPLY_STRING && reply->len > 0
        && reply->len < 20)
    {
        *owed = strtoll(reply->str, &end, 10);

        if (end != reply->str + reply->len || *owed < 0) {
            /* not a count of ours: none taken back (a stray value costs
             * a reconciliation at each start, no more) */
            *owed = 0;
        }
    }

    freeReplyObject(reply);

    return 0;
}


static int
gms_follow_owed_paid(gms_follow_t *f, long long owed)
{
    char        *key;
    size_t       key_len;
    redisReply  *reply;
    gms_tool_t  *t;

    t = f->tool;

    key = gms_tool_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_command(t, "HINCRBY %b stream_reconcile %lld", key,
                             key_len, -owed);
    free(key);

    if (gms_tool_reply_error(t, reply, "HINCRBY") != 0) {
        return -1;
    }

    freeReplyObject(reply);

    return 0;
}


/*
 * A standby tries again at its next cycle, or as soon as the holder's
 * lease has run out, if that comes first: it takes over at most the
 * lease's PX after the holder's last renewal.
 */

static int64_t
gms_follow_standby_wait(gms_follow_t *f)
{
    int64_t  wait;

    wait = gms_follow_jitter(f->conf->interval_ms);

    if (f->lease.left >= 0 && f->lease.left + GMS_FOLLOW_LEASE_AFTER < wait)
    {
        wait = f->lease.left + GMS_FOLLOW_LEASE_AFTER;
    }

    return wait;
}


static void
gms_follow_on_signal(int signo)
{
    gms_follow_signal = signo;
    gms_follow_abandon = 1;
}


/*
 * No SA_RESTART: a signal ends the wait.  A Redis command under way is
 * finished (gms_tool_conn.c waits again after EINTR); it is short.
 * SIGPIPE is ignored: a connection Redis closed is an error to report
 * and retry, not the end of the process.
 */

static int
gms_follow_signals(void)
{
    sigset_t          set;
    struct sigaction  sa;

    memset(&sa, 0, sizeof(struct sigaction));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = gms_follow_on_signal;

    if (sigaction(SIGTERM, &sa, NULL) != 0
        || sigaction(SIGINT, &sa, NULL) != 0
        || sigaction(SIGQUIT, &sa, NULL) != 0)
    {
        return -1;
    }

    sa.sa_handler = SIG_IGN;

    if (sigaction(SIGPIPE, &sa, NULL) != 0) {
        return -1;
    }

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGQUIT);

    return pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}


/*
 * One HSET: a reader never sees the counts of one sync with another's
 * at.  The privileges thread keeps its own fields, the lease the holder.
 */

static int
gms_follow_health_ok(gms_follow_t *f, const gms_tool_sync_counts_t *sync)
{
    char        *key;
    size_t       key_len;
    redisReply  *reply;
    gms_tool_t  *t;

    t = f->tool;

    key = gms_tool_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return GMS_TOOL_REDIS;
    }

    /* hiredis's format knows no %zu */
    reply = gms_tool_command(t, "HSET %b at %lld tokens %llu error %s "
                             "failures 0 interval %lld changes %s", key,
                             key_len, (long long) gms_tool_now_ms(),
                             (unsigned long long) sync->tokens, "",
                             (long long) f->conf->interval_ms,
                             gms_follow_changes(f));
    free(key);

    if (gms_tool_reply_error(t, reply, "HSET") != 0) {
        return GMS_TOOL_REDIS;
    }

    freeReplyObject(reply);

    return GMS_TOOL_OK;
}


/*
 * gms_tool_sync_run's hook: 1 for a token the stream deleted (or wrote)
 * since this cycle's listing began, which the listing must not write
 * back
 */

static int
gms_follow_revoked(void *data, const char *id)
{
    gms_follow_t *f = data;

    return gms_follow_journal_since(&f->journal, GMS_FOLLOW_JOURNAL_TOKEN,
                                    id, GMS_TOKEN_ID_LEN, f->listing);
}


/* gms_tool_sync_run's other hook: its writes and the stream's, in turn */

static void
gms_follow_writing(void *data, int begin)
{
    gms_follow_t *f = data;

    gms_follow_journal_writes(&f->journal, begin);
}


/* <prefix>sync's changes: what brings the changes now */

static const char *
gms_follow_changes(gms_follow_t *f)
{
    return f->streaming && gms_follow_stream_state(&f->stream)
                           == GMS_FOLLOW_STREAM_RUNNING
           ? "stream" : "poll";
}


/*
 * The stream thread's word (it runs, it stopped, a reconciliation is
 * asked), or the lease lost: the main thread's wait ends (a full pipe
 * already will).
 */

static void
gms_follow_wake(void *data)
{
    gms_follow_t *f = data;

    ssize_t  n;

    n = write(f->wake[1], "", 1);
    (void) n;
}


/*
 * Sleeps, unless a signal came or comes, or the stream thread wakes it:
 * the signals are blocked between the test of the flag and pselect(),
 * which unblocks them while it waits.
 */

static void
gms_follow_wait(gms_follow_t *f, int64_t ms)
{
    int              n;
    char             buf[64];
    fd_set           fds;
    int64_t          end, left;
    sigset_t         set, old;
    struct timespec  ts;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGQUIT);

    end = gms_follow_monotonic() + ms;

    pthread_sigmask(SIG_BLOCK, &set, &old);

    while (!gms_follow_signal) {
        left = end - gms_follow_monotonic();

        if (left <= 0) {
            break;
        }

        ts.tv_sec = left / 1000;
        ts.tv_nsec = (long) (left % 1000) * 1000000;

        FD_ZERO(&fds);
        FD_SET(f->wake[0], &fds);

        n = pselect(f->wake[0] + 1, &fds, NULL, NULL, &ts, &old);

        if (n > 0) {
            while (read(f->wake[0], buf, sizeof(buf)) > 0) {
                /* drained */
            }

            break;
        }
    }

    pthread_sigmask(SIG_SETMASK, &old, NULL);
}


/*
 * After a Redis failure the next cycle connects afresh: the name is
 * resolved again, and with --sentinel the master is asked for again.
 */

static void
gms_follow_drop(gms_tool_t *t)
{
    gms_tool_close(t);
}


/*
 * gms-token follow: a long-running process that keeps the cache equal to
 * DataHub.  A cycle is 'sync --prune' from GMS then the privileges mirror;
 * the first runs at once, the next one an interval after the end of the
 * last, give or take a tenth (so that followers started together drift
 * apart).  A failed cycle waits twice as long as the one before, up to
 * five minutes or the interval if that is longer, and a failed listing
 * never prunes (gms_tool_sync writes nothing unless every page came).
 * The tokens are listed once a cycle: the mirror takes their users from
 * the sync.
 *
 * Each cycle is one line: on stdout when it succeeded, on stderr when it
 * failed, with the error the cycle stopped at.  Its outcome is kept in
 * the hash <prefix>sync (gms_token.h), for monitoring.  SIGTERM, SIGINT
 * and SIGQUIT (the container image's STOPSIGNAL, nginx's graceful stop)
 * end the wait at once, abandon a GMS request under way, and exit 0.
 */


#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "gms_contract.h"
#include "gms_cmd_follow.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_sync_tokens.h"
#include "gms_sync_privileges.h"


/* the longest wait after failures, unless the interval is longer */
#define GMS_FOLLOW_BACKOFF_MAX 300000

/* the wait varies by up to this many thousandths either way */
#define GMS_FOLLOW_JITTER      100


/* gms-token follow: sync and the mirror, every interval, until a signal */
typedef struct {
    const gms_graphql_conf_t  *gms;
    long                       page_size;
    gms_tool_privileges_e      privileges;
    int64_t                    interval_ms;
} gms_follow_conf_t;


static int gms_cmd_follow_handler(gms_tool_t *t, gms_tool_args_t *a);
static int gms_follow_run(gms_tool_t *t, const gms_follow_conf_t *conf);
static void gms_follow_on_signal(int signo);
static int gms_follow_signals(void);
static int gms_follow_health_ok(gms_tool_t *t,
    const gms_follow_conf_t *conf, const gms_tool_sync_counts_t *sync,
    const gms_tool_privileges_counts_t *privileges);
static void gms_follow_health_failed(gms_tool_t *t, unsigned failures);
static int64_t gms_follow_backoff(int64_t interval, unsigned failures);
static int64_t gms_follow_jitter(int64_t ms);
static void gms_follow_wait(int64_t ms);
static void gms_follow_drop(gms_tool_t *t);
static void gms_follow_clean(char *s);
static const char *gms_follow_time(char *buf, size_t size);
static int64_t gms_follow_monotonic(void);


const gms_tool_command_t  gms_cmd_follow = {
    "follow", gms_cmd_follow_handler,
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
    GMS_TOOL_CONN_USAGE
};


static volatile sig_atomic_t  gms_follow_signal;


static int
gms_cmd_follow_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    gms_graphql_conf_t  gms;
    gms_follow_conf_t   conf;

    memset(&conf, 0, sizeof(gms_follow_conf_t));

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

    return gms_follow_run(t, &conf);
}


static int
gms_follow_run(gms_tool_t *t, const gms_follow_conf_t *conf)
{
    int                           rc;
    char                          now[32], error[sizeof(t->error)];
    int64_t                       start, took, wait;
    unsigned                      failures;
    gms_graphql_conf_t            gms;
    gms_tool_holders_t            holders;
    gms_tool_sync_counts_t        counts;
    gms_tool_privileges_counts_t  pcounts;

    if (gms_follow_signals() != 0) {
        gms_tool_error(t, "cannot set the signal handlers: %s",
                       strerror(errno));
        return GMS_TOOL_USAGE;
    }

    /* a log line is seen when it is written, through a pipe as well */
    setvbuf(stdout, NULL, _IOLBF, 0);

    srandom((unsigned) getpid() ^ (unsigned) gms_tool_now_ms());

    gms = *conf->gms;
    gms.stop = &gms_follow_signal;

    /* a cycle's errors go into its one line, not on lines of their own */
    t->quiet = 1;
    failures = 0;

    /* a bad --redis or --password-file is a usage error, not an outage */
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

    while (!gms_follow_signal) {
        memset(&counts, 0, sizeof(gms_tool_sync_counts_t));
        memset(&pcounts, 0, sizeof(gms_tool_privileges_counts_t));
        t->error[0] = '\0';

        start = gms_follow_monotonic();

        rc = gms_tool_sync(t, 1, &gms, conf->page_size, &counts, &holders);

        if (rc == GMS_TOOL_OK) {
            rc = gms_tool_privileges_mirror(t, &gms, conf->privileges,
                                            &holders, &pcounts);
            gms_tool_holders_free(&holders);
        }

        if (rc == GMS_TOOL_OK) {
            rc = gms_follow_health_ok(t, conf, &counts, &pcounts);
        }

        took = gms_follow_monotonic() - start;

        if (rc != GMS_TOOL_OK && gms_follow_signal) {
            /* abandoned for the signal: not a failure of GMS or Redis */
            break;
        }

        if (rc == GMS_TOOL_OK) {
            failures = 0;
            wait = gms_follow_jitter(conf->interval_ms);

            printf("gms-token follow: %s ok tokens=%zu added=%zu "
                   "updated=%zu unchanged=%zu expired=%zu pruned=%zu "
                   "kept=%zu users=%zu changed=%zu removed=%zu skipped=%zu "
                   "in %lldms\n",
                   gms_follow_time(now, sizeof(now)), counts.tokens,
                   counts.added, counts.updated, counts.unchanged,
                   counts.expired, counts.pruned, counts.kept,
                   pcounts.users, pcounts.changed, pcounts.removed,
                   pcounts.skipped, (long long) took);

        } else {
            failures++;

            if (rc == GMS_TOOL_REDIS) {
                gms_follow_drop(t);
            }

            gms_follow_clean(t->error);
            gms_follow_health_failed(t, failures);

            wait = gms_follow_jitter(gms_follow_backoff(conf->interval_ms,
                                                        failures));

            fprintf(stderr, "gms-token follow: %s failed (%s): %s; "
                    "next try in %.1fs\n", gms_follow_time(now, sizeof(now)),
                    rc == GMS_TOOL_REDIS ? "Redis"
                    : rc == GMS_TOOL_GMS ? "GMS" : "bad input",
                    t->error[0] ? t->error : "no message",
                    (double) wait / 1000);
        }

        gms_follow_wait(wait);
    }

    printf("gms-token follow: %s stopped by %s\n",
           gms_follow_time(now, sizeof(now)),
           gms_follow_signal == SIGINT ? "SIGINT"
           : gms_follow_signal == SIGQUIT ? "SIGQUIT" : "SIGTERM");

    t->quiet = 0;

    return GMS_TOOL_OK;
}


static void
gms_follow_on_signal(int signo)
{
    gms_follow_signal = signo;
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

    return sigprocmask(SIG_UNBLOCK, &set, NULL);
}


/* one HSET: a reader never sees the counts of one sync with another's at */

static int
gms_follow_health_ok(gms_tool_t *t, const gms_follow_conf_t *conf,
    const gms_tool_sync_counts_t *sync,
    const gms_tool_privileges_counts_t *privileges)
{
    char        *key;
    size_t       key_len;
    redisReply  *reply;

    key = gms_tool_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return GMS_TOOL_REDIS;
    }

    /* hiredis's format knows no %zu */
    reply = gms_tool_command(t, "HSET %b at %lld tokens %llu users %llu "
                             "error %s failures 0 interval %lld", key, key_len,
                             (long long) gms_tool_now_ms(),
                             (unsigned long long) sync->tokens,
                             (unsigned long long) privileges->users, "",
                             (long long) conf->interval_ms);
    free(key);

    if (gms_tool_reply_error(t, reply, "HSET") != 0) {
        return GMS_TOOL_REDIS;
    }

    freeReplyObject(reply);

    return GMS_TOOL_OK;
}


/*
 * The error and when, beside the last success's at, tokens and users;
 * Redis itself may be what failed: then it is only logged.
 */

static void
gms_follow_health_failed(gms_tool_t *t, unsigned failures)
{
    char        *key, error[sizeof(t->error)];
    size_t       key_len;
    redisReply  *reply;

    /* the cycle's error is the one to log, not this one's */
    memcpy(error, t->error, sizeof(error));

    if (t->conn == NULL && gms_tool_connect(t) != GMS_TOOL_OK) {
        gms_follow_drop(t);
        goto done;
    }

    key = gms_tool_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        goto done;
    }

    reply = gms_tool_command(t, "HSET %b error %s error_at %lld "
                             "failures %u", key, key_len, error,
                             (long long) gms_tool_now_ms(), failures);
    free(key);

    if (gms_tool_reply_error(t, reply, "HSET") != 0) {
        gms_follow_drop(t);
        goto done;
    }

    freeReplyObject(reply);

done:

    memcpy(t->error, error, sizeof(error));
}


/* interval * 2^failures, up to GMS_FOLLOW_BACKOFF_MAX or the interval */

static int64_t
gms_follow_backoff(int64_t interval, unsigned failures)
{
    int64_t   ms, max;
    unsigned  i;

    max = interval > GMS_FOLLOW_BACKOFF_MAX ? interval
                                            : GMS_FOLLOW_BACKOFF_MAX;
    ms = interval;

    for (i = 0; i < failures && ms < max; i++) {
        ms *= 2;
    }

    return ms < max ? ms : max;
}


static int64_t
gms_follow_jitter(int64_t ms)
{
    long  r;

    r = random() % (2 * GMS_FOLLOW_JITTER + 1) - GMS_FOLLOW_JITTER;

    return ms + ms / 1000 * r;
}


/*
 * Sleeps, unless a signal came or comes: it is blocked between the test
 * of the flag and pselect(), which unblocks it while it waits.
 */

static void
gms_follow_wait(int64_t ms)
{
    int64_t          end, left;
    sigset_t         set, old;
    struct timespec  ts;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGQUIT);

    end = gms_follow_monotonic() + ms;

    sigprocmask(SIG_BLOCK, &set, &old);

    while (!gms_follow_signal) {
        left = end - gms_follow_monotonic();

        if (left <= 0) {
            break;
        }

        ts.tv_sec = left / 1000;
        ts.tv_nsec = (long) (left % 1000) * 1000000;

        (void) pselect(0, NULL, NULL, NULL, &ts, &old);
    }

    sigprocmask(SIG_SETMASK, &old, NULL);
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


/* GMS's messages are any text: one line in the log and the hash */

static void
gms_follow_clean(char *s)
{
    for ( /* void */ ; *s; s++) {
        if ((unsigned char) *s < 0x20 || *s == 0x7f) {
            *s = ' ';
        }
    }
}


static const char *
gms_follow_time(char *buf, size_t size)
{
    time_t     now;
    struct tm  tm;

    now = time(NULL);

    if (gmtime_r(&now, &tm) == NULL
        || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    {
        snprintf(buf, size, "%lld", (long long) now);
    }

    return buf;
}


static int64_t
gms_follow_monotonic(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

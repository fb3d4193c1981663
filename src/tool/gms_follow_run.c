
/*
 * gms-token follow's main thread (gms_cmd_follow.c says what follow does):
 * the lease taken and watched, the privileges, stream and keeper threads
 * started and stopped, each token cycle run when due and its outcome kept
 * in <prefix>sync, the waits between them, which a signal or the stream
 * thread ends.
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

#include "gms_contract.h"
#include "gms_follow_run.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_sync_tokens.h"
#include "gms_sync_privileges.h"
#include "gms_follow_cycle.h"
#include "gms_follow_lease.h"
#include "gms_follow_privileges.h"
#include "gms_follow_stream.h"
#include "gms_follow_metrics.h"
#include "gms_tool_progress.h"


/*
 * The lease lasts two intervals and this margin (PX); the keeper renews
 * it every half interval, whatever the working threads do: a holder that
 * misses three renewals in a row keeps it, a dead one loses it PX after
 * its last renewal.
 */
#define GMS_FOLLOW_LEASE_MARGIN  2000

/* a standby tries again this long after the holder's lease runs out */
#define GMS_FOLLOW_LEASE_AFTER   50


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
    int                        listed;     /* a token cycle succeeded:
                                              no more progress shown */
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


static int gms_follow_start(gms_follow_t *f);
static void gms_follow_stop(gms_follow_t *f);
static int gms_follow_lease(gms_follow_t *f);
static void gms_follow_lost(void *data);
static int gms_follow_due(gms_follow_t *f, int64_t *wait);
static int gms_follow_resumed(gms_follow_t *f);
static int gms_follow_tokens(gms_follow_t *f);
static int gms_follow_owed(gms_follow_t *f, long long *owed);
static int gms_follow_owed_paid(gms_follow_t *f, long long owed);
static int64_t gms_follow_standby_wait(gms_follow_t *f);
static void gms_follow_on_signal(int signo);
static int gms_follow_signals(void);
static int gms_follow_health_ok(gms_follow_t *f,
    const gms_tool_sync_counts_t *sync);
static int gms_follow_revoked(void *data, const char *id);
static void gms_follow_writing(void *data, int begin);
static const char *gms_follow_changes(gms_follow_t *f);
static void gms_follow_wake(void *data);
static void gms_follow_wait(gms_follow_t *f, int64_t ms);
static void gms_follow_drop(gms_tool_t *t);


static volatile sig_atomic_t  gms_follow_signal;

/* the token cycle's GMS request abandoned: a signal, or the lease lost */
static volatile sig_atomic_t  gms_follow_abandon;


int
gms_follow_run(gms_tool_t *t, const gms_follow_conf_t *conf)
{
    int                     rc, working, cycle;
    char                    now[32], error[sizeof(t->error)];
    int64_t                 wait;
    unsigned                failures;
    gms_follow_t            f;

    if (gms_follow_signals() != 0) {
        gms_tool_msgs_error(t, "cannot set the signal handlers: %s",
                            strerror(errno));
        return GMS_TOOL_USAGE;
    }

    /* a log line is seen when it is written, through a pipe as well */
    setvbuf(stdout, NULL, _IOLBF, 0);

    srandom((unsigned) getpid() ^ (unsigned) gms_tool_redis_now_ms());

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

    /* before the threads, which copy f.gms */
    if (conf->metrics_file) {
        if (gms_follow_metrics_open(conf->metrics_file, error, sizeof(error))
            != 0)
        {
            gms_tool_msgs_error(t, "%s", error);
            return GMS_TOOL_USAGE;
        }

        f.gms.observe = gms_follow_metrics_request;
    }

    /* a cycle's errors go into its one line, not on lines of their own */
    t->quiet = 1;
    failures = 0;

    /*
     * A bad --redis or --password-file is a usage error, not an outage.
     * This first connection also sets up, once, what gms_tool_conn.c
     * keeps in statics (hiredis's reply functions), before the other
     * threads connect.
     */
    rc = gms_tool_redis_connect(t);

    if (rc == GMS_TOOL_USAGE) {
        memcpy(error, t->error, sizeof(error));
        t->quiet = 0;
        gms_tool_msgs_error(t, "%s", error);
        gms_follow_metrics_close();
        return GMS_TOOL_USAGE;
    }

    if (rc != GMS_TOOL_OK) {
        gms_follow_drop(t);
    }

    rc = gms_follow_start(&f);
    if (rc != GMS_TOOL_OK) {
        t->quiet = 0;
        gms_tool_msgs_error(t, "%s", f.tool->error);
        gms_follow_metrics_close();
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

            working = gms_follow_lease_held(&f.keeper);

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
            && !gms_follow_lease_held(&f.keeper))
        {
            /* abandoned for the lease, lost as the keeper's line said */
            rc = GMS_TOOL_OK;
        }

        if (rc == GMS_TOOL_OK && working && !cycle) {
            /* not due: wait for it, or for the stream's word */

        } else if (rc == GMS_TOOL_OK) {
            failures = 0;
            wait = gms_follow_lease_held(&f.keeper)
                   ? gms_follow_cycle_jitter(conf->interval_ms)
                   : gms_follow_standby_wait(&f);

            f.failed = 0;
            f.after = wait;
            f.after_stream = gms_follow_cycle_jitter(conf->full_interval_ms
                                                     ? conf->full_interval_ms
                                                     : conf->interval_ms);
            f.last = gms_follow_cycle_monotonic();

        } else {
            failures++;

            if (rc == GMS_TOOL_REDIS) {
                gms_follow_drop(t);
            }

            gms_follow_cycle_clean(t->error);

            /* a standby writes nothing but its tries for the lease */
            if (gms_follow_lease_held(&f.keeper)) {
                gms_follow_cycle_health_failed(t, "", failures);
            }

            wait = gms_follow_cycle_backoff(conf->interval_ms, failures);
            wait = gms_follow_cycle_jitter(wait);

            f.failed = 1;
            f.after = wait;
            f.after_stream = wait;
            f.last = gms_follow_cycle_monotonic();

            if (cycle) {
                gms_follow_metrics_cycle(GMS_FOLLOW_METRICS_TOKENS, 0);
            }

            gms_follow_cycle_say_failed("", rc, t->error, wait);
        }

        /* a standby's state too, at each of its tries */
        gms_follow_metrics_lease(gms_follow_lease_held(&f.keeper));

        gms_follow_wait(&f, wait);
    }

    gms_follow_stop(&f);

    /* what a scrape of the file finds once this process is gone */
    gms_follow_metrics_lease(0);
    gms_follow_metrics_close();

    printf("gms-token follow: %s stopped by %s\n",
           gms_follow_cycle_time(now, sizeof(now)),
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
        gms_tool_msgs_error(f->tool, "cannot initialise libcurl");
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
        gms_tool_msgs_error(f->tool, "cannot make a pipe: %s", strerror(errno));
        return GMS_TOOL_USAGE;
    }

    if (gms_follow_journal_init(&f->journal) != 0) {
        gms_tool_msgs_error(f->tool, "out of memory");
        return GMS_TOOL_USAGE;
    }

    rc = gms_follow_privileges_start(&f->privileges, f->tool, &f->gms,
                                     f->conf->privileges, f->conf->refuse,
                                     f->conf->privileges_interval_ms);
    if (rc != 0) {
        gms_tool_msgs_error(f->tool, "cannot start the privileges thread: %s",
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

            gms_tool_msgs_error(f->tool, "cannot start the stream thread: %s",
                                strerror(rc));
            return GMS_TOOL_USAGE;
        }

        f->streaming = 1;
    }

    rc = gms_follow_lease_start(&f->keeper, f->tool, &f->lease, f->px,
                                f->conf->interval_ms / 2, gms_follow_lost,
                                f);
    if (rc != 0) {
        if (f->streaming) {
            gms_follow_stream_stop(&f->stream);
            f->streaming = 0;
        }

        gms_follow_privileges_stop(&f->privileges);
        f->mirror = 0;

        gms_tool_msgs_error(f->tool, "cannot start the lease keeper: %s",
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
        if (gms_follow_lease_stop(&f->keeper)) {
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
               gms_follow_cycle_time(now, sizeof(now)), f->lease.me);
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

    if (gms_follow_lease_held(&f->keeper)) {
        return GMS_TOOL_OK;
    }

    if (f->lease.held) {
        /* lost or given up, as the keeper's line said: what it learnt */
        gms_follow_lease_view(&f->keeper, &f->lease);
    }

    /* PX runs from when Redis got the try: from this, at the latest */
    sent = gms_follow_cycle_monotonic();

    rc = gms_follow_lease_keep(f->tool, &f->lease, f->px, &event);
    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    switch (event) {

    case GMS_FOLLOW_LEASE_TAKEN:
        printf("gms-token follow: %s lease taken: %s works\n",
               gms_follow_cycle_time(now, sizeof(now)), f->lease.me);

        /* before the keeper, which alone may tell them the lease lost */
        gms_follow_privileges_lease(&f->privileges, 1);

        if (f->streaming) {
            gms_follow_stream_lease(&f->stream, 1);
        }

        gms_follow_lease_hold(&f->keeper, sent);
        break;

    case GMS_FOLLOW_LEASE_STANDBY:
        printf("gms-token follow: %s lease held by %s; standing by\n",
               gms_follow_cycle_time(now, sizeof(now)), f->lease.holder);
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

    gms_follow_metrics_lease(0);

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

        f->last = gms_follow_cycle_monotonic();
        f->failed = 0;
        f->after = gms_follow_cycle_jitter(f->conf->interval_ms);
        f->after_stream = gms_follow_cycle_jitter(f->conf->full_interval_ms
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

    left = f->last + after - gms_follow_cycle_monotonic();

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

    if (gms_sync_tokens_holders_cached(f->tool, &holders) != 0) {
        gms_tool_conn_close(f->tool);
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
    gms_tool_progress_t     progress;
    gms_tool_sync_counts_t  counts;

    t = f->tool;

    memset(&counts, 0, sizeof(gms_tool_sync_counts_t));
    memset(&holders, 0, sizeof(gms_tool_holders_t));

    start = gms_follow_cycle_monotonic();

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

    /* until one succeeds, the listing's progress on a terminal */
    if (!f->listed) {
        gms_tool_progress_open(t, &progress);
    }

    rc = gms_sync_tokens_run(t, &f->sync, &counts, &holders);

    gms_tool_progress_close(t);

    gms_follow_journal_end(&f->journal, GMS_FOLLOW_JOURNAL_TOKENS);

    if (rc == GMS_TOOL_OK
        && __atomic_load_n(&gms_follow_abandon, __ATOMIC_SEQ_CST))
    {
        /* the lease lost, or a signal, after the listing: no more writes */
        gms_sync_tokens_holders_free(&holders);
        gms_tool_msgs_error(t, "stopped");
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

    took = gms_follow_cycle_monotonic() - start;

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
           gms_follow_cycle_time(now, sizeof(now)), counts.tokens, counts.added,
           counts.updated, counts.unchanged, counts.expired, counts.pruned,
           counts.kept, extra, (long long) took);

    f->listed = 1;

    /* as the docs count what is published: the tokens written, pruned */
    gms_follow_metrics_tokens(counts.tokens, counts.pruned,
                              counts.added + counts.updated + counts.pruned);
    gms_follow_metrics_cycle(GMS_FOLLOW_METRICS_TOKENS, 1);

    /* a listing lacking most of the cache, tokens held back */
    if (counts.warning[0]) {
        gms_follow_cycle_clean(counts.warning);
        fprintf(stderr, "gms-token follow: %s warning: %s\n",
                gms_follow_cycle_time(now, sizeof(now)), counts.warning);
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

    if (t->conn == NULL && gms_tool_redis_connect(t) != GMS_TOOL_OK) {
        return -1;
    }

    key = gms_tool_redis_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_conn_command(t, "HGET %b stream_reconcile", key, key_len);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HGET") != 0) {
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

    key = gms_tool_redis_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_conn_command(t, "HINCRBY %b stream_reconcile %lld", key,
                                  key_len, -owed);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HINCRBY") != 0) {
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

    wait = gms_follow_cycle_jitter(f->conf->interval_ms);

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

    key = gms_tool_redis_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return GMS_TOOL_REDIS;
    }

    /* hiredis's format knows no %zu */
    reply = gms_tool_conn_command(t, "HSET %b at %lld tokens %llu error %s "
                                  "failures 0 interval %lld changes %s", key,
                                  key_len, (long long) gms_tool_redis_now_ms(),
                                  (unsigned long long) sync->tokens, "",
                                  (long long) f->conf->interval_ms,
                                  gms_follow_changes(f));
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HSET") != 0) {
        return GMS_TOOL_REDIS;
    }

    freeReplyObject(reply);

    return GMS_TOOL_OK;
}


/*
 * gms_sync_tokens_run's hook: 1 for a token the stream deleted (or wrote)
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


/* gms_sync_tokens_run's other hook: its writes and the stream's, in turn */

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

    end = gms_follow_cycle_monotonic() + ms;

    pthread_sigmask(SIG_BLOCK, &set, &old);

    while (!gms_follow_signal) {
        left = end - gms_follow_cycle_monotonic();

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
    gms_tool_conn_close(t);
}


/*
 * gms-token follow's second thread.  The privileges mirror and the users'
 * status cost GMS requests by the user, the token cycle by the page of
 * tokens: run one after the other, a revoked token waited for every
 * user's privileges (minutes at thousands of users).  Here they run
 * beside the token cycle, on their own cadence (--privileges-interval
 * from the end of the last, give or take a tenth; backing off after
 * failures as the token cycle does), from the latest token holders the
 * token cycle handed over; the thread waits for the first.  The mirror
 * comes first, then the users' status (gms_sync_users_check), read even
 * when the mirror failed: a suspended user's tokens go without waiting
 * for the policies to be readable again.  The thread works only while
 * this process holds the lease: losing it, or a signal, abandons a GMS
 * request under way, and the holders it had are dropped (another
 * process works now).
 *
 * Following DataHub's change stream, the stream asks for work now (a
 * kick): GMS_FOLLOW_KICK_MIRROR runs the mirror alone (a membership, a
 * role or a policy changed: a few requests), GMS_FOLLOW_KICK_USERS the
 * users' status of everyone (hundreds of requests at 20,000 users), both
 * at once if asked while the thread waits, again right after the run if
 * asked during one.  Whole runs (both) keep their cadence, which the
 * follower sets (gms_follow_privileges_cadence: --full-interval with the
 * stream, --privileges-interval when polling).  A kick waits for the
 * first holders, as a whole run does, and for a backoff after failures.
 * A token's holder the stream cached joins the holders at once (and
 * kicks a mirror if it is a new one), until a token cycle's holders have
 * it or GMS_FOLLOW_HOLDER_AGE of them lacked it.  With --privileges off
 * there is no mirror to kick.  With the journal, the users' status
 * leaves a user the stream read again while the check was reading GMS.
 *
 * The thread has its own copy of gms_tool_t (its own Redis connection and
 * error message) and opens its own GraphQL handle at each mirror.  Its
 * line is its own, and so are its fields of <prefix>sync: privileges_at,
 * users, privileges_interval, privileges_error, privileges_error_at,
 * privileges_failures.  Signals go to the main thread: they are blocked
 * here from the start.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gms_contract.h"
#include "gms_follow_privileges.h"
#include "gms_follow_cycle.h"
#include "gms_follow_metrics.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_sync_users.h"


/* how many token cycles' holders may lack a holder the stream added */
#define GMS_FOLLOW_HOLDER_AGE  3


/* a users' check's start in the journal, and its thread */
typedef struct {
    gms_follow_journal_t         *journal;
    uint64_t                      seq;
    gms_follow_privileges_t      *p;
} gms_follow_privileges_since_t;


static void *gms_follow_privileges_thread(void *data);
static void gms_follow_privileges_run(gms_follow_privileges_t *p,
    unsigned what);
static void gms_follow_privileges_metrics(unsigned what, int mrc, int urc,
    int hrc, const gms_tool_privileges_counts_t *counts,
    const gms_tool_users_counts_t *users);
static int gms_follow_privileges_users(gms_follow_privileges_t *p,
    gms_tool_users_counts_t *users);
static int gms_follow_privileges_touched(void *data, const char *urn,
    size_t len);
static void gms_follow_privileges_between(void *data);
static int gms_follow_privileges_next(gms_follow_privileges_t *p,
    unsigned *what);
static void gms_follow_privileges_took(gms_follow_privileges_t *p);
static void gms_follow_privileges_merge(gms_follow_privileges_t *p);
static int gms_follow_privileges_insert(gms_tool_holders_t *h,
    const char *urn, size_t len);
static int gms_follow_privileges_has(const gms_tool_holders_t *h,
    const char *urn, size_t len);
static void gms_follow_privileges_forget(gms_follow_privileges_t *p);
static int64_t gms_follow_privileges_done(gms_follow_privileges_t *p,
    unsigned what, int ok, int64_t start, unsigned *failures);
static int gms_follow_privileges_health_ok(gms_follow_privileges_t *p,
    const gms_tool_privileges_counts_t *counts, int64_t interval_ms);
static void gms_follow_privileges_abandon(gms_follow_privileges_t *p,
    int abandon);


/*
 * The thread starts with the signals blocked (it inherits the mask in
 * place at pthread_create); 0, or an errno.
 */

int
gms_follow_privileges_start(gms_follow_privileges_t *p, const gms_tool_t *t,
    const gms_graphql_conf_t *gms, gms_tool_privileges_e mode, int refuse,
    int64_t interval_ms)
{
    int  rc;

    memset(p, 0, sizeof(gms_follow_privileges_t));

    p->tool = *t;
    p->tool.conn = NULL;
    p->tool.quiet = 1;
    p->tool.error[0] = '\0';

    p->gms = *gms;
    p->gms.stop = &p->abandon;
    p->mode = mode;
    p->refuse = refuse;
    p->interval_ms = interval_ms;

    /* the waits count on the monotonic clock, as the token cycle's */
    rc = gms_follow_cycle_lock_init(&p->mutex, &p->cond);
    if (rc != 0) {
        return rc;
    }

    rc = gms_follow_cycle_thread_create(&p->thread,
                                        gms_follow_privileges_thread, p);

    if (rc != 0) {
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->mutex);
    }

    return rc;
}


/*
 * The token cycle's holders, taken over: the next mirror starts from
 * them.  whole: a whole run is due now (a reconciliation), asked under
 * the same lock, so that the run the holders wake is that one.
 */

void
gms_follow_privileges_hand(gms_follow_privileges_t *p,
    gms_tool_holders_t *holders, int whole)
{
    pthread_mutex_lock(&p->mutex);

    gms_sync_tokens_holders_free(&p->latest);
    p->latest = *holders;
    p->fresh = 1;
    memset(holders, 0, sizeof(gms_tool_holders_t));

    if (whole) {
        p->whole = 1;
    }

    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mutex);
}


/*
 * The lease taken or lost; lost, a mirror under way is abandoned, and
 * what the stream handed or asked for is forgotten (another process
 * works now); taken again, the first run comes with the first holders.
 */

void
gms_follow_privileges_lease(gms_follow_privileges_t *p, int held)
{
    pthread_mutex_lock(&p->mutex);

    if (p->held != held) {
        p->held = held;

        if (!held) {
            gms_follow_privileges_abandon(p, 1);
            gms_sync_tokens_holders_free(&p->latest);
            p->fresh = 0;
            p->kick = 0;
            p->whole = 0;
            p->due = 0;
            gms_follow_privileges_forget(p);
        }

        pthread_cond_broadcast(&p->cond);
    }

    pthread_mutex_unlock(&p->mutex);
}


/* ends the thread: a GMS request is abandoned, a Redis command finished */

void
gms_follow_privileges_stop(gms_follow_privileges_t *p)
{
    pthread_mutex_lock(&p->mutex);
    p->stop = 1;
    gms_follow_privileges_abandon(p, 1);
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mutex);

    pthread_join(p->thread, NULL);

    gms_follow_privileges_forget(p);
    free(p->added);
    gms_sync_tokens_holders_free(&p->latest);
    gms_sync_tokens_holders_free(&p->holders);
    gms_sync_privileges_memo_free(p->memo);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->mutex);
}


/* work now: during a run, another right after it */

void
gms_follow_privileges_kick(gms_follow_privileges_t *p, unsigned what)
{
    what &= GMS_FOLLOW_KICK_MIRROR | GMS_FOLLOW_KICK_USERS
            | GMS_FOLLOW_KICK_MEMBERS;

    if (p->mode == GMS_TOOL_PRIVILEGES_OFF || !(what & GMS_FOLLOW_KICK_MIRROR))
    {
        what &= ~(GMS_FOLLOW_KICK_MIRROR | GMS_FOLLOW_KICK_MEMBERS);
    }

    pthread_mutex_lock(&p->mutex);

    p->kick |= what;

    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mutex);
}


/*
 * A new token's holder, which the stream cached: the mirror works from
 * it at once rather than from the next token cycle's holders.  A holder
 * the thread has already changes nothing; a new one kicks a mirror.
 */

void
gms_follow_privileges_holder(gms_follow_privileges_t *p, const char *urn,
    size_t len)
{
    size_t                i, nalloc;
    gms_follow_holder_t  *h;

    if (len == 0 || memchr(urn, '\0', len) != NULL) {
        return;
    }

    pthread_mutex_lock(&p->mutex);

    if (!p->held
        || (p->fresh && gms_follow_privileges_has(&p->latest, urn, len))
        || (p->have && gms_follow_privileges_has(&p->holders, urn, len)))
    {
        goto done;
    }

    for (i = 0; i < p->nadded; i++) {
        h = &p->added[i];

        if (h->len == len && memcmp(h->urn, urn, len) == 0) {
            goto done;
        }
    }

    if (p->nadded == p->nalloc_added) {
        nalloc = p->nalloc_added ? p->nalloc_added * 2 : 16;

        h = realloc(p->added, nalloc * sizeof(gms_follow_holder_t));
        if (h == NULL) {
            goto done;
        }

        p->added = h;
        p->nalloc_added = nalloc;
    }

    h = &p->added[p->nadded];
    memset(h, 0, sizeof(gms_follow_holder_t));

    h->urn = malloc(len + 1);
    if (h->urn == NULL) {
        goto done;
    }

    memcpy(h->urn, urn, len);
    h->urn[len] = '\0';
    h->len = len;
    p->nadded++;

    if (p->mode != GMS_TOOL_PRIVILEGES_OFF) {
        p->kick |= GMS_FOLLOW_KICK_MIRROR;
        pthread_cond_broadcast(&p->cond);
    }

done:

    pthread_mutex_unlock(&p->mutex);
}


/* the whole runs' interval from now on; a shorter one counts at once */

void
gms_follow_privileges_cadence(gms_follow_privileges_t *p,
    int64_t interval_ms)
{
    int64_t  due;

    pthread_mutex_lock(&p->mutex);

    if (p->interval_ms != interval_ms) {
        p->interval_ms = interval_ms;

        if (p->failures == 0 && p->due) {
            due = gms_follow_cycle_monotonic()
                  + gms_follow_cycle_jitter(interval_ms);

            if (p->due > due) {
                p->due = due;
            }
        }

        pthread_cond_broadcast(&p->cond);
    }

    pthread_mutex_unlock(&p->mutex);
}


/* set before the lease is taken: the users' check asks it */

void
gms_follow_privileges_journal(gms_follow_privileges_t *p,
    gms_follow_journal_t *j)
{
    pthread_mutex_lock(&p->mutex);
    p->journal = j;
    pthread_mutex_unlock(&p->mutex);
}


static void *
gms_follow_privileges_thread(void *data)
{
    gms_follow_privileges_t *p = data;

    unsigned  what;

    while (gms_follow_privileges_next(p, &what) == 0) {
        gms_follow_privileges_run(p, what);
    }

    gms_tool_conn_close(&p->tool);

    return NULL;
}


/*
 * One run: the mirror, the users' status, or both (a whole run), its
 * line, its fields of <prefix>sync, and when the next whole run is due.
 * A mirror asked by a policy's change alone uses the members the last
 * mirror read (the memo); one asked with KICK_MEMBERS, or a whole run,
 * reads them again.
 */

static void
gms_follow_privileges_run(gms_follow_privileges_t *p, unsigned what)
{
    int                           rc, mrc, urc, hrc, abandoned, reuse;
    char                          now[32], error[sizeof(p->tool.error)];
    int64_t                       start, took, wait, interval;
    unsigned                      failures;
    gms_tool_t                   *t;
    gms_tool_users_counts_t       users;
    gms_tool_privileges_counts_t  counts;

    t = &p->tool;

    memset(&counts, 0, sizeof(gms_tool_privileges_counts_t));
    memset(&users, 0, sizeof(gms_tool_users_counts_t));
    t->error[0] = '\0';
    error[0] = '\0';

    start = gms_follow_cycle_monotonic();
    rc = GMS_TOOL_OK;
    urc = GMS_TOOL_OK;
    hrc = GMS_TOOL_OK;

    if (what & GMS_FOLLOW_KICK_MIRROR) {
        reuse = !(what & (GMS_FOLLOW_KICK_USERS | GMS_FOLLOW_KICK_MEMBERS));

        rc = gms_sync_privileges_mirror(t, &p->gms, p->mode, &p->holders,
                                        &p->memo, reuse, &counts);

        memcpy(error, t->error, sizeof(error));

        if (rc == GMS_TOOL_REDIS) {
            gms_tool_conn_close(t);
        }
    }

    mrc = rc;

    if ((what & GMS_FOLLOW_KICK_USERS)
        && !__atomic_load_n(&p->abandon, __ATOMIC_RELAXED))
    {
        urc = gms_follow_privileges_users(p, &users);

        /* the mirror's failure first, if both failed */
        if (rc == GMS_TOOL_OK) {
            rc = urc;

        } else {
            memcpy(t->error, error, sizeof(error));
        }
    }

    if (rc == GMS_TOOL_OK && __atomic_load_n(&p->abandon, __ATOMIC_RELAXED)) {
        /* the lease lost, or a signal, since: no more writes */
        rc = GMS_TOOL_GMS;
    }

    pthread_mutex_lock(&p->mutex);
    interval = p->interval_ms;
    pthread_mutex_unlock(&p->mutex);

    if (rc == GMS_TOOL_OK) {
        hrc = gms_follow_privileges_health_ok(p,
                              (what & GMS_FOLLOW_KICK_MIRROR) ? &counts
                                                              : NULL,
                              interval);
        rc = hrc;
    }

    took = gms_follow_cycle_monotonic() - start;

    abandoned = __atomic_load_n(&p->abandon, __ATOMIC_RELAXED);

    if (rc != GMS_TOOL_OK && abandoned) {
        /* a signal, or the lease lost: no failure of GMS or Redis */
        return;
    }

    wait = gms_follow_privileges_done(p, what, rc == GMS_TOOL_OK, start,
                                      &failures);

    gms_follow_privileges_metrics(what, mrc, urc, hrc, &counts, &users);

    if (rc != GMS_TOOL_OK) {
        if (rc == GMS_TOOL_REDIS) {
            gms_tool_conn_close(t);
        }

        gms_follow_cycle_clean(t->error);
        gms_follow_cycle_health_failed(t, "privileges_", failures);

        gms_follow_cycle_say_failed("privileges ", rc, t->error, wait);
        return;
    }

    gms_follow_cycle_time(now, sizeof(now));

    what &= GMS_FOLLOW_KICK_MIRROR | GMS_FOLLOW_KICK_USERS;

    if (what == GMS_FOLLOW_KICK_MIRROR) {
        printf("gms-token follow: %s privileges ok (mirror) users=%zu "
               "changed=%zu removed=%zu skipped=%zu members=%s in %lldms\n",
               now, counts.users, counts.changed, counts.removed,
               counts.skipped, counts.kept ? "kept" : "read",
               (long long) took);

    } else if (what == GMS_FOLLOW_KICK_USERS) {
        printf("gms-token follow: %s privileges ok (users) checked=%zu "
               "inactive=%zu newly=%zu reactivated=%zu dropped=%zu "
               "unknown=%zu in %lldms\n", now, users.checked,
               users.inactive, users.newly, users.reactivated,
               users.dropped, users.unknown, (long long) took);

    } else {
        printf("gms-token follow: %s privileges ok users=%zu changed=%zu "
               "removed=%zu skipped=%zu checked=%zu inactive=%zu newly=%zu "
               "reactivated=%zu dropped=%zu unknown=%zu in %lldms\n", now,
               counts.users, counts.changed, counts.removed, counts.skipped,
               users.checked, users.inactive, users.newly,
               users.reactivated, users.dropped, users.unknown,
               (long long) took);
    }
}


/*
 * Each part of a run counted with its own outcome; the health fields'
 * write failing fails both.  Published, as their lines count it: a
 * mirror's users changed and removed, a check's users newly inactive
 * and reactivated.
 */

static void
gms_follow_privileges_metrics(unsigned what, int mrc, int urc, int hrc,
    const gms_tool_privileges_counts_t *counts,
    const gms_tool_users_counts_t *users)
{
    int  ok;

    if (what & GMS_FOLLOW_KICK_MIRROR) {
        ok = mrc == GMS_TOOL_OK && hrc == GMS_TOOL_OK;

        if (ok) {
            gms_follow_metrics_users(counts->users,
                                     counts->changed + counts->removed);
        }

        gms_follow_metrics_cycle(GMS_FOLLOW_METRICS_PRIVILEGES, ok);
    }

    if (what & GMS_FOLLOW_KICK_USERS) {
        ok = urc == GMS_TOOL_OK && hrc == GMS_TOOL_OK;

        if (ok) {
            gms_follow_metrics_inactive(users->inactive,
                                        users->newly + users->reactivated);
        }

        gms_follow_metrics_cycle(GMS_FOLLOW_METRICS_USERS, ok);
    }
}


/* the users' check of everyone; with the journal, its marks skipped */

static int
gms_follow_privileges_users(gms_follow_privileges_t *p,
    gms_tool_users_counts_t *users)
{
    int                            rc;
    gms_tool_users_skip_t          skip;
    gms_follow_journal_t          *j;
    gms_follow_privileges_since_t  since;

    pthread_mutex_lock(&p->mutex);
    j = p->journal;
    pthread_mutex_unlock(&p->mutex);

    if (j == NULL) {
        return gms_sync_users_check(&p->tool, &p->gms, p->refuse,
                                    &p->holders, NULL, users);
    }

    since.journal = j;
    since.seq = gms_follow_journal_begin(j, GMS_FOLLOW_JOURNAL_PRIVILEGES);
    since.p = p;

    skip.touched = gms_follow_privileges_touched;
    skip.between = gms_follow_privileges_between;
    skip.data = &since;

    rc = gms_sync_users_check(&p->tool, &p->gms, p->refuse, &p->holders,
                              &skip, users);

    gms_follow_journal_end(j, GMS_FOLLOW_JOURNAL_PRIVILEGES);

    return rc;
}


static int
gms_follow_privileges_touched(void *data, const char *urn, size_t len)
{
    gms_follow_privileges_since_t *since = data;

    return gms_follow_journal_since(since->journal, GMS_FOLLOW_JOURNAL_USER,
                                    urn, len, since->seq);
}


/*
 * Between two waves of the users' check of a whole run (seconds at
 * thousands of users): a mirror the stream asked for meanwhile runs now
 * rather than after the check.  Not if it waits for a holder the stream
 * added: the check reads the holders, which cannot grow under it; that
 * mirror comes after the check, as before.
 */

static void
gms_follow_privileges_between(void *data)
{
    gms_follow_privileges_since_t *since = data;

    char                      error[sizeof(since->p->tool.error)];
    size_t                    i;
    unsigned                  what;
    gms_follow_privileges_t  *p;

    p = since->p;
    what = 0;

    pthread_mutex_lock(&p->mutex);

    if ((p->kick & GMS_FOLLOW_KICK_MIRROR) && p->failures == 0) {
        what = p->kick & (GMS_FOLLOW_KICK_MIRROR | GMS_FOLLOW_KICK_MEMBERS);

        for (i = 0; i < p->nadded; i++) {
            if (!p->added[i].merged) {
                what = 0;
                break;
            }
        }

        p->kick &= ~what;
    }

    pthread_mutex_unlock(&p->mutex);

    if (what == 0 || __atomic_load_n(&p->abandon, __ATOMIC_RELAXED)) {
        return;
    }

    memcpy(error, p->tool.error, sizeof(error));
    gms_follow_privileges_run(p, what);
    memcpy(p->tool.error, error, sizeof(error));
}


/*
 * Waits until the lease is held, some holders were handed over (the
 * latest taken if fresh), and a whole run is due or a kick asks for
 * work; -1 once told to stop.  *what: what to run.  Holders from before
 * the lease was lost are dropped: the next run waits for the next token
 * cycle's.  After failures, a kick waits for the backoff to end.
 */

static int
gms_follow_privileges_next(gms_follow_privileges_t *p, unsigned *what)
{
    int              rc;
    int64_t          now;
    struct timespec  ts;

    pthread_mutex_lock(&p->mutex);

    for ( ;; ) {
        if (p->stop) {
            rc = -1;
            break;
        }

        if (!p->held && p->have) {
            gms_sync_tokens_holders_free(&p->holders);
            p->have = 0;

            /* nobody here read the stream meanwhile: members read anew */
            gms_sync_privileges_memo_free(p->memo);
            p->memo = NULL;
        }

        if (p->held && p->fresh) {
            gms_sync_tokens_holders_free(&p->holders);
            p->holders = p->latest;
            memset(&p->latest, 0, sizeof(gms_tool_holders_t));
            p->fresh = 0;
            p->have = 1;
            gms_follow_privileges_took(p);
        }

        if (!(p->held && p->have)) {
            pthread_cond_wait(&p->cond, &p->mutex);
            continue;
        }

        gms_follow_privileges_merge(p);

        now = gms_follow_cycle_monotonic();

        if (now >= p->due || (p->whole && p->failures == 0)) {
            *what = GMS_FOLLOW_KICK_MIRROR | GMS_FOLLOW_KICK_USERS;
            p->whole = 0;

        } else if (p->kick && p->failures == 0) {
            *what = p->kick;

        } else {
            ts.tv_sec = p->due / 1000;
            ts.tv_nsec = (long) (p->due % 1000) * 1000000;

            (void) pthread_cond_timedwait(&p->cond, &p->mutex, &ts);
            continue;
        }

        p->kick = 0;
        gms_follow_privileges_abandon(p, 0);
        rc = 0;
        break;
    }

    pthread_mutex_unlock(&p->mutex);

    return rc;
}


/*
 * New holders taken from a token cycle: the stream's holders they have
 * are theirs now; the others are merged into them again, until
 * GMS_FOLLOW_HOLDER_AGE cycles lacked them (a token revoked since, or a
 * listing read before the stream cached it would lack it only once).
 */

static void
gms_follow_privileges_took(gms_follow_privileges_t *p)
{
    size_t                i, n;
    gms_follow_holder_t  *h;

    for (n = 0, i = 0; i < p->nadded; i++) {
        h = &p->added[i];

        if (gms_follow_privileges_has(&p->holders, h->urn, h->len)
            || ++h->age >= GMS_FOLLOW_HOLDER_AGE)
        {
            free(h->urn);
            continue;
        }

        h->merged = 0;
        p->added[n++] = *h;
    }

    p->nadded = n;
}


/* the stream's holders not merged yet put into the thread's */

static void
gms_follow_privileges_merge(gms_follow_privileges_t *p)
{
    size_t                i;
    gms_follow_holder_t  *h;

    for (i = 0; i < p->nadded; i++) {
        h = &p->added[i];

        if (h->merged) {
            continue;
        }

        if (gms_follow_privileges_has(&p->holders, h->urn, h->len)
            || gms_follow_privileges_insert(&p->holders, h->urn, h->len)
               == 0)
        {
            h->merged = 1;
        }
    }
}


/*
 * A holder with no token id known (a user's check drops none of it by
 * id), put among the listed ones, the first "listed" of urns[]: the
 * first unlisted one moves to the end; listed and total grow by one, so
 * that a listing complete or short stays so.  -1: no memory.
 */

static int
gms_follow_privileges_insert(gms_tool_holders_t *h, const char *urn,
    size_t len)
{
    char  *copy, **urns, **ids;

    copy = malloc(len + 1);
    if (copy == NULL) {
        return -1;
    }

    memcpy(copy, urn, len);
    copy[len] = '\0';

    urns = realloc(h->urns, (h->n + 1) * sizeof(char *));
    if (urns == NULL) {
        free(copy);
        return -1;
    }

    h->urns = urns;

    ids = realloc(h->ids, (h->n + 1) * sizeof(char *));
    if (ids == NULL) {
        free(copy);
        return -1;
    }

    if (h->ids == NULL) {
        /* holders with no ids at all: none known */
        memset(ids, 0, (h->n + 1) * sizeof(char *));
    }

    h->ids = ids;

    h->urns[h->n] = h->urns[h->listed];
    h->ids[h->n] = h->ids[h->listed];
    h->urns[h->listed] = copy;
    h->ids[h->listed] = NULL;

    h->n++;
    h->listed++;
    h->total++;

    return 0;
}


static int
gms_follow_privileges_has(const gms_tool_holders_t *h, const char *urn,
    size_t len)
{
    size_t  i;

    for (i = 0; i < h->n; i++) {
        if (h->urns[i] != NULL && strncmp(h->urns[i], urn, len) == 0
            && h->urns[i][len] == '\0')
        {
            return 1;
        }
    }

    return 0;
}


static void
gms_follow_privileges_forget(gms_follow_privileges_t *p)
{
    size_t  i;

    for (i = 0; i < p->nadded; i++) {
        free(p->added[i].urn);
    }

    p->nadded = 0;
}


/*
 * A run ended: a whole one sets when the next is due, a failure backs
 * the next off; the wait till then, and the failures in a row.  Whole
 * runs are due an interval from the start of the last, less up to a
 * tenth (followers drift apart), and a tenth of it after its end at the
 * soonest: a user is read again within an interval of the last time.
 */

static int64_t
gms_follow_privileges_done(gms_follow_privileges_t *p, unsigned what,
    int ok, int64_t start, unsigned *failures)
{
    int64_t  wait, now, spread, due;

    pthread_mutex_lock(&p->mutex);

    now = gms_follow_cycle_monotonic();

    if (ok) {
        p->failures = 0;
        wait = gms_follow_cycle_jitter(p->interval_ms);

        if ((what & GMS_FOLLOW_KICK_USERS) && (what & GMS_FOLLOW_KICK_MIRROR))
        {
            spread = wait - p->interval_ms;
            due = start + p->interval_ms - (spread < 0 ? -spread : spread);

            if (due < now + p->interval_ms / 10) {
                due = now + p->interval_ms / 10;
            }

            p->due = due;
            wait = due - now;
        }

    } else {
        p->failures++;
        wait = gms_follow_cycle_jitter(gms_follow_cycle_backoff(p->interval_ms,
                                                                p->failures));
        p->due = now + wait;
    }

    *failures = p->failures;

    pthread_mutex_unlock(&p->mutex);

    return wait;
}


/*
 * One HSET: a reader never sees one mirror's users with another's time.
 * counts NULL: no mirror ran (the users' status alone), its fields kept.
 */

static int
gms_follow_privileges_health_ok(gms_follow_privileges_t *p,
    const gms_tool_privileges_counts_t *counts, int64_t interval_ms)
{
    int          rc;
    char        *key;
    size_t       key_len;
    redisReply  *reply;
    gms_tool_t  *t;

    t = &p->tool;

    if (t->conn == NULL) {
        rc = gms_tool_redis_connect(t);
        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    key = gms_tool_redis_key(t, GMS_KEY_SYNC, "", 0, &key_len);
    if (key == NULL) {
        return GMS_TOOL_REDIS;
    }

    /* hiredis's format knows no %zu */
    if (counts != NULL) {
        reply = gms_tool_conn_command(t, "HSET %b privileges_at %lld "
                                      "users %llu privileges_error %s "
                                      "privileges_failures 0 "
                                      "privileges_interval %lld", key, key_len,
                                      (long long) gms_tool_redis_now_ms(),
                                      (unsigned long long) counts->users, "",
                                      (long long) interval_ms);

    } else {
        reply = gms_tool_conn_command(t, "HSET %b privileges_error %s "
                                      "privileges_failures 0 "
                                      "privileges_interval %lld", key, key_len,
                                      "", (long long) interval_ms);
    }

    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HSET") != 0) {
        return GMS_TOOL_REDIS;
    }

    freeReplyObject(reply);

    return GMS_TOOL_OK;
}


/*
 * The flag libcurl's progress callback reads in the thread while the
 * main thread sets it: an atomic store, never a torn or cached one.
 */

static void
gms_follow_privileges_abandon(gms_follow_privileges_t *p, int abandon)
{
    __atomic_store_n(&p->abandon, abandon, __ATOMIC_RELAXED);
}


/*
 * gms-token follow's stream thread: DataHub's own change stream, the
 * Metadata Change Log its Events API serves (DataHub 1.3+,
 * EVENTS_API_ENABLED), long-polled: GET
 * /openapi/v1/events/poll?topic=MetadataChangeLog_Versioned_v1 with the
 * offset kept, a limit and pollTimeoutSeconds=1
 * (metadata-service/openapi-servlet/.../v1/event/
 * ExternalEventsController.java; KafkaExternalEventsPollHandler.poll
 * answers when the limit came or the timeout ran out).  Each answer's
 * events (gms_events.c reads them) are applied in order: a token deleted
 * (a revocation) out of the cache and published, a new token cached and
 * published, a user's status read again, the privileges mirror run
 * again; then the new offset goes into <prefix>sync with the stream's
 * fields, in one HSET, after the changes it covers (at least once: every
 * change is applied so that twice is as once).
 *
 * No offset (the first start, or one GMS refuses), a gap (events the
 * topic's retention dropped) or an event that cannot be read: the poll
 * goes on from the end, and the main thread is asked for one whole token
 * listing and the privileges thread for its mirror and the users' status
 * (the reconciliation).  404 (no Events API: DataHub before 1.3, or
 * EVENTS_API_ENABLED false) or 403 (the account lacks
 * GET_METADATA_CHANGE_LOG_EVENTS or GET_TOPIC_EVENTS): with --changes
 * auto, one line and the main thread polls as before, the stream tried
 * again every --full-interval; with --changes stream, a failure like any
 * other, retried with backoff.  While the stream is not running, the main
 * thread polls at --interval.
 *
 * As the privileges thread, this one has its own copy of gms_tool_t and
 * its own Redis connection, the signals blocked, and works only while
 * the process holds the lease: losing it, or a signal, abandons a poll
 * under way.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "gms_contract.h"
#include "gms_events.h"
#include "gms_token.h"
#include "gms_follow_stream.h"
#include "gms_follow_cycle.h"
#include "gms_follow_metrics.h"
#include "gms_tool_conn.h"
#include "gms_tool_msgs.h"
#include "gms_tool_redis.h"
#include "gms_sync_users.h"


/* ExternalEventsController: MetadataChangeLog_Versioned_v1 by its name */
#define GMS_STREAM_PATH                                                      \
    "/openapi/v1/events/poll?topic=MetadataChangeLog_Versioned_v1"

/*
 * events a poll asks for at most (the controller caps it at 5000); the
 * limit follows the stream's pace below it (gms_events_next_limit)
 */
#define GMS_STREAM_LIMIT       1000

/*
 * pollTimeoutSeconds: a poll takes this long unless its limit of events
 * came first (KafkaExternalEventsPollHandler.poll); whole seconds, 1 the
 * least.  The limit is 1 but through a backlog: GMS answers each change
 * as it is made, and a change waits in GMS only while a backlog is read
 * (up to about this long).
 */
#define GMS_STREAM_POLL_S      1

/* <prefix>sync's fields of the stream */
#define GMS_STREAM_OFFSET      "stream_offset"
#define GMS_STREAM_RECONCILE   "stream_reconcile"


/* what one poll did */
typedef enum {
    GMS_STREAM_OK = 0,
    GMS_STREAM_AGAIN,                      /* poll again at once */
    GMS_STREAM_FAILED,                     /* t->error says why; rc */
    GMS_STREAM_ABSENT                      /* 404 or 403: why */
} gms_stream_rc_e;


/* a batch's counts, for its line */
typedef struct {
    size_t                 events;
    size_t                 revoked;
    size_t                 tokens;
    size_t                 users;
    size_t                 privileges;
    size_t                 ignored;
    size_t                 rejected;
    int64_t                newest;         /* created.time, ms; 0: none */
} gms_stream_counts_t;


static void *gms_follow_stream_thread(void *data);
static int gms_follow_stream_next(gms_follow_stream_t *s, int64_t at,
    int *taken);
static int gms_follow_stream_offset_read(gms_follow_stream_t *s);
static int gms_follow_stream_owe(gms_follow_stream_t *s);
static char *gms_follow_stream_sync_key(gms_follow_stream_t *s,
    size_t *len);
static gms_stream_rc_e gms_follow_stream_poll(gms_follow_stream_t *s,
    int *rc, const char **why);
static gms_stream_rc_e gms_follow_stream_unusable(gms_follow_stream_t *s,
    const char *what, int *rc);
static void gms_follow_stream_from_end(gms_follow_stream_t *s,
    const char *why);
static int gms_follow_stream_apply(gms_follow_stream_t *s,
    const gms_events_t *ev, gms_stream_counts_t *c);
static int gms_follow_stream_put(gms_follow_stream_t *s,
    const gms_event_t *e, int64_t now);
static int gms_follow_stream_inactive(gms_follow_stream_t *s,
    const char *urn, size_t len);
static int gms_follow_stream_health(gms_follow_stream_t *s,
    const gms_stream_counts_t *c);
static void gms_follow_stream_running(gms_follow_stream_t *s, int resumed);
static void gms_follow_stream_down(gms_follow_stream_t *s);
static void gms_follow_stream_ask(gms_follow_stream_t *s);
static void gms_follow_stream_abandon(gms_follow_stream_t *s, int abandon);


/*
 * The thread starts with the signals blocked (it inherits the mask in
 * place at pthread_create); 0, or an errno.  A poll may take its whole
 * pollTimeoutSeconds before GMS answers: the request's time limit is
 * --gms-timeout beyond it.
 */

int
gms_follow_stream_start(gms_follow_stream_t *s, const gms_tool_t *t,
    const gms_graphql_conf_t *gms, const gms_follow_stream_conf_t *conf)
{
    int  rc;

    memset(s, 0, sizeof(gms_follow_stream_t));

    s->tool = *t;
    s->tool.conn = NULL;
    s->tool.quiet = 1;
    s->tool.error[0] = '\0';

    s->gms = *gms;
    s->gms.stop = &s->abandon;
    s->gms.timeout_ms += GMS_STREAM_POLL_S * 1000;
    s->conf = *conf;
    s->limit = GMS_STREAM_LIMIT;
    s->state = GMS_FOLLOW_STREAM_DOWN;

    rc = gms_follow_cycle_lock_init(&s->mutex, &s->cond);
    if (rc != 0) {
        return rc;
    }

    rc = gms_follow_cycle_thread_create(&s->thread, gms_follow_stream_thread,
                                        s);

    if (rc != 0) {
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->mutex);
    }

    return rc;
}


/*
 * The lease taken or lost.  Taken: the stream starts again from the
 * offset in <prefix>sync (another follower may have moved it), and the
 * main thread waits for its first answer.  Lost: a poll under way is
 * abandoned.
 */

void
gms_follow_stream_lease(gms_follow_stream_t *s, int held)
{
    pthread_mutex_lock(&s->mutex);

    if (s->held != held) {
        s->held = held;
        s->reconcile = 0;

        if (held) {
            s->taken = 1;
            s->state = GMS_FOLLOW_STREAM_STARTING;

        } else {
            gms_follow_stream_abandon(s, 1);
            s->state = GMS_FOLLOW_STREAM_DOWN;
        }

        pthread_cond_broadcast(&s->cond);
    }

    pthread_mutex_unlock(&s->mutex);

    if (!held) {
        /* no longer followed here: the next holder's file says it runs */
        gms_follow_metrics_stream(0, 0, 0, 0);
    }
}


gms_follow_stream_state_e
gms_follow_stream_state(gms_follow_stream_t *s)
{
    gms_follow_stream_state_e  state;

    pthread_mutex_lock(&s->mutex);
    state = s->state;
    pthread_mutex_unlock(&s->mutex);

    return state;
}


/* 1: a reconciliation was asked for (and is the caller's now) */

int
gms_follow_stream_reconcile(gms_follow_stream_t *s)
{
    int  asked;

    pthread_mutex_lock(&s->mutex);
    asked = s->reconcile;
    s->reconcile = 0;
    pthread_mutex_unlock(&s->mutex);

    return asked;
}


/* ends the thread: a poll is abandoned, a Redis command finished */

void
gms_follow_stream_stop(gms_follow_stream_t *s)
{
    pthread_mutex_lock(&s->mutex);
    s->stop = 1;
    gms_follow_stream_abandon(s, 1);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mutex);

    pthread_join(s->thread, NULL);

    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mutex);
}


static void *
gms_follow_stream_thread(void *data)
{
    gms_follow_stream_t *s = data;

    int              rc, taken;
    char             now[32];
    int64_t          at, wait;
    gms_tool_t      *t;
    const char      *why;
    gms_stream_rc_e  src;

    t = &s->tool;
    at = 0;

    while (gms_follow_stream_next(s, at, &taken) == 0) {
        t->error[0] = '\0';
        rc = GMS_TOOL_OK;
        why = NULL;

        if (taken) {
            s->events = 0;
            s->rejected = 0;
            s->failures = 0;
            s->said_down = 0;
            s->limit = GMS_STREAM_LIMIT;
            s->full = 0;
            s->unread = 1;
        }

        if (s->unread) {
            free(s->offset);
            s->offset = NULL;

            if (gms_follow_stream_offset_read(s) != 0) {
                rc = GMS_TOOL_REDIS;
                src = GMS_STREAM_FAILED;
                goto failed;
            }

            s->unread = 0;
        }

        src = gms_follow_stream_poll(s, &rc, &why);

        if (__atomic_load_n(&s->abandon, __ATOMIC_RELAXED)) {
            /* a signal, or the lease lost: no failure of GMS or Redis */
            at = 0;
            continue;
        }

        if (src == GMS_STREAM_OK || src == GMS_STREAM_AGAIN) {
            gms_follow_metrics_cycle(GMS_FOLLOW_METRICS_STREAM, 1);
            s->failures = 0;
            at = 0;
            continue;
        }

        if (src == GMS_STREAM_ABSENT
            && s->conf.mode == GMS_FOLLOW_CHANGES_AUTO)
        {
            /* auto: polling, and the stream tried again later */

            if (!s->said_down) {
                fprintf(stderr, "gms-token follow: %s changes: polling "
                        "every %llds: %s\n",
                        gms_follow_cycle_time(now, sizeof(now)),
                        (long long) (s->conf.interval_ms / 1000), why);
                s->said_down = 1;
            }

            gms_follow_stream_down(s);

            at = gms_follow_cycle_monotonic()
                 + gms_follow_cycle_jitter(s->conf.full_interval_ms);
            continue;
        }

        if (src == GMS_STREAM_ABSENT) {
            /* --changes stream: the Events API is required */
            gms_tool_msgs_error(t, "%s: %s", gms_graphql_get_url(s->g), why);
            rc = GMS_TOOL_GMS;
        }

    failed:

        /* the next poll opens GMS again: the token file read again */
        gms_graphql_close(s->g);
        s->g = NULL;

        if (rc == GMS_TOOL_REDIS) {
            gms_tool_conn_close(t);
        }

        s->failures++;
        gms_follow_stream_down(s);
        gms_follow_metrics_cycle(GMS_FOLLOW_METRICS_STREAM, 0);

        wait = gms_follow_cycle_backoff(s->conf.interval_ms, s->failures);
        wait = gms_follow_cycle_jitter(wait);
        at = gms_follow_cycle_monotonic() + wait;

        gms_follow_cycle_clean(t->error);

        gms_follow_cycle_say_failed("stream ", rc, t->error, wait);
    }

    gms_graphql_close(s->g);
    s->g = NULL;
    free(s->offset);
    s->offset = NULL;
    gms_tool_conn_close(t);

    return NULL;
}


/*
 * Waits until the lease is held and the monotonic time "at" came (0: at
 * once); -1 once told to stop.  *taken: the lease was taken since the
 * last call (the offset is to be read again).
 */

static int
gms_follow_stream_next(gms_follow_stream_t *s, int64_t at, int *taken)
{
    int              rc;
    struct timespec  ts;

    pthread_mutex_lock(&s->mutex);

    for ( ;; ) {
        if (s->stop) {
            rc = -1;
            break;
        }

        if (s->held && s->taken) {
            /* whatever waited: a new holder starts at once */
            s->taken = 0;
            *taken = 1;
            gms_follow_stream_abandon(s, 0);
            rc = 0;
            break;
        }

        if (s->held && (at == 0 || gms_follow_cycle_monotonic() >= at)) {
            *taken = 0;
            gms_follow_stream_abandon(s, 0);
            rc = 0;
            break;
        }

        if (!s->held || at == 0) {
            pthread_cond_wait(&s->cond, &s->mutex);
            continue;
        }

        ts.tv_sec = at / 1000;
        ts.tv_nsec = (long) (at % 1000) * 1000000;

        (void) pthread_cond_timedwait(&s->cond, &s->mutex, &ts);
    }

    pthread_mutex_unlock(&s->mutex);

    return rc;
}


/*
 * HMGET <prefix>sync stream_offset stream_reconcile: the kept offset, or
 * none; a reconciliation owed (asked by a holder that stopped before one
 * was done) is asked again at the first answer
 */

static int
gms_follow_stream_offset_read(gms_follow_stream_t *s)
{
    char        *key;
    size_t       key_len;
    redisReply  *reply, *v;
    gms_tool_t  *t;

    t = &s->tool;

    key = gms_follow_stream_sync_key(s, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_conn_command(t, "HMGET %b " GMS_STREAM_OFFSET " "
                                  GMS_STREAM_RECONCILE, key, key_len);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HMGET") != 0) {
        return -1;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        freeReplyObject(reply);
        gms_tool_msgs_error(t, "redis %s: HMGET: not an array of two",
                            t->redis);
        return -1;
    }

    v = reply->element[0];

    if (v->type == REDIS_REPLY_STRING && v->len > 0) {
        s->offset = strndup(v->str, v->len);

        if (s->offset == NULL) {
            freeReplyObject(reply);
            gms_tool_msgs_error(t, "out of memory");
            return -1;
        }
    }

    v = reply->element[1];

    /* anything but a count of 0 or none: owed (trust no byte: a check) */
    s->owed = v->type == REDIS_REPLY_STRING
              && !(v->len == 1 && v->str[0] == '0');

    freeReplyObject(reply);

    return 0;
}


/*
 * A reconciliation asked, counted in <prefix>sync's stream_reconcile
 * before the offset that needs it is kept: a holder that stops before it
 * is done leaves it to the next (the main thread takes back what its
 * reconciliation covered, gms_follow_reconciled)
 */

static int
gms_follow_stream_owe(gms_follow_stream_t *s)
{
    char        *key;
    size_t       key_len;
    redisReply  *reply;
    gms_tool_t  *t;

    t = &s->tool;

    key = gms_follow_stream_sync_key(s, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_conn_command(t, "HINCRBY %b " GMS_STREAM_RECONCILE " 1",
                                  key, key_len);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HINCRBY") != 0) {
        return -1;
    }

    freeReplyObject(reply);

    return 0;
}


/* <prefix>sync's name, the thread's connection made if it has none */

static char *
gms_follow_stream_sync_key(gms_follow_stream_t *s, size_t *len)
{
    gms_tool_t  *t;

    t = &s->tool;

    if (t->conn == NULL && gms_tool_redis_connect(t) != GMS_TOOL_OK) {
        return NULL;
    }

    return gms_tool_redis_key(t, GMS_KEY_SYNC, "", 0, len);
}


/*
 * One poll, its events applied, the offset and the stream's fields
 * written, its line.  GMS_STREAM_FAILED: *rc and t->error say what;
 * GMS_STREAM_ABSENT: *why.
 */

static gms_stream_rc_e
gms_follow_stream_poll(gms_follow_stream_t *s, int *rc, const char **why)
{
    int                  resumed, check, ask, rc_apply;
    char                *path, *escaped, now[32], why_gap[128];
    long                 status;
    size_t               len;
    json_t              *doc;
    gms_tool_t          *t;
    const char          *body, *message;
    gms_events_t         ev;
    json_error_t         err;
    gms_stream_counts_t  c;

    t = &s->tool;
    *rc = GMS_TOOL_GMS;

    if (s->g == NULL) {
        s->g = gms_graphql_open(t, &s->gms);
        if (s->g == NULL) {
            return GMS_STREAM_FAILED;
        }
    }

    escaped = NULL;

    if (s->offset) {
        escaped = curl_easy_escape(NULL, s->offset, 0);
        if (escaped == NULL) {
            gms_tool_msgs_error(t, "out of memory");
            return GMS_STREAM_FAILED;
        }
    }

    len = sizeof(GMS_STREAM_PATH) + 64 + (escaped ? strlen(escaped) : 0);

    path = malloc(len);
    if (path == NULL) {
        curl_free(escaped);
        gms_tool_msgs_error(t, "out of memory");
        return GMS_STREAM_FAILED;
    }

    snprintf(path, len, GMS_STREAM_PATH "&limit=%ld&pollTimeoutSeconds=%d"
             "%s%s", s->limit, GMS_STREAM_POLL_S,
             escaped ? "&offsetId=" : "", escaped ? escaped : "");
    curl_free(escaped);

    switch (gms_graphql_get(s->g, path, &status, &body, &len)) {

    case GMS_GRAPHQL_ANSWERED:
        break;

    case GMS_GRAPHQL_TOO_BIG:
        free(path);
        return gms_follow_stream_unusable(s, "an answer over 64 MB", rc);

    default:
        free(path);
        return GMS_STREAM_FAILED;
    }

    free(path);

    if (status == 404) {
        *why = "HTTP 404: GMS serves no Events API: DataHub before 1.3, or "
               "EVENTS_API_ENABLED false";
        return GMS_STREAM_ABSENT;
    }

    if (status == 403) {
        *why = "HTTP 403: the follower's account lacks "
               "GET_METADATA_CHANGE_LOG_EVENTS (or GET_TOPIC_EVENTS)";
        return GMS_STREAM_ABSENT;
    }

    if (status != 200) {
        /* 429, 500: ExternalEventsResponse's errorMessage */
        doc = json_loadb(body, len, 0, &err);
        message = json_string_value(json_object_get(doc, "errorMessage"));

        if (status == 500 && s->offset && message
            && strstr(message, "offsetId") != NULL)
        {
            /* ExternalEventsOffsetCodec could not read the kept offset */
            json_decref(doc);
            gms_follow_stream_from_end(s, "GMS refuses the kept offset");
            return GMS_STREAM_AGAIN;
        }

        gms_tool_msgs_error(t, "%s: HTTP %ld%s%s", gms_graphql_get_url(s->g),
                            status, message ? ": " : "",
                            message ? message : "");
        json_decref(doc);
        return GMS_STREAM_FAILED;
    }

    if (gms_events_parse(body, len, &ev, why_gap, sizeof(why_gap)) != 0) {
        gms_follow_cycle_clean(why_gap);
        return gms_follow_stream_unusable(s, why_gap, rc);
    }

    resumed = s->offset != NULL;
    why_gap[0] = '\0';
    check = gms_events_offset_check(s->offset, ev.offset, ev.count,
                                    why_gap, sizeof(why_gap));

    memset(&c, 0, sizeof(gms_stream_counts_t));

    /* never in the middle of a token cycle's writes (the journal's) */
    gms_follow_journal_writes(s->conf.journal, 1);
    rc_apply = gms_follow_stream_apply(s, &ev, &c);
    gms_follow_journal_writes(s->conf.journal, 0);

    if (rc_apply != 0) {
        gms_events_free(&ev);
        *rc = GMS_TOOL_REDIS;
        return GMS_STREAM_FAILED;
    }

    /* the stream's pace: 1 while nothing comes, more as more does */
    s->limit = gms_events_next_limit(s->limit, ev.nevents, GMS_STREAM_LIMIT,
                                     &s->full);

    free(s->offset);
    s->offset = strdup(ev.offset);
    gms_events_free(&ev);

    if (s->offset == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_STREAM_FAILED;
    }

    s->events += c.events;
    s->rejected += c.rejected;

    /* from the end, a gap, an event we could not read, or owed */
    ask = !resumed || check == GMS_EVENTS_OFFSET_GAP || c.rejected
          || s->owed;

    if (ask && !s->owed && gms_follow_stream_owe(s) != 0) {
        *rc = GMS_TOOL_REDIS;
        return GMS_STREAM_FAILED;
    }

    if (gms_follow_stream_health(s, &c) != 0) {
        *rc = GMS_TOOL_REDIS;
        return GMS_STREAM_FAILED;
    }

    /* asked before the main thread hears that the stream runs */

    if (check == GMS_EVENTS_OFFSET_GAP) {
        gms_follow_cycle_clean(why_gap);
        fprintf(stderr, "gms-token follow: %s stream gap: %s; one whole "
                "listing\n", gms_follow_cycle_time(now, sizeof(now)),
                why_gap[0] ? why_gap : "events skipped");
    }

    if (ask) {
        gms_follow_stream_ask(s);
        s->owed = 0;
    }

    gms_follow_stream_running(s, resumed);

    /* published, as the line counts it: the tokens revoked and made */
    gms_follow_metrics_stream(1, c.events,
                              c.newest ? gms_tool_redis_now_ms() - c.newest
                                       : 0,
                              c.revoked + c.tokens);

    if (c.events) {
        printf("gms-token follow: %s stream ok events=%zu revoked=%zu "
               "tokens=%zu users=%zu privileges=%zu ignored=%zu "
               "rejected=%zu lag=%lldms\n",
               gms_follow_cycle_time(now, sizeof(now)), c.events, c.revoked,
               c.tokens, c.users, c.privileges, c.ignored, c.rejected,
               c.newest ? (long long) (gms_tool_redis_now_ms() - c.newest)
                        : 0LL);
    }

    return GMS_STREAM_OK;
}


/*
 * An answer too large or unreadable: the same offset asked again for
 * half as many events; at one event still unusable, the offset is given
 * up (from the end, and a whole listing).
 */

static gms_stream_rc_e
gms_follow_stream_unusable(gms_follow_stream_t *s, const char *what,
    int *rc)
{
    char  why[128];

    if (s->limit > 1) {
        s->limit /= 2;
        return GMS_STREAM_AGAIN;
    }

    if (s->offset == NULL) {
        /* from the end already: GMS itself is at fault, back off */
        gms_tool_msgs_error(&s->tool, "%s: %s", gms_graphql_get_url(s->g),
                            what);
        *rc = GMS_TOOL_GMS;
        s->limit = GMS_STREAM_LIMIT;
        return GMS_STREAM_FAILED;
    }

    snprintf(why, sizeof(why), "%s at limit=1", what);
    gms_follow_stream_from_end(s, why);

    return GMS_STREAM_AGAIN;
}


/* the offset given up: the next poll from the end, then a reconciliation */

static void
gms_follow_stream_from_end(gms_follow_stream_t *s, const char *why)
{
    char  now[32];

    fprintf(stderr, "gms-token follow: %s stream gap: %s; one whole "
            "listing\n", gms_follow_cycle_time(now, sizeof(now)), why);

    free(s->offset);
    s->offset = NULL;
    s->limit = GMS_STREAM_LIMIT;
    s->full = 0;
}


/*
 * A batch's events, in order.  A token's and a user's changes are marked
 * in the journal before they are written: a token cycle or a mirror
 * whose read came earlier never writes them back.  The users are read
 * again together, the privileges mirror asked for once (reading who is
 * in the groups and roles again only if a change may have moved them).
 */

static int
gms_follow_stream_apply(gms_follow_stream_t *s, const gms_events_t *ev,
    gms_stream_counts_t *c)
{
    int                      rc, members;
    char                   **urns;
    size_t                   i, n;
    int64_t                  now;
    gms_tool_t              *t;
    const gms_event_t       *e;
    gms_tool_users_counts_t  users;

    t = &s->tool;
    c->events = ev->nevents;

    if (ev->nevents == 0) {
        return 0;
    }

    if (t->conn == NULL && gms_tool_redis_connect(t) != GMS_TOOL_OK) {
        return -1;
    }

    urns = calloc(ev->nevents, sizeof(char *));
    if (urns == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    n = 0;
    rc = 0;
    members = 0;
    now = gms_tool_redis_now_ms();

    for (i = 0; i < ev->nevents && rc == 0; i++) {
        e = &ev->events[i];

        if (e->time > c->newest) {
            c->newest = e->time;
        }

        switch (e->kind) {

        case GMS_EVENT_TOKEN_DELETE:
            /* RevokeAccessTokenResolver: the token entity deleted */
            gms_follow_journal_mark(s->conf.journal,
                                    GMS_FOLLOW_JOURNAL_TOKEN, e->id,
                                    GMS_TOKEN_ID_LEN);
            rc = gms_tool_redis_uncache(t, e->id) < 0 ? -1 : 0;
            c->revoked++;
            break;

        case GMS_EVENT_TOKEN_PUT:
            gms_follow_journal_mark(s->conf.journal,
                                    GMS_FOLLOW_JOURNAL_TOKEN, e->id,
                                    GMS_TOKEN_ID_LEN);
            rc = gms_follow_stream_put(s, e, now);
            c->tokens++;
            break;

        case GMS_EVENT_USER:
            gms_follow_journal_mark(s->conf.journal,
                                    GMS_FOLLOW_JOURNAL_USER, e->urn,
                                    e->urn_len);
            urns[n++] = e->urn;
            c->users++;
            break;

        case GMS_EVENT_PRIVILEGES:
            c->privileges++;
            members |= e->members;
            break;

        case GMS_EVENT_REJECTED:
            c->rejected++;
            break;

        default:
            c->ignored++;
        }
    }

    if (rc == 0 && n) {
        memset(&users, 0, sizeof(gms_tool_users_counts_t));

        /* a user GMS could not answer for is left as it was */
        if (gms_sync_users_recheck(t, &s->gms, s->conf.refuse, urns, n,
                                   &users)
            == GMS_TOOL_REDIS)
        {
            rc = -1;
        }
    }

    free(urns);

    if (rc == 0 && c->privileges) {
        gms_follow_privileges_kick(s->conf.privileges,
                                   GMS_FOLLOW_KICK_MIRROR
                                   | (members ? GMS_FOLLOW_KICK_MEMBERS : 0));
    }

    return rc;
}


/*
 * A token made (DataHubAccessTokenInfo): written as sync writes a listed
 * one (gms_tool_redis_put_token; a createdAt still to come taken as now),
 * published when it changed; expired, or its user refused with
 * --inactive refuse: deleted instead.  Its holder is the privileges
 * thread's from now on.
 */

static int
gms_follow_stream_put(gms_follow_stream_t *s, const gms_event_t *e,
    int64_t now)
{
    int                 inactive;
    size_t              urn_len;
    gms_tool_t         *t;
    gms_tool_token_t    tok;
    gms_tool_put_rc_e   put;

    t = &s->tool;
    urn_len = e->urn_len;

    if (e->expires_at != 0 && e->expires_at <= now) {
        return gms_tool_redis_uncache(t, e->id) < 0 ? -1 : 0;
    }

    if (s->conf.refuse == GMS_TOOL_INACTIVE_REFUSE) {
        inactive = gms_follow_stream_inactive(s, e->urn, urn_len);

        if (inactive < 0) {
            return -1;
        }

        if (inactive) {
            return gms_tool_redis_uncache(t, e->id) < 0 ? -1 : 0;
        }
    }

    memset(&tok, 0, sizeof(gms_tool_token_t));
    tok.actor = e->urn;
    tok.actor_len = urn_len;
    tok.expires_at = e->expires_at;
    tok.created_at = e->created_at > now ? now : e->created_at;

    if (gms_tool_redis_put_token(t, e->id, &tok, &put) != 0) {
        return -1;
    }

    if (put != GMS_TOOL_UNCHANGED
        && gms_tool_redis_publish(t, e->id, GMS_TOKEN_ID_LEN) != 0)
    {
        return -1;
    }

    gms_follow_privileges_holder(s->conf.privileges, e->urn, urn_len);

    return 0;
}


/* SISMEMBER <prefix>inactive: 1, 0, or -1 (reported) */

static int
gms_follow_stream_inactive(gms_follow_stream_t *s, const char *urn,
    size_t len)
{
    int          member;
    char        *key;
    size_t       key_len;
    redisReply  *reply;
    gms_tool_t  *t;

    t = &s->tool;

    key = gms_tool_redis_key(t, GMS_KEY_INACTIVE, "", 0, &key_len);
    if (key == NULL) {
        return -1;
    }

    reply = gms_tool_conn_command(t, "SISMEMBER %b %b", key, key_len, urn, len);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "SISMEMBER") != 0) {
        return -1;
    }

    member = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
    freeReplyObject(reply);

    return member;
}


/*
 * One HSET, after the batch's changes: the offset never runs ahead of
 * what Redis holds.  stream_lag_ms: from the newest event's created.time
 * to now, 0 after an empty poll.
 */

static int
gms_follow_stream_health(gms_follow_stream_t *s, const gms_stream_counts_t *c)
{
    char        *key;
    size_t       key_len;
    int64_t      now, lag;
    redisReply  *reply;
    gms_tool_t  *t;

    t = &s->tool;

    key = gms_follow_stream_sync_key(s, &key_len);
    if (key == NULL) {
        return -1;
    }

    now = gms_tool_redis_now_ms();
    lag = c->newest && now > c->newest ? now - c->newest : 0;

    /*
     * at too: the cache is as current as the last batch applied, and the
     * edges' gms_token_sync_age_seconds (and alerts on it) read at,
     * while the token cycle runs every --full-interval only.  hiredis's
     * format knows no %zu.
     */
    reply = gms_tool_conn_command(t, "HSET %b changes stream "
                                  GMS_STREAM_OFFSET " %s stream_at %lld "
                                  "stream_lag_ms %lld stream_events %llu "
                                  "stream_rejected %llu at %lld", key, key_len,
                                  s->offset, (long long) now, (long long) lag,
                                  (unsigned long long) s->events,
                                  (unsigned long long) s->rejected,
                                  (long long) now);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HSET") != 0) {
        return -1;
    }

    freeReplyObject(reply);

    return 0;
}


/*
 * GMS answered: the stream runs (a line when it starts), the main thread
 * lists the tokens every --full-interval only, the privileges thread
 * mirrors as often.
 */

static void
gms_follow_stream_running(gms_follow_stream_t *s, int resumed)
{
    char                       now[32];
    gms_follow_stream_state_e  was;

    pthread_mutex_lock(&s->mutex);
    was = s->state;

    if (s->held) {
        s->state = GMS_FOLLOW_STREAM_RUNNING;

    } else {
        /* the lease lost meanwhile: its taker starts again */
        was = GMS_FOLLOW_STREAM_RUNNING;
    }

    pthread_mutex_unlock(&s->mutex);

    if (was == GMS_FOLLOW_STREAM_RUNNING) {
        return;
    }

    s->said_down = 0;

    printf("gms-token follow: %s changes: stream (%s)\n",
           gms_follow_cycle_time(now, sizeof(now)),
           resumed ? "resumed at the kept offset" : "from the end");

    gms_follow_privileges_cadence(s->conf.privileges,
                                  s->conf.full_interval_ms);
    s->conf.wake(s->conf.wake_data);
}


/* the stream stopped: the main thread polls, <prefix>sync says so */

static void
gms_follow_stream_down(gms_follow_stream_t *s)
{
    char                       *key;
    size_t                      key_len;
    redisReply                 *reply;
    gms_tool_t                 *t;
    gms_follow_stream_state_e   was;

    pthread_mutex_lock(&s->mutex);
    was = s->state;

    if (s->held) {
        s->state = GMS_FOLLOW_STREAM_DOWN;
    }

    pthread_mutex_unlock(&s->mutex);

    gms_follow_metrics_stream(0, 0, 0, 0);

    if (was == GMS_FOLLOW_STREAM_DOWN) {
        return;
    }

    gms_follow_privileges_cadence(s->conf.privileges,
                                  s->conf.privileges_interval_ms);
    s->conf.wake(s->conf.wake_data);

    /* best effort: the main thread's next cycle writes it too */

    t = &s->tool;

    key = gms_follow_stream_sync_key(s, &key_len);
    if (key == NULL) {
        return;
    }

    reply = gms_tool_conn_command(t, "HSET %b changes poll", key, key_len);
    free(key);

    if (gms_tool_redis_reply_error(t, reply, "HSET") != 0) {
        gms_tool_conn_close(t);
        return;
    }

    freeReplyObject(reply);
}


/* a reconciliation asked of the main thread (one at a time), woken */

static void
gms_follow_stream_ask(gms_follow_stream_t *s)
{
    pthread_mutex_lock(&s->mutex);
    s->reconcile = s->held;
    pthread_mutex_unlock(&s->mutex);

    s->conf.wake(s->conf.wake_data);
}


/*
 * The flag libcurl's progress callback reads in the thread while the
 * main thread sets it: an atomic store, never a torn or cached one.
 */

static void
gms_follow_stream_abandon(gms_follow_stream_t *s, int abandon)
{
    __atomic_store_n(&s->abandon, abandon, __ATOMIC_RELAXED);
}


/*
 * gms-token follow's own metrics.  The follower has no event loop to
 * serve HTTP from, and runs where no node_exporter may be: its state goes
 * into a file in Prometheus's text format, node_exporter's textfile
 * collector's convention (docs/gms-token.md says why, and how Kubernetes
 * scrapes it).  The file is written whole into a temporary one in the
 * same directory, then renamed over the last: a reader sees one or the
 * other, never half.  Each of follow's threads counts here, under one
 * mutex, and writes the file at the end of its cycle; libcurl's
 * transfers, in any thread, are timed through gms_graphql_conf_t's
 * observe hook.  Without --metrics-file nothing is kept.
 */


#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gms_follow_metrics.h"
#include "gms_follow_cycle.h"


/* the latency's buckets, in seconds: GMS answers a page in tens of ms,
 * the Events API's long poll in a second */
#define GMS_FOLLOW_METRICS_BUCKETS  12

/* the APIs of GMS timed: gms_graphql.c's POST and its GET */
#define GMS_FOLLOW_METRICS_APIS     2


typedef struct {
    uint64_t               bucket[GMS_FOLLOW_METRICS_BUCKETS];  /* not
                                                   cumulated: at print */
    uint64_t               count;
    uint64_t               errors;
    double                 sum;
} gms_follow_metrics_api_t;


typedef struct {
    pthread_mutex_t        mutex;
    char                  *path;           /* NULL: none kept */
    char                  *temp;           /* path.XXXXXX, for mkstemp */
    unsigned               said:1;         /* a failed write said, until
                                              one succeeds */
    uint64_t               cycles[GMS_FOLLOW_METRICS_KINDS][2];
    double                 last_ok[GMS_FOLLOW_METRICS_KINDS];
    size_t                 tokens;
    size_t                 users;
    size_t                 inactive;
    uint64_t               pruned;
    uint64_t               published;
    uint64_t               events;
    int                    lease;
    int                    running;
    double                 lag;
    gms_follow_metrics_api_t  api[GMS_FOLLOW_METRICS_APIS];
} gms_follow_metrics_t;


static void gms_follow_metrics_write(void);
static int gms_follow_metrics_rename(void);
static void gms_follow_metrics_print(FILE *f);
static void gms_follow_metrics_family(FILE *f, const char *name,
    const char *type, const char *help);
static double gms_follow_metrics_now(void);


static gms_follow_metrics_t  gms_follow_metrics = {
    .mutex = PTHREAD_MUTEX_INITIALIZER
};

static const double  gms_follow_metrics_le[GMS_FOLLOW_METRICS_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30
};

static const char *const  gms_follow_metrics_kinds[] = {
    "tokens", "privileges", "users", "stream"
};

static const char *const  gms_follow_metrics_apis[] = {
    "graphql", "openapi"
};


/*
 * Before follow's threads start: the file written once, so that a path
 * that cannot be written is a usage error, not a line at every cycle.
 */

int
gms_follow_metrics_open(const char *path, char *error, size_t size)
{
    size_t                 len;
    gms_follow_metrics_t  *m;

    m = &gms_follow_metrics;
    len = strlen(path);

    m->path = strdup(path);
    m->temp = malloc(len + sizeof(".XXXXXX"));

    if (m->path == NULL || m->temp == NULL) {
        snprintf(error, size, "out of memory");
        gms_follow_metrics_close();
        return -1;
    }

    if (gms_follow_metrics_rename() != 0) {
        snprintf(error, size, "--metrics-file: cannot write %s: %s", path,
                 strerror(errno));
        gms_follow_metrics_close();
        return -1;
    }

    return 0;
}


/* after the threads stopped */

void
gms_follow_metrics_close(void)
{
    free(gms_follow_metrics.path);
    free(gms_follow_metrics.temp);
    gms_follow_metrics.path = NULL;
    gms_follow_metrics.temp = NULL;
}


/* a cycle's end: counted, and the file written */

void
gms_follow_metrics_cycle(gms_follow_metrics_kind_e kind, int ok)
{
    gms_follow_metrics_t  *m;

    m = &gms_follow_metrics;

    if (m->path == NULL) {
        return;
    }

    pthread_mutex_lock(&m->mutex);

    m->cycles[kind][ok ? 0 : 1]++;

    if (ok) {
        m->last_ok[kind] = gms_follow_metrics_now();
    }

    gms_follow_metrics_write();

    pthread_mutex_unlock(&m->mutex);
}


/*
 * What a token cycle found, before gms_follow_metrics_cycle: the tokens
 * DataHub lists, those pruned, the changes published
 */

void
gms_follow_metrics_tokens(size_t tokens, size_t pruned, size_t published)
{
    gms_follow_metrics_t  *m;

    m = &gms_follow_metrics;

    if (m->path == NULL) {
        return;
    }

    pthread_mutex_lock(&m->mutex);

    m->tokens = tokens;
    m->pruned += pruned;
    m->published += published;

    pthread_mutex_unlock(&m->mutex);
}


/* a mirror's users, whose privileges it wrote */

void
gms_follow_metrics_users(size_t users, size_t published)
{
    gms_follow_metrics_t  *m;

    m = &gms_follow_metrics;

    if (m->path == NULL) {
        return;
    }

    pthread_mutex_lock(&m->mutex);

    m->users = users;
    m->published += published;

    pthread_mutex_unlock(&m->mutex);
}


/* a users' check: of the holders, those DataHub refuses */

void
gms_follow_metrics_inactive(size_t inactive, size_t published)
{
    gms_follow_metrics_t  *m;

    m = &gms_follow_metrics;

    if (m->path == NULL) {
        return;
    }

    pthread_mutex_lock(&m->mutex);

    m->inactive = inactive;
    m->published += published;

    pthread_mutex_unlock(&m->mutex);
}


/*
 * The stream: whether it runs, a poll's events and how far behind the
 * newest of them was (0: none came, the stream is at its end)
 */

void
gms_follow_metrics_stream(int running, size_t events, int64_t lag_ms,
    size_t published)
{
    gms_follow_metrics_t  *m;

    m = &gms_follow_metrics;

    if (m->path == NULL) {
        return;
    }

    pthread_mutex_lock(&m->mutex);

    m->running = running;

    if (running) {
        m->events += events;
        m->lag = (double) lag_ms / 1000;
        m->published += published;
    }

    pthread_mutex_unlock(&m->mutex);
}


/* the lease, as the main thread saw it at its cycle: the file written */

void
gms_follow_metrics_lease(int held)
{
    gms_follow_metrics_t  *m;

    m = &gms_follow_metrics;

    if (m->path == NULL) {
        return;
    }

    pthread_mutex_lock(&m->mutex);

    m->lease = held;
    gms_follow_metrics_write();

    pthread_mutex_unlock(&m->mutex);
}


/* gms_graphql_conf_t's observe: one transfer, its time and outcome */

void
gms_follow_metrics_request(const char *api, double seconds, int failed)
{
    size_t                     i;
    gms_follow_metrics_t      *m;
    gms_follow_metrics_api_t  *a;

    m = &gms_follow_metrics;

    if (m->path == NULL) {
        return;
    }

    a = &m->api[strcmp(api, gms_follow_metrics_apis[0]) == 0 ? 0 : 1];

    for (i = 0; i < GMS_FOLLOW_METRICS_BUCKETS; i++) {
        if (seconds <= gms_follow_metrics_le[i]) {
            break;
        }
    }

    pthread_mutex_lock(&m->mutex);

    if (i < GMS_FOLLOW_METRICS_BUCKETS) {
        a->bucket[i]++;
    }

    a->count++;
    a->sum += seconds;
    a->errors += failed != 0;

    pthread_mutex_unlock(&m->mutex);
}


/*
 * Under the mutex.  A failure is one line on stderr, not one a cycle;
 * the next write tries again.
 */

static void
gms_follow_metrics_write(void)
{
    char                   now[32];
    gms_follow_metrics_t  *m;

    m = &gms_follow_metrics;

    if (gms_follow_metrics_rename() == 0) {
        m->said = 0;
        return;
    }

    if (!m->said) {
        fprintf(stderr, "gms-token follow: %s metrics: cannot write %s: %s\n",
                gms_follow_cycle_time(now, sizeof(now)), m->path,
                strerror(errno));
        m->said = 1;
    }
}


/*
 * mkstemp's file (0600) made readable as a textfile collector running as
 * another user needs; node_exporter reads only names ending in .prom, so
 * never the temporary one.  -1 and errno on failure, nothing left behind.
 */

static int
gms_follow_metrics_rename(void)
{
    int                    fd, err;
    FILE                  *f;
    gms_follow_metrics_t  *m;

    m = &gms_follow_metrics;

    sprintf(m->temp, "%s.XXXXXX", m->path);

    fd = mkstemp(m->temp);
    if (fd == -1) {
        return -1;
    }

    f = NULL;

    if (fchmod(fd, 0644) != 0 || (f = fdopen(fd, "w")) == NULL) {
        goto failed;
    }

    gms_follow_metrics_print(f);

    if (ferror(f)) {
        errno = EIO;
        goto failed;
    }

    fd = -1;

    if (fclose(f) != 0) {
        f = NULL;
        goto failed;
    }

    f = NULL;

    if (rename(m->temp, m->path) != 0) {
        goto failed;
    }

    return 0;

failed:

    err = errno;

    if (f != NULL) {
        fclose(f);

    } else if (fd != -1) {
        close(fd);
    }

    unlink(m->temp);
    errno = err;

    return -1;
}


static void
gms_follow_metrics_print(FILE *f)
{
    size_t                           i, k;
    uint64_t                         n;
    const gms_follow_metrics_t      *m;
    const gms_follow_metrics_api_t  *a;

    m = &gms_follow_metrics;

    gms_follow_metrics_family(f, "gms_follow_cycles_total", "counter",
                              "Cycles run, by kind (tokens, privileges, "
                              "users, stream polls) and outcome.");

    for (k = 0; k < GMS_FOLLOW_METRICS_KINDS; k++) {
        for (i = 0; i < 2; i++) {
            fprintf(f, "gms_follow_cycles_total{kind=\"%s\",outcome=\"%s\"} "
                    "%llu\n", gms_follow_metrics_kinds[k],
                    i ? "error" : "ok", (unsigned long long) m->cycles[k][i]);
        }
    }

    gms_follow_metrics_family(f, "gms_follow_last_success_timestamp_seconds",
                              "gauge", "When a cycle of the kind last "
                              "succeeded, seconds since the epoch; 0: "
                              "never.");

    for (k = 0; k < GMS_FOLLOW_METRICS_KINDS; k++) {
        fprintf(f, "gms_follow_last_success_timestamp_seconds{kind=\"%s\"} "
                "%.3f\n", gms_follow_metrics_kinds[k], m->last_ok[k]);
    }

    gms_follow_metrics_family(f, "gms_follow_gms_request_duration_seconds",
                              "histogram", "GMS's requests (GraphQL, and "
                              "the Events API's long polls), by API.");

    for (k = 0; k < GMS_FOLLOW_METRICS_APIS; k++) {
        a = &m->api[k];
        n = 0;

        for (i = 0; i < GMS_FOLLOW_METRICS_BUCKETS; i++) {
            n += a->bucket[i];
            fprintf(f, "gms_follow_gms_request_duration_seconds_bucket"
                    "{api=\"%s\",le=\"%g\"} %llu\n",
                    gms_follow_metrics_apis[k], gms_follow_metrics_le[i],
                    (unsigned long long) n);
        }

        fprintf(f, "gms_follow_gms_request_duration_seconds_bucket"
                "{api=\"%s\",le=\"+Inf\"} %llu\n"
                "gms_follow_gms_request_duration_seconds_sum{api=\"%s\"} "
                "%.6f\n"
                "gms_follow_gms_request_duration_seconds_count{api=\"%s\"} "
                "%llu\n", gms_follow_metrics_apis[k],
                (unsigned long long) a->count, gms_follow_metrics_apis[k],
                a->sum, gms_follow_metrics_apis[k],
                (unsigned long long) a->count);
    }

    gms_follow_metrics_family(f, "gms_follow_gms_request_errors_total",
                              "counter", "GMS's requests that failed: no "
                              "answer, or an HTTP status from 400 up.");

    for (k = 0; k < GMS_FOLLOW_METRICS_APIS; k++) {
        fprintf(f, "gms_follow_gms_request_errors_total{api=\"%s\"} %llu\n",
                gms_follow_metrics_apis[k],
                (unsigned long long) m->api[k].errors);
    }

    gms_follow_metrics_family(f, "gms_follow_tokens", "gauge",
                              "Tokens DataHub lists, as the last token "
                              "cycle mirrored them.");
    fprintf(f, "gms_follow_tokens %zu\n", m->tokens);

    gms_follow_metrics_family(f, "gms_follow_users", "gauge",
                              "Users whose privileges the last mirror "
                              "wrote.");
    fprintf(f, "gms_follow_users %zu\n", m->users);

    gms_follow_metrics_family(f, "gms_follow_users_inactive", "gauge",
                              "Token holders DataHub refuses, as the last "
                              "users' check found them.");
    fprintf(f, "gms_follow_users_inactive %zu\n", m->inactive);

    gms_follow_metrics_family(f, "gms_follow_tokens_pruned_total", "counter",
                              "Cached tokens DataHub no longer lists, "
                              "deleted.");
    fprintf(f, "gms_follow_tokens_pruned_total %llu\n",
            (unsigned long long) m->pruned);

    gms_follow_metrics_family(f, "gms_follow_invalidations_total", "counter",
                              "Changes published on <prefix>invalidate: "
                              "tokens and users changed in the cache.");
    fprintf(f, "gms_follow_invalidations_total %llu\n",
            (unsigned long long) m->published);

    gms_follow_metrics_family(f, "gms_follow_lease_held", "gauge",
                              "1: this follower holds the lease and works; "
                              "0: it stands by.");
    fprintf(f, "gms_follow_lease_held %d\n", m->lease);

    gms_follow_metrics_family(f, "gms_follow_stream_running", "gauge",
                              "1: DataHub's change stream is followed; 0: "
                              "the token cycle polls.");
    fprintf(f, "gms_follow_stream_running %d\n", m->running);

    gms_follow_metrics_family(f, "gms_follow_stream_events_total", "counter",
                              "Events read from the change stream.");
    fprintf(f, "gms_follow_stream_events_total %llu\n",
            (unsigned long long) m->events);

    gms_follow_metrics_family(f, "gms_follow_stream_lag_seconds", "gauge",
                              "How long before its poll the newest event "
                              "of the last poll was made; 0: none came.");
    fprintf(f, "gms_follow_stream_lag_seconds %.3f\n", m->lag);
}


static void
gms_follow_metrics_family(FILE *f, const char *name, const char *type,
    const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}


static double
gms_follow_metrics_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);

    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

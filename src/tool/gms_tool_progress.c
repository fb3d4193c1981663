
/*
 * gms-token's progress on long work: a sync of a million tokens takes
 * seconds, a migrate of as many keys longer.  When stderr is a terminal,
 * one line on it says what is counted, how far and how fast, rewritten
 * (a carriage return) at most four times a second and cleared before
 * anything else is written there (gms_tool_msgs.c) and at the end; when
 * stderr is not a terminal (a pipe, a file, a container's log) nothing
 * is written at all, so that logs hold only the lines they held before.
 */


#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gms_tool_progress.h"


/* the least time between two lines of one step */
#define GMS_TOOL_PROGRESS_MS   250


static int64_t gms_tool_progress_now(void);


/* p is the command's own until gms_tool_progress_close */

void
gms_tool_progress_open(gms_tool_t *t, gms_tool_progress_t *p)
{
    memset(p, 0, sizeof(gms_tool_progress_t));
    p->command = t->command;
    p->start = gms_tool_progress_now();

    t->progress = isatty(STDERR_FILENO) ? p : NULL;
}


/*
 * n of total done ("tokens listed 3000/10000"; total 0: not known), and
 * the rate since the step began (the first step: since the open).  A
 * new step is shown at once; the same step again only
 * GMS_TOOL_PROGRESS_MS after its last line.
 */

void
gms_tool_progress_show(gms_tool_progress_t *p, const char *what, size_t n,
    size_t total)
{
    int      len;
    char     line[160];
    int64_t  now, took;

    if (p == NULL) {
        return;
    }

    now = gms_tool_progress_now();

    if (p->what == NULL || strcmp(what, p->what) != 0) {
        /* the first step counts from the start, the next from its own */
        if (p->what != NULL) {
            p->start = now;
        }

        p->what = what;

    } else if (p->shown && now - p->shown < GMS_TOOL_PROGRESS_MS) {
        return;
    }

    p->shown = now;
    took = now - p->start;

    len = snprintf(line, sizeof(line), "gms-token: %s: %s %zu", p->command,
                   what, n);

    if (total && len < (int) sizeof(line)) {
        len += snprintf(line + len, sizeof(line) - len, "/%zu", total);
    }

    if (took > 0 && len < (int) sizeof(line)) {
        len += snprintf(line + len, sizeof(line) - len, ", %llu/s",
                        (unsigned long long) n * 1000 / took);
    }

    if (len >= (int) sizeof(line)) {
        len = sizeof(line) - 1;
    }

    /* spaces over what a longer last line left */
    flockfile(stderr);
    fprintf(stderr, "\r%s%*s", line, p->width > len ? p->width - len : 0, "");
    fflush(stderr);
    funlockfile(stderr);

    p->width = len;
}


/* the line wiped: the cursor back at the start of an empty line */

void
gms_tool_progress_clear(gms_tool_progress_t *p)
{
    if (p == NULL || p->width == 0) {
        return;
    }

    flockfile(stderr);
    fprintf(stderr, "\r%*s\r", p->width, "");
    fflush(stderr);
    funlockfile(stderr);

    p->width = 0;
    p->shown = 0;
}


void
gms_tool_progress_close(gms_tool_t *t)
{
    gms_tool_progress_clear(t->progress);
    t->progress = NULL;
}


static int64_t
gms_tool_progress_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/*
 * gms-token's messages on stderr, which every file calls.  An error is
 * also kept in t->error, and only kept while t->quiet (follow puts a
 * cycle's error into the cycle's own line); a warning is always printed.
 */


#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gms_tool_msgs.h"
#include "gms_tool_progress.h"


static void gms_tool_vline(gms_tool_t *t, const char *fmt, va_list args);


void
gms_tool_msgs_error(gms_tool_t *t, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(t->error, sizeof(t->error), fmt, args);
    va_end(args);

    if (t->quiet) {
        return;
    }

    va_start(args, fmt);
    gms_tool_vline(t, fmt, args);
    va_end(args);
}


/* a line on stderr, even while errors are kept quiet (follow's cycles) */

void
gms_tool_msgs_warn(gms_tool_t *t, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    gms_tool_vline(t, fmt, args);
    va_end(args);
}


/* "gms-token: COMMAND: " and the message, one line on stderr */

static void
gms_tool_vline(gms_tool_t *t, const char *fmt, va_list args)
{
    /* follow's two threads: one line is never split by the other's */
    flockfile(stderr);

    /* the progress line wiped first: this one starts a line of its own */
    gms_tool_progress_clear(t->progress);

    fputs("gms-token: ", stderr);

    if (t->command) {
        fprintf(stderr, "%s: ", t->command);
    }

    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);

    funlockfile(stderr);
}


/* a value from the command line, fit for a one-line message */

const char *
gms_tool_msgs_shown(const char *s)
{
    char                *p, *buf;
    size_t               i;
    unsigned char        c;
    static const char    hex[] = "0123456789abcdef";

    /* per thread: follow's privileges thread reports errors too */
    static __thread int  next;
    static __thread char bufs[4][128];

    buf = bufs[next++ % 4];
    p = buf;

    for (i = 0; s[i] && p < buf + sizeof(bufs[0]) - 8; i++) {
        c = (unsigned char) s[i];

        if (c < 0x20 || c == 0x7f) {
            *p++ = '\\';
            *p++ = 'x';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 0xf];
            continue;
        }

        *p++ = c;
    }

    if (s[i]) {
        memcpy(p, "...", 3);
        p += 3;
    }

    *p = '\0';

    return buf;
}


/*
 * gms-token's progress on long work (sync, migrate, follow's first
 * listing): one line on stderr, rewritten, when stderr is a terminal;
 * gms_tool_progress.c.
 */


#ifndef _GMS_TOOL_PROGRESS_H_INCLUDED_
#define _GMS_TOOL_PROGRESS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "gms_tool.h"


struct gms_tool_progress_s {
    const char            *command;        /* "sync", ... */
    const char            *what;           /* the step counted */
    int64_t                start;          /* the step's, monotonic ms */
    int64_t                shown;          /* the last line's, 0: none */
    int                    width;          /* the line on the terminal */
};


void gms_tool_progress_open(gms_tool_t *t, gms_tool_progress_t *p);
void gms_tool_progress_show(gms_tool_progress_t *p, const char *what,
    size_t n, size_t total);
void gms_tool_progress_clear(gms_tool_progress_t *p);
void gms_tool_progress_close(gms_tool_t *t);


#endif /* _GMS_TOOL_PROGRESS_H_INCLUDED_ */

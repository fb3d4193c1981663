
/*
 * gms-token's messages: one line on stderr each, "gms-token: COMMAND: "
 * and the message, as curl's tool_msgs.c; what the user gave is quoted
 * through gms_tool_msgs_shown.
 */


#ifndef _GMS_TOOL_MSGS_H_INCLUDED_
#define _GMS_TOOL_MSGS_H_INCLUDED_


#include "gms_tool.h"


void gms_tool_msgs_error(gms_tool_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gms_tool_msgs_warn(gms_tool_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *gms_tool_msgs_shown(const char *s);


#endif /* _GMS_TOOL_MSGS_H_INCLUDED_ */


/*
 * gms-token --sentinel: the master the Sentinels name, connected to;
 * gms_tool_sentinel.c.
 */


#ifndef _GMS_TOOL_SENTINEL_H_INCLUDED_
#define _GMS_TOOL_SENTINEL_H_INCLUDED_


#include <stddef.h>

#include "gms_tool.h"


int gms_tool_sentinel_connect(gms_tool_t *t, const char *password,
    size_t password_len);


#endif /* _GMS_TOOL_SENTINEL_H_INCLUDED_ */


/*
 * gms-token sync: gms_cmd_sync.c.
 */


#ifndef _GMS_CMD_SYNC_H_INCLUDED_
#define _GMS_CMD_SYNC_H_INCLUDED_


#include "gms_tool_options.h"


extern const gms_tool_command_t  gms_cmd_sync;


#endif /* _GMS_CMD_SYNC_H_INCLUDED_ */


/*
 * gms-token follow: gms_cmd_follow.c.
 */


#ifndef _GMS_CMD_FOLLOW_H_INCLUDED_
#define _GMS_CMD_FOLLOW_H_INCLUDED_


#include "gms_tool_options.h"


extern const gms_tool_command_t  gms_cmd_follow;


#endif /* _GMS_CMD_FOLLOW_H_INCLUDED_ */

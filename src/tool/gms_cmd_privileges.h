
/*
 * gms-token grant, deny and privileges: gms_cmd_privileges.c.
 */


#ifndef _GMS_CMD_PRIVILEGES_H_INCLUDED_
#define _GMS_CMD_PRIVILEGES_H_INCLUDED_


#include "gms_tool_options.h"


extern const gms_tool_command_t  gms_cmd_grant;
extern const gms_tool_command_t  gms_cmd_deny;
extern const gms_tool_command_t  gms_cmd_privileges;


#endif /* _GMS_CMD_PRIVILEGES_H_INCLUDED_ */

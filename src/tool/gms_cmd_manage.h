
/*
 * gms-token revoke, create, list and check-salt: gms_cmd_manage.c.
 */


#ifndef _GMS_CMD_MANAGE_H_INCLUDED_
#define _GMS_CMD_MANAGE_H_INCLUDED_


#include "gms_tool_options.h"


extern const gms_tool_command_t  gms_cmd_revoke;
extern const gms_tool_command_t  gms_cmd_create;
extern const gms_tool_command_t  gms_cmd_list;
extern const gms_tool_command_t  gms_cmd_check_salt;


#endif /* _GMS_CMD_MANAGE_H_INCLUDED_ */

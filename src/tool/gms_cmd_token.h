
/*
 * gms-token id, put and show: gms_cmd_token.c.
 */


#ifndef _GMS_CMD_TOKEN_H_INCLUDED_
#define _GMS_CMD_TOKEN_H_INCLUDED_


#include "gms_tool_options.h"


extern const gms_tool_command_t  gms_cmd_id;
extern const gms_tool_command_t  gms_cmd_put;
extern const gms_tool_command_t  gms_cmd_show;


#endif /* _GMS_CMD_TOKEN_H_INCLUDED_ */

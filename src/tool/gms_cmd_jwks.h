
/*
 * gms-token jwks: gms_cmd_jwks.c.
 */


#ifndef _GMS_CMD_JWKS_H_INCLUDED_
#define _GMS_CMD_JWKS_H_INCLUDED_


#include "gms_tool_options.h"


extern const gms_tool_command_t  gms_cmd_jwks;


#endif /* _GMS_CMD_JWKS_H_INCLUDED_ */


/*
 * gms-token migrate: gms_cmd_migrate.c.
 */


#ifndef _GMS_CMD_MIGRATE_H_INCLUDED_
#define _GMS_CMD_MIGRATE_H_INCLUDED_


#include "gms_tool_options.h"


extern const gms_tool_command_t  gms_cmd_migrate;


#endif /* _GMS_CMD_MIGRATE_H_INCLUDED_ */

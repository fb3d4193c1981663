
/*
 * gms-token's inactive users: what a check found applied in Redis
 * (<prefix>inactive, <prefix>deleted, the users' tokens deleted and
 * published); gms_users_apply.c.
 */


#ifndef _GMS_USERS_APPLY_H_INCLUDED_
#define _GMS_USERS_APPLY_H_INCLUDED_


#include "gms_tool.h"
#include "gms_sync_users.h"
#include "gms_users_ask.h"


int gms_users_apply(gms_tool_t *t, gms_users_t *u,
    gms_tool_users_counts_t *counts);
int gms_users_apply_release(gms_tool_t *t, gms_users_t *u);

#endif /* _GMS_USERS_APPLY_H_INCLUDED_ */

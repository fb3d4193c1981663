
/*
 * gms-token --redis-cluster ADDR,...: the master of the prefix's hash
 * slot, connected to, and the redirections a node may answer with;
 * gms_tool_cluster.c.
 */


#ifndef _GMS_TOOL_CLUSTER_H_INCLUDED_
#define _GMS_TOOL_CLUSTER_H_INCLUDED_


#include <stddef.h>

#include <hiredis/hiredis.h>

#include "gms_tool.h"


int gms_tool_cluster_connect(gms_tool_t *t, const char *password,
    size_t password_len);
redisReply *gms_tool_cluster_redirect(gms_tool_t *t, redisReply *reply,
    const char *cmd, size_t len);
const char *gms_tool_cluster_why(gms_tool_t *t, const redisReply *reply);


#endif /* _GMS_TOOL_CLUSTER_H_INCLUDED_ */


/*
 * gms-token's own connection to Redis or a Sentinel: gms_tool_conn.c.
 * Commands in hiredis's format ("%s", "%b" ...), replies as hiredis's
 * redisReply (freeReplyObject); appended commands are written at the
 * next get_reply, as with hiredis's redisAppendCommand.  A failure
 * leaves the reply NULL and the reason in gms_tool_conn_peer_error.
 *
 * gms_tool_conn_peer_*: one connection, the gms_tool_conn_t given (a
 * Sentinel, a cluster's node, or t->conn itself); gms_tool_conn_*: the
 * tool's connection to its Redis, t->conn, with a cluster's
 * redirections followed.
 */


#ifndef _GMS_TOOL_CONN_H_INCLUDED_
#define _GMS_TOOL_CONN_H_INCLUDED_


#include <stdarg.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "gms_tool.h"


int gms_tool_conn_password(gms_tool_t *t, char **password, size_t *len);

int gms_tool_conn_peer_open(gms_tool_t *t, const char *option,
    const char *addr, const char *user, const char *password,
    size_t password_len, gms_tool_conn_t **conn, char *err, size_t size);
void gms_tool_conn_peer_append(gms_tool_conn_t *c, const char *fmt, ...);
void gms_tool_conn_peer_vappend(gms_tool_conn_t *c, const char *fmt,
    va_list args);
void gms_tool_conn_peer_append_argv(gms_tool_conn_t *c, int argc,
    const char **argv, const size_t *lens);
void gms_tool_conn_peer_append_raw(gms_tool_conn_t *c, const char *cmd,
    size_t len);
int gms_tool_conn_peer_get_reply(gms_tool_conn_t *c, redisReply **reply);
redisReply *gms_tool_conn_peer_command(gms_tool_conn_t *c, const char *fmt,
    ...);
const char *gms_tool_conn_peer_error(gms_tool_conn_t *c);
void gms_tool_conn_peer_close(gms_tool_conn_t *c);

/* the same on t->conn */
redisReply *gms_tool_conn_command(gms_tool_t *t, const char *fmt, ...);
redisReply *gms_tool_conn_command_argv(gms_tool_t *t, int argc,
    const char **argv, const size_t *lens);
void gms_tool_conn_append(gms_tool_t *t, const char *fmt, ...);
void gms_tool_conn_append_argv(gms_tool_t *t, int argc, const char **argv,
    const size_t *lens);
int gms_tool_conn_get_reply(gms_tool_t *t, redisReply **reply);
void gms_tool_conn_close(gms_tool_t *t);

#endif /* _GMS_TOOL_CONN_H_INCLUDED_ */


/*
 * gms-token --sentinel ADDR,... --master NAME: which Redis is the master.
 * The Sentinels are asked in the order given (SENTINEL
 * get-master-addr-by-name), the address one names is connected to and
 * asked ROLE, and only a "master" is kept: a Sentinel that has not seen
 * a failover yet names the old master, which may be back as a replica.
 * Asked at every connect: follow connects afresh after a Redis failure,
 * so it follows a failover.  With --tls the Sentinels are reached over
 * TLS too, with the same CAs, name and client certificate.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gms_topology.h"
#include "gms_tool_sentinel.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"


static int gms_sentinel_ask(gms_tool_t *t, const char *sentinel,
    const char *password, size_t password_len, char *err, size_t size);
static void gms_sentinel_why(char *err, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));


int
gms_tool_sentinel_connect(gms_tool_t *t, const char *password,
    size_t password_len)
{
    int                   rc;
    char                 *list, *addr, *next, *spass, err[256], reason[200];
    size_t                spass_len;
    const char           *role, *why;
    redisReply           *reply;
    gms_tool_conn_t      *c;
    gms_topology_role_t   said;

    spass = NULL;
    spass_len = 0;

    if (t->sentinel_password_file) {
        spass = gms_tool_input_read_file(t, "--sentinel-password-file",
                                         t->sentinel_password_file, &spass_len);
        if (spass == NULL) {
            return GMS_TOOL_USAGE;
        }
    }

    list = strdup(t->sentinel);
    if (list == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        rc = GMS_TOOL_REDIS;
        goto done;
    }

    snprintf(err, sizeof(err), "no Sentinel given");
    rc = GMS_TOOL_REDIS;

    for (addr = list; addr; addr = next) {
        next = strchr(addr, ',');

        if (next) {
            *next++ = '\0';
        }

        rc = gms_sentinel_ask(t, addr, spass, spass_len, err, sizeof(err));

        if (rc == GMS_TOOL_USAGE) {
            gms_tool_msgs_error(t, "%s", err);
            goto done;
        }

        if (rc != GMS_TOOL_OK) {
            continue;
        }

        rc = gms_tool_conn_peer_open(t, "--sentinel", t->master_addr, t->user,
                                     password, password_len, &c, reason,
                                     sizeof(reason));

        if (rc == GMS_TOOL_USAGE) {
            gms_tool_msgs_error(t, "%s", reason);
            goto done;
        }

        if (rc != GMS_TOOL_OK) {
            gms_sentinel_why(err, sizeof(err), "%s named %s: %s", addr,
                             t->master_addr, reason);
            continue;
        }

        /* ROLE, as gms_topology.c reads it */
        reply = gms_tool_conn_peer_command(c, "ROLE");

        said.role = 0;

        if (reply == NULL) {
            role = gms_tool_conn_peer_error(c);

        } else if (gms_topology_role(reply, &said, &why) == GMS_TOPOLOGY_OK) {
            role = said.name;

        } else {
            role = reply->type == REDIS_REPLY_ERROR ? reply->str
                                                    : "not understood";
        }

        if (said.role == GMS_TOPOLOGY_MASTER) {
            freeReplyObject(reply);
            t->conn = c;
            t->redis = t->master_addr;
            rc = GMS_TOOL_OK;
            goto done;
        }

        gms_sentinel_why(err, sizeof(err), "%s named %s, whose ROLE is %s",
                         addr, t->master_addr, role);

        if (reply) {
            freeReplyObject(reply);
        }

        gms_tool_conn_peer_close(c);
        rc = GMS_TOOL_REDIS;
    }

    gms_tool_msgs_error(t, "redis sentinel %s: no sentinel named a master for "
                        "%s (the last: %s)", t->sentinel, t->master, err);

done:

    free(list);

    if (spass) {
        OPENSSL_cleanse(spass, spass_len);
        free(spass);
    }

    return rc;
}


/* the master's address as one Sentinel names it, into t->master_addr */

static int
gms_sentinel_ask(gms_tool_t *t, const char *sentinel, const char *password,
    size_t password_len, char *err, size_t size)
{
    int               rc;
    char              reason[256];
    redisReply       *reply, *ip, *port;
    gms_tool_conn_t  *c;

    rc = gms_tool_conn_peer_open(t, "--sentinel", sentinel, NULL, password,
                                 password_len, &c, reason, sizeof(reason));

    if (rc == GMS_TOOL_USAGE) {
        snprintf(err, size, "%s", reason);
        return rc;
    }

    if (rc != GMS_TOOL_OK) {
        gms_sentinel_why(err, size, "%s: %s", sentinel, reason);
        return rc;
    }

    reply = gms_tool_conn_peer_command(c, "SENTINEL get-master-addr-by-name %s",
                                       t->master);

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        gms_sentinel_why(err, size, "%s: %s", sentinel,
                         reply == NULL ? gms_tool_conn_peer_error(c)
                         : reply->type == REDIS_REPLY_NIL
                         ? "no master of that name"
                         : reply->type == REDIS_REPLY_ERROR ? reply->str
                         : "SENTINEL: unexpected reply");
        rc = GMS_TOOL_REDIS;
        goto done;
    }

    ip = reply->elements == 2 ? reply->element[0] : NULL;
    port = reply->elements == 2 ? reply->element[1] : NULL;

    if (ip == NULL || ip->type != REDIS_REPLY_STRING || ip->len == 0
        || ip->len > 256 || strlen(ip->str) != ip->len
        || port->type != REDIS_REPLY_STRING || port->len == 0
        || port->len > 5 || strspn(port->str, "0123456789") != port->len)
    {
        snprintf(err, size, "%s: SENTINEL: unexpected reply", sentinel);
        rc = GMS_TOOL_REDIS;
        goto done;
    }

    snprintf(t->master_addr, sizeof(t->master_addr),
             strchr(ip->str, ':') ? "[%s]:%s" : "%s:%s", ip->str, port->str);

    rc = GMS_TOOL_OK;

done:

    if (reply) {
        freeReplyObject(reply);
    }

    gms_tool_conn_peer_close(c);

    return rc;
}


/* a reason for the message, cut to fit: the last Sentinel's */

static void
gms_sentinel_why(char *err, size_t size, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(err, size, fmt, args);
    va_end(args);
}

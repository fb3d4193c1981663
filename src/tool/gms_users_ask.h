
/*
 * gms-token's inactive users read from GMS: each user's key aspect,
 * status and corpUserStatus in batched, parallel GraphQL requests, and
 * DataHub's OAuth users listed; and the state of one check of the users,
 * which gms_sync_users.c gathers, this file fills from GMS and
 * gms_users_apply.c applies in Redis; gms_users_ask.c.
 */


#ifndef _GMS_USERS_ASK_H_INCLUDED_
#define _GMS_USERS_ASK_H_INCLUDED_


#include <stddef.h>

#include <hiredis/hiredis.h>

#include "gms_tool.h"
#include "gms_graphql.h"
#include "gms_sync_users.h"


/*
 * Users a request: 100 root fields, each user some 6 points of GMS's
 * query complexity (a field 1, DataHubFieldComplexityCalculator), far
 * below graphQL.query.complexityLimit (2000 by default, application.yaml)
 */
#define GMS_USERS_BATCH        50

/* Redis commands per pipelined batch */
#define GMS_USERS_PIPELINE     1000


typedef enum {
    GMS_USERS_UNKNOWN = 0,                 /* not read: left as it was */
    GMS_USERS_ACTIVE,
    GMS_USERS_INACTIVE
} gms_users_state_e;


/* a listed token: its user and id */
typedef struct {
    const char            *urn;
    const char            *id;
    unsigned               dropped:1;      /* deleted by this run */
} gms_users_token_t;


typedef struct {
    const char            *urn;
    size_t                 len;
    size_t                 first;          /* its tokens: tokens[first..] */
    size_t                 ntokens;
    gms_users_state_e      state;
    unsigned               ask:1;          /* a user GMS is asked about */
    unsigned               was:1;          /* in <prefix>inactive before */
    unsigned               deleted:1;      /* inactive: no corpUserKey */
    unsigned               changed:1;      /* in or out of a set now */
    unsigned               skip:1;         /* the stream read it since: as
                                              it is */
} gms_users_user_t;


typedef struct {
    gms_users_token_t     *tokens;         /* by user */
    size_t                 ntokens;
    gms_users_user_t      *users;          /* holders by urn, then the
                                              set's other members */
    size_t                 n;
    redisReply            *members;        /* <prefix>inactive's */
    char                 **oauth;          /* DataHub's OAuth users, sorted,
                                              unique */
    size_t                 noauth;
    char                  *set;            /* <prefix>inactive */
    size_t                 set_len;
    char                  *deleted;        /* <prefix>deleted */
    size_t                 deleted_len;
    char                  *channel;        /* <prefix>invalidate */
    size_t                 channel_len;
    size_t                 failed;         /* users GMS failed on */
    gms_users_user_t      *first;          /* the first of them, */
    char                   error[256];     /* and why */
} gms_users_t;


int gms_users_ask_all(gms_tool_t *t, gms_graphql_t *g,
    gms_users_t *u, const gms_tool_users_skip_t *skip);
int gms_users_ask_oauth(gms_tool_t *t, gms_graphql_t *g,
    gms_users_t *u);

#endif /* _GMS_USERS_ASK_H_INCLUDED_ */

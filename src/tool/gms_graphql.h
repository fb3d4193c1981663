
/*
 * gms-token's client for GMS, on libcurl: GraphQL (POST <gms>/api/graphql)
 * and a GET of its OpenAPI.
 */


#ifndef _GMS_GRAPHQL_H_INCLUDED_
#define _GMS_GRAPHQL_H_INCLUDED_


#include <signal.h>

#include <jansson.h>

#include "gms_tool.h"


typedef struct gms_graphql_s  gms_graphql_t;


/* gms_graphql_get */
#define GMS_GRAPHQL_ANSWERED   0
#define GMS_GRAPHQL_FAILED     (-1)
#define GMS_GRAPHQL_TOO_BIG    (-2)

/* an error's text, as gms_tool_msgs_error keeps it (gms_tool_t's error) */
#define GMS_GRAPHQL_ERROR_LEN  256


/* the --gms options of a command */
typedef struct gms_graphql_conf_s {
    const char            *url;            /* GMS's base, as http://gms:8080 */
    const char            *token_file;     /* NULL: no Authorization */
    const char            *ca_file;
    long                   timeout_ms;
    volatile sig_atomic_t *stop;           /* set: abandon the request */

    /* each transfer's end ("graphql" or "openapi"); NULL: none timed */
    void                 (*observe)(const char *api, double seconds,
                                    int failed);
} gms_graphql_conf_t;


/* one query of gms_graphql_many: its outcome is gms_graphql_query's */
typedef struct {
    char                  *query;          /* taken over: freed */
    json_t                *variables;      /* taken over */
    const char            *field;          /* NULL: data itself */
    json_t                *data;           /* data.<field>, or NULL and */
    char                   error[GMS_GRAPHQL_ERROR_LEN];  /* why */
} gms_graphql_ask_t;


gms_graphql_t *gms_graphql_open(gms_tool_t *t, const gms_graphql_conf_t *c);
json_t *gms_graphql_query(gms_graphql_t *g, const char *query,
    json_t *variables, const char *field);
json_t *gms_graphql_query_nullable(gms_graphql_t *g, const char *query,
    json_t *variables, const char *field);
json_t *gms_graphql_query_errors(gms_graphql_t *g, const char *query,
    json_t *variables, const char *field, json_t **errors);
int gms_graphql_many(gms_graphql_t *g, gms_graphql_ask_t *asks, size_t n,
    size_t parallel);
int gms_graphql_get(gms_graphql_t *g, const char *path, long *status,
    const char **body, size_t *len);
const char *gms_graphql_get_url(gms_graphql_t *g);
void gms_graphql_report(gms_graphql_t *g, json_t *errors);
void gms_graphql_close(gms_graphql_t *g);
char *gms_graphql_aliases(const char *name, const char *type,
    const char *field, const char *arg, const char *selection, size_t n);


#endif /* _GMS_GRAPHQL_H_INCLUDED_ */

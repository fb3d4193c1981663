
/*
 * getEsTaskStatus: the request's task, and the search cluster's answer as
 * the metadata service's value; pure C over jansson.  Every returned
 * string is malloc()ed: free() it.
 */


#ifndef _GMS_ES_TASK_H_INCLUDED_
#define _GMS_ES_TASK_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* the longest getEsTaskStatus request body accepted */
#define GMS_ES_TASK_BODY_MAX   8192

/* ES/OpenSearch node ids are 22 characters; leave room, but not much */
#define GMS_ES_NODE_MAX        128


typedef struct {
    char                   node[GMS_ES_NODE_MAX + 1];
    int64_t                number;
} gms_es_task_ref_t;


int gms_es_task_request_parse(const char *body, size_t len,
    gms_es_task_ref_t *ref, char *msg, size_t msg_size, size_t *msg_len);
/* the same without the fast reading of the usual bodies: for tests */
int gms_es_task_request_json(const char *body, size_t len,
    gms_es_task_ref_t *ref, char *msg, size_t msg_size, size_t *msg_len);
char *gms_es_task_value(const char *answer, size_t len, char *reason,
    size_t reason_size);
char *gms_es_task_value_body(const char *answer, size_t len, char *reason,
    size_t reason_size);
char *gms_es_task_value_body_buf(const char *answer, size_t len, char *buf,
    size_t size, char *reason, size_t reason_size);
char *gms_es_task_error_value(const gms_es_task_ref_t *ref);


/*
 * The OpenAPI form, GET /openapi/operations/elasticSearch/getTaskStatus
 * ?task=<node>:<number> (OperationsController in 0.13-0.15,
 * ElasticsearchController from 1.0.0): what the edge answers itself, and
 * its bodies, each the controller's text (application/json all).
 */

/* the longest decoded task parameter the edge answers for */
#define GMS_ES_OPENAPI_TASK_MAX  (GMS_ES_NODE_MAX + 1 + 20)

/* GMS's 500 from 1.0.0 for an exception (GlobalControllerExceptionHandler) */
#define GMS_ES_OPENAPI_INTERNAL                                              \
    "{\"error\":\"Internal server error occurred\"}"

/*
 * GMS's 403 from 0.15.0 for an actor OperationContext refuses
 * (GlobalControllerExceptionHandler.actorAccessException, PR 12158)
 */
#define GMS_ES_OPENAPI_INACTIVE  "{\"error\":\"Actor is not active\"}"

int gms_es_openapi_query(const char *args, size_t len, char *task,
    size_t *task_len);
int gms_es_openapi_accept(const char *value, size_t len);
int gms_es_openapi_task(const char *task, size_t len, gms_es_task_ref_t *ref);
char *gms_es_openapi_bad_task(const char *task, size_t len);
char *gms_es_openapi_forbidden(const char *actor, size_t len);
char *gms_es_openapi_not_found(const gms_es_task_ref_t *ref);


#endif /* _GMS_ES_TASK_H_INCLUDED_ */

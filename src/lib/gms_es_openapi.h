
/*
 * getEsTaskStatus's OpenAPI form: what the edge answers itself, and its
 * bodies; gms_es_openapi.c.  Every returned string is malloc()ed.
 */


#ifndef _GMS_ES_OPENAPI_H_INCLUDED_
#define _GMS_ES_OPENAPI_H_INCLUDED_


#include <stddef.h>

#include "gms_es_task.h"


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


#endif /* _GMS_ES_OPENAPI_H_INCLUDED_ */

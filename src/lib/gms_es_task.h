
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
/* "<node>:<number>" as GMS's isTaskIdValid() sees it: 0, or -1 */
int gms_es_task_string_parse(const char *s, size_t len,
    gms_es_task_ref_t *ref);


#endif /* _GMS_ES_TASK_H_INCLUDED_ */


/*
 * libFuzzer: the OpenAPI getTaskStatus query and Accept header.  A task
 * taken from the query is printable ASCII within its bound; one the
 * edge takes as valid is safe to put in the subrequest's path.
 */


#include <stdlib.h>
#include <string.h>

#include "gms_es_task.h"
#include "gms_es_openapi.h"


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    int                rc;
    size_t             i, len;
    char               task[GMS_ES_OPENAPI_TASK_MAX];
    gms_es_task_ref_t  ref;

    rc = gms_es_openapi_accept((const char *) data, size);

    if (rc < -1 || rc > 1) {
        abort();
    }

    if (gms_es_openapi_query((const char *) data, size, task, &len) != 0) {
        return 0;
    }

    if (len > GMS_ES_OPENAPI_TASK_MAX) {
        abort();
    }

    for (i = 0; i < len; i++) {
        if (task[i] < 0x20 || task[i] > 0x7e) {
            abort();
        }
    }

    if (gms_es_openapi_task(task, len, &ref) != 0) {
        return 0;
    }

    if (ref.number <= 0 || ref.node[0] == '\0'
        || strlen(ref.node) > GMS_ES_NODE_MAX
        || strspn(ref.node, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
                            "UVWXYZ0123456789-_") != strlen(ref.node))
    {
        abort();
    }

    return 0;
}


/*
 * libFuzzer: the getEsTaskStatus body to a task reference.  Whatever is
 * accepted must be safe to put in the subrequest's path, and the fast
 * reading of the usual bodies must agree with jansson's on every body.
 */


#include <stdlib.h>
#include <string.h>

#include "gms_es_task.h"


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    int                rc;
    size_t             i, len, len_json;
    static char        msg[GMS_ES_TASK_BODY_MAX * 2 + 256];
    static char        msg_json[GMS_ES_TASK_BODY_MAX * 2 + 256];
    gms_es_task_ref_t  ref, ref_json;

    if (size > GMS_ES_TASK_BODY_MAX) {
        return 0;
    }

    len = 0;
    len_json = 0;

    rc = gms_es_task_request_parse((const char *) data, size, &ref, msg,
                                   sizeof(msg), &len);

    if (gms_es_task_request_json((const char *) data, size, &ref_json,
                                 msg_json, sizeof(msg_json), &len_json)
        != rc)
    {
        abort();
    }

    if (rc != 0) {
        if (len == 0 || len > sizeof(msg) || len != len_json
            || memcmp(msg, msg_json, len) != 0)
        {
            abort();
        }

        return 0;
    }

    if (strcmp(ref.node, ref_json.node) != 0
        || ref.number != ref_json.number)
    {
        abort();
    }

    if (ref.number <= 0 || ref.node[0] == '\0'
        || strlen(ref.node) > GMS_ES_NODE_MAX)
    {
        abort();
    }

    for (i = 0; ref.node[i]; i++) {
        if (!((ref.node[i] >= 'a' && ref.node[i] <= 'z')
              || (ref.node[i] >= 'A' && ref.node[i] <= 'Z')
              || (ref.node[i] >= '0' && ref.node[i] <= '9')
              || ref.node[i] == '-' || ref.node[i] == '_'))
        {
            abort();
        }
    }

    return 0;
}

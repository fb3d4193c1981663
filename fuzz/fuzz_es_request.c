
/*
 * libFuzzer: the getEsTaskStatus body to a task reference.  Whatever is
 * accepted must be safe to put in the subrequest's path.
 */


#include <stdlib.h>
#include <string.h>

#include "gms_es_task.h"


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    size_t             i, len;
    static char        msg[GMS_ES_TASK_BODY_MAX * 2 + 256];
    gms_es_task_ref_t  ref;

    if (size > GMS_ES_TASK_BODY_MAX) {
        return 0;
    }

    len = 0;

    if (gms_es_task_request_parse((const char *) data, size, &ref, msg,
                                  sizeof(msg), &len)
        != 0)
    {
        if (len == 0 || len > sizeof(msg)) {
            abort();
        }

        return 0;
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

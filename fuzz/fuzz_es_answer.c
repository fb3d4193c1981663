
/*
 * libFuzzer: a search cluster's _tasks answer to GMS's value, and to the
 * Rest.li body written in the same pass; the answer's scanner against
 * jansson.
 */


#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_es_task.h"
#include "gms_json_scan.h"
#include "gms_restli.h"


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    int           scanned;
    char          reason[128], *value, *body, *direct, *buffered;
    static char   scratch[4096];
    size_t        at;
    json_t       *doc, *status, *inner;
    const char   *text;
    json_error_t  err;

    /*
     * The scanner is as strict as jansson (GMS's parser refuses invalid
     * JSON anywhere): it takes what jansson takes, but for the numbers
     * too large for jansson, which the scanner does not convert, and for
     * a NUL byte, which jansson takes for the end of the text (the
     * scanner, as GMS's parser, for a byte that is not JSON).
     */

    if (memchr(data, '\0', size) == NULL) {
        at = 0;
        scanned = gms_json_scan((const char *) data, size, NULL, &at);
        doc = json_loadb((const char *) data, size, JSON_DECODE_ANY, &err);

        if ((scanned == 0) != (doc != NULL)
            && !(scanned == 0 && json_error_code(&err)
                                 == json_error_numeric_overflow))
        {
            abort();
        }

        json_decref(doc);
    }

    value = gms_es_task_value((const char *) data, size, reason,
                              sizeof(reason));
    direct = gms_es_task_value_body((const char *) data, size, reason,
                                    sizeof(reason));

    /* into a scratch buffer when it fits, the same body */
    buffered = gms_es_task_value_body_buf((const char *) data, size, scratch,
                                          sizeof(scratch), reason,
                                          sizeof(reason));

    if ((value == NULL) != (direct == NULL)
        || (direct == NULL) != (buffered == NULL)
        || (direct != NULL && strcmp(direct, buffered) != 0))
    {
        abort();
    }

    if (buffered != scratch) {
        free(buffered);
    }

    if (value == NULL) {
        if (reason[0] == '\0') {
            abort();
        }

        return 0;
    }

    /* the value is a JSON object with GMS's members, and wraps */
    doc = json_loads(value, 0, NULL);

    if (!json_is_object(doc)
        || !json_is_boolean(json_object_get(doc, "completed"))
        || !json_is_string(json_object_get(doc, "taskId"))
        || !json_is_integer(json_object_get(doc, "runTimeNanos"))
        || json_object_get(doc, "response") != NULL)
    {
        abort();
    }

    /* status, when present, is a string of JSON text holding an object */
    status = json_object_get(doc, "status");

    if (status != NULL) {
        if (!json_is_string(status)) {
            abort();
        }

        text = json_string_value(status);
        inner = json_loadb(text, json_string_length(status), 0, &err);

        /*
         * Numbers are kept as the cluster wrote them, so jansson may find
         * one too large for it; anything else must load, as an object.
         */
        if (inner == NULL
            ? json_error_code(&err) != json_error_numeric_overflow
            : !json_is_object(inner))
        {
            abort();
        }

        json_decref(inner);
    }

    body = gms_restli_value_body(value);

    if (body == NULL) {
        abort();
    }

    /* the body written in the mapping's pass is the value wrapped */
    if (strcmp(body, direct) != 0) {
        abort();
    }

    free(direct);

    /* and the body holds the value, byte for byte */
    inner = json_loads(body, 0, NULL);
    status = json_object_get(inner, "value");

    if (!json_is_string(status) || strcmp(json_string_value(status), value))
    {
        abort();
    }

    json_decref(inner);
    free(body);
    json_decref(doc);
    free(value);

    return 0;
}

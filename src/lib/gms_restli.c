
/*
 * Bodies in the metadata service's (Rest.li's) shapes: the exception body
 * of an error, and an action's {"value": ...}.  Every returned string is
 * malloc()ed: free() it.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_restli.h"


#define GMS_RESTLI_EXCEPTION                                                 \
    "com.linkedin.restli.server.RestLiServiceException"


static char *
gms_restli_dump(json_t *doc)
{
    char  *s;

    if (doc == NULL) {
        return NULL;
    }

    s = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);

    return s;
}


char *
gms_restli_error_body(int status, const char *message, size_t len)
{
    json_t  *text;

    /* NULL unless the message is valid UTF-8, which an echo of the
     * client's JSON string always is */
    text = json_stringn(message, len);

    if (text == NULL) {
        return NULL;
    }

    return gms_restli_dump(json_pack("{s:s, s:i, s:o}",
                                     "exceptionClass", GMS_RESTLI_EXCEPTION,
                                     "status", status,
                                     "message", text));
}


/*
 * Rest.li's action response, {"value": "<the action's return>"}, written
 * directly: value is jansson's compact output, so escaping quotes,
 * backslashes and control bytes is all it takes (a second json_dumps of
 * the whole status cost more than the mapping itself).
 */

char *
gms_restli_value_body(const char *value)
{
    char                 *body, *p;
    size_t                len;
    const unsigned char  *v;
    static const char     head[] = "{\"value\":\"", tail[] = "\"}";

    len = sizeof(head) - 1 + sizeof(tail);

    for (v = (const unsigned char *) value; *v; v++) {
        len += (*v == '"' || *v == '\\') ? 2 : (*v < 0x20) ? 6 : 1;
    }

    body = malloc(len);
    if (body == NULL) {
        return NULL;
    }

    p = body;
    memcpy(p, head, sizeof(head) - 1);
    p += sizeof(head) - 1;

    for (v = (const unsigned char *) value; *v; v++) {

        if (*v == '"' || *v == '\\') {
            *p++ = '\\';
            *p++ = (char) *v;

        } else if (*v < 0x20) {
            p += sprintf(p, "\\u%04x", *v);

        } else {
            *p++ = (char) *v;
        }
    }

    memcpy(p, tail, sizeof(tail));

    return body;
}

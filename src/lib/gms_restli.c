
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
 * The bytes a JSON string cannot hold as they are, by what they add when
 * escaped: '"' and '\\' one (a backslash), the C0 controls five
 * (\u00xx); the others none.
 */

static const unsigned char  gms_restli_escape[256] = {
    5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,    /*  !"#$%&'()*+,-./ */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0     /* PQRSTUVWXYZ[\\]^_ */
    /* 0x60-0xff: 0 */
};


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
    static const char     hex[] = "0123456789abcdef";

    len = sizeof(head) - 1 + sizeof(tail);

    for (v = (const unsigned char *) value; *v; v++) {
        len += 1 + gms_restli_escape[*v];
    }

    body = malloc(len);
    if (body == NULL) {
        return NULL;
    }

    p = body;
    memcpy(p, head, sizeof(head) - 1);
    p += sizeof(head) - 1;

    for (v = (const unsigned char *) value; *v; v++) {

        switch (gms_restli_escape[*v]) {

        case 0:
            *p++ = (char) *v;
            break;

        case 1:
            *p++ = '\\';
            *p++ = (char) *v;
            break;

        default:
            *p++ = '\\';
            *p++ = 'u';
            *p++ = '0';
            *p++ = '0';
            *p++ = hex[*v >> 4];
            *p++ = hex[*v & 0xf];
        }
    }

    memcpy(p, tail, sizeof(tail));

    return body;
}


/*
 * Unit tests of src/lib/gms_restli.c: the metadata service's Rest.li
 * bodies, an error's (RestLiServiceException) and an action's
 * {"value": ...}, byte for byte as the edge sends them.
 */


#include <stdlib.h>
#include <jansson.h>

#include "tap.h"
#include "gms_restli.h"


static void
test_error_body(void)
{
    char  *body;

    body = gms_restli_error_body(401, "Invalid or revoked access token", 31);
    is_str(body, "{\"exceptionClass\":\"com.linkedin.restli.server."
                 "RestLiServiceException\",\"status\":401,"
                 "\"message\":\"Invalid or revoked access token\"}",
           "an error body: exceptionClass, status, message, in that order");
    free(body);

    body = gms_restli_error_body(400, "x \"y\"", 5);
    is_str(body, "{\"exceptionClass\":\"com.linkedin.restli.server."
                 "RestLiServiceException\",\"status\":400,"
                 "\"message\":\"x \\\"y\\\"\"}",
           "error body escapes the message");
    free(body);

    body = gms_restli_error_body(503, "abcdef", 3);
    is_str(body, "{\"exceptionClass\":\"com.linkedin.restli.server."
                 "RestLiServiceException\",\"status\":503,"
                 "\"message\":\"abc\"}",
           "the message's length is the one given");
    free(body);

    ok(gms_restli_error_body(400, "\xc3(", 2) == NULL,
       "a message not UTF-8: no body");
}


static void
test_value_body(void)
{
    char    *body;
    json_t  *v;

    body = gms_restli_value_body("{\"completed\":true}");
    is_str(body, "{\"value\":\"{\\\"completed\\\":true}\"}",
           "the action's value as a JSON string");
    free(body);

    body = gms_restli_value_body("");
    is_str(body, "{\"value\":\"\"}", "an empty value");
    free(body);

    body = gms_restli_value_body("a\x01\x1f\x7f\xc3\xa9");
    is_str(body, "{\"value\":\"a\\u0001\\u001f\x7f\xc3\xa9\"}",
           "C0 controls as \\u00xx; DEL and UTF-8 as they are");
    free(body);

    body = gms_restli_value_body("{\"a\":\"q\\\"\\\\\\n\"}\x01");
    v = json_loads(body ? body : "", 0, NULL);
    is_str(json_string_value(json_object_get(v, "value")),
           "{\"a\":\"q\\\"\\\\\\n\"}\x01",
           "value body escapes quotes, backslashes and control bytes");
    json_decref(v);
    free(body);
}


int
main(void)
{
    test_error_body();
    test_value_body();

    return done_testing();
}

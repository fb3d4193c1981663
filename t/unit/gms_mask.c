
/* Unit tests of src/lib/gms_mask.c: credentials masked in a log line. */


#include "tap.h"
#include "gms_mask.h"


static void
mask(char *line)
{
    static const char  *headers[] = { "x_gms_token", "x_other" };

    gms_mask_credentials((unsigned char *) line, strlen(line), headers, 2);
}


static void
test_mask(void)
{
    char  line[160];

    strcpy(line, "http header: \"Authorization: Bearer abc.def-1\"");
    mask(line);
    is_str(line, "http header: \"Authorization: *****************",
           "an Authorization header's value masked, to the line end");

    strcpy(line, "http header: \"Authorization: Bearer \"eyJ.a\\\"b\"\n"
                 "next");
    mask(line);
    is_str(line, "http header: \"Authorization: *****************\nnext",
           "quotes and backslashes in the value masked too");

    strcpy(line, "AUTHORIZATION:Token a b c\r\nHost: x");
    mask(line);
    is_str(line, "AUTHORIZATION:***********\r\nHost: x",
           "any scheme, up to the line end");

    strcpy(line, "http script var: \"bearer xyz\"");
    mask(line);
    is_str(line, "http script var: \"bearer ****",
           "a bearer token outside a header");

    strcpy(line, "var: \"Bearer \"eyJhbGciOi.x\"\"\r\nHost: h");
    mask(line);
    is_str(line, "var: \"Bearer ***************\r\nHost: h",
           "a quoted bearer token outside a header");

    strcpy(line, "WWW-Authenticate: Bearer realm=\"DataHub\"");
    mask(line);
    is_str(line, "WWW-Authenticate: Bearer realm=\"DataHub\"",
           "a challenge is left alone");

    strcpy(line, "gms: token id \"kwu9xRtq7VwqVnj9bije56BeiktkPPw=\"");
    mask(line);
    is_str(line, "gms: token id \"kwu9xRtq7VwqVnj9bije56BeiktkPPw=\"",
           "other lines are left alone");

    strcpy(line, "http header: \"Cookie: a=1; gms_token=eyJ.x;b=\"q;\"\"");
    mask(line);
    is_str(line, "http header: \"Cookie: a=*; gms_token=*****;b=**;**",
           "every cookie's value masked, the names kept");

    strcpy(line, "cookie:gms_token=abc ; bare;  c=\r\nHost: x");
    mask(line);
    is_str(line, "cookie:gms_token=****; ****;  c=\r\nHost: x",
           "a cookie without a name is all value; the line end stops it");

    strcpy(line, "Set-Cookie: s=secret; Path=/");
    mask(line);
    is_str(line, "Set-Cookie: s=******; Path=*", "Set-Cookie too");

    strcpy(line, "http header: \"X-Gms-Token: bare-token\"\nX-GMS_token:t");
    mask(line);
    is_str(line, "http header: \"X-Gms-Token: ***********\nX-GMS_token:*",
           "a gms_token_source header, '_' for '-' or '_', any case");

    strcpy(line, "x-other:  v w\r\nX-Gms-Tokens: kept\r\nX-Gms: kept");
    mask(line);
    is_str(line, "x-other:  ***\r\nX-Gms-Tokens: kept\r\nX-Gms: kept",
           "each header given; longer or shorter names left alone");

    strcpy(line, "X-Gms-Token: abc");
    gms_mask_credentials((unsigned char *) line, strlen(line), NULL, 0);
    is_str(line, "X-Gms-Token: abc", "no header given: only the usual ones");
}


int
main(void)
{
    test_mask();

    return done_testing();
}

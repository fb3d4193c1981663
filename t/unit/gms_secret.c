
/*
 * Unit tests of src/lib/gms_secret.c: a secret file's bytes, one line
 * ending at the end dropped, and a line ending left inside refused.
 */


#include "tap.h"
#include "gms_secret.h"


#define S(s)  (s), sizeof(s) - 1


int
main(void)
{
    size_t  len;

    ok(gms_secret_line(S("s3cret"), &len) == 0 && len == 6,
       "no line ending: the whole file");
    ok(gms_secret_line(S("s3cret\n"), &len) == 0 && len == 6,
       "LF at the end dropped");
    ok(gms_secret_line(S("s3cret\r\n"), &len) == 0 && len == 6,
       "CRLF at the end dropped");
    ok(gms_secret_line(S("s3cret\n\n"), &len) == -1,
       "two line endings: refused");
    ok(gms_secret_line(S("s3cret\r"), &len) == -1,
       "a CR alone at the end: refused");
    ok(gms_secret_line(S("pass\nword"), &len) == -1,
       "two lines: refused");
    ok(gms_secret_line(S("pass\rword\n"), &len) == -1,
       "a CR inside: refused");
    ok(gms_secret_line(S(""), &len) == 0 && len == 0,
       "an empty file: empty (the caller decides)");
    ok(gms_secret_line(S("\n"), &len) == 0 && len == 0,
       "a line ending alone: empty");
    ok(gms_secret_line(S("a b\tc\0d"), &len) == 0 && len == 7,
       "other bytes kept, NUL included");

    return done_testing();
}

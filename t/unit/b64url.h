
/*
 * base64url without padding (RFC 7515's), as a JWT's parts and a JWK's
 * numbers are written: for the tests and fuzzers that make them.
 */


#ifndef _GMS_UNIT_B64URL_H_INCLUDED_
#define _GMS_UNIT_B64URL_H_INCLUDED_


#include <stddef.h>

#include <openssl/evp.h>


/* out holds 4 * ((len + 2) / 3) + 1 bytes; the length written, NUL after */

static size_t
b64url(const unsigned char *in, size_t len, char *out)
{
    size_t  i, n;

    n = (size_t) EVP_EncodeBlock((unsigned char *) out, in, (int) len);

    while (n > 0 && out[n - 1] == '=') {
        n--;
    }

    for (i = 0; i < n; i++) {
        out[i] = (out[i] == '+') ? '-' : (out[i] == '/') ? '_' : out[i];
    }

    out[n] = '\0';

    return n;
}


#endif /* _GMS_UNIT_B64URL_H_INCLUDED_ */

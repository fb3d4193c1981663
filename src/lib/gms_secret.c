
/*
 * A secret read from a file: the salt, GMS's signing key, the system
 * client's secret, a Redis or Sentinel password, GMS's token for
 * gms-token.  One rule for the module and the tool, so that both read a
 * file the same way (the salt above all: a byte more on one side and the
 * token ids differ):
 *
 *  - the secret is the file's bytes, less one line ending at the end, LF
 *    or CRLF (echo, editors and Kubernetes Secrets made from a file all
 *    may leave one);
 *  - a CR or LF left after that is refused: a file of two lines is a
 *    mistake (the old module took a password's first line, or kept a CR,
 *    where gms-token dropped it), and a secret carrying one would fail
 *    far from its cause (AUTH refused, every token unknown).
 */


#include <string.h>

#include "gms_secret.h"


/* the secret's length in *len: 0, or -1 for a line ending left inside */

int
gms_secret_line(const char *buf, size_t n, size_t *len)
{
    if (n > 0 && buf[n - 1] == '\n') {
        n--;

        if (n > 0 && buf[n - 1] == '\r') {
            n--;
        }
    }

    *len = n;

    if (memchr(buf, '\n', n) != NULL || memchr(buf, '\r', n) != NULL) {
        return -1;
    }

    return 0;
}

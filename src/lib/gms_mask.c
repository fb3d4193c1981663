
/*
 * Credentials masked in a log line, for the module's error log: nothing
 * a client authenticates with reaches a log file.
 */


#include <string.h>
#include <strings.h>

#include "gms_mask.h"


/*
 * A credential runs to the end of its line: a quote or a backslash can be
 * part of what a client sent (Bearer "eyJ..."), so only CR and LF end it.
 */

static size_t
gms_mask_until(unsigned char *buf, size_t len, size_t j)
{
    for ( /* void */ ; j < len; j++) {
        if (buf[j] == '\r' || buf[j] == '\n') {
            break;
        }

        buf[j] = '*';
    }

    return j;
}


/*
 * "name=value; name=value": each value to its ';' or the line end, the
 * names kept.  An element without '=' is all value.
 */

static size_t
gms_mask_cookies(unsigned char *buf, size_t len, size_t j)
{
    size_t  k;

    for ( ;; ) {
        while (j < len && (buf[j] == ' ' || buf[j] == '\t')) {
            j++;
        }

        for (k = j; k < len; k++) {
            if (buf[k] == '=' || buf[k] == ';' || buf[k] == '\r'
                || buf[k] == '\n')
            {
                break;
            }
        }

        j = (k < len && buf[k] == '=') ? k + 1 : j;

        for ( /* void */ ; j < len; j++) {
            if (buf[j] == ';' || buf[j] == '\r' || buf[j] == '\n') {
                break;
            }

            buf[j] = '*';
        }

        if (j == len || buf[j] != ';') {
            return j;
        }

        j++;
    }
}


/*
 * The length of "<name>:" and the blanks after it at buf + i, 0 if it is
 * not there.  name is lower case; its '_' stands for '-' or '_', as in
 * nginx's $http_ variables.
 */

static size_t
gms_mask_header(const unsigned char *buf, size_t len, size_t i,
    const char *name)
{
    size_t         n;
    unsigned char  c;

    for (n = 0; name[n] != '\0'; n++) {
        if (i + n == len) {
            return 0;
        }

        c = buf[i + n];

        if (c >= 'A' && c <= 'Z') {
            c |= 0x20;
        }

        if (name[n] == '_' ? (c != '_' && c != '-') : c != name[n]) {
            return 0;
        }
    }

    if (n == 0 || i + n == len || buf[i + n] != ':') {
        return 0;
    }

    for (n++; i + n < len && (buf[i + n] == ' ' || buf[i + n] == '\t'); n++)
    {
        /* void */
    }

    return n;
}


/*
 * Masks credentials in a log line, in place, as far as the line end (a
 * closing quote of nginx's included): the value of an Authorization
 * header, whatever its scheme, and of each header in headers (those
 * gms_token_source reads); whatever follows "Bearer " elsewhere (a
 * variable's value, say); the value of every cookie in a Cookie (or
 * Set-Cookie) header, the names kept.  nginx's debug lines quote request
 * headers and whole requests to upstreams; a token must not reach a log
 * file even then.  A WWW-Authenticate challenge (Bearer realm=...) is
 * left alone.
 */

void
gms_mask_credentials(unsigned char *buf, size_t len,
    const char *const *headers, size_t nheaders)
{
    size_t  i, j, h, n;

    for (i = 0; i < len; i++) {

        n = gms_mask_header(buf, len, i, "authorization");

        for (h = 0; n == 0 && h < nheaders; h++) {
            n = gms_mask_header(buf, len, i, headers[h]);
        }

        if (n) {
            i = gms_mask_until(buf, len, i + n);
            continue;
        }

        n = gms_mask_header(buf, len, i, "cookie");

        if (n) {
            i = gms_mask_cookies(buf, len, i + n);
            continue;
        }

        if ((buf[i] | 0x20) != 'b' || len - i <= 7
            || strncasecmp((const char *) buf + i, "bearer", 6) != 0
            || (buf[i + 6] != ' ' && buf[i + 6] != '\t'))
        {
            continue;
        }

        for (j = i + 7; j < len && (buf[j] == ' ' || buf[j] == '\t'); j++) {
            /* void */
        }

        if (len - j >= 6 && strncmp((const char *) buf + j, "realm=", 6) == 0)
        {
            continue;
        }

        i = gms_mask_until(buf, len, j);
    }
}

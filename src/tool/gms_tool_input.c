
/*
 * What the user hands gms-token, read and checked as the module would
 * take it: a secret from a file (the token never comes from the command
 * line, where ps would show it), the token on stdin, a token id, a user
 * URN, a duration.  A failure is reported.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gms_secret.h"
#include "gms_tool_input.h"
#include "gms_tool_msgs.h"


#define GMS_TOOL_FILE_MAX      65536


static int gms_tool_parse_count(const char **s, int64_t *count);


/* a secret from a file, as gms_secret_line() reads it (the module too) */

char *
gms_tool_input_read_file(gms_tool_t *t, const char *option, const char *path,
    size_t *len)
{
    FILE    *f;
    char    *buf;
    size_t   n;

    f = fopen(path, "rb");
    if (f == NULL) {
        gms_tool_msgs_error(t, "%s: cannot open %s: %s", option,
                            gms_tool_msgs_shown(path), strerror(errno));
        return NULL;
    }

    buf = malloc(GMS_TOOL_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        gms_tool_msgs_error(t, "out of memory");
        return NULL;
    }

    n = fread(buf, 1, GMS_TOOL_FILE_MAX + 1, f);

    if (ferror(f) || n > GMS_TOOL_FILE_MAX) {
        gms_tool_msgs_error(t, "%s: %s: %s", option, gms_tool_msgs_shown(path),
                            ferror(f) ? strerror(errno) : "larger than 64k");
        fclose(f);
        OPENSSL_cleanse(buf, GMS_TOOL_FILE_MAX + 1);
        free(buf);
        return NULL;
    }

    fclose(f);

    if (gms_secret_line(buf, n, len) != 0) {
        gms_tool_msgs_error(t, "%s: %s holds more than one line: a secret file "
                            "is the secret, with at most one line ending",
                            option, gms_tool_msgs_shown(path));
        OPENSSL_cleanse(buf, GMS_TOOL_FILE_MAX + 1);
        free(buf);
        return NULL;
    }

    buf[*len] = '\0';

    return buf;
}


/*
 * The token on stdin: one line, one trailing newline allowed, and a token
 * the module itself would take from "Authorization: Bearer <token>".
 */

int
gms_tool_input_token_stdin(gms_tool_t *t, const char *salt, size_t salt_len,
    char id[GMS_TOKEN_ID_LEN + 1])
{
    int          rc;
    char         buf[sizeof("Bearer ") + GMS_TOKEN_MAX_LEN + 8];
    size_t       token_len;
    const char  *token;

    rc = gms_tool_input_token_read(t, buf, sizeof(buf), &token, &token_len);

    if (rc == GMS_TOOL_OK) {
        gms_token_id((const unsigned char *) token, token_len,
                     (const unsigned char *) salt, salt_len, id);

        if (id[0] == '\0') {
            gms_tool_msgs_error(t, "cannot compute SHA-256");
            rc = GMS_TOOL_REDIS;
        }
    }

    OPENSSL_cleanse(buf, sizeof(buf));

    return rc;
}


/*
 * The token on stdin, into buf (the caller cleanses it): its bytes at
 * *token, not NUL-terminated.
 */

int
gms_tool_input_token_read(gms_tool_t *t, char *buf, size_t size,
    const char **token, size_t *token_len)
{
    size_t                n, len;
    const unsigned char  *p;

    len = sizeof("Bearer ") - 1;
    memcpy(buf, "Bearer ", len);

    while (len < size && (n = fread(buf + len, 1, size - len, stdin)) > 0) {
        len += n;
    }

    if (ferror(stdin)) {
        gms_tool_msgs_error(t, "stdin: cannot read: %s", strerror(errno));
        return GMS_TOOL_USAGE;
    }

    if (len == size) {
        gms_tool_msgs_error(t, "stdin:1: the token is longer than %d bytes",
                            GMS_TOKEN_MAX_LEN);
        return GMS_TOOL_USAGE;
    }

    if (len > 7 && buf[len - 1] == '\n') {
        len--;

        if (len > 7 && buf[len - 1] == '\r') {
            len--;
        }
    }

    if (len == sizeof("Bearer ") - 1) {
        gms_tool_msgs_error(t, "stdin: no token");
        return GMS_TOOL_USAGE;
    }

    if (len - (sizeof("Bearer ") - 1) > GMS_TOKEN_MAX_LEN) {
        gms_tool_msgs_error(t, "stdin:1: the token is longer than %d bytes",
                            GMS_TOKEN_MAX_LEN);
        return GMS_TOOL_USAGE;
    }

    if (gms_token_bearer_parse((unsigned char *) buf, len, &p, token_len)
        != 0)
    {
        gms_tool_msgs_error(t, "stdin:1: not a token: one line of letters, "
                            "digits, '-', '.', '_', '~', '+', '/' and "
                            "trailing '=', at most %d", GMS_TOKEN_MAX_LEN);
        return GMS_TOOL_USAGE;
    }

    *token = (const char *) p;

    return GMS_TOOL_OK;
}


int
gms_tool_input_check_id(gms_tool_t *t, const char *id)
{
    if (gms_token_id_valid(id, strlen(id))) {
        return 0;
    }

    gms_tool_msgs_error(t, "'%s' is not a token id: standard base64 of 32 "
                        "bytes, 44 characters ending in '='",
                        gms_tool_msgs_shown(id));

    return -1;
}


int
gms_tool_input_check_actor(gms_tool_t *t, const char *urn)
{
    if (gms_token_actor_valid(urn, strlen(urn))) {
        return 0;
    }

    gms_tool_msgs_error(t, "'%s' is not a user URN: urn:li:..., UTF-8, without "
                        "control characters", gms_tool_msgs_shown(urn));

    return -1;
}


/*
 * A duration's number: at least one digit, at most what a count of
 * seconds in milliseconds holds; *s moved past it
 */

static int
gms_tool_parse_count(const char **s, int64_t *count)
{
    int64_t      n;
    const char  *p;

    p = *s;

    if (*p < '0' || *p > '9') {
        return -1;
    }

    for (n = 0; *p >= '0' && *p <= '9'; p++) {
        if (n > (INT64_MAX / 1000 - 9) / 10) {
            return -1;
        }

        n = n * 10 + (*p - '0');
    }

    *s = p;
    *count = n;

    return 0;
}


/* 30d, 12h, 90m, 3600s, and sums of them: 1d12h */

int
gms_tool_input_parse_duration(const char *s, int64_t *ms)
{
    int64_t  n, unit, total;

    if (*s == '\0') {
        return -1;
    }

    total = 0;

    while (*s) {
        if (gms_tool_parse_count(&s, &n) != 0) {
            return -1;
        }

        switch (*s) {
        case 's':
            unit = 1;
            break;
        case 'm':
            unit = 60;
            break;
        case 'h':
            unit = 3600;
            break;
        case 'd':
            unit = 86400;
            break;
        default:
            return -1;
        }

        s++;

        if (n > (INT64_MAX / 1000 - total) / unit) {
            return -1;
        }

        total += n * unit;
    }

    *ms = total * 1000;

    return 0;
}


/*
 * An ISO-8601 duration as DataHub's IsoDurationParser reads it (Next,
 * PR 19222): P[nY][nM][nW][nD][T[nH][nM][nS]], either case, whole
 * numbers, a month 30 days and a year 365 days (AccessTokenConfiguration's
 * approximations), zero refused: P30D, PT12H, P1Y.
 */

int
gms_tool_input_parse_iso_duration(const char *s, int64_t *ms)
{
    int          time, any;
    int64_t      n, unit, total;
    const char  *units, *u;

    /* each part's letter and length in seconds, in their order */
    static const char     date_units[] = "YMWD";
    static const int64_t  date_secs[] = { 365 * 86400, 30 * 86400,
                                          7 * 86400, 86400 };
    static const char     time_units[] = "HMS";
    static const int64_t  time_secs[] = { 3600, 60, 1 };

    if (*s != 'P' && *s != 'p') {
        return -1;
    }

    s++;
    time = 0;
    any = 0;
    total = 0;
    units = date_units;

    while (*s) {

        if ((*s == 'T' || *s == 't') && !time) {
            time = 1;
            units = time_units;
            s++;

            if (*s == '\0') {
                return -1;
            }

            continue;
        }

        if (gms_tool_parse_count(&s, &n) != 0) {
            return -1;
        }

        /* the next unit in order: P1D1Y and PT1S1H are refused */

        for (u = units; *u; u++) {
            if (*u == (*s & ~0x20)) {
                break;
            }
        }

        if (*s == '\0' || *u == '\0') {
            return -1;
        }

        unit = time ? time_secs[u - time_units] : date_secs[u - date_units];
        units = u + 1;
        s++;

        if (n > (INT64_MAX / 1000 - total) / unit) {
            return -1;
        }

        total += n * unit;
        any = 1;
    }

    if (!any || total == 0) {
        return -1;
    }

    *ms = total * 1000;

    return 0;
}

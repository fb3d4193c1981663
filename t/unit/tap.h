
/* A few lines of TAP for the C unit tests; prove reads their output. */


#ifndef _GMS_TAP_H_INCLUDED_
#define _GMS_TAP_H_INCLUDED_


#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int  tap_n, tap_failed;


#define ok(cond, ...)                                                         \
    do {                                                                      \
        int  tap_c = (cond);                                                  \
        printf("%sok %d - ", tap_c ? "" : "not ", ++tap_n);                   \
        printf(__VA_ARGS__);                                                  \
        printf("\n");                                                         \
        if (!tap_c) {                                                         \
            tap_failed++;                                                     \
            printf("#   failed at %s line %d\n", __FILE__, __LINE__);         \
        }                                                                     \
    } while (0)

#define is_str(got, want, ...)                                                \
    do {                                                                      \
        const char  *tap_g = (got), *tap_w = (want);                          \
        ok(tap_g != NULL && strcmp(tap_g, tap_w) == 0, __VA_ARGS__);          \
        if (tap_g == NULL || strcmp(tap_g, tap_w) != 0) {                     \
            printf("#   got:  %s\n#   want: %s\n", tap_g ? tap_g : "(null)", \
                   tap_w);                                                    \
        }                                                                     \
    } while (0)

#define done_testing()                                                        \
    (printf("1..%d\n", tap_n), tap_failed ? 1 : 0)


/*
 * A fixture file whole, NUL-terminated (malloc'ed; NULL if it cannot be
 * read): from the directory $env names, or dir
 */
static inline char *
tap_slurp(const char *env, const char *dir, const char *name, size_t *len)
{
    char   path[512], *buf;
    FILE  *f;
    long   size;

    snprintf(path, sizeof(path), "%s/%s", getenv(env) ? getenv(env) : dir,
             name);

    f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }

    buf = NULL;

    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0
        && fseek(f, 0, SEEK_SET) == 0)
    {
        buf = malloc(size + 1);
    }

    if (buf != NULL) {
        *len = fread(buf, 1, size, f);
        buf[*len] = '\0';
    }

    fclose(f);

    return buf;
}


#endif /* _GMS_TAP_H_INCLUDED_ */

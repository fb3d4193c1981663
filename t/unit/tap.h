
/* A few lines of TAP for the C unit tests; prove reads their output. */


#ifndef _GMS_TAP_H_INCLUDED_
#define _GMS_TAP_H_INCLUDED_


#include <stdio.h>
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


#endif /* _GMS_TAP_H_INCLUDED_ */


/*
 * What the fuzzers that feed hiredis's reader share.  hiredis 0.14's
 * reader allocates what a multi-bulk header announces (it has no
 * maxelements yet): "*400000000" is an out-of-memory in hiredis, not in
 * the code under test, and Redis does not send it.  Such inputs are
 * skipped.
 */


#ifndef _GMS_FUZZ_HIREDIS_H_INCLUDED_
#define _GMS_FUZZ_HIREDIS_H_INCLUDED_


#include <stddef.h>


static int
gms_huge_array(const unsigned char *data, size_t size)
{
    size_t  i, digits;

    for (i = 0; i < size; i++) {
        if (data[i] != '*' && data[i] != '$') {
            continue;
        }

        for (digits = 0; i + 1 < size && data[i + 1] >= '0'
                         && data[i + 1] <= '9'; i++)
        {
            if (++digits > 4) {
                return 1;
            }
        }
    }

    return 0;
}


#endif /* _GMS_FUZZ_HIREDIS_H_INCLUDED_ */


/*
 * Credentials masked in a log line, in place; no nginx types here, so
 * that unit tests and fuzzers can call it alone.
 */


#ifndef _GMS_MASK_H_INCLUDED_
#define _GMS_MASK_H_INCLUDED_


#include <stddef.h>


void gms_mask_credentials(unsigned char *buf, size_t len,
    const char *const *headers, size_t nheaders);


#endif /* _GMS_MASK_H_INCLUDED_ */

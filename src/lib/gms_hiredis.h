
/*
 * hiredis 0.14 (Debian 12) and 1.x (Debian 13: 1.2) differ where the
 * module and gms-token plug in: the reply builders
 * (redisReplyObjectFunctions, read.h).  1.x counts an array's elements in
 * a size_t, not an int, and has two builders more, for RESP3's doubles
 * and booleans, between createInteger and createNil.  The builders are
 * named (designated initializers), never filled by position; RESP3 is
 * never asked for (no HELLO 3), so the two new ones refuse what comes.
 */


#ifndef _GMS_HIREDIS_H_INCLUDED_
#define _GMS_HIREDIS_H_INCLUDED_


#include <hiredis/hiredis.h>


#if defined(HIREDIS_MAJOR) && HIREDIS_MAJOR >= 1

/* an array's elements, as createArray takes them */
typedef size_t  gms_hiredis_count_t;

/* createDouble and createBool, where hiredis has them */
#define GMS_HIREDIS_RESP3  1
#define GMS_HIREDIS_RESP3_BUILDERS(d, b)  .createDouble = d, .createBool = b,

#else

typedef int     gms_hiredis_count_t;

#define GMS_HIREDIS_RESP3  0
#define GMS_HIREDIS_RESP3_BUILDERS(d, b)

#endif


#endif /* _GMS_HIREDIS_H_INCLUDED_ */

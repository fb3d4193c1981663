
/*
 * A secret read from a file (a mounted Secret): the one rule the module
 * and gms-token share; gms_secret.c.
 */


#ifndef _GMS_SECRET_H_INCLUDED_
#define _GMS_SECRET_H_INCLUDED_


#include <stddef.h>


int gms_secret_line(const char *buf, size_t n, size_t *len);


#endif /* _GMS_SECRET_H_INCLUDED_ */


/*
 * Bodies in the metadata service's (Rest.li's) shapes; pure C over
 * jansson.  Every returned string is malloc()ed: free() it.
 */


#ifndef _GMS_RESTLI_H_INCLUDED_
#define _GMS_RESTLI_H_INCLUDED_


#include <stddef.h>


char *gms_restli_error_body(int status, const char *message, size_t len);
char *gms_restli_value_body(const char *value);


#endif /* _GMS_RESTLI_H_INCLUDED_ */


/* libFuzzer: a cluster node's MOVED/ASK text, and hash slots of any key. */


#include <stdlib.h>
#include <string.h>

#include "gms_slot.h"


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    size_t                tag_len;
    gms_redirect_t        r;
    const unsigned char  *tag;

    if (gms_slot(data, size) >= GMS_SLOTS) {
        abort();
    }

    /* a tag lies inside the key, between braces, and is not empty */
    if (gms_slot_tag(data, size, &tag, &tag_len)
        && (tag <= data || tag + tag_len >= data + size || tag_len == 0
            || tag[-1] != '{' || tag[tag_len] != '}'))
    {
        abort();
    }

    if (gms_slot_redirect(data, size, &r) != 0) {
        return 0;
    }

    /* what is accepted lies inside the input and is in range */
    if (r.host < data || r.host + r.host_len > data + size
        || r.slot >= GMS_SLOTS || r.port == 0 || r.port > 65535
        || (r.kind != GMS_REDIRECT_MOVED && r.kind != GMS_REDIRECT_ASK)
        || memchr(r.host, ' ', r.host_len) != NULL)
    {
        abort();
    }

    return 0;
}

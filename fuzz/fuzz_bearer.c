
/* libFuzzer: the Authorization header to a token and its id. */


#include <stdlib.h>
#include <string.h>

#include "gms_token.h"
#include "gms_mask.h"


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    size_t                len, i, span_len;
    char                  id[GMS_TOKEN_ID_LEN + 1];
    const char           *headers[] = { "x_gms_token" };
    unsigned char        *line;
    const unsigned char  *token, *span;

    /* masking a log line: in place, within the line, nothing else */
    line = malloc(size + 1);
    if (line != NULL) {
        memcpy(line, data, size);
        line[size] = 0xa5;
        gms_mask_credentials(line, size, headers, 1);

        if (line[size] != 0xa5) {
            abort();
        }

        free(line);
    }

    if (gms_token_bearer_span(data, size, &span, &span_len) == 0
        && (span < data || span + span_len > data + size || span_len == 0))
    {
        abort();
    }

    if (gms_token_bearer_parse(data, size, &token, &len) != 0) {
        return 0;
    }

    /* the module's memo of ids finds a token where the parser does */
    if (gms_token_bearer_span(data, size, &span, &span_len) != 0
        || span != token || span_len != len)
    {
        abort();
    }

    /* what is accepted lies inside the input and is a sane token68 */
    if (token < data || token + len > data + size || len == 0
        || len > GMS_TOKEN_MAX_LEN)
    {
        abort();
    }

    for (i = 0; i < len; i++) {
        if (token[i] == ' ' || token[i] == '\t' || token[i] < 0x21
            || token[i] > 0x7e)
        {
            abort();
        }
    }

    gms_token_id(token, len, (const unsigned char *) "salt", 4, id);

    if (!gms_token_id_valid(id, strlen(id))) {
        abort();
    }

    return 0;
}

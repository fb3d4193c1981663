
/*
 * What the user hands gms-token: secrets in files, a token on stdin, and
 * the ids, user URNs and durations of the command line, checked.
 */


#ifndef _GMS_TOOL_INPUT_H_INCLUDED_
#define _GMS_TOOL_INPUT_H_INCLUDED_


#include <stdint.h>

#include "gms_token.h"
#include "gms_tool.h"


char *gms_tool_input_read_file(gms_tool_t *t, const char *option,
    const char *path, size_t *len);
int gms_tool_input_token_stdin(gms_tool_t *t, const char *salt, size_t salt_len,
    char id[GMS_TOKEN_ID_LEN + 1]);
int gms_tool_input_token_read(gms_tool_t *t, char *buf, size_t size,
    const char **token, size_t *token_len);
int gms_tool_input_check_id(gms_tool_t *t, const char *id);
int gms_tool_input_check_actor(gms_tool_t *t, const char *urn);
int gms_tool_input_parse_duration(const char *s, int64_t *ms);
int gms_tool_input_parse_iso_duration(const char *s, int64_t *ms);


#endif /* _GMS_TOOL_INPUT_H_INCLUDED_ */

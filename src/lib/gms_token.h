
/*
 * The bearer token, for the nginx module and the gms-token tool: no
 * nginx types here, so that unit tests and fuzzers can call it alone.
 */


#ifndef _GMS_TOKEN_H_INCLUDED_
#define _GMS_TOKEN_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "gms_contract.h"


/* DataHub's PATs are JWTs of a few hundred bytes; 4k leaves ample room */
#define GMS_TOKEN_MAX_LEN      4096


/* what $gms_token_type says; the names as DataHub's TokenType spells them */
typedef enum {
    GMS_TOKEN_NONE = 0,
    GMS_TOKEN_PERSONAL,
    GMS_TOKEN_SESSION,
    GMS_TOKEN_SERVICE_ACCOUNT,
    GMS_TOKEN_SYSTEM,               /* the system client, not a token */
    GMS_TOKEN_OAUTH,                /* an external OAuth token (1.3.0) */
    GMS_TOKEN_GUEST,                /* no credential: GMS's guest user */
    GMS_TOKEN_NTYPES
} gms_token_type_e;


int gms_token_bearer_parse(const unsigned char *value, size_t len,
    const unsigned char **token, size_t *token_len);
int gms_token_bearer_span(const unsigned char *value, size_t len,
    const unsigned char **token, size_t *token_len);
int gms_token_basic_parse(const unsigned char *value, size_t len,
    int split_first, const unsigned char **credentials,
    size_t *credentials_len);
gms_token_type_e gms_token_type_parse(const char *name, size_t len);
void gms_token_id(const unsigned char *token, size_t token_len,
    const unsigned char *salt, size_t salt_len,
    char id[GMS_TOKEN_ID_LEN + 1]);
int gms_token_id_valid(const char *id, size_t len);
int gms_token_parse_ms(const char *s, size_t len, int64_t *ms);
int gms_token_privilege_valid(const char *name, size_t len);
int gms_token_actor_valid(const char *urn, size_t len);
size_t gms_token_utf8_len(const unsigned char *p, const unsigned char *end);

extern const char   *gms_token_type_names[GMS_TOKEN_NTYPES];


#endif /* _GMS_TOKEN_H_INCLUDED_ */

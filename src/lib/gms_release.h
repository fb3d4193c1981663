
/*
 * DataHub's releases, and what a client of GMS sees change between them:
 * gms_datahub_version.  Each answer names the DataHub file it follows
 * (docs/directives.md#gms_datahub_version has the table).
 */


#ifndef _GMS_RELEASE_H_INCLUDED_
#define _GMS_RELEASE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/*
 * major << 24 | minor << 16 | patch << 8 | build, each 0 to 255: compared
 * as numbers.  The build is the fourth part of a DataHub patch release
 * such as 1.7.0.1; GMS_RELEASE(1, 7, 0) == GMS_RELEASE4(1, 7, 0, 0).
 */
typedef uint32_t  gms_release_t;

#define GMS_RELEASE4(major, minor, patch, build)                              \
    ((gms_release_t) (((gms_release_t) (major) << 24)                        \
                      | ((gms_release_t) (minor) << 16)                      \
                      | ((gms_release_t) (patch) << 8)                       \
                      | (gms_release_t) (build)))

#define GMS_RELEASE(major, minor, patch)                                      \
    GMS_RELEASE4(major, minor, patch, 0)

/* "255.255.255.255" and its NUL */
#define GMS_RELEASE_TEXT_LEN  16

/* the release this edge was first written against */
#define GMS_RELEASE_DEFAULT  GMS_RELEASE(0, 13, 0)


/* getEsTaskStatus's privileges: OperationsResource, AuthUtil */
typedef enum {
    GMS_RELEASE_ES_GET_ONLY = 0,        /* GET_ES_TASK_STATUS_PRIVILEGE */
    GMS_RELEASE_ES_GET_OR_MANAGE        /* ... or MANAGE_SYSTEM_OPERATIONS */
} gms_release_es_e;


/* what GMS does with the token of an inactive user (ActorContext.isActive) */
typedef enum {
    GMS_RELEASE_INACTIVE_ACCEPTED = 0,  /* no check at all */
    GMS_RELEASE_INACTIVE_ACTOR,         /* token taken, operations refused */
    GMS_RELEASE_INACTIVE_TOKEN          /* the token itself refused: 401 */
} gms_release_inactive_e;


/* GMS's messages for an inactive actor */
#define GMS_RELEASE_INACTIVE_MESSAGE  "Actor is not active"
#define GMS_RELEASE_INACTIVE_RESTLI_500                                       \
    "io.datahubproject.metadata.exception.ActorAccessException: "           \
    GMS_RELEASE_INACTIVE_MESSAGE


/*
 * "X.Y", "X.Y.Z" or "X.Y.Z.W" (digits only), a release in the table: 0
 * and *out set, or -1
 */
int gms_release_parse(const unsigned char *s, size_t len, gms_release_t *out);

/* "X.Y.Z", or "X.Y.Z.W" for a patch release, into text */
void gms_release_text(gms_release_t v, char text[GMS_RELEASE_TEXT_LEN]);

/* "0.13.0, 0.13.1, ...": the releases gms_release_parse knows */
extern const char  gms_release_known[];

/* 401 in 0.13.0, 403 from 0.13.1 (Rest.li, PR 10066) */
unsigned gms_release_forbidden_status(gms_release_t v);

gms_release_es_e gms_release_es_privileges(gms_release_t v);

/* AuthenticationFilter's 401 for any credential it refuses */
#define GMS_RELEASE_UNAUTHORIZED  "Unauthorized to perform this action."

/* 1 when GMS's 401 for an expired token is GMS_RELEASE_UNAUTHORIZED */
int gms_release_expired_generic(gms_release_t v);

/* 1 when the system client's secret may hold ':' (PR 15023) */
int gms_release_secret_colon(gms_release_t v);

/* 1 when GMS knows the SERVICE_ACCOUNT token type */
int gms_release_service_accounts(gms_release_t v);

/* 1 when GMS has a guest user to give a request without a credential */
int gms_release_guest(gms_release_t v);

gms_release_inactive_e gms_release_inactive(gms_release_t v);

/*
 * For a user as the lookup marks it (gms_lookup_inactive_e: 0 active,
 * 1 suspended or soft-removed, 2 hard-deleted only): what the release
 * does with their token
 */
gms_release_inactive_e gms_release_inactive_user(gms_release_t v,
    unsigned inactive);

/* what the release does with an external OAuth token of such a user */
gms_release_inactive_e gms_release_inactive_oauth(gms_release_t v,
    unsigned inactive);

/* getEsTaskStatus's status for an inactive actor: 500, 403 from 1.7.0 */
unsigned gms_release_es_inactive_status(gms_release_t v);

/* 1 when GMS can accept external OAuth tokens (an identity provider's) */
int gms_release_oauth(gms_release_t v);


#endif /* _GMS_RELEASE_H_INCLUDED_ */

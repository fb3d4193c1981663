
/*
 * DataHub's releases and the answers of GMS that changed between them, as
 * read in DataHub's source at each release (the tags of acryldata/datahub
 * are CLI tags: the boundaries are checked against
 * docs/how/updating-datahub.md).  1.7.0 was cut from master after
 * 2026-07-23 (its notes list PRs merged later, such as 18845): every rule
 * below was checked against master of that day and against what the
 * v1.7.0 and v1.7.0.1 sections of updating-datahub.md change, and none
 * moved.  1.7.0.1 is a patch release DataHub names in its own section;
 * "Next" (unreleased) has no name here until it is released.
 */


#include <stdio.h>

#include "gms_release.h"


static const gms_release_t  gms_releases[] = {
    GMS_RELEASE(0, 13, 0), GMS_RELEASE(0, 13, 1), GMS_RELEASE(0, 13, 2),
    GMS_RELEASE(0, 13, 3), GMS_RELEASE(0, 14, 0), GMS_RELEASE(0, 14, 1),
    GMS_RELEASE(0, 15, 0), GMS_RELEASE(1, 0, 0), GMS_RELEASE(1, 1, 0),
    GMS_RELEASE(1, 2, 0), GMS_RELEASE(1, 3, 0), GMS_RELEASE(1, 4, 0),
    GMS_RELEASE(1, 5, 0), GMS_RELEASE(1, 6, 0), GMS_RELEASE(1, 7, 0),
    GMS_RELEASE4(1, 7, 0, 1)
};

const char  gms_release_known[] =
    "0.13.0, 0.13.1, 0.13.2, 0.13.3, 0.14.0, 0.14.1, 0.15.0, 1.0.0, "
    "1.1.0, 1.2.0, 1.3.0, 1.4.0, 1.5.0, 1.6.0, 1.7.0, 1.7.0.1";


int
gms_release_parse(const unsigned char *s, size_t len, gms_release_t *out)
{
    size_t         i, n;
    unsigned int   part[4], digits;
    gms_release_t  v;

    n = 0;
    part[0] = part[1] = part[2] = part[3] = 0;
    digits = 0;

    for (i = 0; i < len; i++) {

        if (s[i] == '.') {
            if (digits == 0 || ++n == 4) {
                return -1;
            }

            digits = 0;
            continue;
        }

        if (s[i] < '0' || s[i] > '9' || ++digits > 3) {
            return -1;
        }

        part[n] = part[n] * 10 + (s[i] - '0');
    }

    /* X.Y, X.Y.Z or X.Y.Z.W, each part 1 to 3 digits */

    if (digits == 0 || n == 0) {
        return -1;
    }

    for (i = 0; i < 4; i++) {
        if (part[i] > 255) {
            return -1;
        }
    }

    v = GMS_RELEASE4(part[0], part[1], part[2], part[3]);

    for (i = 0; i < sizeof(gms_releases) / sizeof(gms_releases[0]); i++) {
        if (gms_releases[i] == v) {
            *out = v;
            return 0;
        }
    }

    return -1;
}


void
gms_release_text(gms_release_t v, char text[GMS_RELEASE_TEXT_LEN])
{
    unsigned int  major, minor, patch, build;

    major = (unsigned int) (v >> 24);
    minor = (unsigned int) (v >> 16) & 0xff;
    patch = (unsigned int) (v >> 8) & 0xff;
    build = (unsigned int) v & 0xff;

    if (build == 0) {
        snprintf(text, GMS_RELEASE_TEXT_LEN, "%u.%u.%u", major, minor, patch);
        return;
    }

    snprintf(text, GMS_RELEASE_TEXT_LEN, "%u.%u.%u.%u", major, minor, patch,
             build);
}


/*
 * OperationsResource and the other Rest.li resources: a missing privilege
 * is HttpStatus.S_401_UNAUTHORIZED in 0.13.0, S_403_FORBIDDEN from 0.13.1
 * (commit f9e64d03, PR 10066)
 */

unsigned
gms_release_forbidden_status(gms_release_t v)
{
    return v < GMS_RELEASE(0, 13, 1) ? 401 : 403;
}


/*
 * OperationsResource.getTaskStatus: isAPIAuthorized(GET_ES_TASK_STATUS_
 * PRIVILEGE) before 0.15.0; isAPIOperationsAuthorized, which adds
 * MANAGE_SYSTEM_OPERATIONS_PRIVILEGE (AuthUtil), from 0.15.0 (PR 11549)
 */

gms_release_es_e
gms_release_es_privileges(gms_release_t v)
{
    return v < GMS_RELEASE(0, 15, 0) ? GMS_RELEASE_ES_GET_ONLY
                                     : GMS_RELEASE_ES_GET_OR_MANAGE;
}


/*
 * The 401 for an expired token (AuthenticationFilter, then
 * AuthenticationEnforcementFilter):
 *   0.13.x     the TokenExpiredException's message ("Failed to validate
 *              DataHub token. Token has expired.");
 *   0.14.0     "Unauthorized to perform this action." for every
 *              AuthenticationException (PR 11091);
 *   1.1.0      "Unauthorized to perform this action due to expired auth."
 *              (PR 13035);
 *   1.3.0      "Unauthorized to perform this action.": expiry only sets an
 *              anonymous context, which the enforcement filter refuses
 *              (PR 14292).
 * Where GMS says that the token expired, the edge says it in its words.
 */

int
gms_release_expired_generic(gms_release_t v)
{
    return !(v < GMS_RELEASE(0, 14, 0)
             || (v >= GMS_RELEASE(1, 1, 0) && v < GMS_RELEASE(1, 3, 0)));
}


/*
 * DataHubSystemAuthenticator: credentials.split(":") needs exactly two
 * parts before 1.4.0; split(":", 2) from 1.4.0 (PR 15023)
 */

int
gms_release_secret_colon(gms_release_t v)
{
    return v >= GMS_RELEASE(1, 4, 0);
}


/*
 * TokenType: SERVICE_ACCOUNT from 1.4.0 (PR 15972); before, StatelessToken
 * Service's TokenType.valueOf fails and DataHubTokenAuthenticator answers
 * 401 "Unable to verify the provided token."
 */

int
gms_release_service_accounts(gms_release_t v)
{
    return v >= GMS_RELEASE(1, 4, 0);
}


/* DataHubGuestAuthenticator, off by default, from 1.0.0 */

int
gms_release_guest(gms_release_t v)
{
    return v >= GMS_RELEASE(1, 0, 0);
}


/* DataHubOAuthAuthenticator, off by default, from 1.3.0 (PR 14707) */

int
gms_release_oauth(gms_release_t v)
{
    return v >= GMS_RELEASE(1, 3, 0);
}


/*
 * A user who is suspended (corpUserStatus SUSPENDED), soft-removed
 * (status removed) or hard-deleted (no corpUserKey), ActorContext.isActive:
 *   before 0.15.0  nothing checks it;
 *   0.15.0         OperationContext's builder throws ActorAccessException
 *                  ("Actor is not active") for every session it makes
 *                  (commit 8c724dbf, PR 12158, merged after the CLI's
 *                  v0.15.0 tag, in the server's 0.15.0 release notes);
 *   1.2.0          StatelessTokenService.validateActor refuses the token
 *                  itself (TokenException "Actor is not active": 401;
 *                  commit e7463ac1, PR 13947).
 */

gms_release_inactive_e
gms_release_inactive(gms_release_t v)
{
    if (v < GMS_RELEASE(0, 15, 0)) {
        return GMS_RELEASE_INACTIVE_ACCEPTED;
    }

    return v < GMS_RELEASE(1, 2, 0) ? GMS_RELEASE_INACTIVE_ACTOR
                                    : GMS_RELEASE_INACTIVE_TOKEN;
}


/*
 * OperationContext.asSession builds the session with enforceExistence off
 * (its skipCache lands in build()'s enforceExistenceEnabled) from 0.15.0
 * to 1.1.x: a hard-deleted user, whose aspects are all gone, is active
 * there; validateActor (1.2.0) checks existence.
 */

gms_release_inactive_e
gms_release_inactive_user(gms_release_t v, unsigned inactive)
{
    gms_release_inactive_e  rule;

    if (inactive == 0) {
        return GMS_RELEASE_INACTIVE_ACCEPTED;
    }

    rule = gms_release_inactive(v);

    if (rule == GMS_RELEASE_INACTIVE_ACTOR && inactive != 1) {
        return GMS_RELEASE_INACTIVE_ACCEPTED;
    }

    return rule;
}


/*
 * An external OAuth token's user (DataHubOAuthAuthenticator, 1.3.0, PR
 * 14707): the authenticator never asks whether the user is active (no
 * validateActor, which StatelessTokenService runs for DataHub's own
 * tokens only), and provisions a user it does not find
 * (ServiceAccountService.ensureServiceAccountExists: a hard-deleted one
 * comes back).  A suspended or soft-removed one is refused by
 * OperationContext for every session it makes, as 0.15.0 to 1.1.x do for
 * every token: GMS_RELEASE_INACTIVE_ACTOR in every release that takes
 * such tokens.
 */

gms_release_inactive_e
gms_release_inactive_oauth(gms_release_t v, unsigned inactive)
{
    if (inactive != 1 || v < GMS_RELEASE(0, 15, 0)) {
        return GMS_RELEASE_INACTIVE_ACCEPTED;
    }

    return GMS_RELEASE_INACTIVE_ACTOR;
}


/*
 * getEsTaskStatus for an actor OperationContext refuses
 * (GMS_RELEASE_INACTIVE_ACTOR), OperationsResource.java: before 1.7.0 the
 * session is built inside RestliUtils.toTask, which maps only a wrapped
 * ActorAccessException to 403: Rest.li's 500 with the exception as its
 * message (GMS_RELEASE_INACTIVE_RESTLI_500); from 1.7.0 RestliUtils.
 * asSession builds it before the task and throws forbidden(message): 403
 * "Actor is not active" (commit 0b611e2d, PR 18003: on master before
 * the mcp_query rename, PR 18534, which the v1.7.0 notes of
 * docs/how/updating-datahub.md list)
 */

unsigned
gms_release_es_inactive_status(gms_release_t v)
{
    return v < GMS_RELEASE(1, 7, 0) ? 500 : 403;
}


/*
 * Unit tests of src/lib/gms_release.c: gms_datahub_version's parsing and
 * the answers that change by DataHub release.
 */


#include "tap.h"
#include "gms_release.h"


static int
parses(const char *s, gms_release_t want)
{
    gms_release_t  v;

    v = 0;

    if (gms_release_parse((const unsigned char *) s, strlen(s), &v) != 0) {
        return want == 0;
    }

    return v == want;
}


static void
test_parse(void)
{
    ok(parses("0.13.0", GMS_RELEASE(0, 13, 0)), "0.13.0");
    ok(parses("0.13", GMS_RELEASE(0, 13, 0)), "X.Y is X.Y.0");
    ok(parses("1.4", GMS_RELEASE(1, 4, 0)), "1.4");
    ok(parses("1.7.0", GMS_RELEASE(1, 7, 0)), "1.7.0");
    ok(parses("0.14.1", GMS_RELEASE(0, 14, 1)), "0.14.1");

    ok(parses("0.12.1", 0), "0.12.1, before the table, refused");
    ok(parses("1.3.1", 0), "1.3.1, not a server release, refused");
    ok(parses("1.8.0", 0), "a release to come refused");
    ok(parses("1", 0), "X alone refused");

    ok(parses("1.7.0.1", GMS_RELEASE4(1, 7, 0, 1)),
       "1.7.0.1, a patch release in the table");
    ok(parses("1.7.0.0", GMS_RELEASE(1, 7, 0)), "1.7.0.0 is 1.7.0");
    ok(parses("1.7.0.2", 0), "1.7.0.2, not in the table, refused");
    ok(parses("1.6.0.1", 0), "1.6.0.1, not in the table, refused");
    ok(parses("1.0.0.1", 0), "1.0.0.1, not in the table, refused");
    ok(parses("1.7.0.1.1", 0), "five parts refused");
    ok(parses("1.7.0.1.", 0), "a trailing dot after four parts refused");
    ok(parses(".1.7.0.1", 0), "a leading dot before four parts refused");
    ok(parses("1.7..0.1", 0), "an empty part among four refused");
    ok(parses("1.7.0.256", 0), "a fourth part over 255 refused");
    ok(parses("1.7.0.0001", 0), "a fourth part of 4 digits refused");
    ok(parses("1..0", 0), "an empty part refused");
    ok(parses("1.0.", 0), "a trailing dot refused");
    ok(parses(".1.0", 0), "a leading dot refused");
    ok(parses("v1.0.0", 0), "a leading v refused");
    ok(parses("1.0.0rc1", 0), "a suffix refused");
    ok(parses("", 0), "empty refused");
    ok(parses("0001.0.0", 0), "a part of more than 3 digits refused");
    ok(parses("256.0.0", 0), "a part over 255 refused");

    ok(strstr(gms_release_known, "0.13.0, ") == gms_release_known
       && strstr(gms_release_known, ", 1.7.0, 1.7.0.1") != NULL
       && strcmp(gms_release_known + strlen(gms_release_known)
                 - sizeof("1.7.0.1") + 1, "1.7.0.1") == 0,
       "the known releases, first to last");
}


static void
test_text(void)
{
    char  text[GMS_RELEASE_TEXT_LEN];

    gms_release_text(GMS_RELEASE(1, 7, 0), text);
    is_str(text, "1.7.0", "1.7.0 as text");

    gms_release_text(GMS_RELEASE4(1, 7, 0, 1), text);
    is_str(text, "1.7.0.1", "1.7.0.1 as text: four parts");

    gms_release_text(GMS_RELEASE(0, 13, 0), text);
    is_str(text, "0.13.0", "0.13.0 as text");

    gms_release_text(GMS_RELEASE4(255, 255, 255, 255), text);
    is_str(text, "255.255.255.255", "the longest text fits");
}


static void
test_answers(void)
{
    ok(GMS_RELEASE(0, 15, 0) > GMS_RELEASE(0, 14, 1)
       && GMS_RELEASE(1, 0, 0) > GMS_RELEASE(0, 15, 0),
       "releases compare as numbers");
    ok(GMS_RELEASE(1, 7, 0) == GMS_RELEASE4(1, 7, 0, 0),
       "GMS_RELEASE(a, b, c) is GMS_RELEASE4(a, b, c, 0)");
    ok(GMS_RELEASE4(1, 7, 0, 1) > GMS_RELEASE(1, 7, 0)
       && GMS_RELEASE4(1, 7, 0, 1) < GMS_RELEASE(1, 7, 1)
       && GMS_RELEASE4(1, 6, 0, 255) < GMS_RELEASE(1, 7, 0)
       && GMS_RELEASE(255, 0, 0) > GMS_RELEASE4(254, 255, 255, 255),
       "a patch release sits between its release and the next, as a "
       "number");
    ok(GMS_RELEASE_DEFAULT == GMS_RELEASE(0, 13, 0), "the default: 0.13.0");

    ok(gms_release_forbidden_status(GMS_RELEASE(0, 13, 0)) == 401,
       "0.13.0: 401 for a missing privilege");
    ok(gms_release_forbidden_status(GMS_RELEASE(0, 13, 1)) == 403,
       "0.13.1: 403 (PR 10066)");
    ok(gms_release_forbidden_status(GMS_RELEASE(1, 7, 0)) == 403
       && gms_release_forbidden_status(GMS_RELEASE4(1, 7, 0, 1)) == 403,
       "1.7.0, 1.7.0.1: 403");

    ok(gms_release_es_privileges(GMS_RELEASE(0, 14, 1))
       == GMS_RELEASE_ES_GET_ONLY,
       "0.14.1: GET_ES_TASK_STATUS_PRIVILEGE alone");
    ok(gms_release_es_privileges(GMS_RELEASE(0, 15, 0))
       == GMS_RELEASE_ES_GET_OR_MANAGE,
       "0.15.0: or MANAGE_SYSTEM_OPERATIONS (PR 11549)");

    ok(!gms_release_expired_generic(GMS_RELEASE(0, 13, 3)),
       "0.13.3: GMS says the token expired");
    ok(gms_release_expired_generic(GMS_RELEASE(0, 14, 0)),
       "0.14.0: generic (PR 11091)");
    ok(gms_release_expired_generic(GMS_RELEASE(1, 0, 0)),
       "1.0.0: generic");
    ok(!gms_release_expired_generic(GMS_RELEASE(1, 1, 0))
       && !gms_release_expired_generic(GMS_RELEASE(1, 2, 0)),
       "1.1.0 to 1.2.0: due to expired auth (PR 13035)");
    ok(gms_release_expired_generic(GMS_RELEASE(1, 3, 0)),
       "1.3.0: generic (PR 14292)");
    is_str(GMS_RELEASE_UNAUTHORIZED, "Unauthorized to perform this action.",
           "the generic message, AuthenticationEnforcementFilter's");

    ok(!gms_release_secret_colon(GMS_RELEASE(1, 3, 0)),
       "1.3.0: no colon in the system secret");
    ok(gms_release_secret_colon(GMS_RELEASE(1, 4, 0)),
       "1.4.0: split at the first colon (PR 15023)");

    ok(!gms_release_service_accounts(GMS_RELEASE(1, 3, 0)),
       "1.3.0: no SERVICE_ACCOUNT tokens");
    ok(gms_release_service_accounts(GMS_RELEASE(1, 4, 0)),
       "1.4.0: SERVICE_ACCOUNT tokens");

    ok(!gms_release_guest(GMS_RELEASE(0, 15, 0))
       && gms_release_guest(GMS_RELEASE(1, 0, 0)),
       "a guest user from 1.0.0 (DataHubGuestAuthenticator)");
    ok(!gms_release_oauth(GMS_RELEASE(1, 2, 0))
       && gms_release_oauth(GMS_RELEASE(1, 3, 0)),
       "OAuth tokens from 1.3.0 (DataHubOAuthAuthenticator, PR 14707)");

    ok(gms_release_inactive(GMS_RELEASE(0, 14, 1))
       == GMS_RELEASE_INACTIVE_ACCEPTED,
       "0.14.1: an inactive actor is not checked");
    ok(gms_release_inactive(GMS_RELEASE(0, 15, 0))
       == GMS_RELEASE_INACTIVE_ACTOR
       && gms_release_inactive(GMS_RELEASE(1, 1, 0))
          == GMS_RELEASE_INACTIVE_ACTOR,
       "0.15.0 to 1.1.0: its operations refused (OperationContext, "
       "PR 12158)");
    ok(gms_release_inactive(GMS_RELEASE(1, 2, 0))
       == GMS_RELEASE_INACTIVE_TOKEN
       && gms_release_inactive(GMS_RELEASE(1, 7, 0))
          == GMS_RELEASE_INACTIVE_TOKEN,
       "from 1.2.0: its token refused (validateActor, PR 13947)");

    ok(gms_release_inactive_user(GMS_RELEASE(1, 0, 0), 0)
       == GMS_RELEASE_INACTIVE_ACCEPTED, "1.0.0: an active user");
    ok(gms_release_inactive_user(GMS_RELEASE(1, 0, 0), 1)
       == GMS_RELEASE_INACTIVE_ACTOR, "1.0.0: a suspended user refused");
    ok(gms_release_inactive_user(GMS_RELEASE(1, 1, 0), 2)
       == GMS_RELEASE_INACTIVE_ACCEPTED,
       "1.1.0: a hard-deleted user served (asSession: no existence check)");
    ok(gms_release_inactive_user(GMS_RELEASE(1, 2, 0), 2)
       == GMS_RELEASE_INACTIVE_TOKEN,
       "1.2.0: a hard-deleted user's token refused (enforceExistence)");
    ok(gms_release_inactive_user(GMS_RELEASE(0, 14, 1), 1)
       == GMS_RELEASE_INACTIVE_ACCEPTED, "0.14.1: nobody refused");

    ok(gms_release_inactive_oauth(GMS_RELEASE(1, 3, 0), 0)
       == GMS_RELEASE_INACTIVE_ACCEPTED, "OAuth, 1.3.0: an active user");
    ok(gms_release_inactive_oauth(GMS_RELEASE(1, 3, 0), 1)
       == GMS_RELEASE_INACTIVE_ACTOR
       && gms_release_inactive_oauth(GMS_RELEASE(1, 7, 0), 1)
          == GMS_RELEASE_INACTIVE_ACTOR,
       "OAuth, 1.3.0 and 1.7.0: a suspended user's token taken, its "
       "operations refused (DataHubOAuthAuthenticator: no validateActor)");
    ok(gms_release_inactive_oauth(GMS_RELEASE(1, 7, 0), 2)
       == GMS_RELEASE_INACTIVE_ACCEPTED,
       "OAuth: a hard-deleted user is provisioned again "
       "(ensureServiceAccountExists)");

    ok(gms_release_es_inactive_status(GMS_RELEASE(0, 15, 0)) == 500
       && gms_release_es_inactive_status(GMS_RELEASE(1, 6, 0)) == 500,
       "getEsTaskStatus, an inactive actor: 500 before 1.7.0 "
       "(RestliUtils.toTask)");
    ok(gms_release_es_inactive_status(GMS_RELEASE(1, 7, 0)) == 403,
       "getEsTaskStatus, an inactive actor: 403 from 1.7.0 "
       "(RestliUtils.asSession, PR 18003)");
}


/* 1.7.0.1 (updating-datahub.md, v1.7.0.1) moves none of the rules */

static void
test_patch_release(void)
{
    gms_release_t  a, b;

    a = GMS_RELEASE(1, 7, 0);
    b = GMS_RELEASE4(1, 7, 0, 1);

    ok(gms_release_es_privileges(b) == gms_release_es_privileges(a)
       && gms_release_expired_generic(b) == gms_release_expired_generic(a)
       && gms_release_secret_colon(b) == gms_release_secret_colon(a)
       && gms_release_service_accounts(b)
          == gms_release_service_accounts(a)
       && gms_release_guest(b) == gms_release_guest(a)
       && gms_release_oauth(b) == gms_release_oauth(a)
       && gms_release_inactive(b) == gms_release_inactive(a)
       && gms_release_inactive_user(b, 2) == gms_release_inactive_user(a, 2),
       "1.7.0.1 answers as 1.7.0");
}


int
main(void)
{
    test_parse();
    test_text();
    test_answers();
    test_patch_release();

    return done_testing();
}


/*
 * Unit tests of src/tool/gms_policy.c: listPolicies' policies read, and
 * the platform privileges they grant a user, as DataHub's PolicyEngine
 * matches actors.
 */


#include <stdlib.h>

#include "tap.h"
#include "gms_policy.h"


#define ALICE  "urn:li:corpuser:alice"


/* the granted privileges joined by spaces: "" for none, "ERROR" on error */

static const char *
granted(const gms_policies_t *p, const char *urn, const char *const *groups,
    size_t ngroups, const char *const *roles, size_t nroles)
{
    size_t               i, n;
    const char         **privileges;
    static char          buf[1024];
    gms_policy_actor_t   a;

    a.urn = urn;
    a.groups = groups;
    a.ngroups = ngroups;
    a.roles = roles;
    a.nroles = nroles;

    if (gms_policy_grant(p, &a, &privileges, &n) != 0) {
        return "ERROR";
    }

    buf[0] = '\0';

    for (i = 0; i < n; i++) {
        if (i) {
            strcat(buf, " ");
        }

        strcat(buf, privileges[i]);
    }

    free(privileges);

    return buf;
}


static int
parse(const char *json, gms_policies_t *p, char *error)
{
    int           rc;
    json_t       *v;
    json_error_t  err;

    memset(p, 0, sizeof(gms_policies_t));
    error[0] = '\0';

    v = json_loads(json, 0, &err);
    if (v == NULL) {
        snprintf(error, GMS_POLICY_ERROR_LEN, "test JSON: %s", err.text);
        return -1;
    }

    rc = gms_policy_parse(v, p, error);
    json_decref(v);

    return rc;
}


#define POLICY(type, state, privileges, actors)                               \
    "{\"urn\":\"urn:li:dataHubPolicy:x\",\"type\":\"" type "\",\"state\":\""  \
    state "\",\"privileges\":" privileges ",\"actors\":{" actors "}}"

#define ACTORS(users, groups, roles, all_users, all_groups)                   \
    "\"users\":" users ",\"groups\":" groups ",\"roles\":" roles              \
    ",\"resourceOwners\":false,\"allUsers\":" all_users                       \
    ",\"allGroups\":" all_groups


static void
test_actors(void)
{
    char                 error[GMS_POLICY_ERROR_LEN];
    gms_policies_t       p;
    static const char   *eng[] = { "urn:li:corpGroup:eng" };
    static const char   *ops[] = { "urn:li:corpGroup:ops" };
    static const char   *admin[] = { "urn:li:dataHubRole:Admin" };
    static const char   *reader[] = { "urn:li:dataHubRole:Reader" };

    ok(parse("[" POLICY("PLATFORM", "ACTIVE", "[\"VIEW_ANALYTICS\"]",
                        ACTORS("null", "null", "null", "true", "false"))
             "]", &p, error) == 0, "allUsers: parsed %s", error);
    is_str(granted(&p, ALICE, NULL, 0, NULL, 0), "VIEW_ANALYTICS",
           "allUsers: any user");
    gms_policy_list_free(&p);

    ok(parse("[" POLICY("PLATFORM", "ACTIVE",
                        "[\"MANAGE_POLICIES\",\"MANAGE_USERS_AND_GROUPS\"]",
                        ACTORS("[\"" ALICE "\"]", "null", "null", "false",
                               "false"))
             "]", &p, error) == 0, "users: parsed %s", error);
    is_str(granted(&p, ALICE, NULL, 0, NULL, 0),
           "MANAGE_POLICIES MANAGE_USERS_AND_GROUPS", "users: alice named");
    is_str(granted(&p, "urn:li:corpuser:bob", NULL, 0, NULL, 0), "",
           "users: bob not named");
    is_str(granted(&p, "urn:li:corpuser:alice2", NULL, 0, NULL, 0), "",
           "users: a URN is matched whole");
    gms_policy_list_free(&p);

    ok(parse("[" POLICY("PLATFORM", "ACTIVE", "[\"VIEW_ANALYTICS\"]",
                        ACTORS("[]", "[]", "[]", "false", "true"))
             "]", &p, error) == 0, "allGroups: parsed %s", error);
    is_str(granted(&p, ALICE, eng, 1, NULL, 0), "VIEW_ANALYTICS",
           "allGroups: a user in a group");
    is_str(granted(&p, ALICE, NULL, 0, NULL, 0), "",
           "allGroups: a user in no group (PolicyEngine.isGroupMatch)");
    gms_policy_list_free(&p);

    ok(parse("[" POLICY("PLATFORM", "ACTIVE", "[\"MANAGE_INGESTION\"]",
                        ACTORS("null", "[\"urn:li:corpGroup:eng\"]", "null",
                               "false", "false"))
             "]", &p, error) == 0, "groups: parsed %s", error);
    is_str(granted(&p, ALICE, eng, 1, NULL, 0), "MANAGE_INGESTION",
           "groups: a member");
    is_str(granted(&p, ALICE, ops, 1, NULL, 0), "", "groups: another group");
    gms_policy_list_free(&p);

    ok(parse("[" POLICY("PLATFORM", "ACTIVE", "[\"MANAGE_SECRETS\"]",
                        ACTORS("null", "null", "[\"urn:li:dataHubRole:Admin\"]",
                               "false", "false"))
             "]", &p, error) == 0, "roles: parsed %s", error);
    is_str(granted(&p, ALICE, NULL, 0, admin, 1), "MANAGE_SECRETS",
           "roles: the role's holder");
    is_str(granted(&p, ALICE, NULL, 0, reader, 1), "", "roles: another role");
    is_str(granted(&p, ALICE, admin, 1, NULL, 0), "",
           "roles: a group named like the role is not the role");
    gms_policy_list_free(&p);
}


static void
test_ignored(void)
{
    char            error[GMS_POLICY_ERROR_LEN];
    gms_policies_t  p;

    ok(parse("["
             POLICY("PLATFORM", "INACTIVE", "[\"MANAGE_POLICIES\"]",
                    ACTORS("null", "null", "null", "true", "false")) ","
             POLICY("METADATA", "ACTIVE", "[\"EDIT_ENTITY\"]",
                    ACTORS("null", "null", "null", "true", "false")) ","
             POLICY("PLATFORM", "DRAFT", "[\"VIEW_ANALYTICS\"]",
                    ACTORS("null", "null", "null", "true", "false")) ","
             POLICY("PLATFORM", "ACTIVE", "[\"GET_ES_TASK_STATUS_PRIVILEGE\"]",
                    ACTORS("null", "null", "null", "false", "false")
                    ",\"resourceOwners\":true")
             "]", &p, error) == 0, "ignored ones: parsed %s", error);
    is_str(granted(&p, ALICE, NULL, 0, NULL, 0), "VIEW_ANALYTICS",
           "inactive and METADATA policies grant nothing, resourceOwners "
           "nothing on the platform; DRAFT is not INACTIVE");
    gms_policy_list_free(&p);

    /* an ignored policy is not read further: its odd fields do no harm */
    ok(parse("[{\"type\":\"METADATA\",\"state\":\"ACTIVE\","
             "\"privileges\":[\"bad name\"],\"actors\":null}]", &p, error)
       == 0 && p.n == 1 && !p.policies[0].applies,
       "a METADATA policy is not checked beyond type and state");
    gms_policy_list_free(&p);
}


static void
test_union(void)
{
    char                 error[GMS_POLICY_ERROR_LEN];
    gms_policies_t       p;
    static const char   *groups[] = { "urn:li:corpGroup:ops",
                                      "urn:li:corpGroup:eng" };
    static const char   *roles[] = { "urn:li:dataHubRole:Editor" };

    ok(parse("["
             POLICY("PLATFORM", "ACTIVE", "[\"VIEW_ANALYTICS\","
                    "\"GENERATE_PERSONAL_ACCESS_TOKENS\"]",
                    ACTORS("null", "null", "null", "true", "false")) ","
             POLICY("PLATFORM", "ACTIVE", "[\"VIEW_ANALYTICS\","
                    "\"MANAGE_INGESTION\"]",
                    ACTORS("null", "[\"urn:li:corpGroup:eng\"]", "null",
                           "false", "false")) ","
             POLICY("PLATFORM", "ACTIVE", "[\"MANAGE_GLOSSARIES\"]",
                    ACTORS("null", "null", "[\"urn:li:dataHubRole:Editor\"]",
                           "false", "false"))
             "]", &p, error) == 0, "union: parsed %s", error);
    is_str(granted(&p, ALICE, groups, 2, roles, 1),
           "GENERATE_PERSONAL_ACCESS_TOKENS MANAGE_GLOSSARIES MANAGE_INGESTION "
           "VIEW_ANALYTICS", "union: sorted, each once");
    ok(gms_policy_needs_groups(&p) && gms_policy_needs_roles(&p),
       "groups and roles are needed");
    gms_policy_list_free(&p);

    ok(parse("[" POLICY("PLATFORM", "ACTIVE", "[]",
                        ACTORS("null", "null", "null", "true", "false")) ","
             POLICY("METADATA", "ACTIVE", "[\"EDIT_ENTITY\"]",
                    ACTORS("null", "[\"urn:li:corpGroup:eng\"]",
                           "[\"urn:li:dataHubRole:Editor\"]", "false",
                           "true"))
             "]", &p, error) == 0, "no privileges: parsed %s", error);
    is_str(granted(&p, ALICE, NULL, 0, NULL, 0), "", "no privileges: none");
    ok(!gms_policy_needs_groups(&p) && !gms_policy_needs_roles(&p),
       "groups and roles of METADATA policies are not needed");
    gms_policy_list_free(&p);
}


static void
test_bad(void)
{
    size_t               i;
    char                 error[GMS_POLICY_ERROR_LEN];
    gms_policies_t       p;
    static const struct {
        const char  *json;
        const char  *error;
    } cases[] = {
        { "{}", "policies is not an array" },
        { "[1]", "policies[0] is not an object" },
        { "[{\"type\":\"PLATFORM\"}]", "policies[0]: state is not a string" },
        { "[" POLICY("PLATFORM", "ACTIVE", "null",
                     ACTORS("null", "null", "null", "true", "false")) "]",
          "policies[0]: privileges is missing" },
        { "[" POLICY("PLATFORM", "ACTIVE", "[\"A B\"]",
                     ACTORS("null", "null", "null", "true", "false")) "]",
          "policies[0]: privileges[0] is not a privilege name" },
        { "[" POLICY("PLATFORM", "ACTIVE", "[\"X\"]",
                     ACTORS("[\"alice\"]", "null", "null", "false", "false"))
          "]",
          "policies[0]: actors.users[0] is not a URN (urn:li:..., no "
          "control characters)" },
        { "[" POLICY("PLATFORM", "ACTIVE", "[\"X\"]",
                     ACTORS("null", "\"urn:li:corpGroup:eng\"", "null",
                            "false", "false")) "]",
          "policies[0]: actors.groups is not an array" },
        { "[" POLICY("PLATFORM", "ACTIVE", "[\"X\"]",
                     ACTORS("null", "null", "null", "\"true\"", "false"))
          "]",
          "policies[0]: actors.allUsers is not a boolean" },
        { "[" POLICY("PLATFORM", "ACTIVE", "[\"X\"]",
                     ACTORS("null", "null", "null", "true", "false")) ","
          "{\"type\":\"PLATFORM\",\"state\":\"ACTIVE\",\"privileges\":[],"
          "\"actors\":[]}]",
          "policies[1]: actors is not an object" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ok(parse(cases[i].json, &p, error) == -1 && p.n == 0,
           "bad input %zu refused, nothing kept", i);
        is_str(error, cases[i].error, "bad input %zu: the message", i);
        gms_policy_list_free(&p);
    }
}


int
main(void)
{
    test_actors();
    test_ignored();
    test_union();
    test_bad();

    return done_testing();
}


/*
 * Unit tests of src/lib/gms_events.c: DataHub's Events API answers
 * (ExternalEventsResponse), their Metadata Change Log records in Avro's
 * JSON encoding and in the plain form, and ExternalEventsOffsetCodec's
 * offsets compared for a gap.
 */


#include <stdlib.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "tap.h"


/* a recorded answer, whole: $GMS_DATAHUB_FIXTURES, or t/fixtures/datahub */
#define fixture(name, len)                                                   \
    tap_slurp("GMS_DATAHUB_FIXTURES", "t/fixtures/datahub", name, len)
#include "gms_events.h"


#define TOKEN_ID    "femuAmDTAp0+SB4MEXgSotsqvwgTGupwOrDidftkq5A="
#define TOKEN_URN   "urn:li:dataHubAccessToken:" TOKEN_ID

/*
 * {"MetadataChangeLog_Versioned_v1-0":100,
 *  "MetadataChangeLog_Versioned_v1-1":50}
 */
#define OFFSET_OLD                                                            \
    "eyJNZXRhZGF0YUNoYW5nZUxvZ19WZXJzaW9uZWRfdjEtMCI6MTAwLCJNZXRhZGF0YUNoYW5n" \
    "ZUxvZ19WZXJzaW9uZWRfdjEtMSI6NTB9"

#define INFO(actor, rest)                                                     \
    "{\"name\":\"ci\",\"actorUrn\":\"" actor "\",\"ownerUrn\":"               \
    "\"urn:li:corpuser:datahub\"" rest "}"

#define TIMES  ",\"createdAt\":1792022400000,\"expiresAt\":1823558400000"


static gms_events_t  ev;


/* an answer of one event whose value is the text given: its event */

static gms_event_t *
one(const char *value)
{
    int      rc;
    char    *body, err[256];
    json_t  *answer;

    gms_events_free(&ev);

    answer = json_pack("{s:s,s:i,s:[{s:s,s:s}]}", "offsetId", "e30=",
                       "count", 1, "events", "contentType",
                       "application/json", "value", value);
    body = json_dumps(answer, 0);
    json_decref(answer);

    rc = gms_events_parse(body, strlen(body), &ev, err, sizeof(err));
    free(body);

    if (rc != 0 || ev.nevents != 1) {
        printf("# parse: %d %s\n", rc, err);
        return NULL;
    }

    return &ev.events[0];
}


/*
 * A MetadataChangeLog in Avro's JSON encoding (avro 1: the unions as
 * RENAMED_MCL_AVRO_SCHEMA names them) or the plain form (avro 0); a NULL
 * field is left out; time 0: created null.
 */

static gms_event_t *
mcl(int avro, const char *type, const char *urn, const char *change,
    const char *aspect_name, const char *aspect, int64_t time)
{
    char         *text;
    json_t       *m, *v;
    gms_event_t  *e;

#define union_of(name, value)                                                 \
    (avro ? json_pack("{s:o}", name, value) : value)

    m = json_object();

    if (type) {
        json_object_set_new(m, "entityType", json_string(type));
    }

    if (urn) {
        json_object_set_new(m, "entityUrn",
                            union_of("string", json_string(urn)));
    }

    json_object_set_new(m, "entityKeyAspect", json_null());

    if (change) {
        json_object_set_new(m, "changeType", json_string(change));
    }

    if (aspect_name) {
        json_object_set_new(m, "aspectName",
                            union_of("string", json_string(aspect_name)));
    }

    if (aspect) {
        v = json_pack("{s:s,s:s}", "value", aspect, "contentType",
                      "application/json");
        json_object_set_new(m, "aspect",
                 union_of("com.linkedin.pegasus2avro.mxe.GenericAspect", v));

    } else {
        json_object_set_new(m, "aspect", json_null());
    }

    if (time) {
        v = json_pack("{s:I,s:s,s:n}", "time", (json_int_t) time, "actor",
                      "urn:li:corpuser:datahub", "impersonator");
        json_object_set_new(m, "created",
                 union_of("com.linkedin.pegasus2avro.common.AuditStamp", v));

    } else {
        json_object_set_new(m, "created", json_null());
    }

#undef union_of

    text = json_dumps(m, 0);
    json_decref(m);

    e = one(text);
    free(text);

    return e;
}


static int
is_kind(gms_event_t *e, gms_event_kind_e kind)
{
    if (e == NULL) {
        return 0;
    }

    if (e->kind != kind) {
        printf("# kind %d, want %d%s%s\n", e->kind, kind,
               e->why ? ": " : "", e->why ? e->why : "");
        return 0;
    }

    return 1;
}


static int
rejected(gms_event_t *e, const char *why)
{
    return is_kind(e, GMS_EVENT_REJECTED) && e->urn == NULL
           && e->id[0] == '\0' && strstr(e->why, why) != NULL;
}


static void
test_kinds(int avro)
{
    const char   *form;
    gms_event_t  *e;

    form = avro ? "avro" : "plain";

    e = mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
            "dataHubAccessTokenInfo",
            INFO("urn:li:corpuser:svc-ingest", TIMES), 1792022400012LL);
    ok(is_kind(e, GMS_EVENT_TOKEN_PUT) && strcmp(e->id, TOKEN_ID) == 0
       && e->urn && strcmp(e->urn, "urn:li:corpuser:svc-ingest") == 0
       && e->urn_len == strlen(e->urn)
       && e->created_at == 1792022400000LL
       && e->expires_at == 1823558400000LL && e->time == 1792022400012LL,
       "%s: dataHubAccessTokenInfo UPSERT: TOKEN_PUT, id, actor, times",
       form);

    e = mcl(avro, "dataHubAccessToken", TOKEN_URN, "CREATE",
            "dataHubAccessTokenInfo",
            INFO("urn:li:corpuser:bob", ",\"createdAt\":5"), 0);
    ok(is_kind(e, GMS_EVENT_TOKEN_PUT) && e->expires_at == 0
       && e->created_at == 5 && e->time == 0,
       "%s: no expiresAt: never; created null: time 0", form);

    e = mcl(avro, "dataHubAccessToken", TOKEN_URN, "RESTATE",
            "dataHubAccessTokenInfo",
            INFO("urn:li:corpuser:bob", ",\"expiresAt\":null"), 7);
    ok(is_kind(e, GMS_EVENT_TOKEN_PUT) && e->expires_at == 0
       && e->created_at == 0 && e->time == 7,
       "%s: RESTATE, expiresAt null, no createdAt: TOKEN_PUT", form);

    e = mcl(avro, "dataHubAccessToken", TOKEN_URN, "DELETE",
            "dataHubAccessTokenKey", NULL, 9);
    ok(is_kind(e, GMS_EVENT_TOKEN_DELETE) && strcmp(e->id, TOKEN_ID) == 0
       && e->urn == NULL && e->time == 9,
       "%s: the key deleted: TOKEN_DELETE", form);

    e = mcl(avro, "dataHubAccessToken", TOKEN_URN, "DELETE",
            "dataHubAccessTokenInfo", NULL, 9);
    ok(is_kind(e, GMS_EVENT_TOKEN_DELETE) && strcmp(e->id, TOKEN_ID) == 0,
       "%s: the info deleted: TOKEN_DELETE", form);

    e = mcl(avro, "dataHubAccessToken", TOKEN_URN, "DELETE", NULL, NULL, 9);
    ok(is_kind(e, GMS_EVENT_TOKEN_DELETE), "%s: a DELETE naming no aspect: "
       "TOKEN_DELETE", form);

    e = mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
            "dataHubAccessTokenKey", "{\"id\":\"" TOKEN_ID "\"}", 9);
    ok(is_kind(e, GMS_EVENT_IGNORED) && e->id[0] == '\0',
       "%s: a token's key written: IGNORED (its info follows)", form);

    e = mcl(avro, "corpuser", "urn:li:corpuser:alice", "UPSERT",
            "corpUserStatus", "{\"status\":\"SUSPENDED\"}", 11);
    ok(is_kind(e, GMS_EVENT_USER) && e->urn
       && strcmp(e->urn, "urn:li:corpuser:alice") == 0
       && e->urn_len == 21 && e->time == 11,
       "%s: corpUserStatus: USER, the user", form);

    e = mcl(avro, "corpuser", "urn:li:corpuser:alice", "UPSERT", "status",
            "{\"removed\":true}", 11);
    ok(is_kind(e, GMS_EVENT_USER), "%s: status (soft removal): USER", form);

    e = mcl(avro, "corpuser", "urn:li:corpuser:alice", "DELETE",
            "corpUserKey", NULL, 11);
    ok(is_kind(e, GMS_EVENT_USER), "%s: corpUserKey deleted: USER", form);

    e = mcl(avro, "corpuser", "urn:li:corpuser:alice", "UPSERT",
            "corpUserInfo", "{\"active\":true}", 11);
    ok(is_kind(e, GMS_EVENT_IGNORED) && e->urn == NULL,
       "%s: corpUserInfo: IGNORED", form);

    e = mcl(avro, "corpuser", "urn:li:corpuser:alice", "UPSERT",
            "groupMembership", "{\"groups\":[]}", 11);
    ok(is_kind(e, GMS_EVENT_PRIVILEGES) && e->members,
       "%s: groupMembership: PRIVILEGES, members", form);

    e = mcl(avro, "corpuser", "urn:li:corpuser:alice", "UPSERT",
            "nativeGroupMembership", "{\"nativeGroups\":[]}", 11);
    ok(is_kind(e, GMS_EVENT_PRIVILEGES) && e->members,
       "%s: nativeGroupMembership: PRIVILEGES, members", form);

    e = mcl(avro, "corpuser", "urn:li:corpuser:alice", "UPSERT",
            "roleMembership", "{\"roles\":[]}", 11);
    ok(is_kind(e, GMS_EVENT_PRIVILEGES) && e->members,
       "%s: roleMembership: PRIVILEGES, members", form);

    e = mcl(avro, "corpGroup", "urn:li:corpGroup:eng", "DELETE",
            "corpGroupKey", NULL, 11);
    ok(is_kind(e, GMS_EVENT_PRIVILEGES) && e->members,
       "%s: a group deleted: PRIVILEGES, members", form);

    e = mcl(avro, "corpGroup", "urn:li:corpGroup:eng", "UPSERT",
            "roleMembership", "{\"roles\":[]}", 11);
    ok(is_kind(e, GMS_EVENT_PRIVILEGES) && e->members,
       "%s: a group's roles: PRIVILEGES, members", form);

    e = mcl(avro, "dataHubPolicy", "urn:li:dataHubPolicy:p", "UPSERT",
            "dataHubPolicyInfo", "{\"state\":\"INACTIVE\"}", 11);
    ok(is_kind(e, GMS_EVENT_PRIVILEGES) && !e->members,
       "%s: a policy: PRIVILEGES, no members", form);

    e = mcl(avro, "dataHubRole", "urn:li:dataHubRole:Admin", "UPSERT",
            "dataHubRoleInfo", "{\"name\":\"Admin\"}", 11);
    ok(is_kind(e, GMS_EVENT_PRIVILEGES) && e->members,
       "%s: a role: PRIVILEGES, members", form);

    e = mcl(avro, "dataset", "urn:li:dataset:(urn:li:dataPlatform:hive,t,PROD)",
            "UPSERT", "globalTags", "{\"tags\":[]}", 11);
    ok(is_kind(e, GMS_EVENT_IGNORED) && e->urn == NULL && e->time == 11,
       "%s: a dataset: IGNORED, its time kept", form);
}


static void
test_rejected(int avro)
{
    const char   *form;
    gms_event_t  *e;

    form = avro ? "avro" : "plain";

    ok(rejected(mcl(avro, NULL, TOKEN_URN, "DELETE", "dataHubAccessTokenKey",
                    NULL, 1), "no entityType"), "%s: no entityType", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", NULL, "DELETE",
                    "dataHubAccessTokenKey", NULL, 1), "no entityUrn"),
       "%s: no entityUrn", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, NULL,
                    "dataHubAccessTokenKey", NULL, 1), "no changeType"),
       "%s: no changeType", form);
    ok(rejected(mcl(avro, "", TOKEN_URN, "DELETE", NULL, NULL, 1),
                "no entityType"), "%s: an empty entityType", form);

    /* the token's id: 44 characters of base64 with one '=' */
    ok(rejected(mcl(avro, "dataHubAccessToken",
                    "urn:li:dataHubAccessToken:abc", "DELETE", NULL, NULL, 1),
                "token id"), "%s: a token URN with a short id", form);
    ok(rejected(mcl(avro, "dataHubAccessToken",
                    "urn:li:dataHubAccessToken:femuAmDTAp0-SB4MEXgSotsqvwgTGup"
                    "wOrDidftkq5A=", "DELETE", NULL, NULL, 1), "token id"),
       "%s: a token URN whose id has a bad character", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN "x", "DELETE",
                    NULL, NULL, 1), "token id"),
       "%s: a token URN with a character more", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", "urn:li:corpuser:" TOKEN_ID,
                    "DELETE", NULL, NULL, 1), "token id"),
       "%s: a token entity whose URN is not a token's", form);

    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo",
                    "{\"name\":\"ci\",\"createdAt\":1}", 1), "no actorUrn"),
       "%s: a token's info without actorUrn", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo", "{\"actorUrn\":7}", 1),
                "no actorUrn"), "%s: an actorUrn that is a number", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo",
                    INFO("urn:li:dataHubPolicy:p", ""), 1), "not a user's"),
       "%s: an actorUrn that is not a corpuser", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo", INFO("urn:li:corpuser:", ""), 1),
                "not a user's"), "%s: an actorUrn with no user", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo",
                    INFO("urn:li:corpuser:a\\u0001b", ""), 1), "not a user's"),
       "%s: an actorUrn with a control character", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo",
                    INFO("urn:li:corpuser:a\\u0000b", ""), 1), "info"),
       "%s: an actorUrn with a NUL", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo",
                    INFO("urn:li:corpuser:bob", ",\"createdAt\":-1"), 1),
                "createdAt"), "%s: a negative createdAt", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo",
                    INFO("urn:li:corpuser:bob", ",\"createdAt\":\"5\""), 1),
                "createdAt"), "%s: a createdAt that is a string", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo",
                    INFO("urn:li:corpuser:bob", ",\"expiresAt\":1.5e12"), 1),
                "expiresAt"), "%s: an expiresAt that is a real", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo",
                    INFO("urn:li:corpuser:bob",
                         ",\"expiresAt\":9223372036854775807"), 1),
                "expiresAt"), "%s: an expiresAt past the year 9999", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo",
                    INFO("urn:li:corpuser:bob",
                         ",\"expiresAt\":99999999999999999999"), 1),
                "not a JSON object"),
       "%s: an expiresAt beyond 64 bits: the info is no JSON", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo", NULL, 1), "no aspect"),
       "%s: a token's info UPSERT with no aspect", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo", "{\"actorUrn\":", 1),
                "not a JSON object"), "%s: a token's info not JSON", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT",
                    "dataHubAccessTokenInfo", "[1]", 1), "not a JSON object"),
       "%s: a token's info an array", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "PATCH",
                    "dataHubAccessTokenInfo",
                    "[{\"op\":\"add\",\"path\":\"/name\",\"value\":\"x\"}]", 1),
                "neither UPSERT"), "%s: a token's info PATCHed", form);
    ok(rejected(mcl(avro, "dataHubAccessToken", TOKEN_URN, "UPSERT", NULL,
                    NULL, 1), "names no aspect"),
       "%s: a token's UPSERT naming no aspect", form);
    ok(rejected(mcl(avro, "corpuser", "urn:li:corpGroup:eng", "UPSERT",
                    "corpUserStatus", "{}", 1), "not a user's"),
       "%s: a corpuser whose URN is a group's", form);
    ok(rejected(mcl(avro, "corpuser", "urn:li:corpuser:alice", "UPSERT", NULL,
                    "{}", 1), "names no aspect"),
       "%s: a user's change naming no aspect", form);

    e = mcl(avro, "corpuser", "urn:li:corpuser:alice", "UPSERT",
            "corpUserStatus", "{}", -1);
    ok(rejected(e, "created.time"), "%s: a negative created.time", form);

    e = mcl(avro, "corpuser", "urn:li:corpuser:alice", "UPSERT",
            "corpUserStatus", "{}", GMS_EVENTS_MS_MAX + 1);
    ok(rejected(e, "created.time"), "%s: a created.time past 9999", form);
}


/* what is not an MCL at all, written out */

static void
test_malformed(void)
{
    int           rc;
    char          err[256];
    const char   *body;
    gms_event_t  *e;

    ok(rejected(one("[]"), "not a JSON object"), "a value that is an array");
    ok(rejected(one("{\"entityType\":"), "not a JSON object"),
       "a value that is not JSON");
    ok(rejected(one(""), "not a string"), "an empty value");
    ok(rejected(one("{\"entityType\":\"corpuser\",\"entityType\":\"x\"}"),
                "not a JSON object"), "a value with a key twice");
    ok(rejected(one("{\"entityType\":\"dataHubAccessToken\",\"entityUrn\":"
                    "{\"string\":\"" TOKEN_URN "\\u0000\"},\"changeType\":"
                    "\"DELETE\"}"), "not a JSON object"),
       "a URN with a NUL: the value is not JSON to jansson");
    ok(rejected(one("{\"entityType\":\"dataHubAccessToken\",\"entityUrn\":"
                    "{\"string\":7},\"changeType\":\"DELETE\"}"),
                "no entityUrn"), "a URN that is a number");
    ok(rejected(one("{\"entityType\":\"dataHubAccessToken\",\"entityUrn\":"
                    "[\"" TOKEN_URN "\"],\"changeType\":\"DELETE\"}"),
                "no entityUrn"), "a URN in an array");
    ok(rejected(one("{\"entityType\":\"corpuser\",\"entityUrn\":"
                    "\"urn:li:corpuser:a\",\"changeType\":\"UPSERT\","
                    "\"aspectName\":{\"string\":5}}"), "aspectName"),
       "an aspectName that is a number");
    ok(rejected(one("{\"entityType\":\"corpuser\",\"entityUrn\":"
                    "\"urn:li:corpuser:a\",\"changeType\":\"UPSERT\","
                    "\"aspectName\":\"status\",\"created\":{\"time\":\"1\"}}"),
                "created.time"), "a created.time that is a string");
    ok(rejected(one("{\"entityType\":\"corpuser\",\"entityUrn\":"
                    "\"urn:li:corpuser:a\",\"changeType\":\"UPSERT\","
                    "\"aspectName\":\"status\",\"created\":[1]}"),
                "created.time"), "a created that is an array");
    ok(rejected(one("{\"entityType\":\"dataHubAccessToken\",\"entityUrn\":"
                    "\"" TOKEN_URN "\",\"changeType\":\"UPSERT\","
                    "\"aspectName\":\"dataHubAccessTokenInfo\",\"aspect\":"
                    "{\"value\":\"{}\",\"contentType\":\"application/pdl\"}}"),
                "not application/json"), "an aspect that is not JSON's");

    /* the union's branch may be any long's: {"long": ...} */
    e = one("{\"entityType\":\"corpuser\",\"entityUrn\":"
            "\"urn:li:corpuser:a\",\"changeType\":\"UPSERT\","
            "\"aspectName\":\"status\",\"created\":{\"time\":{\"long\":42},"
            "\"actor\":\"urn:li:corpuser:datahub\"}}");
    ok(is_kind(e, GMS_EVENT_USER) && e->time == 42,
       "a time written as a union");

    /* Avro bytes: each byte of the aspect's UTF-8 one character */
    e = one("{\"entityType\":\"dataHubAccessToken\",\"entityUrn\":"
            "\"" TOKEN_URN "\",\"changeType\":\"UPSERT\",\"aspectName\":"
            "\"dataHubAccessTokenInfo\",\"aspect\":{\"value\":"
            "\"{\\\"actorUrn\\\":\\\"urn:li:corpuser:jos\\u00c3\\u00a9\\\"}\","
            "\"contentType\":\"application/json\"}}");
    ok(is_kind(e, GMS_EVENT_TOKEN_PUT) && e->urn
       && strcmp(e->urn, "urn:li:corpuser:jos\xc3\xa9") == 0,
       "Avro's bytes: the aspect's UTF-8 taken back");

    e = one("{\"entityType\":\"dataHubAccessToken\",\"entityUrn\":"
            "\"" TOKEN_URN "\",\"changeType\":\"UPSERT\",\"aspectName\":"
            "\"dataHubAccessTokenInfo\",\"aspect\":{\"value\":"
            "\"{\\\"actorUrn\\\":\\\"urn:li:corpuser:jos\\u00e9\\\"}\","
            "\"contentType\":\"application/json\"}}");
    ok(is_kind(e, GMS_EVENT_TOKEN_PUT) && e->urn
       && strcmp(e->urn, "urn:li:corpuser:jos\xc3\xa9") == 0,
       "the plain form: the aspect's text as it is (U+00E9)");

    e = one("{\"entityType\":\"dataHubAccessToken\",\"entityUrn\":"
            "\"" TOKEN_URN "\",\"changeType\":\"UPSERT\",\"aspectName\":"
            "\"dataHubAccessTokenInfo\",\"aspect\":{\"value\":"
            "\"{\\\"actorUrn\\\":\\\"urn:li:corpuser:\\u4e2d\\\"}\","
            "\"contentType\":\"application/json\"}}");
    ok(is_kind(e, GMS_EVENT_TOKEN_PUT) && e->urn
       && strcmp(e->urn, "urn:li:corpuser:\xe4\xb8\xad") == 0,
       "the plain form: the aspect's text as it is (U+4E2D)");

    /* events that are not events */
    body = "{\"offsetId\":\"e30=\",\"count\":4,\"events\":[1,null,"
           "{\"contentType\":\"text/plain\",\"value\":\"{}\"},"
           "{\"contentType\":\"application/json\",\"value\":{}}]}";
    gms_events_free(&ev);
    rc = gms_events_parse(body, strlen(body), &ev, err, sizeof(err));
    ok(rc == 0 && ev.nevents == 4
       && rejected(&ev.events[0], "not an object")
       && rejected(&ev.events[1], "not an object")
       && rejected(&ev.events[2], "contentType")
       && rejected(&ev.events[3], "value is not a string"),
       "events that are not objects, another contentType, a value not a "
       "string: REJECTED, the answer parsed");
    gms_events_free(&ev);
}


/* what makes the answer unusable as a whole */

static int
unusable(const char *body, size_t len, const char *why)
{
    int   rc;
    char  err[256];

    err[0] = '\0';
    rc = gms_events_parse(body, len, &ev, err, sizeof(err));

    if (rc != -1 || ev.offset != NULL || ev.events != NULL
        || strstr(err, why) == NULL)
    {
        printf("# rc %d, err: %s\n", rc, err);
        gms_events_free(&ev);
        return 0;
    }

    return 1;
}


#define U(s)  s, sizeof(s) - 1


static void
test_answer(void)
{
    int     rc;
    char   *big, err[256];
    size_t  i, n;

    ok(unusable(U("<html>"), "not JSON"), "HTML: not JSON");
    ok(unusable(U(""), "not JSON"), "empty: not JSON");
    ok(unusable(U("[]"), "not a JSON object"), "an array");
    ok(unusable(U("{\"count\":0,\"events\":[]}"), "offsetId is missing"),
       "no offsetId");
    ok(unusable(U("{\"offsetId\":5,\"count\":0,\"events\":[]}"),
                "offsetId is not a string"), "an offsetId that is a number");
    ok(unusable(U("{\"offsetId\":\"\",\"count\":0,\"events\":[]}"),
                "offsetId is empty"), "an empty offsetId");
    ok(unusable(U("{\"errorMessage\":\"An unexpected error occurred: Failed "
                  "to decode and parse offsetId: x\\n\"}"),
                "errorMessage \"An unexpected error occurred: Failed to "
                "decode and parse offsetId: x?\""),
       "GMS's errorMessage is in err, a control character as ?");
    ok(unusable(U("{\"offsetId\":\"e30=\",\"count\":0}"), "events is missing"),
       "no events");
    ok(unusable(U("{\"offsetId\":\"e30=\",\"count\":0,\"events\":{}}"),
                "events is not an array"), "events an object");
    ok(unusable(U("{\"offsetId\":\"e30=\",\"events\":[]}"), "count is missing"),
       "no count");
    ok(unusable(U("{\"offsetId\":\"e30=\",\"count\":\"0\",\"events\":[]}"),
                "count is not an integer"), "a count that is a string");
    ok(unusable(U("{\"offsetId\":\"e30=\",\"count\":2,\"events\":[{}]}"),
                "count 2, but 1 events"), "a count that is not the events'");
    ok(unusable(U("{\"offsetId\":\"e30=\",\"count\":-1,\"events\":[]}"),
                "count -1"), "a negative count");
    ok(unusable(U("{\"offsetId\":\"e30=\",\"count\":0,\"events\":[]} x"),
                "not JSON"), "something after the answer");
    ok(unusable(U("{\"offsetId\":\"e30=\",\"offsetId\":\"e31=\",\"count\":0,"
                  "\"events\":[]}"), "not JSON"), "offsetId twice");
    ok(unusable(U("{\"offsetId\":\"e30=\",\"count\":0,\"events\":[\0]}"),
                "not JSON"), "a NUL byte in the answer");
    ok(unusable(U("{\"offsetId\":\"e30=\\u0000\",\"count\":0,\"events\":[]}"),
                "not JSON"), "a NUL in offsetId");

    /* deeper than jansson's JSON_PARSER_MAX_DEPTH */
    n = 100000;
    big = malloc(n);
    memset(big, '[', n);
    ok(unusable(big, n, "not JSON"), "100,000 brackets: not JSON, no crash");
    free(big);

    /* GMS caps limit at 5000; GMS_EVENTS_MAX events at most */
    big = malloc(64 + 2 * (GMS_EVENTS_MAX + 1));
    n = sprintf(big, "{\"offsetId\":\"e30=\",\"count\":%d,\"events\":[",
                GMS_EVENTS_MAX + 1);
    for (i = 0; i <= GMS_EVENTS_MAX; i++) {
        big[n++] = '1';
        big[n++] = ',';
    }
    big[n - 1] = ']';
    big[n++] = '}';
    ok(unusable(big, n, "more than 10000"), "10,001 events: unusable");

    n = sprintf(big, "{\"offsetId\":\"e30=\",\"count\":%d,\"events\":[",
                GMS_EVENTS_MAX);
    for (i = 0; i < GMS_EVENTS_MAX; i++) {
        big[n++] = '1';
        big[n++] = ',';
    }
    big[n - 1] = ']';
    big[n++] = '}';
    rc = gms_events_parse(big, n, &ev, err, sizeof(err));
    ok(rc == 0 && ev.nevents == GMS_EVENTS_MAX && ev.count == GMS_EVENTS_MAX
       && ev.events[GMS_EVENTS_MAX - 1].kind == GMS_EVENT_REJECTED,
       "10,000 events: parsed, each REJECTED");
    gms_events_free(&ev);
    free(big);

    rc = gms_events_parse(U("{\"offsetId\":\"e30=\",\"count\":0,\"events\":[],"
                            "\"errorMessage\":null}"), &ev, NULL, 0);
    ok(rc == 0 && strcmp(ev.offset, "e30=") == 0 && ev.count == 0
       && ev.nevents == 0 && ev.events == NULL,
       "no events, errorMessage null: parsed");
    gms_events_free(&ev);
    gms_events_free(&ev);
    ok(ev.offset == NULL, "freed twice: harmless");
}



static void
test_fixture(void)
{
    int           rc;
    char         *body, err[256], why[256];
    size_t        len;
    gms_event_t  *e;

    body = fixture("events-poll.constructed.json", &len);
    ok(body != NULL, "t/fixtures/datahub/events-poll.constructed.json read");
    if (body == NULL) {
        return;
    }

    rc = gms_events_parse(body, len, &ev, err, sizeof(err));
    free(body);
    ok(rc == 0 && ev.nevents == 5 && ev.count == 5, "the fixture: 5 events");
    if (rc != 0 || ev.nevents != 5) {
        return;
    }

    e = ev.events;
    ok(e[0].kind == GMS_EVENT_TOKEN_PUT && strcmp(e[0].id, TOKEN_ID) == 0
       && strcmp(e[0].urn, "urn:li:corpuser:svc-ingest") == 0
       && e[0].created_at == 1792022400000LL
       && e[0].expires_at == 1823558400000LL
       && e[0].time == 1792022400012LL, "a token made: TOKEN_PUT");
    ok(e[1].kind == GMS_EVENT_USER
       && strcmp(e[1].urn, "urn:li:corpuser:alice") == 0,
       "alice suspended: USER");
    ok(e[2].kind == GMS_EVENT_PRIVILEGES, "a policy changed: PRIVILEGES");
    ok(e[3].kind == GMS_EVENT_IGNORED, "a dataset's tags: IGNORED");
    ok(e[4].kind == GMS_EVENT_TOKEN_DELETE && strcmp(e[4].id, TOKEN_ID) == 0
       && e[4].time == 1792022490000LL, "the token revoked: TOKEN_DELETE");

    ok(gms_events_offset_check(OFFSET_OLD, ev.offset, ev.count, why,
                               sizeof(why)) == GMS_EVENTS_OFFSET_OK,
       "the fixture's offsets: 3 + 2 passed, 5 events: OK");
    ok(gms_events_offset_check(OFFSET_OLD, ev.offset, 4, why, sizeof(why))
       == GMS_EVENTS_OFFSET_GAP && strstr(why, "1 skipped"),
       "one event fewer: a GAP of one");

    gms_events_free(&ev);
}


/* base64 of a JSON text, as ExternalEventsOffsetCodec encodes it */

static const char *
b64(const char *json)
{
    static char  out[2][1024];
    static int   i;

    i ^= 1;
    EVP_EncodeBlock((unsigned char *) out[i], (const unsigned char *) json,
                    (int) strlen(json));

    return out[i];
}


static int
offsets(const char *old, const char *next, int64_t count,
    gms_events_offset_e want, const char *why_want)
{
    char                 why[256];
    gms_events_offset_e  rc;

    rc = gms_events_offset_check(old, next, count, why, sizeof(why));

    if (rc != want || (why_want && strstr(why, why_want) == NULL)) {
        printf("# %d (want %d): %s\n", rc, want, why);
        return 0;
    }

    return 1;
}


#define T0  "MetadataChangeLog_Versioned_v1-0"
#define T1  "MetadataChangeLog_Versioned_v1-1"

static void
test_offsets(void)
{
    char  old[256];

    /* b64() keeps its last two answers only */
    strcpy(old, b64("{\"" T0 "\":100,\"" T1 "\":50}"));

    ok(offsets(NULL, old, 0, GMS_EVENTS_OFFSET_OK, NULL), "no kept offset: OK");
    ok(offsets("", "x", 3, GMS_EVENTS_OFFSET_OK, NULL),
       "an empty kept offset: OK, whatever comes");
    ok(offsets(old, old, 0, GMS_EVENTS_OFFSET_OK, NULL),
       "an empty poll, the same offset: OK");
    ok(offsets(old, b64("{\"" T1 "\":57,\"" T0 "\":100}"), 7,
               GMS_EVENTS_OFFSET_OK, NULL),
       "7 events of one partition, in another order: OK");
    ok(offsets(old, b64("{\"" T0 "\":110,\"" T1 "\":50}"), 4,
               GMS_EVENTS_OFFSET_GAP, "6 skipped (retention)"),
       "10 offsets passed, 4 events: GAP (retention)");
    ok(offsets(old, b64("{\"" T0 "\":100,\"" T1 "\":50,"
                        "\"MetadataChangeLog_Versioned_v1-2\":0}"), 0,
               GMS_EVENTS_OFFSET_GAP, "partition "
               "MetadataChangeLog_Versioned_v1-2 is new"),
       "a new partition: GAP");
    ok(offsets(old, b64("{\"" T0 "\":100}"), 0, GMS_EVENTS_OFFSET_GAP,
               "partition MetadataChangeLog_Versioned_v1-1 is gone"),
       "a partition gone: GAP");
    ok(offsets(old, b64("{\"" T0 "\":99,\"" T1 "\":52}"), 1,
               GMS_EVENTS_OFFSET_GAP, "went back from 100 to 99"),
       "an offset back: GAP");
    ok(offsets(old, b64("{\"" T0 "\":101,\"" T1 "\":50}"), 2,
               GMS_EVENTS_OFFSET_OPAQUE, "not Kafka's"),
       "1 offset passed, 2 events: OPAQUE");
    ok(offsets(old, b64("{\"" T0 "\":9223372036854775807,\"" T1
                        "\":9223372036854775807}"), 5,
               GMS_EVENTS_OFFSET_GAP, "skipped"),
       "offsets at 2^63 - 1: the sum saturates, GAP");
    ok(offsets(old, b64("{\"" T0 "\":100,\"" T1 "\":50}"), -3,
               GMS_EVENTS_OFFSET_OK, NULL), "a negative count counts as 0");

    /* ExternalEventsOffsetCodecTest's cases */
    ok(offsets(b64("{\"my-hyphenated-topic-3\":42}"),
               b64("{\"my-hyphenated-topic-3\":44}"), 2,
               GMS_EVENTS_OFFSET_OK, NULL), "a hyphenated topic: OK");
    ok(offsets(b64("{\"topicnohyphen\":10}"), old, 0,
               GMS_EVENTS_OFFSET_OPAQUE, "the kept offset"),
       "a key without a hyphen: OPAQUE");
    ok(offsets(old, b64("{\"topic-\":10}"), 0, GMS_EVENTS_OFFSET_OPAQUE,
               "the new offset"), "a trailing hyphen: OPAQUE");
    ok(offsets(old, b64("{\"topic-abc\":10}"), 0, GMS_EVENTS_OFFSET_OPAQUE,
               NULL), "a partition not of digits: OPAQUE");
    ok(offsets(old, b64("{\"t-2147483648\":10}"), 0,
               GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "a partition beyond Integer.parseInt: OPAQUE");
    ok(offsets(b64("{\"t-2147483647\":1}"), b64("{\"t-2147483647\":2}"), 1,
               GMS_EVENTS_OFFSET_OK, NULL), "partition 2^31 - 1: OK");
    ok(offsets(old, b64("{\"t-1\":10,\"t-01\":10}"), 0,
               GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "one partition twice (t-1, t-01): OPAQUE");
    ok(offsets(old, b64("{\"t-1\":-1}"), 0, GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "a negative offset: OPAQUE");
    ok(offsets(old, b64("{\"t-1\":\"10\"}"), 0, GMS_EVENTS_OFFSET_OPAQUE,
               NULL), "an offset that is a string: OPAQUE");
    ok(offsets(old, b64("{\"t-1\":1.5}"), 0, GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "an offset that is a real: OPAQUE");
    ok(offsets(old, b64("[1]"), 0, GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "an array: OPAQUE");
    ok(offsets(old, b64("not json"), 0, GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "base64 of no JSON: OPAQUE");
    ok(offsets(old, b64("{\"t-1\":1,\"t-1\":2}"), 0,
               GMS_EVENTS_OFFSET_OPAQUE, NULL), "a key twice: OPAQUE");
    ok(offsets(old, "!!!!", 0, GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "not base64: OPAQUE");
    ok(offsets(old, "e30 =", 0, GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "a space in the base64: OPAQUE");
    ok(offsets(old, "e3=", 0, GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "bad padding: OPAQUE");
    ok(offsets(old, "e30==", 0, GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "too much padding: OPAQUE");
    ok(offsets(old, "e", 0, GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "one character: OPAQUE");
    ok(offsets(old, NULL, 0, GMS_EVENTS_OFFSET_OPAQUE, NULL),
       "no new offset: OPAQUE");
    ok(offsets("e30", "e30=", 0, GMS_EVENTS_OFFSET_OK, NULL),
       "{} without padding (Java's decoder takes it), {}: OK");
    ok(offsets("e30=", b64("{\"t-1\":0}"), 0, GMS_EVENTS_OFFSET_GAP,
               "is new"), "from no partition to one: GAP");

    /* pgQueue's offsets have the form; a sequence that skips is a gap */
    ok(offsets(b64("{\"MetadataChangeLog_Versioned_v1-0\":1000}"),
               b64("{\"MetadataChangeLog_Versioned_v1-0\":1040}"), 3,
               GMS_EVENTS_OFFSET_GAP, NULL), "a sequence that skips: GAP");

    ok(gms_events_offset_check(old, "!", 0, NULL, 0)
       == GMS_EVENTS_OFFSET_OPAQUE, "why NULL: no text, the answer still");
}


static void
test_limits(void)
{
    int       i, ones;
    long      limit;
    unsigned  full;

    full = 3;
    ok(gms_events_next_limit(1000, 0, 1000, &full) == 1 && full == 0,
       "a poll that had nothing: the next asks for 1, no full poll");
    full = 0;
    ok(gms_events_next_limit(1, 1, 1000, &full) == 1 && full == 1,
       "1 asked, 1 came: 1 again (one change's few events), one full");

    /* a backlog: GMS_EVENTS_BACKLOG polls of 1, then 2, 4, 8 ... 1000 */
    full = 0;
    limit = 1;
    ones = 0;

    for (i = 0; i < 40 && limit < 1000; i++) {
        ones += (limit == 1);
        limit = gms_events_next_limit(limit, limit, 1000, &full);
    }

    ok(limit == 1000 && ones == GMS_EVENTS_BACKLOG,
       "full polls in a row: %d of 1, then doubling to the most",
       GMS_EVENTS_BACKLOG);
    ok(gms_events_next_limit(1000, 1000, 1000, &full) == 1000,
       "the most asked and come: the most again");
    ok(gms_events_next_limit(1000, 40, 1000, &full) == 1 && full == 0,
       "fewer came (the timeout ran out): 1, the count ended");
    full = GMS_EVENTS_BACKLOG;
    ok(gms_events_next_limit(64, 200, 100, &full) == 100,
       "more came than asked: twice, capped at the most");
    full = 0;
    ok(gms_events_next_limit(0, 5, 1000, &full) == 1 && full == 1,
       "no limit asked, 5 came: as if 1 was");
    full = GMS_EVENTS_BACKLOG;
    ok(gms_events_next_limit(4, 4, 0, &full) == 1, "a most below 1: 1");
}


int
main(void)
{
    test_kinds(1);
    test_kinds(0);
    test_rejected(1);
    test_rejected(0);
    test_malformed();
    test_answer();
    test_fixture();
    test_offsets();
    test_limits();

    gms_events_free(&ev);

    return done_testing();
}

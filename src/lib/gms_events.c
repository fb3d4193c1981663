
/*
 * DataHub's Events API, as gms-token follow reads it.
 *
 * GET /openapi/v1/events/poll (ExternalEventsController, DataHub 1.3.0 and
 * later) answers an ExternalEventsResponse (events-service, models/v1):
 * {"offsetId": "...", "count": N, "events": [{"contentType":
 * "application/json", "value": "<JSON text>"}, ...]}, errorMessage on
 * errors.  Each value is a MetadataChangeLog record
 * (mxe-utils-avro/.../v1/avro/com/linkedin/mxe/MetadataChangeLog.avsc)
 * written by Avro's JsonEncoder (ExternalEventsService.
 * convertGenericRecordToJson): a union is an object of one member named
 * for its branch ({"string": "urn:li:..."}, {"com.linkedin.pegasus2avro.
 * mxe.GenericAspect": {...}}, {"com.linkedin.common.AuditStamp": {...}}),
 * null as null; the aspect's value is Avro "bytes", one character per
 * byte.  docs/actions/events/metadata-change-log-event.md shows the plain
 * form, without the unions: both are read.
 *
 * The offsetId is ExternalEventsOffsetCodec's: standard base64 of a JSON
 * object {"<topic>-<partition>": nextOffset}, each partition's next Kafka
 * offset (KafkaExternalEventsPollHandler: the last record's offset + 1).
 */


#include "gms_events.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "gms_token.h"


#define GMS_EVENTS_TOKEN_URN   "urn:li:dataHubAccessToken:"
#define GMS_EVENTS_USER_URN    "urn:li:corpuser:"

#define gms_events_prefix(s, len, p)                                          \
    ((len) >= sizeof(p) - 1 && memcmp(s, p, sizeof(p) - 1) == 0)

/* a user's URN, as a cache entry may hold it (gms_token_actor_valid) */
#define gms_events_user(s, len)                                               \
    (gms_events_prefix(s, len, GMS_EVENTS_USER_URN)                           \
     && (len) > sizeof(GMS_EVENTS_USER_URN) - 1                               \
     && gms_token_actor_valid(s, len))

/* a topic in a text: 64 bytes at most */
#define gms_events_topic(p)                                                   \
    (int) ((p)->topic_len > 64 ? 64 : (p)->topic_len), (p)->topic


static const char  gms_events_nomem[] = "out of memory";


/* a member of an offset: "<topic>-<partition>": offset */
typedef struct {
    const char        *topic;       /* in the decoded JSON's key */
    size_t             topic_len;
    int64_t            partition;
    int64_t            offset;
} gms_events_part_t;

typedef struct {
    json_t             *json;
    gms_events_part_t  *parts;
    size_t              nparts;
} gms_events_offset_t;


static void gms_events_text(char *buf, size_t size, const char *fmt, ...);
static int gms_events_event(json_t *item, gms_event_t *e);
static int gms_events_classify(json_t *mcl, gms_event_t *e);
static int gms_events_token_info(json_t *mcl, gms_event_t *e);
static json_t *gms_events_aspect(json_t *mcl, const char **why);
static int gms_events_reject(gms_event_t *e, const char *why);
static json_t *gms_events_unwrap(json_t *v);
static int gms_events_string(json_t *obj, const char *key, const char **s,
    size_t *len);
static int gms_events_ms(json_t *v, int64_t *ms);
static int gms_events_urn(gms_event_t *e, const char *s, size_t len);
static int gms_events_offset_decode(const char *s, gms_events_offset_t *o);
static gms_events_part_t *gms_events_offset_find(gms_events_offset_t *o,
    gms_events_part_t *p);


int
gms_events_parse(const char *body, size_t len, gms_events_t *ev, char *err,
    size_t err_len)
{
    size_t         i, n, olen;
    json_t        *root, *offset, *count, *events, *msg;
    json_error_t   jerr;

    memset(ev, 0, sizeof(gms_events_t));

    root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);

    if (root == NULL) {
        gms_events_text(err, err_len, "not JSON: %s", jerr.text);
        return -1;
    }

    if (!json_is_object(root)) {
        gms_events_text(err, err_len, "not a JSON object");
        goto failed;
    }

    offset = json_object_get(root, "offsetId");

    if (!json_is_string(offset)) {
        msg = json_object_get(root, "errorMessage");

        if (json_is_string(msg)) {
            gms_events_text(err, err_len,
                            "no offsetId: errorMessage \"%.200s\"",
                            json_string_value(msg));

        } else {
            gms_events_text(err, err_len, "offsetId is %s",
                            offset ? "not a string" : "missing");
        }

        goto failed;
    }

    olen = json_string_length(offset);

    if (olen == 0 || olen > GMS_EVENTS_OFFSET_MAX
        || strlen(json_string_value(offset)) != olen)
    {
        gms_events_text(err, err_len, "offsetId is empty, longer than %d "
                        "bytes, or holds a NUL", GMS_EVENTS_OFFSET_MAX);
        goto failed;
    }

    events = json_object_get(root, "events");

    if (!json_is_array(events)) {
        gms_events_text(err, err_len, "events is %s",
                        events ? "not an array" : "missing");
        goto failed;
    }

    n = json_array_size(events);

    if (n > GMS_EVENTS_MAX) {
        gms_events_text(err, err_len, "%zu events, more than %d", n,
                        GMS_EVENTS_MAX);
        goto failed;
    }

    count = json_object_get(root, "count");

    if (!json_is_integer(count)) {
        gms_events_text(err, err_len, "count is %s",
                        count ? "not an integer" : "missing");
        goto failed;
    }

    if (json_integer_value(count) < 0
        || (uint64_t) json_integer_value(count) != n)
    {
        gms_events_text(err, err_len, "count %lld, but %zu events",
                        (long long) json_integer_value(count), n);
        goto failed;
    }

    ev->count = (int64_t) n;
    ev->offset = strdup(json_string_value(offset));

    if (n > 0) {
        ev->events = calloc(n, sizeof(gms_event_t));
    }

    if (ev->offset == NULL || (n > 0 && ev->events == NULL)) {
        gms_events_text(err, err_len, "out of memory");
        goto failed;
    }

    for (i = 0; i < n; i++) {
        ev->nevents++;

        if (gms_events_event(json_array_get(events, i), &ev->events[i]) != 0) {
            gms_events_text(err, err_len, "out of memory");
            goto failed;
        }
    }

    json_decref(root);

    return 0;

failed:

    gms_events_free(ev);
    json_decref(root);

    return -1;
}


void
gms_events_free(gms_events_t *ev)
{
    size_t  i;

    for (i = 0; i < ev->nevents; i++) {
        free(ev->events[i].urn);
    }

    free(ev->events);
    free(ev->offset);

    memset(ev, 0, sizeof(gms_events_t));
}


/*
 * A text for err or why: printable ASCII only (jansson's messages and the
 * offsets' topics quote what they were given), never more than size.
 */

static void
gms_events_text(char *buf, size_t size, const char *fmt, ...)
{
    char     *p;
    va_list   args;

    if (buf == NULL || size == 0) {
        return;
    }

    va_start(args, fmt);
    vsnprintf(buf, size, fmt, args);
    va_end(args);

    for (p = buf; *p; p++) {
        if ((unsigned char) (*p - 0x20) >= 0x5f) {
            *p = '?';
        }
    }
}


/* one element of events: 0, or -1 when out of memory */

static int
gms_events_event(json_t *item, gms_event_t *e)
{
    int           rc;
    json_t       *mcl, *created;
    const char   *value, *type;

    if (!json_is_object(item)) {
        return gms_events_reject(e, "an event is not an object");
    }

    /* ExternalEventsService writes application/json, the only one */
    if (gms_events_string(item, "contentType", &type, NULL) < 0
        || (type != NULL && strcmp(type, "application/json") != 0))
    {
        return gms_events_reject(e, "an event's contentType is not "
                                 "application/json");
    }

    if (gms_events_string(item, "value", &value, NULL) <= 0) {
        return gms_events_reject(e, "an event's value is not a string");
    }

    mcl = json_loads(value, JSON_REJECT_DUPLICATES, NULL);

    if (!json_is_object(mcl)) {
        json_decref(mcl);
        return gms_events_reject(e, "an event's value is not a JSON object");
    }

    /* created: a union with null in Avro; AuditStamp.time a long */
    created = gms_events_unwrap(json_object_get(mcl, "created"));

    if (created != NULL && !json_is_null(created)
        && (!json_is_object(created)
            || gms_events_ms(json_object_get(created, "time"), &e->time) != 0))
    {
        json_decref(mcl);
        return gms_events_reject(e, "created.time is not milliseconds since "
                                 "the epoch");
    }

    rc = gms_events_classify(mcl, e);

    json_decref(mcl);

    return rc;
}


/*
 * What gms-token follow acts on, by entityType and aspectName
 * (metadata-models/src/main/resources/entity-registry.yml):
 *
 *   - dataHubAccessToken DELETE, any aspect: the token revoked
 *     (RevokeAccessTokenResolver, StatefulTokenService.revokeAccessToken:
 *     EntityService.deleteUrn, the key and dataHubAccessTokenInfo);
 *   - dataHubAccessToken dataHubAccessTokenInfo written whole: the token;
 *   - corpuser corpUserStatus, status (soft removal), corpUserKey: the
 *     user, read again;
 *   - corpuser groupMembership, nativeGroupMembership, roleMembership, any
 *     aspect of corpGroup, dataHubPolicy and dataHubRole: the privileges;
 *     all but a policy's may change who is in a group or a role (members).
 */

static int
gms_events_classify(json_t *mcl, gms_event_t *e)
{
    size_t       len;
    const char  *type, *urn, *change, *aspect;

    if (gms_events_string(mcl, "entityType", &type, NULL) <= 0) {
        return gms_events_reject(e, "no entityType");
    }

    if (gms_events_string(mcl, "entityUrn", &urn, &len) <= 0) {
        return gms_events_reject(e, "no entityUrn");
    }

    if (gms_events_string(mcl, "changeType", &change, NULL) <= 0) {
        return gms_events_reject(e, "no changeType");
    }

    if (gms_events_string(mcl, "aspectName", &aspect, NULL) < 0) {
        return gms_events_reject(e, "aspectName is not a string");
    }

    if (strcmp(type, "dataHubAccessToken") == 0) {

        if (!gms_events_prefix(urn, len, GMS_EVENTS_TOKEN_URN)
            || !gms_token_id_valid(urn + sizeof(GMS_EVENTS_TOKEN_URN) - 1,
                                   len - (sizeof(GMS_EVENTS_TOKEN_URN) - 1)))
        {
            return gms_events_reject(e, "a token's URN does not end in a "
                                     "token id");
        }

        memcpy(e->id, urn + sizeof(GMS_EVENTS_TOKEN_URN) - 1,
               GMS_TOKEN_ID_LEN + 1);

        if (strcmp(change, "DELETE") == 0) {
            e->kind = GMS_EVENT_TOKEN_DELETE;
            return 0;
        }

        if (aspect == NULL) {
            return gms_events_reject(e, "a token's change names no aspect");
        }

        if (strcmp(aspect, "dataHubAccessTokenInfo") != 0) {
            e->id[0] = '\0';
            e->kind = GMS_EVENT_IGNORED;
            return 0;
        }

        /* these carry the whole aspect; a PATCH, or a type to come, not */
        if (strcmp(change, "UPSERT") != 0 && strcmp(change, "CREATE") != 0
            && strcmp(change, "CREATE_ENTITY") != 0
            && strcmp(change, "UPDATE") != 0
            && strcmp(change, "RESTATE") != 0)
        {
            return gms_events_reject(e, "a token's info changed by neither "
                                     "UPSERT, CREATE nor RESTATE");
        }

        return gms_events_token_info(mcl, e);
    }

    if (strcmp(type, "corpuser") == 0) {

        if (aspect == NULL) {
            return gms_events_reject(e, "a user's change names no aspect");
        }

        if (strcmp(aspect, "corpUserStatus") == 0
            || strcmp(aspect, "status") == 0
            || strcmp(aspect, "corpUserKey") == 0)
        {
            if (!gms_events_user(urn, len)) {
                return gms_events_reject(e, "a corpuser's URN is not a "
                                         "user's");
            }

            e->kind = GMS_EVENT_USER;
            return gms_events_urn(e, urn, len);
        }

        if (strcmp(aspect, "groupMembership") == 0
            || strcmp(aspect, "nativeGroupMembership") == 0
            || strcmp(aspect, "roleMembership") == 0)
        {
            e->kind = GMS_EVENT_PRIVILEGES;
            e->members = 1;
        }

        return 0;
    }

    if (strcmp(type, "dataHubPolicy") == 0) {
        e->kind = GMS_EVENT_PRIVILEGES;

    } else if (strcmp(type, "corpGroup") == 0
               || strcmp(type, "dataHubRole") == 0)
    {
        e->kind = GMS_EVENT_PRIVILEGES;
        e->members = 1;
    }

    return 0;
}


/* DataHubAccessTokenInfo.pdl: actorUrn, createdAt, expiresAt (optional) */

static int
gms_events_token_info(json_t *mcl, gms_event_t *e)
{
    int          rc;
    json_t      *info, *v;
    size_t       len;
    const char  *why, *actor;

    info = gms_events_aspect(mcl, &why);

    if (info == NULL) {
        return gms_events_reject(e, why);
    }

    if (gms_events_string(info, "actorUrn", &actor, &len) <= 0) {
        json_decref(info);
        return gms_events_reject(e, "a token's info has no actorUrn");
    }

    if (!gms_events_user(actor, len)) {
        json_decref(info);
        return gms_events_reject(e, "a token's actorUrn is not a user's");
    }

    v = json_object_get(info, "createdAt");

    if (v != NULL && !json_is_null(v) && gms_events_ms(v, &e->created_at) != 0)
    {
        json_decref(info);
        return gms_events_reject(e, "a token's createdAt is not milliseconds "
                                 "since the epoch");
    }

    v = json_object_get(info, "expiresAt");

    if (v != NULL && !json_is_null(v) && gms_events_ms(v, &e->expires_at) != 0)
    {
        json_decref(info);
        return gms_events_reject(e, "a token's expiresAt is not milliseconds "
                                 "since the epoch");
    }

    e->kind = GMS_EVENT_TOKEN_PUT;
    rc = gms_events_urn(e, actor, len);

    json_decref(info);

    return rc;
}


/*
 * The MCL's aspect, parsed: a new reference, or NULL and *why.
 *
 * GenericAspect.value is Avro "bytes", which Avro's JsonEncoder writes
 * one character per byte (U+0000 to U+00FF): an aspect's UTF-8 text comes
 * with each of its bytes a character.  The bytes are taken back when no
 * character is above U+00FF and they parse; otherwise (the plain form,
 * whose value is the text itself) the text is parsed as it is.
 */

static json_t *
gms_events_aspect(json_t *mcl, const char **why)
{
    int                   latin1;
    size_t                i, n, len;
    json_t               *aspect, *info;
    const char           *value, *type;
    unsigned char        *bytes;
    const unsigned char  *p;

    aspect = gms_events_unwrap(json_object_get(mcl, "aspect"));

    if (!json_is_object(aspect)) {
        *why = "a token's info has no aspect";
        return NULL;
    }

    if (gms_events_string(aspect, "contentType", &type, NULL) < 0
        || (type != NULL && strcmp(type, "application/json") != 0))
    {
        *why = "a token's info is not application/json";
        return NULL;
    }

    if (gms_events_string(aspect, "value", &value, &len) <= 0) {
        *why = "a token's info has no value";
        return NULL;
    }

    p = (const unsigned char *) value;
    latin1 = 0;

    /* jansson's strings are valid UTF-8: 0xc2 and 0xc3 lead a pair */
    for (i = 0; i < len; i++) {
        if (p[i] < 0x80) {
            continue;
        }

        if (p[i] != 0xc2 && p[i] != 0xc3) {
            break;
        }

        latin1 = 1;
        i++;
    }

    bytes = NULL;
    info = NULL;

    if (latin1 && i == len) {
        bytes = malloc(len);
        if (bytes == NULL) {
            *why = gms_events_nomem;
            return NULL;
        }

        for (i = 0, n = 0; i < len; i++) {
            if (p[i] < 0x80) {
                bytes[n++] = p[i];

            } else {
                bytes[n++] = (unsigned char) ((p[i] & 0x03) << 6
                                              | (p[i + 1] & 0x3f));
                i++;
            }
        }

        info = json_loadb((const char *) bytes, n, JSON_REJECT_DUPLICATES,
                          NULL);
    }

    free(bytes);

    if (info == NULL) {
        info = json_loadb(value, len, JSON_REJECT_DUPLICATES, NULL);
    }

    if (!json_is_object(info)) {
        json_decref(info);
        *why = "a token's info is not a JSON object";
        return NULL;
    }

    return info;
}


static int
gms_events_reject(gms_event_t *e, const char *why)
{
    if (why == gms_events_nomem) {
        return -1;
    }

    free(e->urn);
    e->urn = NULL;
    e->urn_len = 0;
    e->id[0] = '\0';
    e->created_at = 0;
    e->expires_at = 0;
    e->kind = GMS_EVENT_REJECTED;
    e->why = why;

    return 0;
}


/*
 * A union's value: {"string": "..."}, {"long": 1}, {"<full.Name>": {...}}
 * (Avro's JSON encoding); anything else is the plain form, as it is.  A
 * plain record has more than one field, or none of these names.
 */

static json_t *
gms_events_unwrap(json_t *v)
{
    const char  *key;

    if (!json_is_object(v) || json_object_size(v) != 1) {
        return v;
    }

    key = json_object_iter_key(json_object_iter(v));

    if (strcmp(key, "string") == 0 || strcmp(key, "long") == 0
        || strcmp(key, "int") == 0 || strcmp(key, "bytes") == 0
        || strchr(key, '.') != NULL)
    {
        return json_object_iter_value(json_object_iter(v));
    }

    return v;
}


/*
 * A string member, a union's or plain: 1 and *s (NUL-free, not empty),
 * 0 and *s NULL when absent or null, -1 for anything else.
 */

static int
gms_events_string(json_t *obj, const char *key, const char **s, size_t *len)
{
    json_t  *v;

    *s = NULL;

    v = gms_events_unwrap(json_object_get(obj, key));

    if (v == NULL || json_is_null(v)) {
        return 0;
    }

    if (!json_is_string(v) || json_string_length(v) == 0
        || strlen(json_string_value(v)) != json_string_length(v))
    {
        return -1;
    }

    *s = json_string_value(v);

    if (len) {
        *len = json_string_length(v);
    }

    return 1;
}


/* milliseconds since the epoch, a union's or plain: 0 to year 9999 */

static int
gms_events_ms(json_t *v, int64_t *ms)
{
    v = gms_events_unwrap(v);

    if (!json_is_integer(v) || json_integer_value(v) < 0
        || json_integer_value(v) > GMS_EVENTS_MS_MAX)
    {
        return -1;
    }

    *ms = json_integer_value(v);

    return 0;
}


static int
gms_events_urn(gms_event_t *e, const char *s, size_t len)
{
    e->urn = malloc(len + 1);
    if (e->urn == NULL) {
        return -1;
    }

    memcpy(e->urn, s, len + 1);
    e->urn_len = len;

    return 0;
}


long
gms_events_next_limit(long asked, size_t got, long max, unsigned *full)
{
    long  next;

    if (max < 1) {
        max = 1;
    }

    if (asked < 1) {
        asked = 1;
    }

    if (got < (size_t) asked) {
        *full = 0;
        return 1;
    }

    if (*full < GMS_EVENTS_BACKLOG) {
        (*full)++;
    }

    if (*full < GMS_EVENTS_BACKLOG) {
        return 1;
    }

    next = asked > max / 2 ? max : asked * 2;

    return next < max ? next : max;
}


/*
 * Offsets in a Kafka partition are consecutive: the offsets passed, summed
 * over the partitions, are the events returned, and more means events
 * were skipped (retention dropped them).  A partition that appears, goes
 * missing or goes back is a gap too.  pgQueue's offsets
 * (PgQueueExternalEventsPollHandler) have the same form but skip: a gap
 * there is the follower's reconciliation, never a loss.
 */

gms_events_offset_e
gms_events_offset_check(const char *old, const char *next, int64_t count,
    char *why, size_t why_len)
{
    size_t                i;
    int64_t               sum, d;
    gms_events_part_t    *p, *q;
    gms_events_offset_e   rc;
    gms_events_offset_t   o, n;

    if (why != NULL && why_len > 0) {
        why[0] = '\0';
    }

    if (old == NULL || old[0] == '\0') {
        return GMS_EVENTS_OFFSET_OK;
    }

    memset(&o, 0, sizeof(gms_events_offset_t));
    memset(&n, 0, sizeof(gms_events_offset_t));

    if (gms_events_offset_decode(old, &o) != 0) {
        gms_events_text(why, why_len, "the kept offset is not Kafka's "
                        "partitions and offsets");
        rc = GMS_EVENTS_OFFSET_OPAQUE;
        goto done;
    }

    if (next == NULL || gms_events_offset_decode(next, &n) != 0) {
        gms_events_text(why, why_len, "the new offset is not Kafka's "
                        "partitions and offsets");
        rc = GMS_EVENTS_OFFSET_OPAQUE;
        goto done;
    }

    if (count < 0) {
        count = 0;
    }

    rc = GMS_EVENTS_OFFSET_GAP;
    sum = 0;

    for (i = 0; i < o.nparts; i++) {
        p = &o.parts[i];
        q = gms_events_offset_find(&n, p);

        if (q == NULL) {
            gms_events_text(why, why_len, "partition %.*s-%lld is gone",
                            gms_events_topic(p), (long long) p->partition);
            goto done;
        }

        if (q->offset < p->offset) {
            gms_events_text(why, why_len, "partition %.*s-%lld went back "
                            "from %lld to %lld",
                            gms_events_topic(p), (long long) p->partition,
                            (long long) p->offset, (long long) q->offset);
            goto done;
        }

        /* both are 0 to INT64_MAX: no overflow; the sum saturates */
        d = q->offset - p->offset;
        sum = (d > INT64_MAX - sum) ? INT64_MAX : sum + d;
    }

    for (i = 0; i < n.nparts; i++) {
        p = &n.parts[i];

        if (gms_events_offset_find(&o, p) == NULL) {
            gms_events_text(why, why_len, "partition %.*s-%lld is new",
                            gms_events_topic(p), (long long) p->partition);
            goto done;
        }
    }

    if (sum > count) {
        gms_events_text(why, why_len, "the offsets passed %lld events, the "
                        "poll returned %lld: %lld skipped (retention)",
                        (long long) sum, (long long) count,
                        (long long) (sum - count));
        goto done;
    }

    if (sum < count) {
        gms_events_text(why, why_len, "the offsets passed %lld events, the "
                        "poll returned %lld: not Kafka's offsets",
                        (long long) sum, (long long) count);
        rc = GMS_EVENTS_OFFSET_OPAQUE;
        goto done;
    }

    rc = GMS_EVENTS_OFFSET_OK;

done:

    free(o.parts);
    free(n.parts);
    json_decref(o.json);
    json_decref(n.json);

    return rc;
}


/*
 * ExternalEventsOffsetCodec.decodeOffsetId: Java's basic base64 decoder
 * (the standard alphabet, padding optional, nothing else), then a JSON
 * object of longs whose keys split at their last '-' into a topic and a
 * partition of digits (Integer.parseInt: at most 2^31 - 1).
 */

static int
gms_events_offset_decode(const char *s, gms_events_offset_t *o)
{
    int                 r;
    char                c;
    size_t              i, len, pad, klen;
    json_t             *v;
    int64_t             part;
    const char         *key, *dash;
    unsigned char      *b64, *raw;
    gms_events_part_t  *p;

    len = strnlen(s, GMS_EVENTS_OFFSET_MAX + 1);

    if (len > GMS_EVENTS_OFFSET_MAX) {
        return -1;
    }

    for (pad = 0; pad < 2 && pad < len && s[len - 1 - pad] == '='; pad++) {
        /* void */
    }

    len -= pad;

    if (len == 0 || len % 4 == 1 || (pad > 0 && (len + pad) % 4 != 0)) {
        return -1;
    }

    for (i = 0; i < len; i++) {
        c = s[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
              || (c >= '0' && c <= '9') || c == '+' || c == '/'))
        {
            return -1;
        }
    }

    pad = (4 - len % 4) % 4;

    b64 = malloc(len + pad);
    raw = malloc((len + pad) / 4 * 3 + 1);

    if (b64 == NULL || raw == NULL) {
        free(b64);
        free(raw);
        return -1;
    }

    memcpy(b64, s, len);
    memset(b64 + len, '=', pad);

    /* EVP_DecodeBlock counts the padding's bytes as zeros */
    r = EVP_DecodeBlock(raw, b64, (int) (len + pad));

    free(b64);

    if (r < (int) pad) {
        free(raw);
        return -1;
    }

    o->json = json_loadb((const char *) raw, (size_t) r - pad,
                         JSON_REJECT_DUPLICATES, NULL);

    free(raw);

    if (!json_is_object(o->json)
        || json_object_size(o->json) > GMS_EVENTS_PARTITIONS_MAX)
    {
        return -1;
    }

    o->parts = calloc(json_object_size(o->json) + 1,
                      sizeof(gms_events_part_t));
    if (o->parts == NULL) {
        return -1;
    }

    json_object_foreach(o->json, key, v) {
        klen = strlen(key);
        dash = strrchr(key, '-');

        if (dash == NULL || dash == key + klen - 1
            || !json_is_integer(v) || json_integer_value(v) < 0)
        {
            return -1;
        }

        part = 0;

        for (i = (size_t) (dash + 1 - key); i < klen; i++) {
            if (key[i] < '0' || key[i] > '9') {
                return -1;
            }

            part = part * 10 + (key[i] - '0');

            if (part > INT32_MAX) {
                return -1;
            }
        }

        p = &o->parts[o->nparts];
        p->topic = key;
        p->topic_len = dash - key;
        p->partition = part;
        p->offset = json_integer_value(v);

        /* "t-1" and "t-01" are one partition to DataHub: which one wins? */
        if (gms_events_offset_find(o, p) != NULL) {
            return -1;
        }

        o->nparts++;
    }

    return 0;
}


static gms_events_part_t *
gms_events_offset_find(gms_events_offset_t *o, gms_events_part_t *p)
{
    size_t              i;
    gms_events_part_t  *q;

    for (i = 0; i < o->nparts; i++) {
        q = &o->parts[i];

        if (q->partition == p->partition && q->topic_len == p->topic_len
            && memcmp(q->topic, p->topic, p->topic_len) == 0)
        {
            return q;
        }
    }

    return NULL;
}

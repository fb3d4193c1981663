
/*
 * libFuzzer: DataHub's Events API answers (gms_events_parse), given as
 * they come and as the value of one event, so that the Metadata Change
 * Log's classifier is reached without a JSON string inside a JSON string;
 * and two offsets (gms_events_offset_check), the input cut at its first
 * newline.
 */


#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_events.h"
#include "gms_token.h"


static void
check_answer(const char *body, size_t len)
{
    int           rc;
    char          err[128], why[128];
    size_t        i;
    gms_event_t  *e;
    gms_events_t  ev;

    memset(err, 'x', sizeof(err));

    rc = gms_events_parse(body, len, &ev, err, sizeof(err));

    if (rc != 0) {
        /* unusable: nothing kept, a text that ends in the buffer */
        if (rc != -1 || ev.offset != NULL || ev.events != NULL
            || ev.nevents != 0 || memchr(err, '\0', sizeof(err)) == NULL)
        {
            abort();
        }

        return;
    }

    if (ev.offset == NULL || ev.offset[0] == '\0'
        || strlen(ev.offset) > GMS_EVENTS_OFFSET_MAX
        || ev.count < 0 || (size_t) ev.count != ev.nevents
        || ev.nevents > GMS_EVENTS_MAX)
    {
        abort();
    }

    for (i = 0; i < ev.nevents; i++) {
        e = &ev.events[i];

        if (e->time < 0 || e->time > GMS_EVENTS_MS_MAX
            || e->created_at < 0 || e->created_at > GMS_EVENTS_MS_MAX
            || e->expires_at < 0 || e->expires_at > GMS_EVENTS_MS_MAX)
        {
            abort();
        }

        switch (e->kind) {

        case GMS_EVENT_TOKEN_PUT:
        case GMS_EVENT_USER:
            /* a user's URN, whole, what a cache entry may hold */
            if (e->urn == NULL || strlen(e->urn) != e->urn_len
                || strncmp(e->urn, "urn:li:corpuser:", 16) != 0
                || e->urn_len <= 16
                || !gms_token_actor_valid(e->urn, e->urn_len))
            {
                abort();
            }

            if (e->kind == GMS_EVENT_USER) {
                break;
            }

            /* fall through */

        case GMS_EVENT_TOKEN_DELETE:
            if (!gms_token_id_valid(e->id, strlen(e->id))
                || (e->kind == GMS_EVENT_TOKEN_DELETE && e->urn != NULL))
            {
                abort();
            }

            break;

        case GMS_EVENT_IGNORED:
        case GMS_EVENT_PRIVILEGES:
            if (e->urn != NULL || e->id[0] != '\0') {
                abort();
            }

            break;

        case GMS_EVENT_REJECTED:
            if (e->why == NULL || e->urn != NULL || e->id[0] != '\0') {
                abort();
            }

            break;

        default:
            abort();
        }
    }

    /* the same offset again after an empty poll is never a gap */
    if (gms_events_offset_check(ev.offset, ev.offset, 0, why, sizeof(why))
        == GMS_EVENTS_OFFSET_GAP)
    {
        abort();
    }

    gms_events_free(&ev);
}


static void
check_offsets(const unsigned char *data, size_t size)
{
    char                 *old, *next, why[64];
    const unsigned char  *nl;
    gms_events_offset_e   rc;

    nl = memchr(data, '\n', size);
    if (nl == NULL) {
        return;
    }

    old = strndup((const char *) data, nl - data);
    next = strndup((const char *) nl + 1, size - (nl + 1 - data));

    if (old == NULL || next == NULL) {
        abort();
    }

    memset(why, 'x', sizeof(why));

    rc = gms_events_offset_check(old, next, (int64_t) (size % 5) - 1, why,
                                 sizeof(why));

    if ((rc != GMS_EVENTS_OFFSET_OK && rc != GMS_EVENTS_OFFSET_GAP
         && rc != GMS_EVENTS_OFFSET_OPAQUE)
        || memchr(why, '\0', sizeof(why)) == NULL)
    {
        abort();
    }

    if (gms_events_offset_check(next, next, 0, NULL, 0)
        == GMS_EVENTS_OFFSET_GAP)
    {
        abort();
    }

    free(old);
    free(next);
}


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char    *body;
    json_t  *answer, *value;

    check_answer((const char *) data, size);
    check_offsets(data, size);

    /* the input as one event's value (jansson: valid UTF-8 only) */
    value = json_stringn((const char *) data, size);
    if (value == NULL) {
        return 0;
    }

    answer = json_pack("{s:s,s:i,s:[{s:s,s:o}]}", "offsetId", "e30=",
                       "count", 1, "events", "contentType",
                       "application/json", "value", value);
    body = json_dumps(answer, JSON_COMPACT);
    json_decref(answer);

    if (body == NULL) {
        abort();
    }

    check_answer(body, strlen(body));
    free(body);

    return 0;
}

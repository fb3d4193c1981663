
/*
 * DataHub's Events API (1.3.0 and later), free of nginx: a poll's answer
 * (ExternalEventsResponse), its Metadata Change Log records classified for
 * gms-token follow, and two offsets compared for a gap
 * (ExternalEventsOffsetCodec's form).  Needs jansson and libcrypto.
 */


#ifndef _GMS_EVENTS_H_INCLUDED_
#define _GMS_EVENTS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "gms_contract.h"


/* a poll's events at most: GMS caps limit at 5000 (ExternalEventsController) */
#define GMS_EVENTS_MAX         10000

/* an offsetId longer than this is no answer of GMS's */
#define GMS_EVENTS_OFFSET_MAX  65536

/* the partitions an offset may name; more: opaque */
#define GMS_EVENTS_PARTITIONS_MAX  1024

/* the latest time an event may carry: 9999-12-31T23:59:59.999Z */
#define GMS_EVENTS_MS_MAX      253402300799999LL


typedef enum {
    GMS_EVENT_IGNORED = 0,      /* an entity or aspect the cache lacks */
    GMS_EVENT_TOKEN_PUT,        /* dataHubAccessTokenInfo written: a token */
    GMS_EVENT_TOKEN_DELETE,     /* an aspect of a dataHubAccessToken gone */
    GMS_EVENT_USER,             /* a corpuser's status, removal or key */
    GMS_EVENT_PRIVILEGES,       /* membership, group, role or policy */
    GMS_EVENT_REJECTED          /* malformed: why says how */
} gms_event_kind_e;


typedef struct {
    gms_event_kind_e   kind;
    char               id[GMS_TOKEN_ID_LEN + 1];  /* TOKEN_*: the token id */
    char              *urn;        /* USER: the user; TOKEN_PUT: actorUrn;
                                      malloc'ed, NUL-terminated, or NULL */
    size_t             urn_len;
    int64_t            created_at; /* TOKEN_PUT: ms since the epoch; 0: none */
    int64_t            expires_at; /* TOKEN_PUT: ms; 0: never */
    int64_t            time;       /* the MCL's created.time, ms; 0: none */
    unsigned           members:1;  /* PRIVILEGES: who is in a group or a
                                      role may have changed (all but a
                                      policy's own change) */
    const char        *why;        /* REJECTED: a static text */
} gms_event_t;


typedef struct {
    char              *offset;     /* offsetId, malloc'ed, NUL-terminated */
    int64_t            count;
    gms_event_t       *events;
    size_t             nevents;
} gms_events_t;


typedef enum {
    GMS_EVENTS_OFFSET_OK = 0,   /* consecutive: nothing skipped */
    GMS_EVENTS_OFFSET_GAP,      /* events skipped (retention), a partition
                                   new, missing or gone back */
    GMS_EVENTS_OFFSET_OPAQUE    /* not ExternalEventsOffsetCodec's form */
} gms_events_offset_e;


/*
 * 0: parsed (single events may be REJECTED); -1: the answer as a whole is
 * unusable (not JSON, no offsetId string, events not an array, count
 * missing or not matching the events, more than GMS_EVENTS_MAX events):
 * err says why
 */
int gms_events_parse(const char *body, size_t len, gms_events_t *ev,
    char *err, size_t err_len);
void gms_events_free(gms_events_t *ev);

/*
 * The limit of the next poll, after one that asked for "asked" events
 * and had "got" (at most "max"); *full counts the polls in a row that
 * had all they asked for.  GMS answers a poll once its limit came or its
 * timeout ran out (KafkaExternalEventsPollHandler): at limit 1 it
 * answers each change as it is made, at more a change may wait for the
 * others.  So the limit is 1, and fewer than asked (the timeout ran out:
 * nothing more was there) brings it back to 1; only GMS_EVENTS_BACKLOG
 * full polls in a row (a backlog, not one change's few events) double
 * it, up to max.
 */
#define GMS_EVENTS_BACKLOG     8

long gms_events_next_limit(long asked, size_t got, long max,
    unsigned *full);

/*
 * old NULL or "": the first poll, OK.  count: the events the poll
 * returned.  why: for GAP and OPAQUE, a short text
 */
gms_events_offset_e gms_events_offset_check(const char *old,
    const char *next, int64_t count, char *why, size_t why_len);


#endif /* _GMS_EVENTS_H_INCLUDED_ */


/*
 * gms-token follow's journal of what the change stream changed.  The
 * stream applies a change as it arrives (a token deleted, a user read
 * again), while a token cycle or the privileges thread may be reading
 * GMS for seconds or minutes: what such a cycle read before the change
 * is older than what the stream wrote, and must not be written over it.
 *
 * A cycle takes a sequence number when its reads begin (begin), the
 * stream marks each token and user it changed (mark: the next number),
 * and the cycle, before it writes a token or a user, asks whether the
 * stream marked it since (since): if so, it leaves it as the stream left
 * it.  A mark is kept only while some cycle under way began before it:
 * with none under way, nothing is kept; at a cycle's end, the marks
 * older than every cycle still under way are dropped.  Memory is bounded
 * by the marks made during the longest cycle, and by
 * GMS_FOLLOW_JOURNAL_MAX: past it (or with no memory), every key counts
 * as marked, so that the cycles under way leave everything to the
 * stream and the next cycle (a lost write, never an older one).
 *
 * Lookups are an open-addressing table of the entries' indexes, by a
 * SipHash of the key under a random key of the journal's own: a token
 * cycle asks about each of 100,000 tokens, and the keys come from
 * events that anyone who can write to DataHub can shape.
 */


#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "gms_id_memo.h"
#include "gms_follow_journal.h"


static gms_follow_journal_entry_t *gms_follow_journal_find(
    gms_follow_journal_t *j, gms_follow_journal_e kind, const char *key,
    size_t len, uint64_t hash);
static int gms_follow_journal_add(gms_follow_journal_t *j,
    gms_follow_journal_e kind, const char *key, size_t len, uint64_t hash);
static int gms_follow_journal_index(gms_follow_journal_t *j, size_t size);
static uint64_t gms_follow_journal_hash(gms_follow_journal_t *j,
    gms_follow_journal_e kind, const char *key, size_t len);
static int gms_follow_journal_oldest(gms_follow_journal_t *j,
    uint64_t *oldest);
static void gms_follow_journal_prune(gms_follow_journal_t *j);


int
gms_follow_journal_init(gms_follow_journal_t *j)
{
    int            rc;
    unsigned char  key[16];

    memset(j, 0, sizeof(gms_follow_journal_t));

    if (RAND_bytes(key, sizeof(key)) != 1) {
        return EIO;
    }

    memcpy(j->sipkey, key, sizeof(key));

    rc = pthread_mutex_init(&j->mutex, NULL);
    if (rc != 0) {
        return rc;
    }

    rc = pthread_mutex_init(&j->writes, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&j->mutex);
    }

    return rc;
}


void
gms_follow_journal_free(gms_follow_journal_t *j)
{
    size_t  i;

    for (i = 0; i < j->n; i++) {
        free(j->entries[i].key);
    }

    free(j->entries);
    free(j->index);
    pthread_mutex_destroy(&j->writes);
    pthread_mutex_destroy(&j->mutex);
}


/* a cycle starts its reads: what it reads is as of the seq returned */

uint64_t
gms_follow_journal_begin(gms_follow_journal_t *j, unsigned slot)
{
    uint64_t  seq;

    pthread_mutex_lock(&j->mutex);

    seq = j->seq;

    if (slot < GMS_FOLLOW_JOURNAL_SLOTS) {
        j->begun[slot] = seq + 1;
    }

    pthread_mutex_unlock(&j->mutex);

    return seq;
}


void
gms_follow_journal_end(gms_follow_journal_t *j, unsigned slot)
{
    pthread_mutex_lock(&j->mutex);

    if (slot < GMS_FOLLOW_JOURNAL_SLOTS) {
        j->begun[slot] = 0;
    }

    gms_follow_journal_prune(j);

    pthread_mutex_unlock(&j->mutex);
}


void
gms_follow_journal_mark(gms_follow_journal_t *j, gms_follow_journal_e kind,
    const char *key, size_t len)
{
    uint64_t                     hash, oldest;
    gms_follow_journal_entry_t  *e;

    pthread_mutex_lock(&j->mutex);

    j->seq++;

    /* a cycle that begins later reads what the stream wrote */
    if (gms_follow_journal_oldest(j, &oldest) == 0) {
        goto done;
    }

    hash = gms_follow_journal_hash(j, kind, key, len);
    e = gms_follow_journal_find(j, kind, key, len, hash);

    if (e != NULL) {
        e->seq = j->seq;

    } else if (gms_follow_journal_add(j, kind, key, len, hash) != 0) {
        j->overflow = j->seq;
    }

done:

    pthread_mutex_unlock(&j->mutex);
}


/* 1: the stream marked it after seq (a cycle's, from begin) */

int
gms_follow_journal_since(gms_follow_journal_t *j, gms_follow_journal_e kind,
    const char *key, size_t len, uint64_t seq)
{
    int                          rc;
    gms_follow_journal_entry_t  *e;

    pthread_mutex_lock(&j->mutex);

    if (j->overflow > seq) {
        rc = 1;

    } else if (j->n == 0) {
        rc = 0;

    } else {
        e = gms_follow_journal_find(j, kind, key, len,
                                    gms_follow_journal_hash(j, kind, key,
                                                            len));
        rc = e != NULL && e->seq > seq;
    }

    pthread_mutex_unlock(&j->mutex);

    return rc;
}


static gms_follow_journal_entry_t *
gms_follow_journal_find(gms_follow_journal_t *j, gms_follow_journal_e kind,
    const char *key, size_t len, uint64_t hash)
{
    size_t                       h, slot;
    gms_follow_journal_entry_t  *e;

    if (j->size == 0) {
        return NULL;
    }

    for (h = hash & (j->size - 1); /* void */ ; h = (h + 1) & (j->size - 1))
    {
        slot = j->index[h];

        if (slot == 0) {
            return NULL;
        }

        e = &j->entries[slot - 1];

        if (e->hash == hash && e->kind == kind && e->len == len
            && memcmp(e->key, key, len) == 0)
        {
            return e;
        }
    }
}


/* -1: no room (GMS_FOLLOW_JOURNAL_MAX) or no memory */

static int
gms_follow_journal_add(gms_follow_journal_t *j, gms_follow_journal_e kind,
    const char *key, size_t len, uint64_t hash)
{
    char                        *copy;
    size_t                       h, nalloc;
    gms_follow_journal_entry_t  *e;

    if (j->n >= GMS_FOLLOW_JOURNAL_MAX) {
        return -1;
    }

    if (j->n == j->nalloc) {
        nalloc = j->nalloc ? j->nalloc * 2 : 64;

        e = realloc(j->entries, nalloc * sizeof(gms_follow_journal_entry_t));
        if (e == NULL) {
            return -1;
        }

        j->entries = e;
        j->nalloc = nalloc;
    }

    if (2 * (j->n + 1) > j->size
        && gms_follow_journal_index(j, j->size ? j->size * 2 : 128) != 0)
    {
        return -1;
    }

    copy = malloc(len ? len : 1);
    if (copy == NULL) {
        return -1;
    }

    memcpy(copy, key, len);

    e = &j->entries[j->n++];
    e->key = copy;
    e->len = len;
    e->seq = j->seq;
    e->hash = hash;
    e->kind = kind;

    for (h = hash & (j->size - 1); j->index[h]; h = (h + 1) & (j->size - 1)) {
        /* void */
    }

    j->index[h] = j->n;

    return 0;
}


/* the index made again for the entries, of the size given */

static int
gms_follow_journal_index(gms_follow_journal_t *j, size_t size)
{
    size_t  i, h, *index;

    index = calloc(size, sizeof(size_t));
    if (index == NULL) {
        return -1;
    }

    for (i = 0; i < j->n; i++) {
        for (h = j->entries[i].hash & (size - 1); index[h];
             h = (h + 1) & (size - 1))
        {
            /* void */
        }

        index[h] = i + 1;
    }

    free(j->index);
    j->index = index;
    j->size = size;

    return 0;
}


static uint64_t
gms_follow_journal_hash(gms_follow_journal_t *j, gms_follow_journal_e kind,
    const char *key, size_t len)
{
    uint64_t  out[2];

    gms_id_memo_siphash128(j->sipkey, (const unsigned char *) key, len, out);

    return out[0] ^ ((uint64_t) kind * 0x9e3779b97f4a7c15ULL);
}


/* 0: no cycle under way; else 1, and the seq the oldest began at */

static int
gms_follow_journal_oldest(gms_follow_journal_t *j, uint64_t *oldest)
{
    int       any;
    unsigned  i;

    any = 0;
    *oldest = 0;

    for (i = 0; i < GMS_FOLLOW_JOURNAL_SLOTS; i++) {
        if (j->begun[i] && (!any || j->begun[i] - 1 < *oldest)) {
            *oldest = j->begun[i] - 1;
            any = 1;
        }
    }

    return any;
}


/* the marks no cycle under way can ask about dropped */

static void
gms_follow_journal_prune(gms_follow_journal_t *j)
{
    size_t    i, n;
    uint64_t  oldest;

    if (!gms_follow_journal_oldest(j, &oldest)) {
        oldest = j->seq;
    }

    if (j->overflow <= oldest) {
        j->overflow = 0;
    }

    for (n = 0, i = 0; i < j->n; i++) {
        if (j->entries[i].seq <= oldest) {
            free(j->entries[i].key);
            continue;
        }

        j->entries[n++] = j->entries[i];
    }

    if (n == j->n) {
        return;
    }

    j->n = n;

    if (n == 0) {
        free(j->entries);
        free(j->index);
        j->entries = NULL;
        j->index = NULL;
        j->nalloc = 0;
        j->size = 0;
        return;
    }

    if (gms_follow_journal_index(j, j->size) != 0) {
        /* no memory for an index: the cycles under way take all as marked */
        for (i = 0; i < j->n; i++) {
            free(j->entries[i].key);
        }

        j->n = 0;
        j->overflow = j->seq;
        memset(j->index, 0, j->size * sizeof(size_t));
    }
}


/*
 * The cache's writes of the token cycle and of the stream, one at a time
 * (begin 1, then 0): a token the stream deletes while a token cycle
 * writes its listing is either filtered out by that cycle (it asks the
 * journal inside) or deleted after the cycle wrote it, never written
 * back after its deletion; the same for a user the stream reads again
 * against the inactive users the cycle read.  A token cycle holds it for
 * its writes only (a second at 100,000 tokens), never across a GMS
 * request.
 */

void
gms_follow_journal_writes(gms_follow_journal_t *j, int begin)
{
    if (begin) {
        pthread_mutex_lock(&j->writes);

    } else {
        pthread_mutex_unlock(&j->writes);
    }
}


/*
 * gms-token follow: what the change stream changed, shared by the lease
 * holder's threads, so that a cycle whose reads began before a change
 * never writes its older view over it; gms_follow_journal.c.
 */


#ifndef _GMS_FOLLOW_JOURNAL_H_INCLUDED_
#define _GMS_FOLLOW_JOURNAL_H_INCLUDED_


#include <pthread.h>
#include <stddef.h>
#include <stdint.h>


typedef enum {
    GMS_FOLLOW_JOURNAL_TOKEN = 0,          /* a token's id */
    GMS_FOLLOW_JOURNAL_USER                /* a user's URN */
} gms_follow_journal_e;


/* the cycles that may be under way at once, each its slot */
#define GMS_FOLLOW_JOURNAL_SLOTS       4
#define GMS_FOLLOW_JOURNAL_TOKENS      0   /* the token cycle */
#define GMS_FOLLOW_JOURNAL_PRIVILEGES  1   /* the privileges thread */

/* marks kept at most while cycles are under way; past it, all is marked */
#define GMS_FOLLOW_JOURNAL_MAX         (1 << 20)


typedef struct {
    char                  *key;
    size_t                 len;
    uint64_t               seq;            /* its latest mark's */
    uint64_t               hash;
    gms_follow_journal_e   kind;
} gms_follow_journal_entry_t;


typedef struct {
    pthread_mutex_t              mutex;
    pthread_mutex_t              writes;   /* gms_follow_journal_writes */
    uint64_t                     seq;      /* the latest mark's */
    uint64_t                     begun[GMS_FOLLOW_JOURNAL_SLOTS];
                                           /* a cycle's seq + 1; 0: none */
    uint64_t                     overflow; /* every key marked at this seq
                                              (no memory, or too many) */
    uint64_t                     sipkey[2];
    gms_follow_journal_entry_t  *entries;  /* in no order */
    size_t                       n;
    size_t                       nalloc;
    size_t                      *index;    /* entries' index + 1, 0: free;
                                              open addressing */
    size_t                       size;     /* index's: a power of two */
} gms_follow_journal_t;


int gms_follow_journal_init(gms_follow_journal_t *j);
void gms_follow_journal_free(gms_follow_journal_t *j);
uint64_t gms_follow_journal_begin(gms_follow_journal_t *j, unsigned slot);
void gms_follow_journal_end(gms_follow_journal_t *j, unsigned slot);
void gms_follow_journal_mark(gms_follow_journal_t *j,
    gms_follow_journal_e kind, const char *key, size_t len);
int gms_follow_journal_since(gms_follow_journal_t *j,
    gms_follow_journal_e kind, const char *key, size_t len, uint64_t seq);
void gms_follow_journal_writes(gms_follow_journal_t *j, int begin);


#endif /* _GMS_FOLLOW_JOURNAL_H_INCLUDED_ */

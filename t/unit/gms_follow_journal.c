
/*
 * Unit tests of src/tool/gms_follow_journal.c: a mark counts for the
 * cycles that began before it and for no other, by kind and key; marks
 * no cycle under way can ask about are dropped; at 100,000 marks every
 * lookup still answers; past GMS_FOLLOW_JOURNAL_MAX, everything counts
 * as marked until the cycles under way end.
 */


#include <stdio.h>
#include <stdlib.h>

#include "tap.h"
#include "gms_follow_journal.h"


#define MANY  100000


static size_t
key(char *buf, size_t size, const char *prefix, size_t i)
{
    return (size_t) snprintf(buf, size, "%s%zu", prefix, i);
}


int
main(void)
{
    int                   bad;
    char                  k[64];
    size_t                i, len;
    uint64_t              s0, s1;
    gms_follow_journal_t  j;

    ok(gms_follow_journal_init(&j) == 0, "init");

    /* no cycle under way: nothing is kept */
    gms_follow_journal_mark(&j, GMS_FOLLOW_JOURNAL_USER, "urn:li:corpuser:a",
                            17);
    ok(j.n == 0, "a mark with no cycle under way is not kept");

    s0 = gms_follow_journal_begin(&j, GMS_FOLLOW_JOURNAL_TOKENS);
    ok(gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER,
                                "urn:li:corpuser:a", 17, s0) == 0,
       "a mark before a cycle began does not count for it");

    gms_follow_journal_mark(&j, GMS_FOLLOW_JOURNAL_USER, "urn:li:corpuser:b",
                            17);
    ok(gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER,
                                "urn:li:corpuser:b", 17, s0) == 1,
       "a mark after a cycle began counts for it");
    ok(gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_TOKEN,
                                "urn:li:corpuser:b", 17, s0) == 0,
       "a user's mark is not a token's");
    ok(gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER,
                                "urn:li:corpuser:b", 16, s0) == 0,
       "nor a mark of a key's prefix");
    ok(gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER,
                                "urn:li:corpuser:c", 17, s0) == 0,
       "a key not marked is not");

    gms_follow_journal_mark(&j, GMS_FOLLOW_JOURNAL_TOKEN, "a\0b", 3);
    ok(gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_TOKEN, "a\0b", 3, s0)
       == 1 && gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_TOKEN,
                                        "a\0c", 3, s0) == 0,
       "keys are bytes, NUL included");

    /* a second cycle begins after those marks */
    s1 = gms_follow_journal_begin(&j, GMS_FOLLOW_JOURNAL_PRIVILEGES);
    ok(gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER,
                                "urn:li:corpuser:b", 17, s1) == 0,
       "the second cycle began after the mark: it reads the change");

    gms_follow_journal_mark(&j, GMS_FOLLOW_JOURNAL_USER, "urn:li:corpuser:b",
                            17);
    ok(gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER,
                                "urn:li:corpuser:b", 17, s1) == 1,
       "marked again: it counts for the second cycle too");
    ok(j.n == 2, "a key marked twice is kept once (%zu)", j.n);

    /* the first cycle ends: what only it could ask about goes */
    gms_follow_journal_end(&j, GMS_FOLLOW_JOURNAL_TOKENS);
    ok(j.n == 1, "the first cycle ended: the token's mark dropped, the "
       "user's marked again kept (%zu)", j.n);
    ok(gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER,
                                "urn:li:corpuser:b", 17, s1) == 1,
       "the second cycle still sees its mark");

    /* many marks during one cycle: each found, then all dropped */
    for (i = 0; i < MANY; i++) {
        len = key(k, sizeof(k), "urn:li:corpuser:u", i);
        gms_follow_journal_mark(&j, GMS_FOLLOW_JOURNAL_USER, k, len);
    }

    ok(j.n == MANY + 1, "%d marks kept while a cycle is under way (%zu)",
       MANY, j.n);

    for (bad = 0, i = 0; i < MANY; i++) {
        len = key(k, sizeof(k), "urn:li:corpuser:u", i);
        bad += gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER, k, len,
                                        s1) != 1;
        len = key(k, sizeof(k), "urn:li:corpuser:v", i);
        bad += gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER, k, len,
                                        s1) != 0;
        len = key(k, sizeof(k), "urn:li:corpuser:u", i);
        bad += gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_TOKEN, k, len,
                                        s1) != 0;
    }

    ok(bad == 0, "each of %d marked keys found, none unmarked (%d wrong)",
       MANY, bad);

    gms_follow_journal_end(&j, GMS_FOLLOW_JOURNAL_PRIVILEGES);
    ok(j.n == 0 && j.entries == NULL && j.index == NULL,
       "no cycle under way: every mark dropped, the memory freed");

    /* past the bound: every key counts as marked while the cycle runs */
    s0 = gms_follow_journal_begin(&j, GMS_FOLLOW_JOURNAL_TOKENS);

    for (i = 0; i <= GMS_FOLLOW_JOURNAL_MAX; i++) {
        len = key(k, sizeof(k), "t", i);
        gms_follow_journal_mark(&j, GMS_FOLLOW_JOURNAL_TOKEN, k, len);
    }

    ok(j.n == GMS_FOLLOW_JOURNAL_MAX, "no more than %d marks kept (%zu)",
       GMS_FOLLOW_JOURNAL_MAX, j.n);
    ok(gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER,
                                "never marked", 12, s0) == 1,
       "past the bound, a key never marked counts as marked");

    gms_follow_journal_end(&j, GMS_FOLLOW_JOURNAL_TOKENS);
    s0 = gms_follow_journal_begin(&j, GMS_FOLLOW_JOURNAL_TOKENS);
    ok(j.n == 0 && gms_follow_journal_since(&j, GMS_FOLLOW_JOURNAL_USER,
                                            "never marked", 12, s0) == 0,
       "once that cycle ended, the next one starts clean");

    gms_follow_journal_mark(&j, GMS_FOLLOW_JOURNAL_TOKEN, "x", 1);
    gms_follow_journal_end(&j, GMS_FOLLOW_JOURNAL_TOKENS);
    gms_follow_journal_free(&j);

    return done_testing();
}

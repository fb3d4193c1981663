
/*
 * Unit tests of src/lib/gms_slot.c: Redis Cluster's hash slot of a key,
 * hash tags by Redis's rule (the first '{', the first '}' after it, at
 * least one byte between).  The figures are CLUSTER KEYSLOT's.
 */


#include <stdlib.h>

#include "tap.h"
#include "gms_slot.h"


static unsigned
slot(const char *key)
{
    return gms_slot(key, strlen(key));
}


static int
tag(const char *key, const char *want)
{
    size_t  start, len;

    if (!gms_slot_tag(key, strlen(key), &start, &len)) {
        return want == NULL;
    }

    return want && strlen(want) == len && memcmp(key + start, want, len) == 0;
}


int
main(void)
{
    ok(slot("123456789") == 0x31c3, "CRC16 XMODEM's check value");
    ok(slot("somekey") == 11058, "somekey: 11058");
    ok(slot("foo") == 12182, "foo: 12182");
    ok(slot("foo{hash_tag}") == 2515, "foo{hash_tag}: 2515");
    ok(slot("bar{hash_tag}") == 2515, "bar{hash_tag}: 2515, the same");
    ok(slot("{gms}:token:x") == 11641, "{gms}: keys: 11641");
    ok(slot("{gms}:") == slot("gms"), "the slot of a tag is its bytes'");
    ok(slot("") == 0, "the empty key: 0");

    ok(tag("{gms}:", "gms"), "{gms}: has the tag gms");
    ok(tag("a{b}c{d}", "b"), "the first tag only");
    ok(tag("foo{{bar}}zap", "{bar"), "the first '{', the first '}' after");
    ok(tag("foo{}{bar}", NULL), "{} first: no tag, the whole key hashed");
    ok(slot("foo{}{bar}") != slot("bar"), "... not bar's slot");
    ok(tag("gms:", NULL), "no braces: no tag");
    ok(tag("{gms:", NULL), "no closing brace: no tag");
    ok(tag("}gms{", NULL), "a '}' before the '{': no tag");

    return done_testing();
}


/*
 * Unit tests of src/lib/gms_slot.c: hash slots as Redis computes them
 * (CLUSTER KEYSLOT's answers) and MOVED/ASK parsing.
 */


#include "tap.h"
#include "gms_slot.h"


#define S(s)  (const unsigned char *) (s), sizeof(s) - 1


static void
test_slots(void)
{
    /* the specification's check value, and CLUSTER KEYSLOT's answers */
    ok(gms_slot_crc16(S("123456789")) == 0x31c3, "CRC16 XMODEM of 123456789");
    ok(gms_slot(S("foo")) == 12182, "foo: 12182");
    ok(gms_slot(S("bar")) == 5061, "bar: 5061");
    ok(gms_slot(S("{gms}:token:x")) == gms_slot(S("gms")),
       "{gms}:token:x hashes gms");
    ok(gms_slot(S("gms")) == 11641, "gms: 11641");
    ok(gms_slot(S("{user1000}.following"))
       == gms_slot(S("{user1000}.followers")), "the specification's pair");
    ok(gms_slot(S("foo{}{bar}")) == gms_slot(S("foo{}{bar}"))
       && gms_slot(S("foo{}{bar}")) != gms_slot(S("bar")),
       "foo{}{bar}: the whole key (the first tag is empty)");
    ok(gms_slot(S("foo{{bar}}zap")) == gms_slot(S("{bar")),
       "foo{{bar}}zap hashes {bar");
    ok(gms_slot(S("foo{bar}{zap}")) == gms_slot(S("bar")),
       "foo{bar}{zap} hashes bar");
    ok(gms_slot(S("")) == 0, "the empty key: 0");
}


static void
test_tags(void)
{
    size_t                len;
    const unsigned char  *tag;

    ok(gms_slot_tag(S("{gms}:"), &tag, &len) == 1 && len == 3
       && memcmp(tag, "gms", 3) == 0, "{gms}: has the tag gms");
    ok(gms_slot_tag(S("gms:"), &tag, &len) == 0, "gms: has none");
    ok(gms_slot_tag(S("{}gms:"), &tag, &len) == 0, "{} is no tag");
    ok(gms_slot_tag(S("gms{:"), &tag, &len) == 0, "an unclosed { is none");
    ok(gms_slot_tag(S("}gms{a}"), &tag, &len) == 1 && len == 1,
       "a } before the { does not count");
}


static int
redirect(const char *s, gms_redirect_e kind, unsigned slot,
    const char *host, unsigned port)
{
    gms_redirect_t  r;

    if (gms_slot_redirect((const unsigned char *) s, strlen(s), &r) != 0) {
        return kind == GMS_REDIRECT_NONE;
    }

    return r.kind == kind && r.slot == slot && r.port == port
           && r.host_len == strlen(host)
           && memcmp(r.host, host, r.host_len) == 0;
}


static void
test_redirects(void)
{
    ok(redirect("MOVED 3999 127.0.0.1:6381", GMS_REDIRECT_MOVED, 3999,
                "127.0.0.1", 6381), "MOVED");
    ok(redirect("ASK 0 redis-1.example:7000", GMS_REDIRECT_ASK, 0,
                "redis-1.example", 7000), "ASK to a host name");
    ok(redirect("MOVED 16383 ::1:7001", GMS_REDIRECT_MOVED, 16383, "::1",
                7001), "an IPv6 address");
    ok(redirect("MOVED 1 :7001", GMS_REDIRECT_MOVED, 1, "", 7001),
       "an unknown endpoint: the host is empty");

    ok(redirect("MOVED 16384 127.0.0.1:6381", 0, 0, "", 0),
       "slot 16384 refused");
    ok(redirect("MOVED 1 127.0.0.1:65536", 0, 0, "", 0),
       "port 65536 refused");
    ok(redirect("MOVED 1 127.0.0.1:0", 0, 0, "", 0), "port 0 refused");
    ok(redirect("MOVED 1 127.0.0.1", 0, 0, "", 0), "no port refused");
    ok(redirect("MOVED -1 127.0.0.1:1", 0, 0, "", 0), "a sign refused");
    ok(redirect("MOVED 1 127.0.0.1:1 x", 0, 0, "", 0),
       "trailing words refused");
    ok(redirect("MOVED  127.0.0.1:1", 0, 0, "", 0), "no slot refused");
    ok(redirect("MOVED", 0, 0, "", 0), "MOVED alone refused");
    ok(redirect("MOVEDX 1 a:1", 0, 0, "", 0), "MOVEDX refused");
    ok(redirect("ERR unknown", 0, 0, "", 0), "another error: none");
    ok(redirect("MOVED 1 a\nb:1", 0, 0, "", 0), "a control byte refused");
    ok(redirect("MOVED 0000001 a:1", 0, 0, "", 0), "too many digits");
}


int
main(void)
{
    test_slots();
    test_tags();
    test_redirects();

    return done_testing();
}


/*
 * A JSON scanner for long texts of which a few members matter: JSON
 * syntax checked as strictly as jansson checks it, the members asked for
 * recorded where they lie, for jansson to load; and text quoted as
 * org.json's JSONObject.quote() writes it.
 */


#ifndef _GMS_JSON_SCAN_H_INCLUDED_
#define _GMS_JSON_SCAN_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <jansson.h>


/* the JSON type a member must have when it is there */

typedef enum {
    GMS_JSON_ANY = 0,
    GMS_JSON_STRING,
    GMS_JSON_INTEGER,
    GMS_JSON_BOOLEAN,
    GMS_JSON_OBJECT
} gms_json_type_e;


typedef struct gms_member_s  gms_member_t;

/* a member to record: name, type, required or not, its members to record */
#define gms_member(name, type, required, members)                            \
    { name, sizeof(name) - 1, type, required, NULL, 0, members, 0 }
#define gms_member_end  { NULL, 0, GMS_JSON_ANY, 0, NULL, 0, NULL, 0 }

struct gms_member_s {
    const char       *name;
    size_t            name_len;
    gms_json_type_e   type;
    unsigned          required:1;
    const char       *value;   /* NULL: absent */
    size_t            len;
    /*
     * an object's members to record while it is scanned (those of the
     * member's last occurrence), in the same pass: not scanned twice
     */
    gms_member_t     *members;
    /* an integer's value, once gms_json_scan_member_mismatch() has read it */
    json_int_t        integer;
};


int gms_json_scan(const char *text, size_t len, gms_member_t *want,
    size_t *at);
json_t *gms_json_scan_member_load(gms_member_t *m);
int gms_json_scan_member_integer(gms_member_t *m, json_int_t *out);
gms_member_t *gms_json_scan_member_mismatch(gms_member_t *want);
char *gms_json_scan_orgjson_quote(char *p, const char *s, size_t len,
    unsigned flags);

/* gms_json_scan_orgjson_quote()'s flags */
#define GMS_QUOTE_COMPACT  1
#define GMS_QUOTE_TWICE    2

/* the bytes gms_json_scan_orgjson_quote() may write past the end it returns */
#define GMS_QUOTE_SLACK    8

/* "a string", "an integer" ..., by gms_json_type_e */
extern const char  *gms_json_type_names[];


#endif /* _GMS_JSON_SCAN_H_INCLUDED_ */

/*
 * Reading proto3-JSON requests (reference kvcm.md §1.3) on top of jansson: snake_case or lowerCamel names, null
 * as absent, 64-bit integers as numbers or decimal strings, enums as names or numbers, unknown keys ignored.
 * A value of the wrong type marks the decode bad: the request is then answered HTTP 400 "{}".
 */
#ifndef MMC_KVCM_JSON_IN_H
#define MMC_KVCM_JSON_IN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire_enums.h"

struct jd {
	bool bad;      /* a type error: HTTP 400 */
	bool too_many; /* an array above its limit: a clean INVALID_ARGUMENT */
	char why[160]; /* for the log */
};

/* Parses a request body (duplicate keys rejected); NULL unless it is a JSON object. */
json_t *jd_parse(const char *body, size_t len);
/* Whether body holds more than most objects and arrays (outside strings), counted without building anything: jansson
 * takes hundreds of bytes for each, so a body of empty ones costs 250 times its size and seconds of the loop. */
bool jd_containers_over(const char *body, size_t len, size_t most);

/* The member name (or its lowerCamel form); NULL when absent or null. */
json_t *jd_get(json_t *obj, const char *name);

const char *jd_str(struct jd *d, json_t *obj, const char *name); /* "" when absent */
bool jd_bool(struct jd *d, json_t *obj, const char *name);
int64_t jd_i64(struct jd *d, json_t *obj, const char *name);
int32_t jd_i32(struct jd *d, json_t *obj, const char *name);
/* Name (an unknown name reads as 0, as protobuf's ignore_unknown_fields does), number or quoted number. */
int jd_enum(struct jd *d, json_t *obj, const char *name, const struct enum_desc *e);
/* NULL when absent; a present non-object marks d bad. */
json_t *jd_obj(struct jd *d, json_t *obj, const char *name);
json_t *jd_arr(struct jd *d, json_t *obj, const char *name);
/* A repeated int64 into a malloc'd array (NULL when empty); more than max elements sets d->too_many. */
size_t jd_i64s(struct jd *d, json_t *obj, const char *name, int64_t **out, size_t max);
/* A repeated string: borrowed pointers into obj, malloc'd array. */
size_t jd_strs(struct jd *d, json_t *obj, const char *name, const char ***out, size_t max);

/* Value conversions, exposed for schema code and arrays. */
bool jd_val_i64(json_t *v, int64_t *out);
bool jd_val_enum(json_t *v, const struct enum_desc *e, int *out);
/* The same conversions of a string's text, for readers that do not build jansson values. */
bool jd_str_i64(const char *s, int64_t *out);
bool jd_str_enum(const char *s, const struct enum_desc *e, int *out);

/*
 * Schema-driven normalisation: turns a message given in any accepted form into its canonical printed form
 * (reference §1.4: fields in declaration order, every scalar and repeated field present, 64-bit integers as
 * strings, enums as names, sub-messages only when given). Configs (storages, groups, instances) are kept and
 * persisted in this form, so printing them is a dump.
 */
enum jf_type { JF_STR, JF_I32, JF_I64, JF_BOOL, JF_DBL, JF_ENUM, JF_MSG, JF_REP_STR, JF_REP_MSG, JF_MAP_STR };

struct jfield {
	const char *name;
	enum jf_type type;
	/*
	 * JF_ENUM: struct enum_desc, whose first value listed is that of an absent field (0 but where the reference
	 * gives absence another meaning); JF_MSG, JF_REP_MSG: struct jfield[] ending in {NULL}; JF_I64, JF_BOOL: NULL
	 * (absent is 0, false) or the int64_t, bool an absent field takes (the reference's non-zero defaults).
	 */
	const void *sub;
};

/* A new canonical object, or NULL (d->bad set) when a value has the wrong type. */
json_t *jd_normalize(struct jd *d, json_t *in, const struct jfield *schema);

/* Readers of canonical objects. */
const char *jn_str(json_t *obj, const char *name);
int64_t jn_i64(json_t *obj, const char *name);
int jn_enum(json_t *obj, const char *name, const struct enum_desc *e);
double jn_double(json_t *obj, const char *name);

#endif

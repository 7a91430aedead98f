/*
 * A streaming JSON writer for responses: compact output straight into one growing buffer, commas handled by the
 * writer. Faster than building a jansson tree, which matters for replies carrying thousands of locations.
 * 64-bit integers are written as strings (proto3-JSON), 32-bit ones as numbers.
 */
#ifndef MMC_KVCM_JSON_OUT_H
#define MMC_KVCM_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jw {
	char *buf;
	size_t len, cap;
	bool comma; /* the next value or key needs a comma before it */
	bool oom;   /* out of memory, or past max: the text is incomplete */
	size_t max; /* bytes it may grow to, 0: no bound (set after jw_init) */
};

void jw_init(struct jw *w);
void jw_free(struct jw *w);
/* Forgets the content, keeps the memory. */
void jw_reset(struct jw *w);
/* Hands the buffer to the caller (who frees it) and resets w. */
char *jw_take(struct jw *w, size_t *len);

void jw_obj(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *key);
void jw_str(struct jw *w, const char *s);
void jw_strn(struct jw *w, const char *s, size_t n);
void jw_int(struct jw *w, long long v);
void jw_i64s(struct jw *w, int64_t v);  /* "123" */
void jw_u64s(struct jw *w, uint64_t v); /* "123" */
void jw_bool(struct jw *w, bool v);
void jw_double(struct jw *w, double v);
/* Appends already-encoded JSON as one value. */
void jw_raw(struct jw *w, const char *json, size_t n);
/* Appends a jansson value (compact, keys in insertion order). */
void jw_json(struct jw *w, const void *json_t_value);

/* Shorthands for "key": value. */
void jw_kstr(struct jw *w, const char *key, const char *s);
void jw_kint(struct jw *w, const char *key, long long v);
void jw_ki64s(struct jw *w, const char *key, int64_t v);
void jw_kbool(struct jw *w, const char *key, bool v);

#endif

/*
 * The JSON lexer under the fast request readers (http/key_reader.c, http/report_reader.c). Those readers accept only a
 * strict subset of JSON on which their reading provably equals jansson's, and decline everything else so that jansson
 * reads it; this lexer is that subset: strings of printable ASCII with at most the short escapes, integers that
 * fit an int64 as jansson reads them, true, false, objects and arrays nested up to JLEX_DEPTH_MAX. Every function
 * returns false (or NULL) on input outside the subset, truncated input included; the caller then declines the
 * body. Nothing here allocates.
 */
#ifndef MMC_KVCM_JSON_LEX_H
#define MMC_KVCM_JSON_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Objects and arrays open at once, at most: the readers' grammars nest 8 deep, so this only bounds hostile input. */
#define JLEX_DEPTH_MAX 16
/* Members a reader keeps, as jansson values, beside the ones it reads itself: a request has a few (trace_id,
 * instance_id, ...). A body of more declines, and then meets the size bound of jansson's path (a body of millions of
 * members would build the tree that bound exists to refuse). */
#define JLEX_KEPT_MEMBERS_MAX 16

struct jlex {
	const char *p, *end;
	unsigned depth;
};

static inline void jlex_init(struct jlex *x, const char *text, size_t len)
{
	x->p = text;
	x->end = text + len;
	x->depth = 0;
}

/* Skips white space (the four characters JSON allows). */
void jlex_ws(struct jlex *x);

/* Consumes the punctuation c after any white space. */
static inline bool jlex_lit(struct jlex *x, char c)
{
	if (x->p < x->end && *x->p == c) { /* compact JSON: no white space to skip */
		x->p++;
		return true;
	}
	jlex_ws(x);
	if (x->p == x->end || *x->p != c)
		return false;
	x->p++;
	return true;
}

/* The next character after any white space, or -1 at the end. */
int jlex_peek(struct jlex *x);
/* Whether only white space is left. */
bool jlex_done(struct jlex *x);

/*
 * A string without escapes, in place: *s points into the text, *len bytes, not terminated. For member names
 * (no name a reader knows has a character to escape) and string values kept as they stand.
 */
bool jlex_plain(struct jlex *x, const char **s, size_t *len);
/*
 * A string with the short escapes decoded (\" \\ \/ \b \f \n \r \t; \u is declined), NUL-terminated at *out, which
 * then moves past the NUL: a string never needs more room than its quoted form takes. Returns the string, its
 * length in *len (when len is not NULL), or NULL.
 */
const char *jlex_str(struct jlex *x, char **out, size_t *len);
/* An integer token jansson reads as a json_int_t of the same value: no fraction, exponent, leading zero or "-0". */
bool jlex_int64(struct jlex *x, int64_t *out);
/* true or false. */
bool jlex_bool(struct jlex *x, bool *v);

/* Whether the name of len bytes at k is name. */
bool jlex_is(const char *k, size_t len, const char *name);

/* One member of an object: its name as jlex_plain gives it, the value still to be read by the callback. */
typedef bool jlex_member_fn(struct jlex *x, const char *name, size_t len, void *ctx);
/* One element of an array, to be read by the callback. */
typedef bool jlex_elem_fn(struct jlex *x, void *ctx);

/* An object ("{}" included), each member handed to fn; false when fn or the syntax fails. */
bool jlex_object(struct jlex *x, jlex_member_fn *fn, void *ctx);
/* An array ("[]" included), each element handed to fn. */
bool jlex_array(struct jlex *x, jlex_elem_fn *fn, void *ctx);

#endif

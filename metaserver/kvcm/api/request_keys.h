/*
 * The keys a MetaService request names: block_keys, or keys derived from token_ids (model/block_key.c), and the
 * block masks that skip some of them (reference kvcm.md §5.1).
 */
#ifndef MMC_KVCM_REQUEST_KEYS_H
#define MMC_KVCM_REQUEST_KEYS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "json_out.h"

enum mask_kind { MASK_NONE, MASK_OFFSET, MASK_BOOLS };

struct mask {
	enum mask_kind kind;
	int32_t offset;
	bool *values;
	size_t nvalues;
};

/*
 * A request's key fields as a transport read them, before token_ids become keys: block_keys, else token_ids (read
 * only when block_keys is empty), and how the reading went (d: a type error, or more than max_keys block keys or
 * 64 x max_keys tokens). The arrays are borrowed (a protobuf request's) or in mem, freed by key_input_free.
 */
struct key_input {
	const int64_t *block_keys;
	size_t nblock;
	const int64_t *tokens;
	size_t ntokens;
	struct jd d;
	int64_t *mem[3]; /* what key_input_free frees: read block keys, read tokens, keys derived from the tokens */
};

/* The key fields of c's JSON body (from its route's key reader when that read them). */
void key_input_json(struct call *c, struct key_input *in);
/*
 * The keys of in: its block_keys, or keys derived from its tokens with the instance's block size (owned by in).
 * Returns false when the call has been answered (400 on a type error; INVALID_ARGUMENT when too many, or
 * "missing or invalid fields: {<api>: {block_keys or token_ids}}" when there are none).
 */
bool keys_resolve(struct call *c, const char *api, struct key_input *in, const int64_t **keys, size_t *n);
void key_input_free(struct key_input *in);
/* key_input_json and keys_resolve in one: the keys into *keys (malloc'd; caller frees). */
bool call_keys(struct call *c, const char *api, int64_t **keys, size_t *n);
/* Reads BlockMask field name of obj (at most max bool values) into m, the outcome in d. */
void mask_read(struct jd *d, json_t *obj, const char *name, size_t max, struct mask *m);
/* mask_read, answering a malformed mask (400) or too many values: false then. */
bool call_mask(struct call *c, json_t *obj, const char *name, struct mask *m);
void mask_free(struct mask *m);
static inline bool mask_has(const struct mask *m, size_t i)
{
	return m->kind == MASK_OFFSET ? i < (size_t)(m->offset > 0 ? m->offset : 0)
	                              : m->kind == MASK_BOOLS && i < m->nvalues && m->values[i];
}
void jw_mask(struct jw *w, const struct mask *m);

#endif

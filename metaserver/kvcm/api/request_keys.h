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
 * The request's keys into *keys (malloc'd; caller frees). Returns false when the call has been answered
 * (400 on a type error; INVALID_ARGUMENT "missing or invalid fields: {<api>: {block_keys or token_ids}}" when
 * both are empty).
 */
bool call_keys(struct call *c, const char *api, int64_t **keys, size_t *n);
/* Reads BlockMask field name of obj. False (call answered 400) on a malformed mask. */
bool call_mask(struct call *c, json_t *obj, const char *name, struct mask *m);
void mask_free(struct mask *m);
static inline bool mask_has(const struct mask *m, size_t i)
{
	return m->kind == MASK_OFFSET ? i < (size_t)(m->offset > 0 ? m->offset : 0)
	                              : m->kind == MASK_BOOLS && i < m->nvalues && m->values[i];
}
void jw_mask(struct jw *w, const struct mask *m);

#endif

/*
 * Pieces the MetaService handlers share: the request's block keys (block_keys, or derived from token_ids), block
 * masks (reference kvcm.md §5.1), and the CacheLocation message with location_spec_names filtering.
 */
#ifndef MMC_KVCM_REQUEST_KEYS_H
#define MMC_KVCM_REQUEST_KEYS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "json_out.h"
#include "model.h"

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

/* location_spec_names: an empty filter keeps every spec. */
struct spec_filter {
	const char **names;
	size_t n;
};

/* Whether the filter keeps spec name. */
bool spec_kept(const struct spec_filter *f, const char *name);
/* Specs of l the filter keeps. */
uint16_t filter_count(const struct location *l, const struct spec_filter *f);
/* The {"name","uri"} objects of l's filtered specs, inside an array the caller opened. */
void jw_spec_items(struct jw *w, const struct location *l, const struct spec_filter *f);
/* {"type":..,"spec_size":..,"location_specs":[..]} with the filtered specs. */
void jw_location(struct jw *w, struct location *l, const struct spec_filter *f);
/* A miss in BATCH_GET / REVERSE_ROLL results: ST_UNSPECIFIED with the instance's (filtered) spec names. */
void jw_placeholder(struct jw *w, const struct instance *inst, const struct spec_filter *f);
/* The S2 form with id, status and create_time (getCacheMetaDetail). */
void jw_location_detail(struct jw *w, const struct location *l);

#endif

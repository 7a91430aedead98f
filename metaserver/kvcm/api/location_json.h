/*
 * The CacheLocation message of the MetaService replies, with location_spec_names
 * filtering: a location's type, spec count and specs, a miss's placeholder, and the detailed form of
 * getCacheMetaDetail. An unfiltered location is rendered once and kept (struct location.json).
 */
#ifndef MMC_KVCM_LOCATION_JSON_H
#define MMC_KVCM_LOCATION_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json_out.h"
#include "model.h"

/* location_spec_names: an empty filter keeps every spec. */
struct spec_filter {
	const char **names;
	size_t n;
};

/* Whether the filter keeps spec name. */
bool spec_kept(const struct spec_filter *f, const char *name);
/* Specs of l the filter keeps. */
uint16_t filter_count(const struct location *l, const struct spec_filter *f);
/* The {"name","uri","node_id"} objects of l's filtered specs, inside an array the caller opened. */
void jw_spec_items(struct jw *w, const struct location *l, const struct spec_filter *f);
/* {"type":..,"spec_size":..,"location_specs":[..],"id":..,"status":..,"create_time":".."} with the filtered
 * specs. */
void jw_location(struct jw *w, struct location *l, const struct spec_filter *f);
/*
 * A key's locations on one storage shown as one, as the reference merges them (locs[0] the chosen one): its type,
 * every kept spec name once (the first location holding it wins) in name order, id "<locs[0]'s id>_merged".
 */
void jw_merged_location(struct jw *w, struct location *const *locs, size_t n, const struct spec_filter *f);
/* The newer reference's last three members of a location (create_time in µs, 0 for none), and the end of its
 * object. */
void jw_location_end(struct jw *w, const char *id, int status, uint64_t create_time_us);
/* A miss in BATCH_GET / REVERSE_ROLL results: ST_UNSPECIFIED with the instance's (filtered) spec names. */
void jw_placeholder(struct jw *w, const struct instance *inst, const struct spec_filter *f);
/* The S2 form with id, status and create_time (getCacheMetaDetail). */
void jw_location_detail(struct jw *w, const struct location *l);

#endif

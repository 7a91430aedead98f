/*
 * The CacheLocation message of the MetaService replies, with location_spec_names filtering: a location's type,
 * spec count and specs, a merged one, a miss's placeholder, for either encoder (JSON here, protobuf in the gRPC
 * layer); and the detailed form of getCacheMetaDetail. An unfiltered location is rendered in JSON once and kept
 * (struct location.json).
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

/* Orders f's names for spec_kept (in place): a filter may name 4096 specs, and a reply asks it for every spec of
 * every location of every key, so a linear match made one small request cost 10^11 compares. */
void spec_filter_sort(struct spec_filter *f);
/* Whether the filter (sorted) keeps spec name. */
bool spec_kept(const struct spec_filter *f, const char *name);
/* Specs of l the filter keeps. */
uint16_t filter_count(const struct location *l, const struct spec_filter *f);

/*
 * Where a CacheLocation is written: JSON text (loc_json, out a struct jw) or, in the gRPC layer, a protobuf
 * message. begin, one spec per kept spec, end: {"type":..,"spec_size":..,"location_specs":[{"name","uri",
 * "node_id"}..],"id":..,"status":..,"create_time":".."}.
 */
struct loc_enc {
	void (*begin)(void *out, int type, unsigned spec_size);
	void (*spec)(void *out, const char *name, const char *uri);
	void (*end)(void *out, const char *id, int status, uint64_t create_time_us);
	/* l unfiltered, for an encoder that keeps what it rendered of it (struct location.json); NULL: begin.. end */
	void (*whole)(void *out, struct location *l);
	void (*oom)(void *out); /* memory ran out: the reply is not whole (HTTP 500) */
};

extern const struct loc_enc loc_json;

/* l with its filtered specs. */
void loc_put(const struct loc_enc *e, void *out, struct location *l, const struct spec_filter *f);
/* The kept specs of l, between the caller's begin and end. */
void loc_put_specs(const struct loc_enc *e, void *out, const struct location *l, const struct spec_filter *f);
/*
 * A key's locations on one storage shown as one, as the reference merges them (locs[0] the chosen one): its type,
 * every kept spec name once (the first location holding it wins) in name order, id "<locs[0]'s id>_merged".
 */
void loc_put_merged(const struct loc_enc *e, void *out, struct location *const *locs, size_t n,
                    const struct spec_filter *f);
/* A miss in BATCH_GET / REVERSE_ROLL results: ST_UNSPECIFIED with the instance's (filtered) spec names. */
void loc_put_placeholder(const struct loc_enc *e, void *out, const struct instance *inst, const struct spec_filter *f);

/* loc_put in JSON. */
void jw_location(struct jw *w, struct location *l, const struct spec_filter *f);
/* The newer reference's last three members of a location (create_time in µs, 0 for none), and the end of its
 * object. */
void jw_location_end(struct jw *w, const char *id, int status, uint64_t create_time_us);
/* The S2 form with id, status and create_time (getCacheMetaDetail). */
void jw_location_detail(struct jw *w, const struct location *l);

#endif

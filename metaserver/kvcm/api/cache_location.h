/*
 * getCacheLocation (and getCacheLocationLen) in steps that do not depend on the transport: the request read into
 * struct location_query (by HTTP from JSON, location_query_json; by gRPC from the protobuf message), answered by
 * cache_location_answer, and the rows of its reply written by either encoder (location_json.h's struct loc_enc).
 */
#ifndef MMC_KVCM_CACHE_LOCATION_H
#define MMC_KVCM_CACHE_LOCATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "block_prune.h"
#include "http.h"
#include "location_json.h"
#include "request_keys.h"

/* A hit is a data storage's location (with its block's others there), else the block's event-report ones. */
struct row {
	struct location *loc;
	struct block *b; /* loc's block */
	struct block *er;
};

struct location_query {
	/* the request: how reading went is in head (query_type, sw_size, location_spec_names) and in_mask */
	int query_type; /* as given: QT_UNSPECIFIED takes the instance's default */
	int32_t sw_size;
	struct spec_filter filter;
	const char **filter_mem; /* the filter's array when the reader allocated it */
	struct mask mask;
	struct key_input in_keys;
	struct jd head, in_mask;
	/* the query: one row per output row; an empty row is a placeholder (BATCH_GET, REVERSE_ROLL) */
	int type;
	const int64_t *keys;
	size_t n;
	struct row *rows;
	size_t nrows, hits;
	struct prune_set prune; /* met during the query, dropped after the reply */
};

/* At most this many location_spec_names. */
#define LOCATION_SPEC_NAMES_MAX 4096

/* Reads c's JSON body into q (zeroed): every field ahead of the checks, how each part went kept for them. */
void location_query_json(struct call *c, struct location_query *q, bool with_mask);
/*
 * Runs the query q was read into, for api ("GetCacheLocationLen"): the checks in the order HTTP has always made
 * them, then the query. false when the call has been answered with an error.
 */
bool location_query_run(struct call *c, struct location_query *q, const char *api);
/* getCacheLocation: location_query_run and the success header. */
bool cache_location_answer(struct call *c, struct location_query *q);
/* The rows of an answered query, each a CacheLocation written by e to out. */
void cache_location_rows(struct call *c, const struct location_query *q, const struct loc_enc *e, void *out);
/* Drops what the query found lost (after the reply: its rows point into the blocks), then frees it. */
void location_query_free(struct call *c, struct location_query *q);

#endif

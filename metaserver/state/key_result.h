/*
 * A KeyResult kept outside the per-request arena, for requests that reply later (an allocation waiting for room,
 * a get waiting for an SSD read). Loop thread only.
 */
#ifndef MMC_KEY_RESULT_H
#define MMC_KEY_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "meta.h"

struct key_result {
	int32_t result;
	uint64_t size;
	uint64_t lease_ms;
	uint64_t token;
	uint32_t lease;                   /* get: the lease record the read is counted in (lease_gen), 0: none */
	uint32_t checksum_type, checksum; /* the object's, MMC_WIRE_CHECKSUM_* */
	uint32_t nblobs;
	struct {
		uint32_t rank, media, state;
		uint64_t incarnation, offset;
	} blobs[MMC_WIRE_REPLICAS];
};

/* Records o's size, token, checksum and live blobs (only blob `pick` when pick >= 0). */
void key_result_note(struct key_result *r, const struct object *o, int pick);

#endif

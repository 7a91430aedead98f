/*
 * Where an object's replicas go. A single put prefers the writer's own pool, a batch spreads keys over services
 * by free space; every replica is on a distinct service; preferred services each get one replica. Either every
 * replica is reserved or none is. Loop thread only.
 */
#ifndef MMC_PLACEMENT_H
#define MMC_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "meta.h"

struct place_req {
	uint64_t size;
	uint32_t replicas;        /* 1..8 */
	const int32_t *preferred; /* ranks that must each hold a replica */
	uint32_t npreferred;
	bool spread; /* batch placement */
	uint32_t media;
	const struct session *writer;
};

/*
 * Reserves space for every replica of o (o->nblobs == r->replicas) and links the blobs to their services,
 * evicting unleased objects when the media is full. Returns 0; MMC_NOT_ENOUGH_MEMORY (no room, or fewer services
 * than replicas; *blocked tells whether read leases pin memory that will be freed later); MMC_INVALID_PARAM (a
 * preferred rank that is not a live service with this media).
 */
int placement_reserve(struct meta *m, const struct place_req *r, struct object *o, bool *blocked);

#endif

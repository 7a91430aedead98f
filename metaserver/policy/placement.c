#include "placement.h"

#include <string.h>

#include "allocator.h"
#include "clock.h"
#include "eviction.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "services.h"

bool placement_in_grace(const struct service *svc)
{
	return svc->writable_after_ms && clock_ms() < svc->writable_after_ms;
}

static bool usable(const struct service *svc, uint32_t media)
{
	return svc && svc->session && !placement_in_grace(svc) && service_segment((struct service *)svc, media);
}

/* Loaded from the metadata store by a restart or a takeover and not registered again yet: its store is
 * reconnecting (clients find a new leader within a fraction of a second) and brings the pool back, unless it is
 * dropped at its rejoin deadline. */
static bool rejoining(const struct service *svc)
{
	return svc && !svc->session && svc->rejoin_deadline_ms;
}

/* A service that will take bytes soon without anything being freed: it is rejoining, or in its grace. */
static bool coming(const struct service *svc)
{
	return rejoining(svc) || (svc && svc->session && placement_in_grace(svc));
}

/* True when some service of the media will take bytes soon (coming): waiting is worth it. */
static bool room_coming(const struct meta *m, uint32_t media)
{
	for (uint32_t rank = 0; rank < m->rank_hi; rank++) {
		struct service *svc = m->ranks[rank];

		if (coming(svc) && service_segment(svc, media))
			return true;
	}
	return false;
}

uint64_t placement_grace_end(const struct meta *m, uint32_t media)
{
	uint64_t end = 0;

	for (uint32_t rank = 0; rank < m->rank_hi; rank++) {
		struct service *svc = m->ranks[rank];

		if (svc && svc->session && placement_in_grace(svc) && service_segment(svc, media) &&
		    svc->writable_after_ms > end)
			end = svc->writable_after_ms;
	}
	return end;
}

static bool already_used(const struct object *o, int filled, const struct service *svc)
{
	for (int i = 0; i < filled; i++)
		if (o->blobs[i].svc == svc->slot)
			return true;
	return false;
}

static int reserve_on(struct service *svc, const struct place_req *r, struct object *o, int slot)
{
	struct segment *seg = service_segment(svc, r->media);
	uint64_t off;
	int rc = alloc_reserve(seg->alloc, r->size, &off);

	if (rc)
		return rc;
	blob_place(&o->blobs[slot], svc, r->media, off);
	return 0;
}

static void unreserve(struct object *o, int filled)
{
	for (int i = 0; i < filled; i++) {
		struct blob *b = &o->blobs[i];

		alloc_release(service_segment(blob_svc(b), b->media)->alloc, blob_offset(b));
		blob_forget(b);
	}
}

static bool avoided(const struct place_req *r, const struct service *svc)
{
	for (uint32_t i = 0; i < r->navoid; i++)
		if (r->avoid[i] == svc)
			return true;
	return false;
}

/* The attached service with the most free bytes of the media that fits size and holds no replica yet (nor is
 * avoided, with avoid; and is on host, unless NULL). */
static struct service *roomiest_of(struct meta *m, const struct place_req *r, const struct object *o, int filled,
                                   bool avoid, const char *host)
{
	struct service *best = NULL;
	uint64_t best_free = 0;

	for (uint32_t rank = 0; rank < m->rank_hi; rank++) {
		struct service *svc = m->ranks[rank];
		struct segment *seg;
		uint64_t avail;

		if (!usable(svc, r->media) || already_used(o, filled, svc) || (avoid && avoided(r, svc)) ||
		    (host && strcmp(svc->host, host) != 0))
			continue;
		seg = service_segment(svc, r->media);
		if (alloc_largest_free(seg->alloc) < r->size)
			continue;
		avail = alloc_capacity(seg->alloc) - alloc_used(seg->alloc);
		if (!best || avail > best_free) {
			best = svc;
			best_free = avail;
		}
	}
	return best;
}

static struct service *roomiest(struct meta *m, const struct place_req *r, const struct object *o, int filled)
{
	struct service *svc = NULL;

	/* a single put's first replica stays on the writer's host when it can (the same-host path is the fastest);
	 * the others go by free space, so that one host's loss does not take every replica */
	if (!r->spread && filled == 0 && r->writer)
		svc = roomiest_of(m, r, o, filled, false, r->writer->host);
	if (!svc && r->navoid)
		svc = roomiest_of(m, r, o, filled, true, NULL);
	return svc || (r->navoid && r->strict) ? svc : roomiest_of(m, r, o, filled, false, NULL);
}

static int place_once(struct meta *m, const struct place_req *r, struct object *o)
{
	int filled = 0, rc = 0;

	for (uint32_t i = 0; i < r->npreferred; i++) {
		struct service *svc = r->preferred[i] >= 0 ? service_get(m, (uint32_t)r->preferred[i]) : NULL;

		if (!usable(svc, r->media) || already_used(o, filled, svc)) {
			rc = coming(svc) ? MMC_NOT_ENOUGH_MEMORY : MMC_INVALID_PARAM;
			goto fail;
		}
		if ((rc = reserve_on(svc, r, o, filled)))
			goto fail;
		filled++;
	}
	if (!r->spread && filled < (int)r->replicas && r->writer && usable(r->writer->svc, r->media) &&
	    !already_used(o, filled, r->writer->svc) && reserve_on(r->writer->svc, r, o, filled) == 0)
		filled++;
	while (filled < (int)r->replicas) {
		struct service *svc = roomiest(m, r, o, filled);

		if (!svc || reserve_on(svc, r, o, filled)) {
			rc = MMC_NOT_ENOUGH_MEMORY;
			goto fail;
		}
		filled++;
	}
	return 0;
fail:
	unreserve(o, filled);
	return rc;
}

/* Services that could ever hold size bytes of the media; an object no pool can hold must not evict anything. */
static uint32_t services_that_fit(const struct meta *m, const struct place_req *r)
{
	uint32_t n = 0;

	for (uint32_t rank = 0; rank < m->rank_hi; rank++) {
		struct service *svc = m->ranks[rank];

		if (usable(svc, r->media) && alloc_capacity(service_segment(svc, r->media)->alloc) >= r->size)
			n++;
	}
	return n;
}

/* A preferred rank must hold a replica: room elsewhere does not help it, so it is made there. */
static uint64_t make_room_on_preferred(struct meta *m, const struct place_req *r, bool *blocked)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < r->npreferred; i++) {
		struct service *svc = r->preferred[i] >= 0 ? service_get(m, (uint32_t)r->preferred[i]) : NULL;
		bool b = false;

		if (usable(svc, r->media) && alloc_largest_free(service_segment(svc, r->media)->alloc) < r->size) {
			n += eviction_make_room_on(m, svc, r->media, r->size, &b);
			*blocked |= b;
		}
	}
	return n;
}

int placement_reserve(struct meta *m, const struct place_req *r, struct object *o, bool *blocked)
{
	int rc = place_once(m, r, o);

	*blocked = false;
	/* out of room: evict what nobody reads (synchronously) and try once more */
	if (rc == MMC_NOT_ENOUGH_MEMORY && services_that_fit(m, r) >= r->replicas) {
		bool for_preferred = false;
		uint64_t n = make_room_on_preferred(m, r, &for_preferred);

		n += eviction_make_room(m, r->media, r->size, r->replicas, blocked);
		*blocked |= for_preferred;
		if (n > 0)
			rc = place_once(m, r, o);
	}
	if (rc == MMC_NOT_ENOUGH_MEMORY && !*blocked)
		*blocked = room_coming(m, r->media);
	if (rc == 0)
		eviction_check(m, r->media);
	return rc;
}

/*
 * An extent is space a store will fill soon, not an object: it takes the largest size up to r->size that fits
 * without evicting (halving down to min_size), and only min_size, the batch at hand, may evict.
 */
int placement_reserve_extent(struct meta *m, struct place_req *r, struct object *o, uint64_t min_size, bool may_evict)
{
	bool blocked;

	for (uint64_t size = r->size; size >= min_size && size >= ALLOC_ALIGN; size /= 2) {
		r->size = size;
		if (place_once(m, r, o) == 0) {
			eviction_check(m, r->media);
			return 0;
		}
	}
	r->size = min_size;
	return may_evict ? placement_reserve(m, r, o, &blocked) : MMC_NOT_ENOUGH_MEMORY;
}

int placement_check_preferred(const int32_t *preferred, uint32_t n, uint32_t replicas)
{
	if (replicas == 0 || replicas > MMC_WIRE_REPLICAS || n > replicas)
		return MMC_INVALID_PARAM;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < i; j++)
			if (preferred[i] == preferred[j])
				return MMC_INVALID_PARAM;
	return 0;
}

uint32_t placement_usable_services(const struct meta *m, uint32_t media)
{
	uint32_t n = 0;

	for (uint32_t rank = 0; rank < m->rank_hi; rank++)
		n += usable(m->ranks[rank], media);
	return n;
}

#include "space.h"

#include "allocator.h"
#include "services.h"

/* Attached services only: a detached one (waiting to rejoin) lends nothing placement could use. */
static struct segment *attached(const struct meta *m, uint32_t rank, uint32_t media)
{
	struct service *svc = m->ranks[rank];

	return svc && svc->session ? service_segment(svc, media) : NULL;
}

void space_usage(const struct meta *m, uint32_t media, uint64_t *used, uint64_t *total)
{
	*used = *total = 0;
	for (uint32_t rank = 0; rank < m->rank_hi; rank++) {
		struct segment *seg = attached(m, rank, media);

		if (!seg)
			continue;
		*used += alloc_used(seg->alloc);
		*total += alloc_capacity(seg->alloc);
	}
}

void space_held(const struct meta *m, uint32_t media, uint64_t *held, uint64_t *lost)
{
	*held = *lost = 0;
	for (uint32_t rank = 0; rank < m->rank_hi; rank++) {
		struct service *svc = m->ranks[rank];
		struct segment *seg = svc ? service_segment(svc, media) : NULL;

		if (!seg)
			continue;
		*held += alloc_held(seg->alloc);
		*lost += alloc_lost(seg->alloc);
	}
}

uint32_t space_services_with_room(const struct meta *m, uint32_t media, uint64_t size, bool *held)
{
	uint32_t n = 0;

	for (uint32_t rank = 0; rank < m->rank_hi; rank++) {
		struct segment *seg = attached(m, rank, media);
		uint64_t h;

		if (!seg)
			continue;
		if (alloc_largest_free(seg->alloc) >= size) {
			n++;
		} else if ((h = alloc_held(seg->alloc)) > 0) {
			*held = true;
			n += h >= size;
		}
	}
	return n;
}

#include "space.h"

#include "allocator.h"
#include "log.h"
#include "objects.h"
#include "persist.h"
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

static void holds_landed(void *arg)
{
	objects_space_freed(arg);
}

void space_release(struct meta *m, struct service *svc, uint32_t media, uint64_t offset, uint64_t unlink_seq)
{
	struct segment *seg = svc ? service_segment(svc, media) : NULL;

	if (!seg)
		return; /* the service left: its allocator went with it */
	if (alloc_release_after(seg->alloc, offset, unlink_seq)) {
		log_error("op=free rank=%u media=%u offset=%llu err=double_free", svc->rank, media,
		          (unsigned long long)offset);
		return;
	}
	/* requests parked for room retry once the batch lands: one waiter per batch, not per range */
	if (unlink_seq && unlink_seq != ALLOC_SEQ_NEVER && unlink_seq != m->hold_kick_seq &&
	    persist_seq_state(m->persist, unlink_seq) == PERSIST_SEQ_PENDING &&
	    persist_after_commit(m->persist, holds_landed, m) == 0)
		m->hold_kick_seq = unlink_seq;
}

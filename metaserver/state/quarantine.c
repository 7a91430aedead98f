#include "quarantine.h"

#include <stdlib.h>

#include "allocator.h"
#include "log.h"
#include "objects.h"
#include "services.h"
#include "space.h"

struct quarantined {
	struct list link;
	uint64_t offset, bytes;
	uint32_t media;
	uint64_t since_ms;   /* set aside */
	uint64_t running_ms; /* first frame from the owner after since_ms; 0: none yet */
};

void space_quarantine(struct meta *m, struct service *svc, uint32_t media, uint64_t offset, uint64_t now_ms)
{
	struct segment *seg = svc ? service_segment(svc, media) : NULL;
	struct quarantined *q;

	if (!seg)
		return; /* the service left: its allocator went with it */
	if (!(q = calloc(1, sizeof(*q)))) {
		/* no memory to remember it: keeping the space for ever is safe, handing it out is not */
		log_error("op=quarantine rank=%u media=%u offset=%llu err=no_memory (the space stays reserved)",
		          svc->rank, media, (unsigned long long)offset);
		return;
	}
	q->offset = offset;
	q->media = media;
	q->since_ms = now_ms;
	q->bytes = alloc_block_size(seg->alloc, offset);
	list_add_tail(&svc->quarantine, &q->link);
	m->stats.quarantined_total++;
	log_debug("op=quarantine rank=%u media=%u offset=%llu", svc->rank, media, (unsigned long long)offset);
}

void quarantine_seen(struct meta *m, struct service *svc, uint64_t seen_ms)
{
	struct list *it, *next;
	bool freed = false;

	for (it = svc->quarantine.next; it != &svc->quarantine; it = next) {
		struct quarantined *q = list_entry(it, struct quarantined, link);

		next = it->next;
		if (!q->running_ms && seen_ms > q->since_ms)
			q->running_ms = seen_ms;
		if (!q->running_ms || seen_ms < q->running_ms + QUARANTINE_RUN_MS)
			continue;
		list_del(&q->link);
		space_release(m, svc, q->media, q->offset, 0);
		free(q);
		freed = true;
	}
	if (freed)
		objects_space_freed(m);
}

void quarantine_fini(struct service *svc)
{
	while (svc->quarantine.next && !list_empty(&svc->quarantine)) {
		struct quarantined *q = list_entry(svc->quarantine.next, struct quarantined, link);

		list_del(&q->link);
		free(q);
	}
}

uint64_t quarantine_bytes(const struct meta *m, uint32_t media)
{
	uint64_t n = 0;

	for (uint32_t rank = 0; rank < m->rank_hi; rank++) {
		const struct service *svc = m->ranks[rank];

		for (const struct list *it = svc ? svc->quarantine.next : NULL; it && it != &svc->quarantine;
		     it = it->next) {
			const struct quarantined *q = list_entry(it, const struct quarantined, link);

			n += q->media == media ? q->bytes : 0;
		}
	}
	return n;
}

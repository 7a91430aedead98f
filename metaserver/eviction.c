#include "eviction.h"

#include "clock.h"
#include "log.h"
#include "objects.h"
#include "placement.h"

/* Evicts from the LRU tail until usage is at most target_used and need bytes are free; skips leased objects
 * (counted in *skipped). Returns objects evicted. */
static uint64_t evict_while(struct meta *m, uint32_t media, uint64_t target_used, uint64_t need, uint64_t *skipped)
{
	uint64_t now = clock_ms(), evicted = 0, used, total;
	struct list *it = m->lru[media].prev;

	placement_usage(m, media, &used, &total);
	while (it != &m->lru[media] && (used > target_used || total - used < need)) {
		struct object *o = list_entry(it, struct object, link);
		uint64_t freed = 0;

		it = it->prev;
		if (object_leased(o, now)) {
			(*skipped)++;
			continue;
		}
		for (int i = 0; i < o->nblobs; i++)
			if (o->blobs[i].svc)
				freed += (o->size + 4095) & ~(uint64_t)4095;
		log_debug("op=evict key=\"%.*s\" size=%llu", o->keylen, object_key(o), (unsigned long long)o->size);
		object_drop(m, o);
		used = used > freed ? used - freed : 0;
		evicted++;
	}
	m->stats.evictions += evicted;
	return evicted;
}

void eviction_check(struct meta *m, uint32_t media)
{
	uint64_t used, total, n, skipped = 0;

	placement_usage(m, media, &used, &total);
	if (total == 0 || used * 100 <= total * m->conf.evict_high)
		return;
	n = evict_while(m, media, total * m->conf.evict_low / 100, 0, &skipped);
	log_info("op=evict media=%u evicted=%llu used_before=%llu total=%llu", media, (unsigned long long)n,
	         (unsigned long long)used, (unsigned long long)total);
}

uint64_t eviction_make_room(struct meta *m, uint32_t media, uint64_t need, bool *blocked)
{
	uint64_t used, total, skipped = 0, n;

	placement_usage(m, media, &used, &total);
	if (total == 0)
		return 0;
	n = evict_while(m, media, total * m->conf.evict_low / 100, need, &skipped);
	*blocked = skipped > 0 || !list_empty(&m->zombies);
	return n;
}

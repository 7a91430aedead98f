#include "lru.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mmc/mmc.h"
#include "objects.h"

void lru_push(struct meta *m, struct object *o)
{
	olist_add_head(m, OLIST_LRU + object_media(o), o);
	o->stamp = ++m->lru_clock;
	o->stamp_dirty = true;
}

void lru_checkpoint(struct meta *m, uint64_t now_ms, bool force)
{
	uint64_t written = 0;

	if (!force && now_ms - m->lru_saved_ms < LRU_CHECKPOINT_MS)
		return;
	m->lru_saved_ms = now_ms;
	/* what moved since the last checkpoint went to a head, with a stamp above lru_saved: walk no further; and no
	 * further than LRU_CHECKPOINT_MAX records, newest first: the rest keep their older stamps */
	for (int i = 0; i < MEDIA_COUNT; i++) {
		for (struct object *o = olist_first(m, OLIST_LRU + i); o; o = olist_next(o)) {
			if (o->stamp <= m->lru_saved || (!force && written >= LRU_CHECKPOINT_MAX))
				break;
			if (o->stamp_dirty && o->persisted) {
				object_persist(m, o);
				written++;
			}
		}
	}
	m->lru_saved = m->lru_clock;
	if (written)
		log_debug("op=lru_checkpoint records=%llu", (unsigned long long)written);
}

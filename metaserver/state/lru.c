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

/* Newest first; equal stamps (records without one) in the order the load gave them: their index. */
struct ranked {
	struct object *o;
	size_t pos;
};

static int newest_first(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->o->stamp != y->o->stamp)
		return x->o->stamp > y->o->stamp ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

static int sort_one(struct meta *m, enum olist lru)
{
	struct ranked *r;
	struct object *o;
	size_t n = 0;

	for (o = olist_first(m, lru); o; o = olist_next(o))
		n++;
	if (n < 2)
		return 0;
	if (!(r = malloc(n * sizeof(*r))))
		return MMC_MALLOC_FAILED;
	n = 0;
	for (o = olist_first(m, lru); o; o = olist_next(o)) {
		r[n] = (struct ranked){o, n};
		n++;
	}
	qsort(r, n, sizeof(*r), newest_first);
	for (size_t i = 0; i < n; i++) {
		olist_del(r[i].o);
		olist_add_tail(m, lru, r[i].o);
	}
	free(r);
	return 0;
}

int lru_sort(struct meta *m)
{
	int rc = 0;

	for (int i = 0; i < MEDIA_COUNT; i++)
		rc = sort_one(m, OLIST_LRU + i) ? MMC_MALLOC_FAILED : rc;
	m->lru_saved = m->lru_clock;
	return rc;
}

#include "reclaim.h"

#include <event2/event.h>
#include <stdlib.h>

#include "block_record.h"
#include "deleter.h"
#include "kvcm_state.h"
#include "log.h"
#include "quota.h"

#define SCAN_FACTOR 8 /* blocks looked at per block reclaimed, at most */

struct cursor {
	struct instance *inst;
	struct list *at;
};

static bool evictable(const struct block *b)
{
	for (const struct location *l = b->locs; l; l = l->next)
		if (l->status == CLS_SERVING && !l->pending && !l->er_key)
			return true;
	return false;
}

/* The oldest evictable block among the cursors (advanced past what cannot be evicted). */
static struct cursor *oldest(struct cursor *cur, size_t n, uint64_t *scan_budget)
{
	struct cursor *best = NULL;

	for (size_t i = 0; i < n; i++) {
		struct cursor *c = &cur[i];

		while (c->at != &c->inst->lru && *scan_budget &&
		       !evictable(list_entry(c->at, struct block, lru_link))) {
			c->at = c->at->next;
			(*scan_budget)--;
		}
		if (c->at == &c->inst->lru || !*scan_budget)
			continue;
		if (!best || list_entry(c->at, struct block, lru_link)->lru_time_us <
		                 list_entry(best->at, struct block, lru_link)->lru_time_us)
			best = c;
	}
	return best;
}

static size_t evict(struct kvcm *k, struct cursor *c, uint64_t delay)
{
	struct block *b = list_entry(c->at, struct block, lru_link);
	size_t n = 0;

	c->at = c->at->next;
	for (struct location *l = b->locs; l; l = l->next) {
		if (l->status == CLS_SERVING && !l->pending && !l->er_key) {
			deleter_submit(k, c->inst, b, l, delay);
			n++;
		}
	}
	block_record_put(k, c->inst, b);
	return n;
}

static void reclaim_group(struct kvcm *k, struct group *g)
{
	struct cursor *cur = calloc(g->ninstances + 1, sizeof(*cur));
	uint64_t budget = k->conf.reclaim_batch, scan = budget * SCAN_FACTOR;
	uint64_t delay = g->delay_before_delete_ms > 0 ? (uint64_t)g->delay_before_delete_ms : 0;
	size_t n = 0, evicted = 0;
	struct cursor *c;

	if (!cur)
		return;
	chain_foreach(&k->instances, l)
	{
		struct instance *inst = chain_entry(l, struct instance, hlink);

		if (inst->group == g && n < g->ninstances)
			cur[n++] = (struct cursor){inst, inst->lru.next};
	}
	while (budget-- && quota_over_water(k, g) > 0 && (c = oldest(cur, n, &scan)))
		evicted += evict(k, c, delay);
	if (evicted) {
		k->reclaimed += evicted;
		log_info("op=kvcm_reclaim group=\"%s\" locations=%zu keys=%llu bytes=%llu", g->name, evicted,
		         (unsigned long long)g->use.keys, (unsigned long long)g->use.bytes);
	}
	free(cur);
}

void reclaim_run(struct kvcm *k)
{
	for (struct list *it = k->groups.next; it != &k->groups; it = it->next) {
		struct group *g = list_entry(it, struct group, link);

		if (quota_over_water(k, g) > 0)
			reclaim_group(k, g);
	}
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
	reclaim_run(arg);
}

int reclaim_start(struct kvcm *k)
{
	struct timeval tv = {k->conf.reclaim_interval_ms / 1000, (k->conf.reclaim_interval_ms % 1000) * 1000};

	k->reclaim_ev = event_new(k->base, -1, EV_PERSIST, tick, k);
	return k->reclaim_ev && event_add(k->reclaim_ev, &tv) == 0 ? 0 : -1;
}

void reclaim_stop(struct kvcm *k)
{
	if (k->reclaim_ev)
		event_free(k->reclaim_ev);
	k->reclaim_ev = NULL;
}

uint64_t reclaim_evicted(const struct kvcm *k)
{
	return k->reclaimed;
}

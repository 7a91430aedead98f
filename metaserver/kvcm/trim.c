#include "trim.h"

#include <event2/event.h>
#include <stdlib.h>

#include "block_index.h"
#include "deleter.h"
#include "instance.h"
#include "kvcm_server.h"
#include "log.h"
#include "mmc/mmc.h"

#define KEYS_PER_TURN 4096

struct trim {
	struct list link;
	struct kvcm *k;
	struct instance *inst;
	int64_t *keys;
	size_t n, next;
	struct event *ev;
};

static struct list trims = LIST_INIT(trims);

static void trim_free(struct trim *t)
{
	list_del(&t->link);
	instance_release(t->k, t->inst);
	event_free(t->ev);
	free(t->keys);
	free(t);
}

static void step(evutil_socket_t fd, short what, void *arg)
{
	struct trim *t = arg;
	uint64_t delay =
	    (uint64_t)(t->inst->group->delay_before_delete_ms > 0 ? t->inst->group->delay_before_delete_ms : 0);
	size_t end = t->next + KEYS_PER_TURN < t->n ? t->next + KEYS_PER_TURN : t->n;

	for (; t->next < end; t->next++) {
		struct block *b = block_find(t->inst, t->keys[t->next]);

		if (b)
			deleter_submit_block(t->k, t->inst, b, delay);
	}
	if (t->next < t->n) {
		event_active(t->ev, 0, 0);
		return;
	}
	log_info("op=kvcm_trim_done instance=\"%s\" keys=%zu", t->inst->id, t->n);
	trim_free(t);
}

int trim_instance(struct kvcm *k, struct instance *inst)
{
	struct trim *t = calloc(1, sizeof(*t));
	size_t n = 0;

	if (!t)
		return MMC_MALLOC_FAILED;
	t->keys = malloc((inst->nblocks + 1) * sizeof(*t->keys));
	t->ev = event_new(k->base, -1, 0, step, t);
	if (!t->keys || !t->ev) {
		free(t->keys);
		if (t->ev)
			event_free(t->ev);
		free(t);
		return MMC_MALLOC_FAILED;
	}
	for (struct list *it = inst->lru.next; it != &inst->lru; it = it->next)
		t->keys[n++] = list_entry(it, struct block, lru_link)->key;
	t->n = n;
	t->k = k;
	t->inst = inst;
	instance_hold(inst);
	list_add_tail(&trims, &t->link);
	step(-1, 0, t);
	return 0;
}

void trims_stop(struct kvcm *k)
{
	while (!list_empty(&trims))
		trim_free(list_entry(trims.next, struct trim, link));
}

#include "block_scan.h"

#include <event2/event.h>
#include <stdlib.h>

#include "block_index.h"
#include "deleter.h"
#include "instance.h"
#include "kvcm_state.h"
#include "log.h"
#include "mmc/mmc.h"

#define KEYS_PER_TURN 4096
/* Keys come in LRU order, so every lookup would wait for memory: fetch the buckets ahead, as reportEvent does. */
#define PREFETCH_AHEAD 8

struct scan {
	struct list link;
	struct kvcm *k;
	struct instance *inst;
	block_scan_fn fn;
	void *arg;
	const char *what;
	void (*done)(void *arg); /* a caller waiting for the end, or NULL */
	void *done_arg;
	int64_t *keys;
	size_t n, next;
	struct event *ev;
};

static struct list scans = LIST_INIT(scans);

static void scan_free(struct scan *t)
{
	list_del(&t->link);
	instance_release(t->k, t->inst);
	event_free(t->ev);
	free(t->keys);
	free(t->arg);
	free(t);
}

/* Runs fn on the blocks of keys [next, upto). */
static void advance(struct scan *t, size_t upto)
{
	size_t end = upto < t->n ? upto : t->n;

	for (; t->next < end; t->next++) {
		struct block *b;

		if (t->next + 2 * PREFETCH_AHEAD < t->n)
			block_prefetch(t->inst, t->keys[t->next + 2 * PREFETCH_AHEAD], false);
		if (t->next + PREFETCH_AHEAD < t->n)
			block_prefetch(t->inst, t->keys[t->next + PREFETCH_AHEAD], true);
		b = block_find(t->inst, t->keys[t->next]);

		if (b)
			t->fn(t->k, t->inst, b, t->arg);
	}
}

static void finish(struct scan *t)
{
	void (*done)(void *) = t->done;
	void *done_arg = t->done_arg;

	log_info("op=kvcm_%s_done instance=\"%s\" keys=%zu", t->what, t->inst->id, t->n);
	scan_free(t);
	if (done)
		done(done_arg);
}

static void step(evutil_socket_t fd, short what, void *arg)
{
	struct scan *t = arg;

	advance(t, t->next + KEYS_PER_TURN);
	if (t->next < t->n) {
		/* A timer, not event_active: libevent runs an event activated from an active callback in the same pass,
		 * so the whole scan would run before any request is read. A zero timeout waits for the next poll. */
		static const struct timeval next_turn = {0, 0};

		if (event_add(t->ev, &next_turn))
			event_active(t->ev, 0, 0);
		return;
	}
	finish(t);
}

int block_scan(struct kvcm *k, struct instance *inst, block_scan_fn fn, void *arg, const char *what,
               void (*done)(void *arg), void *done_arg)
{
	struct scan *t = calloc(1, sizeof(*t));
	size_t n = 0;

	if (!t) {
		free(arg);
		return MMC_MALLOC_FAILED;
	}
	t->keys = malloc((inst->blocks.n + 1) * sizeof(*t->keys));
	t->ev = event_new(k->base, -1, 0, step, t);
	if (!t->keys || !t->ev) {
		free(t->keys);
		if (t->ev)
			event_free(t->ev);
		free(t);
		free(arg);
		return MMC_MALLOC_FAILED;
	}
	for (struct list *it = inst->lru.next; it != &inst->lru; it = it->next)
		t->keys[n++] = list_entry(it, struct block, lru_link)->key;
	*t = (struct scan){.k = k,
	                   .inst = inst,
	                   .fn = fn,
	                   .arg = arg,
	                   .what = what,
	                   .done = done,
	                   .done_arg = done_arg,
	                   .keys = t->keys,
	                   .n = n,
	                   .ev = t->ev};
	instance_hold(inst);
	list_add_tail(&scans, &t->link);
	step(-1, 0, t);
	return 0;
}

static void delete_block(struct kvcm *k, struct instance *inst, struct block *b, void *arg)
{
	int64_t delay = inst->group->delay_before_delete_ms;

	deleter_submit_block(k, inst, b, delay > 0 ? (uint64_t)delay : 0);
}

int trim_instance(struct kvcm *k, struct instance *inst, void (*done)(void *arg), void *done_arg)
{
	return block_scan(k, inst, delete_block, NULL, "trim", done, done_arg);
}

void block_scans_finish(struct kvcm *k)
{
	struct list *it = scans.next, *next;

	for (; it != &scans; it = next) {
		struct scan *t = list_entry(it, struct scan, link);

		next = it->next;
		if (t->k == k && t->done) {
			advance(t, t->n);
			finish(t);
		}
	}
}

void block_scans_stop(struct kvcm *k)
{
	struct list *it = scans.next, *next;

	for (; it != &scans; it = next) {
		next = it->next;
		if (list_entry(it, struct scan, link)->k == k)
			scan_free(list_entry(it, struct scan, link));
	}
}

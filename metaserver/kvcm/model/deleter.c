#include "deleter.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "block_index.h"
#include "block_record.h"
#include "clock.h"
#include "instance.h"
#include "io_pool.h"
#include "kvcm_state.h"
#include "log.h"
#include "quota.h"
#include "storage_uri.h"

#define JOBS_PER_TURN 4096

struct del_job {
	struct io_job io;
	struct deleter *d;
	struct instance *inst;
	int64_t key;
	char loc_id[KVCM_NAME_MAX + 64];
	uint64_t due_ms;
	char **paths;
	size_t npaths;
	uint32_t unlinked;
};

struct deleter {
	struct kvcm *k;
	struct del_job **heap; /* min-heap on due_ms */
	size_t n, cap;
	struct event *timer;
	struct io_pool *io;
	uint64_t inflight; /* handed to the I/O pool */
	uint64_t deleted, files;
	int log_bucket;
};

static void heap_swap(struct deleter *d, size_t a, size_t b)
{
	struct del_job *t = d->heap[a];

	d->heap[a] = d->heap[b];
	d->heap[b] = t;
}

static int heap_push(struct deleter *d, struct del_job *j)
{
	struct del_job **h;
	size_t i;

	if (!(h = array_grow(d->heap, &d->cap, d->n + 1, sizeof(*h), 256)))
		return -1;
	d->heap = h;
	i = d->n++;
	d->heap[i] = j;
	while (i && d->heap[(i - 1) / 2]->due_ms > d->heap[i]->due_ms) {
		heap_swap(d, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	return 0;
}

static struct del_job *heap_pop(struct deleter *d)
{
	struct del_job *top = d->heap[0];
	size_t i = 0;

	d->heap[0] = d->heap[--d->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < d->n && d->heap[l]->due_ms < d->heap[m]->due_ms)
			m = l;
		if (r < d->n && d->heap[r]->due_ms < d->heap[m]->due_ms)
			m = r;
		if (m == i)
			break;
		heap_swap(d, i, m);
		i = m;
	}
	return top;
}

static void arm(struct deleter *d)
{
	uint64_t now = clock_ms(), wait;
	struct timeval tv;

	if (!d->n)
		return;
	wait = d->heap[0]->due_ms > now ? d->heap[0]->due_ms - now : 0;
	tv.tv_sec = (time_t)(wait / 1000);
	tv.tv_usec = (suseconds_t)(wait % 1000) * 1000;
	event_add(d->timer, &tv);
}

static void free_job(struct del_job *j)
{
	for (size_t i = 0; i < j->npaths; i++)
		free(j->paths[i]);
	free(j->paths);
	free(j);
}

/* The data is gone: drop the location's metadata (and its block when it was the last). */
static void finalize(struct del_job *j)
{
	struct kvcm *k = j->d->k;
	struct instance *inst = j->inst;
	struct block *b = block_find(inst, j->key);
	struct location *l = b ? location_find(b, j->loc_id) : NULL;

	if (l && l->pending) {
		usage_unpending(inst, b, l);
		location_unlink(b, l);
		usage_sub_location(inst, l);
		location_free(l);
		j->d->deleted++;
		if (!b->locs) {
			block_record_del(k, inst, b->key);
			block_remove(inst, b);
			usage_sub_key(inst);
		} else {
			block_record_put(k, inst, b);
		}
	}
	instance_release(k, inst);
	free_job(j);
}

static void unlink_work(struct io_job *io)
{
	struct del_job *j = (struct del_job *)io;

	for (size_t i = 0; i < j->npaths; i++)
		if (unlink(j->paths[i]) == 0)
			j->unlinked++;
}

static void unlink_done(struct io_job *io)
{
	struct del_job *j = (struct del_job *)io;

	j->d->inflight--;
	j->d->files += j->unlinked;
	finalize(j);
}

static void run_job(struct deleter *d, struct del_job *j)
{
	struct block *b = block_find(j->inst, j->key);
	struct location *l = b ? location_find(b, j->loc_id) : NULL;

	if (!l || !l->pending) {
		finalize(j);
		return;
	}
	storage_drop_mmc_objects(d->k, l);
	j->npaths = storage_release_data(d->k, l, &j->paths);
	if (!j->npaths) {
		finalize(j);
		return;
	}
	j->io.work = unlink_work;
	j->io.done = unlink_done;
	d->inflight++;
	io_pool_submit(d->io, &j->io);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct deleter *d = arg;
	uint64_t now = clock_ms();

	for (int i = 0; i < JOBS_PER_TURN && d->n && d->heap[0]->due_ms <= now; i++)
		run_job(d, heap_pop(d));
	arm(d);
}

void deleter_submit(struct kvcm *k, struct instance *inst, struct block *b, struct location *l, uint64_t delay_ms)
{
	struct deleter *d = k->deleter;
	struct del_job *j;

	if (l->pending)
		return;
	j = calloc(1, sizeof(*j));
	if (!j) {
		log_ratelimited(&d->log_bucket, LOG_ERROR, "op=kvcm_delete err=\"out of memory\"");
		return;
	}
	j->d = d;
	j->inst = inst;
	j->key = b->key;
	snprintf(j->loc_id, sizeof(j->loc_id), "%s", location_name(l));
	j->due_ms = clock_ms() + delay_ms;
	if (heap_push(d, j)) {
		free(j);
		return;
	}
	instance_hold(inst);
	l->status = CLS_DELETING;
	l->pending = true;
	usage_pending(inst, b, l);
	if (d->n == 1 || d->heap[0] == j)
		arm(d);
}

void deleter_submit_block(struct kvcm *k, struct instance *inst, struct block *b, uint64_t delay_ms)
{
	bool changed = false;

	for (struct location *l = b->locs; l; l = l->next) {
		if (!l->pending) {
			deleter_submit(k, inst, b, l, delay_ms);
			changed = true;
		}
	}
	if (changed)
		block_record_put(k, inst, b);
}

int deleter_start(struct kvcm *k)
{
	struct deleter *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	d->k = k;
	k->deleter = d;
	d->timer = evtimer_new(k->base, timer_cb, d);
	if (!d->timer || io_pool_start(&d->io, k->base, k->conf.io_threads))
		return -1;
	return 0;
}

void deleter_stop(struct kvcm *k)
{
	struct deleter *d = k->deleter;

	if (!d)
		return;
	io_pool_stop(d->io);
	while (d->n) {
		struct del_job *j = heap_pop(d);

		instance_release(k, j->inst);
		free_job(j);
	}
	if (d->timer)
		event_free(d->timer);
	free(d->heap);
	free(d);
	k->deleter = NULL;
}

uint64_t deleter_pending(const struct kvcm *k)
{
	return k->deleter ? k->deleter->n + k->deleter->inflight : 0;
}

uint64_t deleter_deleted(const struct kvcm *k)
{
	return k->deleter ? k->deleter->deleted : 0;
}

uint64_t deleter_files_unlinked(const struct kvcm *k)
{
	return k->deleter ? k->deleter->files : 0;
}

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
#include "due_heap.h"
#include "instance.h"
#include "io_pool.h"
#include "kvcm_state.h"
#include "log.h"
#include "mmc/mmc.h"
#include "persist.h"
#include "quota.h"
#include "storage_uri.h"

#define JOBS_PER_TURN   4096
#define DURABLE_POLL_MS 20 /* how often a job whose DELETING record is not on disk yet looks again */

struct del_job {
	struct io_job io;
	struct deleter *d;
	struct instance *inst;
	int64_t key;
	char loc_id[KVCM_NAME_MAX + 64];
	struct due_node due;
	char **paths;
	size_t npaths;
	uint32_t unlinked;
	uint64_t after_seq; /* the batch its DELETING record must be durable in before the data goes (0: not looked) */
};

struct deleter {
	struct kvcm *k;
	struct due_heap due; /* jobs by due time */
	struct event *timer;
	/* jobs due whose DELETING record is not on disk yet, looked at again every DURABLE_POLL_MS of real time (the
	 * due heap's clock is the logical one tests freeze) */
	struct del_job **deferred;
	size_t ndeferred, capdeferred;
	struct event *poll;
	struct io_pool *io;
	uint64_t inflight; /* handed to the I/O pool */
	uint64_t deleted, files;
	int log_bucket;
};

/* The earliest job, or NULL. */
static struct del_job *first(const struct deleter *d)
{
	struct due_node *top = due_heap_top(&d->due);

	return top ? due_entry(top, struct del_job, due) : NULL;
}

static struct del_job *pop(struct deleter *d)
{
	struct del_job *j = first(d);

	due_heap_remove(&d->due, &j->due);
	return j;
}

static void arm(struct deleter *d)
{
	uint64_t now = clock_ms(), wait;
	struct timeval tv;

	if (!first(d))
		return;
	wait = first(d)->due.due_ms > now ? first(d)->due.due_ms - now : 0;
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
	struct location *l = b ? location_find_as(b, j->loc_id, true) : NULL;

	if (l) {
		usage_unpending(inst, b, l);
		block_drop_location(k, inst, b, l);
		j->d->deleted++;
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

/*
 * Whether the record that marks j's location DELETING is on disk: the data goes only then. Before, a crash or a
 * failover would load the location as SERVING with no data behind it. The record was queued before the job first
 * runs, so the newest batch then holds it or came after it; a batch that failed is written again (the tables retry
 * their writes), and a leader that lost its lease never gets there (its commits fail at the fence).
 */
static bool record_durable(struct deleter *d, struct del_job *j)
{
	enum persist_seq_state st;

	if (!j->after_seq)
		j->after_seq = persist_wait_seq(d->k->persist);
	st = persist_seq_state(d->k->persist, j->after_seq);
	if (st == PERSIST_SEQ_LOST)
		j->after_seq = persist_wait_seq(d->k->persist);
	return st == PERSIST_SEQ_DURABLE;
}

static void defer(struct deleter *d, struct del_job *j)
{
	struct del_job **grown = array_grow(d->deferred, &d->capdeferred, d->ndeferred + 1, sizeof(*grown), 64);

	if (!grown) { /* out of memory: the location stays DELETING, as after a restart */
		instance_release(d->k, j->inst);
		free_job(j);
		return;
	}
	d->deferred = grown;
	d->deferred[d->ndeferred++] = j;
	if (!evtimer_pending(d->poll, NULL)) {
		struct timeval tv = {0, DURABLE_POLL_MS * 1000};

		evtimer_add(d->poll, &tv);
	}
}

static void run_job(struct deleter *d, struct del_job *j);

/* The deferred jobs once more: those whose record is on disk now run, the others wait again. */
static void poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct deleter *d = arg;
	struct del_job **jobs = d->deferred;
	size_t n = d->ndeferred;

	d->deferred = NULL;
	d->ndeferred = d->capdeferred = 0;
	for (size_t i = 0; i < n; i++)
		run_job(d, jobs[i]);
	free(jobs);
}

static void run_job(struct deleter *d, struct del_job *j)
{
	struct block *b = block_find(j->inst, j->key);
	struct location *l = b ? location_find_as(b, j->loc_id, true) : NULL;

	if (!l) {
		finalize(j);
		return;
	}
	if (!record_durable(d, j)) {
		defer(d, j);
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

void deleter_run_due(struct kvcm *k)
{
	struct deleter *d = k->deleter;
	uint64_t now = clock_ms();

	for (int i = 0; i < JOBS_PER_TURN && first(d) && first(d)->due.due_ms <= now; i++)
		run_job(d, pop(d));
	arm(d);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct deleter *d = arg;

	deleter_run_due(d->k);
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
	j->due.due_ms = clock_ms() + delay_ms;
	if (due_heap_push(&d->due, &j->due)) {
		free(j);
		return;
	}
	instance_hold(inst);
	l->status = CLS_DELETING;
	l->pending = true;
	usage_pending(inst, b, l);
	if (first(d) == j)
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
		return MMC_ERROR;
	d->k = k;
	k->deleter = d;
	d->timer = evtimer_new(k->base, timer_cb, d);
	d->poll = evtimer_new(k->base, poll_cb, d);
	if (!d->timer || !d->poll || io_pool_start(&d->io, k->base, k->conf.io_threads))
		return MMC_ERROR;
	return 0;
}

void deleter_stop(struct kvcm *k)
{
	struct deleter *d = k->deleter;

	if (!d)
		return;
	io_pool_stop(d->io);
	while (first(d)) {
		struct del_job *j = pop(d);

		instance_release(k, j->inst);
		free_job(j);
	}
	for (size_t i = 0; i < d->ndeferred; i++) {
		instance_release(k, d->deferred[i]->inst);
		free_job(d->deferred[i]);
	}
	free(d->deferred);
	if (d->poll)
		event_free(d->poll);
	if (d->timer)
		event_free(d->timer);
	due_heap_free(&d->due);
	free(d);
	k->deleter = NULL;
}

uint64_t deleter_pending(const struct kvcm *k)
{
	return k->deleter ? k->deleter->due.n + k->deleter->ndeferred + k->deleter->inflight : 0;
}

uint64_t deleter_deleted(const struct kvcm *k)
{
	return k->deleter ? k->deleter->deleted : 0;
}

uint64_t deleter_files_unlinked(const struct kvcm *k)
{
	return k->deleter ? k->deleter->files : 0;
}

/*
 * Worker threads for blocking I/O (unlinking the files of deleted blocks). A job's work() runs on a worker and
 * must not touch metadata; its done() runs afterwards on the loop thread, where metadata lives.
 */
#ifndef MMC_KVCM_IO_POOL_H
#define MMC_KVCM_IO_POOL_H

#include <stdint.h>

struct event_base;
struct io_pool;

struct io_job {
	struct io_job *next;
	void (*work)(struct io_job *j); /* worker thread */
	void (*done)(struct io_job *j); /* loop thread; frees the job */
};

int io_pool_start(struct io_pool **out, struct event_base *base, uint32_t threads);
/* Queues j. Returns 0, or a negative code (the caller still owns j). */
int io_pool_submit(struct io_pool *p, struct io_job *j);
/* Finishes queued work, joins the workers and runs the remaining done() callbacks. NULL is ignored. */
void io_pool_stop(struct io_pool *p);

#endif

#include "prefault.h"

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "quiet_thread.h"

#define SLICE ((size_t)2 << 20) /* a range goes in steps this long: a block the loop runs short of waits no longer */
#define LOW   4                 /* blocks ready below which the worker makes blocks before it faults in ranges */

struct range {
	char *p, *end; /* what is left of it */
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool running, stop;
	bool starved;       /* make failed (out of memory): no more blocks until the next take tries again */
	size_t block, left; /* a block's bytes; blocks the worker may still make */
	size_t ahead;       /* blocks to keep ready */
	void *(*make)(void);
	void (*drop)(void *);
	void *ready[PREFAULT_AHEAD]; /* a ring: ready[first], then the next nready - 1 */
	size_t first, nready;
	struct range ranges[PREFAULT_RANGES]; /* ranges[next] is the one in progress */
	size_t next, nranges;
	size_t faulted; /* bytes */
} pf = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Under mu, dropped while the block is made. */
static void make_block(void)
{
	void *b;

	pf.left--;
	pthread_mutex_unlock(&pf.mu);
	b = pf.make();
	pthread_mutex_lock(&pf.mu);
	if (!b) {
		pf.left++;
		pf.starved = true; /* out of memory: the loop's own mapping will tell, and its next take retries */
		return;
	}
	pf.ready[(pf.first + pf.nready++) % PREFAULT_AHEAD] = b;
	pf.faulted += pf.block;
}

/* Under mu, dropped while the pages are faulted in. */
static void fault_slice(void)
{
	struct range *r = &pf.ranges[pf.next];
	char *p = r->p;
	size_t len = (size_t)(r->end - p) < SLICE ? (size_t)(r->end - p) : SLICE;

	r->p += len;
	pf.next += r->p == r->end;
	pthread_mutex_unlock(&pf.mu);
	len = madvise(p, len, MADV_POPULATE_WRITE) == 0 ? len : 0; /* an old kernel, or a range given back: no harm */
	pthread_mutex_lock(&pf.mu);
	pf.faulted += len;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pf.mu);
	while (!pf.stop) {
		bool blocks = pf.left && !pf.starved && pf.nready < pf.ahead, ranges = pf.next < pf.nranges;

		if (blocks && (pf.nready < LOW || !ranges))
			make_block();
		else if (ranges)
			fault_slice();
		else
			pthread_cond_wait(&pf.cv, &pf.mu);
	}
	pthread_mutex_unlock(&pf.mu);
	return NULL;
}

bool prefault_start(size_t block, size_t max_blocks, size_t ahead, void *(*make)(void), void (*drop)(void *))
{
	int rc;

	if (pf.running)
		return false;
	pthread_mutex_lock(&pf.mu);
	pf.stop = pf.starved = false;
	pf.block = block;
	pf.left = max_blocks;
	pf.ahead = ahead < PREFAULT_AHEAD ? ahead : PREFAULT_AHEAD;
	pf.make = make;
	pf.drop = drop;
	pf.first = pf.nready = pf.next = pf.nranges = pf.faulted = 0;
	pthread_mutex_unlock(&pf.mu);
	rc = quiet_thread_create(&pf.thread, worker, NULL);
	pf.running = rc == 0;
	return pf.running;
}

void *prefault_take(void)
{
	void *b = NULL;

	if (!pf.running)
		return NULL;
	pthread_mutex_lock(&pf.mu);
	if (pf.nready) {
		b = pf.ready[pf.first];
		pf.first = (pf.first + 1) % PREFAULT_AHEAD;
		pf.nready--;
	}
	pf.starved = false;
	pthread_cond_signal(&pf.cv);
	pthread_mutex_unlock(&pf.mu);
	return b;
}

size_t prefault_ready(void)
{
	size_t n;

	pthread_mutex_lock(&pf.mu);
	n = pf.nready;
	pthread_mutex_unlock(&pf.mu);
	return n;
}

void prefault_range(void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start = (uintptr_t)p & ~(page - 1),
	          end = ((uintptr_t)p + len + page - 1) & ~(page - 1);

	if (!pf.running || !p || !len)
		return;
	pthread_mutex_lock(&pf.mu);
	if (pf.nranges < PREFAULT_RANGES) {
		pf.ranges[pf.nranges++] = (struct range){(char *)start, (char *)end};
		pthread_cond_signal(&pf.cv);
	}
	pthread_mutex_unlock(&pf.mu);
}

size_t prefault_stop(void)
{
	if (!pf.running)
		return 0;
	pthread_mutex_lock(&pf.mu);
	pf.stop = true;
	pthread_cond_signal(&pf.cv);
	pthread_mutex_unlock(&pf.mu);
	pthread_join(pf.thread, NULL);
	pf.running = false;
	for (; pf.nready; pf.nready--, pf.first = (pf.first + 1) % PREFAULT_AHEAD) {
		pf.drop(pf.ready[pf.first]);
		pf.faulted -= pf.block; /* what the load used, not what the worker made */
	}
	return pf.faulted;
}

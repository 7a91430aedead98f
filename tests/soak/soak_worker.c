/*
 * A worker process: one store that lends --pool-mb as a local service, and --threads workload threads on it.
 * It is forked by the parent before any store exists there, so the store is this process's own (mmc.h: no calls
 * after fork() on a parent's store).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "soak_thread.h"

#define LOG_LINES 20 /* libmmc warnings printed per process; around a kill there are many, all alike */

static atomic_int log_lines;
static int worker_index;

static void worker_log(int level, const char *msg)
{
	if (level < MMC_LOG_WARN)
		return;
	if (atomic_fetch_add(&log_lines, 1) < LOG_LINES)
		fprintf(stderr, "soak: worker %d: libmmc: %s\n", worker_index, msg);
}

static mmc_store *open_store(const struct soak_run *run, int *rc)
{
	mmc_local_config c = mmc_default_local_config();
	mmc_store *s = mmc_create();

	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "%s", run->meta_url);
	snprintf(c.protocol, sizeof(c.protocol), "%s", run->opts.protocol);
	c.dram_size = run->opts.pool_bytes;
	c.retry_ms = 20000; /* ride out the meta server restarts */
	c.heartbeat_ms = 200;
	c.rma_timeout_ms = run->opts.rma_timeout_ms; /* reads from a killed or stopped worker's pool give up */
	*rc = s ? mmc_setup(s, &c) : MMC_MALLOC_FAILED;
	if (*rc == MMC_OK)
		*rc = mmc_init(s, 0, true);
	if (*rc != MMC_OK) {
		mmc_destroy(s);
		return NULL;
	}
	return s;
}

static void *thread_main(void *arg)
{
	struct soak_thread *t = arg;
	struct soak_shm *shm = t->run->shm;
	int ph;

	while (!atomic_load(&shm->go))
		usleep(1000);
	while ((ph = atomic_load(&shm->phase)) != SOAK_STOP) {
		uint32_t gen = atomic_load(&shm->gen);

		if (ph == SOAK_VERIFY && t->gen != gen) {
			t->gen = gen;
			soak_sweep(t);
			atomic_fetch_add(&shm->swept, 1);
			continue;
		}
		soak_step(t, (enum soak_phase)ph);
	}
	return NULL;
}

static int thread_init(struct soak_thread *t, const struct soak_run *run, mmc_store *s, uint32_t writer)
{
	memset(t, 0, sizeof(*t));
	t->run = run;
	t->s = s;
	t->writer = writer;
	t->rng = (run->opts.seed ^ (0x9e3779b97f4a7c15ull * (writer + 1))) | 1;
	t->c = &run->shm->slot[writer];
	/* a batch of the biggest keys, or 16 MiB, whichever is more */
	t->budget = run->opts.max_size * 4 > (16u << 20) ? run->opts.max_size * 4 : (16u << 20);
	t->own = calloc(run->keys.per_writer, sizeof(*t->own));
	t->putbuf = aligned_alloc(4096, t->budget);
	t->getbuf = aligned_alloc(4096, t->budget);
	if (!t->own || !t->putbuf || !t->getbuf)
		return -1;
	/* registered: puts and gets move the bytes zero-copy, as an inference engine would; with --plain-buffers the
	 * odd threads do not register theirs (libmmc registers them per call where the provider needs it) */
	if (run->opts.plain_buffers && writer % 2)
		return 0;
	mmc_register_buffer(s, t->putbuf, t->budget);
	mmc_register_buffer(s, t->getbuf, t->budget);
	return 0;
}

static void thread_fini(struct soak_thread *t)
{
	free(t->own);
	free(t->putbuf);
	free(t->getbuf);
}

static int run_threads(const struct soak_run *run, mmc_store *s, int p)
{
	int n = run->opts.threads, started = 0, rc = 0;
	struct soak_thread *t = calloc((size_t)n, sizeof(*t));
	pthread_t *th = calloc((size_t)n, sizeof(*th));

	if (!t || !th) {
		rc = -1;
		goto out;
	}
	for (; started < n; started++) {
		if (thread_init(&t[started], run, s, (uint32_t)(p * n + started)) ||
		    pthread_create(&th[started], NULL, thread_main, &t[started])) {
			thread_fini(&t[started]);
			rc = -1;
			break;
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < started; i++)
		thread_fini(&t[i]);
out:
	free(t);
	free(th);
	return rc;
}

void soak_worker_main(const struct soak_run *run, int p)
{
	struct soak_counts *first = &run->shm->slot[p * run->opts.threads];
	mmc_store *s;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the parent */
	worker_index = p;
	mmc_set_log_handler(worker_log);
	s = open_store(run, &rc);
	first->init_rc = rc;
	if (!s) {
		fprintf(stderr, "soak: worker %d: mmc_init: %s\n", p, mmc_strerror(rc));
		_exit(3);
	}
	atomic_fetch_add(&run->shm->ready, 1);
	rc = run_threads(run, s, p);
	if (atomic_load(&log_lines) > LOG_LINES)
		fprintf(stderr, "soak: worker %d: %d more libmmc warnings\n", p, atomic_load(&log_lines) - LOG_LINES);
	mmc_destroy(s);
	_exit(rc ? 4 : 0);
}

/*
 * Many threads on one store: mixed batch put / get / remove over a small key space (so they collide) with a pool
 * small enough to evict. Every get returns exactly the bytes that were put under that key, or a clean miss.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "store_fixture.h"

#define THREADS 8
#define KEYS    64
#define BATCH   4

static struct metaserver meta;
static mmc_store *s, *peer;
static atomic_int bad, hits, misses, nputs;
static double stop_at;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A key's content never changes: size and bytes are functions of its number. */
static size_t key_size(int k)
{
	return 1024 + (size_t)(k * 977) % (60 * 1024);
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	char names[BATCH][32];
	const char *keys[BATCH];
	void *bufs[BATCH];
	size_t sizes[BATCH];
	int ks[BATCH], res[BATCH];

	for (int i = 0; i < BATCH; i++) {
		bufs[i] = malloc(64 * 1024);
		keys[i] = names[i];
	}
	while (now() < stop_at) {
		int op = rand_r(&seed) % 10;

		for (int i = 0; i < BATCH; i++) {
			ks[i] = rand_r(&seed) % KEYS;
			snprintf(names[i], sizeof(names[i]), "cc/%d", ks[i]);
			sizes[i] = key_size(ks[i]);
		}
		if (op < 4) {
			for (int i = 0; i < BATCH; i++)
				pattern_fill(bufs[i], sizes[i], (uint64_t)ks[i]);
			if (mmc_batch_put_from(s, keys, (const void *const *)bufs, sizes, BATCH, MMC_COPY_H2G, NULL,
			                       res))
				atomic_fetch_add(&bad, 1);
			atomic_fetch_add(&nputs, 1);
		} else if (op < 8) {
			if (mmc_batch_get_into(s, keys, bufs, sizes, BATCH, MMC_COPY_G2H, res)) {
				atomic_fetch_add(&bad, 1);
				continue;
			}
			for (int i = 0; i < BATCH; i++) {
				if (res[i] == MMC_OBJECT_NOT_EXISTS) {
					atomic_fetch_add(&misses, 1);
				} else if (res[i] == 0 &&
				           pattern_check(bufs[i], sizes[i], (uint64_t)ks[i]) == sizes[i]) {
					atomic_fetch_add(&hits, 1);
				} else {
					fprintf(stderr, "key %s: result %d or wrong bytes\n", keys[i], res[i]);
					atomic_fetch_add(&bad, 1);
				}
			}
		} else {
			mmc_batch_remove(s, keys, 2, res);
		}
	}
	for (int i = 0; i < BATCH; i++)
		free(bufs[i]);
	return NULL;
}

static void start(void)
{
	const char *env[] = {"ock.mmc.meta.evict_wait_ms=500", NULL};

	cr_assert_eq(metaserver_start(&meta, env), 0);
	s = fixture_store(meta.url, true, 2u << 20);
	peer = fixture_store(meta.url, true, 2u << 20);
}

static void stop(void)
{
	mmc_destroy(s);
	mmc_destroy(peer);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(concurrency, .init = start, .fini = stop, .timeout = 120);

Test(concurrency, mixed_batches_from_eight_threads)
{
	pthread_t t[THREADS];

	stop_at = now() + 4.0;
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	cr_log_info("nputs %d, hits %d, misses %d", atomic_load(&nputs), atomic_load(&hits), atomic_load(&misses));
	cr_assert_eq(atomic_load(&bad), 0, "a get returned wrong bytes or a call failed");
	cr_assert_gt(atomic_load(&hits), 100, "the test must actually read data");
	cr_assert_gt(atomic_load(&misses), 0, "removes and eviction must actually race with gets");
}

/* ---- a teardown while other threads are in calls on the store ---- */

struct reader {
	mmc_store *st;
	pthread_t th;
	atomic_int other; /* codes other than MMC_OK and MMC_CLIENT_NOT_INIT */
	atomic_int refused;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	const char *keys[4] = {"td/0", "td/1", "td/2", "td/3"};
	void *bufs[4];
	size_t sizes[4];
	int res[4], rc;

	for (int i = 0; i < 4; i++)
		bufs[i] = malloc(sizes[i] = 256 << 10);
	do {
		rc = mmc_batch_get_into(r->st, keys, bufs, sizes, 4, MMC_COPY_G2H, res);
		if (rc == MMC_CLIENT_NOT_INIT)
			atomic_fetch_add(&r->refused, 1);
		else if (rc || res[0] || res[1] || res[2] || res[3])
			atomic_fetch_add(&r->other, 1);
	} while (rc != MMC_CLIENT_NOT_INIT);
	for (int i = 0; i < 4; i++)
		free(bufs[i]);
	return NULL;
}

/*
 * An engine shutting down while its prefetch threads still read: mmc_teardown waits for the calls in progress and
 * later ones fail with MMC_CLIENT_NOT_INIT. The readers' calls used to find the connection and fabric freed under
 * them (a segfault in Python's close()).
 */
Test(concurrency, a_teardown_while_other_threads_read_waits_for_their_calls)
{
	mmc_store *st = fixture_store(meta.url, false, 0);
	struct reader r[4];

	for (int i = 0; i < 4; i++) {
		char key[8];

		snprintf(key, sizeof(key), "td/%d", i);
		fixture_put(peer, key, 256 << 10, (uint64_t)(60 + i));
	}
	for (int i = 0; i < 4; i++) {
		r[i] = (struct reader){.st = st};
		cr_assert_eq(pthread_create(&r[i].th, NULL, reader_main, &r[i]), 0);
	}
	usleep(200000);
	cr_assert_eq(mmc_teardown(st), 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(r[i].th, NULL);
		cr_expect_eq(atomic_load(&r[i].other), 0, "reader %d: a call failed otherwise", i);
		cr_expect_eq(atomic_load(&r[i].refused), 1);
	}
	mmc_destroy(st);
}

struct waiter {
	mmc_store *st;
	pthread_t th;
	int rc;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->rc = mmc_is_exist(w->st, "td/any");
	return NULL;
}

/* Nor for retry_ms: a call of another thread that waits for a lost meta server to come back fails at once. */
Test(concurrency, a_teardown_ends_the_waits_of_calls_for_a_lost_meta_server)
{
	mmc_local_config c = fixture_config(meta.url, 0);
	mmc_store *st = mmc_create();
	struct waiter w = {.st = st};
	uint64_t t0;

	c.retry_ms = 60000;
	cr_assert_eq(mmc_setup(st, &c), 0);
	cr_assert_eq(mmc_init(st, 0, false), 0);
	metaserver_kill(&meta);
	cr_assert_eq(pthread_create(&w.th, NULL, waiter_main, &w), 0);
	usleep(300000); /* it waits for the meta server */
	t0 = proc_now_ms();
	cr_assert_eq(mmc_teardown(st), 0);
	cr_expect_lt(proc_now_ms() - t0, 10000, "the teardown waited out the call's retry_ms");
	pthread_join(w.th, NULL);
	cr_expect_eq(w.rc, MMC_NOT_CONNECTED_META);
	mmc_destroy(st);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
}

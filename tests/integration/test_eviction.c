/*
 * DRAM eviction: LRU by bytes between the high and low watermarks, never under a read lease, and allocations that
 * wait for leased memory instead of failing. One local service of 8 MiB, watermarks 70 / 50.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "store_fixture.h"

#define MiB (1u << 20)

static struct metaserver meta;
static mmc_store *s;

static void start(void)
{
	const char *env[] = {"ock.mmc.evict_threshold_high=70", "ock.mmc.evict_threshold_low=50",
	                     "ock.mmc.meta.evict_wait_ms=3000", "ock.mmc.meta.lease_ttl_ms=1500", NULL};

	cr_assert_eq(metaserver_start(&meta, env), 0);
	s = fixture_store(meta.url, true, 8 * MiB);
}

static void stop(void)
{
	mmc_destroy(s);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(eviction, .init = start, .fini = stop, .timeout = 60);

static int put(const char *key, size_t size)
{
	void *buf = malloc(size);
	int rc;

	pattern_fill(buf, size, size);
	rc = mmc_put_from(s, key, buf, size, MMC_COPY_H2G, NULL);
	free(buf);
	return rc;
}

static void touch(const char *key)
{
	void *buf = malloc(MiB);

	cr_assert_eq(mmc_get_into(s, key, buf, MiB, MMC_COPY_G2H), 0, "get %s", key);
	free(buf);
}

Test(eviction, keeps_the_most_recently_used)
{
	char key[16];

	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(put(key, MiB), 0);
	}
	touch("k0"); /* k0 becomes the most recently used */
	/* k5 takes usage to 6 MiB = 75% > 70%: evict down to 50% (4 MiB): the two least recently used go */
	cr_assert_eq(put("k5", MiB), 0);
	cr_assert_eq(mmc_is_exist(s, "k1"), 0, "least recently used");
	cr_assert_eq(mmc_is_exist(s, "k2"), 0);
	cr_assert_eq(mmc_is_exist(s, "k0"), 1, "recently read");
	cr_assert_eq(mmc_is_exist(s, "k3"), 1);
	cr_assert_eq(mmc_is_exist(s, "k4"), 1);
	cr_assert_eq(mmc_is_exist(s, "k5"), 1);
	touch("k0");
	touch("k5");
}

Test(eviction, never_under_a_read_lease)
{
	const char *leased[] = {"held"};
	int res[1];
	char key[16];

	cr_assert_eq(put("held", MiB), 0);
	cr_assert_eq(mmc_batch_add_lease(s, leased, 1, 10000, res), 0);
	cr_assert_eq(res[0], 0);
	/* "held" is the oldest, but leased: others go instead, and it stays readable */
	for (int i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "fill%d", i);
		cr_assert_eq(put(key, MiB), 0, "put %s", key);
	}
	cr_assert_eq(mmc_is_exist(s, "held"), 1);
	touch("held");
	cr_assert_eq(mmc_batch_remove_lease(s, leased, 1), 0);
}

Test(eviction, a_full_pool_of_leased_objects_makes_puts_wait)
{
	const char *keys[8];
	char names[8][16];
	int res[8];

	for (int i = 0; i < 8; i++) {
		snprintf(names[i], sizeof(names[i]), "pin%d", i);
		keys[i] = names[i];
	}
	/* fill the pool to 100% with leased objects (an explicit lease per key) */
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(put(names[i], MiB), 0);
		cr_assert_eq(mmc_batch_add_lease(s, &keys[i], 1, 0, res), 0);
		cr_assert_eq(res[0], 0);
	}
	/* 4 MiB do not fit in the 3 MiB left and nothing is evictable: the put waits ~1.5 s for the leases to
	 * expire, then evicts and succeeds */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(put("late", 4 * MiB), 0, "waited for the leased memory");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_geq((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9, 1.0);
	cr_assert_eq(mmc_is_exist(s, "late"), 1);
}

Test(eviction, waiting_is_bounded)
{
	const char *k[] = {"big"};
	int res[1];

	cr_assert_eq(put("big", 7 * MiB), 0);
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 20000, res), 0);
	cr_assert_eq(put("more", 4 * MiB), MMC_NOT_ENOUGH_MEMORY, "gives up after ock.mmc.meta.evict_wait_ms");
	cr_assert_eq(mmc_is_exist(s, "big"), 1);
	cr_assert_eq(mmc_batch_remove_lease(s, k, 1), 0);
	cr_assert_eq(put("more", 4 * MiB), 0, "the lease ended: \"big\" can go now");
}

/* A batch put whose small key was stored (through the session's extent) before the allocation round trip of its
 * large one failed whole (timed out waiting for leased memory) is accepted: MMC_OK, each key's code in results.
 * It returned the round trip's error, which mmc.h makes mean "nothing is stored". Its own server and store: a
 * wait longer than the call, and a pool with room for the extent but not for the large key. */
Test(eviction, a_batch_that_stored_some_keys_is_accepted)
{
	const char *env[] = {"ock.mmc.meta.evict_wait_ms=5000", NULL};
	static char small[4096], large[24 * MiB];
	const char *warm[] = {"warm"}, *mixed[] = {"s1", "B"}, *pins[6];
	const void *wb[] = {small}, *mb[] = {small, large};
	size_t ws[] = {sizeof(small)}, ms[] = {sizeof(small), sizeof(large)};
	struct metaserver m2;
	mmc_local_config cc;
	char names[6][16];
	int res[6], rc;
	mmc_store *c;

	cr_assert_eq(metaserver_start(&m2, env), 0);
	cc = fixture_config(m2.url, 64 * MiB);
	cc.retry_ms = 0;
	cc.timeout_ms = 1000; /* under the server's evict_wait_ms: the large key's allocation times out */
	cr_assert((c = mmc_create()));
	cr_assert_eq(mmc_setup(c, &cc), 0);
	cr_assert_eq(mmc_init(c, 0, true), 0);
	cr_assert_eq(mmc_batch_put_from(c, warm, wb, ws, 1, MMC_COPY_H2G, NULL, res), 0, "the session's extent");
	for (int i = 0; i < 6; i++) { /* 48 of the 64 MiB, leased */
		snprintf(names[i], sizeof(names[i]), "pin%d", i);
		pins[i] = names[i];
		cr_assert_eq(mmc_put_from(c, names[i], large, 8 * MiB, MMC_COPY_H2G, NULL), 0);
	}
	cr_assert_eq(mmc_batch_add_lease(c, pins, 6, 60000, res), 0);
	rc = mmc_batch_put_from(c, mixed, mb, ms, 2, MMC_COPY_H2G, NULL, res);
	cr_assert_eq(res[0], 0, "the small key was not stored (%d): the test sets nothing up", res[0]);
	cr_expect_eq(rc, 0, "a batch that stored s1 returned %s", mmc_err_name(rc));
	cr_expect_neq(res[1], 0, "the large key could not have been stored");
	mmc_batch_remove_lease(c, pins, 6);
	mmc_destroy(c);
	cr_expect_eq(metaserver_cleanup(&m2), 0);
}

/*
 * Hash flooding the object index: keys a client computed to share one 64-bit value of the unkeyed hash the index
 * used to take (tests/support/flood_keys.c). The index is keyed per process now, so they spread over its buckets and
 * a full batch lookup among 50,000 of them costs what it costs among random keys. With the unkeyed hash every lookup
 * walked all 50,000 (11-12 s for one batch_is_exist, every other client waiting).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flood_keys.h"
#include "store_fixture.h"

#define STORED 50000
#define BATCH  12500 /* 4 batches store them */
#define PROBE  MMC_BATCH_MAX
/* A guard against a quadratic walk (seconds), far above a normal batch lookup (milliseconds), not a speed claim. */
#define BOUND_MS 3000

static struct metaserver meta;
static mmc_store *s;

static void start(void)
{
	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	/* every object takes a 4 KiB block; the pool is never touched (no copies) */
	s = fixture_store(meta.url, true, 256u << 20);
}

static void stop(void)
{
	mmc_destroy(s);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(hash_flood, .init = start, .fini = stop, .timeout = 300);

/* Allocates and publishes n one-byte objects without writing them: the cheapest way to fill the index. */
static void store_keys(const char *const *keys, size_t n)
{
	size_t *sizes = malloc(n * sizeof(*sizes));
	int32_t *ok = calloc(n, sizeof(*ok));
	int *res = malloc(n * sizeof(*res));
	mmc_gva *gvas = malloc(n * sizeof(*gvas));

	cr_assert(sizes && ok && res && gvas);
	for (size_t i = 0; i < n; i++)
		sizes[i] = 1;
	/* a write lease that outlasts a quadratic walk, so that a flooded index fails the bound below, not this */
	cr_assert_eq(mmc_batch_malloc(s, keys, sizes, n, MMC_MEDIA_DRAM, 120000, gvas), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_neq(gvas[i], 0, "key %zu not allocated", i);
	cr_assert_eq(mmc_batch_write_finish(s, keys, ok, n, res), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(res[i], 0, "key %zu not published: %d", i, res[i]);
	free(sizes);
	free(ok);
	free(res);
	free(gvas);
}

Test(hash_flood, keys_sharing_one_unkeyed_hash_do_not_slow_a_batch_lookup)
{
	char(*keys)[FLOOD_KEY_LEN + 1] = malloc((STORED + PROBE / 2) * sizeof(*keys));
	const char **ptr = malloc((STORED + PROBE / 2) * sizeof(*ptr)), **probe = malloc(PROBE * sizeof(*probe));
	int *exist = malloc(PROBE * sizeof(*exist));
	uint64_t t0, ms;

	cr_assert(keys && ptr && probe && exist);
	flood_string_keys(keys, STORED, 'a');
	flood_string_keys(keys + STORED, PROBE / 2, 'b'); /* the same hash, never stored */
	for (size_t i = 0; i < STORED + PROBE / 2; i++)
		ptr[i] = keys[i];
	for (size_t i = 0; i < STORED; i += BATCH)
		store_keys(ptr + i, BATCH);
	/* half stored (the first stored, deepest in a chain), half absent (a miss walks a whole chain) */
	for (size_t i = 0; i < PROBE / 2; i++) {
		probe[2 * i] = ptr[i];
		probe[2 * i + 1] = ptr[STORED + i];
	}
	t0 = proc_now_ms();
	cr_assert_eq(mmc_batch_is_exist(s, probe, PROBE, exist), 0);
	ms = proc_now_ms() - t0;
	for (size_t i = 0; i < PROBE; i++)
		cr_assert_eq(exist[i], i % 2 == 0, "key %zu (%s)", i, probe[i]);
	cr_expect_lt(ms, BOUND_MS, "a %d-key batch_is_exist among %d colliding keys took %llu ms", PROBE, STORED,
	             (unsigned long long)ms);
	free(keys);
	free(ptr);
	free(probe);
	free(exist);
}

/*
 * A reader on a local service's host, in the window of the service's rejoin: the meta server has taken the
 * service's Register (after a restart of the meta server: its keys are readable again at once), and the service has
 * not yet read the answer, so its pool header still says "registering" (incarnation 0). The reader waits for the
 * answer instead of failing a readable key, and fails it cleanly when the answer names another incarnation or
 * does not come in time. Never wrong bytes.
 *
 * The window is one round trip long in life (a rejoin with a durable answer made it long enough to fail a get in
 * two runs of five under ASan). Here the test holds it open by writing the owner's header, which takes the store's
 * private side (lib/store.h): this test links libmmc's internal static library. Everything else is the public API.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "pattern.h"
#include "store.h"
#include "store_fixture.h"

#define POOL           (16u << 20)
#define SIZE           100003
#define RMA_TIMEOUT_MS 600

static struct metaserver meta;
static mmc_store *svc; /* the local service holding every object */
static mmc_store *rd;  /* client only: the host path maps svc's pool, or tcp RMA reads it (MMC_HOST_PATH=off) */

static void start(void)
{
	mmc_local_config c;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	svc = fixture_store(meta.url, true, POOL);
	c = fixture_config(meta.url, POOL);
	c.rma_timeout_ms = RMA_TIMEOUT_MS;
	rd = mmc_create();
	cr_assert_eq(mmc_setup(rd, &c), 0);
	cr_assert_eq(mmc_init(rd, 0, false), 0);
}

static void stop(void)
{
	mmc_destroy(rd);
	mmc_destroy(svc);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(rejoin_window, .init = start, .fini = stop, .timeout = 60);

/* Puts key through rd and reads it once, so that rd knows svc's pool. true: rd maps it (the host path). */
static bool stored(const char *key, uint64_t seed)
{
	uint32_t rank = fixture_rank(svc);
	bool mapped;

	fixture_put(rd, key, SIZE, seed);
	cr_assert_eq(fixture_get(rd, key, SIZE, seed), 0);
	pthread_rwlock_rdlock(&rd->peers.lock);
	mapped = rd->peers.by_rank[rank] && rd->peers.by_rank[rank]->map;
	pthread_rwlock_unlock(&rd->peers.lock);
	cr_assert_eq(mapped, strcmp(getenv("MMC_HOST_PATH") ? getenv("MMC_HOST_PATH") : "on", "off") != 0,
	             "the host path is %s, and rd %s svc's pool", getenv("MMC_HOST_PATH"),
	             mapped ? "maps" : "does not map");
	return mapped;
}

static uint64_t svc_incarnation(void)
{
	uint32_t rank;
	uint64_t incarnation = 0;

	cr_assert(store_ident(svc, &rank, &incarnation));
	return incarnation;
}

/* What svc's pool header names; a pool no other process can map (the host path off) has none. */
static void set_header(uint64_t incarnation)
{
	if (svc->pool.shared)
		host_pool_set_incarnation(&svc->pool.host, incarnation);
}

struct answer {
	uint64_t after_ms, incarnation;
};

/* The owner reading its Register's answer, after_ms late: its header names the answer's incarnation. */
static void *answer_later(void *arg)
{
	const struct answer *a = arg;

	usleep((useconds_t)a->after_ms * 1000);
	set_header(a->incarnation);
	return NULL;
}

/* A get by rd while svc's header says "registering" until a's answer; its code, and its time in *ms. */
static int get_while_registering(const char *key, uint64_t seed, const struct answer *a, uint64_t *ms)
{
	pthread_t t;
	uint64_t t0;
	int rc;

	set_header(0);
	cr_assert_eq(pthread_create(&t, NULL, answer_later, (void *)a), 0);
	t0 = clock_ms();
	rc = fixture_get(rd, key, SIZE, seed);
	*ms = clock_ms() - t0;
	pthread_join(t, NULL);
	return rc;
}

Test(rejoin_window, a_reader_waits_for_the_owner_to_read_its_answer)
{
	bool mapped = stored("k", 1);
	struct answer a = {200, svc_incarnation()};
	uint64_t ms;
	int rc = get_while_registering("k", 1, &a, &ms);

	cr_assert_eq(rc, 0, "the key is readable: %d (%s)", rc, mmc_strerror(rc));
	if (mapped)
		cr_assert_geq(ms, 150, "the copy waited for the answer (%llu ms)", (unsigned long long)ms);
}

Test(rejoin_window, an_answer_naming_another_incarnation_fails_the_key)
{
	bool mapped = stored("k", 2);
	uint64_t was = svc_incarnation(), ms;
	struct answer a = {100, was + 1000};
	int rc = get_while_registering("k", 2, &a, &ms);

	set_header(was);
	/* over the network the provider's key decides, and the pool is the same: the bytes are still the key's */
	cr_assert_eq(rc, mapped ? MMC_LINK_NOT_FOUND : 0, "%d (%s)", rc, mmc_strerror(rc));
}

Test(rejoin_window, the_wait_ends_when_an_rma_would_have_timed_out)
{
	bool mapped = stored("k", 3);
	uint64_t was = svc_incarnation(), ms;
	struct answer a = {RMA_TIMEOUT_MS + 1500, was};
	int rc = get_while_registering("k", 3, &a, &ms);

	cr_assert_eq(rc, mapped ? MMC_LINK_NOT_FOUND : 0, "%d (%s)", rc, mmc_strerror(rc));
	if (mapped)
		cr_assert(ms >= RMA_TIMEOUT_MS - 50 && ms < RMA_TIMEOUT_MS + 2000, "gave up after %llu ms",
		          (unsigned long long)ms);
	cr_assert_eq(fixture_get(rd, "k", SIZE, 3), 0, "readable again once the owner has its answer");
}

/* Many keys in a pool whose owner never reads its answer (a Register answer lost): the call waits once, not once a
 * key, and fails them all. */
#define MANY 48

static void put_many(const char *prefix, char keys[MANY][32], const char *kp[MANY], void *bufs[MANY],
                     size_t sizes[MANY])
{
	for (int i = 0; i < MANY; i++) {
		snprintf(keys[i], sizeof(keys[i]), "%s%d", prefix, i);
		kp[i] = keys[i];
		sizes[i] = 4096;
		cr_assert_not_null(bufs[i] = calloc(1, sizes[i]));
		fixture_put(rd, keys[i], sizes[i], (uint64_t)i);
	}
}

Test(rejoin_window, a_batch_waits_once_for_an_answer_that_does_not_come)
{
	char keys[MANY][32];
	const char *kp[MANY];
	void *bufs[MANY];
	size_t sizes[MANY];
	int rcs[MANY];
	bool mapped = stored("k", 4);
	uint64_t was = svc_incarnation(), t0, ms;

	put_many("many", keys, kp, bufs, sizes);
	set_header(0);
	t0 = clock_ms();
	cr_assert_eq(mmc_batch_get_into(rd, kp, bufs, sizes, MANY, MMC_COPY_G2H, rcs), 0);
	ms = clock_ms() - t0;
	set_header(was);
	for (int i = 0; i < MANY; i++) {
		cr_assert_eq(rcs[i], mapped ? MMC_LINK_NOT_FOUND : 0, "key %d: %d", i, rcs[i]);
		free(bufs[i]);
	}
	/* one wait, and room for a loaded machine: a wait per key took 48 of them */
	cr_assert_lt(ms, 5 * RMA_TIMEOUT_MS, "the batch took %llu ms", (unsigned long long)ms);
}

/* A prefix read's deadline ends the wait: nothing lands, in about the deadline, and the pool is still readable. */
Test(rejoin_window, a_prefix_read_waits_no_longer_than_its_deadline)
{
	char keys[MANY][32];
	const char *kp[MANY];
	void *bufs[MANY];
	size_t sizes[MANY], landed = MANY;
	bool mapped = stored("k", 5);
	uint64_t was = svc_incarnation(), t0, ms;

	put_many("prefix", keys, kp, bufs, sizes);
	set_header(0);
	t0 = clock_ms();
	cr_assert_eq(mmc_batch_get_into_prefix(rd, kp, bufs, sizes, MANY, MMC_COPY_G2H, 150, &landed), 0);
	ms = clock_ms() - t0;
	set_header(was);
	if (mapped) {
		cr_assert_eq(landed, 0);
		cr_assert_lt(ms, 150 + 850, "the prefix read took %llu ms", (unsigned long long)ms);
	}
	cr_assert_eq(mmc_batch_get_into_prefix(rd, kp, bufs, sizes, MANY, MMC_COPY_G2H, 2000, &landed), 0);
	cr_assert_eq(landed, MANY, "readable once the owner has its answer");
	for (int i = 0; i < MANY; i++) {
		cr_assert_eq(pattern_check(bufs[i], sizes[i], (uint64_t)i), sizes[i]);
		free(bufs[i]);
	}
}

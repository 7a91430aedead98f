/*
 * What a caller sees while the meta server restarts, with ock.mmc.client.retry_milliseconds set: lookups (get,
 * exist, key info) and removes that were in flight when the server died go again on the new connection and
 * succeed; a put in flight is put again from the start (its placement died with the server) and succeeds, and
 * never leaves wrong bytes behind. Documented in docs/operations.md, "Restarting at 3 a.m.".
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_client.h"
#include "pattern.h"
#include "store_fixture.h"

#define KEYS  256
#define VALUE (16u << 10)
#define BATCH 16

static struct metaserver meta;
static mmc_store *st;
static atomic_bool stop_calls;
static atomic_int gets_ok, gets_bad, exists_bad, removes_ok, removes_bad, puts_ok, puts_lost, puts_bad;

static void key_of(char *buf, size_t len, int i)
{
	snprintf(buf, len, "restart/%d", i);
}

static void start(void)
{
	static unsigned char buf[VALUE];
	char key[64];

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	st = fixture_store(meta.url, true, 64u << 20);
	for (int i = 0; i < KEYS; i++) {
		key_of(key, sizeof(key), i);
		pattern_fill(buf, VALUE, (uint64_t)i);
		cr_assert_eq(mmc_put_from(st, key, buf, VALUE, MMC_COPY_H2G, NULL), 0);
	}
}

static void stop(void)
{
	mmc_destroy(st);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

/* Batch gets and exists of the keys nobody removes (the upper half), byte for byte. */
static void *reader(void *arg)
{
	static _Thread_local unsigned char bufs[BATCH][VALUE];
	char names[BATCH][64];
	const char *keys[BATCH];
	void *ptrs[BATCH];
	size_t sizes[BATCH];
	int results[BATCH];
	unsigned seed = (unsigned)(uintptr_t)arg;

	while (!atomic_load(&stop_calls)) {
		for (int j = 0; j < BATCH; j++) {
			int i = KEYS / 2 + (int)(rand_r(&seed) % (KEYS / 2));

			key_of(names[j], sizeof(names[j]), i);
			keys[j] = names[j];
			ptrs[j] = bufs[j];
			sizes[j] = VALUE;
		}
		mmc_batch_get_into(st, keys, ptrs, sizes, BATCH, MMC_COPY_G2H, results);
		for (int j = 0; j < BATCH; j++) {
			int i = atoi(names[j] + strlen("restart/"));

			if (results[j] == 0 && pattern_check(bufs[j], VALUE, (uint64_t)i) == VALUE)
				atomic_fetch_add(&gets_ok, 1);
			else if (atomic_fetch_add(&gets_bad, 1) < 5)
				cr_log_warn("get %s: %s", names[j], mmc_strerror(results[j]));
		}
		if (mmc_is_exist(st, keys[0]) != 1)
			atomic_fetch_add(&exists_bad, 1);
	}
	return NULL;
}

/* Removes some of the lower half one by one, each followed by a put of a new key; then only puts, so that both
 * are in flight around every kill. */
static void *writer(void *arg)
{
	static unsigned char buf[VALUE];
	char key[64];
	int rc;

	for (int i = 0; !atomic_load(&stop_calls); i++) {
		if (i < KEYS / 8) {
			key_of(key, sizeof(key), i);
			rc = mmc_remove(st, key);
			atomic_fetch_add(rc == 0 ? &removes_ok : &removes_bad, 1);
			usleep(2000);
		}
		key_of(key, sizeof(key), KEYS + i);
		pattern_fill(buf, VALUE, (uint64_t)(KEYS + i));
		rc = mmc_put_from(st, key, buf, VALUE, MMC_COPY_H2G, NULL);
		atomic_fetch_add(rc == 0 ? &puts_ok : rc == MMC_NOT_CONNECTED_META ? &puts_lost : &puts_bad, 1);
		if (rc == 0 && mmc_get_into(st, key, buf, VALUE, MMC_COPY_G2H) == 0 &&
		    pattern_check(buf, VALUE, (uint64_t)(KEYS + i)) != VALUE)
			atomic_fetch_add(&puts_bad, 1);
	}
	return NULL;
}

TestSuite(restart, .init = start, .fini = stop, .timeout = 120);

/* Polls (up to 10 s) until a get and a put have succeeded since the call: the traffic runs against the server of
 * the moment, and whatever was in flight across the last restart has come through. */
static void calls_go_on(void)
{
	int gets = atomic_load(&gets_ok), puts = atomic_load(&puts_ok);

	for (int i = 0; i < 1000 && (atomic_load(&gets_ok) <= gets || atomic_load(&puts_ok) <= puts); i++)
		usleep(10000);
}

Test(restart, lookups_removes_and_puts_ride_out_a_restart)
{
	pthread_t th[3];

	for (int t = 0; t < 2; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, reader, (void *)(uintptr_t)(t + 1)), 0);
	cr_assert_eq(pthread_create(&th[2], NULL, writer, NULL), 0);
	for (int kill = 0; kill < 3; kill++) {
		calls_go_on();
		metaserver_kill(&meta);
		cr_assert_eq(metaserver_restart(&meta, NULL), 0, "kill %d: the metaserver did not restart", kill);
	}
	calls_go_on();
	atomic_store(&stop_calls, true);
	for (int t = 0; t < 3; t++)
		pthread_join(th[t], NULL);
	cr_log_info("gets ok %d, bad %d; exists bad %d; removes ok %d, bad %d; puts ok %d, lost %d, bad %d", gets_ok,
	            gets_bad, exists_bad, removes_ok, removes_bad, puts_ok, puts_lost, puts_bad);
	cr_assert_gt(atomic_load(&gets_ok), 0);
	cr_assert_eq(atomic_load(&gets_bad), 0, "a get in flight across the restart failed or read wrong bytes");
	cr_assert_eq(atomic_load(&exists_bad), 0);
	cr_assert_eq(atomic_load(&removes_bad), 0, "a remove in flight across the restart failed");
	cr_assert_eq(atomic_load(&puts_bad), 0, "a put failed with something else than MMC_NOT_CONNECTED_META");
	cr_assert_gt(atomic_load(&puts_ok), 0);
	cr_assert_eq(atomic_load(&puts_lost), 0, "a put in flight across the restart failed instead of going again");
}

/* ---- a meta server that stays away: each call waits retry_ms once, however many round trips it makes ---- */

#define RETRY_MS 2000

/* Fails the test unless the call took less than retry_ms and a margin well short of a second retry_ms (each
 * round trip of a call used to start its own retry_ms: a put's extent grant and then its allocation, a lookup's
 * first try and then its second, twice retry_ms in all). */
static void expect_one_window(const char *what, uint64_t t0, int rc)
{
	uint64_t took = proc_now_ms() - t0;

	cr_log_info("%s with the meta server gone: %s after %llu ms", what, mmc_strerror(rc), (unsigned long long)took);
	cr_expect_eq(rc, MMC_NOT_CONNECTED_META, "%s: %s", what, mmc_strerror(rc));
	cr_expect_lt(took, RETRY_MS + 1000, "%s waited %llu ms with retry_ms %d", what, (unsigned long long)took,
	             RETRY_MS);
}

Test(unreachable, every_call_waits_one_retry_window, .timeout = 120)
{
	static unsigned char buf[VALUE];
	const char *keys[2] = {"gone/a", "gone/b"};
	const void *bufs[2] = {buf, buf};
	size_t sizes[2] = {VALUE, VALUE};
	int results[2], rc;
	mmc_local_config c;
	mmc_store *s;
	uint64_t t0;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	c = fixture_config(meta.url, 64u << 20);
	c.retry_ms = RETRY_MS;
	s = mmc_create();
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, true), 0);
	pattern_fill(buf, VALUE, 1);
	cr_assert_eq(mmc_put_from(s, "gone/old", buf, VALUE, MMC_COPY_H2G, NULL), 0); /* an extent is granted */
	metaserver_kill(&meta);

	t0 = proc_now_ms();
	expect_one_window("put_from", t0, mmc_put_from(s, "gone/new", buf, VALUE, MMC_COPY_H2G, NULL));
	t0 = proc_now_ms();
	rc = mmc_batch_put_from(s, keys, bufs, sizes, 2, MMC_COPY_H2G, NULL, results);
	expect_one_window("batch_put_from", t0, rc ? rc : results[0]);
	t0 = proc_now_ms();
	expect_one_window("get_into", t0, mmc_get_into(s, "gone/old", buf, VALUE, MMC_COPY_G2H));
	t0 = proc_now_ms();
	expect_one_window("is_exist", t0, mmc_is_exist(s, "gone/old"));
	t0 = proc_now_ms();
	expect_one_window("remove", t0, mmc_remove(s, "gone/old"));
	mmc_destroy(s);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

/* ---- the LRU order across a restart: eviction after it removes the least recently used, not the last keys ---- */

#define MiB (1u << 20)

static int lru_put(mmc_store *s, const char *key)
{
	static unsigned char buf[MiB];

	return mmc_put_from(s, key, buf, MiB, MMC_COPY_H2G, NULL);
}

/* Polls /metrics until the local service is attached again (its pool counted): a put then has room to evict in. */
static bool pool_attached(const struct metaserver *m)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd),
	         "curl -sf http://127.0.0.1:%u/metrics | grep -q '^mmc_pool_bytes{media=\"dram\"} [1-9]'",
	         m->admin_port);
	for (int i = 0; i < 200; i++) {
		if (system(cmd) == 0)
			return true;
		usleep(50000);
	}
	return false;
}

/*
 * Puts in an order unlike key order, a get of one of them, a restart, then a put past the high watermark: the two
 * least recently used go. Both stores loaded objects sorted by key and rebuilt the LRU in that order, so the keys
 * last in key order went (here k3, just read, and k4).
 */
Test(lru, the_lru_order_survives_a_restart, .timeout = 120)
{
	const char *env[] = {"ock.mmc.evict_threshold_high=70", "ock.mmc.evict_threshold_low=50", NULL};
	static const char *const order[] = {"k3", "k1", "k4", "k0", "k2"};
	static unsigned char buf[MiB];
	mmc_store *s;

	cr_assert_eq(metaserver_start(&meta, env), 0);
	s = fixture_store(meta.url, true, 8 * MiB);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(lru_put(s, order[i]), 0, "put %s", order[i]);
	cr_assert_eq(mmc_get_into(s, "k3", buf, MiB, MMC_COPY_G2H), 0); /* newest to oldest: k3 k2 k0 k4 k1 */
	cr_assert_eq(metaserver_stop(&meta), 0);
	cr_assert_eq(metaserver_restart(&meta, env), 0);
	cr_assert(pool_attached(&meta), "the local service did not rejoin");
	/* 6 of 8 MiB is past 70%: down to 50% (4 MiB), the two least recently used go */
	cr_assert_eq(lru_put(s, "k5"), 0);
	cr_expect_eq(mmc_is_exist(s, "k1"), 0, "k1 was the least recently used");
	cr_expect_eq(mmc_is_exist(s, "k4"), 0, "k4 was the next least recently used");
	cr_expect_eq(mmc_is_exist(s, "k3"), 1, "k3 was read last before the restart");
	cr_expect_eq(mmc_is_exist(s, "k2"), 1);
	cr_expect_eq(mmc_is_exist(s, "k0"), 1);
	cr_expect_eq(mmc_is_exist(s, "k5"), 1);
	mmc_destroy(s);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

/* ---- eviction after a restart, while a service has not rejoined ---- */

/*
 * Service B (with an SSD tier) holds the oldest objects; the server restarts, A rejoins and B does not (its process
 * left while the server was down). A's puts past the high watermark evict: the walk from the LRU's tail meets B's
 * objects first. It must pass over them: a demote of one had no connection to go on (the server crashed on it), and
 * dropping them frees none of the space being made (only attached pools are counted) while B may still come back
 * within its rejoin deadline. A's own oldest go instead.
 */
Test(detached, eviction_passes_over_a_service_that_has_not_rejoined, .timeout = 120)
{
	const char *env[] = {"ock.mmc.evict_threshold_high=70", "ock.mmc.evict_threshold_low=50", NULL};
	char ssd[300], key[16], cmd[200];
	mmc_local_config c;
	mmc_store *a, *b;

	cr_assert_eq(metaserver_start(&meta, env), 0);
	c = fixture_config(meta.url, 8 * MiB);
	snprintf(ssd, sizeof(ssd), "%s/b-ssd.bin", meta.dir);
	snprintf(c.ssd_path, sizeof(c.ssd_path), "%s", ssd);
	c.ssd_size = 64 * MiB;
	cr_assert_not_null(b = mmc_create());
	cr_assert_eq(mmc_setup(b, &c), 0);
	cr_assert_eq(mmc_init(b, 0, true), 0);
	for (int i = 0; i < 4; i++) { /* B is the only pool: its objects land there */
		snprintf(key, sizeof(key), "b%d", i);
		cr_assert_eq(lru_put(b, key), 0, "put %s", key);
	}
	a = fixture_store(meta.url, true, 8 * MiB);
	cr_assert_eq(metaserver_stop(&meta), 0);
	mmc_destroy(b); /* gone while the server is down: it never rejoins */
	cr_assert_eq(metaserver_restart(&meta, env), 0);
	cr_assert(pool_attached(&meta), "A did not rejoin");
	for (int i = 0; i < 7; i++) { /* 7 of A's 8 MiB: past 70% from the sixth on */
		snprintf(key, sizeof(key), "a%d", i);
		cr_assert_eq(lru_put(a, key), 0, "put %s", key);
	}
	cr_assert_eq(mmc_is_exist(a, "a6"), 1, "the server serves after the eviction");
	cr_expect_eq(mmc_is_exist(a, "a0"), 0, "A's least recently used went");
	cr_expect_eq(mmc_is_exist(a, "a1"), 0);
	cr_expect_eq(mmc_is_exist(a, "a2"), 1);
	/* B's four are still indexed (they come back if B does), beside A's five */
	snprintf(cmd, sizeof(cmd), "curl -sf http://127.0.0.1:%u/metrics | grep -qx 'mmc_objects 9'", meta.admin_port);
	cr_expect_eq(system(cmd), 0, "B's objects were dropped");
	mmc_destroy(a);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

/*
 * A put of a key whose object's lender has not rejoined a restarted server yet: the object exists (its lender is
 * on its way back, or is dropped with it at its rejoin deadline), so the put finds it, and the first value stays.
 * The put dropped the committed object as left over, and when the lender came back the key was gone.
 */
Test(detached, a_put_keeps_an_object_whose_lender_has_not_rejoined, .timeout = 120)
{
	static unsigned char buf[8192];
	char env_meta[128], reply[256];
	const char *env[] = {env_meta, NULL};
	struct node a;
	mmc_store *c;
	int rc = -1;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	cr_assert_eq(node_start(&a, env), 0);
	node_cmd(&a, reply, sizeof(reply), "init 1 %llu", 64ull << 20);
	cr_assert_eq(atoi(reply), 0, "%s", reply);
	node_cmd(&a, reply, sizeof(reply), "put k 8192 5");
	cr_assert_eq(atoi(reply), 0, "%s", reply);
	cr_assert_eq(kill(a.pid, SIGSTOP), 0); /* away while the server restarts */
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	c = fixture_store(meta.url, false, 0);
	pattern_fill(buf, sizeof(buf), 6);
	rc = mmc_put_from(c, "k", buf, sizeof(buf), MMC_COPY_H2G, NULL);
	cr_expect_eq(rc, MMC_OK, "the key exists, so the put is done: %d (%s)", rc, mmc_strerror(rc));
	cr_assert_eq(kill(a.pid, SIGCONT), 0);
	for (int i = 0; i < 100; i++) {
		node_cmd(&a, reply, sizeof(reply), "get k 8192 5");
		if ((rc = atoi(reply)) == 0)
			break;
		usleep(100000);
	}
	cr_expect_eq(rc, 0, "the lender came back and k is gone or changed: get %d", rc);
	cr_expect_eq(mmc_is_exist(c, "k"), 1);
	mmc_destroy(c);
	node_kill(&a);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

/* ---- a get whose lookup was sent again on the restarted server's connection ---- */

static mmc_store *lookup_st;
static int lookup_rc = -1;

static void *lookup_get(void *arg)
{
	static unsigned char buf[VALUE];

	lookup_rc = mmc_get_into(lookup_st, "lk", buf, VALUE, MMC_COPY_G2H);
	if (lookup_rc == 0 && pattern_check(buf, VALUE, 77) != VALUE)
		lookup_rc = 99;
	return NULL;
}

static double dram_used(void)
{
	double v = -1;

	cr_assert_eq(hc_metric(meta.admin_port, "mmc_pool_used_bytes{media=\"dram\"}", &v), 200);
	return v;
}

/*
 * A get whose lookup went out to a server that then died is sent again on the next connection (gets repeat); the
 * leases it brings back are that connection's. The get judged by the connection count from before its lookup: it
 * took them for lost, answered MMC_NOT_CONNECTED_META or went again, and never released them, so the object stayed
 * pinned for the lease's whole TTL (a remove left its space held). Now the get answers MMC_OK and releases them.
 */
Test(lookup, a_get_retried_on_a_new_connection_releases_its_leases, .timeout = 120)
{
	const char *env[] = {"ock.mmc.meta.lease_ttl_ms=60000", NULL};
	static unsigned char buf[VALUE];
	double before = 0;
	pthread_t th;

	cr_assert_eq(metaserver_start(&meta, env), 0);
	lookup_st = fixture_store(meta.url, true, 64u << 20);
	pattern_fill(buf, VALUE, 77);
	cr_assert_eq(mmc_put_from(lookup_st, "lk", buf, VALUE, MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(kill(meta.pid, SIGSTOP), 0);
	cr_assert_eq(pthread_create(&th, NULL, lookup_get, NULL), 0);
	usleep(300000); /* the lookup is out, unanswered */
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, env), 0);
	pthread_join(th, NULL);
	cr_expect_eq(lookup_rc, 0, "the get: %d (%s)", lookup_rc, mmc_strerror(lookup_rc));
	for (int i = 0; i < 100 && (before = dram_used()) <= 0; i++)
		usleep(50000);
	cr_assert_gt(before, 0, "the pool is back");
	cr_assert_eq(mmc_remove(lookup_st, "lk"), 0);
	for (int i = 0; i < 60 && dram_used() >= before; i++)
		usleep(50000);
	cr_expect_lt(dram_used(), before, "a lease the get left pins the removed object's space for its TTL");
	mmc_destroy(lookup_st);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

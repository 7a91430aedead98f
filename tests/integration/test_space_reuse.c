/*
 * Space is reused only after every durable record that points at it is gone from disk. The window this closes is
 * made wide on purpose: MMC_TEST_COMMIT_DELAY_MS makes the meta server's writer wait before each commit, so an
 * eviction's delete stays off disk for a second and a half. A put that needs the evicted object's space must not
 * get it in that time: if it did, its bytes would land under the evicted object's record, and a meta server killed
 * then would reload that record and serve the new bytes under the old key with MMC_OK. On the code before the fix
 * this test reads the second key's bytes back under the first.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "store_fixture.h"

#define POOL     (4u << 20)
#define VALUE    (3u << 20) /* one value fills the pool: the second put must evict the first */
#define DELAY_MS "1500"
#define SEED_OLD 0x01d
#define SEED_NEW 0x2e3

static struct metaserver meta;
static mmc_store *st;
static unsigned char *buf;

static void start(void)
{
	setenv("MMC_TEST_COMMIT_DELAY_MS", DELAY_MS, 1);
	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	unsetenv("MMC_TEST_COMMIT_DELAY_MS");
	st = fixture_store(meta.url, true, POOL);
	buf = malloc(VALUE);
	cr_assert_not_null(buf);
}

static void stop(void)
{
	mmc_destroy(st);
	free(buf);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

struct put_arg {
	const char *key;
	int rc;
};

static void *put_new(void *arg)
{
	struct put_arg *p = arg;
	unsigned char *b = malloc(VALUE);

	pattern_fill(b, VALUE, SEED_NEW);
	p->rc = mmc_put_from(st, p->key, b, VALUE, MMC_COPY_H2G, NULL);
	free(b);
	return NULL;
}

static void wait_exists(const char *key)
{
	for (int i = 0; i < 200 && mmc_is_exist(st, key) != 1; i++)
		usleep(50000);
}

TestSuite(space_reuse, .init = start, .fini = stop, .timeout = 120);

Test(space_reuse, an_evicted_objects_space_waits_for_its_delete_to_be_durable)
{
	struct put_arg p = {"reuse/new", -1};
	pthread_t th;
	int rc;

	pattern_fill(buf, VALUE, SEED_OLD);
	cr_assert_eq(mmc_put_from(st, "reuse/old", buf, VALUE, MMC_COPY_H2G, NULL), 0);
	/* the new put evicts the old object; its delete waits 1.5 s in the writer; kill the server meanwhile */
	cr_assert_eq(pthread_create(&th, NULL, put_new, &p), 0);
	for (int i = 0; i < 1000 && mmc_is_exist(st, "reuse/old") == 1; i++) /* until evicted: its delete is queued */
		usleep(1000);
	metaserver_kill(&meta);
	pthread_join(th, NULL);
	cr_log_info("the put in flight at the kill returned %d (%s)", p.rc, mmc_strerror(p.rc));
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);

	/* the delete never reached the disk, so the old object is back: it must hold its own bytes or be gone */
	wait_exists("reuse/old");
	memset(buf, 0, VALUE);
	rc = mmc_get_into(st, "reuse/old", buf, VALUE, MMC_COPY_G2H);
	if (rc == 0) {
		size_t good = pattern_check(buf, VALUE, SEED_OLD);

		cr_assert_eq(good, VALUE, "MMC_OK with wrong bytes from offset %zu%s", good,
		             pattern_check(buf, VALUE, SEED_NEW) == VALUE ? ": the new key's value" : "");
	} else {
		cr_log_info("the evicted key is gone after the restart: %s", mmc_strerror(rc));
	}
}

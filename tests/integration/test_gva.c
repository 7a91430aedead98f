/*
 * The GVA one-copy flow: batch_malloc / batch_copy / batch_write_finish and batch_add_lease / batch_copy /
 * batch_remove_lease, across processes, with the lease rules that keep readers safe.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_client.h"
#include "pattern.h"
#include "store_fixture.h"

#define KiB 1024u
#define MiB (1u << 20)

static struct metaserver meta;
static char env_meta[128], reply[256];
static const char *env[] = {env_meta, NULL};
static mmc_store *s; /* this process: a local service */

#define CMD(n, ...) (node_cmd((n), reply, sizeof(reply), __VA_ARGS__), atoi(reply))

static const char *conf[] = {"ock.mmc.meta.lease_ttl_ms=2000", "kvcm.service.enable_debug_service=true", NULL};

static void start(void)
{
	cr_assert_eq(metaserver_start(&meta, conf), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	s = fixture_store(meta.url, true, 8 * MiB);
}

/*
 * The server's logical clock (docs/kvcm.md, debugClock): body is {"freeze":true} or {"advance_ms":N}. An advance
 * runs the server's deadline sweep before the reply; it stays well under the clients' heartbeat timeout (10 s).
 */
static void meta_clock(const char *body)
{
	struct hc c = {-1, meta.admin_port};
	char *out = NULL;
	json_t *r;

	cr_assert_eq(hc_request(&c, "POST", "/api/debugClock", body, strlen(body), &out), 200, "debugClock %s", body);
	r = json_loads(out, 0, NULL);
	cr_assert(json_is_true(json_object_get(r, "frozen")), "debugClock %s: %s", body, out);
	json_decref(r);
	free(out);
	hc_close(&c);
}

static void stop(void)
{
	mmc_destroy(s);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(gva, .init = start, .fini = stop, .timeout = 60);

static void start_node(struct node *n, int lend)
{
	cr_assert_eq(node_start(n, env), 0);
	node_cmd(n, reply, sizeof(reply), "init %d %llu", lend, 16ull << 20);
	cr_assert_eq(atoi(reply), 0, "init: %s", reply);
}

/* Reference §4 item 9: 2 keys x 4 layers x 1 KiB, written by one process, read by another. */
Test(gva, layerwise_flow_across_processes)
{
	struct node w, r;

	start_node(&w, 1);
	start_node(&r, 0);
	cr_assert_eq(CMD(&w, "gwrite lw/ 2 4 1024 77"), 0, "writer: %s", reply);
	cr_assert_eq(CMD(&r, "exist lw/0"), 1);
	cr_assert_eq(CMD(&r, "gread lw/ 2 4 1024 77"), 0, "reader (99: bytes differ): %s", reply);
	/* the same object is an ordinary key too */
	cr_assert_eq(CMD(&r, "remove lw/1"), 0);
	/* DeepSeek-like shape: 16 blocks x 61 layers */
	cr_assert_eq(CMD(&w, "gwrite ds/ 16 61 2048 5"), 0, "%s", reply);
	cr_assert_eq(CMD(&r, "gread ds/ 16 61 2048 5"), 0, "%s", reply);
	node_kill(&w);
	node_kill(&r);
}

Test(gva, pending_writes_are_invisible_until_write_finish)
{
	const char *k[] = {"pending"};
	size_t size = 3 * KiB;
	mmc_gva gva;
	int32_t ok = 0;
	int res;
	char buf[3 * KiB], back[3 * KiB];
	mmc_gva g;
	void *b = buf, *bb = back;

	gva = 1;
	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_HBM, 0, &gva), MMC_INVALID_PARAM,
	             "no service lends accelerator memory");
	cr_assert_eq(gva, 0);
	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 0, &gva), 0);
	cr_assert_neq(gva, 0);
	cr_assert_neq(mmc_is_exist(s, "pending"), 1);
	cr_assert_eq(mmc_get_into(s, "pending", back, size, MMC_COPY_G2H), MMC_OBJECT_NOT_EXISTS);
	pattern_fill(buf, size, 3);
	g = gva;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_H2G, 0), 0);
	cr_assert_neq(mmc_is_exist(s, "pending"), 1, "written but not finished");
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 0, &res), 0);
	cr_assert_eq(res, MMC_OBJECT_NOT_EXISTS, "no read lease on an unfinished object");
	cr_assert_eq(mmc_batch_write_finish(s, k, &ok, 1, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(mmc_batch_write_finish(s, k, &ok, 1, &res), 0);
	cr_assert_eq(res, 0, "write_finish twice is fine");
	cr_assert_eq(mmc_is_exist(s, "pending"), 1);
	cr_assert_eq(mmc_get_into(s, "pending", back, size, MMC_COPY_G2H), 0);
	cr_assert_eq(pattern_check(back, size, 3), size);
	/* a copy into a published object is skipped, not an error, and changes nothing */
	memset(buf, 0xee, size);
	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 0, &gva), 0);
	cr_assert_eq(g, gva, "malloc of an existing key returns its GVA");
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_H2G, 0), 0);
	cr_assert_eq(mmc_get_into(s, "pending", back, size, MMC_COPY_G2H), 0);
	cr_assert_eq(pattern_check(back, size, 3), size);
	(void)bb;
}

/* A malloc of a key already allocated and not finished (a repeat in the batch, another thread's shared prefix)
 * gives its GVA and leaves the first allocation's write grant standing: it used to add a grant that expired at
 * once, which retired the first, so the writer's copy was refused and its finish published the pool's old bytes. */
Test(gva, a_second_malloc_of_an_unfinished_key_leaves_the_writer_its_grant)
{
	const char *k[] = {"twice", "twice"};
	size_t sizes[] = {4 * KiB, 4 * KiB};
	char buf[4 * KiB], back[4 * KiB];
	void *b = buf;
	mmc_gva gvas[2], again;
	int res[2];

	cr_assert_eq(mmc_batch_malloc(s, k, sizes, 2, MMC_MEDIA_DRAM, 30000, gvas), 0);
	cr_assert_neq(gvas[0], 0);
	cr_assert_eq(gvas[1], gvas[0], "a repeat in the batch gives the same GVA");
	cr_assert_eq(mmc_batch_malloc(s, k, sizes, 1, MMC_MEDIA_DRAM, 30000, &again), 0);
	cr_assert_eq(again, gvas[0], "a second malloc gives the same GVA");
	pattern_fill(buf, sizes[0], 5);
	cr_assert_eq(mmc_batch_copy(s, gvas, &b, sizes, 1, MMC_COPY_H2G, 0), 0, "the writer's grant was retired");
	cr_assert_eq(mmc_batch_write_finish(s, k, (int32_t[]){0}, 1, res), 0);
	cr_assert_eq(res[0], 0);
	cr_assert_eq(mmc_get_into(s, "twice", back, sizes[0], MMC_COPY_G2H), 0);
	cr_assert_eq(pattern_check(back, sizes[0], 5), sizes[0], "the published bytes are not the ones written");
}

/* A remove of a key whose GVA allocation is still within its write lease leaves the allocation alone (as a remove
 * made before the malloc would): a copy into it may be on its way, and its space must not go to the next put. It
 * used to be freed at once, and the writer's copy then landed in another object. */
Test(gva, a_remove_leaves_an_allocation_within_its_write_lease)
{
	const char *k[] = {"being-written"};
	size_t size = 4 * KiB;
	char buf[4 * KiB], back[4 * KiB];
	void *b = buf;
	mmc_gva gva, g;
	int32_t ok = 0;
	int res;
	struct node other;

	start_node(&other, 0);
	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 0, &gva), 0);
	cr_assert_eq(CMD(&other, "remove being-written"), MMC_OBJECT_NOT_EXISTS, "nothing readable to remove: %s",
	             reply);
	pattern_fill(buf, size, 21);
	g = gva;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_H2G, 0), 0);
	cr_assert_eq(mmc_batch_write_finish(s, k, &ok, 1, &res), 0);
	cr_assert_eq(res, 0, "its writer still finishes it");
	cr_assert_eq(mmc_get_into(s, "being-written", back, size, MMC_COPY_G2H), 0);
	cr_assert_eq(pattern_check(back, size, 21), size);
	node_kill(&other);
}

/*
 * A malloc of a published key hands back its range as "already written" (copies into it are skipped), and a store
 * that never finishes it keeps that grant. Once the key is removed and its space goes to a new key, that stale
 * grant must not stand for the new one: it did, where it started past the new allocation's start, and a layer's
 * copy into the new key was skipped as already written; the key was then published over the old key's bytes.
 */
Test(gva, a_grant_left_unfinished_does_not_answer_for_the_next_key_in_its_space)
{
	const char *pair[] = {"left/0", "left/1"}, *nk[] = {"next"};
	size_t size = 4 * KiB, sizes[] = {4 * KiB, 4 * KiB}, two = 8 * KiB;
	char buf[8 * KiB], back[8 * KiB];
	void *bufs[2] = {buf, buf + 4 * KiB};
	mmc_gva g[2], again, next, at[2];
	int32_t ok[2] = {0, 0};
	int res[2];
	const char *hi;

	/* two adjacent 4 KiB objects; the one higher up is re-allocated and left unfinished */
	cr_assert_eq(mmc_batch_malloc(s, pair, sizes, 2, MMC_MEDIA_DRAM, 0, g), 0);
	cr_assert_eq(g[1] > g[0] ? g[1] - g[0] : g[0] - g[1], 4 * KiB, "adjacent in a fresh pool");
	pattern_fill(buf, sizeof(buf), 31);
	cr_assert_eq(mmc_batch_copy(s, g, bufs, sizes, 2, MMC_COPY_H2G, 0), 0);
	cr_assert_eq(mmc_batch_write_finish(s, pair, ok, 2, res), 0);
	cr_assert(res[0] == 0 && res[1] == 0);
	hi = g[1] > g[0] ? pair[1] : pair[0];
	cr_assert_eq(mmc_batch_malloc(s, &hi, &size, 1, MMC_MEDIA_DRAM, 0, &again), 0);
	cr_assert_eq(again, g[1] > g[0] ? g[1] : g[0], "a published key's own range");
	cr_assert_eq(mmc_remove(s, pair[0]), 0);
	cr_assert_eq(mmc_remove(s, pair[1]), 0);
	/* the freed 8 KiB is the best fit for an 8 KiB key (removed space may be held back a moment) */
	for (int i = 0;; i++) {
		cr_assert_lt(i, 50, "the removed space was not given out again");
		cr_assert_eq(mmc_batch_malloc(s, nk, &two, 1, MMC_MEDIA_DRAM, 0, &next), 0);
		if (next == (g[0] < g[1] ? g[0] : g[1]))
			break;
		cr_assert_eq(mmc_batch_write_finish(s, nk, &(int32_t){1}, 1, res), 0);
		usleep(100000);
	}
	/* written one layer at a time, as a layer-wise engine does */
	pattern_fill(buf, sizeof(buf), 32);
	at[0] = next;
	at[1] = next + 4 * KiB;
	cr_assert_eq(mmc_batch_copy(s, at, bufs, sizes, 2, MMC_COPY_H2G, 0), 0);
	cr_assert_eq(mmc_batch_write_finish(s, nk, ok, 1, res), 0);
	cr_assert_eq(res[0], 0);
	memset(back, 0, sizeof(back));
	cr_assert_eq(mmc_get_into(s, "next", back, two, MMC_COPY_G2H), 0);
	cr_assert_eq(pattern_check(back, two, 32), two, "every byte is the new key's");
}

struct malloc_arg {
	const char *key;
	size_t size;
	mmc_gva gva;
	int rc;
};

static void *malloc_thread(void *arg)
{
	struct malloc_arg *a = arg;

	a->rc = mmc_batch_malloc(s, &a->key, &a->size, 1, MMC_MEDIA_DRAM, 0, &a->gva);
	return NULL;
}

/*
 * Threads of a store share one session with the server. A thread whose write lease ran out, whose key another
 * thread then allocated again, must not publish that allocation with its late finish: it did (a finish named only
 * the key), and readers got the other thread's bytes half written. Now its finish names its own allocation.
 */
Test(gva, a_late_finish_does_not_publish_another_thread_s_allocation_of_the_key)
{
	const char *k[] = {"retried"};
	struct malloc_arg b = {"retried", 8 * KiB, 0, -1};
	size_t size = 8 * KiB;
	char buf[8 * KiB], back[8 * KiB];
	void *p = buf;
	mmc_gva mine, g;
	pthread_t th;
	int res;

	meta_clock("{\"freeze\":true}");
	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 500, &mine), 0);
	cr_assert_neq(mine, 0);
	meta_clock("{\"advance_ms\":500}"); /* this thread's write lease runs out: the server reclaims it */
	cr_assert_eq(pthread_create(&th, NULL, malloc_thread, &b), 0);
	pthread_join(th, NULL);
	cr_assert_eq(b.rc, 0);
	cr_assert_neq(b.gva, 0, "another thread allocates the key again");
	cr_assert_eq(mmc_batch_write_finish(s, k, &(int32_t){0}, 1, &res), 0);
	cr_assert_eq(res, MMC_UNMATCHED_KEY, "the late finish names an allocation that is gone");
	cr_assert_neq(mmc_is_exist(s, "retried"), 1, "the other thread's allocation is not published by it");
	pattern_fill(buf, size, 41);
	g = b.gva;
	cr_assert_eq(mmc_batch_copy(s, &g, &p, &size, 1, MMC_COPY_H2G, 0), 0, "the other thread's grant still holds");
	cr_assert_eq(mmc_batch_write_finish(s, k, &(int32_t){0}, 1, &res), 0);
	cr_assert_eq(res, 0, "a finish from another thread than the malloc names the key's live allocation");
	cr_assert_eq(mmc_get_into(s, "retried", back, size, MMC_COPY_G2H), 0);
	cr_assert_eq(pattern_check(back, size, 41), size);
}

Test(gva, write_finish_results)
{
	const char *k[] = {"never-allocated", "fails"};
	size_t size = 4 * KiB;
	mmc_gva gva;
	int32_t wr[2] = {0, 1};
	int res[2];

	cr_assert_eq(mmc_batch_malloc(s, &k[1], &size, 1, MMC_MEDIA_DRAM, 0, &gva), 0);
	cr_assert_eq(mmc_batch_write_finish(s, k, wr, 2, res), 0);
	cr_assert_eq(res[0], MMC_UNMATCHED_KEY);
	cr_assert_eq(res[1], 0, "a failed write removes the key");
	cr_assert_eq(mmc_is_exist(s, "fails"), 0);
	cr_assert_eq(mmc_batch_write_finish(s, k, wr, 0, res), MMC_INVALID_PARAM);
}

Test(gva, copies_outside_what_this_store_owns_are_refused)
{
	const char *k[] = {"ranged"};
	size_t size = 8 * KiB, big = 8 * KiB + 1, one = 1;
	mmc_gva gva;
	char buf[16 * KiB], back[8 * KiB];
	mmc_gva g, gs[2];
	void *b = buf, *bs[2];
	size_t ss[2];
	int res;
	mmc_key_info info;

	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 0, &gva), 0);
	pattern_fill(buf, size, 21);
	g = gva;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &big, 1, MMC_COPY_H2G, 0), MMC_INVALID_PARAM, "one byte past the end");
	g = gva + size;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &one, 1, MMC_COPY_H2G, 0), MMC_INVALID_PARAM, "just after the end");
	g = 0x1234;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &one, 1, MMC_COPY_H2G, 0), MMC_INVALID_PARAM, "not a GVA");
	/* one bad range in a batch: nothing at all is copied */
	gs[0] = gva;
	bs[0] = buf;
	ss[0] = size;
	gs[1] = gva + 4 * size;
	bs[1] = buf;
	ss[1] = 16;
	cr_assert_eq(mmc_batch_copy(s, gs, bs, ss, 2, MMC_COPY_H2G, 0), MMC_INVALID_PARAM);
	g = gva;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_H2G, 0), 0, "the whole range is fine");
	cr_assert_eq(mmc_batch_write_finish(s, k, &(int32_t){0}, 1, &res), 0);
	/* reads need a lease */
	memset(back, 0x5a, sizeof(back));
	b = back;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_G2H, 0), MMC_INVALID_PARAM, "no lease");
	for (size_t i = 0; i < sizeof(back); i++)
		cr_assert_eq((unsigned char)back[i], 0x5a, "refused copies touch no memory");
	cr_assert_eq(mmc_get_key_info(s, "ranged", 0, &info), 0);
	cr_assert_eq(info.gva[0], gva);
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 0, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &big, 1, MMC_COPY_G2H, 0), MMC_INVALID_PARAM, "past the leased object");
	g = gva + 4 * KiB; /* gva + offset: the second half */
	size = 4 * KiB;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_G2H, 0), 0);
	cr_assert_eq(memcmp(back, buf + 4 * KiB, 4 * KiB), 0);
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_G2G, 0), MMC_INVALID_PARAM, "G2G");
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_AUTO, 0), MMC_INVALID_PARAM, "AUTO has no way");
	cr_assert_eq(mmc_batch_remove_lease(s, k, 1), 0);
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_G2H, 0), MMC_INVALID_PARAM, "released");
}

Test(gva, remove_during_a_read_lease)
{
	const char *k[] = {"leased"};
	size_t size = 2 * MiB;
	char *buf = malloc(size), *back = malloc(size), *whole = malloc(8 * MiB), name[32];
	mmc_gva g;
	void *b = back;
	mmc_gva gva;
	int res;
	mmc_key_info info;

	pattern_fill(buf, size, 8);
	cr_assert_eq(mmc_put_from(s, "leased", buf, size, MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_get_key_info(s, "leased", 0, &info), 0);
	gva = info.gva[0];
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 20000, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(mmc_remove(s, "leased"), 0);
	cr_assert_eq(mmc_is_exist(s, "leased"), 0, "new readers miss at once");
	cr_assert_eq(mmc_get_into(s, "leased", back, size, MMC_COPY_G2H), MMC_OBJECT_NOT_EXISTS);
	/* churn the 8 MiB pool (puts, removes, eviction): nothing may land on the leased 2 MiB */
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "churn%d", i);
		memset(back, i, size);
		cr_assert_eq(mmc_put_from(s, name, back, size, MMC_COPY_H2G, NULL), 0, "%s", name);
		if (i % 3 == 0)
			mmc_remove(s, name);
	}
	g = gva;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_G2H, 0), 0);
	cr_assert_eq(pattern_check(back, size, 8), size, "the leased bytes are intact");
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "churn%d", i);
		mmc_remove(s, name);
	}
	/* the whole pool is free except the leased range: an 8 MiB object cannot be placed (bounded wait) */
	cr_assert_eq(mmc_put_from(s, "whole", whole, 8 * MiB, MMC_COPY_H2G, NULL), MMC_NOT_ENOUGH_MEMORY);
	cr_assert_eq(mmc_batch_remove_lease(s, k, 1), 0);
	cr_assert_eq(mmc_put_from(s, "whole", whole, 8 * MiB, MMC_COPY_H2G, NULL), 0, "released: the space is reused");
	cr_assert_eq(mmc_remove(s, "whole"), 0);
	free(buf);
	free(back);
	free(whole);
}

struct lease_race {
	pthread_barrier_t go;
	const char *const *keys;
	unsigned delay_us;
};

static void *remove_lease_after(void *arg)
{
	struct lease_race *r = arg;

	pthread_barrier_wait(&r->go);
	usleep(r->delay_us);
	mmc_batch_remove_lease(s, r->keys, 1);
	return NULL;
}

/*
 * One thread adds a key's lease while another removes it: whichever order the server saw, this store must agree. A
 * remove sent while the add was in flight, whose local drop ran before the add's grant was entered, left a grant
 * for a lease the server had let go: copies under it read a range free for reuse and returned MMC_OK.
 */
Test(gva, a_remove_lease_racing_an_add_lease_leaves_no_grant_the_server_let_go)
{
	const char *k[] = {"raced"};
	size_t size = 64 * KiB;
	char *buf = malloc(size);
	struct lease_race r = {.keys = k};
	mmc_key_info info;
	int res, held = 0;

	pattern_fill(buf, size, 4);
	cr_assert_eq(mmc_put_from(s, "raced", buf, size, MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_get_key_info(s, "raced", 0, &info), 0);
	pthread_barrier_init(&r.go, NULL, 2);
	for (int i = 0; i < 200; i++) {
		pthread_t t;
		mmc_gva g = info.gva[0];
		void *b = buf;
		int copied, released;

		r.delay_us = (unsigned)(i % 50);
		cr_assert_eq(pthread_create(&t, NULL, remove_lease_after, &r), 0);
		pthread_barrier_wait(&r.go);
		cr_assert_eq(mmc_batch_add_lease(s, k, 1, 20000, &res), 0);
		pthread_join(t, NULL);
		copied = mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_G2H, 0);
		released = mmc_batch_remove_lease(s, k, 1); /* MMC_LEASE_EXPIRED: not held here, or not by the server */
		cr_assert(copied != 0 || released == 0,
		          "round %d: a copy ran (%d) under a grant whose lease the server no longer held (%d)", i,
		          copied, released);
		held += copied == 0;
	}
	cr_log_info("the lease outlived the race in %d of 200 rounds", held);
	pthread_barrier_destroy(&r.go);
	cr_assert_eq(mmc_remove(s, "raced"), 0);
	free(buf);
}

Test(gva, an_expired_lease_is_reported)
{
	const char *k[] = {"short"};
	size_t size = 64 * KiB;
	char *buf = malloc(size);
	mmc_gva g;
	void *b = buf;
	int res;
	mmc_key_info info;

	pattern_fill(buf, size, 1);
	cr_assert_eq(mmc_put_from(s, "short", buf, size, MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_get_key_info(s, "short", 0, &info), 0);
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 100, &res), 0);
	cr_assert_eq(res, 0);
	usleep(250000); /* deliberate: the 100 ms lease ends by the client's clock too, which only time moves */
	g = info.gva[0];
	memset(buf, 0x5a, size);
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_G2H, 0), MMC_LEASE_EXPIRED);
	for (size_t i = 0; i < size; i++)
		cr_assert_eq((unsigned char)buf[i], 0x5a, "a read past its lease wrote the buffer at %zu", i);
	cr_assert_eq(mmc_batch_remove_lease(s, k, 1), MMC_LEASE_EXPIRED);
	/* renewing extends */
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 100, &res), 0);
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 5000, &res), 0);
	usleep(250000); /* deliberate: past the first 100 ms, by both clocks */
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_G2H, 0), 0);
	cr_assert_eq(mmc_batch_remove_lease(s, k, 1), 0);
	free(buf);
}

Test(gva, a_dead_writers_allocation_is_reclaimed_after_its_lease)
{
	struct node w;
	const char *k[] = {"unfinished/0"};
	size_t size = 4 * KiB;
	mmc_gva gva;
	int res;
	char buf[4 * KiB];
	mmc_gva g;
	void *b = buf;
	int32_t ok = 0;

	meta_clock("{\"freeze\":true}");
	start_node(&w, 1);
	cr_assert_eq(CMD(&w, "gwrite unfinished/ 1 1 4096 1 500"), 0, "%s", reply);
	node_kill(&w);
	cr_assert_neq(mmc_is_exist(s, "unfinished/0"), 1);
	cr_assert_eq(mmc_batch_write_finish(s, k, &ok, 1, &res), 0);
	cr_assert_eq(res, MMC_UNMATCHED_KEY, "another store cannot finish it");
	meta_clock("{\"advance_ms\":500}"); /* the 500 ms write lease runs out */
	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 0, &gva), 0);
	cr_assert_neq(gva, 0, "the key is free again");
	pattern_fill(buf, size, 2);
	g = gva;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_L2G, 0), 0);
	cr_assert_eq(mmc_batch_write_finish(s, k, &ok, 1, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(mmc_is_exist(s, "unfinished/0"), 1);
}

Test(gva, an_expired_write_lease_refuses_copies)
{
	const char *k[] = {"slow-writer"};
	size_t size = 4 * KiB;
	mmc_gva gva;
	char buf[4 * KiB];
	mmc_gva g;
	void *b = buf;
	int res;

	meta_clock("{\"freeze\":true}");
	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 100, &gva), 0);
	usleep(300000); /* the client judges its copy of the lease by its own clock, which runs */
	g = gva;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_H2G, 0), MMC_LEASE_EXPIRED,
	             "the space may belong to someone else now");
	meta_clock("{\"advance_ms\":100}"); /* and the server's sweep reclaims it */
	cr_assert_eq(mmc_batch_write_finish(s, k, &(int32_t){0}, 1, &res), 0);
	cr_assert_eq(res, MMC_UNMATCHED_KEY, "reclaimed");
}

Test(gva, a_lease_the_server_lost_is_not_reported_released)
{
	const char *k[] = {"lost-lease"}, *twice[] = {"lost-lease", "lost-lease"};
	char buf[4 * KiB];
	int res;

	pattern_fill(buf, sizeof(buf), 5);
	cr_assert_eq(mmc_put_from(s, k[0], buf, sizeof(buf), MMC_COPY_H2G, NULL), 0);
	/* a key named twice is released by its first entry */
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 30000, &res), 0);
	cr_assert_eq(mmc_batch_remove_lease(s, twice, 2), 0);
	/* a lease this store still records, but the restarted server never had */
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 30000, &res), 0);
	cr_assert_eq(res, 0);
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, conf), 0);
	for (int i = 0; i < 100 && mmc_is_exist(s, k[0]) != 1; i++)
		usleep(100000); /* the store reconnects on its own schedule */
	cr_assert_eq(mmc_is_exist(s, k[0]), 1);
	cr_assert_eq(mmc_batch_remove_lease(s, k, 1), MMC_LEASE_EXPIRED);
}

/* A GVA kept past its key's write lease, once the space is this store's again: a plain copy reaches the object now
 * granted there (mmc.h), a keyed copy is refused before anything moves, whether the space went to another key or
 * to the same key at another place. */
static mmc_gva malloc_until_at(const char *prefix, char *name, size_t len, size_t size, mmc_gva at)
{
	const char *k[] = {name};
	mmc_gva g = 0;

	/* the write lease runs out; the server sets the space aside and frees it once this store has been seen running
	 * for a second (its frames: the allocations that look for it) */
	for (int i = 0; i < 60 && g != at; i++) {
		usleep(100000); /* deliberate: the server's sweep and quarantine run on its real clock */
		snprintf(name, len, "%s%d", prefix, i);
		cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 30000, &g), 0);
	}
	cr_assert_eq(g, at, "the reclaimed space was not allocated again");
	return g;
}

/* One keyed copy of one range of key at gva: the key's result, or the call's code. */
static int keyed_copy(const char *key, mmc_gva gva, uint64_t off, void *buf, size_t size)
{
	int res = -1,
	    rc = mmc_batch_copy_keys(s, &key, &gva, &(uint32_t){1}, &off, &buf, &size, 1, MMC_COPY_H2G, 0, &res);

	return rc ? rc : res;
}

/* Another store's unfinished allocation: a malloc of its key gives its GVA, and copies into it are refused, each
 * call as its header says. */
Test(gva, copies_into_another_store_s_unfinished_allocation_are_refused)
{
	const char *k[] = {"theirs"};
	size_t size = 4 * KiB;
	char buf[4 * KiB];
	mmc_store *other = fixture_store(meta.url, false, 0);
	mmc_gva mine, theirs, g;
	void *b = buf;

	memset(buf, 0x33, sizeof(buf));
	cr_assert_eq(mmc_batch_malloc(other, k, &size, 1, MMC_MEDIA_DRAM, 0, &theirs), 0);
	cr_assert_neq(theirs, 0);
	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 0, &mine), 0);
	cr_assert_eq(mine, theirs, "a malloc of a key allocated already gives its GVA");
	g = mine;
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &size, 1, MMC_COPY_H2G, 0), MMC_INVALID_PARAM, "no grant here");
	cr_assert_eq(keyed_copy("theirs", mine, 0, buf, size), MMC_LEASE_EXPIRED);
	cr_assert_eq(mmc_batch_write_finish(other, k, &(int32_t){1}, 1, &(int){0}), 0);
	mmc_destroy(other);
}

Test(gva, a_keyed_copy_of_a_stale_gva_does_not_reach_the_next_key)
{
	const char *old[] = {"stale/old"};
	char name[32], buf[4 * KiB], back[4 * KiB];
	const char *next[] = {name};
	size_t size = 4 * KiB;
	void *p = buf;
	mmc_gva was, now;
	uint64_t off[2] = {0, 0};
	int res, two[2];

	cr_assert_eq(mmc_batch_malloc(s, old, &size, 1, MMC_MEDIA_DRAM, 100, &was), 0);
	now = malloc_until_at("stale/next/", name, sizeof(name), size, was);
	pattern_fill(buf, size, 61);
	pattern_fill(back, size, 62);
	/* one call, the next key's range and the stale one: the stale key fails alone, moving nothing */
	cr_assert_eq(mmc_batch_copy_keys(s, (const char *const[]){name, old[0]}, (const mmc_gva[]){now, was},
	                                 (const uint32_t[]){1, 1}, off, (void *const[]){buf, back},
	                                 (const size_t[]){size, size}, 2, MMC_COPY_H2G, 0, two),
	             0);
	cr_assert_eq(two[0], 0);
	cr_assert_eq(two[1], MMC_LEASE_EXPIRED);
	cr_assert_eq(keyed_copy(old[0], was, 0, p, size), MMC_LEASE_EXPIRED);
	cr_assert_eq(keyed_copy(name, now, 1, p, size), MMC_INVALID_PARAM, "a range past the object");
	cr_assert_eq(keyed_copy(name, now, 0, NULL, size), MMC_INVALID_PARAM);
	cr_assert_eq(keyed_copy(NULL, was, 0, p, size), MMC_INVALID_PARAM);
	cr_assert_eq(keyed_copy("", was, 0, p, size), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_batch_copy_keys(s, NULL, &was, &(uint32_t){1}, off, &p, &size, 1, MMC_COPY_H2G, 0, &res),
	             MMC_INVALID_PARAM);
	cr_assert_eq(mmc_batch_copy_keys(s, old, NULL, &(uint32_t){1}, off, &p, &size, 1, MMC_COPY_H2G, 0, &res),
	             MMC_INVALID_PARAM);
	cr_assert_eq(mmc_batch_copy_keys(s, old, &was, &(uint32_t){1}, off, &p, &size, 1, MMC_COPY_H2G, 0, NULL),
	             MMC_INVALID_PARAM);
	cr_assert_eq(mmc_batch_write_finish(s, next, &(int32_t){0}, 1, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(mmc_get_into(s, name, back, size, MMC_COPY_G2H), 0);
	cr_assert_eq(pattern_check(back, size, 61), size, "the stale range's bytes reached the next key");
}

Test(gva, a_keyed_copy_of_a_stale_gva_does_not_reach_the_key_s_new_place)
{
	const char *k[] = {"moved"}, *nb[] = {"moved/neighbour"};
	char name[32], buf[4 * KiB], back[8 * KiB];
	size_t size = 8 * KiB, half = 4 * KiB;
	void *p = buf;
	mmc_gva was, now, g, spare;
	int res;

	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 100, &was), 0);
	cr_assert_eq(mmc_batch_malloc(s, nb, &half, 1, MMC_MEDIA_DRAM, 100, &spare), 0);
	malloc_until_at("moved/filler/", name, sizeof(name), half, was); /* the old place's first half */
	cr_assert_eq(mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 30000, &now), 0);
	cr_assert(now != was && was + half >= now && was + half < now + size,
	          "the key's new place covers its old "
	          "second half: %#lx %#lx",
	          (unsigned long)was, (unsigned long)now);
	/* the old allocation's second half, by its stale GVA: inside the key's new grant, at another offset */
	pattern_fill(buf, half, 71);
	g = was + half;
	cr_assert_eq(keyed_copy(k[0], was, half, p, half), MMC_LEASE_EXPIRED);
	cr_assert_eq(mmc_batch_copy(s, &g, &p, &half, 1, MMC_COPY_H2G, 0), 0, "a plain copy cannot tell");
	memset(back, 0, sizeof(back));
	for (int i = 0; i < 2; i++) {
		pattern_fill(buf, half, 72 + i);
		cr_assert_eq(keyed_copy(k[0], now, i * half, p, half), 0);
	}
	cr_assert_eq(mmc_batch_write_finish(s, k, &(int32_t){0}, 1, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(mmc_get_into(s, "moved", back, size, MMC_COPY_G2H), 0);
	cr_assert_eq(pattern_check(back, half, 72), half);
	cr_assert_eq(pattern_check(back + half, half, 73), half);
}

/* A store lending room for one large key beside small ones. */
static void start_large(void)
{
	cr_assert_eq(metaserver_start(&meta, conf), 0);
	s = fixture_store(meta.url, true, 288 * MiB);
}

TestSuite(gva_lease, .init = start_large, .fini = stop, .timeout = 60);

/*
 * A keyed copy runs each key's ranges under that key's own write lease: a key whose lease ends during the call fails
 * alone (its remaining writes are not made: the space may be another object's by then), and the call's other keys,
 * with time left on theirs, go on. The short lease is planned with a little time left and a range long enough to
 * outlast it (256 MiB); should the plan come too late, the short key fails before moving anything, the same result.
 */
Test(gva_lease, a_key_whose_write_lease_ends_during_a_keyed_copy_fails_alone)
{
	const char *shrt[] = {"lease/short"}, *lng[] = {"lease/long"};
	size_t big = 256 * MiB, small = 4 * KiB;
	char *src = malloc(big), back[4 * KiB];
	mmc_gva g_short, g_long;
	uint64_t off[2] = {0, 0};
	int two[2] = {-1, -1}, res;

	cr_assert_not_null(src);
	pattern_fill(src, big, 81);
	cr_assert_eq(mmc_batch_malloc(s, lng, &small, 1, MMC_MEDIA_DRAM, 30000, &g_long), 0);
	cr_assert_eq(mmc_batch_malloc(s, shrt, &big, 1, MMC_MEDIA_DRAM, 300, &g_short), 0);
	usleep(290 * 1000);
	cr_assert_eq(mmc_batch_copy_keys(s, (const char *const[]){shrt[0], lng[0]}, (const mmc_gva[]){g_short, g_long},
	                                 (const uint32_t[]){1, 1}, off, (void *const[]){src, src},
	                                 (const size_t[]){big, small}, 2, MMC_COPY_H2G, 0, two),
	             0);
	cr_expect_eq(two[0], MMC_LEASE_EXPIRED, "the short lease ended during its copy");
	cr_expect_eq(two[1], 0, "the long one's key went on");
	cr_assert_eq(mmc_batch_write_finish(s, lng, &(int32_t){0}, 1, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(mmc_get_into(s, lng[0], back, small, MMC_COPY_G2H), 0);
	cr_expect_eq(pattern_check(back, small, 81), small);
	free(src);
}

/*
 * The meta server's policy layer without sockets or processes: placement, eviction (watermarks, LRU order, leases,
 * waiting allocations), the allocation queue, allocation extents and tier moves, over a real state layer (objects,
 * services, LMDB in a temporary directory) with the logical clock frozen. policy_ops is this file's recorder, so every
 * reply and every BlobTask the policy layer sends is checked here.
 */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc_queue.h"
#include "clock.h"
#include "eviction.h"
#include "extents.h"
#include "lease.h"
#include "meta_conf.h"
#include "meta_policy.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "persist.h"
#include "policy_ops.h"
#include "quarantine.h"
#include "service_secret.h"
#include "services.h"
#include "space.h"
#include "tier.h"

#define MiB      (1ull << 20)
#define SERVICES 3
#define MAX_SEEN 512 /* a test stages 256 reads of one key */

static struct event_base *base;
static struct meta m;
static struct meta_policy pol;
static struct session sess[SERVICES];
static struct service *svc[SERVICES];
static char dir[64];

/* What the policy layer sent, in order. */
static struct {
	uint64_t id;
	int code; /* reply_code, or INT32_MIN for reply_keys */
	struct key_result res[8];
	size_t n;
} replies[MAX_SEEN];
static size_t nreplies;
static struct blob_task tasks[MAX_SEEN];
static size_t ntasks;

static void send_task(struct meta *mm, struct service *s, const struct blob_task *t)
{
	cr_assert_lt(ntasks, MAX_SEEN);
	tasks[ntasks++] = *t;
}

static void reply_keys(struct meta *mm, struct session *s, uint64_t id, const struct key_result *r, size_t n, bool d)
{
	cr_assert_lt(nreplies, MAX_SEEN);
	replies[nreplies].id = id;
	replies[nreplies].code = INT32_MIN;
	replies[nreplies].n = n;
	memcpy(replies[nreplies++].res, r, (n < 8 ? n : 8) * sizeof(*r));
}

static void reply_code(struct meta *mm, struct session *s, uint64_t id, int result)
{
	cr_assert_lt(nreplies, MAX_SEEN);
	replies[nreplies].id = id;
	replies[nreplies++].code = result;
}

static const struct policy_ops recorder = {send_task, reply_keys, reply_code};

/* A new local service's Register: dram bytes of pool (and ssd bytes of SSD tier when not 0). */
static struct service_spec spec_of(uint64_t dram, uint64_t ssd)
{
	static const uint8_t addr[] = {1};
	struct service_spec spec = {.rank = -1, .fabric_addr = addr, .addr_len = 1, .provider = "tcp", .nsegs = 1};

	spec.segs[0] = (struct service_spec_segment){MMC_MEDIA_DRAM, dram, 0, 0};
	if (ssd) {
		spec.segs[1] = (struct service_spec_segment){MMC_MEDIA_SSD, ssd, 0, 0};
		spec.nsegs = 2;
		spec.ssd_path = "/nonexistent/ssd";
	}
	return spec;
}

/* Session i registers spec as service i. */
static void mount_spec(int i, const struct service_spec *spec)
{
	sess[i] = (struct session){.id = (uint64_t)i + 1, .pid = 100 + (uint32_t)i};
	snprintf(sess[i].host, sizeof(sess[i].host), "host%d", i);
	cr_assert_eq(service_register(&m, &sess[i], spec, &svc[i]), 0);
}

/* A local service lending dram bytes (and ssd bytes when not 0), attached to session i. */
static void mount(int i, uint64_t dram, uint64_t ssd)
{
	struct service_spec spec = spec_of(dram, ssd);

	mount_spec(i, &spec);
}

static void setup(void)
{
	struct persist_opts po = {.dir = dir, .map_size = 64 * MiB, .sync = false};
	char err[256];

	snprintf(dir, sizeof(dir), "/tmp/mmc-policy-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	clock_freeze();
	memset(&m, 0, sizeof(m));
	memset(sess, 0, sizeof(sess));
	meta_conf_defaults(&m.conf);
	m.conf.evict_wait_ms = 1000;
	base = event_base_new();
	cr_assert_eq(event_base_priority_init(base, 3), 0, "the server's three priorities (persist.c)");
	m.base = base;
	arena_init(&m.arena);
	memset(&pol, 0, sizeof(pol));
	policy_init(&m, &pol, &recorder);
	cr_assert_eq(persist_open(&m.persist, base, &po, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(objects_tables_open(&m), 0);
	cr_assert_eq(persist_table(m.persist, "services", &m.db_services), 0);
	cr_assert_eq(persist_table(m.persist, "info", &m.db_info), 0);
	cr_assert_eq(objects_init(&m), 0);
	nreplies = ntasks = 0;
}

static void teardown(void)
{
	char cmd[128];

	for (int i = 0; i < SERVICES; i++)
		extents_session_closed(&m, &sess[i]);
	alloc_queue_fini(&m);
	tier_fini(&m);
	objects_fini(&m);
	services_fini(&m);
	persist_close(m.persist);
	arena_fini(&m.arena);
	event_base_free(base);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Lets the LMDB writer land what is queued (commits run their waiters on the loop). */
static void commit(void)
{
	persist_flush(m.persist);
	event_base_loop(base, EVLOOP_NONBLOCK);
}

static uint64_t next_id = 1;

/* Submits an alloc of keys[0..n) with the given sizes from session w; returns its request id. */
static uint64_t alloc(int w, const char *const *keys, const uint64_t *sizes, size_t n, uint32_t replicas)
{
	struct alloc_call call = {
	    .keys = {&sess[w], next_id, 0, keys, sizes, n},
	    .spread = n > 1,
	    .media = MMC_MEDIA_DRAM,
	    .replicas = replicas,
	};

	alloc_queue_submit(&m, &call);
	arena_reset(&m.arena);
	return next_id++;
}

static const struct key_result *reply_of(uint64_t id, int *code)
{
	for (size_t i = 0; i < nreplies; i++) {
		if (replies[i].id != id)
			continue;
		*code = replies[i].code;
		return replies[i].res;
	}
	return NULL;
}

/* A put of one key from session w, committed: returns the rank its one replica went to. */
static uint32_t put(int w, const char *key, uint64_t size)
{
	int code;
	uint64_t id = alloc(w, &key, &size, 1, 1);
	const struct key_result *r = reply_of(id, &code);
	struct object *o = object_find(&m, key, strlen(key));

	cr_assert_not_null(r, "put %s: no reply", key);
	cr_assert_eq(code, INT32_MIN);
	cr_assert_eq(r[0].result, 0, "put %s: %d", key, r[0].result);
	cr_assert_not_null(o);
	object_publish(&m, o);
	return r[0].blobs[0].rank;
}

static bool present(const char *key)
{
	struct object *o = object_find(&m, key, strlen(key));

	return o && object_readable(o);
}

TestSuite(placement, .init = setup, .fini = teardown, .timeout = 30);

Test(placement, a_single_put_prefers_the_writers_own_pool)
{
	for (int i = 0; i < SERVICES; i++)
		mount(i, 64 * MiB, 0);
	cr_assert_eq(put(1, "a", MiB), svc[1]->rank);
	cr_assert_eq(put(2, "b", MiB), svc[2]->rank);
}

Test(placement, a_single_put_from_a_client_only_store_stays_on_its_host)
{
	struct session client = {.id = 50};
	const char *k = "near";
	uint64_t size = MiB;
	int code;
	struct alloc_call call = {.keys = {&client, 77, 0, &k, &size, 1}, .media = MMC_MEDIA_DRAM, .replicas = 2};
	const struct key_result *r;

	mount(0, 64 * MiB, 0);
	mount(1, 16 * MiB, 0);
	mount(2, 64 * MiB, 0);
	snprintf(client.host, sizeof(client.host), "host1"); /* svc[1]'s host, the smallest pool */
	alloc_queue_submit(&m, &call);
	r = reply_of(77, &code);
	cr_assert_eq(r[0].result, 0);
	cr_assert_eq(r[0].blobs[0].rank, svc[1]->rank, "the first replica on the writer's host");
	cr_assert_neq(r[0].blobs[1].rank, svc[1]->rank, "the second by free space elsewhere");
}

Test(placement, replicas_go_to_distinct_services_or_not_at_all)
{
	const char *k = "r";
	uint64_t size = MiB, used, total;
	int code;

	mount(0, 16 * MiB, 0);
	mount(1, 16 * MiB, 0);
	const struct key_result *r = reply_of(alloc(0, &k, &size, 1, 2), &code);

	cr_assert_eq(r[0].result, 0);
	cr_assert_eq(r[0].nblobs, 2);
	cr_assert_neq(r[0].blobs[0].rank, r[0].blobs[1].rank);
	space_usage(&m, MMC_MEDIA_DRAM, &used, &total);
	cr_assert_eq(used, 2 * MiB);
	k = "three";
	r = reply_of(alloc(0, &k, &size, 1, 3), &code);
	cr_assert_eq(r[0].result, MMC_NOT_ENOUGH_MEMORY, "three replicas need three services");
	space_usage(&m, MMC_MEDIA_DRAM, &used, &total);
	cr_assert_eq(used, 2 * MiB, "a failed placement reserves nothing");
}

Test(placement, a_batch_spreads_over_services_by_free_space)
{
	const char *keys[6] = {"s0", "s1", "s2", "s3", "s4", "s5"};
	uint64_t sizes[6] = {MiB, MiB, MiB, MiB, MiB, MiB};
	int per[SERVICES] = {0}, code;

	for (int i = 0; i < SERVICES; i++)
		mount(i, 64 * MiB, 0);
	const struct key_result *r = reply_of(alloc(0, keys, sizes, 6, 1), &code);

	for (int i = 0; i < 6; i++) {
		cr_assert_eq(r[i].result, 0);
		per[r[i].blobs[0].rank]++;
	}
	for (int i = 0; i < SERVICES; i++)
		cr_assert_eq(per[i], 2, "service %d got %d of 6 keys", i, per[i]);
}

Test(placement, a_preferred_rank_must_be_a_live_service)
{
	const char *k = "p";
	uint64_t size = MiB;
	int32_t pref = 7;
	int code;
	struct alloc_call call = {.keys = {&sess[0], 99, 0, &k, &size, 1},
	                          .media = MMC_MEDIA_DRAM,
	                          .replicas = 1,
	                          .preferred = &pref,
	                          .npreferred = 1};

	mount(0, 16 * MiB, 0);
	alloc_queue_submit(&m, &call);
	cr_assert_eq(reply_of(99, &code)[0].result, MMC_INVALID_PARAM);
	pref = 0;
	call.keys.id = 100;
	alloc_queue_submit(&m, &call);
	cr_assert_eq(reply_of(100, &code)[0].blobs[0].rank, 0);
}

TestSuite(eviction, .init = setup, .fini = teardown, .timeout = 30);

Test(eviction, above_the_high_mark_evicts_the_least_recently_used_down_to_the_low_mark)
{
	char key[16];
	uint64_t used, total;

	m.conf.evict_high = 70;
	m.conf.evict_low = 50;
	mount(0, 10 * MiB, 0);
	for (int i = 0; i < 7; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(0, key, MiB);
		if (i == 3)
			object_touch(&m, object_find(&m, "k0", 2)); /* k0 is now more recent than k1..k3 */
	}
	put(0, "k7", MiB); /* 8 MiB of 10 crosses 70 %: evict the LRU tail to 50 % */
	space_usage(&m, MMC_MEDIA_DRAM, &used, &total);
	cr_assert_leq(used * 100, total * 50, "used %llu of %llu", (unsigned long long)used, (unsigned long long)total);
	cr_assert(present("k0"), "touched: kept");
	cr_assert(!present("k1") && !present("k2") && !present("k3"), "the least recently used went first");
	cr_assert(present("k7"));
}

Test(eviction, leased_objects_are_never_evicted_and_the_put_waits_for_them)
{
	const char *k = "next";
	uint64_t size = 6 * MiB, id;
	struct object *o;
	int code;

	mount(0, 8 * MiB, 0);
	put(0, "leased", 6 * MiB);
	o = object_find(&m, "leased", 6);
	cr_assert_gt(lease_grant(&m, o, sess[0].id, 5000, true), 0);
	id = alloc(0, &k, &size, 1, 1);
	cr_assert_null(reply_of(id, &code), "no room but a lease that will end: the put waits");
	cr_assert(present("leased"));
	lease_release(&m, o, sess[0].id, false, 0);
	alloc_queue_kick(&m);
	commit(); /* the evicted object's space comes back once its delete is durable */
	alloc_queue_kick(&m);
	cr_assert_not_null(reply_of(id, &code));
	cr_assert_eq(reply_of(id, &code)[0].result, 0);
	cr_assert(!present("leased"));
}

Test(eviction, a_waiting_put_gives_up_after_evict_wait_ms)
{
	const char *k = "late";
	uint64_t size = 6 * MiB, id;
	int code;

	mount(0, 8 * MiB, 0);
	put(0, "leased", 6 * MiB);
	lease_grant(&m, object_find(&m, "leased", 6), sess[0].id, 60000, true);
	id = alloc(0, &k, &size, 1, 1);
	clock_advance_ms(m.conf.evict_wait_ms - 1);
	alloc_queue_kick(&m);
	cr_assert_null(reply_of(id, &code), "still within evict_wait_ms");
	clock_advance_ms(2);
	alloc_queue_kick(&m);
	cr_assert_eq(reply_of(id, &code)[0].result, MMC_NOT_ENOUGH_MEMORY);
}

TestSuite(alloc_queue, .init = setup, .fini = teardown, .timeout = 30);

/* As services_load leaves service i after a restart or a takeover: detached, until the same process registers
 * again. */
static void detach(int i)
{
	sess[i].svc = NULL;
	svc[i]->session = NULL;
	svc[i]->rejoin_deadline_ms = clock_ms() + m.conf.rejoin_timeout_ms;
}

/* Session i's store registers its pool of size bytes (and SSD of ssd bytes, if not 0) again as (rank, incarnation),
 * with the secret a Register reply gave it for that identity. */
static struct service *register_again(int i, uint32_t rank, uint64_t incarnation, uint64_t size, uint64_t ssd)
{
	struct service_spec spec = spec_of(size, ssd);
	struct service *back;
	uint8_t secret[MMC_WIRE_MAC];

	spec.rank = (int32_t)rank;
	spec.incarnation = incarnation;
	cr_assert_eq(service_secret(&m, rank, incarnation, secret), 0);
	spec.secret = secret;
	spec.secret_len = sizeof(secret);
	cr_assert_eq(service_register(&m, &sess[i], &spec, &back), 0);
	return back;
}

/* Service i's store registers again, with the secret its first Register reply gave it. */
static void rejoin_service(int i)
{
	cr_assert_eq(register_again(i, svc[i]->rank, svc[i]->incarnation, svc[i]->segs[0].size, 0), svc[i],
	             "rejoined, not mounted again");
}

/* Once rejoin_write_grace_ms has passed, the waiting put id is placed: its result. */
static const struct key_result *placed_after_the_grace(uint64_t id)
{
	int code;

	clock_advance_ms(m.conf.rejoin_write_grace_ms);
	alloc_queue_kick(&m);
	cr_assert_not_null(reply_of(id, &code));
	cr_assert_eq(reply_of(id, &code)[0].result, 0);
	return &reply_of(id, &code)[0];
}

Test(alloc_queue, a_pool_that_rejoined_a_restarted_server_takes_puts_after_the_grace)
{
	const char *k = "after";
	uint64_t size = MiB, id;
	int code;

	mount(0, 8 * MiB, 0);
	detach(0);
	rejoin_service(0);
	id = alloc(0, &k, &size, 1, 1);
	cr_assert_null(reply_of(id, &code), "a put the crashed server placed there may still be writing: wait");
	cr_assert_eq(placed_after_the_grace(id)->blobs[0].rank, svc[0]->rank);
}

/* The same server unmounted the service (its connection closed) and its store joins again: a new incarnation, whose
 * pool takes no put until the store has closed the key that writes granted on the old one use. */
Test(alloc_queue, a_pool_back_as_a_new_incarnation_takes_puts_after_the_grace)
{
	const char *k = "after";
	uint64_t size = MiB, id, old;
	int code;

	mount(0, 8 * MiB, 0);
	old = svc[0]->incarnation;
	service_unmount(&m, svc[0], "eof");
	sess[0].svc = NULL;
	svc[0] = register_again(0, 0, old, 8 * MiB, 0);
	cr_assert_neq(svc[0]->incarnation, old, "mounted again, not rejoined");
	id = alloc(0, &k, &size, 1, 1);
	cr_assert_null(reply_of(id, &code), "a write granted on the old incarnation may still come: wait");
	cr_assert_eq(placed_after_the_grace(id)->blobs[0].incarnation, svc[0]->incarnation);
}

/* A failover: a store that lends nothing (session 1) puts key before the only pool's store (session 0) has
 * registered again with the new leader. Returns the put's request, which must wait, not fail. */
static uint64_t put_before_the_pool_rejoined(const char *key)
{
	uint64_t size = MiB, id;
	int code;

	mount(0, 8 * MiB, 0);
	detach(0);
	sess[1] = (struct session){.id = 2, .host = "client"};
	id = alloc(1, &key, &size, 1, 1);
	cr_assert_null(reply_of(id, &code), "the only pool is rejoining: the put waits for it");
	return id;
}

/* The put waits for the pool, and then for the pool's grace, instead of failing with MMC_NOT_ENOUGH_MEMORY. */
Test(alloc_queue, a_put_before_the_pool_rejoined_waits_for_it)
{
	uint64_t id = put_before_the_pool_rejoined("early");
	int code;

	clock_advance_ms(m.conf.evict_wait_ms - 1);
	alloc_queue_kick(&m);
	cr_assert_null(reply_of(id, &code));
	rejoin_service(0);
	clock_advance_ms(2);
	alloc_queue_kick(&m);
	cr_assert_null(reply_of(id, &code), "past evict_wait_ms, but the pool's grace is a short and certain wait");
	clock_advance_ms(m.conf.rejoin_write_grace_ms);
	alloc_queue_kick(&m);
	cr_assert_not_null(reply_of(id, &code));
	cr_assert_eq(reply_of(id, &code)[0].result, 0);
	cr_assert_eq(reply_of(id, &code)[0].blobs[0].rank, svc[0]->rank);
}

Test(alloc_queue, a_put_gives_up_on_a_pool_that_does_not_rejoin_after_evict_wait_ms)
{
	uint64_t id = put_before_the_pool_rejoined("never");
	int code;

	clock_advance_ms(m.conf.evict_wait_ms + 1);
	alloc_queue_kick(&m);
	cr_assert_not_null(reply_of(id, &code));
	cr_assert_eq(reply_of(id, &code)[0].result, MMC_NOT_ENOUGH_MEMORY);
}

/* Nothing is allocated on SSD (only the tier's moves put bytes there): a request for it is refused, on a service
 * that has an SSD segment too. */
Test(alloc_queue, an_allocation_on_ssd_is_refused)
{
	const char *k = "on-ssd";
	uint64_t size = MiB, id;
	struct alloc_call call = {
	    .keys = {&sess[0], next_id, 0, &k, &size, 1},
	    .media = MMC_MEDIA_SSD,
	    .replicas = 1,
	};
	const struct key_result *r;
	int code;

	mount(0, 8 * MiB, 64 * MiB);
	alloc_queue_submit(&m, &call);
	arena_reset(&m.arena);
	id = next_id++;
	cr_assert_not_null(r = reply_of(id, &code));
	cr_assert_eq(r[0].result, MMC_INVALID_PARAM);
	cr_assert(!present("on-ssd"));
}

Test(alloc_queue, requests_are_placed_in_arrival_order)
{
	const char *a = "a", *b = "b";
	uint64_t big = 6 * MiB, small = MiB, ida, idb;
	int code;

	mount(0, 8 * MiB, 0);
	put(0, "leased", 6 * MiB);
	lease_grant(&m, object_find(&m, "leased", 6), sess[0].id, 60000, true);
	ida = alloc(0, &a, &big, 1, 1);
	idb = alloc(1 % SERVICES, &b, &small, 1, 1);
	cr_assert_null(reply_of(ida, &code));
	cr_assert_null(reply_of(idb, &code), "a request behind a waiting one waits, though it would fit");
	lease_release(&m, object_find(&m, "leased", 6), sess[0].id, false, 0);
	commit();
	alloc_queue_kick(&m);
	commit();
	alloc_queue_kick(&m);
	cr_assert_eq(reply_of(ida, &code)[0].result, 0);
	cr_assert_eq(reply_of(idb, &code)[0].result, 0);
	cr_assert_lt(ida, idb);
	cr_assert_eq(replies[nreplies - 2].id, ida, "answered in arrival order");
}

Test(alloc_queue, a_closed_session_s_waiting_requests_are_dropped_unanswered)
{
	const char *k = "gone";
	uint64_t size = 6 * MiB, id;
	int code;

	mount(0, 8 * MiB, 0);
	mount(1, 8 * MiB, 0);
	put(0, "l0", 6 * MiB);
	put(1, "l1", 6 * MiB);
	lease_grant(&m, object_find(&m, "l0", 2), sess[0].id, 60000, true);
	lease_grant(&m, object_find(&m, "l1", 2), sess[0].id, 60000, true);
	id = alloc(1, &k, &size, 1, 1);
	alloc_queue_session_closed(&m, &sess[1]);
	clock_advance_ms(m.conf.evict_wait_ms + 1);
	alloc_queue_kick(&m);
	cr_assert_null(reply_of(id, &code));
	cr_assert(list_empty(&pol.parked));
}

/*
 * A put whose writer never commits while its session lives (the reply came after the store had given up: a wait for
 * room past its timeout, a stalled loop) is reclaimed after put_write_timeout_ms: the key takes puts again and the
 * space goes through quarantine (a write of the late writer may still land). It kept both for as long as the
 * store stayed connected.
 */
Test(alloc_queue, a_put_never_committed_is_reclaimed_after_its_write_timeout)
{
	const char *k = "abandoned";
	uint64_t size = 2 * MiB, id;
	int code;

	mount(0, 8 * MiB, 0);
	id = alloc(0, &k, &size, 1, 1);
	cr_assert_eq(reply_of(id, &code)[0].result, 0);
	clock_advance_ms(m.conf.put_write_timeout_ms - 1);
	objects_sweep(&m, clock_ms());
	cr_assert_eq(object_find(&m, k, strlen(k))->state, MMC_BLOB_ALLOCATED, "still within its time");
	clock_advance_ms(2);
	objects_sweep(&m, clock_ms());
	cr_assert_null(object_find(&m, k, strlen(k)), "reclaimed");
	cr_assert_eq(quarantine_bytes(&m, MMC_MEDIA_DRAM), 2 * MiB, "its space waits out the late writer");
	id = alloc(0, &k, &size, 1, 1);
	cr_assert_eq(reply_of(id, &code)[0].result, 0, "the key takes a put again");
}

Test(alloc_queue, space_held_for_an_uncommitted_delete_is_waited_for_not_reused)
{
	const char *k = "new";
	uint64_t size = 6 * MiB, id, held, lost;
	int code;

	mount(0, 8 * MiB, 0);
	put(0, "old", 6 * MiB);
	commit(); /* old's record is on disk */
	id = alloc(0, &k, &size, 1, 1);
	cr_assert(!present("old"), "evicted");
	space_held(&m, MMC_MEDIA_DRAM, &held, &lost);
	cr_assert_eq(held, 6 * MiB, "its space waits for the commit of its delete");
	cr_assert_null(reply_of(id, &code), "the put waits rather than fail or reuse");
	commit();
	alloc_queue_kick(&m);
	cr_assert_eq(reply_of(id, &code)[0].result, 0);
	space_held(&m, MMC_MEDIA_DRAM, &held, &lost);
	cr_assert_eq(held, 0);
}

TestSuite(extents, .init = setup, .fini = teardown, .timeout = 30);

/* The owner of rank i is seen running (frames from it) now and QUARANTINE_RUN_MS later: what a given-up write may
 * still have reached there is released. */
static void seen_running(int i)
{
	quarantine_seen(&m, svc[i], clock_ms() + 1);
	clock_advance_ms(QUARANTINE_RUN_MS + 1);
	quarantine_seen(&m, svc[i], clock_ms());
}

static uint64_t used_dram(void)
{
	uint64_t used, total;

	space_usage(&m, MMC_MEDIA_DRAM, &used, &total);
	return used;
}

/* The same put removed while its writer still holds it, and never committed: reclaimed at its write timeout too. It
 * stayed pinned for as long as its writer's connection lived (a client could hold any amount of the pool that way:
 * allocate, never commit, remove). */
Test(alloc_queue, a_put_removed_while_written_and_never_committed_is_reclaimed_after_its_write_timeout)
{
	const char *k = "removed-unfinished";
	uint64_t size = 2 * MiB, id;
	int code;

	mount(0, 8 * MiB, 0);
	id = alloc(0, &k, &size, 1, 1);
	cr_assert_eq(reply_of(id, &code)[0].result, 0);
	object_drop(&m, object_find(&m, k, strlen(k))); /* a remove: its writes may still land, so it stays pinned */
	cr_assert_eq(used_dram(), 2 * MiB, "held for its writer");
	clock_advance_ms(m.conf.put_write_timeout_ms - 1);
	objects_sweep(&m, clock_ms());
	cr_assert_eq(quarantine_bytes(&m, MMC_MEDIA_DRAM), 0, "still within its time");
	clock_advance_ms(2);
	objects_sweep(&m, clock_ms());
	cr_assert_eq(quarantine_bytes(&m, MMC_MEDIA_DRAM), 2 * MiB, "never reclaimed");
	seen_running(0); /* its space waited out the late writer */
	cr_assert_eq(used_dram(), 0);
}

/* One extent of bytes for session w: replicas 1, one lane, in the writer's own pool first. */
static struct extent *grant1(int w, uint64_t bytes, uint64_t min_bytes)
{
	struct extent *e[1];
	struct extent_call call = {
	    .session = &sess[w], .bytes = bytes, .min_bytes = min_bytes, .replicas = 1, .lanes = 1};
	uint32_t lanes;

	cr_assert_eq(extents_grant(&m, &call, e, &lanes), 0);
	cr_assert_eq(lanes, 1);
	return e[0];
}

/* A put of key from session w at offset of extent e (its own rank and incarnation unless changed by the caller). */
static int put_at(int w, const char *key, uint64_t size, const struct extent *e, uint64_t offset)
{
	struct put_place pl = {e->id, e->rank, e->incarnation, offset};
	struct put_item it = {key, size, MMC_WIRE_CHECKSUM_CRC32C, 0x1234, &pl, 1, object_hash(key, strlen(key))};
	bool durable = false;

	return extents_put(&m, &sess[w], &it, clock_ms(), &durable);
}

Test(extents, a_grant_is_used_space_and_goes_back_when_the_session_ends)
{
	struct extent *e;

	for (int i = 0; i < SERVICES; i++)
		mount(i, 64 * MiB, 0);
	e = grant1(1, 2 * MiB, 64 * 1024);
	cr_assert_eq(e->rank, svc[1]->rank, "not spread: the writer's own pool");
	cr_assert_eq(e->size, 2 * MiB);
	cr_assert_eq(used_dram(), 2 * MiB, "an extent counts as used: eviction and /metrics see it");
	cr_assert_eq(extents_uncarved(&m, MMC_MEDIA_DRAM), 2 * MiB);
	extents_session_closed(&m, &sess[1]);
	cr_assert_eq(extents_uncarved(&m, MMC_MEDIA_DRAM), 0);
	cr_assert_null(sess[1].extents);
	cr_assert_eq(used_dram(), 2 * MiB, "its writes may still land: set aside");
	cr_assert_eq(quarantine_bytes(&m, MMC_MEDIA_DRAM), 2 * MiB);
	quarantine_seen(&m, svc[1], clock_ms());
	cr_assert_eq(used_dram(), 2 * MiB, "a frame from before the quarantine proves nothing");
	seen_running(1);
	cr_assert_eq(used_dram(), 0);
	cr_assert_eq(quarantine_bytes(&m, MMC_MEDIA_DRAM), 0);
}

Test(extents, a_grant_takes_at_most_a_sixteenth_of_the_pool_and_all_extents_at_most_a_quarter)
{
	struct extent *e;
	struct extent_call call = {
	    .session = &sess[0], .bytes = 64 * MiB, .min_bytes = 8 * MiB, .replicas = 1, .lanes = 1};
	uint32_t lanes;

	mount(0, 64 * MiB, 0);
	e = grant1(0, 64 * MiB, 4096);
	cr_assert_eq(e->size, 4 * MiB, "1/16 of the media");
	cr_assert_eq(extents_grant(&m, &call, &e, &lanes), 0);
	cr_assert_eq(e->size, 8 * MiB, "the batch at hand is granted whole");
	cr_assert_eq(extents_grant(&m, &call, &e, &lanes), MMC_NOT_ENOUGH_MEMORY, "past 1/4 uncarved: the slow path");
	cr_assert_eq(used_dram(), 12 * MiB);
	call.min_bytes = 0;
	cr_assert_eq(extents_grant(&m, &call, &e, &lanes), MMC_INVALID_PARAM);
	call.min_bytes = 4096;
	call.lanes = MMC_WIRE_EXTENT_LANES + 1;
	cr_assert_eq(extents_grant(&m, &call, &e, &lanes), MMC_INVALID_PARAM);
}

Test(extents, a_put_carves_its_place_in_any_order_and_publishes_the_object)
{
	struct extent *e;
	struct object *o;

	mount(0, 64 * MiB, 0);
	e = grant1(0, MiB, 4096);
	cr_assert_eq(put_at(0, "second", 10000, e, e->start + 64 * 1024), 0, "a later thread's put may land first");
	cr_assert_eq(put_at(0, "first", 4096, e, e->start), 0);
	cr_assert_eq(e->npieces, 2);
	cr_assert_eq(extents_uncarved(&m, MMC_MEDIA_DRAM), MiB - 4096 - 12288, "sizes round up to 4 KiB");
	cr_assert_eq(used_dram(), MiB, "carving moves space from the extent to objects");
	cr_assert(present("second"));
	o = object_find(&m, "second", 6);
	cr_assert_eq(blob_offset(&o->blobs[0]), e->start + 64 * 1024);
	cr_assert_eq(o->size, 10000);
	cr_assert_eq(o->checksum, 0x1234);
	cr_assert(o->persisted, "its record is in this turn's batch");
	/* the object is a block of its own: its delete frees it alone, once durable */
	object_drop(&m, o);
	commit();
	cr_assert_eq(used_dram(), MiB - 12288);
	extents_session_closed(&m, &sess[0]);
	seen_running(0);
	cr_assert_eq(used_dram(), 4096, "the object carved first stays; the rest went back");
}

Test(extents, places_outside_the_extent_of_another_session_or_on_a_stale_incarnation_are_refused)
{
	struct extent *e, *other, stale;

	mount(0, 64 * MiB, 0);
	mount(1, 64 * MiB, 0);
	e = grant1(0, MiB, 4096);
	other = grant1(1, MiB, 4096);
	cr_assert_eq(put_at(0, "k", 8192, e, e->start + MiB - 4096), MMC_INVALID_PARAM, "runs past the end");
	cr_assert_eq(put_at(0, "k", 4096, e, e->start - 4096), MMC_INVALID_PARAM, "before the start");
	cr_assert_eq(put_at(0, "k", 4096, e, e->start + 100), MMC_INVALID_PARAM, "not on a 4 KiB boundary");
	cr_assert_eq(put_at(0, "k", 4096, other, other->start), MMC_UNMATCHED_KEY, "another session's extent");
	stale = *e;
	stale.incarnation++;
	cr_assert_eq(put_at(0, "k", 4096, &stale, e->start), MMC_UNMATCHED_KEY, "another incarnation");
	cr_assert_eq(put_at(0, "k", 4096, e, e->start), 0);
	cr_assert_eq(put_at(0, "k2", 4096, e, e->start), MMC_INVALID_PARAM, "space already carved");
	cr_assert_eq(extents_uncarved(&m, MMC_MEDIA_DRAM), 2 * MiB - 4096, "a refused put carves nothing");
	cr_assert(!present("k2"));
	/* the service left: its extents are dead, whatever comes back on its rank */
	service_unmount(&m, svc[1], "test");
	cr_assert_eq(put_at(1, "k3", 4096, other, other->start), MMC_UNMATCHED_KEY, "the service is gone");
	mount(1, 64 * MiB, 0);
	cr_assert_eq(svc[1]->rank, other->rank, "the rank came back");
	cr_assert_eq(put_at(1, "k3", 4096, other, other->start), MMC_UNMATCHED_KEY, "as another incarnation");
	cr_assert(!present("k3"));
}

Test(extents, an_existing_key_keeps_its_value_and_nothing_is_carved)
{
	struct extent *e;

	mount(0, 64 * MiB, 0);
	put(0, "dup", MiB);
	e = grant1(0, MiB, 4096);
	cr_assert_eq(put_at(0, "dup", 4096, e, e->start), MMC_DUPLICATED_OBJECT);
	cr_assert_eq(object_find(&m, "dup", 3)->size, MiB, "first writer wins");
	cr_assert_eq(extents_uncarved(&m, MMC_MEDIA_DRAM), MiB);
}

Test(extents, an_idle_extent_goes_back_and_each_put_keeps_it)
{
	struct extent *e;

	mount(0, 64 * MiB, 0);
	e = grant1(0, MiB, 4096);
	clock_advance_ms(EXTENT_IDLE_MS - 1);
	extents_sweep(&m, clock_ms());
	cr_assert_eq(put_at(0, "a", 4096, e, e->start), 0, "not idle yet");
	clock_advance_ms(EXTENT_IDLE_MS - 1);
	alloc_queue_kick(&m);
	cr_assert_eq(extents_uncarved(&m, MMC_MEDIA_DRAM), MiB - 4096, "the put restarted its idle time");
	clock_advance_ms(2);
	alloc_queue_kick(&m); /* the server's sweep */
	cr_assert_eq(extents_uncarved(&m, MMC_MEDIA_DRAM), 0);
	cr_assert_null(sess[0].extents);
	seen_running(0);
	cr_assert_eq(used_dram(), 4096, "the object stays");
}

/* A store counts a grant as fresh while puts into any of its extents are taken, and carves every lane of it then:
 * one-key batches feed only lane 0 of four, and the other lanes must be kept as long as lane 0 is (they used to go
 * back idle, to be given to other writers while the store still wrote into them). */
Test(extents, a_put_into_one_lane_keeps_every_lane_of_its_grant)
{
	struct extent *e[MMC_WIRE_REPLICAS * MMC_WIRE_EXTENT_LANES];
	struct extent_call call = {
	    .session = &sess[0], .bytes = MiB, .min_bytes = 4096, .replicas = 1, .spread = true, .lanes = 4};
	uint64_t other = 0;
	uint32_t lanes;
	char key[16];
	size_t held = 0;

	for (int i = 0; i < SERVICES; i++)
		mount(i, 64 * MiB, 0);
	cr_assert_eq(extents_grant(&m, &call, e, &lanes), 0);
	cr_assert_geq(lanes, 2);
	other = grant1(0, MiB, 4096)->id; /* another grant of the same session, never put into */
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(put_at(0, key, 4096, e[0], e[0]->start + (uint64_t)i * 4096), 0);
		clock_advance_ms(EXTENT_IDLE_MS * 2 / 3);
		alloc_queue_kick(&m); /* the server's sweep */
	}
	for (struct extent *x = sess[0].extents; x; x = x->snext) {
		cr_assert_neq(x->id, other, "an extent of another grant no put named went back");
		held++;
	}
	cr_assert_eq(held, lanes, "every lane of the grant is still held");
}

/* A PutBatch or ExtentReturn written for the server run before, sent on the new connection once it is up, names no
 * extent of this run: ids start at random, not at 1 in every run (a late put landed its key in another's extent). */
Test(extents, an_extent_of_the_run_before_names_none_of_this_one)
{
	struct extent *e, stale;
	uint64_t before;

	mount(0, 64 * MiB, 0);
	before = grant1(0, MiB, 4096)->id;
	teardown(); /* the server restarts */
	setup();
	mount(0, 64 * MiB, 0);
	e = grant1(0, MiB, 4096);
	cr_assert_neq(e->id, before);
	stale = *e;
	stale.id = before;
	cr_assert_neq(put_at(0, "late", 4096, &stale, e->start), 0, "a put naming the run before's extent is refused");
}

Test(extents, lanes_spread_over_services_and_replicas_are_distinct)
{
	struct extent *e[MMC_WIRE_REPLICAS * MMC_WIRE_EXTENT_LANES];
	struct extent_call call = {.session = &sess[0], .bytes = MiB, .min_bytes = 4096, .replicas = 1, .spread = true};
	struct put_place pl[2];
	struct put_item it = {"two", 4096, 0, 0, pl, 2, object_hash("two", 3)};
	uint32_t lanes;
	bool durable;

	for (int i = 0; i < SERVICES; i++)
		mount(i, 64 * MiB, 0);
	put(0, "fuller", 8 * MiB);
	call.lanes = 4;
	cr_assert_eq(extents_grant(&m, &call, e, &lanes), 0);
	cr_assert_eq(lanes, 3, "no more lanes than services");
	cr_assert(e[0]->rank != e[1]->rank && e[1]->rank != e[2]->rank && e[0]->rank != e[2]->rank,
	          "every lane on its own service: %u %u %u", e[0]->rank, e[1]->rank, e[2]->rank);
	cr_assert_eq(e[2]->rank, svc[0]->rank, "the fullest last");
	call.replicas = 2;
	cr_assert_eq(extents_grant(&m, &call, e, &lanes), 0);
	cr_assert_eq(lanes, 1, "two replicas each on three services: one lane");
	cr_assert_neq(e[0]->rank, e[1]->rank);
	for (int r = 0; r < 2; r++)
		pl[r] = (struct put_place){e[r]->id, e[r]->rank, e[r]->incarnation, e[r]->start};
	cr_assert_eq(extents_put(&m, &sess[0], &it, clock_ms(), &durable), 0);
	cr_assert_eq(object_find(&m, "two", 3)->nblobs, 2);
	pl[1] = pl[0];
	it.key = "same";
	it.hash = object_hash("same", 4);
	pl[0].offset = pl[1].offset = e[0]->start + 4096;
	cr_assert_eq(extents_put(&m, &sess[0], &it, clock_ms(), &durable), MMC_INVALID_PARAM,
	             "two replicas on one service");
}

TestSuite(tier, .init = setup, .fini = teardown, .timeout = 30);

static struct key_call get_call(int w, const char *const *keys, size_t n, uint64_t id)
{
	return (struct key_call){&sess[w], id, 0, keys, NULL, n};
}

Test(tier, an_eviction_victim_moves_to_ssd_and_its_dram_waits_for_the_new_record)
{
	struct object *o;
	uint64_t held, lost;

	m.conf.evict_high = 70;
	m.conf.evict_low = 50;
	mount(0, 10 * MiB, 64 * MiB);
	put(0, "cold", 4 * MiB);
	put(0, "warm", 4 * MiB); /* 8 of 10 MiB: the LRU tail goes one tier down */
	cr_assert_eq(ntasks, 1);
	cr_assert_eq(tasks[0].src_media, MMC_MEDIA_DRAM);
	cr_assert_eq(tasks[0].dst_media, MMC_MEDIA_SSD);
	cr_assert_eq(tasks[0].size, 4 * MiB);
	o = object_find(&m, "cold", 4);
	tier_task_done(&m, svc[0], tasks[0].id, 0);
	cr_assert(tier_on_ssd(o));
	cr_assert(present("cold"), "still readable, from SSD");
	space_held(&m, MMC_MEDIA_DRAM, &held, &lost);
	cr_assert_eq(held, 4 * MiB, "the old DRAM range waits until the record naming SSD is durable");
	commit();
	space_held(&m, MMC_MEDIA_DRAM, &held, &lost);
	cr_assert_eq(held, 0);
}

/* "cold" on service 0's SSD (task 0 moved it), its DRAM below the rewarm watermark. */
static void cold_on_ssd(void)
{
	m.conf.evict_high = 70;
	m.conf.evict_low = 50;
	m.conf.rewarm_watermark = 90;
	mount(0, 10 * MiB, 64 * MiB);
	put(0, "cold", 4 * MiB);
	put(0, "warm", 4 * MiB);
	tier_task_done(&m, svc[0], tasks[0].id, 0);
	object_drop(&m, object_find(&m, "warm", 4)); /* room again: below the watermark */
	commit();
}

Test(tier, a_get_below_the_watermark_promotes_and_answers_from_dram)
{
	const char *k = "cold";
	struct key_call call;
	int code;

	cold_on_ssd();
	call = get_call(0, &k, 1, 500);
	tier_get(&m, &call);
	cr_assert_eq(ntasks, 2, "a promote");
	cr_assert_eq(tasks[1].src_media, MMC_MEDIA_SSD);
	cr_assert_eq(tasks[1].dst_media, MMC_MEDIA_DRAM);
	cr_assert_null(reply_of(500, &code), "answers once the read is done");
	tier_task_done(&m, svc[0], tasks[1].id, 0);
	cr_assert_eq(reply_of(500, &code)[0].result, 0);
	cr_assert_eq(reply_of(500, &code)[0].blobs[0].media, MMC_MEDIA_DRAM);
	cr_assert(!tier_on_ssd(object_find(&m, "cold", 4)));
}

/* Only the service a move was sent to can end it: an answer from any other connection (another service, a client
 * guessing ids) would serve DRAM that nothing filled. */
Test(tier, a_move_ends_only_when_its_own_service_answers)
{
	const char *k = "cold";
	struct key_call call;
	int code;

	cold_on_ssd();
	mount(1, 10 * MiB, 64 * MiB);
	call = get_call(1, &k, 1, 701);
	tier_get(&m, &call);
	cr_assert_eq(ntasks, 2, "a promote");
	tier_task_done(&m, NULL, tasks[1].id, 0);
	tier_task_done(&m, svc[1], tasks[1].id, 0);
	cr_assert_null(reply_of(701, &code), "answered by a client and by another service: not done");
	tier_task_done(&m, svc[0], tasks[1].id, 0);
	cr_assert_not_null(reply_of(701, &code), "its own service's answer ends it");
	cr_assert_eq(reply_of(701, &code)[0].blobs[0].media, MMC_MEDIA_DRAM);
}

/* Service 0's store comes back on a new connection (session 2) before the server saw its old one close: the promote
 * sent on the old one will not be answered (the store dropped it), so it fails at once and gives its DRAM back. */
Test(tier, a_move_sent_on_a_half_open_connection_fails_when_its_store_is_back)
{
	const char *k = "cold";
	struct key_call call;
	uint64_t used, total;
	int code;

	cold_on_ssd();
	call = get_call(0, &k, 1, 702);
	tier_get(&m, &call);
	cr_assert_eq(ntasks, 2, "a promote");
	space_usage(&m, MMC_MEDIA_DRAM, &used, &total);
	cr_assert_eq(used, 4 * MiB, "its DRAM is reserved");
	sess[2] = (struct session){.id = 3, .host = "host0", .pid = 100};
	cr_assert_eq(register_again(2, svc[0]->rank, svc[0]->incarnation, 10 * MiB, 64 * MiB), svc[0], "rejoined");
	cr_assert_not_null(reply_of(702, &code), "the get is answered");
	cr_assert_neq(reply_of(702, &code)[0].result, 0);
	space_usage(&m, MMC_MEDIA_DRAM, &used, &total);
	cr_assert_eq(used, 0, "the promote's DRAM is free again");
	tier_task_done(&m, svc[0], tasks[1].id, 0); /* a late answer to it changes nothing */
	cr_assert(tier_on_ssd(object_find(&m, "cold", 4)));
}

Test(tier, an_ssd_identity_of_another_length_is_refused)
{
	static const uint8_t id[MMC_WIRE_SSD_ID + 1] = {7};
	struct service_spec spec = spec_of(8 * MiB, 8 * MiB);
	struct service *out;

	spec.ssd_id = id;
	sess[0] = (struct session){.id = 1, .host = "host0"};
	for (size_t len = 1; len <= MMC_WIRE_SSD_ID + 1; len += MMC_WIRE_SSD_ID) {
		spec.ssd_id_len = len;
		cr_assert_eq(service_register(&m, &sess[0], &spec, &out), MMC_INVALID_PARAM, "%zu bytes", len);
	}
	spec.ssd_id_len = MMC_WIRE_SSD_ID;
	cr_assert_eq(service_register(&m, &sess[0], &spec, &out), 0);
	cr_assert(out->has_ssd_id);
}

static size_t list_len(const struct list *l)
{
	size_t n = 0;

	for (const struct list *it = l->next; it != l; it = it->next)
		n++;
	return n;
}

/* Service i with a DRAM pool and an SSD tier in a file whose identity is id. */
static void mount_ssd(int i, uint8_t id)
{
	uint8_t ssd_id[MMC_WIRE_SSD_ID] = {id};
	struct service_spec spec = spec_of(8 * MiB, 8 * MiB);

	spec.ssd_id = ssd_id;
	spec.ssd_id_len = sizeof(ssd_id);
	mount_spec(i, &spec);
}

/*
 * One identity, two services: a copied SSD file (a cloned disk or VM image), or a successor that registered before
 * the server saw its predecessor go (a half-open connection). The file is in use again and its old keys may be
 * overwritten: the one that leaves first leaves no orphan to adopt, and the last one's keys are adopted as usual.
 */
Test(tier, a_service_leaving_a_file_another_one_brings_leaves_no_keys_to_adopt)
{
	mount_ssd(0, 1);
	mount_ssd(2, 1);
	service_unmount(&m, svc[0], "eof");
	sess[0].svc = NULL;
	cr_assert_eq(list_len(&m.orphans), 0, "its keys went with it");
	service_unmount(&m, svc[2], "eof");
	sess[2].svc = NULL;
	cr_assert_eq(list_len(&m.orphans), 1, "the last one's wait for a successor");
	mount_ssd(1, 1);
	cr_assert_eq(list_len(&m.orphans), 0, "and it adopts them");
}

/* A demote in flight when its service leaves gives its SSD reservation back before the SSD tier is orphaned: the
 * service that adopts the tier finds no space held for a move that will never end. */
Test(tier, a_move_failed_by_its_service_leaving_holds_no_space_in_the_adopted_ssd)
{
	const char *k = "cold";
	struct key_call call = get_call(0, &k, 1, 703);
	uint64_t used, total;

	mount_ssd(0, 9);
	put(0, "cold", 4 * MiB);
	tier_move(&m, &call, true); /* mmc_evict_keys: a demote, never answered */
	cr_assert_eq(ntasks, 1);
	service_unmount(&m, svc[0], "eof");
	sess[0].svc = NULL;
	mount_ssd(1, 9);
	cr_assert_eq(list_len(&m.orphans), 0, "adopted");
	space_usage(&m, MMC_MEDIA_SSD, &used, &total);
	cr_assert_eq(used, 0, "no SSD space held for the failed move");
}

/* A pool back after a restart may still take a write the crashed server granted: a get of an object on its SSD reads
 * nothing into that pool before its grace ends (even with evict_wait_ms 0), then reads as usual. */
Test(tier, an_ssd_read_waits_for_the_grace_of_a_pool_back_after_a_restart)
{
	const char *k = "cold";
	struct key_call call;
	int code;

	cold_on_ssd();
	m.conf.evict_wait_ms = 0;
	detach(0);
	cr_assert_eq(register_again(0, svc[0]->rank, svc[0]->incarnation, 10 * MiB, 64 * MiB), svc[0], "rejoined");
	call = get_call(0, &k, 1, 704);
	tier_get(&m, &call);
	cr_assert_eq(ntasks, 1, "no read into the pool during its grace");
	cr_assert_null(reply_of(704, &code), "the get waits for it");
	clock_advance_ms(m.conf.rejoin_write_grace_ms);
	tier_kick(&m);
	cr_assert_eq(ntasks, 2, "a promote once the grace is over");
	tier_task_done(&m, svc[0], tasks[1].id, 0);
	cr_assert_not_null(reply_of(704, &code));
	cr_assert_eq(reply_of(704, &code)[0].result, 0);
	cr_assert_eq(reply_of(704, &code)[0].blobs[0].media, MMC_MEDIA_DRAM);
}

/* Readers of a key on SSD above the rewarm watermark each stage a copy of their own, and each such read pins the
 * object: past as many as its count holds, a reader waits, and the object stays pinned (the count wrapped to 0 at
 * 256 and a remove freed the record under 256 reads still in flight). */
Test(tier, reads_past_the_most_an_object_counts_wait_and_keep_it_pinned)
{
	static const char *keys[OBJECT_BUSY_MAX + 1];
	const char *k = "hot";
	struct key_call call;
	struct object *o;

	mount(0, 1200 * MiB, 64 * MiB);
	put(0, "hot", 4096);
	call = get_call(0, &k, 1, 900);
	tier_move(&m, &call, true); /* mmc_evict_keys: one tier down */
	tier_task_done(&m, svc[0], tasks[0].id, 0);
	commit();
	o = object_find(&m, "hot", 3);
	cr_assert(tier_on_ssd(o));
	m.conf.rewarm_watermark = 0; /* DRAM "above the watermark": reads stage, they do not promote */
	for (size_t i = 0; i <= OBJECT_BUSY_MAX; i++)
		keys[i] = "hot";
	call = get_call(1, keys, OBJECT_BUSY_MAX + 1, 901);
	tier_get(&m, &call);
	cr_assert_eq(o->busy, OBJECT_BUSY_MAX, "one read waits");
	object_drop(&m, o); /* a remove while they read */
	cr_assert_eq(o->state, MMC_BLOB_REMOVING, "pinned by its reads");
}

/* A get's release names the object it read by its id. Thread A of a store reads "hot" in DRAM (range A); a demote
 * leaves a copy of range A holding A's lease; a prefetch brings "hot" back to range B, where thread B of the same
 * store reads it. A's release must end A's lease, not B's: the object back in DRAM has another id than the copy. */
Test(tier, a_release_after_a_demote_and_a_promote_names_the_copy_it_read)
{
	const char *k = "hot";
	struct key_call call;
	struct object *o, *z;
	uint64_t id;

	mount(0, 1200 * MiB, 64 * MiB);
	put(0, "hot", 4096);
	commit();
	o = object_find(&m, "hot", 3);
	id = o->id;
	cr_assert_gt(lease_grant(&m, o, sess[0].id, 0, true), 0); /* thread A's get */
	call = get_call(0, &k, 1, 900);
	tier_move(&m, &call, true); /* mmc_evict_keys */
	tier_task_done(&m, svc[0], tasks[ntasks - 1].id, 0);
	commit();
	z = objects_find_zombie(&m, "hot", 3, sess[0].id, id, false, 0);
	cr_assert_not_null(z, "A's lease went to a copy of range A");
	call = get_call(0, &k, 1, 901);
	tier_move(&m, &call, false); /* mmc_prefetch_keys: back to DRAM */
	tier_task_done(&m, svc[0], tasks[ntasks - 1].id, 0);
	commit();
	cr_assert_eq(object_find(&m, "hot", 3), o);
	cr_assert_neq(o->id, id, "what B's get reads is not what A's release names");
	cr_assert_eq(objects_find_zombie(&m, "hot", 3, sess[0].id, id, false, 0), z);
}

Test(tier, a_victim_whose_move_failed_is_evicted)
{
	m.conf.evict_high = 70;
	m.conf.evict_low = 50;
	mount(0, 10 * MiB, 64 * MiB);
	put(0, "cold", 4 * MiB);
	put(0, "warm", 4 * MiB);
	cr_assert_eq(ntasks, 1);
	tier_task_done(&m, svc[0], tasks[0].id, MMC_ERROR);
	cr_assert(!present("cold"));
	cr_assert(present("warm"));
}

Test(tier, a_service_that_leaves_fails_its_moves)
{
	const char *k = "cold";
	struct key_call call = get_call(0, &k, 1, 600);
	int code;

	mount(0, 10 * MiB, 64 * MiB);
	put(0, "cold", 4 * MiB);
	tier_move(&m, &call, true); /* mmc_evict_keys */
	cr_assert_eq(ntasks, 1);
	cr_assert_null(reply_of(600, &code));
	service_unmount(&m, svc[0], "test");
	cr_assert_not_null(reply_of(600, &code), "the waiting evict is answered when its service goes");
}

/*
 * The object table below the policy layer: records in the slab linked by handle (the key index, the object lists,
 * leases), blobs that name their service by slot, and fields that share bits between states. Over a real state
 * layer (services, allocators, LMDB in a temporary directory) with the logical clock frozen.
 */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "clock.h"
#include "lease.h"
#include "lru.h"
#include "meta_conf.h"
#include "mmc/mmc.h"
#include "object_rec.h"
#include "objects.h"
#include "persist.h"
#include "redis_proc.h"
#include "services.h"
#include "slab.h"

#define MiB  (1ull << 20)
#define PAGE 4096u

static struct event_base *base;
static struct meta m;
static struct redis_proc redis; /* the store of the load_redis suite */
static struct session sess[2];
static struct service *svc[2];
static char dir[64];

static void mount(int i)
{
	static const uint8_t addr[] = {1};
	struct service_spec spec = {.rank = -1, .fabric_addr = addr, .addr_len = 1, .provider = "tcp", .nsegs = 1};

	spec.segs[0] = (struct service_spec_segment){MMC_MEDIA_DRAM, 64 * MiB, 0, 0};
	sess[i] = (struct session){.id = (uint64_t)i + 1, .pid = 100 + (uint32_t)i};
	snprintf(sess[i].host, sizeof(sess[i].host), "host%d", i);
	cr_assert_eq(service_register(&m, &sess[i], &spec, &svc[i]), 0);
}

static void setup(void)
{
	struct persist_opts po = {.dir = dir, .map_size = 64 * MiB, .sync = false, .uri = redis.pid ? redis.uri : NULL};
	char err[256];

	snprintf(dir, sizeof(dir), "/tmp/mmc-objects-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	clock_freeze();
	memset(&m, 0, sizeof(m));
	meta_conf_defaults(&m.conf);
	base = event_base_new();
	cr_assert_eq(event_base_priority_init(base, 3), 0);
	m.base = base;
	cr_assert_eq(persist_open(&m.persist, base, &po, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(objects_tables_open(&m), 0);
	cr_assert_eq(persist_table(m.persist, "services", &m.db_services), 0);
	cr_assert_eq(persist_table(m.persist, "info", &m.db_info), 0);
	cr_assert_eq(objects_init(&m), 0);
	list_init(&m.orphans);
	mount(0);
	mount(1);
}

static void teardown(void)
{
	char cmd[128];

	objects_fini(&m);
	services_fini(&m);
	persist_close(m.persist);
	event_base_free(base);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	redis_proc_cleanup(&redis);
}

static void setup_redis(void)
{
	if (redis_proc_start(&redis, "no"))
		cr_skip_test("no redis-server");
	setup();
}

/* An ALLOCATED object of key with one page on each service in on[] (n of them), written by session writer. */
static struct object *allocate(const char *key, const int *on, int n, uint64_t writer)
{
	struct object *o = object_new(key, strlen(key), (uint8_t)n);

	cr_assert_not_null(o);
	for (int i = 0; i < n; i++) {
		uint64_t off;

		cr_assert_eq(alloc_reserve(service_segment(svc[on[i]], MMC_MEDIA_DRAM)->alloc, PAGE, &off), 0);
		blob_place(&o->blobs[i], svc[on[i]], MMC_MEDIA_DRAM, off);
	}
	o->size = PAGE;
	o->state = MMC_BLOB_ALLOCATED;
	o->write_session = writer;
	o->write_expiry_ms = clock_ms() + 1000;
	object_index_add(&m, o, object_hash(key, strlen(key)));
	olist_add_tail(&m, OLIST_PENDING, o);
	return o;
}

static struct object *put(const char *key, const int *on, int n)
{
	struct object *o = allocate(key, on, n, 9);

	object_publish(&m, o);
	return o;
}

static struct object *find(const char *key)
{
	return object_find(&m, key, strlen(key));
}

static uint64_t used(int i)
{
	return alloc_used(service_segment(svc[i], MMC_MEDIA_DRAM)->alloc);
}

TestSuite(objects, .init = setup, .fini = teardown, .timeout = 30);

Test(objects, the_index_finds_every_key_across_growth_and_after_removals)
{
	const int on0[] = {0};
	char key[32];

	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		put(key, on0, 1);
	}
	cr_assert_eq(m.nobjects, 5000);
	for (int s = 0; s < INDEX_SHARDS; s++)
		cr_assert_geq(m.shards[s].mask + 1, m.shards[s].count, "each table grew with its objects");
	for (int i = 0; i < 5000; i += 2) {
		snprintf(key, sizeof(key), "key-%d", i);
		object_drop(&m, find(key));
	}
	cr_assert_eq(m.nobjects, 2500);
	for (int i = 0; i < 5000; i++) {
		struct object *o;

		snprintf(key, sizeof(key), "key-%d", i);
		o = find(key);
		if (i % 2) {
			cr_assert_not_null(o, "%s", key);
			cr_assert_eq(o->keylen, strlen(key));
			cr_assert_str_eq(object_key(o), key);
		} else {
			cr_assert_null(o, "%s was removed", key);
		}
	}
	cr_assert_null(find("key-"), "a prefix of a key is another key");
}

Test(objects, a_freed_record_is_reused_and_the_walk_tells_it_from_a_live_one)
{
	const int on0[] = {0};
	struct object *a = put("a", on0, 1), *b = put("b", on0, 1);
	uint32_t ha = a->self, h = 0;
	int live = 0;
	struct object *o;

	object_drop(&m, a);
	cr_assert_eq(put("c", on0, 1)->self, ha, "a record of the same size class comes back first");
	object_drop(&m, b);
	while ((o = slab_next(&h)))
		live += o->state != OBJECT_FREE && o->state != OBJECT_HEAD;
	cr_assert_eq(live, 1, "only c is an object");
}

Test(objects, a_touch_moves_an_object_to_the_head_of_its_lru)
{
	const int on0[] = {0};
	const char *order[] = {"a", "c", "b"};
	struct object *o;
	int i = 0;

	put("a", on0, 1);
	put("b", on0, 1);
	put("c", on0, 1);
	object_touch(&m, find("a"));
	for (o = olist_first(&m, OLIST_LRU + MMC_MEDIA_DRAM); o; o = olist_next(o), i++) {
		cr_assert_lt(i, 3);
		cr_assert_str_eq(object_key(o), order[i]);
		cr_assert(!olist_next(o) || olist_next(o)->stamp < o->stamp, "stamps fall from head to tail");
	}
	cr_assert_eq(i, 3);
	cr_assert_str_eq(object_key(olist_last(&m, OLIST_LRU + MMC_MEDIA_DRAM)), "b");
	cr_assert_eq(find("a")->stamp, m.lru_clock);
}

/* A DRAM object a task reads is being demoted, off its LRU (tier.c): a get's touch leaves it there, or an eviction
 * could meet it again on the LRU, find it busy and drop it instead of letting the move end. */
Test(objects, a_touch_leaves_an_object_being_demoted_off_its_lru)
{
	const int on0[] = {0};
	struct object *a = put("a", on0, 1);

	put("b", on0, 1);
	olist_del(a);
	olist_add_tail(&m, OLIST_MOVING, a);
	a->busy = 1;
	object_touch(&m, a);
	cr_assert_eq(olist_first(&m, OLIST_MOVING), a, "still moving");
	cr_assert_str_eq(object_key(olist_first(&m, OLIST_LRU + MMC_MEDIA_DRAM)), "b");
	cr_assert_null(olist_next(olist_first(&m, OLIST_LRU + MMC_MEDIA_DRAM)), "not on the LRU");
	a->busy = 0; /* the move ended: the next touch is an LRU touch again (the move put it back) */
	olist_del(a);
	lru_push(&m, a);
	object_touch(&m, a);
	cr_assert_eq(olist_first(&m, OLIST_LRU + MMC_MEDIA_DRAM), a);
}

/* Removed objects still leased are found by key (a release, a commit of a removed put) through their own table, not a
 * walk of them all per key (10^6 of them made one release batch cost 10^10 visits): across its growth, with several
 * of one key, and gone from it once nothing pins them. */
Test(objects, zombies_are_found_by_key_across_the_tables_growth)
{
	const int on0[] = {0};
	enum { N = 5000 };
	uint64_t ids[N];
	char key[32];

	for (int i = 0; i < N; i++) {
		struct object *o;

		snprintf(key, sizeof(key), "z-%d", i % (N / 2)); /* each key twice: put, leased, removed, put again */
		o = put(key, on0, 1);
		ids[i] = o->id;
		cr_assert_gt(lease_grant(&m, o, 7, 1000, true), 0);
		object_drop(&m, o);
	}
	cr_assert_eq(m.zombies.n, N);
	cr_assert_gt(m.zombies.mask + 1, 1024, "the table grew");
	for (int i = 0; i < N; i++) {
		struct object *z;

		snprintf(key, sizeof(key), "z-%d", i % (N / 2));
		z = objects_find_zombie(&m, key, strlen(key), 7, ids[i], false, 0);
		cr_assert_not_null(z, "%s, id %llu", key, (unsigned long long)ids[i]);
		cr_assert_eq(z->id, ids[i]);
		cr_assert_null(objects_find_zombie(&m, key, strlen(key), 8, ids[i], false, 0),
		               "another session holds no lease");
	}
	for (int i = 0; i < N; i += 2) { /* released: it goes, the other of its key stays */
		struct object *z;

		snprintf(key, sizeof(key), "z-%d", i % (N / 2));
		z = objects_find_zombie(&m, key, strlen(key), 7, ids[i], false, 0);
		cr_assert(lease_release(&m, z, 7, false, 0));
		object_unpin(&m, z);
	}
	objects_sweep(&m, clock_ms());
	cr_assert_eq(m.zombies.n, N / 2);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "z-%d", i % (N / 2));
		cr_assert_eq(objects_find_zombie(&m, key, strlen(key), 7, ids[i], false, 0) != NULL, i % 2 == 1, "%s",
		             key);
	}
	clock_advance_ms(1001);
	objects_sweep(&m, clock_ms());
	cr_assert_eq(m.zombies.n, 0, "their leases ran out");
	cr_assert(olist_empty(&m, OLIST_ZOMBIES));
}

/* One session's counted grants of a key never wrap its count to 0 (which would free the lease under its reads):
 * the count stops at its top, and the lease then lasts until it expires. */
Test(objects, a_lease_count_saturates_instead_of_wrapping)
{
	const int on0[] = {0};
	struct object *o = put("l", on0, 1);
	struct lease *l;

	cr_assert_gt(lease_grant(&m, o, 1, 1000, true), 0);
	l = lease_find(o, 1);
	l->count = LEASE_COUNT_MAX - 1;
	cr_assert_gt(lease_grant(&m, o, 1, 1000, true), 0);
	cr_assert_gt(lease_grant(&m, o, 1, 1000, true), 0, "a grant past the top");
	cr_assert_eq(lease_find(o, 1)->count, LEASE_COUNT_MAX);
	cr_assert(lease_release(&m, o, 1, false, 0));
	cr_assert(object_leased(o, clock_ms()), "held by the others");
	cr_assert(!lease_release(&m, o, 1, true, 0), "no add_lease pin to remove");
}

/* The threads of one store share its session: one thread's get and another's add_lease of the same key are one lease
 * record, and each release ends only its own part. remove_lease used to end the other thread's get (whose copy could
 * then read reused bytes), and a get's release the add_lease pin a GVA copy was relying on. */
Test(objects, a_gets_lease_and_an_add_lease_pin_end_apart)
{
	const int on0[] = {0};
	struct object *o = put("k", on0, 1);

	cr_assert_gt(lease_grant(&m, o, 1, 1000, true), 0);  /* thread A's get */
	cr_assert_gt(lease_grant(&m, o, 1, 1000, false), 0); /* thread B's add_lease */
	cr_assert(lease_release(&m, o, 1, true, 0), "B's remove_lease");
	cr_assert(object_leased(o, clock_ms()), "A's get still pins it");
	cr_assert(!lease_release(&m, o, 1, true, 0), "B's pin is gone");
	cr_assert(lease_release(&m, o, 1, false, 0), "A's release");
	cr_assert(!object_leased(o, clock_ms()));
	cr_assert_gt(lease_grant(&m, o, 1, 1000, false), 0); /* B's add_lease, then A's get and release */
	cr_assert_gt(lease_grant(&m, o, 1, 1000, true), 0);
	cr_assert(lease_release(&m, o, 1, false, 0));
	cr_assert(object_leased(o, clock_ms()), "B's pin outlives A's get");
	cr_assert(!lease_release(&m, o, 1, false, 0), "no get left to release");
	cr_assert(lease_release(&m, o, 1, true, 0));
	cr_assert(!object_leased(o, clock_ms()));
}

/*
 * A get that outlived its lease, its record pruned (eviction visited the object while another store held it), and a
 * later get of another thread of the same store in a new record: the first get's late release names its own record,
 * and leaves the later one's count alone. Taken as any of the session's, it ended that count, the object could be
 * evicted under the later read, and the read returned another key's bytes as MMC_OK.
 */
Test(objects, a_late_release_of_an_expired_get_leaves_a_later_get_s_lease)
{
	const int on0[] = {0};
	struct object *o = put("k", on0, 1);
	uint32_t a, b;

	cr_assert_gt(lease_grant(&m, o, 1, 100, true), 0); /* thread A's get */
	a = lease_gen(o, 1);
	cr_assert_gt(lease_grant(&m, o, 2, 10000, true), 0); /* another store's */
	clock_advance_ms(200);                               /* A's read outlives its lease */
	cr_assert(object_leased(o, clock_ms()), "the other store's lease holds; A's record is pruned");
	cr_assert_gt(lease_grant(&m, o, 1, 5000, true), 0); /* thread B's get */
	b = lease_gen(o, 1);
	cr_assert(a && b && a != b, "a new record, a new number");
	cr_assert(!lease_release(&m, o, 1, false, a), "A's late release is not B's");
	cr_assert(!lease_holds(o, 1, false, a));
	cr_assert(lease_release(&m, o, 2, false, 0));
	cr_assert(object_leased(o, clock_ms()), "B's get still pins the object");
	cr_assert(lease_release(&m, o, 1, false, b), "B's release");
	cr_assert(!object_leased(o, clock_ms()));
}

/* A remove_lease finds the object its pin is on, a get's release the one its count is on: the readable object of the
 * key may hold the other kind (one thread's add_lease on an object removed and put again, another's get of the new
 * one), and the release then goes to the zombie. */
Test(objects, a_release_finds_the_object_that_holds_its_kind_of_lease)
{
	const int on0[] = {0};
	struct object *o1 = put("k", on0, 1), *o2;

	cr_assert_gt(lease_grant(&m, o1, 1, 1000, false), 0); /* thread A's add_lease */
	object_drop(&m, o1);
	o2 = put("k", on0, 1);
	cr_assert_gt(lease_grant(&m, o2, 1, 1000, true), 0); /* thread B's get of the new object */
	cr_assert(lease_holds(o2, 1, false, 0));
	cr_assert(!lease_holds(o2, 1, true, 0), "no pin on the new object");
	cr_assert_eq(objects_find_zombie(&m, "k", 1, 1, 0, true, 0), o1, "the pin is on the removed one");
	cr_assert_null(objects_find_zombie(&m, "k", 1, 1, 0, false, 0), "no count on it");
	cr_assert(lease_release(&m, o1, 1, true, 0));
	object_unpin(&m, o1);
	cr_assert(lease_release(&m, o2, 1, false, 0));
}

Test(objects, the_writer_and_the_lru_stamp_share_bits_without_leaking_into_each_other)
{
	const int on0[] = {0};
	struct object *o = allocate("w", on0, 1, 1234567);

	cr_assert_eq(o->write_session, 1234567);
	cr_assert_eq(o->write_expiry_ms, clock_ms() + 1000);
	o->checksum_type = 1;
	o->busy = 3;
	object_publish(&m, o);
	cr_assert_eq(o->write_session, o->stamp, "READABLE: those bits are the stamp now");
	cr_assert_eq(o->stamp, m.lru_clock);
	cr_assert_eq(o->checksum_type, 1, "a neighbour of the shared bits is kept");
	cr_assert_eq(o->busy, 3);
	cr_assert_eq(o->rec_seq, persist_wait_seq(m.persist), "its record is in this batch");
	o->busy = 0;
	/* removed while leased: pinned by the lease only, not by the old stamp in the writer's bits */
	cr_assert_gt(lease_grant(&m, o, 77, 1000, true), 0);
	object_drop(&m, o);
	cr_assert_eq(o->state, MMC_BLOB_REMOVING);
	cr_assert_eq(o->write_session, 0);
	cr_assert_eq(o->unlink_seq, persist_wait_seq(m.persist), "its delete's batch");
	cr_assert(lease_release(&m, o, 77, false, 0));
	persist_flush(m.persist);
	object_unpin(&m, o);
	cr_assert(olist_empty(&m, OLIST_ZOMBIES), "freed once its lease ended");
	cr_assert_eq(used(0), 0, "its page came back once the delete was durable");
}

/* A lease pins space no eviction reaches, also after its holder left: a client gets at most
 * ock.mmc.meta.lease_ttl_max_ms, whatever it asks for (it used to get 2^40 ms when it asked). */
Test(objects, a_lease_is_at_most_the_longest_the_server_allows)
{
	const int on0[] = {0};
	struct object *o = put("leased", on0, 1);

	cr_assert_eq(lease_grant(&m, o, 5, UINT64_C(1) << 40, true), 600000);
	cr_assert_eq(lease_grant(&m, o, 6, 0, true), 10000, "0: the server's default");
	cr_assert_eq(lease_grant(&m, o, 7, 1234, true), 1234);
	m.conf.lease_ttl_ms = 900000;
	cr_assert_eq(lease_grant(&m, o, 8, UINT64_C(1) << 40, true), 900000, "never below the default");
	m.conf.lease_ttl_ms = 10000;
}

Test(objects, an_unfinished_put_removed_keeps_its_writer_until_it_commits_or_leaves)
{
	const int on0[] = {0};
	struct object *o = allocate("p", on0, 1, 5);
	uint64_t id = o->id, deadline = o->write_expiry_ms;

	object_drop(&m, o);
	cr_assert_eq(objects_find_removed_write(&m, "p", 1, 5, id), o, "the writer may still commit it");
	cr_assert_eq(o->write_expiry_ms, deadline, "it keeps its write deadline (no record ever named its space)");
	objects_session_closed(&m, 5);
	cr_assert(olist_empty(&m, OLIST_ZOMBIES));
	cr_assert_null(objects_find_removed_write(&m, "p", 1, 5, id));
}

/* A put removed while it was written keeps its space until its writer is done; a writer that leaves (or whose
 * writes failed) may still have bytes on their way there, so the space is quarantined as if the put had not been
 * removed (it was released at once, and a late byte could land in the next object placed there). */
Test(objects, an_unfinished_put_removed_and_left_by_its_writer_is_quarantined)
{
	const int on0[] = {0};
	struct object *o = allocate("gone", on0, 1, 6);
	uint64_t q0;

	object_drop(&m, o); /* a remove while the put is in flight */
	q0 = m.stats.quarantined_total;
	objects_session_closed(&m, 6);
	cr_assert_gt(m.stats.quarantined_total, q0, "the gone writer's bytes may still land: quarantined");
	o = allocate("done", on0, 1, 7);
	object_drop(&m, o);
	q0 = m.stats.quarantined_total;
	object_writes_done(&m, o); /* its writer committed: every write landed */
	cr_assert_eq(m.stats.quarantined_total, q0, "released at once");
}

/* A GVA allocation whose write lease ran out is reclaimed through quarantine: a copy posted just before the end of
 * the lease may still be on its way (it was released at once). */
Test(objects, a_gva_allocation_whose_write_lease_ran_out_is_quarantined)
{
	const int on0[] = {0};
	struct object *o = allocate("g", on0, 1, 8);
	uint64_t q0 = m.stats.quarantined_total;

	o->gva = true;
	o->write_expiry_ms = clock_ms() + 1;
	objects_sweep(&m, clock_ms() + 2);
	cr_assert_null(find("g"), "reclaimed");
	cr_assert_gt(m.stats.quarantined_total, q0, "through quarantine");
}

Test(objects, lease_records_are_reused_and_survive_the_table_growing)
{
	const int on0[] = {0};
	struct object *o[600];
	char key[16];

	for (int i = 0; i < 600; i++) {
		snprintf(key, sizeof(key), "l%d", i);
		o[i] = put(key, on0, 1);
		cr_assert_gt(lease_grant(&m, o[i], 1, 1000, true), 0);
		cr_assert_gt(lease_grant(&m, o[i], 2, 1000, false), 0); /* an add_lease */
	}
	for (int i = 0; i < 600; i++) {
		cr_assert_not_null(lease_find(o[i], 1));
		cr_assert_not_null(lease_find(o[i], 2));
		cr_assert_null(lease_find(o[i], 3));
		cr_assert(lease_release(&m, o[i], 1, false, 0));
		cr_assert_null(lease_find(o[i], 1));
		cr_assert(object_leased(o[i], clock_ms()), "session 2 still holds it");
		cr_assert(lease_release(&m, o[i], 2, true, 0));
		cr_assert(!object_leased(o[i], clock_ms()));
	}
	cr_assert_gt(lease_grant(&m, o[0], 3, 1000, true), 0);
	clock_advance_ms(1001);
	cr_assert(!object_leased(o[0], clock_ms()), "an expired lease is pruned");
}

/* The sentinel for space whose record delete could not be queued survives a removed object's unlink_seq: cut to
 * its 48 bits it read as a batch still pending, and that hold kept every later one of its allocator from freeing. */
Test(objects, a_removed_object_keeps_the_never_sentinel)
{
	struct object o;

	memset(&o, 0, sizeof(o));
	o.unlink_seq = ALLOC_SEQ_NEVER;
	cr_assert_eq(o.unlink_seq, ALLOC_SEQ_NEVER);
}

Test(objects, a_service_that_leaves_takes_only_its_blobs)
{
	const int on0[] = {0}, on1[] = {1}, both[] = {0, 1};
	char key[16];

	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "x%d", i);
		put(key, i % 3 == 0 ? on0 : i % 3 == 1 ? on1 : both, i % 3 == 2 ? 2 : 1);
	}
	cr_assert_eq(svc[0]->nblobs, 67);
	service_unmount(&m, svc[0], "eof");
	for (int i = 0; i < 100; i++) {
		struct object *o;

		snprintf(key, sizeof(key), "x%d", i);
		o = find(key);
		if (i % 3 == 0) {
			cr_assert_null(o, "%s lived on the service that left", key);
			continue;
		}
		cr_assert_not_null(o, "%s", key);
		cr_assert(object_readable(o));
		cr_assert_eq(blob_svc(&o->blobs[object_pick_blob(&m, o, NULL)]), svc[1]);
	}
	cr_assert_eq(svc[1]->nblobs, 66);
	cr_assert_eq(m.nobjects, 66);
}

/* ---- the load: the table rebuilt from the store, as a restart does ---- */

/* Forgets the table and the services as a stopped server does, and loads both from the store. */
static void restart(void)
{
	persist_flush(m.persist);
	objects_fini(&m);
	services_fini(&m);
	m.next_object_id = m.object_id_ceiling = 0; /* a new process knows only what the store holds */
	cr_assert_eq(objects_init(&m), 0);
	cr_assert_eq(services_load(&m), 0);
	cr_assert_eq(objects_load(&m), 0);
	svc[0] = service_get(&m, 0);
	svc[1] = service_get(&m, 1);
	cr_assert(svc[0] && svc[1]);
}

/* The keys of the DRAM LRU, head first, separated by spaces. */
static void lru_keys(char *out, size_t cap)
{
	size_t at = 0;

	out[0] = '\0';
	for (struct object *o = olist_first(&m, OLIST_LRU + MMC_MEDIA_DRAM); o && at < cap; o = olist_next(o))
		at += (size_t)snprintf(out + at, cap - at, "%s ", object_key(o));
}

static void reload_keeps_objects_blobs_and_lru_order(void)
{
	const int on0[] = {0}, both[] = {0, 1};
	char key[16], before[8192], after[8192];
	uint64_t off[200], used0, used1;

	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "k%03d", (i * 37) % 200); /* stamps not in key order */
		off[(i * 37) % 200] = blob_offset(&put(key, i % 4 ? on0 : both, i % 4 ? 1 : 2)->blobs[0]);
	}
	for (int i = 0; i < 200; i += 7) {
		snprintf(key, sizeof(key), "k%03d", i);
		object_touch(&m, find(key));
	}
	lru_checkpoint(&m, clock_ms(), true);
	lru_keys(before, sizeof(before));
	used0 = used(0);
	used1 = used(1);
	restart();
	lru_keys(after, sizeof(after));
	cr_assert_str_eq(after, before, "the LRU order survives");
	cr_assert_eq(m.nobjects, 200);
	cr_assert_eq(used(0), used0);
	cr_assert_eq(used(1), used1);
	for (int i = 0; i < 200; i++) {
		struct object *o;

		snprintf(key, sizeof(key), "k%03d", i);
		o = find(key);
		cr_assert_not_null(o, "%s", key);
		cr_assert_eq(blob_offset(&o->blobs[0]), off[i]);
		cr_assert_eq(o->state, MMC_BLOB_READABLE);
		cr_assert(o->persisted);
	}
}

/*
 * Writes a record of key by hand: nblobs of (rank, offset) on DRAM, size bytes. id 0: as a store of format 2 did,
 * under the key, version 3 with stamp (0: version 2, no stamp); else as this one does, under id, version 4.
 */
static void record(uint64_t id, const char *key, uint64_t size, uint64_t stamp, int nblobs, const uint32_t *rank,
                   const uint64_t *offset)
{
	bool keyed = id == 0;
	struct rec r = {.h = {!keyed  ? REC_VERSION
	                      : stamp ? REC_VERSION_STAMP
	                              : REC_VERSION_SUM,
	                      (uint32_t)nblobs, size},
	                .stamp = stamp};
	unsigned char buf[sizeof(r) + 64], k[REC_KEY_LEN];
	size_t head = sizeof(r.h) + sizeof(r.ck) + (stamp || !keyed ? sizeof(r.stamp) : 0),
	       len = head + (size_t)nblobs * sizeof(r.b[0]);

	for (int i = 0; i < nblobs; i++)
		r.b[i] =
		    (struct rec_blob){rank[i], MMC_MEDIA_DRAM,
		                      service_get(&m, rank[i]) ? service_get(&m, rank[i])->incarnation : 99, offset[i]};
	memcpy(buf, &r, sizeof(r.h) + sizeof(r.ck));
	if (head > sizeof(r.h) + sizeof(r.ck))
		memcpy(buf + sizeof(r.h) + sizeof(r.ck), &r.stamp, sizeof(r.stamp));
	memcpy(buf + head, r.b, (size_t)nblobs * sizeof(r.b[0]));
	if (keyed) {
		cr_assert_eq(persist_put(m.persist, m.db_objects_keyed, key, strlen(key), buf, len), 0);
		return;
	}
	memcpy(buf + len, key, strlen(key));
	rec_key_of(id, k);
	cr_assert_eq(persist_put(m.persist, m.db_objects, k, sizeof(k), buf, len + strlen(key)), 0);
}

static uint64_t count(struct persist_table *t)
{
	uint64_t n = 0;

	cr_assert_eq(persist_count(m.persist, t, &n), 0);
	return n;
}

/* Does the store hold a record of key: under the id of the object loaded for it, or in a format-2 table? */
static bool stored(const char *key)
{
	unsigned char buf[sizeof(struct rec) + 256], k[REC_KEY_LEN];
	struct object *o = find(key);
	size_t len;

	persist_flush(m.persist);
	if (persist_get(m.persist, m.db_objects_keyed, key, strlen(key), buf, sizeof(buf), &len) == 0)
		return true;
	if (!o)
		return false;
	rec_key_of(o->id, k);
	return persist_get(m.persist, m.db_objects, k, sizeof(k), buf, sizeof(buf), &len) == 0 && len > strlen(key) &&
	       memcmp(buf + len - strlen(key), key, strlen(key)) == 0;
}

static int live_blobs(const char *key)
{
	struct object *o = find(key);
	int n = 0;

	for (int i = 0; o && i < o->nblobs; i++)
		n += o->blobs[i].svc != 0;
	return n;
}

/*
 * keyed: records of a format-2 store, under the keys (the load gives them ids in key order, and moves them); else
 * records under ids that follow the same order (a = 1, b = 2, ...): the same outcome.
 */
static void damaged_records_load_as_one_at_a_time_did(bool keyed)
{
	const uint32_t r0[] = {0}, r01[] = {0, 1}, r7[] = {7};
	const uint64_t o0[] = {0}, o1[] = {PAGE}, o2[] = {2 * PAGE}, o5[] = {5 * PAGE}, o6[] = {6 * PAGE},
	               o_c[] = {PAGE, 0}, bad[] = {100}, far[] = {64 * MiB};
	uint64_t k = keyed ? 0 : 1; /* ids: 0 for a keyed record */
	char lru[512];

	record(2 * k, "b", 2 * PAGE, 10, 1, r0, o0); /* [0, 2) pages */
	record(1 * k, "a", 2 * PAGE, 11, 1, r0, o1); /* [1, 3): first in order, keeps it; b loses its range */
	record(3 * k, "c", PAGE, 12, 2, r01, o_c);   /* one blob on a's page 1, one fine on service 1 */
	record(4 * k, "d", PAGE, 13, 1, r7, o5);     /* a rank nobody has */
	record(5 * k, "e", PAGE, 14, 1, r0, bad);    /* misaligned */
	record(6 * k, "f", PAGE, 15, 1, r0, far);    /* past the pool's end */
	record(7 * k, "g", 0, 16, 1, r0, o6);        /* empty */
	record(9 * k, "h2", PAGE, 0, 1, r0, o5);     /* stamp 0 (keyed: version 2, none): the oldest, in order */
	record(8 * k, "h1", PAGE, 0, 1, r0, o6);
	record(10 * k, "i", PAGE, 17, 1, r0, o2); /* overlaps a only: a keeps page 2 */
	restart();
	cr_assert_eq(count(m.db_objects_keyed), 0, "the format-2 table is emptied");
	cr_assert_eq(count(m.db_objects), 4, "a, c, h1 and h2, under their ids");
	cr_assert_eq(live_blobs("a"), 1);
	cr_assert_null(find("b"), "lost its only range to a");
	cr_assert(!stored("b"), "and its record is deleted");
	cr_assert_eq(live_blobs("c"), 1, "kept the blob on service 1");
	cr_assert(stored("c"));
	cr_assert(!find("d") && !find("e") && !find("f") && !find("g") && !find("i"));
	cr_assert(!stored("d") && !stored("e") && !stored("f") && !stored("g") && !stored("i"));
	lru_keys(lru, sizeof(lru));
	cr_assert_str_eq(lru, "c a h1 h2 ", "newest first, equal stamps in order");
	cr_assert(find("a")->id < find("c")->id && find("h1")->id < find("h2")->id, "ids follow the order");
	cr_assert_eq(used(0), 4 * PAGE, "a's two pages, h1 and h2");
	cr_assert_eq(used(1), PAGE);
	restart();
	cr_assert_eq(live_blobs("c"), 1, "c was written again without the blob it lost");
	cr_assert_eq(find("c")->nblobs, 1);
}

/* A key in both tables (a move from format 2 that stopped half-way): the record under its id is the newer one. */
static void a_half_done_move_keeps_the_moved_record(void)
{
	const uint32_t r0[] = {0};
	const uint64_t o0[] = {0}, o1[] = {PAGE}, o2[] = {2 * PAGE};

	record(5, "x", PAGE, 20, 1, r0, o1);
	record(0, "x", PAGE, 20, 1, r0, o0);
	record(0, "y", PAGE, 21, 1, r0, o2);
	restart();
	cr_assert_eq(find("x")->id, 5);
	cr_assert_eq(blob_offset(&find("x")->blobs[0]), PAGE);
	cr_assert_gt(find("y")->id, 5, "a moved record's id follows every stored one");
	cr_assert_eq(used(0), 2 * PAGE, "x's old range is not kept");
	cr_assert_eq(count(m.db_objects_keyed), 0);
	cr_assert_eq(count(m.db_objects), 2);
}

/* Records live under ids: a removed object's record goes, a key put again gets a new one, and ids never repeat. */
/* The id ceiling as the store holds it. */
static uint64_t stored_ceiling(void)
{
	unsigned char v[16];
	uint64_t c = 0;
	size_t len = 0;

	cr_assert_eq(persist_get(m.persist, m.db_info, "object_id_ceiling", 17, v, sizeof(v), &len), 0);
	cr_assert_eq(len, sizeof(c));
	memcpy(&c, v, sizeof(c));
	return c;
}

static void ids_survive_restarts_and_never_repeat(void)
{
	const int on0[] = {0};
	uint64_t top, newest;
	char key[16];

	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "k%02d", i);
		put(key, on0, 1);
	}
	restart();
	top = m.next_object_id;
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "k%02d", i);
		cr_assert_leq(find(key)->id, top);
		if (i % 2)
			object_drop(&m, find(key));
	}
	for (int i = 1; i < 20; i += 4) { /* a removed key put again */
		snprintf(key, sizeof(key), "k%02d", i);
		cr_assert_gt(put(key, on0, 1)->id, top, "a new object's id is above every loaded one");
	}
	restart();
	cr_assert_eq(m.nobjects, 15);
	cr_assert_eq(count(m.db_objects), 15, "one record per object");
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "k%02d", i);
		cr_assert_eq(find(key) != NULL, i % 2 == 0 || i % 4 == 1, "%s", key);
		if (find(key))
			cr_assert(stored(key));
	}
	/* the newest objects removed: no record holds their ids, which a client may still hold as tokens */
	newest = put("newest", on0, 1)->id;
	object_drop(&m, find("newest"));
	restart();
	cr_assert_gt(put("newest", on0, 1)->id, newest, "an id given before the restart is not given again");
	/* a crash right after a restart: the ids given since must be below the ceiling already on disk */
	restart();
	cr_assert_lt(m.next_object_id + 1, stored_ceiling(), "the first ids of a run are above the ceiling on disk");
}

/* An object renumbered (a promote back to DRAM) has one record, under its new id, and loads under it. */
static void a_renumbered_object_has_one_record_under_its_new_id(void)
{
	const int on0[] = {0};
	struct object *o = put("r", on0, 1);
	uint64_t old = o->id, id;

	put("s", on0, 1);
	object_renumber(&m, o);
	object_persist_moved(&m, o);
	id = o->id;
	cr_assert_neq(id, old);
	restart();
	cr_assert_eq(count(m.db_objects), 2, "one record per object");
	cr_assert_not_null(find("r"));
	cr_assert_eq(find("r")->id, id);
	cr_assert(stored("r"));
}

/*
 * A key stored under two ids (a promote's old record and its new one, both on disk after the store dropped their
 * pair and the new one was written again): one object, the newer, and the older record goes, so that removing the
 * key leaves nothing a restart could bring back; the older one's range is free.
 */
static void a_key_stored_under_two_ids_loads_once_as_its_newer_record(void)
{
	const uint32_t r0[] = {0};
	const uint64_t o0[] = {0}, o1[] = {PAGE}, o2[] = {2 * PAGE};

	record(3, "x", PAGE, 20, 1, r0, o0);
	record(4, "y", PAGE, 21, 1, r0, o2);
	record(7, "x", PAGE, 22, 1, r0, o1);
	restart();
	cr_assert_eq(m.nobjects, 2);
	cr_assert_eq(find("x")->id, 7);
	cr_assert_eq(blob_offset(&find("x")->blobs[0]), PAGE);
	cr_assert_eq(used(0), 2 * PAGE, "the older record's range is free");
	cr_assert_eq(count(m.db_objects), 2, "the older record is deleted");
	object_drop(&m, find("x"));
	restart();
	cr_assert_null(find("x"), "a removed key stays removed");
	cr_assert_not_null(find("y"));
	cr_assert_eq(used(0), PAGE);
}

TestSuite(load, .init = setup, .fini = teardown, .timeout = 30);

Test(load, a_reload_keeps_the_objects_their_blobs_and_the_lru_order)
{
	reload_keeps_objects_blobs_and_lru_order();
}

Test(load, damaged_records_load_as_they_did_one_at_a_time)
{
	damaged_records_load_as_one_at_a_time_did(false);
}

Test(load, a_format_2_store_is_moved_under_ids_with_the_same_outcome)
{
	damaged_records_load_as_one_at_a_time_did(true);
}

Test(load, a_renumbered_object_has_one_record_under_its_new_id)
{
	a_renumbered_object_has_one_record_under_its_new_id();
}

Test(load, a_half_done_move_keeps_the_moved_record)
{
	a_half_done_move_keeps_the_moved_record();
}

Test(load, ids_survive_restarts_and_never_repeat)
{
	ids_survive_restarts_and_never_repeat();
}

Test(load, a_key_stored_under_two_ids_loads_once_as_its_newer_record)
{
	a_key_stored_under_two_ids_loads_once_as_its_newer_record();
}

/* Redis hands the records over unsorted, page by page: the same table must come out. */
TestSuite(load_redis, .init = setup_redis, .fini = teardown, .timeout = 60);

Test(load_redis, a_reload_keeps_the_objects_their_blobs_and_the_lru_order)
{
	reload_keeps_objects_blobs_and_lru_order();
}

Test(load_redis, damaged_records_load_as_they_did_one_at_a_time)
{
	damaged_records_load_as_one_at_a_time_did(false);
}

Test(load_redis, a_format_2_store_is_moved_under_ids_with_the_same_outcome)
{
	damaged_records_load_as_one_at_a_time_did(true);
}

Test(load_redis, a_renumbered_object_has_one_record_under_its_new_id)
{
	a_renumbered_object_has_one_record_under_its_new_id();
}

Test(load_redis, a_half_done_move_keeps_the_moved_record)
{
	a_half_done_move_keeps_the_moved_record();
}

Test(load_redis, ids_survive_restarts_and_never_repeat)
{
	ids_survive_restarts_and_never_repeat();
}

Test(load_redis, a_key_stored_under_two_ids_loads_once_as_its_newer_record)
{
	a_key_stored_under_two_ids_loads_once_as_its_newer_record();
}

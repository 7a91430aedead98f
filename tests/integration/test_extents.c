/*
 * One meta round trip for small puts (allocation extents, docs/architecture.md): a put written into an extent is
 * durable once acknowledged, the server refuses a put that names space outside what the session holds on a live
 * (rank, incarnation), an extent's space goes back when its session dies, and eviction keeps working around
 * extents. Real mmc-metaserver processes; stores through libmmc, hostile sessions as raw protobuf-c frames.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_client.h"
#include "mmc.pb-c.h"
#include "store_fixture.h"

#define POOL (64u << 20)

static struct metaserver meta;

static void start(void)
{
	/* ock.mmc.meta.lmdb.sync is on by default: a commit reply follows the fsync */
	cr_assert_eq(metaserver_start(&meta, NULL), 0);
}

static void stop(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(extents, .init = start, .fini = stop, .timeout = 120);

/* The value of one /metrics sample (name with its labels, as printed); 0 when absent. */
static uint64_t metric(const char *sample)
{
	double v;

	cr_assert_eq(hc_metric(meta.admin_port, sample, &v), 200);
	return (uint64_t)v;
}

#define PUTS_BY_EXTENT "mmc_rpc_requests_total{op=\"put\"}"
#define COMMITS        "mmc_rpc_requests_total{op=\"commit\"}"
#define DRAM_USED      "mmc_pool_used_bytes{media=\"dram\"}"

/* ---- raw sessions: what a broken or hostile client could send ---- */

static int raw_dial(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(meta.rpc_port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct timeval tv = {10, 0};

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Sends f and returns the frame that answers it (same id); frames of other ids are skipped. */
static Mmc__Frame *raw_call(int fd, Mmc__Frame *f)
{
	size_t n = mmc__frame__get_packed_size(f);
	uint8_t *buf = malloc(4 + n);
	uint32_t len;

	for (int i = 0; i < 4; i++)
		buf[i] = (uint8_t)(n >> (8 * i));
	mmc__frame__pack(f, buf + 4);
	cr_assert_eq(send(fd, buf, 4 + n, MSG_NOSIGNAL), (ssize_t)(4 + n));
	free(buf);
	for (;;) {
		uint8_t hdr[4];
		Mmc__Frame *r;

		cr_assert_eq(recv(fd, hdr, 4, MSG_WAITALL), 4, "no reply to frame %llu", (unsigned long long)f->id);
		len = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
		buf = malloc(len);
		cr_assert_eq(recv(fd, buf, len, MSG_WAITALL), (ssize_t)len);
		r = mmc__frame__unpack(NULL, len, buf);
		free(buf);
		cr_assert_not_null(r);
		if (r->id == f->id)
			return r;
		mmc__frame__free_unpacked(r, NULL);
	}
}

static uint64_t next_id = 1;

/* A session that said hello; with lend, also a local service of POOL bytes (its rank in *rank). */
static int raw_session(bool lend, uint32_t *rank, uint64_t *incarnation)
{
	Mmc__Frame f = MMC__FRAME__INIT, *r;
	Mmc__Hello h = MMC__HELLO__INIT;
	Mmc__Register reg = MMC__REGISTER__INIT;
	Mmc__Segment seg = MMC__SEGMENT__INIT, *segs[1] = {&seg};
	uint8_t addr[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	int fd = raw_dial();

	h.host = "raw-host";
	h.pid = (uint32_t)getpid();
	h.version = 1;
	f.id = next_id++;
	f.body_case = MMC__FRAME__BODY_HELLO;
	f.hello = &h;
	r = raw_call(fd, &f);
	cr_assert_eq(r->hello_reply->result, 0);
	mmc__frame__free_unpacked(r, NULL);
	if (!lend)
		return fd;
	reg.rank = -1;
	reg.fabric_addr = (ProtobufCBinaryData){sizeof(addr), addr};
	reg.provider = "tcp;ofi_rxm";
	seg.media = MMC_MEDIA_DRAM;
	seg.size = POOL;
	reg.n_segments = 1;
	reg.segments = segs;
	f = (Mmc__Frame)MMC__FRAME__INIT;
	f.id = next_id++;
	f.body_case = MMC__FRAME__BODY_REGISTER;
	f.register_ = &reg;
	r = raw_call(fd, &f);
	cr_assert_eq(r->service_info->result, 0);
	*rank = r->service_info->rank;
	*incarnation = r->service_info->incarnation;
	mmc__frame__free_unpacked(r, NULL);
	return fd;
}

/* Asks for one extent of bytes (on rank `on` when >= 0); fails the test unless granted. */
static Mmc__Extent raw_grant(int fd, uint64_t bytes, int32_t on)
{
	Mmc__Frame f = MMC__FRAME__INIT, *r;
	Mmc__ExtentRequest req = MMC__EXTENT_REQUEST__INIT;
	Mmc__Extent e;

	req.bytes = bytes;
	req.min_bytes = 4096;
	req.replica_num = 1;
	req.preferred = &on;
	req.n_preferred = on >= 0;
	f.id = next_id++;
	f.body_case = MMC__FRAME__BODY_EXTENT_REQUEST;
	f.extent_request = &req;
	r = raw_call(fd, &f);
	cr_assert_eq(r->body_case, MMC__FRAME__BODY_EXTENT_GRANT, "no ExtentGrant (body %d)", r->body_case);
	cr_assert_eq(r->extent_grant->result, 0);
	cr_assert_eq(r->extent_grant->n_extents, 1);
	e = *r->extent_grant->extents[0];
	e.base.unknown_fields = NULL;
	mmc__frame__free_unpacked(r, NULL);
	return e;
}

/* Publishes key (size bytes) at offset of the pool of (rank, incarnation), naming extent id; the key's result. */
static int raw_put(int fd, const char *key, uint64_t size, uint64_t id, uint32_t rank, uint64_t incarnation,
                   uint64_t offset)
{
	Mmc__Frame f = MMC__FRAME__INIT, *r;
	Mmc__PutBatch pb = MMC__PUT_BATCH__INIT;
	Mmc__PutItem it = MMC__PUT_ITEM__INIT, *items[1] = {&it};
	Mmc__PutPlace pl = MMC__PUT_PLACE__INIT, *places[1] = {&pl};
	int rc;

	pl.extent = id;
	pl.rank = rank;
	pl.incarnation = incarnation;
	pl.offset = offset;
	it.key = (char *)key;
	it.size = size;
	it.n_places = 1;
	it.places = places;
	pb.n_items = 1;
	pb.items = items;
	f.id = next_id++;
	f.body_case = MMC__FRAME__BODY_PUT;
	f.put = &pb;
	r = raw_call(fd, &f);
	cr_assert_eq(r->body_case, MMC__FRAME__BODY_KEY_REPLY, "no KeyBatchReply (body %d)", r->body_case);
	cr_assert_eq(r->key_reply->n_items, 1);
	rc = r->key_reply->items[0]->result;
	mmc__frame__free_unpacked(r, NULL);
	return rc;
}

static int raw_put_in(int fd, const char *key, uint64_t size, const Mmc__Extent *e, uint64_t offset)
{
	return raw_put(fd, key, size, e->id, e->rank, e->incarnation, offset);
}

/* A frame that shows the owner behind fd runs (what its heartbeat does). */
static void raw_ping(int fd)
{
	Mmc__Frame f = MMC__FRAME__INIT, *r;
	Mmc__Ping p = MMC__PING__INIT;

	f.id = next_id++;
	f.body_case = MMC__FRAME__BODY_PING;
	f.ping = &p;
	r = raw_call(fd, &f);
	mmc__frame__free_unpacked(r, NULL);
}

/* Gives extent id back: as space a write was given up in (failed), or as clean. No reply is awaited. */
static void raw_return(int fd, uint64_t id, bool failed)
{
	Mmc__Frame f = MMC__FRAME__INIT, *r;
	Mmc__ExtentReturn ret = MMC__EXTENT_RETURN__INIT;

	ret.ids = failed ? NULL : &id;
	ret.n_ids = !failed;
	ret.failed = failed ? &id : NULL;
	ret.n_failed = failed;
	f.id = next_id++;
	f.body_case = MMC__FRAME__BODY_EXTENT_RETURN;
	f.extent_return = &ret;
	r = raw_call(fd, &f);
	mmc__frame__free_unpacked(r, NULL);
}

/* One key through alloc: its result; when 0, its offset in *offset (may be NULL) and its token in *token. */
static int raw_alloc(int fd, const char *key, uint64_t size, uint64_t *offset, uint64_t *token)
{
	Mmc__Frame f = MMC__FRAME__INIT, *r;
	Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;
	Mmc__KeyItem it = MMC__KEY_ITEM__INIT, *items[1] = {&it};
	int rc;

	it.key = (char *)key;
	it.size = size;
	kb.items = items;
	kb.n_items = 1;
	kb.replica_num = 1;
	f.id = next_id++;
	f.body_case = MMC__FRAME__BODY_ALLOC;
	f.alloc = &kb;
	r = raw_call(fd, &f);
	cr_assert_eq(r->body_case, MMC__FRAME__BODY_KEY_REPLY);
	rc = r->key_reply->items[0]->result;
	if (rc == 0) {
		cr_assert_eq(r->key_reply->items[0]->n_blobs, 1);
		if (offset)
			*offset = r->key_reply->items[0]->blobs[0]->offset;
		*token = r->key_reply->items[0]->token;
	}
	mmc__frame__free_unpacked(r, NULL);
	return rc;
}

/* Commits the allocation token of key, its write done (code 0) or failed with code; fails the test unless OK. */
static void raw_commit(int fd, const char *key, uint64_t token, int code)
{
	Mmc__Frame f = MMC__FRAME__INIT, *r;
	Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;
	Mmc__KeyItem it = MMC__KEY_ITEM__INIT, *items[1] = {&it};

	it.key = (char *)key;
	it.token = token;
	it.value = code;
	kb.items = items;
	kb.n_items = 1;
	f.id = next_id++;
	f.body_case = MMC__FRAME__BODY_COMMIT;
	f.commit = &kb;
	r = raw_call(fd, &f);
	cr_assert_eq(r->key_reply->items[0]->result, 0);
	mmc__frame__free_unpacked(r, NULL);
}

/* One key through alloc (its offset in *offset) and a commit that says its write failed with code. */
static void raw_alloc_then_fail(int fd, const char *key, uint64_t size, int code, uint64_t *offset)
{
	uint64_t token;

	cr_assert_eq(raw_alloc(fd, key, size, offset, &token), 0);
	raw_commit(fd, key, token, code);
}

/* Pings owner until the sample reads want (or 10 s); the value last read. */
static uint64_t ping_until(int owner, const char *sample, uint64_t want)
{
	uint64_t v = metric(sample);

	for (int i = 0; i < 200 && v != want; i++) {
		raw_ping(owner);
		usleep(50000);
		v = metric(sample);
	}
	return v;
}

/* ---- the tests ---- */

Test(extents, a_put_through_an_extent_survives_sigkill_of_the_meta_server_after_its_ack)
{
	enum { N = 16 };
	mmc_store *s = fixture_store(meta.url, true, POOL), *reader;
	char names[N][32], *bufs[N];
	const char *keys[N];
	size_t sizes[N];
	int res[N];

	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "durable/%d", i);
		keys[i] = names[i];
		sizes[i] = 4096 + 1000 * (size_t)i;
		bufs[i] = malloc(sizes[i]);
		pattern_fill(bufs[i], sizes[i], 100 + (uint64_t)i);
	}
	cr_assert_eq(mmc_batch_put_from(s, keys, (const void *const *)bufs, sizes, N, MMC_COPY_H2G, NULL, res), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(res[i], 0, "put %s", keys[i]);
	fixture_put(s, "durable/single", 3000, 7);
	cr_assert_geq(metric(PUTS_BY_EXTENT), 2, "the puts went by one round trip");
	cr_assert_eq(metric(COMMITS), 0, "no alloc + commit for small objects");
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	for (int i = 0; i < 200 && mmc_is_exist(s, "durable/single") != 1; i++)
		usleep(50000); /* the store reconnects and rejoins with its pool */
	reader = fixture_store(meta.url, false, 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(fixture_get(reader, keys[i], sizes[i], 100 + (uint64_t)i), 0, "%s after the kill",
		             keys[i]);
		free(bufs[i]);
	}
	cr_assert_eq(fixture_get(reader, "durable/single", 3000, 7), 0);
	/* the dead server's extents died with it; the new one grants new extents once the rejoined pool's write
	 * grace is over (puts meanwhile go key by key, and wait for the grace) */
	for (int i = 0; i < 100 && metric(PUTS_BY_EXTENT) == 0; i++) {
		char key[32];

		snprintf(key, sizeof(key), "durable/after/%d", i);
		fixture_put(s, key, 5000, 8);
		cr_assert_eq(fixture_get(reader, key, 5000, 8), 0);
		usleep(50000);
	}
	cr_assert_geq(metric(PUTS_BY_EXTENT), 1);
	mmc_destroy(reader);
	mmc_destroy(s);
}

Test(extents, places_outside_the_extent_of_another_session_or_on_a_stale_incarnation_are_refused)
{
	uint32_t ra, rb;
	uint64_t ia, ib;
	int a = raw_session(true, &ra, &ia), b = raw_session(true, &rb, &ib), c = raw_session(false, NULL, NULL);
	Mmc__Extent e = raw_grant(a, 1u << 20, -1), on_a = raw_grant(c, 1u << 20, (int32_t)ra);
	char longkey[MMC_KEY_MAX + 2];

	cr_assert_eq(e.rank, ra, "a writer's extent is in its own pool");
	cr_assert_eq(raw_put_in(a, "k", 8192, &e, e.offset + e.size - 4096), MMC_INVALID_PARAM, "past the end");
	cr_assert_eq(raw_put_in(a, "k", 4096, &e, e.offset + 100), MMC_INVALID_PARAM, "not on a 4 KiB boundary");
	cr_assert_eq(raw_put_in(b, "k", 4096, &e, e.offset), MMC_UNMATCHED_KEY, "another session's extent");
	cr_assert_eq(raw_put(a, "k", 4096, e.id, ra, ia + 1, e.offset), MMC_UNMATCHED_KEY, "another incarnation");
	memset(longkey, 'x', MMC_KEY_MAX + 1);
	longkey[MMC_KEY_MAX + 1] = '\0';
	cr_assert_eq(raw_put_in(a, "", 4096, &e, e.offset), MMC_INVALID_PARAM, "an empty key");
	cr_assert_eq(raw_put_in(a, longkey, 4096, &e, e.offset), MMC_INVALID_PARAM, "a key one byte too long");
	longkey[MMC_KEY_MAX] = '\0';
	cr_assert_eq(raw_put_in(a, longkey, 4096, &e, e.offset + 8192), 0, "the longest key");
	cr_assert_eq(raw_put_in(a, "k", 4096, &e, e.offset), 0);
	cr_assert_eq(raw_put_in(a, "k2", 4096, &e, e.offset), MMC_INVALID_PARAM, "space already carved");
	cr_assert_eq(raw_put_in(a, "k", 4096, &e, e.offset + 4096), MMC_DUPLICATED_OBJECT, "first writer wins");
	/* the service of c's extent leaves, and a new one takes its rank: c's extent is dead */
	close(a);
	for (int i = 0; i < 100 && metric("mmc_local_services") != 1; i++)
		usleep(20000);
	a = raw_session(true, &ra, &ia);
	cr_assert_eq(ra, on_a.rank, "the rank came back");
	cr_assert_neq(ia, on_a.incarnation);
	cr_assert_eq(raw_put_in(c, "stale", 4096, &on_a, on_a.offset), MMC_UNMATCHED_KEY, "a stale incarnation");
	cr_assert_eq(raw_put(c, "stale", 4096, on_a.id, ra, ia, on_a.offset), MMC_UNMATCHED_KEY,
	             "the new incarnation holds no extent of c's");
	close(a);
	close(b);
	close(c);
}

Test(extents, an_extent_s_space_goes_back_when_its_session_dies)
{
	uint32_t ra;
	uint64_t ia;
	int a = raw_session(true, &ra, &ia), c = raw_session(false, NULL, NULL);
	Mmc__Extent e = raw_grant(c, 2u << 20, -1);
	uint64_t used = metric(DRAM_USED);

	cr_assert_eq(e.rank, ra);
	cr_assert_eq(used, e.size, "an extent is used space (eviction and /metrics count it)");
	cr_assert_eq(raw_put_in(c, "kept", 4096, &e, e.offset), 0);
	close(c); /* the store dies: no return, no teardown */
	/* its writes may still be on their way to a's pool: the space comes back once a is seen running a while */
	cr_assert_eq(ping_until(a, DRAM_USED, 4096), 4096, "only the published object keeps its space");
	close(a);
}

#define QUARANTINED "mmc_pool_quarantined_bytes{media=\"dram\"}"

/*
 * A write a store gave up on may still land: while the owner is stopped it waits in the owner's socket. So the
 * space of a failed put is not handed out again until the owner has been seen running (its frames) for a while;
 * an owner that sends nothing keeps it set aside, however long.
 */
Test(extents, the_space_of_a_failed_write_waits_until_its_owner_is_seen_running)
{
	uint32_t ra;
	uint64_t ia, off, again;
	int a = raw_session(true, &ra, &ia), c = raw_session(false, NULL, NULL);
	Mmc__Extent e = raw_grant(c, 2u << 20, -1), clean;

	/* an extent a write failed in */
	raw_return(c, e.id, true);
	cr_assert_eq(metric(QUARANTINED), e.size, "set aside, not freed");
	cr_assert_eq(metric(DRAM_USED), e.size, "and not handed out");
	usleep(1500000); /* the owner says nothing: it may be stopped */
	cr_assert_eq(metric(QUARANTINED), e.size, "an owner not seen running keeps it set aside");
	cr_assert_eq(ping_until(a, DRAM_USED, 0), 0, "back once the owner ran");
	cr_assert_eq(metric(QUARANTINED), 0);
	cr_assert_geq(metric("mmc_quarantined_total"), 1);

	/* an extent returned clean goes back at once */
	clean = raw_grant(c, 2u << 20, -1);
	raw_return(c, clean.id, false);
	cr_assert_eq(metric(DRAM_USED), 0);

	/* a put whose write failed (alloc, then a commit that says so): its place is not allocated again */
	raw_alloc_then_fail(c, "failed", 5u << 20, MMC_TIMEOUT, &off);
	cr_assert_eq(metric(QUARANTINED), 5u << 20);
	raw_alloc_then_fail(c, "next", 5u << 20, MMC_TIMEOUT, &again);
	cr_assert_neq(again, off, "the failed put's space went to the next put at once");
	cr_assert_eq(ping_until(a, QUARANTINED, 0), 0);
	close(a);
	close(c);
}

Test(extents, eviction_makes_room_with_extents_outstanding)
{
	enum { BIG = 5 << 20, N = 16 }; /* over 4 MiB: by alloc + commit, which evicts */
	mmc_store *s = fixture_store(meta.url, true, 32u << 20), *other = fixture_store(meta.url, false, 0);
	char key[32];
	int ok = 0;

	fixture_put(other, "small/0", 4096, 1); /* other now holds an extent in s's pool */
	cr_assert_geq(metric(PUTS_BY_EXTENT), 1);
	for (int i = 0; i < N; i++) { /* 80 MiB of large objects through a 32 MiB pool */
		snprintf(key, sizeof(key), "big/%d", i);
		fixture_put(s, key, BIG, (uint64_t)i);
	}
	cr_assert_gt(metric("mmc_evictions_total"), 0);
	for (int i = N - 4; i < N; i++) {
		snprintf(key, sizeof(key), "big/%d", i);
		ok += fixture_get(s, key, BIG, (uint64_t)i) == 0;
	}
	cr_assert_eq(ok, 4, "the newest objects are readable");
	/* the extent survived the eviction: small puts keep going by one round trip */
	for (int i = 1; i < 20; i++) {
		snprintf(key, sizeof(key), "small/%d", i);
		fixture_put(other, key, 4096, (uint64_t)i);
		cr_assert_eq(fixture_get(other, key, 4096, (uint64_t)i), 0);
	}
	cr_assert_geq(metric(PUTS_BY_EXTENT), 20);
	mmc_destroy(other);
	mmc_destroy(s);
}

Test(extents, replicas_preferred_ranks_large_objects_and_existing_keys_keep_their_rules)
{
	enum { N = 8 };
	mmc_store *s[3] = {fixture_store(meta.url, true, POOL), fixture_store(meta.url, true, POOL),
	                   fixture_store(meta.url, true, POOL)};
	uint32_t want = fixture_rank(s[1]);
	mmc_replicate_config rc = {
	    .replica_num = 2, .preferred_count = 1, .preferred_local_service_ids = {(int32_t)want}};
	char names[N][32], *bufs[N];
	const char *keys[N];
	size_t sizes[N];
	int res[N];
	mmc_key_info info[N];
	uint64_t puts;

	fixture_put(s[0], "taken", 4096, 1);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), i == 3 ? "taken" : "rep/%d", i);
		keys[i] = names[i];
		sizes[i] = i == 5 ? (5u << 20) : 5000; /* one object too large for an extent (over 4 MiB) */
		bufs[i] = malloc(sizes[i]);
		pattern_fill(bufs[i], sizes[i], 50 + (uint64_t)i);
	}
	puts = metric(PUTS_BY_EXTENT);
	cr_assert_eq(mmc_batch_put_from(s[0], keys, (const void *const *)bufs, sizes, N, MMC_COPY_H2G, &rc, res), 0);
	cr_assert_gt(metric(PUTS_BY_EXTENT), puts, "the small ones by one round trip");
	cr_assert_gt(metric(COMMITS), 0, "the large one by alloc + commit");
	cr_assert_eq(mmc_batch_get_key_info(s[2], keys, N, 0, info), 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(res[i], 0, "put %s", keys[i]);
		if (i == 3)
			continue;
		cr_assert_eq(info[i].blob_num, 2, "%s: two replicas", keys[i]);
		cr_assert_neq(info[i].loc[0], info[i].loc[1], "%s: on distinct services", keys[i]);
		cr_assert(info[i].loc[0] == want || info[i].loc[1] == want, "%s: one on the preferred rank", keys[i]);
		cr_assert_eq(fixture_get(s[2], keys[i], sizes[i], 50 + (uint64_t)i), 0, "%s reads back", keys[i]);
	}
	cr_assert_eq(info[3].blob_num, 1, "an existing key keeps its object");
	cr_assert_eq(fixture_get(s[2], "taken", 4096, 1), 0, "and its first value");
	for (int i = 0; i < N; i++)
		free(bufs[i]);
	for (int i = 0; i < 3; i++)
		mmc_destroy(s[i]);
}

/* ---- a put meets another put of its key that is still writing ---- */

struct racing_put {
	mmc_store *s;
	const char *key;
	size_t size;
	uint64_t seed;
	int rc;
	atomic_bool done;
	pthread_t th;
};

static void *racing_put_main(void *arg)
{
	struct racing_put *p = arg;
	void *buf = malloc(p->size);

	pattern_fill(buf, p->size, p->seed);
	p->rc = mmc_put_from(p->s, p->key, buf, p->size, MMC_COPY_H2G, NULL);
	free(buf);
	atomic_store(&p->done, true);
	return NULL;
}

static void racing_put_start(struct racing_put *p, mmc_store *s, const char *key, size_t size, uint64_t seed)
{
	*p = (struct racing_put){.s = s, .key = key, .size = size, .seed = seed};
	cr_assert_eq(pthread_create(&p->th, NULL, racing_put_main, p), 0);
}

static int racing_put_join(struct racing_put *p)
{
	pthread_join(p->th, NULL);
	return p->rc;
}

/*
 * A put told "the key exists" must not return before that value is stored: the writer holding the key may still
 * die. So a put of a key another put has allocated but not committed waits, and when that writer dies it stores
 * its own value: by the extent path (4 KiB) and by alloc + commit (over 4 MiB).
 */
Test(extents, a_put_of_a_key_another_put_is_writing_waits_and_stores_its_own_value_when_that_put_dies)
{
	enum { BIG = 5 << 20 };
	mmc_store *s = fixture_store(meta.url, true, POOL);
	int c = raw_session(false, NULL, NULL), old = raw_session(false, NULL, NULL);
	struct racing_put small, big;
	uint64_t token;

	cr_assert_eq(raw_alloc(c, "held/small", 4096, NULL, &token), 0);
	cr_assert_eq(raw_alloc(c, "held/big", BIG, NULL, &token), 0);
	/* a store of an older minor (as the raw session's hello is) is answered as it always was */
	cr_assert_eq(raw_alloc(old, "held/small", 4096, NULL, &token), MMC_DUPLICATED_OBJECT);
	uint64_t puts = metric(PUTS_BY_EXTENT);

	racing_put_start(&small, s, "held/small", 4096, 7);
	racing_put_start(&big, s, "held/big", BIG, 8);
	usleep(300000);
	cr_assert_not(atomic_load(&small.done), "a put of a key being written returned before that write ended");
	cr_assert_not(atomic_load(&big.done), "a large put of a key being written returned before that write ended");
	/* the small one tried its extent once; it waits by alloc, which answers before anything is written */
	cr_assert_leq(metric(PUTS_BY_EXTENT) - puts, 1, "a waiting put wrote its bytes again and again");
	close(c); /* the writer dies: its allocations go */
	cr_assert_eq(racing_put_join(&small), 0);
	cr_assert_eq(racing_put_join(&big), 0);
	cr_assert_eq(fixture_get(s, "held/small", 4096, 7), 0, "the waiting put stored its own value");
	cr_assert_eq(fixture_get(s, "held/big", BIG, 8), 0, "the waiting put stored its own value");
	close(old);
	mmc_destroy(s);
}

/* The writer holding the key commits: the waiting put ends MMC_OK and the first value stays. */
Test(extents, a_put_of_a_key_another_put_is_writing_ends_ok_once_that_value_is_stored)
{
	mmc_store *s = fixture_store(meta.url, true, POOL);
	int c = raw_session(false, NULL, NULL);
	struct racing_put p;
	mmc_key_info info;
	uint64_t token;

	cr_assert_eq(raw_alloc(c, "held/first", 8192, NULL, &token), 0);
	racing_put_start(&p, s, "held/first", 4096, 9);
	usleep(300000);
	cr_assert_not(atomic_load(&p.done), "a put of a key being written returned before that write ended");
	raw_commit(c, "held/first", token, 0);
	cr_assert_eq(racing_put_join(&p), 0);
	cr_assert_eq(mmc_get_key_info(s, "held/first", 0, &info), 0);
	cr_assert_eq(info.size, 8192, "the first writer's value stays");
	close(c);
	mmc_destroy(s);
}

/* A writer that holds the key past the put's timeout_ms: the put fails with MMC_TIMEOUT, and stores nothing. */
Test(extents, a_put_waits_for_another_writer_of_its_key_at_most_timeout_ms)
{
	mmc_local_config cf = fixture_config(meta.url, POOL);
	mmc_store *s = mmc_create();
	int c = raw_session(false, NULL, NULL);
	uint64_t token, t0;
	char buf[4096] = {0};
	int rc;

	cf.timeout_ms = 500;
	cr_assert_eq(mmc_setup(s, &cf), 0);
	cr_assert_eq(mmc_init(s, 0, true), 0);
	cr_assert_eq(raw_alloc(c, "held/long", 4096, NULL, &token), 0);
	t0 = proc_now_ms();
	rc = mmc_put_from(s, "held/long", buf, sizeof(buf), MMC_COPY_H2G, NULL);
	cr_assert_eq(rc, MMC_TIMEOUT);
	cr_assert_geq(proc_now_ms() - t0, 500);
	cr_assert_lt(proc_now_ms() - t0, 5000);
	cr_assert_eq(mmc_is_exist(s, "held/long"), 0, "the held key is not readable");
	close(c);
	mmc_destroy(s);
}

/*
 * retry_ms bounds each wait for a lost connection, not the whole put: a put that waited longer than retry_ms for
 * another writer of its key, and then lost its connection (the meta server restarted, taking the other writer's
 * allocation with it), still gets retry_ms to reconnect and store its value. It used to fail at once.
 */
Test(extents, a_put_that_waited_for_another_writer_still_rides_out_a_meta_server_restart)
{
	mmc_local_config cf = fixture_config(meta.url, POOL);
	mmc_store *s = mmc_create();
	int c = raw_session(false, NULL, NULL);
	struct racing_put p;
	uint64_t token;

	cf.retry_ms = 3000;
	cr_assert_eq(mmc_setup(s, &cf), 0);
	cr_assert_eq(mmc_init(s, 0, true), 0);
	cr_assert_eq(raw_alloc(c, "held/restart", 4096, NULL, &token), 0);
	racing_put_start(&p, s, "held/restart", 4096, 10);
	usleep(4000000); /* past retry_ms */
	cr_assert_not(atomic_load(&p.done), "a put of a key being written returned before that write ended");
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	cr_assert_eq(racing_put_join(&p), 0);
	cr_assert_eq(fixture_get(s, "held/restart", 4096, 10), 0, "the waiting put stored its own value");
	close(c);
	mmc_destroy(s);
}

/* A GVA allocation (mmc_batch_malloc) is held for its write lease by design: a put of its key is answered at once, as
 * it always was, and not made to wait for the lease. */
Test(extents, a_put_of_a_key_held_by_a_gva_allocation_is_answered_at_once)
{
	mmc_store *s = fixture_store(meta.url, true, POOL), *other = fixture_store(meta.url, false, 0);
	const char *key = "held/gva";
	size_t size = 4096;
	mmc_gva gva = 0;
	char buf[4096] = {0};
	uint64_t t0;

	cr_assert_eq(mmc_batch_malloc(s, &key, &size, 1, MMC_MEDIA_DRAM, 0, &gva), 0);
	cr_assert_neq(gva, 0);
	t0 = proc_now_ms();
	cr_assert_eq(mmc_put_from(other, key, buf, sizeof(buf), MMC_COPY_H2G, NULL), 0);
	cr_assert_lt(proc_now_ms() - t0, 1000, "the put waited for the GVA allocation's write lease");
	mmc_destroy(other);
	mmc_destroy(s);
}

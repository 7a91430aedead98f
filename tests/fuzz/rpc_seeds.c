/*
 * Writes the seed corpus of fuzz_rpc (tests/fuzz/corpus/rpc/): the byte streams of short real sessions, framed as
 * libmmc frames them. Run once when the protocol grows (see docs/testing.md): mmc-fuzz-rpc-seeds DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmc.pb-c.h"
#include "wire_limits.h"

static uint8_t stream[1 << 16];
static size_t used;
static uint64_t next_id;

static void frame(Mmc__Frame *f)
{
	size_t n;

	f->id = ++next_id;
	n = mmc__frame__get_packed_size(f);
	if (used + 4 + n > sizeof(stream))
		abort();
	for (int i = 0; i < 4; i++)
		stream[used + (size_t)i] = (uint8_t)(n >> (8 * i));
	mmc__frame__pack(f, stream + used + 4);
	used += 4 + n;
}

static void hello(void)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__Hello h = MMC__HELLO__INIT;

	h.host = "fuzzhost";
	h.pid = 42;
	h.version = MMC_WIRE_VERSION;
	f.body_case = MMC__FRAME__BODY_HELLO;
	f.hello = &h;
	frame(&f);
}

static void register_service(void)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__Register r = MMC__REGISTER__INIT;
	Mmc__Segment s = MMC__SEGMENT__INIT, *segs[1] = {&s};
	uint8_t addr[16] = {1, 2, 3, 4};

	r.rank = -1;
	r.fabric_addr.data = addr;
	r.fabric_addr.len = sizeof(addr);
	r.provider = "tcp;ofi_rxm";
	s.media = 1; /* MMC_MEDIA_DRAM */
	s.size = 64u << 20;
	s.key = 7;
	r.n_segments = 1;
	r.segments = segs;
	r.world_size = 16;
	f.body_case = MMC__FRAME__BODY_REGISTER;
	f.register_ = &r;
	frame(&f);
}

static void keys(Mmc__Frame__BodyCase which, const char *key, uint64_t size, uint64_t token)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__KeyBatch b = MMC__KEY_BATCH__INIT;
	Mmc__KeyItem it = MMC__KEY_ITEM__INIT, *items[1] = {&it};

	it.key = (char *)key;
	it.size = size;
	it.token = token;
	b.n_items = 1;
	b.items = items;
	b.replica_num = 1;
	f.body_case = which;
	f.alloc = &b; /* every KeyBatch member of the oneof shares this slot */
	frame(&f);
}

/* An extent for one 4 KiB object, then the put that publishes it at the extent's start (ids count from 1 in a
 * fresh server; the first service registered is rank 0, its first incarnation 1). */
static void extent_put(const char *key)
{
	Mmc__Frame f = MMC__FRAME__INIT, g = MMC__FRAME__INIT;
	Mmc__ExtentRequest er = MMC__EXTENT_REQUEST__INIT;
	Mmc__PutBatch pb = MMC__PUT_BATCH__INIT;
	Mmc__PutItem it = MMC__PUT_ITEM__INIT, *items[1] = {&it};
	Mmc__PutPlace pl = MMC__PUT_PLACE__INIT, *places[1] = {&pl};

	er.bytes = 1u << 20;
	er.min_bytes = 4096;
	er.replica_num = 1;
	f.body_case = MMC__FRAME__BODY_EXTENT_REQUEST;
	f.extent_request = &er;
	frame(&f);
	pl.extent = 1;
	pl.incarnation = 1;
	it.key = (char *)key;
	it.size = 4096;
	it.n_places = 1;
	it.places = places;
	pb.n_items = 1;
	pb.items = items;
	g.body_case = MMC__FRAME__BODY_PUT;
	g.put = &pb;
	frame(&g);
}

static void ping(void)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__Ping p = MMC__PING__INIT;

	f.body_case = MMC__FRAME__BODY_PING;
	f.ping = &p;
	frame(&f);
}

static void save(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "wb")) || fwrite(stream, 1, used, f) != used || fclose(f))
		abort();
	used = 0;
	next_id = 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	hello();
	save(argv[1], "hello");
	hello();
	ping();
	keys(MMC__FRAME__BODY_EXIST, "k", 0, 0);
	keys(MMC__FRAME__BODY_QUERY, "k", 0, 0);
	save(argv[1], "client-queries");
	hello();
	register_service();
	keys(MMC__FRAME__BODY_ALLOC, "block42", 4096, 0);
	keys(MMC__FRAME__BODY_COMMIT, "block42", 0, 1);
	keys(MMC__FRAME__BODY_GET, "block42", 0, 0);
	keys(MMC__FRAME__BODY_RELEASE, "block42", 0, 1);
	keys(MMC__FRAME__BODY_REMOVE, "block42", 0, 0);
	save(argv[1], "service-put-get-remove");
	hello();
	register_service();
	keys(MMC__FRAME__BODY_MALLOC, "gva", 8192, 0);
	keys(MMC__FRAME__BODY_WRITE_FINISH, "gva", 0, 1);
	keys(MMC__FRAME__BODY_ADD_LEASE, "gva", 0, 0);
	keys(MMC__FRAME__BODY_REMOVE_LEASE, "gva", 0, 0);
	keys(MMC__FRAME__BODY_EVICT, "gva", 0, 0);
	save(argv[1], "service-gva");
	hello();
	register_service();
	extent_put("extent42");
	keys(MMC__FRAME__BODY_GET, "extent42", 0, 0);
	keys(MMC__FRAME__BODY_REMOVE, "extent42", 0, 0);
	save(argv[1], "service-extent-put");
	keys(MMC__FRAME__BODY_GET, "no-hello", 0, 0);
	save(argv[1], "get-before-hello");
	return 0;
}

/*
 * The two ends agree: every message libmmc encodes (with nanopb, or by hand for the key batches) decodes with
 * protobuf-c (the server) to the same values, and every message the server encodes with protobuf-c decodes on the
 * client (nanopb, or by hand for KeyBatchReply) to the same values.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "mmc.pb-c.h"
#include "mmc/mmc.h"
#include "extent.h"
#include "pb_fields.h"
#include "wire.h"

static Mmc__Frame *client_to_server(uint64_t id, uint32_t body, const pb_msgdesc_t *fields, const void *msg)
{
	static struct wbuf b;
	Mmc__Frame *f;
	uint32_t len;

	const uint8_t *p;

	cr_assert_eq(wire_encode(&b, id, body, fields, msg), 0);
	p = b.data + b.start;
	len = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	cr_assert_eq(len + 4, b.len - b.start, "length prefix");
	f = mmc__frame__unpack(NULL, len, p + 4);
	cr_assert_not_null(f, "protobuf-c could not decode what nanopb wrote");
	cr_assert_eq(f->id, id);
	cr_assert_eq((uint32_t)f->body_case, body);
	return f;
}

/* Packs a server frame and splits it with the client's envelope reader. */
static void server_to_client(const Mmc__Frame *f, uint32_t *body, const uint8_t **data, size_t *dlen)
{
	static uint8_t buf[1 << 20];
	size_t n = mmc__frame__pack(f, buf);
	uint64_t id;

	cr_assert_eq(wire_split(buf, n, &id, body, data, dlen), 0);
	cr_assert_eq(id, f->id);
}

Test(wire, hello)
{
	mmc_Hello h = {.pid = 4242, .version = MMC_WIRE_VERSION};
	Mmc__Frame *f;

	strcpy(h.host, "node-7");
	f = client_to_server(9, WB_HELLO, mmc_Hello_fields, &h);
	cr_assert_str_eq(f->hello->host, "node-7");
	cr_assert_eq(f->hello->pid, 4242);
	cr_assert_eq(f->hello->version, MMC_WIRE_VERSION);
	mmc__frame__free_unpacked(f, NULL);
}

Test(wire, register_and_service_info)
{
	mmc_Register r = mmc_Register_init_zero;
	Mmc__Frame *f, out = MMC__FRAME__INIT;
	Mmc__ServiceInfo si = MMC__SERVICE_INFO__INIT;
	Mmc__Segment seg = MMC__SEGMENT__INIT, *psegs[1] = {&seg};
	mmc_ServiceInfo back = mmc_ServiceInfo_init_zero;
	uint32_t body;
	const uint8_t *data;
	size_t dlen;
	pb_istream_t s;

	r.rank = -1;
	r.incarnation = 77;
	r.fabric_addr.size = 16;
	memset(r.fabric_addr.bytes, 0xab, 16);
	strcpy(r.provider, "tcp;ofi_rxm");
	r.segments_count = 1;
	r.segments[0] = (mmc_Segment){.media = 1, .size = 1ull << 30, .base_addr = 0x7f0000000000ull, .key = 99};
	r.world_size = 256;
	f = client_to_server(1, WB_REGISTER, mmc_Register_fields, &r);
	cr_assert_eq(f->register_->rank, -1);
	cr_assert_eq(f->register_->incarnation, 77);
	cr_assert_eq(f->register_->fabric_addr.len, 16);
	cr_assert_eq(f->register_->fabric_addr.data[15], 0xab);
	cr_assert_str_eq(f->register_->provider, "tcp;ofi_rxm");
	cr_assert_eq(f->register_->n_segments, 1);
	cr_assert_eq(f->register_->segments[0]->size, 1ull << 30);
	cr_assert_eq(f->register_->segments[0]->base_addr, 0x7f0000000000ull);
	cr_assert_eq(f->register_->segments[0]->key, 99);
	cr_assert_eq(f->register_->world_size, 256);
	mmc__frame__free_unpacked(f, NULL);

	seg.media = 1;
	seg.size = 4096;
	seg.base_addr = 1234;
	seg.key = 5;
	si.result = MMC_EXCEED_CAPACITY;
	si.rank = 3;
	si.incarnation = 8;
	si.fabric_addr.data = (uint8_t *)"\x01\x02\x03";
	si.fabric_addr.len = 3;
	si.provider = "shm";
	si.host = "h";
	si.pid = 12;
	si.n_segments = 1;
	si.segments = psegs;
	out.id = 5;
	out.body_case = MMC__FRAME__BODY_SERVICE_INFO;
	out.service_info = &si;
	server_to_client(&out, &body, &data, &dlen);
	cr_assert_eq(body, WB_SERVICE_INFO);
	s = pb_istream_from_buffer(data, dlen);
	cr_assert(pb_decode(&s, mmc_ServiceInfo_fields, &back));
	cr_assert_eq(back.result, MMC_EXCEED_CAPACITY);
	cr_assert_eq(back.rank, 3);
	cr_assert_eq(back.incarnation, 8);
	cr_assert_eq(back.fabric_addr.size, 3);
	cr_assert_str_eq(back.provider, "shm");
	cr_assert_eq(back.segments_count, 1);
	cr_assert_eq(back.segments[0].base_addr, 1234);
}

Test(wire, key_batch_streams_items)
{
	const char *keys[] = {"a", "bb", "ccc", "dddd"};
	size_t index[] = {3, 1};
	uint64_t sizes[] = {1, 2, 3, 1ull << 40};
	int32_t values[] = {0, -5, 0, 7};
	struct wire_checksum sums[] = {{0, 0}, {0, 0}, {0, 0}, {MMC_WIRE_CHECKSUM_CRC32C, 0xE3069283u}};
	struct wire_items items = {
	    .n = 2, .keys = keys, .index = index, .sizes = sizes, .values = values, .checksums = sums};
	mmc_KeyBatch req = mmc_KeyBatch_init_zero;
	struct wire_key_batch kb;
	Mmc__Frame *f;

	req.replica_num = 3;
	req.preferred_count = 2;
	req.preferred[0] = 4;
	req.preferred[1] = -1;
	req.flags = MMC_WIRE_FLAG_SPREAD;
	req.media = MMC_MEDIA_DRAM;
	req.lease_ttl_ms = 30000;
	wire_key_batch_init(&kb, &req, &items);
	f = client_to_server(77, WB_ALLOC, NULL, &kb.hand);
	cr_assert_eq(f->alloc->n_items, 2);
	cr_assert_str_eq(f->alloc->items[0]->key, "dddd");
	cr_assert_eq(f->alloc->items[0]->size, 1ull << 40);
	cr_assert_eq(f->alloc->items[0]->value, 7);
	cr_assert_str_eq(f->alloc->items[1]->key, "bb");
	cr_assert_eq(f->alloc->items[1]->value, -5);
	cr_assert_eq(f->alloc->items[0]->checksum_type, MMC_WIRE_CHECKSUM_CRC32C);
	cr_assert_eq(f->alloc->items[0]->checksum, 0xE3069283u);
	cr_assert_eq(f->alloc->items[1]->checksum_type, MMC_WIRE_CHECKSUM_NONE);
	cr_assert_eq(f->alloc->replica_num, 3);
	cr_assert_eq(f->alloc->n_preferred, 2);
	cr_assert_eq(f->alloc->preferred[1], -1);
	cr_assert_eq(f->alloc->flags, MMC_WIRE_FLAG_SPREAD);
	cr_assert_eq(f->alloc->lease_ttl_ms, 30000);
	mmc__frame__free_unpacked(f, NULL);
}

/* A call's per-key records (store_data.c's plan): the items read each field in place, stride bytes apart. */
Test(wire, key_batch_items_from_records)
{
	struct rec {
		uint8_t state;
		uint64_t size, token;
		int32_t value;
		struct wire_checksum sum;
	} r[3] = {{1, 10, 100, 0, {0, 0}}, {2, 20, 200, -3, {MMC_WIRE_CHECKSUM_CRC32C, 9}}, {3, 30, 300, 4, {0, 0}}};
	const char *keys[] = {"x", "yy", "zzz"};
	size_t index[] = {2, 1};
	struct wire_items items = {.n = 2,
	                           .keys = keys,
	                           .index = index,
	                           .sizes = &r[0].size,
	                           .values = &r[0].value,
	                           .tokens = &r[0].token,
	                           .checksums = &r[0].sum,
	                           .stride = sizeof(r[0])};
	mmc_KeyBatch req = mmc_KeyBatch_init_zero;
	struct wire_key_batch kb;
	Mmc__Frame *f;

	wire_key_batch_init(&kb, &req, &items);
	f = client_to_server(78, WB_COMMIT, NULL, &kb.hand);
	cr_assert_eq(f->commit->n_items, 2);
	cr_assert_str_eq(f->commit->items[0]->key, "zzz");
	cr_assert_eq(f->commit->items[0]->size, 30);
	cr_assert_eq(f->commit->items[0]->token, 300);
	cr_assert_eq(f->commit->items[0]->value, 4);
	cr_assert_str_eq(f->commit->items[1]->key, "yy");
	cr_assert_eq(f->commit->items[1]->size, 20);
	cr_assert_eq(f->commit->items[1]->token, 200);
	cr_assert_eq(f->commit->items[1]->value, -3);
	cr_assert_eq(f->commit->items[1]->checksum_type, MMC_WIRE_CHECKSUM_CRC32C);
	cr_assert_eq(f->commit->items[1]->checksum, 9);
	mmc__frame__free_unpacked(f, NULL);
}

struct seen {
	int n;
	int32_t result[4];
	uint64_t size[4];
	uint32_t blobs[4];
	uint64_t offset[4];
	uint32_t checksum_type[4], checksum[4];
};

static bool collect(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct seen *s = arg;

	if (i >= 4)
		return false;
	s->result[i] = r->result;
	s->size[i] = r->size;
	s->blobs[i] = r->blobs_count;
	s->offset[i] = r->blobs_count ? r->blobs[r->blobs_count - 1].offset : 0;
	s->checksum_type[i] = r->checksum_type;
	s->checksum[i] = r->checksum;
	s->n++;
	return true;
}

Test(wire, key_batch_reply_streams_results)
{
	Mmc__Frame out = MMC__FRAME__INIT;
	Mmc__KeyBatchReply rep = MMC__KEY_BATCH_REPLY__INIT;
	Mmc__KeyResult r[3], *pr[3];
	Mmc__Blob b[8], *pb[8];
	struct seen seen = {0};
	struct wire_results sink = {collect, &seen, 0, SIZE_MAX};
	uint32_t body;
	const uint8_t *data;
	size_t dlen;
	int32_t result;

	for (int i = 0; i < 8; i++) {
		mmc__blob__init(&b[i]);
		b[i].rank = (uint32_t)i;
		b[i].incarnation = 100 + (uint64_t)i;
		b[i].media = 1;
		b[i].offset = (uint64_t)i << 32;
		b[i].state = MMC_BLOB_READABLE;
		pb[i] = &b[i];
	}
	for (int i = 0; i < 3; i++) {
		mmc__key_result__init(&r[i]);
		pr[i] = &r[i];
	}
	r[0].result = 0;
	r[0].size = 4096;
	r[0].n_blobs = 8; /* the most replicas */
	r[0].blobs = pb;
	r[0].lease_ms = 10000;
	r[0].checksum_type = MMC_WIRE_CHECKSUM_CRC32C;
	r[0].checksum = 0xffffffffu; /* a fixed32 after the widest blob list */
	r[1].result = MMC_OBJECT_NOT_EXISTS;
	r[2].result = 1;
	rep.n_items = 3;
	rep.items = pr;
	out.id = 77;
	out.body_case = MMC__FRAME__BODY_KEY_REPLY;
	out.key_reply = &rep;
	server_to_client(&out, &body, &data, &dlen);
	cr_assert_eq(body, WB_KEY_REPLY);
	cr_assert_eq(wire_decode_key_reply(data, dlen, &sink, &result), 0);
	cr_assert_eq(result, 0);
	cr_assert_eq(seen.n, 3);
	cr_assert_eq(seen.size[0], 4096);
	cr_assert_eq(seen.blobs[0], 8);
	cr_assert_eq(seen.offset[0], 7ull << 32);
	cr_assert_eq(seen.checksum_type[0], MMC_WIRE_CHECKSUM_CRC32C);
	cr_assert_eq(seen.checksum[0], 0xffffffffu);
	cr_assert_eq(seen.checksum_type[1], MMC_WIRE_CHECKSUM_NONE);
	cr_assert_eq(seen.result[1], MMC_OBJECT_NOT_EXISTS);
	cr_assert_eq(seen.result[2], 1);

	/* more results than the caller asked for: refused before the one past the last reaches the sink (which would
	 * write past the caller's arrays) */
	sink.max = 2;
	seen.n = 0;
	cr_assert_eq(wire_decode_key_reply(data, dlen, &sink, &result), MMC_INVALID_PARAM);
	cr_assert_eq(seen.n, 2);
	sink.max = SIZE_MAX;

	/* a whole-call error with no items */
	rep.result = MMC_INVALID_PARAM;
	rep.n_items = 0;
	server_to_client(&out, &body, &data, &dlen);
	seen.n = 0;
	cr_assert_eq(wire_decode_key_reply(data, dlen, &sink, &result), 0);
	cr_assert_eq(result, MMC_INVALID_PARAM);
	cr_assert_eq(seen.n, 0);
}

/* A KeyResult as a later server might send it: fields this client does not know, of every wire type, are skipped. */
static size_t later_result(uint8_t *buf, int nblobs)
{
	uint8_t blob[32], res[512], *p = blob, *q = res;
	size_t blen;

	p = pb_put_field(p, 0x08, 7);       /* rank */
	p = pb_put_field(p, 0x20, 1 << 20); /* offset */
	p = pb_put_field(p, 0x30, 99);      /* field 6: unknown */
	blen = (size_t)(p - blob);
	q = pb_put_field(q, 0x08, pb_zigzag32(-3)); /* result */
	q = pb_put_field(q, 0x40, 12345);           /* field 8, varint: unknown */
	q = pb_put_field(q, 0x10, 4096);            /* size */
	*q++ = 0x49;                                /* field 9, fixed64: unknown */
	memset(q, 0xee, 8);
	q += 8;
	for (int i = 0; i < nblobs; i++) {
		q = pb_put_sub(q, 0x1a, blen);
		memcpy(q, blob, blen);
		q += blen;
	}
	q = pb_put_sub(q, 0x52, 3); /* field 10, bytes: unknown */
	memcpy(q, "abc", 3);
	q += 3;
	*q++ = 0x5d; /* field 11, fixed32: unknown */
	memset(q, 0x11, 4);
	q += 4;
	q = pb_put_fixed32(q, 0x3d, 0xcafef00d); /* checksum */
	buf = pb_put_field(buf, 0x78, 5);        /* KeyBatchReply field 15: unknown */
	buf = pb_put_sub(buf, 0x12, (size_t)(q - res));
	memcpy(buf, res, (size_t)(q - res));
	return 2 + 1 + varint_len((size_t)(q - res)) + (size_t)(q - res);
}

static bool refuse(void *arg, size_t i, const mmc_KeyResult *r)
{
	return false;
}

Test(wire, key_reply_skips_later_fields_and_refuses_bad_bytes)
{
	static uint8_t buf[1024];
	struct seen seen = {0};
	struct wire_results sink = {collect, &seen, 0, SIZE_MAX}, no = {refuse, NULL, 0, SIZE_MAX};
	static const uint8_t group[] = {0x12, 0x02, 0x0b, 0x0c}; /* a KeyResult holding a group: no proto3 has one */
	int32_t result;
	size_t n = later_result(buf, 2);

	cr_assert_eq(wire_decode_key_reply(buf, n, &sink, &result), 0);
	cr_assert_eq(result, 0);
	cr_assert_eq(seen.n, 1);
	cr_assert_eq(seen.result[0], -3);
	cr_assert_eq(seen.size[0], 4096);
	cr_assert_eq(seen.blobs[0], 2);
	cr_assert_eq(seen.offset[0], 1 << 20);
	cr_assert_eq(seen.checksum[0], 0xcafef00d);
	for (size_t cut = 1; cut < n; cut++) /* but at 2, where the item (a whole field) begins: that is a message */
		if (cut != 2)
			cr_assert_eq(wire_decode_key_reply(buf, cut, &sink, &result), MMC_INVALID_PARAM, "cut at %zu",
			             cut);
	cr_assert_eq(wire_decode_key_reply(buf, n, &no, &result), MMC_INVALID_PARAM, "the sink said no");
	cr_assert_eq(wire_decode_key_reply(group, sizeof(group), &sink, &result), MMC_INVALID_PARAM);
	n = later_result(buf, 9);
	cr_assert_eq(wire_decode_key_reply(buf, n, &sink, &result), MMC_INVALID_PARAM, "more blobs than replicas");
}

/* A field the reader knows, in another wire type: protobuf-c and nanopb refuse the reply, and so does the reader (it
 * skipped the field, and a result sent as bytes read as 0, a success). */
Test(wire, key_reply_refuses_a_known_field_of_another_wire_type)
{
	static const uint8_t whole[] = {0x0a, 0x00};                        /* result as bytes */
	static const uint8_t item[] = {0x12, 0x02, 0x0a, 0x00};             /* a KeyResult's result as bytes */
	static const uint8_t blob[] = {0x12, 0x04, 0x1a, 0x02, 0x0a, 0x00}; /* a Blob's rank as bytes */
	static const uint8_t later[] = {0x12, 0x02, 0x4a, 0x00}; /* a KeyResult's field 9 as bytes: skipped */
	struct seen seen = {0};
	struct wire_results sink = {collect, &seen, 0, SIZE_MAX};
	int32_t result;

	cr_assert_eq(wire_decode_key_reply(whole, sizeof(whole), &sink, &result), MMC_INVALID_PARAM);
	cr_assert_eq(wire_decode_key_reply(item, sizeof(item), &sink, &result), MMC_INVALID_PARAM);
	cr_assert_eq(wire_decode_key_reply(blob, sizeof(blob), &sink, &result), MMC_INVALID_PARAM);
	cr_assert_eq(wire_decode_key_reply(later, sizeof(later), &sink, &result), 0);
}

/* Two odd spellings protobuf-c reads one way each (tests/fuzz/fuzz_codec.c found both): a 32-bit field given a wider
 * varint is cut to its low 32 bits, and a length prefix of more than five bytes is refused however small. */
Test(wire, key_reply_reads_odd_varints_as_protobuf_c_does)
{
	/* KeyBatchReply{result = sint32 in seven bytes, items = KeyResult{result 1}} */
	static const uint8_t wide[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xb6, 0x00, 0x12, 0x02, 0x08, 0x01};
	/* KeyBatchReply{items = KeyResult{}} with the item's length 0 in six bytes */
	static const uint8_t long_len[] = {0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
	struct seen seen = {0};
	struct wire_results sink = {collect, &seen, 0, SIZE_MAX};
	Mmc__KeyBatchReply *ref = mmc__key_batch_reply__unpack(NULL, sizeof(wide), wide);
	int32_t result;

	cr_assert_not_null(ref);
	cr_assert_eq(wire_decode_key_reply(wide, sizeof(wide), &sink, &result), 0);
	cr_assert_eq(result, ref->result);
	cr_assert_eq(seen.n, 1);
	cr_assert_eq(seen.result[0], -1);
	mmc__key_batch_reply__free_unpacked(ref, NULL);
	cr_assert_null(mmc__key_batch_reply__unpack(NULL, sizeof(long_len), long_len));
	cr_assert_eq(wire_decode_key_reply(long_len, sizeof(long_len), &sink, &result), MMC_INVALID_PARAM);
}

/* The frame's head is written once the body is: ids of every varint length, and the frame still whole. */
Test(wire, frame_ids_of_every_length)
{
	const char *keys[] = {"k0", "k1", "k2"};
	struct wire_items items = {.n = 3, .keys = keys};
	mmc_KeyBatch req = mmc_KeyBatch_init_zero;
	struct wire_key_batch kb;

	wire_key_batch_init(&kb, &req, &items);
	for (int bits = 0; bits <= 64; bits += 7) {
		uint64_t id = bits == 63 ? UINT64_MAX : bits ? (UINT64_C(1) << bits) - 1 : 0;
		Mmc__Frame *f = client_to_server(id, WB_EXIST, NULL, &kb.hand);

		cr_assert_eq(f->exist->n_items, 3);
		cr_assert_str_eq(f->exist->items[2]->key, "k2");
		mmc__frame__free_unpacked(f, NULL);
	}
}

Test(wire, small_messages)
{
	mmc_Ping ping = mmc_Ping_init_zero;
	mmc_Unregister un = mmc_Unregister_init_zero;
	mmc_ServiceQuery q = {.rank = 1023};
	Mmc__Frame *f, out = MMC__FRAME__INIT;
	Mmc__Reply rep = MMC__REPLY__INIT;
	Mmc__HelloReply hr = MMC__HELLO_REPLY__INIT;
	Mmc__BlobTask task = MMC__BLOB_TASK__INIT;
	mmc_Reply r = mmc_Reply_init_zero;
	mmc_HelloReply h = mmc_HelloReply_init_zero;
	mmc_BlobTask t = mmc_BlobTask_init_zero;
	uint32_t body;
	const uint8_t *data;
	size_t dlen;
	pb_istream_t s;

	f = client_to_server(1, WB_PING, mmc_Ping_fields, &ping);
	mmc__frame__free_unpacked(f, NULL);
	f = client_to_server(2, WB_UNREGISTER, mmc_Unregister_fields, &un);
	mmc__frame__free_unpacked(f, NULL);
	f = client_to_server(3, WB_SERVICE, mmc_ServiceQuery_fields, &q);
	cr_assert_eq(f->service->rank, 1023);
	mmc__frame__free_unpacked(f, NULL);

	rep.result = MMC_LEASE_EXPIRED;
	out.id = 4;
	out.body_case = MMC__FRAME__BODY_REPLY;
	out.reply = &rep;
	server_to_client(&out, &body, &data, &dlen);
	s = pb_istream_from_buffer(data, dlen);
	cr_assert(pb_decode(&s, mmc_Reply_fields, &r));
	cr_assert_eq(r.result, MMC_LEASE_EXPIRED);

	hr.session = 1ull << 60;
	hr.lease_ttl_ms = 10000;
	hr.heartbeat_timeout_ms = 3000;
	out.body_case = MMC__FRAME__BODY_HELLO_REPLY;
	out.hello_reply = &hr;
	server_to_client(&out, &body, &data, &dlen);
	s = pb_istream_from_buffer(data, dlen);
	cr_assert(pb_decode(&s, mmc_HelloReply_fields, &h));
	cr_assert_eq(h.session, 1ull << 60);
	cr_assert_eq(h.heartbeat_timeout_ms, 3000);

	task.op = MMC_TASK_COPY;
	task.src_media = MMC_MEDIA_DRAM;
	task.dst_media = MMC_MEDIA_SSD;
	task.src_offset = 4096;
	task.dst_offset = 8192;
	task.size = 1 << 20;
	out.body_case = MMC__FRAME__BODY_TASK;
	out.task = &task;
	server_to_client(&out, &body, &data, &dlen);
	cr_assert_eq(body, WB_TASK);
	s = pb_istream_from_buffer(data, dlen);
	cr_assert(pb_decode(&s, mmc_BlobTask_fields, &t));
	cr_assert_eq(t.dst_offset, 8192);
	cr_assert_eq(t.size, 1 << 20);
}

Test(wire, limits_and_garbage)
{
	static struct wbuf b;
	const char *keys[1];
	char longkey[300];
	struct wire_items items = {.n = 1, .keys = keys};
	mmc_KeyBatch req = mmc_KeyBatch_init_zero;
	struct wire_key_batch kb;
	uint64_t id;
	uint32_t body;
	const uint8_t *data;
	size_t dlen;
	static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x99};

	memset(longkey, 'x', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	keys[0] = longkey;
	wire_key_batch_init(&kb, &req, &items);
	cr_assert_eq(wire_encode(&b, 1, WB_GET, NULL, &kb.hand), MMC_INVALID_PARAM,
	             "a key over 255 bytes cannot be sent");
	longkey[255] = '\0';
	cr_assert_eq(wire_encode(&b, 1, WB_GET, NULL, &kb.hand), 0, "a key of 255 bytes can");
	cr_assert_neq(wire_split(garbage, sizeof(garbage), &id, &body, &data, &dlen), 0);
	cr_assert_neq(wire_split(garbage, 0, &id, &body, &data, &dlen), 0, "an empty frame has no body");
	cr_assert_null(mmc__frame__unpack(NULL, sizeof(garbage), garbage));
}

Test(wire, extent_request_grant_and_put_batch)
{
	mmc_ExtentRequest req = mmc_ExtentRequest_init_zero;
	Mmc__Frame *f, out = MMC__FRAME__INIT;
	Mmc__ExtentGrant g = MMC__EXTENT_GRANT__INIT;
	Mmc__Extent e[2] = {MMC__EXTENT__INIT, MMC__EXTENT__INIT}, *pe[2] = {&e[0], &e[1]};
	struct extent_group grp = {.cls = {.replicas = 2, .lanes = 1}, .n = 2};
	const char *keys[] = {"a", "bb"};
	const size_t index[] = {1, 0};
	const uint64_t sizes[] = {10, 20000};
	const struct wire_checksum sums[] = {{0, 0}, {MMC_WIRE_CHECKSUM_CRC32C, 0xdeadbeef}};
	const uint8_t lane[] = {0, 0};
	struct xfer_key xk[2] = {0};
	struct extent_put ep = {2, index, keys, sizes, sums, xk, lane, &grp, 0}; /* plain arrays */
	struct wire_hand hand;
	mmc_ExtentGrant back = mmc_ExtentGrant_init_zero;
	uint32_t body;
	const uint8_t *data;
	size_t dlen;
	pb_istream_t s;

	req.bytes = 16u << 20;
	req.min_bytes = 4096;
	req.replica_num = 2;
	req.preferred_count = 1;
	req.preferred[0] = 3;
	req.flags = MMC_WIRE_FLAG_SPREAD;
	req.lanes = 4;
	f = client_to_server(5, WB_EXTENT_REQUEST, mmc_ExtentRequest_fields, &req);
	cr_assert_eq(f->extent_request->bytes, 16u << 20);
	cr_assert_eq(f->extent_request->n_preferred, 1);
	cr_assert_eq(f->extent_request->preferred[0], 3);
	cr_assert_eq(f->extent_request->lanes, 4);
	mmc__frame__free_unpacked(f, NULL);

	for (int i = 0; i < 2; i++) {
		e[i].id = 100 + (uint64_t)i;
		e[i].rank = 7 + (uint32_t)i;
		e[i].incarnation = 1ull << 40;
		e[i].media = MMC_MEDIA_DRAM;
		e[i].offset = 1ull << 33;
		e[i].size = 16u << 20;
	}
	g.n_extents = 2;
	g.extents = pe;
	g.idle_ms = 60000;
	out.id = 5;
	out.body_case = MMC__FRAME__BODY_EXTENT_GRANT;
	out.extent_grant = &g;
	server_to_client(&out, &body, &data, &dlen);
	cr_assert_eq(body, WB_EXTENT_GRANT);
	s = pb_istream_from_buffer(data, dlen);
	cr_assert(pb_decode(&s, mmc_ExtentGrant_fields, &back));
	cr_assert_eq(back.extents_count, 2);
	cr_assert_eq(back.extents[1].rank, 8);
	cr_assert_eq(back.extents[1].offset, 1ull << 33);
	cr_assert_eq(back.idle_ms, 60000);

	memcpy(grp.ext, back.extents, 2 * sizeof(grp.ext[0]));
	for (int k = 0; k < 2; k++) {
		xk[k].ntargets = 2;
		for (int r = 0; r < 2; r++)
			xk[k].targets[r].offset = grp.ext[r].offset + 4096 * (uint64_t)k;
	}
	extent_put_hand(&hand, &ep);
	f = client_to_server(6, WB_PUT, NULL, &hand);
	cr_assert_eq(f->put->n_items, 2);
	cr_assert_str_eq(f->put->items[0]->key, "bb", "items follow index");
	cr_assert_eq(f->put->items[0]->size, 20000);
	cr_assert_eq(f->put->items[0]->checksum, 0xdeadbeef);
	cr_assert_eq(f->put->items[0]->n_places, 2);
	cr_assert_eq(f->put->items[0]->places[1]->extent, 101);
	cr_assert_eq(f->put->items[0]->places[1]->incarnation, 1ull << 40);
	cr_assert_eq(f->put->items[0]->places[1]->offset, (1ull << 33) + 4096);
	cr_assert_eq(f->put->items[1]->places[0]->offset, 1ull << 33);
	mmc__frame__free_unpacked(f, NULL);
}

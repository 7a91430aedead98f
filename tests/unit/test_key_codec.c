/*
 * metaserver/rpc/key_codec.c against protobuf-c: the hand encoder writes the bytes protobuf-c packs for the same
 * KeyBatchReply, the hand decoder reads every KeyBatch request as protobuf-c does, and leaves to protobuf-c every
 * frame of another shape.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "key_codec.h"
#include "key_frames.h"
#include "mmc.pb-c.h"
#include "rand_fields.h"

static unsigned seed = 1;

static uint64_t field(int bits)
{
	return rand_field(&seed, bits);
}

static void random_result(struct key_result *r)
{
	memset(r, 0, sizeof(*r));
	r->result = (int32_t)(field(32) - (rand_r(&seed) % 2 ? field(31) : 0));
	r->size = field(64);
	r->lease_ms = field(64);
	r->token = field(64);
	r->checksum_type = (uint32_t)field(32);
	r->checksum = (uint32_t)field(32);
	r->nblobs = (uint32_t)(rand_r(&seed) % (MMC_WIRE_REPLICAS + 1));
	for (uint32_t b = 0; b < r->nblobs; b++) {
		r->blobs[b].rank = (uint32_t)field(32);
		r->blobs[b].media = (uint32_t)field(2);
		r->blobs[b].state = (uint32_t)field(3);
		r->blobs[b].incarnation = field(64);
		r->blobs[b].offset = field(64);
	}
}

/* protobuf-c's bytes for Frame{id, KeyBatchReply{result, r[0..n)}}. */
static size_t pack_reference(uint8_t *out, uint64_t id, int32_t result, const struct key_result *r, size_t n)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__KeyBatchReply rep = MMC__KEY_BATCH_REPLY__INIT;
	Mmc__KeyResult res[16], *items[16];
	Mmc__Blob blobs[16][MMC_WIRE_REPLICAS], *pb[16][MMC_WIRE_REPLICAS];

	for (size_t i = 0; i < n; i++) {
		mmc__key_result__init(&res[i]);
		res[i].result = r[i].result;
		res[i].size = r[i].size;
		res[i].lease_ms = r[i].lease_ms;
		res[i].token = r[i].token;
		res[i].checksum_type = r[i].checksum_type;
		res[i].checksum = r[i].checksum;
		res[i].n_blobs = r[i].nblobs;
		res[i].blobs = pb[i];
		for (uint32_t b = 0; b < r[i].nblobs; b++) {
			mmc__blob__init(&blobs[i][b]);
			blobs[i][b].rank = r[i].blobs[b].rank;
			blobs[i][b].incarnation = r[i].blobs[b].incarnation;
			blobs[i][b].media = r[i].blobs[b].media;
			blobs[i][b].offset = r[i].blobs[b].offset;
			blobs[i][b].state = r[i].blobs[b].state;
			pb[i][b] = &blobs[i][b];
		}
		items[i] = &res[i];
	}
	rep.result = result;
	rep.n_items = result ? 0 : n;
	rep.items = items;
	f.id = id;
	f.body_case = MMC__FRAME__BODY_KEY_REPLY;
	f.key_reply = &rep;
	return mmc__frame__pack(&f, out);
}

Test(key_codec, replies_are_the_bytes_protobuf_c_packs)
{
	static uint8_t mine[16 * KEY_RESULT_MAX + 32], ref[sizeof(mine)];

	for (int round = 0; round < 2000; round++) {
		struct key_result r[16];
		size_t n = (size_t)(rand_r(&seed) % 17), len;
		uint64_t id = field(64);
		int32_t result = rand_r(&seed) % 5 ? 0 : -(int32_t)field(16);
		uint8_t items[16 * KEY_RESULT_MAX], *end = items;

		for (size_t i = 0; i < n; i++) {
			random_result(&r[i]);
			if (rand_r(&seed) % 3 == 0) { /* a code alone, as most lookups, removes and commits answer */
				int32_t code = r[i].result;

				memset(&r[i], 0, sizeof(r[i]));
				r[i].result = rand_r(&seed) % 2 ? code : (int32_t)(rand_r(&seed) % 3) - 1;
				end = key_result_code_put(end, r[i].result);
			} else {
				end = key_result_put(end, &r[i]);
			}
			cr_assert_leq(end - items, (ptrdiff_t)((i + 1) * KEY_RESULT_MAX));
		}
		len = key_reply_head(mine, id, result, result ? 0 : (size_t)(end - items));
		if (!result) {
			memcpy(mine + len, items, (size_t)(end - items));
			len += (size_t)(end - items);
		}
		cr_assert_eq(len, pack_reference(ref, id, result, r, n), "round %d: length", round);
		cr_assert_arr_eq(mine, ref, len, "round %d: bytes", round);
	}
}

/* A random KeyBatch request, packed by protobuf-c, with the keys' storage in keys. */
static size_t pack_request(uint8_t *out, Mmc__Frame__BodyCase body, char keys[][80], size_t n, int32_t *pref, size_t np)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;
	Mmc__KeyItem it[32], *items[32];

	for (size_t i = 0; i < n; i++) {
		size_t klen = (size_t)(rand_r(&seed) % 79);

		for (size_t c = 0; c < klen; c++)
			keys[i][c] = (char)(1 + rand_r(&seed) % 255);
		keys[i][klen] = '\0';
		mmc__key_item__init(&it[i]);
		it[i].key = keys[i];
		it[i].size = field(64);
		it[i].value = (int32_t)(field(32) - field(31));
		it[i].token = field(64);
		it[i].checksum_type = (uint32_t)field(32);
		it[i].checksum = (uint32_t)field(32);
		items[i] = &it[i];
	}
	for (size_t i = 0; i < np; i++)
		pref[i] = (int32_t)(field(32) - field(31));
	kb.n_items = n;
	kb.items = items;
	kb.replica_num = (uint32_t)field(32);
	kb.n_preferred = np;
	kb.preferred = pref;
	kb.flags = (uint32_t)field(32);
	kb.media = (uint32_t)field(32);
	kb.lease_ttl_ms = field(64);
	f.id = field(64);
	f.body_case = body;
	f.alloc = &kb; /* every KeyBatch body shares the union */
	return mmc__frame__pack(&f, out);
}

Test(key_codec, requests_decode_as_protobuf_c_decodes_them)
{
	static uint8_t buf[32 * 120 + 512];
	struct arena a;

	arena_init(&a);
	for (int round = 0; round < 2000; round++) {
		char keys[32][80];
		int32_t pref[8];
		Mmc__Frame__BodyCase body = (Mmc__Frame__BodyCase)(MMC__FRAME__BODY_ALLOC + rand_r(&seed) % 13);
		size_t len =
		    pack_request(buf, body, keys, (size_t)(rand_r(&seed) % 33), pref, (size_t)(rand_r(&seed) % 9));
		Mmc__Frame *mine = key_frame_decode(&a, buf, len), *ref = mmc__frame__unpack(NULL, len, buf);

		cr_assert_not_null(ref);
		cr_assert_not_null(mine, "round %d: a KeyBatch request left to protobuf-c", round);
		cr_assert_null(key_frames_differ(mine, ref), "round %d: %s differs", round,
		               key_frames_differ(mine, ref));
		mmc__frame__free_unpacked(ref, NULL);
		arena_reset(&a);
	}
	arena_fini(&a);
}

/* A random PutBatch request of n items (up to 32, each with up to MMC_WIRE_REPLICAS places), packed by protobuf-c. */
static size_t pack_put(uint8_t *out, char keys[][80], size_t n)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__PutBatch pb = MMC__PUT_BATCH__INIT;
	Mmc__PutItem it[32], *items[32];
	Mmc__PutPlace pl[32][MMC_WIRE_REPLICAS], *pp[32][MMC_WIRE_REPLICAS];

	for (size_t i = 0; i < n; i++) {
		size_t klen = (size_t)(rand_r(&seed) % 79);

		for (size_t c = 0; c < klen; c++)
			keys[i][c] = (char)(1 + rand_r(&seed) % 255);
		keys[i][klen] = '\0';
		mmc__put_item__init(&it[i]);
		it[i].key = keys[i];
		it[i].size = field(64);
		it[i].checksum_type = (uint32_t)field(32);
		it[i].checksum = (uint32_t)field(32);
		it[i].n_places = (size_t)(rand_r(&seed) % (MMC_WIRE_REPLICAS + 1));
		it[i].places = pp[i];
		for (size_t j = 0; j < it[i].n_places; j++) {
			mmc__put_place__init(&pl[i][j]);
			pl[i][j].extent = field(64);
			pl[i][j].rank = (uint32_t)field(32);
			pl[i][j].incarnation = field(64);
			pl[i][j].offset = field(64);
			pp[i][j] = &pl[i][j];
		}
		items[i] = &it[i];
	}
	pb.n_items = n;
	pb.items = items;
	f.id = field(64);
	f.body_case = MMC__FRAME__BODY_PUT;
	f.put = &pb;
	return mmc__frame__pack(&f, out);
}

Test(key_codec, puts_decode_as_protobuf_c_decodes_them)
{
	static uint8_t buf[32 * (100 + MMC_WIRE_REPLICAS * 40) + 64];
	struct arena a;

	arena_init(&a);
	for (int round = 0; round < 2000; round++) {
		char keys[32][80];
		size_t len = pack_put(buf, keys, (size_t)(rand_r(&seed) % 33));
		Mmc__Frame *mine = key_frame_decode(&a, buf, len), *ref = mmc__frame__unpack(NULL, len, buf);

		cr_assert_not_null(ref);
		cr_assert_not_null(mine, "round %d: a PutBatch left to protobuf-c", round);
		cr_assert_eq(mine->body_case, MMC__FRAME__BODY_PUT);
		cr_assert_null(key_frames_differ(mine, ref), "round %d: %s differs", round,
		               key_frames_differ(mine, ref));
		mmc__frame__free_unpacked(ref, NULL);
		arena_reset(&a);
	}
	arena_fini(&a);
}

Test(key_codec, puts_of_another_shape_are_left_to_protobuf_c)
{
	/* Frame{id 1, put = PutBatch{items = PutItem{field 9 = 1}}}: a PutItem field this version does not have */
	static const uint8_t unknown_item_field[] = {0x08, 0x01, 0x9a, 0x02, 0x04, 0x0a, 0x02, 0x48, 0x01};
	static uint8_t buf[4096];
	char keys[4][80];
	struct arena a;
	size_t len;

	arena_init(&a);
	len = pack_put(buf, keys, 4);
	cr_assert_null(key_frame_decode(&a, buf, len - 1), "a truncated put");
	buf[len] = 0x98; /* field 99 of Frame, a varint: unknown to this version */
	buf[len + 1] = 0x06;
	buf[len + 2] = 0x01;
	cr_assert_null(key_frame_decode(&a, buf, len + 3), "a field the decoder does not know");
	cr_assert_null(key_frame_decode(&a, unknown_item_field, sizeof(unknown_item_field)));
	cr_assert_not_null(mmc__frame__unpack(&a.pbc, sizeof(unknown_item_field), unknown_item_field),
	                   "protobuf-c takes it (and skips the field)");
	arena_fini(&a);
}

/* Bytes a client got wrong or made up: whatever the hand decoder takes, protobuf-c takes and reads the same way (but
 * a key a flip put a NUL into: by hand "", by protobuf-c cut, and the server refuses the frame before protobuf-c). */
Test(key_codec, damaged_puts_are_read_as_protobuf_c_reads_them_or_left_to_it)
{
	static uint8_t buf[32 * (100 + MMC_WIRE_REPLICAS * 40) + 64];
	struct arena a;
	int taken = 0;

	arena_init(&a);
	for (int round = 0; round < 5000; round++) {
		char keys[32][80];
		size_t len = pack_put(buf, keys, (size_t)(rand_r(&seed) % 5)), flips = 1 + (size_t)(rand_r(&seed) % 3);
		struct key_frame_scan scan;
		Mmc__Frame *mine, *ref;

		for (size_t i = 0; i < flips && len; i++)
			buf[(size_t)rand_r(&seed) % len] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		if (rand_r(&seed) % 4 == 0 && len)
			len = (size_t)rand_r(&seed) % len;
		mine = key_frame_decode(&a, buf, len);
		ref = mmc__frame__unpack(NULL, len, buf);
		key_frame_scan(buf, len, &scan);
		if (mine && !scan.nul_key) {
			cr_assert_not_null(ref, "round %d: taken by hand, refused by protobuf-c", round);
			cr_assert_null(key_frames_differ(mine, ref), "round %d: %s differs", round,
			               key_frames_differ(mine, ref));
			taken++;
		}
		if (ref)
			mmc__frame__free_unpacked(ref, NULL);
		arena_reset(&a);
	}
	cr_assert_gt(taken, 100, "some damaged frames still decode");
	arena_fini(&a);
}

/* An item naming more places than a put may: protobuf-c decodes it, and rpc_put refuses it. */
Test(key_codec, a_put_item_of_too_many_places_is_left_to_protobuf_c)
{
	static uint8_t buf[512];
	Mmc__Frame fr = MMC__FRAME__INIT, *f;
	Mmc__PutBatch pb = MMC__PUT_BATCH__INIT;
	Mmc__PutItem it = MMC__PUT_ITEM__INIT, *items[1] = {&it};
	Mmc__PutPlace pl[MMC_WIRE_REPLICAS + 1], *pp[MMC_WIRE_REPLICAS + 1];
	struct arena a;
	size_t len;

	for (int j = 0; j <= MMC_WIRE_REPLICAS; j++) {
		mmc__put_place__init(&pl[j]);
		pl[j].rank = (uint32_t)j;
		pp[j] = &pl[j];
	}
	it.key = "k";
	it.n_places = MMC_WIRE_REPLICAS + 1;
	it.places = pp;
	pb.n_items = 1;
	pb.items = items;
	fr.body_case = MMC__FRAME__BODY_PUT;
	fr.put = &pb;
	len = mmc__frame__pack(&fr, buf);
	arena_init(&a);
	cr_assert_null(key_frame_decode(&a, buf, len));
	f = mmc__frame__unpack(&a.pbc, len, buf);
	cr_assert_not_null(f);
	cr_assert_eq(f->put->items[0]->n_places, MMC_WIRE_REPLICAS + 1);
	arena_fini(&a);
}

/* Two odd spellings (tests/fuzz/fuzz_codec.c found both): a 32-bit field given a wider varint reads as protobuf-c
 * reads it, its low 32 bits; a length or tag of more than five bytes, which protobuf-c refuses, is not taken by hand.
 */
Test(key_codec, odd_varints_are_read_as_protobuf_c_reads_them)
{
	/* Frame{id 5, exist = KeyBatch{replica_num = 2^32 + 3, items = KeyItem{key "k"}}} */
	static const uint8_t wide[] = {0x08, 0x05, 0xca, 0x01, 0x0b, 0x10, 0x83, 0x80,
	                               0x80, 0x80, 0x10, 0x0a, 0x03, 0x0a, 0x01, 0x6b};
	/* Frame{malloc = KeyBatch{}} with the body's length 0 in eight bytes */
	static const uint8_t long_len[] = {0xea, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
	/* Frame{id 5} with the tag of id in six bytes */
	static const uint8_t long_tag[] = {0x88, 0x80, 0x80, 0x80, 0x80, 0x00, 0x05};
	struct arena a;
	Mmc__Frame *mine, *ref;

	arena_init(&a);
	mine = key_frame_decode(&a, wide, sizeof(wide));
	ref = mmc__frame__unpack(NULL, sizeof(wide), wide);
	cr_assert_not_null(mine);
	cr_assert_not_null(ref);
	cr_assert_eq(mine->exist->replica_num, 3);
	cr_assert_null(key_frames_differ(mine, ref));
	mmc__frame__free_unpacked(ref, NULL);
	cr_assert_null(mmc__frame__unpack(NULL, sizeof(long_len), long_len));
	cr_assert_null(key_frame_decode(&a, long_len, sizeof(long_len)));
	cr_assert_null(mmc__frame__unpack(NULL, sizeof(long_tag), long_tag));
	cr_assert_null(key_frame_decode(&a, long_tag, sizeof(long_tag)));
	arena_fini(&a);
}

Test(key_codec, other_shapes_are_left_to_protobuf_c)
{
	static uint8_t buf[4096];
	static const uint8_t unpacked_pref[] = {0x08, 0x07, 0xca, 0x01, 0x04, 0x18, 0x03, 0x18, 0x05}; /* exist */
	Mmc__Frame hello = MMC__FRAME__INIT, *f;
	Mmc__Hello h = MMC__HELLO__INIT;
	char keys[4][80];
	int32_t pref[2];
	struct arena a;
	size_t len;

	arena_init(&a);
	hello.body_case = MMC__FRAME__BODY_HELLO;
	hello.hello = &h;
	len = mmc__frame__pack(&hello, buf);
	cr_assert_null(key_frame_decode(&a, buf, len), "a Hello");
	len = pack_request(buf, MMC__FRAME__BODY_GET, keys, 4, pref, 2);
	cr_assert_null(key_frame_decode(&a, buf, len - 1), "a truncated frame");
	buf[len] = 0x98; /* field 99, a varint: unknown to this version */
	buf[len + 1] = 0x06;
	buf[len + 2] = 0x01;
	cr_assert_null(key_frame_decode(&a, buf, len + 3), "a field the decoder does not know");
	f = key_frame_decode(&a, unpacked_pref, sizeof(unpacked_pref));
	cr_assert_not_null(f, "preferred sent unpacked, one varint per entry");
	cr_assert_eq(f->body_case, MMC__FRAME__BODY_EXIST);
	cr_assert_eq(f->id, 7);
	cr_assert_eq(f->exist->n_preferred, 2);
	cr_assert_eq(f->exist->preferred[0], -2);
	cr_assert_eq(f->exist->preferred[1], -3);
	arena_fini(&a);
}

/* A key holding a NUL would name its prefix as a C string: read by hand as "" (every operation refuses it), and
 * found by key_frame_scan in a frame left to protobuf-c. */
Test(key_codec, a_key_holding_a_nul_is_read_as_no_key)
{
	static uint8_t buf[4096];
	Mmc__Frame f = MMC__FRAME__INIT, *mine;
	Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;
	Mmc__KeyItem a = MMC__KEY_ITEM__INIT, b = MMC__KEY_ITEM__INIT, *items[2] = {&a, &b};
	struct key_frame_scan scan;
	struct arena ar;
	size_t len;
	uint8_t *x;

	arena_init(&ar);
	a.key = "abXcd";
	b.key = "ok";
	kb.items = items;
	kb.n_items = 2;
	f.id = 5;
	f.body_case = MMC__FRAME__BODY_REMOVE;
	f.remove = &kb;
	len = mmc__frame__pack(&f, buf);
	key_frame_scan(buf, len, &scan);
	cr_assert_not(scan.nul_key);
	cr_assert_eq(scan.items, 2);
	x = memchr(buf, 'X', len);
	*x = '\0';
	mine = key_frame_decode(&ar, buf, len);
	cr_assert_not_null(mine);
	cr_assert_str_eq(mine->remove->items[0]->key, "", "not \"ab\"");
	cr_assert_str_eq(mine->remove->items[1]->key, "ok");
	key_frame_scan(buf, len, &scan);
	cr_assert(scan.nul_key);
	cr_assert_eq(scan.id, 5);
	buf[len] = 0x98; /* field 99, a varint: unknown to this version, so the frame goes to protobuf-c */
	buf[len + 1] = 0x06;
	buf[len + 2] = 0x01;
	cr_assert_null(key_frame_decode(&ar, buf, len + 3));
	key_frame_scan(buf, len + 3, &scan);
	cr_assert(scan.nul_key, "found in a frame the hand decoder leaves to protobuf-c");
	arena_fini(&ar);
}

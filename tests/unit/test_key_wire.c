/*
 * The two hand-written ends of the key round trip against each other: what libmmc writes for a KeyBatch
 * (lib/wire.c) the meta server's hand decoder (metaserver/rpc/key_codec.c) takes whole, without leaving it to
 * protobuf-c, and reads as protobuf-c does; what the server writes for a KeyBatchReply libmmc's decoder reads back
 * field for field. Random values of every width, proto3 zeros included.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "key_codec.h"
#include "mmc.pb-c.h"
#include "rand_fields.h"
#include "mmc/mmc.h"
#include "wire.h"

static unsigned seed = 7;

static uint64_t field(int bits)
{
	return rand_field(&seed, bits);
}

#define N_MAX 32

struct request {
	char keys[N_MAX][MMC_WIRE_KEY_MAX + 1];
	const char *kp[N_MAX];
	size_t index[N_MAX];
	uint64_t sizes[N_MAX], tokens[N_MAX];
	uint32_t leases[N_MAX];
	int32_t values[N_MAX];
	struct wire_checksum sums[N_MAX];
	struct wire_items items;
	mmc_KeyBatch req;
};

static void random_request(struct request *q)
{
	size_t n = 1 + (size_t)(rand_r(&seed) % N_MAX);

	memset(q, 0, sizeof(*q));
	for (size_t i = 0; i < n; i++) {
		size_t klen = 1 + (size_t)(rand_r(&seed) % MMC_WIRE_KEY_MAX);

		for (size_t c = 0; c < klen; c++)
			q->keys[i][c] = (char)(1 + rand_r(&seed) % 255);
		q->kp[i] = q->keys[i];
		q->index[i] = n - 1 - i; /* items in reverse key order */
		q->sizes[i] = field(64);
		q->tokens[i] = field(64);
		q->leases[i] = (uint32_t)field(32);
		q->values[i] = (int32_t)(field(32) - field(31));
		q->sums[i] = (struct wire_checksum){(uint32_t)field(32), (uint32_t)field(32)};
	}
	q->items = (struct wire_items){.n = n,
	                               .keys = q->kp,
	                               .index = rand_r(&seed) % 2 ? q->index : NULL,
	                               .sizes = q->sizes,
	                               .values = q->values,
	                               .tokens = q->tokens,
	                               .leases = q->leases,
	                               .checksums = q->sums};
	q->req.replica_num = (uint32_t)field(32);
	q->req.preferred_count = (pb_size_t)(rand_r(&seed) % 9);
	for (pb_size_t i = 0; i < q->req.preferred_count; i++)
		q->req.preferred[i] = (int32_t)(field(32) - field(31));
	q->req.flags = (uint32_t)field(32);
	q->req.media = (uint32_t)field(32);
	q->req.lease_ttl_ms = field(64);
}

static void assert_request(const struct request *q, const Mmc__KeyBatch *kb)
{
	cr_assert_eq(kb->n_items, q->items.n);
	for (size_t i = 0; i < q->items.n; i++) {
		size_t k = q->items.index ? q->items.index[i] : i;

		cr_assert_str_eq(kb->items[i]->key, q->keys[k]);
		cr_assert_eq(kb->items[i]->size, q->sizes[k]);
		cr_assert_eq(kb->items[i]->value, q->values[k]);
		cr_assert_eq(kb->items[i]->token, q->tokens[k]);
		cr_assert_eq(kb->items[i]->checksum_type, q->sums[k].type);
		cr_assert_eq(kb->items[i]->checksum, q->sums[k].value);
		cr_assert_eq(kb->items[i]->lease, q->leases[k]);
	}
	cr_assert_eq(kb->replica_num, q->req.replica_num);
	cr_assert_eq(kb->n_preferred, q->req.preferred_count);
	for (size_t i = 0; i < kb->n_preferred; i++)
		cr_assert_eq(kb->preferred[i], q->req.preferred[i]);
	cr_assert_eq(kb->flags, q->req.flags);
	cr_assert_eq(kb->media, q->req.media);
	cr_assert_eq(kb->lease_ttl_ms, q->req.lease_ttl_ms);
}

Test(key_wire, the_servers_decoder_takes_what_the_client_writes)
{
	static struct request q;
	static struct wbuf b;
	struct arena a;

	arena_init(&a);
	for (int round = 0; round < 1000; round++) {
		uint32_t body = WB_ALLOC + (uint32_t)(rand_r(&seed) % 13); /* every KeyBatch body: alloc .. prefetch */
		uint64_t id = field(64);
		struct wire_key_batch kb;
		const uint8_t *frame;
		Mmc__Frame *mine, *ref;
		size_t len;

		random_request(&q);
		wire_key_batch_init(&kb, &q.req, &q.items);
		cr_assert_eq(wire_encode(&b, id, body, NULL, &kb.hand), 0);
		frame = b.data + b.start + 4;
		len = b.len - b.start - 4;
		mine = key_frame_decode(&a, frame, len);
		cr_assert_not_null(mine, "round %d: the server's hand decoder left the client's frame to protobuf-c",
		                   round);
		cr_assert_eq(mine->id, id);
		cr_assert_eq((uint32_t)mine->body_case, body);
		assert_request(&q, mine->alloc); /* every KeyBatch body shares the union */
		ref = mmc__frame__unpack(NULL, len, frame);
		cr_assert_not_null(ref);
		assert_request(&q, ref->alloc);
		mmc__frame__free_unpacked(ref, NULL);
		arena_reset(&a);
	}
	arena_fini(&a);
	wbuf_free(&b);
}

struct got {
	size_t n;
	mmc_KeyResult r[16];
};

static bool keep(void *arg, size_t i, const mmc_KeyResult *r)
{
	struct got *g = arg;

	if (i != g->n || i >= 16)
		return false;
	g->r[g->n++] = *r;
	return true;
}

Test(key_wire, the_client_reads_what_the_server_writes)
{
	static uint8_t frame[16 * KEY_RESULT_MAX + 64], items[16 * KEY_RESULT_MAX];

	for (int round = 0; round < 2000; round++) {
		struct key_result r[16];
		size_t n = (size_t)(rand_r(&seed) % 17), len, dlen;
		int32_t result = rand_r(&seed) % 5 ? 0 : -(int32_t)field(16), got_result;
		uint8_t *end = items;
		struct got g = {0};
		struct wire_results sink = {keep, &g, 0, SIZE_MAX};
		const uint8_t *data;
		uint64_t id = field(64), got_id;
		uint32_t body;

		for (size_t i = 0; i < n; i++) {
			memset(&r[i], 0, sizeof(r[i]));
			r[i].result = (int32_t)(field(32) - (rand_r(&seed) % 2 ? field(31) : 0));
			r[i].size = field(64);
			r[i].lease_ms = field(64);
			r[i].token = field(64);
			r[i].checksum_type = (uint32_t)field(32);
			r[i].checksum = (uint32_t)field(32);
			r[i].lease = (uint32_t)field(32);
			r[i].nblobs = (uint32_t)(rand_r(&seed) % (MMC_WIRE_REPLICAS + 1));
			for (uint32_t k = 0; k < r[i].nblobs; k++) {
				r[i].blobs[k].rank = (uint32_t)field(32);
				r[i].blobs[k].media = (uint32_t)field(2);
				r[i].blobs[k].state = (uint32_t)field(3);
				r[i].blobs[k].incarnation = field(64);
				r[i].blobs[k].offset = field(64);
			}
			end = key_result_put(end, &r[i]);
		}
		len = key_reply_head(frame, id, result, result ? 0 : (size_t)(end - items));
		if (!result) {
			memcpy(frame + len, items, (size_t)(end - items));
			len += (size_t)(end - items);
		}
		cr_assert_eq(wire_split(frame, len, &got_id, &body, &data, &dlen), 0);
		cr_assert_eq(got_id, id);
		cr_assert_eq(body, WB_KEY_REPLY);
		cr_assert_eq(wire_decode_key_reply(data, dlen, &sink, &got_result), 0, "round %d", round);
		cr_assert_eq(got_result, result);
		cr_assert_eq(g.n, result ? 0 : n);
		for (size_t i = 0; i < g.n; i++) {
			cr_assert_eq(g.r[i].result, r[i].result);
			cr_assert_eq(g.r[i].size, r[i].size);
			cr_assert_eq(g.r[i].lease_ms, r[i].lease_ms);
			cr_assert_eq(g.r[i].token, r[i].token);
			cr_assert_eq(g.r[i].checksum_type, r[i].checksum_type);
			cr_assert_eq(g.r[i].checksum, r[i].checksum);
			cr_assert_eq(g.r[i].lease, r[i].lease);
			cr_assert_eq(g.r[i].blobs_count, r[i].nblobs);
			for (uint32_t k = 0; k < r[i].nblobs; k++) {
				cr_assert_eq(g.r[i].blobs[k].rank, r[i].blobs[k].rank);
				cr_assert_eq(g.r[i].blobs[k].incarnation, r[i].blobs[k].incarnation);
				cr_assert_eq(g.r[i].blobs[k].media, r[i].blobs[k].media);
				cr_assert_eq(g.r[i].blobs[k].offset, r[i].blobs[k].offset);
				cr_assert_eq(g.r[i].blobs[k].state, r[i].blobs[k].state);
			}
		}
	}
}

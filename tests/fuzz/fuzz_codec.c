/*
 * libFuzzer target: the two hand-written protobuf readers of the key operations, each against protobuf-c reading
 * the same bytes. The first byte picks one; the rest is the message.
 *
 * Even: a request Frame for the meta server's hand decoder (metaserver/rpc/key_codec.c). Whatever it takes,
 * protobuf-c must take and read field for field the same way, but for a key holding a NUL, which the hand decoder
 * reads as "" where protobuf-c cuts it at the NUL (the server refuses such a frame before protobuf-c sees it); what
 * it refuses is left to protobuf-c by the server, so refusing is always allowed.
 *
 * Odd: a KeyBatchReply body for libmmc's streaming reader (lib/wire.c). Every reply protobuf-c takes, the reader must
 * take too (but one with more blobs in a result than a result holds), with the same result and items; it may take
 * more (fields of a later version, which it skips, where protobuf-c's copy of the schema may not know them).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "arena.h"
#include "key_codec.h"
#include "key_frames.h"
#include "mmc.pb-c.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *field)
{
	fprintf(stderr, "fuzz-codec: %s: %s differs\n", what, field);
	abort();
}

static void server_request(const uint8_t *p, size_t len)
{
	static struct arena a;
	static bool ready;
	struct key_frame_scan scan;
	Mmc__Frame *mine, *ref;
	const char *why;

	if (!ready) {
		arena_init(&a);
		ready = true;
	}
	mine = key_frame_decode(&a, p, len);
	key_frame_scan(p, len, &scan);
	if (mine && !scan.nul_key) {
		ref = mmc__frame__unpack(NULL, len, p);
		if (!ref)
			fail("a request the hand decoder took and protobuf-c refused", "everything");
		if ((why = key_frames_differ(mine, ref)))
			fail("a request both took", why);
		mmc__frame__free_unpacked(ref, NULL);
	}
	arena_reset(&a);
}

static const char *blobs_differ(const mmc_KeyResult *k, const Mmc__KeyResult *r)
{
	if (k->blobs_count != r->n_blobs)
		return "items.blobs";
	for (size_t j = 0; j < r->n_blobs; j++) {
		const mmc_Blob *b = &k->blobs[j];
		const Mmc__Blob *c = r->blobs[j];

		if (b->rank != c->rank || b->incarnation != c->incarnation || b->media != c->media ||
		    b->offset != c->offset || b->state != c->state)
			return "items.blobs";
	}
	return NULL;
}

/* The reader's results, each checked against protobuf-c's as it streams them. */
struct expect {
	const Mmc__KeyBatchReply *ref;
	const char *why;
};

static bool check_result(void *arg, size_t i, const mmc_KeyResult *k)
{
	struct expect *e = arg;
	const Mmc__KeyResult *r = i < e->ref->n_items ? e->ref->items[i] : NULL;

	if (e->why)
		return true;
	if (!r)
		e->why = "n_items";
	else if (k->result != r->result || k->size != r->size || k->lease_ms != r->lease_ms || k->token != r->token)
		e->why = "items.result, size, lease_ms or token";
	else if (k->checksum_type != r->checksum_type || k->checksum != r->checksum)
		e->why = "items.checksum";
	else
		e->why = blobs_differ(k, r);
	return true;
}

/* A result of more blobs than mmc_KeyResult holds: the one reply the reader refuses (as nanopb did before it). */
static bool too_many_blobs(const Mmc__KeyBatchReply *ref)
{
	for (size_t i = 0; i < ref->n_items; i++)
		if (ref->items[i]->n_blobs > sizeof(((mmc_KeyResult *)0)->blobs) / sizeof(mmc_Blob))
			return true;
	return false;
}

static void client_reply(const uint8_t *p, size_t len)
{
	Mmc__KeyBatchReply *ref = mmc__key_batch_reply__unpack(NULL, len, p);
	struct expect e = {ref, NULL};
	struct wire_results sink = {check_result, &e, 0, SIZE_MAX};
	int32_t result;
	int rc;

	if (!ref)
		return; /* the reader may take more: a later version's fields, which it skips */
	rc = wire_decode_key_reply(p, len, &sink, &result);
	if (rc && !too_many_blobs(ref))
		fail("a reply protobuf-c took and the reader refused", "everything");
	if (!rc && e.why)
		fail("a reply both took", e.why);
	if (!rc && (sink.count != ref->n_items || result != ref->result))
		fail("a reply both took", "n_items or result");
	mmc__key_batch_reply__free_unpacked(ref, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] % 2 == 0)
		server_request(data + 1, size - 1);
	else
		client_reply(data + 1, size - 1);
	return 0;
}

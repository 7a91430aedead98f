/*
 * The key operations' wire format by hand: the request frames that carry a KeyBatch or a PutBatch are decoded, and
 * every KeyBatchReply encoded, without protobuf-c's descriptor walk, which took a third of the loop's time on a batch
 * of lookups (unpack, get_packed_size and pack, each field looked up by its descriptor) and an eighth on a batch of
 * puts. The bytes are protobuf's:
 * what protobuf-c decodes from a request, what it would encode for a reply (tests/unit/test_key_codec.c compares
 * the two). Loop thread only.
 */
#ifndef MMC_KEY_CODEC_H
#define MMC_KEY_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "key_result.h"
#include "mmc.pb-c.h"

/*
 * Decodes a frame of len bytes at p whose body is a KeyBatch (alloc .. prefetch) or a PutBatch (put) into the
 * arena, as mmc__frame__unpack would: strings copied and NUL-terminated, repeated fields as arrays. NULL for any other
 * frame, one with a field this decoder does not expect, or bytes it cannot read: protobuf-c decodes those (and refuses
 * what it refuses).
 */
Mmc__Frame *key_frame_decode(struct arena *a, const uint8_t *p, size_t len);

/*
 * What a frame key_frame_decode leaves to protobuf-c must be refused before protobuf-c reads it, found without
 * decoding it (fields of any kind skipped): its id; the items of its KeyBatch or PutBatch body, counted up to
 * MMC_WIRE_KEYS_MAX + 1 (protobuf-c would allocate every one, about 50 bytes of heap per byte of an empty item,
 * before the dispatcher could refuse a batch that large); whether one of those items' keys holds a NUL (protobuf-c
 * would hand it on cut at the NUL, as another key). items 0 and nul_key false for another frame or bytes that do not
 * parse.
 */
struct key_frame_scan {
	uint64_t id;
	size_t items;
	bool nul_key;
};
void key_frame_scan(const uint8_t *p, size_t len, struct key_frame_scan *out);

/* The most bytes one KeyResult takes, with its tag and length (MMC_WIRE_REPLICAS blobs). */
#define KEY_RESULT_MAX 400

/*
 * Appends r as a KeyResult (field 2 of KeyBatchReply: tag, length, fields; zero fields left out as protobuf-c does)
 * at p, which has KEY_RESULT_MAX bytes of room. Returns the end of what it wrote.
 */
uint8_t *key_result_put(uint8_t *p, const struct key_result *r);

/* Appends KeyResult{result} alone at p (room for KEY_RESULT_MAX bytes), the same bytes key_result_put writes for
 * a result with no other field: the answer of most lookups, removes and commits, without filling a key_result. */
uint8_t *key_result_code_put(uint8_t *p, int32_t result);

/* The header of Frame{id, key_reply = KeyBatchReply{result, items of items_len bytes}} into head (32 bytes of
 * room); returns its length. The items follow it, then nothing. */
size_t key_reply_head(uint8_t *head, uint64_t id, int32_t result, size_t items_len);

#endif

/*
 * Client side of the wire protocol. A frame is a 4-byte little-endian length and a Frame message {1: id, N: body};
 * the client writes and reads that envelope itself. The key batches, where the per-key cost is (KeyBatch and
 * PutBatch requests, KeyBatchReply answers), are written and read by hand, streaming from and into the caller's
 * arrays (no heap per call); the other bodies go through nanopb.
 */
#ifndef MMC_WIRE_H
#define MMC_WIRE_H

#include <pb_decode.h>
#include <pb_encode.h>
#include <stddef.h>
#include <stdint.h>

#include "mmc.pb.h"
#include "wire_limits.h"

/* Frame body field numbers (lib/proto/mmc.proto). */
enum wire_body {
	WB_HELLO = 10,
	WB_REGISTER = 11,
	WB_UNREGISTER = 12,
	WB_PING = 13,
	WB_SERVICE = 14,
	WB_ALLOC = 20,
	WB_COMMIT = 21,
	WB_GET = 22,
	WB_RELEASE = 23,
	WB_REMOVE = 24,
	WB_EXIST = 25,
	WB_QUERY = 26,
	WB_ADD_LEASE = 27,
	WB_REMOVE_LEASE = 28,
	WB_MALLOC = 29,
	WB_WRITE_FINISH = 30,
	WB_EVICT = 31,
	WB_PREFETCH = 32,
	WB_REMOVE_MATCHING = 33,
	WB_AUTH_CHALLENGE = 40,
	WB_AUTH_PROOF = 41,
	WB_REPLY = 60,
	WB_KEY_REPLY = 61,
	WB_HELLO_REPLY = 62,
	WB_SERVICE_INFO = 63,
	WB_TASK = 70,
};

/* A growable byte buffer for one encoded frame: data[start, len) (start is 0 but for wire_encode_body's frames). */
struct wbuf {
	uint8_t *data;
	size_t len, cap;
	size_t start;
};

void wbuf_free(struct wbuf *b);

/* A body written by hand, not by nanopb: len() gives its bytes (SIZE_MAX: it cannot be sent), put() writes exactly
 * that many at p and returns p + len. Passed as msg with fields NULL. */
struct wire_hand {
	size_t (*len)(const void *arg);
	uint8_t *(*put)(uint8_t *p, const void *arg);
	const void *arg;
};

/*
 * Encodes the body (fields NULL: msg is a struct wire_hand) into b, ahead of the frame's head, which
 * wire_frame_head writes once the frame's id is known: a caller encodes before it takes the connection's lock, and
 * numbers the frame under it. Returns 0, MMC_INVALID_PARAM (a message that cannot be sent, or a frame over
 * MMC_FRAME_MAX) or MMC_MALLOC_FAILED.
 */
int wire_encode_body(struct wbuf *b, uint32_t body, const pb_msgdesc_t *fields, const void *msg);
/* Puts the head (length prefix, id) in front of the body wire_encode_body left in b: data[start, len) is the frame. */
void wire_frame_head(struct wbuf *b, uint64_t id);
/* Both: {id, body} as a complete frame. Returns as wire_encode_body. */
int wire_encode(struct wbuf *b, uint64_t id, uint32_t body, const pb_msgdesc_t *fields, const void *msg);

/* Splits a frame (without its length prefix) into id, body field and body bytes. Returns 0 or MMC_INVALID_PARAM. */
int wire_split(const uint8_t *frame, size_t len, uint64_t *id, uint32_t *body, const uint8_t **data, size_t *dlen);

/* An object's checksum as it travels: type MMC_WIRE_CHECKSUM_*, NONE when there is none. */
struct wire_checksum {
	uint32_t type;
	uint32_t value;
};

/* Source of the KeyBatch items: item i of n. */
struct wire_items {
	size_t n;
	const char *const *keys;               /* n keys */
	const size_t *index;                   /* item i is key index[i] (NULL: identity) */
	const uint64_t *sizes;                 /* per key, or NULL */
	const int32_t *values;                 /* per key, or NULL */
	const uint64_t *tokens;                /* per key, or NULL */
	const uint32_t *leases;                /* per key, or NULL: release's KeyItem.lease */
	const struct wire_checksum *checksums; /* per key, or NULL */
	size_t stride;                         /* of the per-key fields above: PER_KEY (0: plain arrays) */
};

/* A KeyBatch: req's fields but its items (replica_num, preferred, flags, media, lease_ttl_ms), and the items of
 * items. Send it as fields NULL, msg &kb->hand; req and items must outlive the encode. */
struct wire_key_batch {
	struct wire_hand hand;
	const mmc_KeyBatch *req;
	const struct wire_items *items;
};

void wire_key_batch_init(struct wire_key_batch *kb, const mmc_KeyBatch *req, const struct wire_items *items);

/* Sink of KeyBatchReply items: called once per KeyResult, in order. Return false to fail the decode. */
typedef bool (*wire_result_fn)(void *arg, size_t i, const mmc_KeyResult *r);

struct wire_results {
	wire_result_fn fn;
	void *arg;
	size_t count; /* results seen */
	size_t max;   /* results the caller has room for (SIZE_MAX: no bound); one more is a malformed body */
};

/* Decodes a KeyBatchReply body, streaming items into sink; *result gets the whole-call result. Returns 0, or
 * MMC_INVALID_PARAM for a malformed body (one with more results than sink->max, or more blobs in a result than
 * mmc_KeyResult holds) or a sink that returned false. Items past sink->max never reach sink->fn. */
int wire_decode_key_reply(const uint8_t *data, size_t len, struct wire_results *sink, int32_t *result);

#endif

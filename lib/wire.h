/*
 * Client side of the wire protocol (nanopb). A frame is a 4-byte little-endian length and a Frame message
 * {1: id, N: body}; the client writes and reads that envelope itself and lets nanopb do the body, so per-key
 * lists stream from and into the caller's arrays through callbacks (no heap per call).
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

/* A growable byte buffer for one encoded frame. */
struct wbuf {
	uint8_t *data;
	size_t len, cap;
};

void wbuf_free(struct wbuf *b);

/* Encodes {id, body} as a complete frame (length prefix included) into b. Returns 0 or MMC_*. */
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
	const struct wire_checksum *checksums; /* per key, or NULL */
	size_t stride;                         /* of the per-key fields above: PER_KEY (0: plain arrays) */
};

/* Sets req->items to stream from it (it must outlive the encode). */
void wire_items_bind(mmc_KeyBatch *req, const struct wire_items *it);

/* Sink of KeyBatchReply items: called once per KeyResult, in order. Return false to fail the decode. */
typedef bool (*wire_result_fn)(void *arg, size_t i, const mmc_KeyResult *r);

struct wire_results {
	wire_result_fn fn;
	void *arg;
	size_t count; /* results seen */
};

/* Decodes a KeyBatchReply body, streaming items into sink; *result gets the whole-call result. */
int wire_decode_key_reply(const uint8_t *data, size_t len, struct wire_results *sink, int32_t *result);

#endif

/*
 * Replies that carry one KeyResult per key, encoded as they are made (key_codec.h): by the key operations as they
 * go through a batch, and from results kept outside the request (key_result.h) for the replies that come later.
 * Loop thread only.
 */
#ifndef MMC_KEY_REPLY_H
#define MMC_KEY_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "key_result.h"

struct conn;

/* A KeyBatchReply being encoded, its items in request order. */
struct key_reply {
	uint8_t *items, *end; /* [items, end): the encoded items so far, in the arena */
	size_t n, cap;        /* items so far, and at most */
};

/* Room in the arena for n items. 0 or MMC_MALLOC_FAILED. */
int key_reply_begin(struct key_reply *r, struct arena *a, size_t n);
/* Appends the next item. */
void key_reply_add(struct key_reply *r, const struct key_result *kr);
/* Appends the next item, a result code alone. */
void key_reply_add_code(struct key_reply *r, int32_t result);
/* Sends Frame{id, KeyBatchReply{result, the items}} (result != 0: without items; nothing when id is 0). */
void key_reply_send(struct conn *c, uint64_t id, const struct key_reply *r, int32_t result, bool durable);
/* Sends KeyBatchReply{results} for request id (nothing when id is 0). Uses and resets nothing of the arena's
 * previous content; the caller resets the arena when it is outside request handling. */
void key_results_send(struct conn *c, uint64_t id, const struct key_result *r, size_t n, bool durable);

#endif

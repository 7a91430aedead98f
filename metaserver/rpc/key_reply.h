/* Replies that carry one KeyResult per key, from results kept outside the request (key_result.h). Loop thread only. */
#ifndef MMC_KEY_REPLY_H
#define MMC_KEY_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "key_result.h"
#include "mmc.pb-c.h"

struct conn;

/* Writes r's size, checksum and blobs into out (blob arrays from a). 0 or MMC_MALLOC_FAILED. */
int key_result_encode(struct arena *a, const struct key_result *r, Mmc__KeyResult *out);
/* Sends KeyBatchReply{results} for request id (nothing when id is 0). Uses and resets nothing of the arena's
 * previous content; the caller resets the arena when it is outside request handling. */
void key_results_send(struct conn *c, uint64_t id, const struct key_result *r, size_t n, bool durable);

#endif

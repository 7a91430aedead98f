/*
 * The durable record of a block, the bytes the store keeps for it: its previous key and LRU stamp, and every
 * location with its id, status, type, create time, storage name and specs. Written (or deleted) by whatever
 * changes a block, in the same loop turn; read back once, at start-up (state_load.c).
 */
#ifndef MMC_KVCM_BLOCK_RECORD_H
#define MMC_KVCM_BLOCK_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct kvcm;

/* Writes b's record. 0, or MMC_ERROR (logged) when it could not be written: the block in memory is not durable. */
int block_record_put(struct kvcm *k, const struct instance *inst, const struct block *b);
/* Deletes the record of inst's block key. 0 or MMC_ERROR. */
int block_record_del(struct kvcm *k, const struct instance *inst, int64_t key);
/*
 * Drops l from b and frees it, its usage with it; b and its record go too when l was its last location (its key
 * stops counting), else b's record is rewritten. For what the deleter finished and what pruning found lost.
 */
void block_drop_location(struct kvcm *k, struct instance *inst, struct block *b, struct location *l);
/*
 * Fills the empty block b from its record rec of len bytes: prev_key, the LRU stamp, and the locations whose
 * storage still exists, in their stored order (nothing is accounted: the caller does). A malformed tail is
 * dropped.
 */
void block_record_read(struct kvcm *k, struct block *b, const void *rec, size_t len);

#endif

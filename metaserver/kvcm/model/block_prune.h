/*
 * Location pruning (the reference's aggressive prune, kvcm.md "Location pruning"): a SERVING location whose data
 * its storage reports lost (storage_data_lost: a dummy storage's file deleted behind the manager's back) is
 * dropped from the index, metadata only, when a query or a startWriteCache meets it; its block can then be
 * written again. A query notes what it met and drops it once answered (its rows still point into the blocks);
 * a write drops it before it plans. Loop thread only.
 */
#ifndef MMC_KVCM_BLOCK_PRUNE_H
#define MMC_KVCM_BLOCK_PRUNE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct kvcm;

struct prune_item {
	int64_t key;
	char id[KVCM_LOC_ID_LEN + 1];
};

/* Locations noted for pruning; zero-initialised empty. */
struct prune_set {
	struct prune_item *v;
	size_t n, cap;
};

/* Notes b's SERVING locations whose data is lost; returns how many (0 too when out of memory). */
size_t prune_note(struct prune_set *ps, const struct block *b);
/* Drops the noted locations still SERVING from inst's index (an emptied block goes too) and empties ps. */
void prune_apply(struct kvcm *k, struct instance *inst, struct prune_set *ps);
/* Notes and drops at once, for the n keys of a write about to plan. */
void prune_keys(struct kvcm *k, struct instance *inst, const int64_t *keys, size_t n);

#endif

/*
 * Usage accounting and quotas (reference kvcm.md §5.3): bytes (the size= params of a location's URIs) per
 * instance, group and storage type, keys per instance; the hard limits checked by startWriteCache; the choice of
 * a write storage among the group's candidates.
 */
#ifndef MMC_KVCM_QUOTA_H
#define MMC_KVCM_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct kvcm;

void usage_add_location(struct instance *inst, const struct location *l);
void usage_sub_location(struct instance *inst, const struct location *l);
void usage_add_key(struct instance *inst);
void usage_sub_key(struct instance *inst);
/* l was handed to the deleter (its bytes and, with the block's last location, its key stop counting). */
void usage_pending(struct instance *inst, struct block *b, const struct location *l);
/* The deleter finished l (called before its bytes are subtracted). */
void usage_unpending(struct instance *inst, struct block *b, const struct location *l);

/*
 * The storage a write of bytes and new_keys goes to: a candidate of inst's group that is available, has quota
 * left for its type, and fits the group's data_storage_strategy. NULL with a wire code and message otherwise.
 */
struct storage *quota_pick_storage(struct kvcm *k, struct instance *inst, uint64_t bytes, uint64_t new_keys, int *code,
                                   char *msg, size_t msglen);

#endif

/*
 * KVCM's durable state in LMDB (its own named databases in the meta server's environment): storages, groups and
 * instances as canonical JSON, block locations in a compact binary record per block keyed by (instance uid, key).
 * Writes join the loop turn's group commit; write sessions are never stored.
 */
#ifndef MMC_KVCM_STORE_H
#define MMC_KVCM_STORE_H

#include <stdbool.h>

#include "model.h"

struct kvcm;

int store_open(struct kvcm *k);
/* True once a startup config has been applied to this data dir (it is then never applied again). */
bool store_initialized(struct kvcm *k);
void store_mark_initialized(struct kvcm *k);
/* Loads everything; orphaned WRITING and interrupted DELETING locations are handed to the deleter. */
int store_load(struct kvcm *k);

void store_put_storage(struct kvcm *k, const struct storage *s);
void store_del_storage(struct kvcm *k, const struct storage *s);
void store_put_group(struct kvcm *k, const struct group *g);
void store_del_group(struct kvcm *k, const struct group *g);
void store_put_instance(struct kvcm *k, const struct instance *inst);
void store_del_instance(struct kvcm *k, const struct instance *inst);
/* 0, or MMC_ERROR (logged) when the record could not be written: the block in memory is then not durable. */
int store_put_block(struct kvcm *k, const struct instance *inst, const struct block *b);
int store_del_block(struct kvcm *k, const struct instance *inst, int64_t key);

#endif

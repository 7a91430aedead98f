/*
 * Asynchronous deletion of cache locations (reference kvcm.md §3.2, §4.8): a location is marked CLS_DELETING
 * (durably), and after its delay its data goes (files unlinked on an I/O worker, mmc objects dropped from the
 * pool) and then its metadata. Used by removeCache, trimCache, reclaim, failed and expired writes.
 */
#ifndef MMC_KVCM_DELETER_H
#define MMC_KVCM_DELETER_H

#include <stdint.h>

#include "model.h"

struct kvcm;

int deleter_start(struct kvcm *k);
void deleter_stop(struct kvcm *k);

/* Schedules l of block b for deletion after delay_ms; the caller persists b. No-op if l is already pending. */
void deleter_submit(struct kvcm *k, struct instance *inst, struct block *b, struct location *l, uint64_t delay_ms);
/* Schedules every location of b and persists b. */
void deleter_submit_block(struct kvcm *k, struct instance *inst, struct block *b, uint64_t delay_ms);
/* Starts the deletions due on the logical clock (what the deleter's timer does) and re-arms the timer. */
void deleter_run_due(struct kvcm *k);

/* Locations waiting for or in deletion; locations and files deleted so far. */
uint64_t deleter_pending(const struct kvcm *k);
uint64_t deleter_deleted(const struct kvcm *k);
uint64_t deleter_files_unlinked(const struct kvcm *k);

#endif

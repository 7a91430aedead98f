/*
 * The reclaimer (reference kvcm.md §5.3): every kvcm.reclaim.interval_ms, a group whose usage (bytes, bytes per
 * storage type, or keys against max_key_count) is at or over its used_percentage water level has its least
 * recently written SERVING locations deleted (after delay_before_delete_ms) until it is under again.
 * WRITING locations are never reclaimed.
 */
#ifndef MMC_KVCM_RECLAIM_H
#define MMC_KVCM_RECLAIM_H

#include <stdint.h>

struct kvcm;

int reclaim_start(struct kvcm *k);
void reclaim_stop(struct kvcm *k);
/* One reclaim pass over every group at or over its water level (what the reclaim timer does). */
void reclaim_run(struct kvcm *k);
/* Locations evicted so far. */
uint64_t reclaim_evicted(const struct kvcm *k);

#endif

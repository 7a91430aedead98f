/*
 * Visiting every block of an instance without stalling the loop: the keys are collected once, then fn runs on
 * each block still present, a chunk of keys per loop turn. Used by trimCache/removeInstance (delete everything)
 * and by reportEvent's cleanup of a reporter's old locations.
 */
#ifndef MMC_KVCM_BLOCK_SCAN_H
#define MMC_KVCM_BLOCK_SCAN_H

#include "model.h"

struct kvcm;

typedef void (*block_scan_fn)(struct kvcm *k, struct instance *inst, struct block *b, void *arg);

/*
 * Starts a scan; arg is freed with free() at the end. done (NULL: none) is called with done_arg once fn has run on
 * every block, maybe before this returns. Returns 0 or a negative MMC_* code (arg then freed, done not called).
 */
int block_scan(struct kvcm *k, struct instance *inst, block_scan_fn fn, void *arg, const char *what,
               void (*done)(void *arg), void *done_arg);
/* Schedules the deletion of every location of inst (trimCache TS_REMOVE_ALL_CACHE, removeInstance); then done, as
 * block_scan(). */
int trim_instance(struct kvcm *k, struct instance *inst, void (*done)(void *arg), void *done_arg);
/* Shutdown, while connections are still open: runs the scans a caller waits for to their end (their callers get an
 * answer that holds). */
void block_scans_finish(struct kvcm *k);
/* Drops scans still running (shutdown). */
void block_scans_stop(struct kvcm *k);

#endif

/*
 * Removing all of an instance's cache (trimCache TS_REMOVE_ALL_CACHE, removeInstance): the keys are collected
 * once, then handed to the deleter a chunk per loop turn so a large index never stalls the loop.
 */
#ifndef MMC_KVCM_TRIM_H
#define MMC_KVCM_TRIM_H

#include "model.h"

struct kvcm;

/* Schedules the deletion of every location of inst. Returns 0 or a negative MMC_* code. */
int trim_instance(struct kvcm *k, struct instance *inst);
/* Drops trims still running (shutdown). */
void trims_stop(struct kvcm *k);

#endif

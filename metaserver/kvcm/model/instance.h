/*
 * Instances (reference kvcm.md §4.1-4.2): one model deployment each, registered into a group, with its own block
 * index. Registration is idempotent for an identical config and DUPLICATE_ENTITY otherwise.
 */
#ifndef MMC_KVCM_INSTANCE_H
#define MMC_KVCM_INSTANCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json_in.h"
#include "json_out.h"
#include "model.h"

struct kvcm;

extern const struct jfield instance_info_schema[];

struct instance *instance_find(struct kvcm *k, const char *id);
/*
 * registerInstance on body (already parsed). Sets *out to the (new or existing) instance. Returns a wire code
 * with msg; d->bad when a field has the wrong type (HTTP 400).
 */
int instance_register(struct kvcm *k, json_t *body, struct jd *d, struct instance **out, char *msg, size_t msglen);
/* Recreates an instance from its record (its group must be loaded). */
struct instance *instance_load(struct kvcm *k, json_t *record, char *msg, size_t msglen);
/* A removed instance's record (STORE_REMOVED) as a zombie, off the registry: state_load trims it, its deletes
 * finish, and its record goes with its last block. NULL when its group is gone or out of memory (logged). */
struct instance *instance_load_removed(struct kvcm *k, json_t *record);
/* Takes inst out of the registry (removeInstance); it is freed once its last block and reference are gone. */
void instance_unregister(struct kvcm *k, struct instance *inst);
/* Reference counting for deletes and sessions that outlive a removeInstance. */
void instance_hold(struct instance *inst);
void instance_release(struct kvcm *k, struct instance *inst);
/* Frees every instance (shutdown). */
/* Makes the registry (k->instances) an empty table; before the first instance_register(). */
void instances_init(struct kvcm *k);
void instances_free(struct kvcm *k);
/*
 * Calls fn for every registered instance in id order, so that listings and config snapshots come out alike in every
 * process (the registry's own order follows the per-process hash key). fn must not register or remove instances.
 */
void instance_each(struct kvcm *k, void (*fn)(void *arg, const struct instance *inst), void *arg);

/* Writes the InstanceInfo message. */
void instance_write_info(struct jw *w, const struct instance *inst);
/* Index of spec name in inst, or -1. */
int instance_spec_index(const struct instance *inst, const char *name);

#endif

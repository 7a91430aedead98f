/*
 * Storage back-ends (reference kvcm.md §3.1, admin §4.16): the registry of named storages and their configs.
 * Supported kinds: file (NFS-style file:// URIs under root_path), mmc (blocks in the mmc pool, mmc://KEY),
 * dummy (metadata only) and the two event-report kinds of reportEvent.
 */
#ifndef MMC_KVCM_STORAGE_H
#define MMC_KVCM_STORAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "json_in.h"
#include "model.h"

struct kvcm;

extern const struct jfield storage_schema[];

/*
 * Adds a storage from a canonical admin StorageConfig (ownership of cfg passes on success). Returns KC_OK or a
 * wire code with a message. persist: write it to LMDB (false while loading).
 */
int storage_add(struct kvcm *k, json_t *cfg, bool available, bool persist, char *msg, size_t msglen);
/*
 * Replaces the config of the storage cfg names (ownership of cfg passes on success): its spec, its
 * check_storage_available_when_open; new writes use it, written locations keep their URIs. KC_OK,
 * INSTANCE_NOT_EXIST, or INVALID_ARGUMENT / UNSUPPORTED as storage_add, or when the type would change under
 * locations.
 */
int storage_update(struct kvcm *k, json_t *cfg, char *msg, size_t msglen);
/* Recreates a storage from its record (storage_add without persisting). */
int storage_load(struct kvcm *k, json_t *record, char *msg, size_t msglen);
struct storage *storage_find(struct kvcm *k, const char *name);
/* KC_OK, INSTANCE_NOT_EXIST (no such storage) or INVALID_ARGUMENT (still referenced). */
int storage_remove(struct kvcm *k, const char *name, char *msg, size_t msglen);
int storage_set_available(struct kvcm *k, const char *name, bool available);
void storage_free(struct storage *s);

/* The internal form {"type":"file","is_available":..,"global_unique_name":..,"storage_spec":{..}}. */
json_t *storage_internal_json(const struct storage *s);
/* Internal form -> canonical admin StorageConfig; NULL (d->bad or msg) when it is not one. */
json_t *storage_from_internal(struct jd *d, json_t *in, char *msg, size_t msglen);
/* The admin form as listStorage prints it (cfg plus is_available). New reference. */
json_t *storage_admin_json(const struct storage *s);

static inline bool storage_is_event_report(const struct storage *s)
{
	return s->type == ST_EVENT_REPORT_L1P5 || s->type == ST_EVENT_REPORT_L2;
}

#endif

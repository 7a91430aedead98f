/*
 * Instance groups (reference kvcm.md §3.1, §4.16): write candidates, quota and reclaim settings shared by the
 * instances of the group. Admin-managed; registerInstance may create one from the "default" group.
 */
#ifndef MMC_KVCM_GROUP_H
#define MMC_KVCM_GROUP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "json_in.h"
#include "model.h"

struct kvcm;

extern const struct jfield group_schema[];

struct group *group_find(struct kvcm *k, const char *name);
/*
 * Adds a group from a canonical InstanceGroup (cfg ownership passes on success). check: the referenced
 * storages must exist (admin calls; loading trusts what was stored). Returns KC_OK or a wire code + message.
 */
int group_add(struct kvcm *k, json_t *cfg, bool check, bool persist, char *msg, size_t msglen);
/* updateInstanceGroup: replaces g's config when current_version matches. */
int group_update(struct kvcm *k, json_t *cfg, int64_t current_version, char *msg, size_t msglen);
int group_remove(struct kvcm *k, const char *name, char *msg, size_t msglen);
/* A new group named name with the settings of "default" (registerInstance's auto-create). */
struct group *group_auto_create(struct kvcm *k, const char *name, char *msg, size_t msglen);
void group_free(struct group *g);

bool group_uses_storage(const struct group *g, const char *storage);
/* The names of g's write candidates / event-report candidates (borrowed from cfg). */
json_t *group_candidates(const struct group *g);
json_t *group_event_candidates(const struct group *g);

#endif

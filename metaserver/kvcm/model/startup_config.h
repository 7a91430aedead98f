/*
 * The startup configuration (reference kvcm.md §7.2): the storages and instance groups a fresh data directory
 * starts with. kvcm.startup_config names a JSON file; without one the built-in default has storage nfs_01
 * (file, kvcm.default_storage.root_path, 8 keys per file) and group "default". Applied once per data directory;
 * later starts load what was persisted.
 */
#ifndef MMC_KVCM_STARTUP_CONFIG_H
#define MMC_KVCM_STARTUP_CONFIG_H

#include <stddef.h>

struct kvcm;

int startup_config_apply(struct kvcm *k, char *err, size_t errlen);

#endif

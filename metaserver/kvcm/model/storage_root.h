/*
 * Where addStorage may point a file storage: under one of kvcm.storage.allowed_roots (comma-separated; empty: the
 * directory of kvcm.default_storage.root_path), so an admin call cannot aim KVCM's file writes and deletes at
 * /etc or a home directory. Paths are compared after symlinks are resolved (realpath of the longest existing
 * prefix); a `.` or `..` component is refused outright.
 */
#ifndef MMC_KVCM_STORAGE_ROOT_H
#define MMC_KVCM_STORAGE_ROOT_H

#include <jansson.h>
#include <stddef.h>

struct kvcm;

/* KC_OK when path lies under an allowed root, else KC_INVALID_ARGUMENT with a message naming the key. */
int storage_root_check(const struct kvcm *k, const char *path, char *msg, size_t msglen);
/* storage_root_check() of the root_path of every file-like kind (nfs, local) a storage config names, as addStorage
 * and updateStorage take it; a relative root is left to storage_add's own error. KC_OK, or the first refusal. */
int storage_roots_check(const struct kvcm *k, const json_t *cfg, char *msg, size_t msglen);

#endif

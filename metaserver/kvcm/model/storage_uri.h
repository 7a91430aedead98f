/*
 * Where a storage puts a block's data: URI allocation for new locations (reference kvcm.md §3.4), and the data
 * side of deleting a location (the files to unlink, the mmc objects to drop).
 */
#ifndef MMC_KVCM_STORAGE_URI_H
#define MMC_KVCM_STORAGE_URI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct kvcm;

/*
 * URIs for n new blocks of inst in s: uris[i * inst->nspecs + j] for key i and spec j, when sel is NULL or
 * sel[i * nspecs + j] is set (malloc'd strings; others NULL). file: keys are grouped key_count_per_file to a
 * file, spec by spec, as the reference's NFS back-end does. Returns 0 or a negative MMC_* code.
 */
int storage_make_uris(struct storage *s, const struct instance *inst, const int64_t *keys, size_t n, const uint8_t *sel,
                      char **uris);

/*
 * Makes uri (from storage_make_uris, for a new location of block b) name data no other location names: another
 * location of b with the same path (a second replica on the same storage, a rewrite while the old copy waits for the
 * deleter), or a shared file some location holds. Such a path gets "~2", "~3"... after its name: two live locations
 * on one file would write over each other, and the deleter of either would take the other's data. Returns 0 or
 * MMC_MALLOC_FAILED (uri unchanged).
 */
int storage_uri_unique(struct kvcm *k, const struct block *b, char **uri);

/* The size= parameter of a URI (0 when absent): usage accounting. */
uint64_t uri_size_param(const char *uri);

/* Counts a new (or loaded) location's references to shared files. */
int storage_hold_data(struct kvcm *k, const struct location *l);
/* For a location being deleted: malloc'd paths whose last reference it held (file); *paths NULL when none. */
size_t storage_release_data(struct kvcm *k, const struct location *l, char ***paths);
/* mmc: drops the location's objects from the pool (loop thread). */
void storage_drop_mmc_objects(struct kvcm *k, const struct location *l);
/*
 * dummy: a spec's file is gone (the reference's MightExist: the data was lost behind the manager's back, so the
 * location is pruned). False for every other kind: file (NFS) URIs are not checked, as in the reference.
 */
bool storage_data_lost(const struct location *l);
/* mmc: every object of the location is in the pool and readable; dummy: no file is lost; true for other kinds. */
bool storage_data_visible(struct kvcm *k, const struct location *l);

/* Makes k->file_refs an empty table; before the first storage_hold_data(). */
void file_refs_init(struct kvcm *k);
void file_refs_free(struct kvcm *k);

#endif

/*
 * Rebuilding the model from the store at start-up: storages, groups, instances, then every block record. Write
 * sessions do not survive a restart, so a CLS_WRITING location found here is an orphan and is swept (deleted at
 * once), as is every CLS_DELETING one whose deletion the restart interrupted.
 */
#ifndef MMC_KVCM_STATE_LOAD_H
#define MMC_KVCM_STATE_LOAD_H

struct kvcm;

/* Loads everything from k->store (opened). Returns 0 or MMC_ERROR. */
int state_load(struct kvcm *k);

#endif

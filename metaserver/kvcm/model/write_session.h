/*
 * Write sessions (reference kvcm.md §4.6-4.7, §5.2): what one startWriteCache allocated, until finishWriteCache
 * or expiry. In memory only (a restart loses them; their WRITING locations are swept at load). An expired
 * session fails all its blocks.
 */
#ifndef MMC_KVCM_WRITE_SESSION_H
#define MMC_KVCM_WRITE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hmap.h"
#include "due_heap.h"
#include "model.h"

#define SESSION_ID_LEN 32

struct kvcm;

struct ws_item {
	int64_t key;
	char loc[KVCM_LOC_ID_LEN + 1];
};

struct wsession {
	struct hmap_node hlink; /* in the sessions' table, by id */
	char id[SESSION_ID_LEN + 1];
	struct instance *inst;
	struct due_node expiry; /* in the sessions' heap, by expiry time */
	uint32_t n;
	struct ws_item items[];
};

int sessions_start(struct kvcm *k);
/* Fails nothing: a stopping server keeps WRITING locations durable for the next start's sweep. */
void sessions_stop(struct kvcm *k);

/* A new session for n locations (items to be filled by the caller), expiring after timeout_ms. */
struct wsession *session_create(struct kvcm *k, struct instance *inst, uint32_t n, uint64_t timeout_ms);
struct wsession *session_find(struct kvcm *k, const char *id);
/*
 * Ends s: locations whose ok[i] is set become SERVING, the others are deleted (ok NULL: all failed).
 * Frees s.
 */
void session_finish(struct kvcm *k, struct wsession *s, const bool *ok);
/* Expires the sessions past their time on the logical clock (what the sweep timer does every sweep_interval_ms). */
void sessions_sweep(struct kvcm *k);
uint64_t sessions_count(const struct kvcm *k);
uint64_t sessions_expired(const struct kvcm *k);

#endif

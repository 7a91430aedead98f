/*
 * The reclaimer's own state, shared by its files: reclaim.c (rounds, water levels, Group LRU plans),
 * reclaim_requests.c (delete requests in flight, their credit and pending limits) and reclaim_metrics.c.
 */
#ifndef MMC_KVCM_RECLAIM_STATE_H
#define MMC_KVCM_RECLAIM_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"
#include "model.h"

struct kvcm;
struct event;

/* The reference's cache_reclaimer.* counters (reclaim_metrics.c names them). */
struct reclaim_counters {
	uint64_t rounds, jobs, blocks_submitted, locations_submitted, blocks_deleted, locations_deleted;
	uint64_t credit_timeouts, limit_rejects, pending_skipped, backoffs;
	uint64_t requests_submitted, requests_completed, requests_failed;
	uint64_t plans, partial_plans, sampled_keys, candidates, selected_blocks, submitted_blocks, delete_requests;
	uint64_t request_limit_stops, watermark_stops, scope_stops, backpressure_stops;
};

#define REJECT_PROCESS ST_COUNT /* limit_rejects slot of the process-wide limits */

/* What one instance group has in flight, by storage type; kept once seen, so that a drained group reports 0. */
struct reclaim_acct {
	struct list link;
	char *group;
	uint64_t credit_bytes[ST_COUNT]; /* credited_delete_bytes */
	uint64_t credit_keys;            /* predicted_deleted_key_count */
	uint64_t pending_locs[ST_COUNT], pending_bytes[ST_COUNT];
	uint64_t limit_rejects[ST_COUNT + 1];
	bool seen[ST_COUNT];
};

struct reclaim_loc {
	int64_t key;
	char id[KVCM_LOC_ID_LEN + 1];
};

/* One delete request (the reference's DeleteHandler): locations of one instance handed to the deleter together. */
struct reclaim_request {
	struct list link;
	struct instance *inst; /* held */
	struct reclaim_acct *acct;
	uint64_t submitted_ms, credit_deadline_ms; /* logical clock */
	bool credit;
	uint64_t blocks, keys, bytes[ST_COUNT], locs_by_type[ST_COUNT];
	struct reclaim_loc *locs;
	size_t nlocs, done; /* locs[0..done) are deleted */
};

struct reclaimer {
	struct kvcm *k;
	struct event *timer;
	struct list requests; /* struct reclaim_request, oldest first */
	struct list accts;    /* struct reclaim_acct */
	uint64_t pending_requests, pending_bytes, pending_locs;
	uint64_t rotation; /* where the next partial plan starts among a group's instances */
	struct reclaim_counters n;
};

/* The account of group, created when missing and create is set (NULL: none, or out of memory). */
struct reclaim_acct *reclaim_acct(struct reclaimer *r, const char *group, bool create);

/* Which locations of a chosen block a request takes (the round's scope: SERVING, and of an over type). */
struct reclaim_pick {
	bool (*fn)(const struct location *l, const void *arg);
	const void *arg;
};

/*
 * One delete request for blocks of inst: their locations pick takes, within the pending limits (each location a
 * limit refuses is counted in pending_limit_reject_count), handed to the deleter after delay_ms and credited to
 * the group at once. Returns the blocks submitted, 0 when nothing was, -1 when a process-wide limit refused the
 * request (back-pressure: the round stops).
 */
int reclaim_submit(struct reclaimer *r, struct instance *inst, struct block *const *blocks, size_t n,
                   const struct reclaim_pick *pick, uint64_t delay_ms);
/* Notes completed requests and expired credit (a round's first step; the metrics' too). */
void reclaim_collect(struct reclaimer *r);
void reclaim_requests_free(struct reclaimer *r);

#endif

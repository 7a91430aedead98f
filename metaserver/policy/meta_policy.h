/*
 * The policy layer's own state: requests waiting for room or for moves, the moves in flight, the allocation
 * extents granted. The state layer sees it only as struct meta's opaque policy pointer. Loop thread only.
 */
#ifndef MMC_META_POLICY_H
#define MMC_META_POLICY_H

#include <stdint.h>

#include "hmap.h"
#include "list.h"
#include "meta.h"

struct event;
struct policy_ops;

struct meta_policy {
	const struct policy_ops *ops; /* how policy reaches the network: the RPC layer's, or a unit test's */
	struct event *kick_ev;        /* space was freed: resume parked requests (the daemon makes it) */
	struct list parked;           /* alloc requests waiting for leased memory (alloc_queue.c) */

	/* SSD tier (tier.c) */
	struct list tasks;      /* blob moves in flight */
	struct hmap task_ids;   /* the same, by id: a service's answer finds its task at once */
	struct list tier_reqs;  /* requests waiting for moves */
	struct list read_waits; /* SSD reads waiting for DRAM room */
	uint64_t next_task_id;
	uint64_t freeing[MEDIA_COUNT]; /* bytes that moves in flight will give back */

	/* allocation extents (extents.c): every one granted, the one idle soonest first; initialised on first use */
	struct list extents;
	uint64_t uncarved[MEDIA_COUNT]; /* their bytes not carved yet, counted as they change (a grant reads it) */
	uint64_t next_extent_id;
};

/* Makes p m's policy state (empty queues) with ops as its way out, and hooks it to the state layer (services that
 * leave, space that is freed). */
void policy_init(struct meta *m, struct meta_policy *p, const struct policy_ops *ops);

#endif

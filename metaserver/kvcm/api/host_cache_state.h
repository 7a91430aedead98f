/*
 * getHostCacheState's per-request working set (reference kvcm.md §4.14), shared by the plain prefix rule
 * (host_cache_state.c) and the QT_PREFIX_MATCH_WITH_MAMBA rule (host_cache_mamba.c). Built and freed within one call on
 * the loop thread.
 */
#ifndef MMC_KVCM_HOST_CACHE_STATE_H
#define MMC_KVCM_HOST_CACHE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct call;

struct host_state {
	const char *host;
	bool *has;     /* per key: any of its visible reports holds it */
	bool *has_l2;  /* per key: its L2 reporter holds it (what a peer can serve) */
	uint64_t *all; /* mamba: per key, `words` words of the instance's spec indices it holds */
	uint64_t *l2;  /* mamba: the same for its L2 reports alone */
	size_t stop;   /* the first key ending its own (full-attention) prefix, before Eagle pop */
	uint64_t local, fetch, total;
};

struct host_query {
	const int64_t *keys;
	size_t n;
	size_t valid;          /* keys before the first one the index lacks: no prefix, local or peer, passes it */
	size_t words;          /* uint64_t words per key in a spec mask (mamba only, else 0) */
	bool eagle;            /* model_deployment.use_eagle_pop: the last matched block is dropped */
	struct host_state *hs; /* live hosts in name order, so a lower index is the smaller name */
	size_t nh;
};

/* The spec masks of the instance's location_spec_groups, by category: 'F' full attention, 'L' Mamba state. */
struct mamba_groups {
	size_t nfull, nstate;
	uint64_t *full;                 /* nfull masks of q->words words */
	uint64_t *state;                /* nstate masks */
	uint64_t *full_any, *state_any; /* the union of each kind */
};

/* Classifies inst's spec groups; on a group the rule cannot use fails c (INVALID_ARGUMENT) and returns false. */
bool mamba_groups_build(struct call *c, const struct instance *inst, size_t words, struct mamba_groups *mg);
void mamba_groups_free(struct mamba_groups *mg);
/* local/fetch/total of every host by the Mamba rule; p2p is p2p_host_count. False when out of memory. */
bool mamba_match(struct host_query *q, const struct mamba_groups *mg, size_t p2p);

/*
 * The first p2p host indices with local > 0 by local descending, then name: the hosts that get a peer plan
 * (*out: caller frees). False when out of memory.
 */
bool host_top_by_local(const struct host_query *q, size_t p2p, size_t **out, size_t *n);
/* The number of distinct values among keys[0..n) (sorts them): p2p_1_fetch counts block keys, not positions. */
uint64_t host_distinct_keys(int64_t *keys, size_t n);

#endif

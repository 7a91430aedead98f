/*
 * getHostCacheState under QT_PREFIX_MATCH_WITH_MAMBA (reference kvcm.md §4.14), following tair-kvcache's
 * MetaSearcher::PrefixMatchWithMambaByHost. A hybrid model keeps full-attention KV for every block but Mamba
 * (linear attention) state only where it checkpointed, and resuming needs the state of the last block reused:
 *
 *  - Groups are classified by the first letter of their name: 'F' full attention, 'L' Mamba state; 'W', 'C',
 *    'E', 'X' are categories tair-kvcache does not support here, anything else is invalid, and at least one of
 *    each kind is required.
 *  - local: the host's full prefix is the run of keys holding every 'F' spec (less one with use_eagle_pop);
 *    local is the last position in it whose key also holds every 'L' spec. Keys in between need no state.
 *  - p2p: for each of the p2p_host_count hosts with the largest local, every 'F' group independently follows the
 *    L2 peers that fill all its gaps past the host's own prefix (the smallest name wins); the combined full
 *    prefix ends where the first group runs out. One coverage peer, the L2 host filling the most missing 'L'
 *    groups within that prefix, supplies state. p2p_1_total_match is the last position whose key then holds all
 *    state, p2p_1_fetch the distinct keys taken from any peer.
 */
#include <stdlib.h>
#include <string.h>

#include "host_cache_state.h"
#include "http.h"
#include "wire_enums.h"

#define NO_PEER SIZE_MAX

static bool has_mask(const uint64_t *have, const uint64_t *need, size_t w)
{
	for (size_t i = 0; i < w; i++)
		if ((have[i] & need[i]) != need[i])
			return false;
	return true;
}

/* Whether the host's own specs and a peer's L2 specs together hold need. */
static bool covers(const uint64_t *mine, const uint64_t *peer, const uint64_t *need, size_t w)
{
	for (size_t i = 0; i < w; i++)
		if (((mine[i] | peer[i]) & need[i]) != need[i])
			return false;
	return true;
}

static bool category_ok(struct call *c, const char *name, size_t *nfull, size_t *nstate)
{
	char cat = name[0];

	if (cat == 'F' || cat == 'L') {
		*(cat == 'F' ? nfull : nstate) += 1;
		return true;
	}
	call_fail(c, KC_INVALID_ARGUMENT, "%s location spec category for QT_PREFIX_MATCH_WITH_MAMBA, group: %s",
	          cat && strchr("WCEX", cat) ? "unsupported" : "invalid", name);
	return false;
}

static void group_mask(const struct spec_group *g, uint64_t *mask)
{
	for (uint32_t i = 0; i < g->nspecs; i++)
		mask[g->specs[i] / 64] |= UINT64_C(1) << (g->specs[i] % 64);
}

bool mamba_groups_build(struct call *c, const struct instance *inst, size_t words, struct mamba_groups *mg)
{
	size_t nf = 0, ns = 0;

	memset(mg, 0, sizeof(*mg));
	for (uint32_t g = 0; g < inst->nspec_groups; g++)
		if (!category_ok(c, inst->spec_groups[g].name, &nf, &ns))
			return false;
	if (!nf || !ns) {
		call_fail(c, KC_INVALID_ARGUMENT, "QT_PREFIX_MATCH_WITH_MAMBA: no %s location spec group",
		          nf ? "mamba state" : "full");
		return false;
	}
	mg->full = calloc((nf + ns + 2) * words + 1, sizeof(uint64_t));
	if (!mg->full) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return false;
	}
	mg->state = mg->full + nf * words;
	mg->full_any = mg->state + ns * words;
	mg->state_any = mg->full_any + words;
	for (uint32_t g = 0; g < inst->nspec_groups; g++) {
		const struct spec_group *sg = &inst->spec_groups[g];
		bool full = sg->name[0] == 'F';
		/* An empty group is vacuously held: it needs neither a mask nor a peer. */
		if (!sg->nspecs)
			continue;
		group_mask(sg, full ? mg->full + mg->nfull++ * words : mg->state + mg->nstate++ * words);
		group_mask(sg, full ? mg->full_any : mg->state_any);
	}
	return true;
}

void mamba_groups_free(struct mamba_groups *mg)
{
	free(mg->full);
	memset(mg, 0, sizeof(*mg));
}

/* local by the rule above; also records where the host's own full prefix stops. */
static void local_of(const struct host_query *q, const struct mamba_groups *mg, struct host_state *h)
{
	size_t w = q->words, prev = 0, latest = 0, stop = q->valid, adjusted;

	for (size_t j = 0; j < q->valid; j++) {
		if (!has_mask(h->all + j * w, mg->full_any, w)) {
			stop = j;
			break;
		}
		if (has_mask(h->all + j * w, mg->state_any, w)) {
			prev = latest;
			latest = j + 1;
		}
	}
	adjusted = q->eagle && stop ? stop - 1 : stop;
	h->stop = stop;
	h->local = h->total = latest <= adjusted ? latest : prev;
	h->fetch = 0;
}

/* One 'F' group's peer search for one host. */
struct tracker {
	bool init, stopped;
	size_t stop;
	bool *active; /* per host: an L2 peer holding the group wherever the host lacks it so far */
};

/* Advances t over key j (at or past the host's own prefix). */
static void track(const struct host_query *q, const struct host_state *h, const uint64_t *need, size_t j,
                  struct tracker *t)
{
	size_t w = q->words;
	const uint64_t *mine = h->all + j * w;
	bool any = false, kept = false;

	if (has_mask(mine, need, w))
		return;
	for (size_t p = 0; p < q->nh; p++) {
		const struct host_state *ph = &q->hs[p];
		bool cand = ph != h && ph->has_l2[j] && covers(mine, ph->l2 + j * w, need, w);

		any = any || cand;
		kept = kept || (t->active[p] && cand);
	}
	/* Once started, a key no remaining peer can fill stops the group but keeps the last peers. */
	if (t->init && !kept) {
		t->stopped = true;
		t->stop = j;
		return;
	}
	for (size_t p = 0; p < q->nh; p++) {
		const struct host_state *ph = &q->hs[p];
		bool cand = ph != h && ph->has_l2[j] && covers(mine, ph->l2 + j * w, need, w);

		t->active[p] = t->init ? t->active[p] && cand : cand;
	}
	if (!t->init && !any) {
		t->stopped = true;
		t->stop = j;
	}
	t->init = true;
}

/* The per-plan state of one host that gets a peer. */
struct plan {
	struct host_state *h;
	size_t *gstop; /* per 'F' group: where its peer-extended prefix ends */
	size_t *gpeer; /* per 'F' group: its peer, NO_PEER when none */
	size_t full_stop, adjusted;
	size_t cpeer;   /* the coverage peer for 'L' groups */
	size_t *counts; /* per host: 'L' groups it would fill */
	uint64_t *combined;
	int64_t *fetched; /* keys taken from a peer */
	size_t nfetched;
};

static size_t lowest(const bool *set, size_t n)
{
	for (size_t p = 0; p < n; p++)
		if (set[p])
			return p;
	return NO_PEER;
}

/* Each 'F' group's stop and peer; the combined full prefix is the shortest. */
static void plan_full(const struct host_query *q, const struct mamba_groups *mg, struct plan *pl, struct tracker *t)
{
	size_t nf = mg->nfull, left = nf;

	for (size_t j = pl->h->stop; j < q->valid && left; j++)
		for (size_t g = 0; g < nf; g++) {
			if (t[g].stopped)
				continue;
			track(q, pl->h, mg->full + g * q->words, j, &t[g]);
			left -= t[g].stopped;
		}
	pl->full_stop = q->valid;
	for (size_t g = 0; g < nf; g++) {
		pl->gstop[g] = t[g].stopped ? t[g].stop : q->valid;
		pl->gpeer[g] = t[g].init ? lowest(t[g].active, q->nh) : NO_PEER;
		if (pl->gstop[g] < pl->full_stop)
			pl->full_stop = pl->gstop[g];
	}
	pl->adjusted = q->eagle && pl->full_stop ? pl->full_stop - 1 : pl->full_stop;
}

/* The coverage peer: the L2 host filling the most missing 'L' groups before the adjusted full prefix. */
static void plan_coverage(const struct host_query *q, const struct mamba_groups *mg, struct plan *pl)
{
	size_t w = q->words;

	memset(pl->counts, 0, q->nh * sizeof(*pl->counts));
	for (size_t j = 0; j < pl->adjusted; j++) {
		const uint64_t *mine = pl->h->all + j * w;

		for (size_t s = 0; s < mg->nstate; s++) {
			const uint64_t *need = mg->state + s * w;

			if (has_mask(mine, need, w))
				continue;
			for (size_t p = 0; p < q->nh; p++)
				if (&q->hs[p] != pl->h && q->hs[p].has_l2[j] &&
				    covers(mine, q->hs[p].l2 + j * w, need, w))
					pl->counts[p]++;
		}
	}
	pl->cpeer = NO_PEER;
	for (size_t p = 0; p < q->nh; p++)
		if (pl->counts[p] && (pl->cpeer == NO_PEER || pl->counts[p] > pl->counts[pl->cpeer]))
			pl->cpeer = p;
}

/* Merges peer p's L2 specs of need into the combined mask at key j; true when p supplies them. */
static bool take(const struct host_query *q, struct plan *pl, size_t p, const uint64_t *need, size_t j)
{
	size_t w = q->words;
	const uint64_t *mine = pl->h->all + j * w;

	if (p == NO_PEER || !q->hs[p].has_l2[j] || !covers(mine, q->hs[p].l2 + j * w, need, w))
		return false;
	for (size_t i = 0; i < w; i++)
		pl->combined[i] |= q->hs[p].l2[j * w + i] & need[i];
	return true;
}

/* Key j with the plan's peers: records a fetch and extends total when all state is then present. */
static void plan_key(const struct host_query *q, const struct mamba_groups *mg, struct plan *pl, size_t j)
{
	size_t w = q->words;
	const uint64_t *mine = pl->h->all + j * w;
	bool fetched = false, state = true;

	memcpy(pl->combined, mine, w * sizeof(*mine));
	for (size_t g = 0; g < mg->nfull; g++)
		if (j < pl->gstop[g] && !has_mask(mine, mg->full + g * w, w))
			fetched |= take(q, pl, pl->gpeer[g], mg->full + g * w, j);
	if (j < pl->adjusted) {
		for (size_t s = 0; s < mg->nstate; s++)
			if (!has_mask(mine, mg->state + s * w, w))
				fetched |= take(q, pl, pl->cpeer, mg->state + s * w, j);
		for (size_t s = 0; s < mg->nstate && state; s++)
			state = has_mask(pl->combined, mg->state + s * w, w);
		if (state && j + 1 > pl->h->total)
			pl->h->total = j + 1;
	}
	if (fetched)
		pl->fetched[pl->nfetched++] = q->keys[j];
}

static void plan_run(const struct host_query *q, const struct mamba_groups *mg, struct plan *pl, struct tracker *t)
{
	size_t limit = 0;

	plan_full(q, mg, pl, t);
	plan_coverage(q, mg, pl);
	/* Fetches count each group's whole peer range, also past the combined prefix (as tair-kvcache does). */
	for (size_t g = 0; g < mg->nfull; g++)
		if (pl->gpeer[g] != NO_PEER && pl->gstop[g] > limit)
			limit = pl->gstop[g];
	if (pl->cpeer != NO_PEER && pl->adjusted > limit)
		limit = pl->adjusted;
	if (!limit)
		return;
	/* Without a peer at all nothing moves past local; with one, the host's own later state counts too. */
	for (size_t j = 0; j < limit; j++)
		plan_key(q, mg, pl, j);
	pl->h->fetch = host_distinct_keys(pl->fetched, pl->nfetched);
}

bool mamba_match(struct host_query *q, const struct mamba_groups *mg, size_t p2p)
{
	size_t *top = NULL, ntop, nf = mg->nfull;
	struct tracker *t = NULL;
	struct plan pl = {0};
	bool ok = false;

	for (size_t i = 0; i < q->nh; i++)
		if (q->hs[i].has[0])
			local_of(q, mg, &q->hs[i]);
	if (!host_top_by_local(q, p2p, &top, &ntop))
		return false;
	if (!ntop)
		goto done;
	t = calloc(nf + 1, sizeof(*t));
	pl.gstop = calloc(nf + 1, sizeof(size_t));
	pl.gpeer = calloc(nf + 1, sizeof(size_t));
	pl.counts = calloc(q->nh, sizeof(size_t));
	pl.combined = calloc(q->words + 1, sizeof(uint64_t));
	pl.fetched = calloc(q->n + 1, sizeof(int64_t));
	for (size_t g = 0; t && g < nf; g++)
		if (!(t[g].active = calloc(q->nh, sizeof(bool))))
			goto out;
	if (!t || !pl.gstop || !pl.gpeer || !pl.counts || !pl.combined || !pl.fetched)
		goto out;
	for (size_t i = 0; i < ntop; i++) {
		pl.h = &q->hs[top[i]];
		pl.nfetched = 0;
		for (size_t g = 0; g < nf; g++) {
			memset(t[g].active, 0, q->nh * sizeof(bool));
			t[g].init = t[g].stopped = false;
		}
		plan_run(q, mg, &pl, t);
	}
done:
	ok = true;
out:
	for (size_t g = 0; t && g < nf; g++)
		free(t[g].active);
	free(t);
	free(pl.gstop);
	free(pl.gpeer);
	free(pl.counts);
	free(pl.combined);
	free(pl.fetched);
	free(top);
	return ok;
}

#include "reclaim.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "kvcm_state.h"
#include "log.h"
#include "mmc/mmc.h"
#include "reclaim_state.h"

#define ROUNDS_PER_TURN 16     /* rounds that made progress before the timer yields the loop */
#define SIZE_LIMIT      65535u /* the reference's kSizeLimit - 1: per instance sample, per request blocks */
#define EPSILON         1e-9

/* Which water levels a group is at or over: the round's scope. */
struct water {
	bool bytes, keys, types;
	bool type[ST_COUNT];
};

/* A sampled block with a location the round may delete. */
struct cand {
	struct instance *inst;
	struct block *b;
};

/* A Group LRU plan: the instances sampled this round and how many keys each. */
struct plan {
	struct instance **inst;
	size_t *share;
	size_t n, nall;
	uint64_t s, b_cfg, b_theory, s_effective;
};

static bool over(uint64_t used, uint64_t credit, int64_t cap, double pct)
{
	uint64_t left = used > credit ? used - credit : 0;

	return cap > 0 && left > 0 && (double)left / (double)cap + EPSILON > pct;
}

/* g's water levels, less what its delete requests in flight are credited with. */
static void water_of(struct reclaimer *r, const struct group *g, struct water *w)
{
	struct reclaim_acct *a = reclaim_acct(r, g->name, false);
	uint64_t credit = 0;
	double pct = g->used_percentage;

	memset(w, 0, sizeof(*w));
	if (pct <= 0)
		return;
	for (int t = 1; t < ST_COUNT; t++) {
		credit += a ? a->credit_bytes[t] : 0;
		if (t == ST_EVENT_REPORT_L1P5 || t == ST_EVENT_REPORT_L2) /* reporters own that data */
			continue;
		w->type[t] = over(g->use.bytes_by_type[t], a ? a->credit_bytes[t] : 0, g->type_capacity[t], pct);
		w->types = w->types || w->type[t];
	}
	w->bytes = over(g->use.bytes, credit, g->capacity, pct);
	w->keys = g->max_key_count > 0 &&
	          over(g->use.keys, a ? a->credit_keys : 0, g->max_key_count * (int64_t)g->ninstances, pct);
}

static bool exceeded(const struct water *w)
{
	return w->bytes || w->keys || w->types;
}

/* An over storage type narrows what is deleted to that type; a change of that ends a plan. */
static bool same_scope(const struct water *a, const struct water *b)
{
	return a->types == b->types && (!a->types || memcmp(a->type, b->type, sizeof(a->type)) == 0);
}

static bool in_scope(const struct location *l, const void *arg)
{
	const struct water *w = arg;

	return l->status == CLS_SERVING && !l->pending && !l->er_key && (!w->types || w->type[l->type % ST_COUNT]);
}

/* What inst holds in the dimension the round reclaims: the over types' bytes, else bytes, else keys. */
static uint64_t usage_in_scope(const struct instance *inst, const struct water *w)
{
	uint64_t n = 0;

	if (!w->types)
		return w->bytes ? inst->use.bytes : inst->use.keys;
	for (int t = 0; t < ST_COUNT; t++)
		n += w->type[t] ? inst->use.bytes_by_type[t] : 0;
	return n;
}

static int by_id(const void *a, const void *b)
{
	return strcmp((*(struct instance *const *)a)->id, (*(struct instance *const *)b)->id);
}

/* g's instances with something to reclaim, in id order (the reference's tie-break). */
static size_t effective_instances(struct kvcm *k, const struct group *g, const struct water *w, struct instance ***out)
{
	size_t n = 0;

	*out = calloc(g->ninstances + 1, sizeof(**out));
	if (!*out)
		return 0;
	hmap_foreach(&k->instances, l)
	{
		struct instance *inst = hmap_entry(l, struct instance, hlink);

		if (inst->group == g && n < g->ninstances && usage_in_scope(inst, w))
			(*out)[n++] = inst;
	}
	qsort(*out, n, sizeof(**out), by_id);
	return n;
}

/* The weight of plan entry i for the extra samples: its key count (1 each when every count is 0). */
static uint64_t extra_weight(const struct plan *p, size_t i, uint64_t total)
{
	return total ? p->inst[i]->use.keys : 1;
}

/* Splits extra among the plan's instances by key count, largest remainder first (ties by id). */
static void share_extra(struct plan *p, uint64_t extra)
{
	uint64_t total = 0, given = 0, denom;
	bool *topped = calloc(p->n, sizeof(*topped));

	for (size_t i = 0; i < p->n; i++)
		total += p->inst[i]->use.keys;
	denom = total ? total : p->n;
	for (size_t i = 0; i < p->n; i++) {
		p->share[i] += extra * extra_weight(p, i, total) / denom;
		given += extra * extra_weight(p, i, total) / denom;
	}
	for (; topped && given < extra; given++) {
		size_t best = p->n;

		for (size_t i = 0; i < p->n; i++) {
			uint64_t rem = extra * extra_weight(p, i, total) % denom;
			uint64_t best_rem = best < p->n ? extra * extra_weight(p, best, total) % denom : 0;

			if (!topped[i] && (best == p->n || rem > best_rem ||
			                   (rem == best_rem && strcmp(p->inst[i]->id, p->inst[best]->id) < 0)))
				best = i;
		}
		topped[best] = true;
		p->share[best]++;
	}
	free(topped);
}

/*
 * The reference's Group LRU budget: S = max(S_cfg, B_cfg x R) keys per instance, S x N for the group (at most
 * group_lru_max_sampling_size), half of it evenly over the instances covered this round, the rest by key count.
 */
static bool make_plan(struct reclaimer *r, struct instance **all, size_t nall, struct plan *p)
{
	const struct kvcm_reclaim_conf *c = &r->k->conf.reclaim;
	uint64_t s_plan, base, k;
	size_t start;

	memset(p, 0, sizeof(*p));
	if (!nall || !c->sampling_size || !c->del_batch_size)
		return false;
	p->b_cfg = c->del_batch_size;
	p->s = (uint64_t)c->min_sampling_ratio * p->b_cfg > c->sampling_size
	           ? (uint64_t)c->min_sampling_ratio * p->b_cfg
	           : c->sampling_size;
	p->b_theory = p->b_cfg * nall;
	s_plan = p->s * nall < c->max_sampling_size ? p->s * nall : c->max_sampling_size;
	k = nall < s_plan ? nall : s_plan;
	p->inst = calloc(k, sizeof(*p->inst));
	p->share = calloc(k, sizeof(*p->share));
	if (!p->inst || !p->share)
		return false;
	start = k < nall ? (size_t)(r->rotation % nall) : 0; /* a partial plan covers the others next time */
	r->rotation += k < nall ? k : 0;
	for (size_t i = 0; i < k; i++)
		p->inst[i] = all[(start + i) % nall];
	p->n = (size_t)k;
	p->nall = nall;
	base = (s_plan + 1) / 2 > k ? (s_plan + 1) / 2 : k;
	for (size_t i = 0; i < p->n; i++)
		p->share[i] = base / k + (i < base % k);
	share_extra(p, s_plan - base);
	for (size_t i = 0; i < p->n; i++) {
		p->share[i] = p->share[i] > SIZE_LIMIT ? SIZE_LIMIT : p->share[i];
		p->s_effective += p->share[i];
	}
	return true;
}

static void plan_free(struct plan *p)
{
	free(p->inst);
	free(p->share);
}

/*
 * Up to share of inst's least recently written blocks that are not wholly being deleted already (those are bounded
 * by the pending limits and skipped), those with a location in scope appended to out.
 */
static size_t sample(struct instance *inst, size_t share, const struct water *w, struct cand *out, uint64_t *sampled)
{
	size_t seen = 0, found = 0, visits = 0, cap = 4 * share + 1024;

	for (struct list *it = inst->lru.next; it != &inst->lru && seen < share && visits < cap;
	     it = it->next, visits++) {
		struct block *b = list_entry(it, struct block, lru_link);
		bool live = false, pick = false;

		for (const struct location *l = b->locs; l; l = l->next) {
			live = live || !l->pending;
			pick = pick || in_scope(l, w);
		}
		if (!live)
			continue;
		seen++;
		if (pick)
			out[found++] = (struct cand){inst, b};
	}
	*sampled += seen;
	return found;
}

static int by_age(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;
	int c;

	if (a->b->lru_time_us != b->b->lru_time_us)
		return a->b->lru_time_us < b->b->lru_time_us ? -1 : 1;
	if ((c = strcmp(a->inst->id, b->inst->id)))
		return c;
	return (a->b->key > b->b->key) - (a->b->key < b->b->key);
}

/*
 * Submits the oldest candidates, one request per run of one instance's blocks (at most del_batch_size), checking
 * before each that the group is still over its level in the same scope. Returns whether a request went out.
 */
static bool submit_oldest(struct reclaimer *r, struct group *g, const struct water *w, struct cand *c, size_t n)
{
	const struct kvcm_reclaim_conf *conf = &r->k->conf.reclaim;
	uint64_t delay = g->delay_before_delete_ms > 0 ? (uint64_t)g->delay_before_delete_ms : 0;
	size_t per = conf->del_batch_size < SIZE_LIMIT ? conf->del_batch_size : SIZE_LIMIT, requests = 0;
	struct reclaim_pick pick = {in_scope, NULL};
	struct block **blocks = calloc(per + 1, sizeof(*blocks));
	struct water now;
	bool progress = false;

	for (size_t i = 0, j; blocks && i < n; i = j) {
		int rc;

		for (j = i; j < n && c[j].inst == c[i].inst && j - i < per; j++)
			blocks[j - i] = c[j].b;
		water_of(r, g, &now);
		if (requests == conf->max_requests) {
			r->n.request_limit_stops++;
			break;
		}
		if (!exceeded(&now)) {
			r->n.watermark_stops++;
			break;
		}
		if (!same_scope(&now, w)) {
			r->n.scope_stops++;
			break;
		}
		pick.arg = &now;
		rc = reclaim_submit(r, c[i].inst, blocks, j - i, &pick, delay);
		requests++;
		r->n.delete_requests++;
		if (rc < 0) {
			r->n.backpressure_stops++;
			break;
		}
		r->n.submitted_blocks += (uint64_t)rc;
		progress = progress || rc > 0;
	}
	free(blocks);
	return progress;
}

/* One Group LRU pass over g, over its level as w says. Returns whether it submitted a request. */
static bool reclaim_group(struct reclaimer *r, struct group *g, const struct water *w)
{
	struct instance **all = NULL;
	size_t nall = effective_instances(r->k, g, w, &all), nc = 0, sel;
	struct cand *c = NULL;
	struct plan p;
	bool progress = false;

	if (!make_plan(r, all, nall, &p) || !(c = calloc(p.s_effective + 1, sizeof(*c))))
		goto out;
	r->n.plans++;
	r->n.partial_plans += p.n < p.nall;
	for (size_t i = 0; i < p.n; i++)
		nc += sample(p.inst[i], p.share[i], w, c + nc, &r->n.sampled_keys);
	r->n.candidates += nc;
	/* B_group: del_batch_size per instance, shrunk when the sample held few candidates (at least one) */
	sel = nc ? (size_t)((uint64_t)(nc < p.s_effective ? nc : p.s_effective) * p.b_cfg / p.s) : 0;
	sel = nc && !sel ? 1 : sel;
	sel = sel > p.b_theory ? (size_t)p.b_theory : sel;
	qsort(c, nc, sizeof(*c), by_age);
	r->n.selected_blocks += sel;
	progress = submit_oldest(r, g, w, c, sel);
out:
	plan_free(&p);
	free(c);
	free(all);
	return progress;
}

/* One round over every group; returns whether any request went out. */
static bool round_once(struct reclaimer *r)
{
	bool progress = false, stuck = false;

	reclaim_collect(r);
	for (struct list *it = r->k->groups.next; it != &r->k->groups; it = it->next) {
		struct group *g = list_entry(it, struct group, link);
		struct water w;
		bool done;

		water_of(r, g, &w);
		if (!exceeded(&w))
			continue;
		done = reclaim_group(r, g, &w);
		progress = progress || done;
		stuck = stuck || !done;
	}
	r->n.rounds++;
	r->n.backoffs += !progress && stuck;
	return progress;
}

static void arm(struct reclaimer *r, uint32_t ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	event_add(r->timer, &tv);
}

/* A round that made progress is followed by the next at once (the reference sleeps 0); else idle_interval_ms. */
static void tick(evutil_socket_t fd, short what, void *arg)
{
	struct reclaimer *r = arg;
	bool progress = false;

	for (int i = 0; i < ROUNDS_PER_TURN; i++)
		if (!(progress = round_once(r)))
			break;
	arm(r, progress ? 0 : r->k->conf.reclaim.idle_interval_ms);
}

void reclaim_run(struct kvcm *k)
{
	struct reclaimer *r = k->reclaimer;

	while (r && round_once(r))
		;
}

int reclaim_start(struct kvcm *k)
{
	struct reclaimer *r = calloc(1, sizeof(*r));

	if (!r)
		return MMC_ERROR;
	r->k = k;
	list_init(&r->requests);
	list_init(&r->accts);
	k->reclaimer = r;
	r->timer = evtimer_new(k->base, tick, r);
	if (!r->timer)
		return MMC_ERROR;
	arm(r, k->conf.reclaim.idle_interval_ms);
	return 0;
}

void reclaim_stop(struct kvcm *k)
{
	struct reclaimer *r = k->reclaimer;

	if (!r)
		return;
	if (r->timer)
		event_free(r->timer);
	reclaim_requests_free(r);
	free(r);
	k->reclaimer = NULL;
}

uint64_t reclaim_evicted(const struct kvcm *k)
{
	return k->reclaimer ? k->reclaimer->n.locations_submitted : 0;
}

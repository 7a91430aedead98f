/*
 * The reclaimer's delete requests in flight (the reference's DeleteHandler and its async-delete accounting): what
 * a request may take under the pending limits, the credit it gives its group's water level from submission until
 * its deletes complete or kvcm.cache_reclaimer.inflight_delete_timeout_ms after its delay, and what it holds of the
 * limits until it completes (an expired credit does not give that back).
 */
#include "reclaim_state.h"

#include <stdlib.h>
#include <string.h>

#include "block_index.h"
#include "block_record.h"
#include "clock.h"
#include "deleter.h"
#include "instance.h"
#include "kvcm_state.h"

static uint64_t sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

struct reclaim_acct *reclaim_acct(struct reclaimer *r, const char *group, bool create)
{
	struct reclaim_acct *a;

	for (struct list *it = r->accts.next; it != &r->accts; it = it->next) {
		a = list_entry(it, struct reclaim_acct, link);
		if (strcmp(a->group, group) == 0)
			return a;
	}
	if (!create || !(a = calloc(1, sizeof(*a))))
		return NULL;
	if (!(a->group = strdup(group))) {
		free(a);
		return NULL;
	}
	list_add_tail(&r->accts, &a->link);
	return a;
}

static void reject(struct reclaimer *r, struct reclaim_acct *a, int slot)
{
	a->limit_rejects[slot]++;
	r->n.limit_rejects++;
}

static uint64_t request_bytes(const struct reclaim_request *q)
{
	uint64_t n = 0;

	for (int t = 0; t < ST_COUNT; t++)
		n += q->bytes[t];
	return n;
}

/* Whether l still fits the group/type and process limits beside what q and the requests in flight hold. */
static bool fits(struct reclaimer *r, struct reclaim_acct *a, const struct reclaim_request *q, const struct location *l)
{
	const struct kvcm_reclaim_conf *c = &r->k->conf.reclaim;
	int t = l->type % ST_COUNT;

	if (a->pending_locs[t] + q->locs_by_type[t] >= c->pending_locations ||
	    a->pending_bytes[t] + q->bytes[t] + l->bytes > c->pending_type_bytes) {
		reject(r, a, t);
		return false;
	}
	if (r->pending_bytes + request_bytes(q) + l->bytes > c->pending_bytes) {
		reject(r, a, REJECT_PROCESS);
		return false;
	}
	return true;
}

/* Takes b's locations pick accepts into q (and their pointers into pl); returns how many. */
static size_t take_block(struct reclaimer *r, struct reclaim_acct *a, struct reclaim_request *q, struct block *b,
                         const struct reclaim_pick *pick, struct location **pl)
{
	size_t all = 0, taken = 0;

	for (struct location *l = b->locs; l; l = l->next) {
		all++;
		if (l->pending) {
			r->n.pending_skipped++;
			continue;
		}
		if (!pick->fn(l, pick->arg) || !fits(r, a, q, l))
			continue;
		q->locs[q->nlocs].key = b->key;
		memcpy(q->locs[q->nlocs].id, l->id, sizeof(q->locs[0].id));
		pl[q->nlocs++] = l;
		q->bytes[l->type % ST_COUNT] += l->bytes;
		q->locs_by_type[l->type % ST_COUNT]++;
		taken++;
	}
	q->blocks += taken > 0;
	q->keys += taken && taken == all; /* only a block left with nothing will lose its key */
	return taken;
}

/* Hands q's locations to the deleter; those it could not take (out of memory) leave q. */
static void hand_over(struct reclaimer *r, struct reclaim_request *q, struct block *const *blocks, size_t n,
                      struct location **pl, uint64_t delay_ms)
{
	size_t kept = 0, i = 0;

	for (size_t bi = 0; bi < n; bi++) {
		size_t first = i;

		for (; i < q->nlocs && q->locs[i].key == blocks[bi]->key; i++) {
			deleter_submit(r->k, q->inst, blocks[bi], pl[i], delay_ms);
			if (pl[i]->pending) {
				q->locs[kept++] = q->locs[i];
				continue;
			}
			q->bytes[pl[i]->type % ST_COUNT] -= pl[i]->bytes;
			q->locs_by_type[pl[i]->type % ST_COUNT]--;
		}
		if (i > first)
			block_record_put(r->k, q->inst, blocks[bi]);
	}
	q->nlocs = kept;
}

static void credit(struct reclaimer *r, struct reclaim_request *q, bool on)
{
	struct reclaim_acct *a = q->acct;

	for (int t = 0; t < ST_COUNT; t++)
		a->credit_bytes[t] = on ? a->credit_bytes[t] + q->bytes[t] : sub(a->credit_bytes[t], q->bytes[t]);
	a->credit_keys = on ? a->credit_keys + q->keys : sub(a->credit_keys, q->keys);
	q->credit = on;
}

/* q holds (on) or gives back its part of the pending limits. */
static void hold(struct reclaimer *r, struct reclaim_request *q, bool on)
{
	struct reclaim_acct *a = q->acct;
	uint64_t bytes = request_bytes(q);

	for (int t = 0; t < ST_COUNT; t++) {
		a->pending_locs[t] =
		    on ? a->pending_locs[t] + q->locs_by_type[t] : sub(a->pending_locs[t], q->locs_by_type[t]);
		a->pending_bytes[t] = on ? a->pending_bytes[t] + q->bytes[t] : sub(a->pending_bytes[t], q->bytes[t]);
		a->seen[t] = a->seen[t] || q->locs_by_type[t];
	}
	r->pending_requests = on ? r->pending_requests + 1 : sub(r->pending_requests, 1);
	r->pending_bytes = on ? r->pending_bytes + bytes : sub(r->pending_bytes, bytes);
	r->pending_locs = on ? r->pending_locs + q->nlocs : sub(r->pending_locs, q->nlocs);
}

static void start(struct reclaimer *r, struct reclaim_request *q, uint64_t delay_ms)
{
	q->submitted_ms = clock_ms();
	q->credit_deadline_ms = q->submitted_ms + delay_ms + r->k->conf.reclaim.credit_timeout_ms;
	credit(r, q, true);
	hold(r, q, true);
	instance_hold(q->inst);
	list_add_tail(&r->requests, &q->link);
	r->n.requests_submitted++;
	r->n.jobs++;
	r->n.blocks_submitted += q->blocks;
	r->n.locations_submitted += q->nlocs;
}

static void request_free(struct reclaim_request *q)
{
	if (q)
		free(q->locs);
	free(q);
}

int reclaim_submit(struct reclaimer *r, struct instance *inst, struct block *const *blocks, size_t n,
                   const struct reclaim_pick *pick, uint64_t delay_ms)
{
	const struct kvcm_reclaim_conf *c = &r->k->conf.reclaim;
	struct reclaim_acct *a = reclaim_acct(r, inst->group->name, true);
	struct reclaim_request *q = NULL;
	struct location **pl = NULL;
	size_t total = 0;
	int rc = 0;

	if (!a)
		return 0;
	if (r->pending_requests >= c->pending_requests || r->pending_bytes >= c->pending_bytes) {
		reject(r, a, REJECT_PROCESS);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		for (const struct location *l = blocks[i]->locs; l; l = l->next)
			total++;
	q = calloc(1, sizeof(*q));
	pl = calloc(total + 1, sizeof(*pl));
	if (!q || !pl || !(q->locs = calloc(total + 1, sizeof(*q->locs))))
		goto out;
	q->inst = inst;
	q->acct = a;
	for (size_t i = 0; i < n; i++)
		take_block(r, a, q, blocks[i], pick, pl);
	hand_over(r, q, blocks, n, pl, delay_ms);
	if (q->nlocs) {
		rc = (int)q->blocks;
		start(r, q, delay_ms);
		q = NULL;
	}
out:
	request_free(q);
	free(pl);
	return rc;
}

/* Every location of q deleted: it lets go of its credit, its part of the limits and its instance. */
static void complete(struct reclaimer *r, struct reclaim_request *q)
{
	r->n.requests_completed++;
	r->n.blocks_deleted += q->blocks;
	r->n.locations_deleted += q->nlocs;
	if (q->credit)
		credit(r, q, false);
	hold(r, q, false);
	list_del(&q->link);
	instance_release(r->k, q->inst);
	request_free(q);
}

/* Whether loc is gone from the index (the deleter finalized it). */
static bool deleted(const struct instance *inst, const struct reclaim_loc *loc)
{
	struct block *b = block_find(inst, loc->key);
	return !b || !location_find_as(b, loc->id, true);
}

void reclaim_collect(struct reclaimer *r)
{
	uint64_t now = clock_ms();
	struct list *it = r->requests.next;

	while (it != &r->requests) {
		struct reclaim_request *q = list_entry(it, struct reclaim_request, link);

		it = it->next;
		while (q->done < q->nlocs && deleted(q->inst, &q->locs[q->done]))
			q->done++;
		if (q->done == q->nlocs) {
			complete(r, q);
		} else if (q->credit && now >= q->credit_deadline_ms) {
			credit(r, q, false); /* the deletes go on and keep their part of the limits */
			r->n.credit_timeouts++;
		}
	}
}

void reclaim_requests_free(struct reclaimer *r)
{
	while (!list_empty(&r->requests)) {
		struct reclaim_request *q = list_entry(r->requests.next, struct reclaim_request, link);

		list_del(&q->link);
		instance_release(r->k, q->inst);
		request_free(q);
	}
	while (!list_empty(&r->accts)) {
		struct reclaim_acct *a = list_entry(r->accts.next, struct reclaim_acct, link);

		list_del(&a->link);
		free(a->group);
		free(a);
	}
}

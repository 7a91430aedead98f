/*
 * getCacheLocation and getCacheLocationLen (reference kvcm.md §4.3-4.4): prefix match, batch get and the
 * reverse-rolling sliding window. Only SERVING locations on available storages (whose data the pool still has,
 * for mmc; whose files exist, for dummy) are hits; a key's hits on one storage are shown merged, as one location.
 * Locations whose data is lost are pruned once the reply is written; when the query met any, the keys after
 * a prefix's end are checked too, so that one query prunes them all (the reference's aggressive prune).
 * Without query_type the instance's default_query_type is used, else QT_PREFIX_MATCH.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "block_index.h"
#include "cache_location.h"
#include "fault_injection.h"
#include "kvcm_state.h"
#include "metrics.h"
#include "reporter.h"

static bool er_hit(struct call *c, struct block *b, const struct spec_filter *f)
{
	for (struct location *l = b->locs; l; l = l->next)
		if (l->er_key && er_location_visible(c->k, c->inst, l) && (!f->n || filter_count(l, f)))
			return true;
	return false;
}

/* Whether the merged view of b, winner l, keeps a spec. */
static bool merged_kept(struct call *c, struct block *b, struct location *l, const struct spec_filter *f)
{
	struct location *set[LOCATION_MERGE_MAX];
	size_t n;

	if (!f->n)
		return true;
	n = location_merge_set(c->k, b, l, set, LOCATION_MERGE_MAX);
	for (size_t i = 0; i < n; i++)
		if (filter_count(set[i], f))
			return true;
	return false;
}

static bool hit(struct call *c, struct location_query *q, int64_t key, struct row *row)
{
	const struct spec_filter *f = &q->filter;
	struct block *b = block_find(c->inst, key);
	struct location *l;

	if (b)
		prune_note(&q->prune, b);
	l = b ? location_pick(c->k, b) : NULL;
	*row = (struct row){NULL, NULL, NULL};
	if (l && merged_kept(c, b, l, f))
		*row = (struct row){l, b, NULL};
	else if (b && er_hit(c, b, f))
		row->er = b;
	return row->loc || row->er;
}

/* A data-storage hit: its location, or its block's locations on that storage merged. */
static void put_hit(struct call *c, const struct row *row, const struct spec_filter *f, const struct loc_enc *e,
                    void *out)
{
	struct location *set[LOCATION_MERGE_MAX];
	size_t n = location_merge_set(c->k, row->b, row->loc, set, LOCATION_MERGE_MAX);

	if (n == 1)
		loc_put(e, out, row->loc, f);
	else
		loc_put_merged(e, out, set, n, f);
}

/* One row for a key reported on several mediums or hosts: their visible specs together. */
static void put_er_row(struct call *c, struct block *b, const struct spec_filter *f, const struct loc_enc *e, void *out)
{
	struct location *first = NULL;
	uint16_t n = 0;

	for (struct location *l = b->locs; l; l = l->next) {
		if (l->er_key && er_location_visible(c->k, c->inst, l) && (!f->n || filter_count(l, f))) {
			first = first ? first : l;
			n += filter_count(l, f);
		}
	}
	e->begin(out, first->type, n);
	for (struct location *l = b->locs; l; l = l->next)
		if (l->er_key && er_location_visible(c->k, c->inst, l))
			loc_put_specs(e, out, l, f);
	/* the first of the merged locations */
	e->end(out, location_name(first), CLS_SERVING, first->create_time_us);
}

void cache_location_rows(struct call *c, const struct location_query *q, const struct loc_enc *e, void *out)
{
	for (size_t i = 0; i < q->nrows; i++) {
		if (q->rows[i].loc)
			put_hit(c, &q->rows[i], &q->filter, e, out);
		else if (q->rows[i].er)
			put_er_row(c, q->rows[i].er, &q->filter, e, out);
		else
			loc_put_placeholder(e, out, c->inst, &q->filter);
	}
}

static void prefix(struct call *c, struct location_query *q)
{
	size_t i;

	for (i = 0; i < q->n; i++) {
		if (mask_has(&q->mask, i))
			continue;
		if (!hit(c, q, q->keys[i], &q->rows[q->nrows]))
			break;
		q->nrows++;
	}
	q->hits = q->nrows;
	for (i++; q->prune.n && i < q->n; i++) { /* the rest of a stale chain goes in this same pass */
		struct block *b = mask_has(&q->mask, i) ? NULL : block_find(c->inst, q->keys[i]);

		if (b)
			prune_note(&q->prune, b);
	}
}

static void batch(struct call *c, struct location_query *q)
{
	for (size_t i = 0; i < q->n; i++)
		q->hits += hit(c, q, q->keys[i], &q->rows[i]);
	q->nrows = q->n;
}

/* The right-most window of sw_size consecutive hits; every other row is a placeholder. */
static void reverse_roll(struct call *c, struct location_query *q)
{
	size_t sw = (size_t)q->sw_size;
	ptrdiff_t base = (ptrdiff_t)(q->n - sw);

	q->nrows = q->n;
	while (base >= 0) {
		size_t o;

		for (o = 0; o < sw; o++)
			if (!hit(c, q, q->keys[base + (ptrdiff_t)o], &q->rows[base + (ptrdiff_t)o]))
				break;
		if (o == sw) {
			q->hits = sw;
			return;
		}
		memset(&q->rows[base], 0, (o + 1) * sizeof(*q->rows));
		/* no window containing the miss can match: the next one ends just before it */
		base = base + (ptrdiff_t)o - (ptrdiff_t)sw;
	}
}

static int effective_type(const struct call *c, int requested)
{
	int d = c->inst->default_query_type;

	if (requested != QT_UNSPECIFIED)
		return requested;
	return d == QT_BATCH_GET || d == QT_PREFIX_MATCH || d == QT_REVERSE_ROLL_SW_MATCH ? d : QT_PREFIX_MATCH;
}

void location_query_json(struct call *c, struct location_query *q, bool with_mask)
{
	q->query_type = jd_enum(&q->head, c->body, "query_type", &enum_query_type);
	q->sw_size = jd_i32(&q->head, c->body, "sw_size");
	q->filter.n = jd_strs(&q->head, c->body, "location_spec_names", &q->filter_mem, LOCATION_SPEC_NAMES_MAX);
	q->filter.names = q->filter_mem;
	spec_filter_sort(&q->filter);
	if (with_mask)
		mask_read(&q->in_mask, c->body, "block_mask", c->k->conf.max_keys, &q->mask);
	key_input_json(c, &q->in_keys);
}

static void query(struct call *c, struct location_query *q)
{
	if (q->type == QT_PREFIX_MATCH)
		prefix(c, q);
	else if (q->type == QT_BATCH_GET)
		batch(c, q);
	else
		reverse_roll(c, q);
	metrics_queried(c->k->metrics, q->n, q->hits);
}

bool location_query_run(struct call *c, struct location_query *q, const char *api)
{
	if (fault_check(c, api))
		return false;
	q->type = effective_type(c, q->query_type);
	if (call_input_failed(c, &q->head) || call_input_failed(c, &q->in_mask) ||
	    !keys_resolve(c, api, &q->in_keys, &q->keys, &q->n))
		return false;
	if (q->type == QT_REVERSE_ROLL_SW_MATCH && (q->sw_size <= 0 || (size_t)q->sw_size > q->n)) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {%s: {sw_size (must be in 1..%zu)}}", api,
		          q->n);
		return false;
	}
	if (q->type != QT_PREFIX_MATCH && q->type != QT_BATCH_GET && q->type != QT_REVERSE_ROLL_SW_MATCH) {
		call_fail(c, KC_INTERNAL_ERROR, "unknown query type %d", q->type);
		return false;
	}
	q->rows = calloc(q->n, sizeof(*q->rows));
	if (!q->rows) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return false;
	}
	query(c, q);
	return true;
}

bool cache_location_answer(struct call *c, struct location_query *q)
{
	if (!location_query_run(c, q, "GetCacheLocation"))
		return false;
	call_ok(c, "Cache locations retrieved successfully");
	return true;
}

void location_query_free(struct call *c, struct location_query *q)
{
	if (c->inst)
		prune_apply(c->k, c->inst, &q->prune);
	free(q->prune.v);
	key_input_free(&q->in_keys);
	free(q->filter_mem);
	free(q->rows);
	mask_free(&q->mask);
}

/* The newest reference's replication members: no hints and no capability here (no node-aware storage). */
static void no_replication(struct jw *w)
{
	jw_key(w, "hints");
	jw_arr(w);
	jw_arr_end(w);
	jw_kint(w, "replication_capabilities", 0);
}

void api_get_cache_location(struct call *c)
{
	struct location_query q = {0};
	struct jw *o = &c->out;

	location_query_json(c, &q, true);
	if (cache_location_answer(c, &q)) {
		jw_key(o, "locations");
		jw_arr(o);
		cache_location_rows(c, &q, &loc_json, o);
		jw_arr_end(o);
		no_replication(o);
	}
	location_query_free(c, &q);
}

void api_get_cache_location_empty(struct jw *w)
{
	jw_key(w, "locations");
	jw_arr(w);
	jw_arr_end(w);
	no_replication(w);
}

void api_get_cache_location_len(struct call *c)
{
	struct location_query q = {0};

	location_query_json(c, &q, false);
	if (location_query_run(c, &q, "GetCacheLocationLen")) {
		call_ok(c, "Cache location length retrieved successfully");
		jw_ki64s(&c->out, "cache_location_len", (int64_t)q.hits);
	}
	location_query_free(c, &q);
}

void api_get_cache_location_len_empty(struct jw *w)
{
	jw_ki64s(w, "cache_location_len", 0);
}

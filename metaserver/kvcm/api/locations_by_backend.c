/*
 * getCacheLocationsByBackend (reference kvcm.md §4.5): per key, at most one location per backend selector.
 * Data-storage selectors come first; for event-report types LSS_V6D_PREFIX picks the one peer with the longest
 * prefix (data-storage hits carry it on), LSS_V6D_COVERAGE the peer filling the most keys still uncovered, other
 * strategies any live peer per key; ties go to the smaller host name. location_spec_names filters candidates
 * before peers are chosen (a location qualifies with any requested spec) and projects the output.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "block_index.h"
#include "kvcm_state.h"
#include "location_json.h"
#include "reporter.h"
#include "request_keys.h"

#define SELECTORS_MAX 16

struct selector {
	int type, strategy;
};

struct by_backend {
	struct call *c;
	int64_t *keys;
	size_t n;
	struct spec_filter f;
	struct location **out; /* n x nsel */
	size_t nsel;
};

static bool qualifies(const struct by_backend *q, const struct location *l)
{
	return !q->f.n || filter_count(l, &q->f);
}

/* The visible location of host (any host when NULL) of event-report type for key i. */
static struct location *er_of(struct by_backend *q, size_t i, int type, const char *host)
{
	struct block *b = block_find(q->c->inst, q->keys[i]);
	struct location *best = NULL;
	char h[KVCM_NAME_MAX], bh[KVCM_NAME_MAX] = "";

	for (struct location *l = b ? b->locs : NULL; l; l = l->next) {
		if (!l->er_key || l->type != type || !er_location_host(l, h, sizeof(h), NULL, 0) ||
		    (host && strcmp(h, host) != 0) || !qualifies(q, l) || !er_location_visible(q->c->k, q->c->inst, l))
			continue;
		if (!best || strcmp(h, bh) < 0) {
			best = l;
			memcpy(bh, h, sizeof(bh));
		}
	}
	return best;
}

static bool covered(const struct by_backend *q, size_t i)
{
	for (size_t s = 0; s < q->nsel; s++)
		if (q->out[i * q->nsel + s])
			return true;
	return false;
}

static void data_selector(struct by_backend *q, size_t s, int type)
{
	for (size_t i = 0; i < q->n; i++) {
		struct block *b = block_find(q->c->inst, q->keys[i]);

		for (struct location *l = b ? b->locs : NULL; l; l = l->next) {
			if (l->type == type && l == location_pick(q->c->k, b) && qualifies(q, l)) {
				q->out[i * q->nsel + s] = l;
				break;
			}
		}
	}
}

/* How a peer scores: its prefix (PREFIX) or the uncovered keys it fills (COVERAGE). */
static size_t score(struct by_backend *q, const struct selector *sel, const char *host)
{
	size_t n = 0;

	for (size_t i = 0; i < q->n; i++) {
		bool has = er_of(q, i, sel->type, host) != NULL;

		if (sel->strategy == LSS_V6D_PREFIX) {
			if (!has && !covered(q, i))
				break;
			n++;
		} else {
			n += has && !covered(q, i);
		}
	}
	return n;
}

static void peer_selector(struct by_backend *q, size_t s, const struct selector *sel)
{
	const char *best = NULL;
	size_t best_score = 0, limit = q->n;

	for (struct reporter *r = reporter_first(q->c->k); r; r = r->next) {
		size_t sc;

		if (r->inst != q->c->inst || r->type != sel->type || r->tombstone || !r->available)
			continue;
		sc = score(q, sel, r->host);
		if (sc > best_score || (sc == best_score && sc && best && strcmp(r->host, best) < 0)) {
			best = r->host;
			best_score = sc;
		}
	}
	if (!best)
		return;
	if (sel->strategy == LSS_V6D_PREFIX)
		limit = score(q, sel, best);
	for (size_t i = 0; i < limit; i++)
		q->out[i * q->nsel + s] = er_of(q, i, sel->type, best);
}

static void run_selector(struct by_backend *q, size_t s, const struct selector *sel)
{
	if (sel->type != ST_EVENT_REPORT_L1P5 && sel->type != ST_EVENT_REPORT_L2) {
		data_selector(q, s, sel->type);
	} else if (sel->strategy == LSS_V6D_PREFIX || sel->strategy == LSS_V6D_COVERAGE) {
		peer_selector(q, s, sel);
	} else {
		for (size_t i = 0; i < q->n; i++)
			q->out[i * q->nsel + s] = er_of(q, i, sel->type, NULL);
	}
}

/* Reads backend_selectors, data storages first (event-report ones keep their order after them). */
static size_t selectors(struct call *c, struct selector *sel)
{
	json_t *a = jd_arr(&c->d, c->body, "backend_selectors"), *e;
	size_t n = 0, i;

	json_array_foreach(a, i, e)
	{
		if (n == SELECTORS_MAX || !json_is_object(e))
			return 0;
		sel[n].type = jd_enum(&c->d, e, "backend_type", &enum_storage_type);
		sel[n].strategy = jd_enum(&c->d, e, "strategy", &enum_select_strategy);
		if (!enum_name(&enum_storage_type, sel[n].type) || sel[n].type == ST_UNSPECIFIED)
			return 0;
		n++;
	}
	for (size_t x = 1; x < n; x++) /* stable: data types before event-report types */
		for (size_t y = x;
		     y > 0 && sel[y - 1].type >= ST_EVENT_REPORT_L1P5 && sel[y - 1].type <= ST_EVENT_REPORT_L2 &&
		     !(sel[y].type >= ST_EVENT_REPORT_L1P5 && sel[y].type <= ST_EVENT_REPORT_L2);
		     y--) {
			struct selector t = sel[y];

			sel[y] = sel[y - 1];
			sel[y - 1] = t;
		}
	return n;
}

static void reply(struct by_backend *q)
{
	struct jw *o = &q->c->out;

	call_ok(q->c, "Cache locations retrieved successfully");
	jw_key(o, "key_locations");
	jw_arr(o);
	for (size_t i = 0; i < q->n; i++) {
		jw_obj(o);
		jw_key(o, "locations");
		jw_arr(o);
		for (size_t s = 0; s < q->nsel; s++)
			if (q->out[i * q->nsel + s])
				jw_location(o, q->out[i * q->nsel + s], &q->f);
		jw_arr_end(o);
		jw_obj_end(o);
	}
	jw_arr_end(o);
}

void api_get_cache_locations_by_backend(struct call *c)
{
	struct by_backend q = {.c = c};
	struct selector sel[SELECTORS_MAX];
	int qt = jd_enum(&c->d, c->body, "query_type", &enum_query_type);

	q.nsel = selectors(c, sel);
	q.f.n = jd_strs(&c->d, c->body, "location_spec_names", &q.f.names, 4096);
	spec_filter_sort(&q.f);
	if (call_decode_failed(c))
		goto out;
	if ((qt != QT_UNSPECIFIED && qt != QT_BATCH_GET) || !q.nsel) {
		call_fail(c, KC_INVALID_ARGUMENT,
		          "getCacheLocationsByBackend needs QT_BATCH_GET and known backend "
		          "selectors");
		goto out;
	}
	if (!call_keys(c, "GetCacheLocationsByBackend", &q.keys, &q.n))
		goto out;
	q.out = calloc(q.n * q.nsel + 1, sizeof(*q.out));
	if (!q.out) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		goto out;
	}
	for (size_t s = 0; s < q.nsel; s++)
		run_selector(&q, s, &sel[s]);
	reply(&q);
out:
	free(q.out);
	free(q.keys);
	free(q.f.names);
}

void api_get_cache_locations_by_backend_empty(struct jw *w)
{
	jw_key(w, "key_locations");
	jw_arr(w);
	jw_arr_end(w);
}

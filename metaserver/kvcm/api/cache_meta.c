/*
 * getCacheMeta and getCacheMetaDetail (reference kvcm.md §4.10-4.11): raw metadata of every unmasked key, any
 * status, no selection. Each row is built from its own key only (the reference leaks the previous key's id into
 * a miss's meta string; we do not).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "api.h"
#include "block_index.h"
#include "kvcm_state.h"
#include "location_json.h"
#include "request_keys.h"

static void meta_string(struct jw *w, const struct location *l)
{
	struct jw m;
	size_t len;
	char *s;

	jw_init(&m);
	jw_obj(&m);
	if (l)
		jw_kstr(&m, "id", location_name(l));
	jw_kstr(&m, "status", enum_name(&enum_cls, l ? l->status : CLS_NOT_FOUND));
	jw_obj_end(&m);
	s = jw_take(&m, &len);
	jw_strn(w, s ? s : "{}", s ? len : 2);
	free(s);
}

static void empty_location(struct jw *w)
{
	jw_obj(w);
	jw_kstr(w, "type", "ST_UNSPECIFIED");
	jw_kint(w, "spec_size", 0);
	jw_key(w, "location_specs");
	jw_arr(w);
	jw_arr_end(w);
	jw_location_end(w, "", CLS_NOT_FOUND, 0);
}

/* The request of both APIs; false when the call has been answered (m is then freed). */
static bool read_request(struct call *c, const char *api, int64_t **keys, size_t *n, struct mask *m)
{
	jd_i32(&c->d, c->body, "detail_level"); /* accepted, ignored */
	if (call_decode_failed(c) || !call_mask(c, c->body, "block_mask", m))
		return false;
	if (call_keys(c, api, keys, n))
		return true;
	mask_free(m);
	return false;
}

/* The newest reference's full replica set of each unmasked key (locations keeps only the first): every location,
 * any status, and an empty list for a miss. */
static void replica_locations(struct call *c, const int64_t *keys, size_t n, const struct mask *m)
{
	struct jw *o = &c->out;

	jw_key(o, "replica_locations");
	jw_arr(o);
	for (size_t i = 0; i < n; i++) {
		struct block *b = mask_has(m, i) ? NULL : block_find(c->inst, keys[i]);

		if (mask_has(m, i))
			continue;
		jw_obj(o);
		jw_key(o, "locations");
		jw_arr(o);
		for (struct location *l = b ? b->locs : NULL; l; l = l->next)
			jw_location(o, l, NULL);
		jw_arr_end(o);
		jw_obj_end(o);
	}
	jw_arr_end(o);
}

void api_get_cache_meta(struct call *c)
{
	struct jw *o = &c->out;
	int64_t *keys;
	size_t n;
	struct mask m;

	if (!read_request(c, "GetCacheMeta", &keys, &n, &m))
		return;
	call_ok(c, "Cache metadata retrieved successfully");
	jw_key(o, "locations");
	jw_arr(o);
	for (size_t i = 0; i < n; i++) {
		struct block *b = mask_has(&m, i) ? NULL : block_find(c->inst, keys[i]);

		if (mask_has(&m, i))
			continue;
		if (b && b->locs)
			jw_location(o, b->locs, NULL);
		else
			empty_location(o);
	}
	jw_arr_end(o);
	jw_key(o, "metas");
	jw_arr(o);
	for (size_t i = 0; i < n; i++) {
		struct block *b = mask_has(&m, i) ? NULL : block_find(c->inst, keys[i]);

		if (!mask_has(&m, i))
			meta_string(o, b ? b->locs : NULL);
	}
	jw_arr_end(o);
	replica_locations(c, keys, n, &m);
	free(keys);
	mask_free(&m);
}

void api_get_cache_meta_empty(struct jw *w)
{
	jw_key(w, "locations");
	jw_arr(w);
	jw_arr_end(w);
	jw_key(w, "metas");
	jw_arr(w);
	jw_arr_end(w);
	jw_key(w, "replica_locations");
	jw_arr(w);
	jw_arr_end(w);
}

static void detail_item(struct jw *o, const struct block *b, size_t index, int64_t key)
{
	char prev[24] = "";

	if (b && b->has_prev)
		snprintf(prev, sizeof(prev), "%" PRId64, b->prev_key);
	jw_obj(o);
	jw_key(o, "status");
	jw_obj(o);
	jw_kstr(o, "code", "OK");
	jw_kstr(o, "message", "");
	jw_obj_end(o);
	jw_kint(o, "request_index", (long long)index);
	jw_ki64s(o, "block_key", key);
	jw_kstr(o, "prev_block_key", prev);
	jw_key(o, "properties");
	jw_obj(o);
	if (b && b->locs)
		jw_kstr(o, "BP#prev_key", prev);
	jw_obj_end(o);
	jw_key(o, "locations");
	jw_arr(o);
	for (const struct location *l = b ? b->locs : NULL; l; l = l->next)
		jw_location_detail(o, l);
	if (!b || !b->locs)
		jw_location_detail(o, NULL);
	jw_arr_end(o);
	jw_obj_end(o);
}

void api_get_cache_meta_detail(struct call *c)
{
	struct jw *o = &c->out;
	int64_t *keys;
	size_t n;
	struct mask m;

	if (!read_request(c, "GetCacheMetaDetail", &keys, &n, &m))
		return;
	call_ok(c, "Cache metadata detail retrieved successfully");
	jw_key(o, "items");
	jw_arr(o);
	for (size_t i = 0; i < n; i++)
		if (!mask_has(&m, i))
			detail_item(o, block_find(c->inst, keys[i]), i, keys[i]);
	jw_arr_end(o);
	free(keys);
	mask_free(&m);
}

void api_get_cache_meta_detail_empty(struct jw *w)
{
	jw_key(w, "items");
	jw_arr(w);
	jw_arr_end(w);
}

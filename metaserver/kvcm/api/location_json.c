#include "location_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_enums.h"

bool spec_kept(const struct spec_filter *f, const char *name)
{
	if (!f || !f->n)
		return true;
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->names[i], name) == 0)
			return true;
	return false;
}

uint16_t filter_count(const struct location *l, const struct spec_filter *f)
{
	uint16_t n = 0;

	for (uint16_t j = 0; j < l->nspecs; j++)
		n += spec_kept(f, l->specs[j].name);
	return n;
}

void jw_spec_items(struct jw *w, const struct location *l, const struct spec_filter *f)
{
	for (uint16_t j = 0; j < l->nspecs; j++) {
		if (!spec_kept(f, l->specs[j].name))
			continue;
		jw_obj(w);
		jw_kstr(w, "name", l->specs[j].name);
		jw_kstr(w, "uri", l->specs[j].uri);
		jw_kstr(w, "node_id", ""); /* no storage here reports a node */
		jw_obj_end(w);
	}
}

static void specs(struct jw *w, const struct location *l, const struct spec_filter *f)
{
	jw_key(w, "location_specs");
	jw_arr(w);
	jw_spec_items(w, l, f);
	jw_arr_end(w);
}

static void render(struct jw *w, const struct location *l, const struct spec_filter *f)
{
	jw_obj(w);
	jw_kstr(w, "type", enum_name(&enum_storage_type, l->type));
	jw_kint(w, "spec_size", filter_count(l, f));
	specs(w, l, f);
	jw_obj_end(w);
}

void jw_location_end(struct jw *w, const char *id, int status, uint64_t create_time_us)
{
	jw_kstr(w, "id", id);
	jw_kstr(w, "status", enum_name(&enum_cls, status));
	jw_ki64s(w, "create_time", (int64_t)create_time_us);
	jw_obj_end(w);
}

/* Takes back the '}' just written, to add members after the last one. */
static void reopen(struct jw *w)
{
	if (!w->oom && w->len && w->buf[w->len - 1] == '}') {
		w->len--;
		w->comma = true;
	}
}

/* id, status and create_time follow the rendered (or cached) members: the status changes (WRITING -> SERVING)
 * after caching. */
static void with_state(struct jw *w, const struct location *l)
{
	reopen(w);
	jw_location_end(w, location_name(l), l->status, l->create_time_us);
}

void jw_location(struct jw *w, struct location *l, const struct spec_filter *f)
{
	struct jw one;
	size_t len;

	if (f && f->n) {
		render(w, l, f);
		with_state(w, l);
		return;
	}
	/* hot path: large prefix matches are mostly copies of these */
	if (!l->json) {
		jw_init(&one);
		render(&one, l, NULL);
		if (one.oom) {
			jw_free(&one);
			render(w, l, NULL);
			with_state(w, l);
			return;
		}
		l->json = jw_take(&one, &len);
		l->json_len = (uint32_t)len;
	}
	jw_raw(w, l->json, l->json_len);
	with_state(w, l);
}

struct named_spec {
	const struct loc_spec *spec;
	size_t order; /* the first location (then spec) holding a name wins */
};

static int by_name(const void *a, const void *b)
{
	const struct named_spec *x = a, *y = b;
	int c = strcmp(x->spec->name, y->spec->name);

	return c ? c : (x->order > y->order) - (x->order < y->order);
}

/* The kept specs of locs, one per name, in name order (as the reference's std::map). n in *count. */
static struct named_spec *merged_specs(struct location *const *locs, size_t n, const struct spec_filter *f,
                                       size_t *count)
{
	size_t total = 0, m = 0;
	struct named_spec *v;

	for (size_t i = 0; i < n; i++)
		total += locs[i]->nspecs;
	v = calloc(total + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		for (uint16_t j = 0; j < locs[i]->nspecs; j++)
			if (spec_kept(f, locs[i]->specs[j].name)) {
				v[m] = (struct named_spec){&locs[i]->specs[j], m};
				m++;
			}
	qsort(v, m, sizeof(*v), by_name);
	*count = 0;
	for (size_t i = 0; i < m; i++)
		if (!*count || strcmp(v[*count - 1].spec->name, v[i].spec->name) != 0)
			v[(*count)++] = v[i];
	return v;
}

void jw_merged_location(struct jw *w, struct location *const *locs, size_t n, const struct spec_filter *f)
{
	char id[KVCM_NAME_MAX + 16];
	size_t count = 0;
	struct named_spec *v = merged_specs(locs, n, f, &count);

	if (!v) {
		w->oom = true;
		return;
	}
	jw_obj(w);
	jw_kstr(w, "type", enum_name(&enum_storage_type, locs[0]->type));
	jw_kint(w, "spec_size", (long long)count);
	jw_key(w, "location_specs");
	jw_arr(w);
	for (size_t i = 0; i < count; i++) {
		jw_obj(w);
		jw_kstr(w, "name", v[i].spec->name);
		jw_kstr(w, "uri", v[i].spec->uri);
		jw_kstr(w, "node_id", "");
		jw_obj_end(w);
	}
	jw_arr_end(w);
	snprintf(id, sizeof(id), "%s_merged", location_name(locs[0]));
	jw_location_end(w, id, CLS_SERVING, locs[0]->create_time_us);
	free(v);
}

void jw_placeholder(struct jw *w, const struct instance *inst, const struct spec_filter *f)
{
	int n = 0;

	for (uint32_t j = 0; j < inst->nspecs; j++)
		n += spec_kept(f, inst->specs[j].name);
	jw_obj(w);
	jw_kstr(w, "type", "ST_UNSPECIFIED");
	jw_kint(w, "spec_size", n);
	jw_key(w, "location_specs");
	jw_arr(w);
	for (uint32_t j = 0; j < inst->nspecs; j++) {
		if (!spec_kept(f, inst->specs[j].name))
			continue;
		jw_obj(w);
		jw_kstr(w, "name", inst->specs[j].name);
		jw_kstr(w, "uri", "");
		jw_kstr(w, "node_id", "");
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_location_end(w, "", CLS_NOT_FOUND, 0);
}

void jw_location_detail(struct jw *w, const struct location *l)
{
	jw_obj(w);
	jw_kstr(w, "location_id", l ? location_name(l) : "");
	jw_kstr(w, "status", enum_name(&enum_cls, l ? l->status : CLS_NOT_FOUND));
	jw_kstr(w, "type", enum_name(&enum_storage_type, l ? l->type : ST_UNSPECIFIED));
	jw_kint(w, "spec_size", l ? l->nspecs : 0);
	jw_ki64s(w, "create_time", l ? (int64_t)l->create_time_us : 0);
	if (l) {
		specs(w, l, NULL);
	} else {
		jw_key(w, "location_specs");
		jw_arr(w);
		jw_arr_end(w);
	}
	jw_obj_end(w);
}

#include "location_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_enums.h"

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void spec_filter_sort(struct spec_filter *f)
{
	if (f->n > 1)
		qsort(f->names, f->n, sizeof(*f->names), cmp_name);
}

bool spec_kept(const struct spec_filter *f, const char *name)
{
	if (!f || !f->n)
		return true;
	return bsearch(&name, f->names, f->n, sizeof(*f->names), cmp_name) != NULL;
}

uint16_t filter_count(const struct location *l, const struct spec_filter *f)
{
	uint16_t n = 0;

	for (uint16_t j = 0; j < l->nspecs; j++)
		n += spec_kept(f, l->specs[j].name);
	return n;
}

void loc_put_specs(const struct loc_enc *e, void *out, const struct location *l, const struct spec_filter *f)
{
	for (uint16_t j = 0; j < l->nspecs; j++)
		if (spec_kept(f, l->specs[j].name))
			e->spec(out, l->specs[j].name, l->specs[j].uri);
}

void loc_put(const struct loc_enc *e, void *out, struct location *l, const struct spec_filter *f)
{
	if ((!f || !f->n) && e->whole) {
		e->whole(out, l);
		return;
	}
	e->begin(out, l->type, filter_count(l, f));
	loc_put_specs(e, out, l, f);
	e->end(out, location_name(l), l->status, l->create_time_us);
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

void loc_put_merged(const struct loc_enc *e, void *out, struct location *const *locs, size_t n,
                    const struct spec_filter *f)
{
	char id[KVCM_NAME_MAX + 16];
	size_t count = 0;
	struct named_spec *v = merged_specs(locs, n, f, &count);

	if (!v) {
		e->oom(out);
		return;
	}
	e->begin(out, locs[0]->type, (unsigned)count);
	for (size_t i = 0; i < count; i++)
		e->spec(out, v[i].spec->name, v[i].spec->uri);
	snprintf(id, sizeof(id), "%s_merged", location_name(locs[0]));
	e->end(out, id, CLS_SERVING, locs[0]->create_time_us);
	free(v);
}

void loc_put_placeholder(const struct loc_enc *e, void *out, const struct instance *inst, const struct spec_filter *f)
{
	unsigned n = 0;

	for (uint32_t j = 0; j < inst->nspecs; j++)
		n += spec_kept(f, inst->specs[j].name);
	e->begin(out, ST_UNSPECIFIED, n);
	for (uint32_t j = 0; j < inst->nspecs; j++)
		if (spec_kept(f, inst->specs[j].name))
			e->spec(out, inst->specs[j].name, "");
	e->end(out, "", CLS_NOT_FOUND, 0);
}

static void json_begin(void *out, int type, unsigned spec_size)
{
	struct jw *w = out;

	jw_obj(w);
	jw_kstr(w, "type", enum_name(&enum_storage_type, type));
	jw_kint(w, "spec_size", spec_size);
	jw_key(w, "location_specs");
	jw_arr(w);
}

static void json_spec(void *out, const char *name, const char *uri)
{
	struct jw *w = out;

	jw_obj(w);
	jw_kstr(w, "name", name);
	jw_kstr(w, "uri", uri);
	jw_kstr(w, "node_id", ""); /* no storage here reports a node */
	jw_obj_end(w);
}

static void json_end(void *out, const char *id, int status, uint64_t create_time_us)
{
	jw_arr_end(out);
	jw_location_end(out, id, status, create_time_us);
}

void jw_location_end(struct jw *w, const char *id, int status, uint64_t create_time_us)
{
	jw_kstr(w, "id", id);
	jw_kstr(w, "status", enum_name(&enum_cls, status));
	jw_ki64s(w, "create_time", (int64_t)create_time_us);
	jw_obj_end(w);
}

/* type, spec_size and location_specs, closed: what struct location.json keeps. */
static void render(struct jw *w, const struct location *l)
{
	json_begin(w, l->type, l->nspecs);
	loc_put_specs(&loc_json, w, l, NULL);
	jw_arr_end(w);
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

/* Hot path: large prefix matches are mostly copies of the kept rendering. id, status and create_time follow it:
 * the status changes (WRITING -> SERVING) after caching. */
static void json_whole(void *out, struct location *l)
{
	struct jw *w = out, one;
	size_t len;

	if (!l->json) {
		jw_init(&one);
		render(&one, l);
		if (one.oom) {
			jw_free(&one);
			render(w, l);
			reopen(w);
			jw_location_end(w, location_name(l), l->status, l->create_time_us);
			return;
		}
		l->json = jw_take(&one, &len);
		l->json_len = (uint32_t)len;
	}
	jw_raw(w, l->json, l->json_len);
	reopen(w);
	jw_location_end(w, location_name(l), l->status, l->create_time_us);
}

static void json_oom(void *out)
{
	((struct jw *)out)->oom = true;
}

const struct loc_enc loc_json = {json_begin, json_spec, json_end, json_whole, json_oom};

void jw_location(struct jw *w, struct location *l, const struct spec_filter *f)
{
	loc_put(&loc_json, w, l, f);
}

void jw_location_detail(struct jw *w, const struct location *l)
{
	jw_obj(w);
	jw_kstr(w, "location_id", l ? location_name(l) : "");
	jw_kstr(w, "status", enum_name(&enum_cls, l ? l->status : CLS_NOT_FOUND));
	jw_kstr(w, "type", enum_name(&enum_storage_type, l ? l->type : ST_UNSPECIFIED));
	jw_kint(w, "spec_size", l ? l->nspecs : 0);
	jw_ki64s(w, "create_time", l ? (int64_t)l->create_time_us : 0);
	jw_key(w, "location_specs");
	jw_arr(w);
	if (l)
		loc_put_specs(&loc_json, w, l, NULL);
	jw_arr_end(w);
	jw_obj_end(w);
}

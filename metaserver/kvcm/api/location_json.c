#include "location_json.h"

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

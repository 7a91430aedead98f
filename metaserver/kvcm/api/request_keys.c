#include "request_keys.h"

#include <stdlib.h>
#include <string.h>

#include "block_key.h"
#include "key_reader.h"
#include "kvcm_state.h"
#include "wire_enums.h"

bool call_keys(struct call *c, const char *api, int64_t **keys, size_t *n)
{
	int64_t *tokens = NULL;
	size_t nt;

	if (!key_reader_take(c, "block_keys", keys, n))
		*n = jd_i64s(&c->d, c->body, "block_keys", keys, c->k->conf.max_keys);
	if (!*n && !c->d.bad && !c->d.too_many) {
		nt = jd_i64s(&c->d, c->body, "token_ids", &tokens, (size_t)c->k->conf.max_keys * 64);
		if (nt && c->inst->block_size > 0 && nt / (size_t)c->inst->block_size > 0) {
			*keys = malloc(nt / (size_t)c->inst->block_size * sizeof(int64_t));
			if (*keys)
				*n = block_keys_from_tokens(tokens, nt, c->inst->block_size, *keys);
		}
		free(tokens);
		if (*n > c->k->conf.max_keys)
			c->d.too_many = true;
	}
	if (call_decode_failed(c)) {
		free(*keys);
		*keys = NULL;
		return false;
	}
	if (!*n) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {%s: {block_keys or token_ids}}", api);
		return false;
	}
	return true;
}

bool call_mask(struct call *c, json_t *obj, const char *name, struct mask *m)
{
	json_t *mo = jd_obj(&c->d, obj, name), *bm, *vals;

	memset(m, 0, sizeof(*m));
	if (!mo)
		return !call_decode_failed(c);
	bm = jd_obj(&c->d, mo, "bool_masks");
	if (jd_get(mo, "offset")) {
		m->kind = MASK_OFFSET;
		m->offset = jd_i32(&c->d, mo, "offset");
		if (bm) /* two members of one oneof */
			c->d.bad = true;
	} else if (bm) {
		m->kind = MASK_BOOLS;
		vals = jd_arr(&c->d, bm, "values");
		m->nvalues = vals ? json_array_size(vals) : 0;
		if (m->nvalues > c->k->conf.max_keys)
			c->d.too_many = true;
		else if (m->nvalues && !(m->values = calloc(m->nvalues, sizeof(bool))))
			c->d.too_many = true;
		for (size_t i = 0; m->values && i < m->nvalues; i++) {
			json_t *v = json_array_get(vals, i);

			if (!json_is_boolean(v))
				c->d.bad = true;
			m->values[i] = json_is_true(v);
		}
	}
	if (call_decode_failed(c)) {
		mask_free(m);
		return false;
	}
	return true;
}

void mask_free(struct mask *m)
{
	free(m->values);
	memset(m, 0, sizeof(*m));
}

void jw_mask(struct jw *w, const struct mask *m)
{
	jw_obj(w);
	if (m->kind == MASK_OFFSET) {
		jw_kint(w, "offset", m->offset);
	} else if (m->kind == MASK_BOOLS) {
		jw_key(w, "bool_masks");
		jw_obj(w);
		jw_key(w, "values");
		jw_arr(w);
		for (size_t i = 0; i < m->nvalues; i++)
			jw_bool(w, m->values[i]);
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_obj_end(w);
}

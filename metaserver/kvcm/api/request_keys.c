#include "request_keys.h"

#include <stdlib.h>
#include <string.h>

#include "block_key.h"
#include "key_reader.h"
#include "kvcm_state.h"
#include "wire_enums.h"

void key_input_json(struct call *c, struct key_input *in)
{
	int64_t *keys = NULL;

	memset(in, 0, sizeof(*in));
	if (!key_reader_take(c, "block_keys", &keys, &in->nblock))
		in->nblock = jd_i64s(&in->d, c->body, "block_keys", &keys, c->k->conf.max_keys);
	in->block_keys = in->mem[0] = keys;
	if (!in->nblock && !in->d.bad && !in->d.too_many) {
		in->ntokens = jd_i64s(&in->d, c->body, "token_ids", &keys, (size_t)c->k->conf.max_keys * 64);
		in->tokens = in->mem[1] = keys;
	}
}

/* The keys of the tokens, a block of block_size tokens each (a partial last block has none); 0 when none. */
static size_t derive(struct call *c, struct key_input *in)
{
	size_t bs = c->inst->block_size > 0 ? (size_t)c->inst->block_size : 0;

	if (!bs || in->ntokens / bs == 0 || !(in->mem[2] = malloc(in->ntokens / bs * sizeof(int64_t))))
		return 0;
	return block_keys_from_tokens(in->tokens, in->ntokens, c->inst->block_size, in->mem[2]);
}

bool keys_resolve(struct call *c, const char *api, struct key_input *in, const int64_t **keys, size_t *n)
{
	*keys = in->block_keys;
	*n = in->nblock;
	if (!*n && !in->d.bad && !in->d.too_many) {
		*n = derive(c, in);
		*keys = in->mem[2];
		in->d.too_many = *n > c->k->conf.max_keys;
	}
	if (call_input_failed(c, &in->d))
		return false;
	if (!*n) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {%s: {block_keys or token_ids}}", api);
		return false;
	}
	return true;
}

void key_input_free(struct key_input *in)
{
	for (size_t i = 0; i < 3; i++)
		free(in->mem[i]);
	memset(in, 0, sizeof(*in));
}

bool call_keys(struct call *c, const char *api, int64_t **keys, size_t *n)
{
	struct key_input in;
	const int64_t *k;
	bool ok;

	key_input_json(c, &in);
	ok = keys_resolve(c, api, &in, &k, n);
	*keys = NULL;
	for (size_t i = 0; ok && i < 3; i++) {
		if (in.mem[i] == k) { /* handed over */
			*keys = in.mem[i];
			in.mem[i] = NULL;
		}
	}
	key_input_free(&in);
	return ok;
}

void mask_read(struct jd *d, json_t *obj, const char *name, size_t max, struct mask *m)
{
	json_t *mo = jd_obj(d, obj, name), *bm, *vals;

	memset(m, 0, sizeof(*m));
	if (!mo)
		return;
	bm = jd_obj(d, mo, "bool_masks");
	if (jd_get(mo, "offset")) {
		m->kind = MASK_OFFSET;
		m->offset = jd_i32(d, mo, "offset");
		if (bm) /* two members of one oneof */
			d->bad = true;
	} else if (bm) {
		m->kind = MASK_BOOLS;
		vals = jd_arr(d, bm, "values");
		m->nvalues = vals ? json_array_size(vals) : 0;
		if (m->nvalues > max)
			d->too_many = true;
		else if (m->nvalues && !(m->values = calloc(m->nvalues, sizeof(bool))))
			d->too_many = true;
		for (size_t i = 0; m->values && i < m->nvalues; i++) {
			json_t *v = json_array_get(vals, i);

			if (!json_is_boolean(v))
				d->bad = true;
			m->values[i] = json_is_true(v);
		}
	}
	if (d->bad || d->too_many)
		mask_free(m);
}

bool call_mask(struct call *c, json_t *obj, const char *name, struct mask *m)
{
	mask_read(&c->d, obj, name, c->k->conf.max_keys, m);
	return !call_decode_failed(c);
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

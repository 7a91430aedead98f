/*
 * The block-key readers (key_reader.h), on the JSON lexer (json_lex.h). They accept a strict subset of JSON on which
 * their reading provably equals jansson's: an object of member names without escapes, the key array of plain integers
 * that fit an int64 (as jansson reads them: no fraction, no exponent, no leading zero), and other members that are
 * strings of printable ASCII without escapes, such integers, true or false. Anything else (null, nesting, escapes,
 * UTF-8, a duplicate member, an empty or oversized key array) is declined, and jansson reads the body as it always did.
 */
#include "key_reader.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "json_lex.h"
#include "kvcm_state.h"

struct key_list {
	const char *name;
	int64_t *keys;
	size_t n, cap;
};

/* What one body is read into. */
struct key_body {
	struct key_list *kl;
	json_t *top;
	size_t max;
};

static bool key(struct jlex *x, void *ctx)
{
	struct key_body *kb = ctx;
	struct key_list *kl = kb->kl;
	int64_t v, *k;

	if (kl->n == kb->max || !jlex_int64(x, &v))
		return false;
	if (!(k = array_grow(kl->keys, &kl->cap, kl->n + 1, sizeof(*k), 256)))
		return false;
	kl->keys = k;
	kl->keys[kl->n++] = v;
	return true;
}

/* Any other member: a scalar kept in top for the handler's usual decoding. */
static bool scalar(struct jlex *x, json_t *top, const char *k, size_t klen)
{
	const char *v;
	size_t len;
	int64_t i;
	bool b;
	json_t *j;

	if (json_object_getn(top, k, klen) || json_object_size(top) >= JLEX_KEPT_MEMBERS_MAX)
		return false;
	if (jlex_peek(x) == '"')
		j = jlex_plain(x, &v, &len) ? json_stringn_nocheck(v, len) : NULL;
	else if (jlex_bool(x, &b))
		j = json_boolean(b);
	else
		j = jlex_int64(x, &i) ? json_integer(i) : NULL;
	return j && json_object_setn_new_nocheck(top, k, klen, j) == 0;
}

/* The key array (once, not empty) or another member. */
static bool member(struct jlex *x, const char *k, size_t len, void *ctx)
{
	struct key_body *kb = ctx;

	if (!jlex_is(k, len, kb->kl->name))
		return scalar(x, kb->top, k, len);
	return !kb->kl->n && jlex_array(x, key, kb) && kb->kl->n;
}

static void release(void *parsed)
{
	struct key_list *kl = parsed;

	if (kl)
		free(kl->keys);
	free(kl);
}

static bool read_keys(struct call *c, const char *body, size_t len, const char *name)
{
	struct key_list *kl = calloc(1, sizeof(*kl));
	struct key_body kb = {kl, json_object(), c->k->conf.max_keys};
	struct jlex x;

	jlex_init(&x, body, len);
	if (kl && kb.top) {
		kl->name = name;
		if (jlex_object(&x, member, &kb) && jlex_done(&x) && kl->n) {
			c->body = kb.top;
			c->parsed = kl;
			return true;
		}
	}
	json_decref(kb.top);
	release(kl);
	return false;
}

static bool read_block_keys(struct call *c, const char *body, size_t len)
{
	return read_keys(c, body, len, "block_keys");
}

static bool read_block_cache_keys(struct call *c, const char *body, size_t len)
{
	return read_keys(c, body, len, "block_cache_keys");
}

const struct route_reader block_keys_reader = {read_block_keys, release};
const struct route_reader block_cache_keys_reader = {read_block_cache_keys, release};

bool key_reader_take(struct call *c, const char *name, int64_t **keys, size_t *n)
{
	struct key_list *kl = c->parsed;

	if (!kl || (c->route->reader != &block_keys_reader && c->route->reader != &block_cache_keys_reader) ||
	    strcmp(kl->name, name) != 0 || !kl->keys)
		return false;
	*keys = kl->keys;
	*n = kl->n;
	kl->keys = NULL;
	return true;
}

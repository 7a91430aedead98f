/*
 * The block-key readers (key_scan.h). They accept a strict subset of JSON on which their reading provably equals
 * jansson's: an object of member names without escapes, the key array of plain integers that fit an int64 (as
 * jansson reads them: no fraction, no exponent, no leading zero), and other members that are strings of printable
 * ASCII without escapes, such integers, true or false. Anything else (null, nesting, escapes, UTF-8, a duplicate
 * member, an empty or oversized key array) is declined, and jansson reads the body as it always did.
 */
#include "key_scan.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "kvcm_server.h"

struct key_list {
	const char *name;
	int64_t *keys;
	size_t n, cap;
};

struct kscan {
	const char *p, *end;
	size_t max;
};

static void ws(struct kscan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
		s->p++;
}

static bool lit(struct kscan *s, char c)
{
	ws(s);
	if (s->p == s->end || *s->p != c)
		return false;
	s->p++;
	return true;
}

/* A string as it stands in the body, len bytes from *v: printable ASCII without '\\' only. */
static bool plain_str(struct kscan *s, const char **v, size_t *len)
{
	const char *q;

	if (!lit(s, '"'))
		return false;
	for (q = s->p; q < s->end && *q >= 0x20 && *q <= 0x7e && *q != '"' && *q != '\\'; q++)
		;
	if (q == s->end || *q != '"')
		return false;
	*v = s->p;
	*len = (size_t)(q - s->p);
	s->p = q + 1;
	return true;
}

/* An integer token jansson would read as a json_int_t of the same value; "-0" is left to jansson. */
static bool integer(struct kscan *s, int64_t *out)
{
	bool neg;
	uint64_t u = 0, lim;
	const char *d;

	ws(s);
	neg = s->p < s->end && *s->p == '-';
	d = s->p + neg;
	lim = neg ? UINT64_C(1) << 63 : (uint64_t)INT64_MAX;
	if (d == s->end || *d < '0' || *d > '9' ||
	    (*d == '0' && (neg || (d + 1 < s->end && d[1] >= '0' && d[1] <= '9'))))
		return false;
	for (; d < s->end && *d >= '0' && *d <= '9'; d++) {
		if (u > (lim - (uint64_t)(*d - '0')) / 10)
			return false;
		u = u * 10 + (uint64_t)(*d - '0');
	}
	if (d < s->end && (*d == '.' || *d == 'e' || *d == 'E'))
		return false;
	*out = neg ? (int64_t)(0 - u) : (int64_t)u;
	s->p = d;
	return true;
}

static bool push(struct key_list *kl, int64_t v)
{
	int64_t *k = array_grow(kl->keys, &kl->cap, kl->n + 1, sizeof(*k), 256);

	if (!k)
		return false;
	kl->keys = k;
	kl->keys[kl->n++] = v;
	return true;
}

static bool key_array(struct kscan *s, struct key_list *kl)
{
	int64_t v;

	if (kl->n || !lit(s, '[') || lit(s, ']'))
		return false;
	do {
		if (kl->n == s->max || !integer(s, &v) || !push(kl, v))
			return false;
	} while (lit(s, ','));
	return lit(s, ']');
}

/* Any other member: a scalar kept in top for the handler's usual decoding. */
static bool scalar(struct kscan *s, json_t *top, const char *k, size_t klen)
{
	const char *v;
	size_t len;
	int64_t i;
	json_t *j;

	if (json_object_getn(top, k, klen))
		return false;
	ws(s);
	if (s->p == s->end)
		return false;
	if (*s->p == '"')
		j = plain_str(s, &v, &len) ? json_stringn_nocheck(v, len) : NULL;
	else if (s->end - s->p >= 4 && memcmp(s->p, "true", 4) == 0)
		j = (s->p += 4, json_true());
	else if (s->end - s->p >= 5 && memcmp(s->p, "false", 5) == 0)
		j = (s->p += 5, json_false());
	else
		j = integer(s, &i) ? json_integer(i) : NULL;
	return j && json_object_setn_new_nocheck(top, k, klen, j) == 0;
}

static bool members(struct kscan *s, json_t *top, struct key_list *kl)
{
	const char *k;
	size_t len;

	if (!lit(s, '{'))
		return false;
	do {
		if (!plain_str(s, &k, &len) || !lit(s, ':'))
			return false;
		if (len == strlen(kl->name) && memcmp(k, kl->name, len) == 0 ? !key_array(s, kl)
		                                                             : !scalar(s, top, k, len))
			return false;
	} while (lit(s, ','));
	if (!lit(s, '}'))
		return false;
	ws(s);
	return s->p == s->end && kl->n;
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
	struct kscan s = {body, body + len, c->k->conf.max_keys};
	struct key_list *kl = calloc(1, sizeof(*kl));
	json_t *top = json_object();

	if (kl && top) {
		kl->name = name;
		if (members(&s, top, kl)) {
			c->body = top;
			c->parsed = kl;
			return true;
		}
	}
	json_decref(top);
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

bool key_scan_take(struct call *c, const char *name, int64_t **keys, size_t *n)
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

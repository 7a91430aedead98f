/*
 * er_events_scan (report_events.h): reads the usual reportEvent body straight into events, without a jansson tree.
 * It accepts a strict subset of JSON on which its reading provably equals jansson's plus er_events_from_json:
 * strings of printable ASCII with the short escapes only, members the reportEvent reader knows, no duplicate keys
 * (jansson rejects those bodies as a whole), no numbers, literals or nesting it does not expect. On anything else
 * it declines and the caller hands the body to jansson, which reads it, or rejects it, as always. Snapshots are
 * its largest bodies (thousands of blocks), so they are read here too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codes.h"
#include "array.h"
#include "json_in.h"
#include "report_events.h"

struct scan {
	const char *p, *end;
	char *out; /* next free byte for decoded strings: each needs no more room than its quoted form took */
	struct er_events *e;
	size_t max;
	bool events_seen;
	struct er_spec tmp[ER_SPECS_MAX]; /* the specs list being read */
	struct er_block *blocks;          /* the snapshot blocks being read; copied to the arena at the end */
	size_t cap_blocks;
};

/* The fields of an ADD or DELETE payload. */
struct payload {
	bool seen, has_specs, has_names, specs_shape;
	const char *key, *medium;
	const struct er_spec *specs, *names;
	size_t nspecs, nnames;
};

/* A BLOCK_SNAPSHOT payload: ok when it has a blocks array of valid, unique block+mediums. */
struct snap {
	bool seen, has_blocks, ok;
	const struct er_block *blocks;
	size_t n;
};

struct item {
	const char *type;
	struct payload add, del;
	struct snap snap;
};

/* key: the member name as it stands in the body (no escapes), len bytes, not terminated */
typedef bool member_fn(struct scan *s, const char *key, size_t len, void *ctx);

static void ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
		s->p++;
}

static inline bool lit(struct scan *s, char c)
{
	if (s->p < s->end && *s->p == c) { /* compact JSON: no white space to skip */
		s->p++;
		return true;
	}
	ws(s);
	if (s->p == s->end || *s->p != c)
		return false;
	s->p++;
	return true;
}

/* One escape after a backslash: the character it stands for, or 0 for \u and anything invalid. */
static char unescape(char c)
{
	static const char in[] = "\"\\/bfnrt", out[] = "\"\\/\b\f\n\r\t";
	const char *q = c ? memchr(in, c, sizeof(in) - 1) : NULL;

	return q ? out[q - in] : 0;
}

#define ONES  UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Whether any of the 8 bytes of x is below n (n <= 128), or zero. */
#define BELOW(x, n) (((x)-ONES * (n)) & ~(x)&HIGHS)
#define ZERO(x)     BELOW(x, 1)

/* The length of the run at p of bytes a string holds as they are: printable ASCII but '"' and '\\'. */
static size_t plain_run(const char *p, const char *end)
{
	const char *q = p;
	uint64_t x, m;

	for (; end - q >= 8; q += 8) {
		memcpy(&x, q, 8);
		m = (x & HIGHS) | BELOW(x, 0x20) | ZERO(x ^ (ONES * '"')) | ZERO(x ^ (ONES * '\\')) |
		    ZERO(x ^ (ONES * 0x7f));
		if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			/* the lowest flag is exact: a false one can only follow (be above) a true one */
			return (size_t)(q - p) + (size_t)__builtin_ctzll(m) / 8;
#else
			break;
#endif
		}
	}
	while (q < end && *q >= 0x20 && *q <= 0x7e && *q != '"' && *q != '\\')
		q++;
	return (size_t)(q - p);
}

/* A string, decoded and NUL-terminated in the strings buffer; NULL when it is not one this reader takes. */
static const char *str(struct scan *s, size_t *len)
{
	char *start = s->out, *o = s->out, c;
	size_t run;

	if (!lit(s, '"'))
		return NULL;
	for (;;) {
		run = plain_run(s->p, s->end);
		memcpy(o, s->p, run);
		o += run;
		s->p += run;
		if (s->p == s->end)
			return NULL;
		c = *s->p++;
		if (c == '"')
			break;
		/* control characters and UTF-8 are jansson's business */
		if (c != '\\' || s->p == s->end || !(c = unescape(*s->p++)))
			return NULL;
		*o++ = c;
	}
	*o = '\0';
	s->out = o + 1;
	if (len)
		*len = (size_t)(o - start);
	return start;
}

/* A member name in place. An escaped one is declined: no name this reader knows has a character to escape. */
static bool key(struct scan *s, const char **k, size_t *len)
{
	if (!lit(s, '"'))
		return false;
	*k = s->p;
	*len = plain_run(s->p, s->end);
	s->p += *len;
	return s->p < s->end && *s->p++ == '"';
}

static bool is(const char *k, size_t len, const char *name)
{
	return strlen(name) == len && memcmp(k, name, len) == 0;
}

static bool object(struct scan *s, member_fn *member, void *ctx)
{
	const char *k;
	size_t len;

	if (!lit(s, '{'))
		return false;
	if (lit(s, '}'))
		return true;
	do {
		if (!key(s, &k, &len) || !lit(s, ':') || !member(s, k, len, ctx))
			return false;
	} while (lit(s, ','));
	return lit(s, '}');
}

static bool spec_member(struct scan *s, const char *k, size_t len, void *ctx)
{
	struct er_spec *sp = ctx;

	if (is(k, len, "name"))
		return !sp->name && (sp->name = str(s, NULL));
	if (is(k, len, "uri"))
		return !sp->uri && (sp->uri = str(s, NULL));
	return false;
}

/* A specs array (uris: objects {name, uri}) or a spec_names array; the first ER_SPECS_MAX are kept, all counted. */
static bool list(struct scan *s, bool uris, const struct er_spec **out, size_t *n, bool *shape)
{
	struct er_spec one, *copy;

	*n = 0;
	*shape = true;
	if (!lit(s, '['))
		return false;
	if (!lit(s, ']')) {
		do {
			one = (struct er_spec){NULL, NULL};
			if (uris ? !object(s, spec_member, &one) : !(one.name = str(s, NULL)))
				return false;
			*shape = *shape && one.name && (!uris || one.uri);
			if (*n < ER_SPECS_MAX)
				s->tmp[*n] = one;
			++*n;
		} while (lit(s, ','));
		if (!lit(s, ']'))
			return false;
	}
	copy = arena_alloc(&s->e->mem, (*n < ER_SPECS_MAX ? *n : ER_SPECS_MAX) * sizeof(*copy) + 1);
	if (!copy)
		return false;
	memcpy(copy, s->tmp, (*n < ER_SPECS_MAX ? *n : ER_SPECS_MAX) * sizeof(*copy));
	*out = copy;
	return true;
}

static bool payload_member(struct scan *s, const char *k, size_t len, void *ctx)
{
	struct payload *p = ctx;
	bool unused;

	if (is(k, len, "block_key"))
		return !p->key && (p->key = str(s, NULL));
	if (is(k, len, "medium"))
		return !p->medium && (p->medium = str(s, NULL));
	if (is(k, len, "specs"))
		return !p->has_specs && (p->has_specs = true) && list(s, true, &p->specs, &p->nspecs, &p->specs_shape);
	if (is(k, len, "spec_names"))
		return !p->has_names && (p->has_names = true) && list(s, false, &p->names, &p->nnames, &unused);
	return false;
}

/* One snapshot entry, read as er_events_from_json reads it (its "specs"; other known members ignored). */
static bool snap_block(struct scan *s, struct snap *sn)
{
	struct payload p = {0};
	struct er_block *b;

	if (!object(s, payload_member, &p))
		return false;
	if (!(b = array_grow(s->blocks, &s->cap_blocks, sn->n + 1, sizeof(*b), 256)))
		return false;
	s->blocks = b;
	b = &s->blocks[sn->n++];
	sn->ok = sn->ok && er_block_read(b, p.key, p.medium, p.specs, p.nspecs, p.has_specs && p.specs_shape, true);
	return true;
}

static bool snap_blocks(struct scan *s, struct snap *sn)
{
	struct er_block *copy;
	int unique;

	sn->ok = true;
	if (!lit(s, '['))
		return false;
	if (!lit(s, ']')) {
		do {
			if (!snap_block(s, sn))
				return false;
		} while (lit(s, ','));
		if (!lit(s, ']'))
			return false;
	}
	if (!(copy = arena_alloc(&s->e->mem, (sn->n + 1) * sizeof(*copy))))
		return false;
	if (sn->n)
		memcpy(copy, s->blocks, sn->n * sizeof(*copy));
	sn->blocks = copy;
	if (sn->ok && (unique = er_blocks_unique(s->e, copy, sn->n)) <= 0) {
		sn->ok = false;
		return unique == 0;
	}
	return true;
}

static bool snap_member(struct scan *s, const char *k, size_t len, void *ctx)
{
	struct snap *sn = ctx;

	return is(k, len, "blocks") && !sn->has_blocks && (sn->has_blocks = true) && snap_blocks(s, sn);
}

static bool event_member(struct scan *s, const char *k, size_t len, void *ctx)
{
	struct item *it = ctx;
	struct payload *p = NULL;

	if (is(k, len, "event_type"))
		return !it->type && (it->type = str(s, NULL));
	if (is(k, len, "block_snapshot")) {
		if (it->snap.seen)
			return false;
		it->snap.seen = true;
		return object(s, snap_member, &it->snap);
	}
	if (is(k, len, "block_add"))
		p = &it->add;
	else if (is(k, len, "block_delete"))
		p = &it->del;
	if (!p || p->seen)
		return false;
	p->seen = true;
	return object(s, payload_member, p);
}

/* The event as er_events_from_json would read the same item. */
static struct er_event item_event(const struct item *it)
{
	const bool seen[EV_SNAPSHOT + 1] = {
	    [EV_ADD] = it->add.seen, [EV_DELETE] = it->del.seen, [EV_SNAPSHOT] = it->snap.seen};
	struct er_event ev = {0};
	const struct payload *p;
	bool ok, other = false;
	int t;

	ev.declared = it->type && jd_str_enum(it->type, &enum_event_type, &t) ? t : 0;
	for (t = EV_REGISTER; t <= EV_SNAPSHOT; t++)
		other = other || (t != ev.declared && seen[t]);
	p = ev.declared == EV_ADD ? &it->add : ev.declared == EV_DELETE ? &it->del : NULL;
	ev.type = er_item_type(ev.declared, other,
	                       ev.declared >= EV_REGISTER && ev.declared <= EV_SNAPSHOT && seen[ev.declared]);
	if (ev.type == EV_SNAPSHOT) {
		ev.blocks = it->snap.blocks;
		ev.nblocks = it->snap.n;
		ok = it->snap.has_blocks && it->snap.ok;
	} else if (ev.type == EV_ADD)
		ok = er_block_read(&ev.b, p->key, p->medium, p->specs, p->nspecs, p->has_specs && p->specs_shape, true);
	else
		ok = ev.type == EV_DELETE &&
		     er_block_read(&ev.b, p->key, p->medium, p->names, p->nnames, p->has_names, false);
	if (!ok)
		ev.type = 0;
	return ev;
}

static bool event(struct scan *s)
{
	struct er_events *e = s->e;
	struct item it = {0};
	struct er_event *ev;

	if (e->n == s->max || !object(s, event_member, &it))
		return false;
	if (!(ev = array_grow(e->ev, &e->cap, e->n + 1, sizeof(*ev), 64)))
		return false;
	e->ev = ev;
	e->ev[e->n++] = item_event(&it);
	return true;
}

static bool events(struct scan *s)
{
	if (s->events_seen || !lit(s, '['))
		return false;
	s->events_seen = true;
	if (lit(s, ']'))
		return true;
	do {
		if (!event(s))
			return false;
	} while (lit(s, ','));
	return lit(s, ']');
}

/* events, or another member: a string kept in top. */
static bool top_member(struct scan *s, const char *k, size_t len, void *ctx)
{
	json_t *top = ctx;
	const char *v;
	size_t n;

	if (is(k, len, "events"))
		return events(s);
	if (json_object_getn(top, k, len) || !(v = str(s, &n)))
		return false;
	return json_object_setn_new_nocheck(top, k, len, json_stringn_nocheck(v, n)) == 0;
}

bool er_events_scan(struct er_events *e, const char *body, size_t len, size_t max, json_t **top)
{
	struct scan *s = malloc(sizeof(*s));
	bool ok;

	*top = json_object();
	if (!s || !*top) {
		free(s);
		json_decref(*top);
		*top = NULL;
		return false;
	}
	*s = (struct scan){.p = body, .end = body + len, .e = e, .max = max};
	s->out = arena_alloc(&e->mem, len + 1);
	ok = s->out && object(s, top_member, *top);
	ws(s);
	ok = ok && s->p == s->end;
	free(s->blocks);
	free(s);
	if (!ok) {
		json_decref(*top);
		*top = NULL;
		er_events_free(e);
		er_events_init(e);
	}
	return ok;
}

/*
 * er_events_scan (report_request.h): reads the usual reportEvent body straight into events, without a jansson tree,
 * on the JSON lexer (json_lex.h). It accepts a strict subset of JSON on which its reading provably equals jansson's
 * plus er_events_from_json: strings of printable ASCII with the short escapes only, members the reportEvent reader
 * knows, no duplicate keys (jansson rejects those bodies as a whole), no numbers, literals or nesting it does not
 * expect. On anything else it declines and the caller hands the body to jansson, which reads it, or rejects it, as
 * always. Snapshots are its largest bodies (thousands of blocks), so they are read here too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "json_in.h"
#include "json_lex.h"
#include "list.h"
#include "report_request.h"
#include "wire_enums.h"

struct scan {
	struct jlex x; /* the lexer's callbacks get &s->x, and SCAN() s */
	char *out;     /* next free byte for decoded strings */
	struct er_events *e;
	size_t max;
	bool events_seen;
	struct er_spec tmp[ER_SPECS_MAX]; /* the specs list being read */
	size_t ntmp;
	bool uris, shape;        /* the specs list's kind, and whether every item had its fields */
	struct er_block *blocks; /* the snapshot blocks being read; copied to the arena at the end */
	size_t cap_blocks;
};

#define SCAN(x) list_entry(x, struct scan, x)

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

/* A string, decoded into the strings buffer. */
static const char *str(struct scan *s)
{
	return jlex_str(&s->x, &s->out, NULL);
}

static bool spec_member(struct jlex *x, const char *k, size_t len, void *ctx)
{
	struct er_spec *sp = ctx;

	if (jlex_is(k, len, "name"))
		return !sp->name && (sp->name = str(SCAN(x)));
	if (jlex_is(k, len, "uri"))
		return !sp->uri && (sp->uri = str(SCAN(x)));
	return false;
}

/* One item of a specs list; the first ER_SPECS_MAX are kept, all counted. */
static bool spec_item(struct jlex *x, void *ctx)
{
	struct scan *s = SCAN(x);
	struct er_spec one = {NULL, NULL};

	if (s->uris ? !jlex_object(x, spec_member, &one) : !(one.name = str(s)))
		return false;
	s->shape = s->shape && one.name && (!s->uris || one.uri);
	if (s->ntmp < ER_SPECS_MAX)
		s->tmp[s->ntmp] = one;
	s->ntmp++;
	return true;
}

/* A specs array (uris: objects {name, uri}) or a spec_names array, copied to the arena. */
static bool list(struct scan *s, bool uris, const struct er_spec **out, size_t *n, bool *shape)
{
	struct er_spec *copy;
	size_t kept;

	s->ntmp = 0;
	s->uris = uris;
	s->shape = true;
	if (!jlex_array(&s->x, spec_item, NULL))
		return false;
	*n = s->ntmp;
	*shape = s->shape;
	kept = *n < ER_SPECS_MAX ? *n : ER_SPECS_MAX;
	copy = arena_alloc(&s->e->mem, kept * sizeof(*copy) + 1);
	if (!copy)
		return false;
	memcpy(copy, s->tmp, kept * sizeof(*copy));
	*out = copy;
	return true;
}

static bool payload_member(struct jlex *x, const char *k, size_t len, void *ctx)
{
	struct scan *s = SCAN(x);
	struct payload *p = ctx;
	bool unused;

	if (jlex_is(k, len, "block_key"))
		return !p->key && (p->key = str(s));
	if (jlex_is(k, len, "medium"))
		return !p->medium && (p->medium = str(s));
	if (jlex_is(k, len, "specs"))
		return !p->has_specs && (p->has_specs = true) && list(s, true, &p->specs, &p->nspecs, &p->specs_shape);
	if (jlex_is(k, len, "spec_names"))
		return !p->has_names && (p->has_names = true) && list(s, false, &p->names, &p->nnames, &unused);
	return false;
}

/* One snapshot entry, read as er_events_from_json reads it (its "specs"; other known members ignored). */
static bool snap_block(struct jlex *x, void *ctx)
{
	struct scan *s = SCAN(x);
	struct snap *sn = ctx;
	struct payload p = {0};
	struct er_block *b;

	if (!jlex_object(x, payload_member, &p))
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
	if (!jlex_array(&s->x, snap_block, sn))
		return false;
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

static bool snap_member(struct jlex *x, const char *k, size_t len, void *ctx)
{
	struct snap *sn = ctx;

	return jlex_is(k, len, "blocks") && !sn->has_blocks && (sn->has_blocks = true) && snap_blocks(SCAN(x), sn);
}

static bool event_member(struct jlex *x, const char *k, size_t len, void *ctx)
{
	struct item *it = ctx;
	struct payload *p = NULL;

	if (jlex_is(k, len, "event_type"))
		return !it->type && (it->type = str(SCAN(x)));
	if (jlex_is(k, len, "block_snapshot")) {
		if (it->snap.seen)
			return false;
		it->snap.seen = true;
		return jlex_object(x, snap_member, &it->snap);
	}
	if (jlex_is(k, len, "block_add"))
		p = &it->add;
	else if (jlex_is(k, len, "block_delete"))
		p = &it->del;
	if (!p || p->seen)
		return false;
	p->seen = true;
	return jlex_object(x, payload_member, p);
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

static bool event(struct jlex *x, void *ctx)
{
	struct scan *s = SCAN(x);
	struct er_events *e = s->e;
	struct item it = {0};
	struct er_event *ev;

	if (e->n == s->max || !jlex_object(x, event_member, &it))
		return false;
	if (!(ev = array_grow(e->ev, &e->cap, e->n + 1, sizeof(*ev), 64)))
		return false;
	e->ev = ev;
	e->ev[e->n++] = item_event(&it);
	return true;
}

static bool events(struct scan *s)
{
	if (s->events_seen)
		return false;
	s->events_seen = true;
	return jlex_array(&s->x, event, NULL);
}

/* events, or another member: a string kept in top. */
static bool top_member(struct jlex *x, const char *k, size_t len, void *ctx)
{
	struct scan *s = SCAN(x);
	json_t *top = ctx;
	const char *v;
	size_t n;

	if (jlex_is(k, len, "events"))
		return events(s);
	if (json_object_getn(top, k, len) || json_object_size(top) >= JLEX_KEPT_MEMBERS_MAX ||
	    !(v = jlex_str(x, &s->out, &n)))
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
	*s = (struct scan){.e = e, .max = max};
	jlex_init(&s->x, body, len);
	s->out = arena_alloc(&e->mem, len + 1);
	ok = s->out && jlex_object(&s->x, top_member, *top) && jlex_done(&s->x);
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

#include "report_request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json_in.h"
#include "mmc/mmc.h"
#include "model.h"
#include "reporter.h"
#include "wire_enums.h"

static const char *const payloads[] = {NULL,        "node_register", "block_add",     "block_delete",
                                       "host_down", "heartbeat",     "block_snapshot"};

void er_events_init(struct er_events *e)
{
	memset(e, 0, sizeof(*e));
	arena_init(&e->mem);
}

void er_events_free(struct er_events *e)
{
	free(e->ev);
	arena_fini(&e->mem);
	memset(e, 0, sizeof(*e));
}

/* The decimal text of a signed int64, or of a uint64 mapped to the same bits. */
bool er_parse_key(const char *s, int64_t *out)
{
	char *end;

	if (!s || !*s || *s == ' ')
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	if (!*end && errno == 0)
		return true;
	errno = 0;
	*out = (int64_t)strtoull(s, &end, 10);
	return *s != '-' && !*end && errno == 0;
}

bool er_medium_ok(const char *m)
{
	return m && m[0] && strlen(m) < ER_MEDIUM_MAX && !strchr(m, '#');
}

bool er_specs_ok(const struct er_spec *specs, size_t n, bool uris)
{
	if (!n || n > ER_SPECS_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		const char *name = specs[i].name, *uri = specs[i].uri, *sv;
		int nsv;

		if (!name || !name[0] || strlen(name) >= KVCM_NAME_MAX)
			return false;
		if (uris && (!uri || !er_uri_valid(uri, &sv, &nsv) || nsv || strlen(uri) > 4096))
			return false;
		for (size_t j = 0; j < i; j++)
			if (strcmp(specs[j].name, name) == 0)
				return false;
	}
	return true;
}

int er_item_type(int declared, bool other_payload, bool own_payload)
{
	if (declared < EV_REGISTER || declared > EV_SNAPSHOT || other_payload || !own_payload)
		return 0;
	return declared;
}

bool er_block_read(struct er_block *b, const char *key, const char *medium, const struct er_spec *specs, size_t n,
                   bool specs_shape_ok, bool uris)
{
	if (!er_parse_key(key, &b->key) || !er_medium_ok(medium) || !specs_shape_ok || !er_specs_ok(specs, n, uris))
		return false;
	b->medium = medium;
	b->specs = specs;
	b->nspecs = n;
	return true;
}

/* A jansson specs (uris: objects {name, uri}) or names array; *shape_ok false when it is not of that form. */
static struct er_spec *json_specs(struct er_events *e, json_t *a, bool uris, size_t *n, bool *shape_ok)
{
	struct er_spec *s;

	*n = json_array_size(a);
	*shape_ok = json_is_array(a) && *n && *n <= ER_SPECS_MAX;
	if (!*shape_ok)
		return NULL;
	s = arena_alloc(&e->mem, *n * sizeof(*s));
	for (size_t i = 0; s && i < *n; i++) {
		json_t *v = json_array_get(a, i);

		s[i].name = json_string_value(uris ? json_object_get(v, "name") : v);
		s[i].uri = uris ? json_string_value(json_object_get(v, "uri")) : NULL;
		*shape_ok = *shape_ok && s[i].name && (!uris || s[i].uri);
	}
	return s;
}

/* An ADD's or DELETE's payload, or one snapshot entry (uris); false when out of memory. */
static bool json_block(struct er_events *e, json_t *p, const char *specs_field, bool uris, struct er_block *b, bool *ok)
{
	json_t *a = json_object_get(p, specs_field);
	size_t n;
	bool shape;
	struct er_spec *s = json_specs(e, a, uris, &n, &shape);

	if (shape && !s)
		return false;
	*ok = er_block_read(b, json_string_value(json_object_get(p, "block_key")),
	                    json_string_value(json_object_get(p, "medium")), s, n, shape, uris);
	return true;
}

static int cmp_block(const void *x, const void *y)
{
	const struct er_block *a = *(const struct er_block *const *)x, *b = *(const struct er_block *const *)y;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return strcmp(a->medium, b->medium);
}

/*
 * Snapshots list thousands of blocks, so pairs are not compared: a list in strictly ascending key order (the usual
 * one) is unique as it stands, any other is checked sorted.
 */
int er_blocks_unique(struct er_events *e, const struct er_block *b, size_t n)
{
	const struct er_block **s;
	size_t i;

	for (i = 1; i < n && b[i - 1].key < b[i].key; i++)
		;
	if (i >= n)
		return 1;
	if (!(s = arena_alloc(&e->mem, n * sizeof(*s))))
		return -1;
	for (i = 0; i < n; i++)
		s[i] = &b[i];
	qsort(s, n, sizeof(*s), cmp_block);
	for (i = 1; i < n; i++)
		if (cmp_block(&s[i - 1], &s[i]) == 0)
			return 0;
	return 1;
}

bool er_snapshot_blocks(struct er_events *e, struct er_event *ev, const struct er_block *b, size_t n, bool ok)
{
	int unique = 1;

	if (ok && (unique = er_blocks_unique(e, b, n)) < 0)
		return false;
	ev->blocks = b;
	ev->nblocks = n;
	if (!ok || !unique)
		ev->type = 0;
	return true;
}

/* Every block+medium once, each with valid specs. */
static bool json_snapshot(struct er_events *e, json_t *p, struct er_event *ev)
{
	json_t *blocks = json_object_get(p, "blocks");
	size_t n = json_array_size(blocks);
	struct er_block *b = arena_alloc(&e->mem, (n + 1) * sizeof(*b));
	bool ok = json_is_array(blocks);

	if (!b)
		return false;
	for (size_t i = 0; ok && i < n; i++)
		if (!json_block(e, json_array_get(blocks, i), "specs", true, &b[i], &ok))
			return false;
	return er_snapshot_blocks(e, ev, b, n, ok);
}

/* NODE_REGISTER's mediums are checked like spec names; HEARTBEAT's are merged as given (strings only). */
static bool json_mediums(struct er_events *e, json_t *p, struct er_event *ev)
{
	json_t *a = json_object_get(p, "mediums");
	size_t n = json_array_size(a), k = 0;
	struct er_spec *s = arena_alloc(&e->mem, (n + 1) * sizeof(*s));

	if (!s)
		return false;
	for (size_t i = 0; i < n; i++) {
		s[k].name = json_string_value(json_array_get(a, i));
		s[k].uri = NULL;
		k += s[k].name != NULL;
	}
	ev->b.specs = s;
	ev->b.nspecs = k;
	if (ev->type == EV_REGISTER && a && (!json_is_array(a) || k != n || !er_specs_ok(s, n, false)))
		ev->type = 0;
	return true;
}

static bool json_item(struct er_events *e, json_t *v, struct er_event *ev)
{
	json_t *tv = json_object_get(v, "event_type"), *p;
	bool other = false, ok;
	int t;

	if (!tv)
		tv = json_object_get(v, "eventType");
	ev->declared = tv && jd_val_enum(tv, &enum_event_type, &t) ? t : 0;
	if (!json_is_object(v))
		return true;
	for (t = EV_REGISTER; t <= EV_SNAPSHOT; t++)
		other = other || (t != ev->declared && jd_get(v, payloads[t]));
	p = ev->declared >= EV_REGISTER && ev->declared <= EV_SNAPSHOT ? jd_get(v, payloads[ev->declared]) : NULL;
	ev->type = er_item_type(ev->declared, other, json_is_object(p));
	switch (ev->type) {
	case EV_ADD:
	case EV_DELETE:
		if (!json_block(e, p, ev->type == EV_ADD ? "specs" : "spec_names", ev->type == EV_ADD, &ev->b, &ok))
			return false;
		ev->type = ok ? ev->type : 0;
		return true;
	case EV_SNAPSHOT:
		return json_snapshot(e, p, ev);
	case EV_REGISTER:
	case EV_HEARTBEAT:
		return json_mediums(e, p, ev);
	default:
		return true;
	}
}

int er_events_from_json(struct er_events *e, json_t *events)
{
	size_t n = json_array_size(events);

	e->ev = calloc(n + 1, sizeof(*e->ev));
	if (!e->ev)
		return MMC_ERROR;
	e->cap = n + 1;
	for (e->n = 0; e->n < n; e->n++)
		if (!json_item(e, json_array_get(events, e->n), &e->ev[e->n]))
			return MMC_ERROR;
	return 0;
}

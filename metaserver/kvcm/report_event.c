/*
 * reportEvent (reference kvcm.md §6): engine cache subscribers report blocks per reporter (instance + storage
 * type + host). Requests are applied in one loop turn, so a snapshot never interleaves with deltas of the same
 * reporter (SNAPSHOT_IN_PROGRESS cannot happen here); item validation happens before any side effect of that
 * item, request-shape validation before any side effect at all.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "block_index.h"
#include "clock.h"
#include "codes.h"
#include "group.h"
#include "kvcm_server.h"
#include "kvcm_store.h"
#include "quota.h"
#include "reporter.h"
#include "storage.h"

#define SPECS_MAX  256
#define MEDIUM_MAX 64

enum { EV_REGISTER = 1, EV_ADD = 2, EV_DELETE = 3, EV_HOST_DOWN = 4, EV_HEARTBEAT = 5, EV_SNAPSHOT = 6 };

static const char *const payloads[] = {NULL,        "node_register", "block_add",     "block_delete",
                                       "host_down", "heartbeat",     "block_snapshot"};

/* What one request needs while its events are applied. */
struct report {
	struct call *c;
	struct storage *storage;
	int type;
	const char *host;
	struct reporter *r;
	uint64_t retry_after_ms;
	bool snapshot_committed, host_down;
};

/* The decimal text of a signed int64, or of a uint64 mapped to the same bits. */
static bool parse_key(json_t *v, int64_t *out)
{
	const char *s = json_string_value(v);
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

static bool medium_ok(json_t *v)
{
	const char *m = json_string_value(v);

	return m && m[0] && strlen(m) < MEDIUM_MAX && !strchr(m, '#');
}

/* Spec names present, non-empty, unique; with uris, each a valid URI without s_version. */
static bool specs_ok(json_t *specs, bool uris)
{
	size_t n = json_array_size(specs), i, j;

	if (!json_is_array(specs) || !n || n > SPECS_MAX)
		return false;
	for (i = 0; i < n; i++) {
		json_t *e = json_array_get(specs, i);
		const char *name = json_string_value(uris ? json_object_get(e, "name") : e), *uri, *sv;
		int nsv;

		if (!name || !name[0] || strlen(name) >= KVCM_NAME_MAX)
			return false;
		uri = uris ? json_string_value(json_object_get(e, "uri")) : "x://";
		if (!uri || !er_uri_valid(uri, &sv, &nsv) || nsv || strlen(uri) > 4096)
			return false;
		for (j = 0; j < i; j++) {
			json_t *o = json_array_get(specs, j);

			if (strcmp(json_string_value(uris ? json_object_get(o, "name") : o), name) == 0)
				return false;
		}
	}
	return true;
}

/* uri with s_version=gen added as its last query parameter (before any fragment). */
static char *versioned(const char *uri, const char *gen)
{
	size_t len = strlen(uri), cut = strcspn(uri, "#");
	char *out = malloc(len + GEN_LEN + 12), *p = out;

	if (!out)
		return NULL;
	memcpy(p, uri, cut);
	p += cut;
	*p++ = memchr(uri, '?', cut) ? '&' : '?';
	memcpy(p, "s_version=", 10);
	memcpy(p + 10, gen, GEN_LEN);
	p += 10 + GEN_LEN;
	memcpy(p, uri + cut, len - cut + 1);
	return out;
}

/* Replaces the reporter's location of (key, medium) by one holding names/uris; n == 0 removes it. */
static int put_location(struct report *rp, int64_t key, const char *medium, const char **names, const char **uris,
                        uint16_t n)
{
	struct kvcm *k = rp->c->k;
	struct instance *inst = rp->c->inst;
	char name[2 * KVCM_NAME_MAX];
	struct block *b = block_find(inst, key);
	struct location *old, *nl = NULL, **tail;
	bool fresh = !b;

	if (er_key(name, sizeof(name), rp->type, medium, rp->host))
		return KC_INVALID_ARGUMENT;
	if (!b && !n)
		return KC_OK;
	if (!b && !(b = block_get(inst, key)))
		return KC_INTERNAL_ERROR;
	if (fresh)
		usage_add_key(inst);
	if (n && !(nl = location_new_er(rp->storage, name, n, names, uris)))
		return KC_INTERNAL_ERROR;
	old = location_find(b, name);
	if (old && !old->pending) {
		location_unlink(b, old);
		usage_sub_location(inst, old);
		location_free(old);
	}
	if (nl) {
		nl->status = CLS_SERVING;
		nl->create_time_us = kvcm_now_us();
		for (tail = &b->locs; *tail; tail = &(*tail)->next)
			;
		*tail = nl;
		usage_add_location(inst, nl);
		block_touch(inst, b, nl->create_time_us);
	}
	if (b->locs) {
		store_put_block(k, inst, b);
	} else {
		store_del_block(k, inst, key);
		block_remove(inst, b);
		usage_sub_key(inst);
	}
	return KC_OK;
}

static const struct location *current(struct report *rp, int64_t key, const char *medium)
{
	char name[2 * KVCM_NAME_MAX];
	struct block *b = block_find(rp->c->inst, key);

	return b && er_key(name, sizeof(name), rp->type, medium, rp->host) == 0 ? location_find(b, name) : NULL;
}

/* Sets the specs of (key, medium): merge keeps the location's other specs, drop removes the named ones. */
static int write_specs(struct report *rp, int64_t key, const char *medium, json_t *specs, bool merge, bool drop)
{
	const struct location *old = current(rp, key, medium);
	const char *names[2 * SPECS_MAX], *uris[2 * SPECS_MAX];
	char *owned[SPECS_MAX] = {0};
	uint16_t n = 0;
	size_t i;
	json_t *e;
	int rc = KC_OK;

	for (uint16_t j = 0; (merge || drop) && old && !old->pending && j < old->nspecs && n < SPECS_MAX; j++) {
		bool named = false;

		json_array_foreach(specs, i, e) named =
		    named || strcmp(old->specs[j].name, json_string_value(drop ? e : json_object_get(e, "name"))) == 0;
		if (!named) {
			names[n] = old->specs[j].name;
			uris[n++] = old->specs[j].uri;
		}
	}
	json_array_foreach(drop ? NULL : specs, i, e)
	{
		owned[i] = versioned(json_string_value(json_object_get(e, "uri")), rp->r->gen);
		if (!owned[i])
			rc = KC_INTERNAL_ERROR;
		names[n] = json_string_value(json_object_get(e, "name"));
		uris[n++] = owned[i];
	}
	if (rc == KC_OK && (!drop || old))
		rc = put_location(rp, key, medium, names, uris, n);
	for (i = 0; i < json_array_size(specs) && i < SPECS_MAX; i++)
		free(owned[i]);
	return rc;
}

static bool lazily_initialised(struct report *rp)
{
	struct call *c = rp->c;

	if (!rp->r)
		rp->r = reporter_get(c->k, c->inst, rp->storage, rp->type, rp->host);
	return rp->r != NULL;
}

static int delta(struct report *rp, json_t *p, int type)
{
	json_t *specs = json_object_get(p, type == EV_ADD ? "specs" : "spec_names");
	const char *medium = json_string_value(json_object_get(p, "medium"));
	int64_t key;

	if (!parse_key(json_object_get(p, "block_key"), &key) || !medium_ok(json_object_get(p, "medium")) ||
	    !specs_ok(specs, type == EV_ADD))
		return KC_INVALID_ARGUMENT;
	if (rp->r && rp->r->tombstone)
		return KC_NODE_NOT_REGISTERED;
	if (!lazily_initialised(rp))
		return KC_INTERNAL_ERROR;
	if (!rp->r->gen[0])
		reporter_new_generation(rp->c->k, rp->r);
	reporter_merge_medium(rp->r, medium);
	return write_specs(rp, key, medium, specs, type == EV_ADD, type == EV_DELETE);
}

/* Every block+medium once, each with valid specs. */
static bool snapshot_ok(json_t *blocks)
{
	size_t n = json_array_size(blocks), i, j;
	int64_t *keys;
	bool ok = json_is_array(blocks);

	keys = calloc(n + 1, sizeof(*keys));
	for (i = 0; ok && keys && i < n; i++) {
		json_t *b = json_array_get(blocks, i);

		ok = parse_key(json_object_get(b, "block_key"), &keys[i]) && medium_ok(json_object_get(b, "medium")) &&
		     specs_ok(json_object_get(b, "specs"), true);
		for (j = 0; ok && j < i; j++)
			ok = keys[j] != keys[i] ||
			     strcmp(json_string_value(json_object_get(json_array_get(blocks, j), "medium")),
			            json_string_value(json_object_get(b, "medium"))) != 0;
	}
	free(keys);
	return ok && keys;
}

static int snapshot(struct report *rp, json_t *p)
{
	json_t *blocks = json_object_get(p, "blocks"), *b;
	uint64_t now = clock_ms(), min;
	size_t i;

	if (!snapshot_ok(blocks))
		return KC_INVALID_ARGUMENT;
	if (rp->r && rp->r->tombstone)
		return KC_NODE_NOT_REGISTERED;
	if (!lazily_initialised(rp))
		return KC_INTERNAL_ERROR;
	min = (uint64_t)jn_i64(json_object_get(rp->storage->cfg, "event_report"), "snapshot_min_interval_ms");
	min = min ? min : rp->c->k->conf.er_snapshot_min_interval_ms;
	if (rp->r->last_snapshot_ms && now - rp->r->last_snapshot_ms < min) {
		rp->retry_after_ms = min - (now - rp->r->last_snapshot_ms);
		return KC_SNAPSHOT_RATE_LIMITED;
	}
	reporter_new_generation(rp->c->k, rp->r);
	json_array_foreach(blocks, i, b)
	{
		int64_t key;
		const char *medium = json_string_value(json_object_get(b, "medium"));

		parse_key(json_object_get(b, "block_key"), &key);
		reporter_merge_medium(rp->r, medium);
		if (write_specs(rp, key, medium, json_object_get(b, "specs"), false, false) != KC_OK)
			return KC_INTERNAL_ERROR; /* partial: not rolled back, the caller retries the whole snapshot */
	}
	/* omitted blocks are hidden by the strict fence now and their metadata removed in the background */
	rp->r->strict = true;
	rp->r->last_snapshot_ms = now;
	rp->snapshot_committed = true;
	reporter_cleanup(rp->c->k, rp->r, rp->r->gen);
	return KC_OK;
}

static int liveness(struct report *rp, json_t *p, int type)
{
	json_t *mediums = json_object_get(p, "mediums"), *m;
	size_t i;

	if (type == EV_REGISTER && mediums && !specs_ok(mediums, false))
		return KC_INVALID_ARGUMENT;
	if (type == EV_HEARTBEAT && rp->r && rp->r->tombstone)
		return KC_NODE_NOT_REGISTERED;
	if (!lazily_initialised(rp))
		return KC_INTERNAL_ERROR;
	if (type == EV_REGISTER && rp->r->tombstone) { /* a new lifecycle: nothing of the old one is visible */
		rp->r->tombstone = false;
		rp->r->strict = false;
		rp->r->last_snapshot_ms = 0;
	}
	json_array_foreach(mediums, i, m) reporter_merge_medium(rp->r, json_string_value(m));
	rp->r->available = true;
	rp->r->last_heartbeat_ms = clock_ms();
	return KC_OK;
}

static int apply(struct report *rp, json_t *ev)
{
	int type = 0;
	json_t *p;

	if (!json_is_object(ev) ||
	    !jd_val_enum(json_object_get(ev, "event_type") ? json_object_get(ev, "event_type")
	                                                   : json_object_get(ev, "eventType"),
	                 &enum_event_type, &type) ||
	    type < EV_REGISTER || type > EV_SNAPSHOT)
		return KC_INVALID_ARGUMENT;
	/* the payload must be the one the type names, and the only one */
	for (int t = EV_REGISTER; t <= EV_SNAPSHOT; t++)
		if (t != type && jd_get(ev, payloads[t]))
			return KC_INVALID_ARGUMENT;
	p = jd_get(ev, payloads[type]);
	if (!json_is_object(p))
		return KC_INVALID_ARGUMENT;
	switch (type) {
	case EV_ADD:
	case EV_DELETE:
		return delta(rp, p, type);
	case EV_SNAPSHOT:
		return snapshot(rp, p);
	case EV_HOST_DOWN:
		if (!lazily_initialised(rp))
			return KC_INTERNAL_ERROR;
		reporter_tombstone(rp->c->k, rp->r);
		rp->host_down = true;
		return KC_OK;
	default:
		return liveness(rp, p, type);
	}
}

static int declared_type(json_t *ev)
{
	int t = 0;
	json_t *v = json_object_get(ev, "event_type");

	if (!v)
		v = json_object_get(ev, "eventType");
	return v && jd_val_enum(v, &enum_event_type, &t) ? t : 0;
}

/* §6.6: whole-request rules, checked before any side effect. */
static const char *shape_error(json_t *events)
{
	size_t n = json_array_size(events), i, snaps = 0, deltas = 0, downs = 0;
	json_t *ev;

	json_array_foreach(events, i, ev)
	{
		int t = declared_type(ev);

		snaps += t == EV_SNAPSHOT;
		deltas += t == EV_ADD || t == EV_DELETE;
		downs += t == EV_HOST_DOWN;
	}
	if (snaps > 1)
		return "at most one EVENT_BLOCK_SNAPSHOT per request";
	if (snaps && deltas)
		return "EVENT_BLOCK_SNAPSHOT cannot be mixed with EVENT_BLOCK_ADD/DELETE";
	if (downs && n > 1)
		return "EVENT_HOST_DOWN must be the only event of its request";
	return NULL;
}

/* The event-report storage of this type among the group's candidates. */
static struct storage *target_storage(struct call *c, int type)
{
	size_t i;
	json_t *v;

	json_array_foreach(group_event_candidates(c->inst->group), i, v)
	{
		struct storage *s = storage_find(c->k, json_string_value(v));

		if (s && s->type == type)
			return s;
	}
	return NULL;
}

static void reply(struct report *rp, const int *results, size_t n, bool had_generation)
{
	struct call *c = rp->c;
	struct jw *o = &c->out;
	int first = KC_OK;

	for (size_t i = 0; i < n && first == KC_OK; i++)
		first = results[i];
	call_status(c, first,
	            first == KC_OK ? "Events reported successfully" : "ReportEvent partially failed; see item_results");
	jw_key(o, "item_results");
	jw_arr(o);
	for (size_t i = 0; first != KC_OK && i < n; i++)
		jw_str(o, code_name(results[i]));
	jw_arr_end(o);
	jw_kstr(o, "committed_snapshot_version", rp->r && !rp->r->tombstone ? rp->r->gen : "");
	jw_ki64s(o, "retry_after_ms", (int64_t)rp->retry_after_ms);
	jw_kbool(o, "snapshot_required", rp->host_down || (!had_generation && !rp->snapshot_committed));
	jw_kstr(o, "extra_info", jn_str(c->inst->group->cfg, "extra_info"));
}

/* The request-level checks; false when the call has been answered. */
static bool request_ok(struct report *rp, json_t *events)
{
	struct call *c = rp->c;
	const char *shape;

	if (!rp->host[0] || strchr(rp->host, '#') || strlen(rp->host) >= KVCM_NAME_MAX) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {ReportEvent: {host_ip_port}}");
		return false;
	}
	if (rp->type != ST_EVENT_REPORT_L1P5 && rp->type != ST_EVENT_REPORT_L2) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {ReportEvent: {storage_type}}");
		return false;
	}
	if (json_array_size(events) > c->k->conf.max_keys) {
		call_fail(c, KC_INVALID_ARGUMENT, "too many events (limit %u)", c->k->conf.max_keys);
		return false;
	}
	rp->storage = target_storage(c, rp->type);
	if (!rp->storage) {
		call_fail(c, KC_INSTANCE_NOT_EXIST, "instance group \"%s\" has no %s event-report storage",
		          c->inst->group->name, enum_name(&enum_storage_type, rp->type));
		return false;
	}
	if ((shape = shape_error(events))) {
		call_fail(c, KC_INVALID_ARGUMENT, "%s", shape);
		return false;
	}
	return true;
}

void api_report_event(struct call *c)
{
	struct report rp = {.c = c};
	json_t *events;
	size_t n;
	int *results;
	bool had_generation;

	rp.host = jd_str(&c->d, c->body, "host_ip_port");
	rp.type = jd_enum(&c->d, c->body, "storage_type", &enum_storage_type);
	events = jd_arr(&c->d, c->body, "events");
	if (call_decode_failed(c))
		return;
	n = json_array_size(events);
	if (!n) { /* a pure no-op: nothing is touched, every field at its default */
		call_ok(c, "");
		api_report_event_empty(&c->out);
		return;
	}
	if (!request_ok(&rp, events))
		return;
	results = calloc(n, sizeof(*results));
	if (!results) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return;
	}
	rp.r = reporter_find(c->k, c->inst, rp.type, rp.host);
	had_generation = rp.r && !rp.r->tombstone && rp.r->gen[0];
	for (size_t i = 0; i < n; i++)
		results[i] = apply(&rp, json_array_get(events, i));
	reply(&rp, results, n, had_generation);
	free(results);
}

void api_report_event_empty(struct jw *w)
{
	jw_key(w, "item_results");
	jw_arr(w);
	jw_arr_end(w);
	jw_kstr(w, "committed_snapshot_version", "");
	jw_ki64s(w, "retry_after_ms", 0);
	jw_kbool(w, "snapshot_required", false);
	jw_kstr(w, "extra_info", "");
}

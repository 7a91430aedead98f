/*
 * reportEvent (reference kvcm.md §6): engine cache subscribers report blocks per reporter (instance + storage
 * type + host). Requests are applied in one loop turn, so a snapshot never interleaves with deltas of the same
 * reporter (SNAPSHOT_IN_PROGRESS cannot happen here); item validation happens before any side effect of that
 * item, request-shape validation before any side effect at all.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "array.h"
#include "block_index.h"
#include "block_record.h"
#include "clock.h"
#include "fault_injection.h"
#include "group.h"
#include "kvcm_state.h"
#include "log.h"
#include "mmc/mmc.h"
#include "quota.h"
#include "report_event.h"
#include "reporter.h"
#include "storage.h"
#include "wire_enums.h"

/* Blocks looked up this many places ahead are fetched: a lookup is a cache miss or two, the rest of an ADD is not. */
#define PREFETCH_AHEAD 8

/* What one request needs while its events are applied. */
struct report {
	struct call *c;
	report_reply_enc *enc;
	void *out;
	struct storage *storage;
	int type;
	const char *host;
	struct reporter *r;
	uint64_t retry_after_ms;
	bool snapshot_committed, host_down;
	const char *medium; /* the medium whose location name is in loc (most requests report one medium) */
	char loc[2 * KVCM_NAME_MAX];
	int64_t *dirty; /* keys of the blocks whose records are to be written when all events are applied */
	size_t ndirty, capdirty;
	int64_t *failed; /* keys whose record could not be written, in the order written */
	size_t nfailed, capfailed;
	bool failed_untracked;      /* a failed key could not be noted: every mutation counts as failed */
	const struct fault *wfault; /* FAULT_REPORT_WRITE for this request */
	uint32_t writes;
};

/* uri with s_version=gen added as its last query parameter (before any fragment), at out; returns its end. */
static char *versioned(char *out, const char *uri, const char *gen)
{
	size_t len = strlen(uri), cut = strcspn(uri, "#");
	char *p = out;

	memcpy(p, uri, cut);
	p += cut;
	*p++ = memchr(uri, '?', cut) ? '&' : '?';
	memcpy(p, "s_version=", 10);
	memcpy(p + 10, gen, GEN_LEN);
	p += 10 + GEN_LEN;
	memcpy(p, uri + cut, len - cut + 1);
	return p + len - cut + 1;
}

/* The reporter's location name for medium (kvs#<type>#<medium>#<host>); NULL when it does not fit. */
static const char *location_id(struct report *rp, const char *medium)
{
	if (rp->medium && strcmp(rp->medium, medium) == 0)
		return rp->loc;
	rp->medium = NULL;
	if (er_key(rp->loc, sizeof(rp->loc), rp->type, medium, rp->host))
		return NULL;
	rp->medium = medium;
	return rp->loc;
}

static void note_failed(struct report *rp, int64_t key)
{
	int64_t *f = array_grow(rp->failed, &rp->capfailed, rp->nfailed + 1, sizeof(*f), 16);

	if (!f) {
		rp->failed_untracked = true;
		return;
	}
	rp->failed = f;
	rp->failed[rp->nfailed++] = key;
}

/*
 * The record of the block of key as it is now: written, or deleted when the block is gone or empty. A failed
 * write leaves the block in memory as the events made it, but not durable: the events that touched it are
 * answered INTERNAL_ERROR, and the caller retries them (reference §6.1 rule 10).
 */
static void store_block(struct report *rp, int64_t key)
{
	struct instance *inst = rp->c->inst;
	struct block *b = block_find(inst, key);
	int rc;

	rp->writes++;
	if (rp->wfault && (!rp->wfault->at_write || rp->wfault->at_write == (int32_t)rp->writes)) {
		log_error("op=kvcm_report_write key=%" PRId64 " err=\"fault injection\"", key);
		rc = MMC_ERROR;
	} else if (b && b->locs) {
		rc = block_record_put(rp->c->k, inst, b);
	} else {
		rc = block_record_del(rp->c->k, inst, key);
	}
	if (rc)
		note_failed(rp, key);
}

/*
 * Records are written after the last event rather than per event: a block touched twice is written once, and a
 * large request's writes come in one short burst in key order (the order of the records in LMDB) instead of
 * being spread over its whole run, where each 2 ms of a write transaction's age costs a commit and an fsync.
 */
static void mark_dirty(struct report *rp, int64_t key)
{
	int64_t *d = array_grow(rp->dirty, &rp->capdirty, rp->ndirty + 1, sizeof(*d), 64);

	if (!d) {
		store_block(rp, key);
		return;
	}
	rp->dirty = d;
	rp->dirty[rp->ndirty++] = key;
}

static int cmp_key(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void store_dirty(struct report *rp)
{
	size_t i;

	for (i = 1; i < rp->ndirty && rp->dirty[i - 1] <= rp->dirty[i]; i++)
		;
	if (i < rp->ndirty)
		qsort(rp->dirty, rp->ndirty, sizeof(*rp->dirty), cmp_key);
	for (i = 0; i < rp->ndirty; i++) {
		if (i + 2 * PREFETCH_AHEAD < rp->ndirty)
			block_prefetch(rp->c->inst, rp->dirty[i + 2 * PREFETCH_AHEAD], false);
		if (i + PREFETCH_AHEAD < rp->ndirty)
			block_prefetch(rp->c->inst, rp->dirty[i + PREFETCH_AHEAD], true);
		if (!i || rp->dirty[i] != rp->dirty[i - 1])
			store_block(rp, rp->dirty[i]);
	}
	free(rp->dirty);
	rp->dirty = NULL;
	rp->ndirty = rp->capdirty = 0;
}

/* Replaces old (if any) in block b of key by a location name holding names/uris; n == 0 removes it. */
static int put_location(struct report *rp, struct block *b, int64_t key, const char *name, struct location *old,
                        const char **names, const char **uris, uint16_t n)
{
	struct instance *inst = rp->c->inst;
	struct location *nl = NULL, **tail;

	if (!name)
		return KC_INVALID_ARGUMENT;
	if (!b && !n)
		return KC_OK;
	if (!b) {
		if (!(b = block_get(inst, key)))
			return KC_INTERNAL_ERROR;
		usage_add_key(inst);
	}
	if (n && !(nl = location_new_er(rp->storage, name, n, names, uris)))
		return KC_INTERNAL_ERROR;
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
	if (!b->locs) {
		block_remove(inst, b);
		usage_sub_key(inst);
	}
	mark_dirty(rp, key);
	return KC_OK;
}

static bool names_spec(const struct er_block *blk, const char *name)
{
	for (size_t i = 0; i < blk->nspecs; i++)
		if (strcmp(blk->specs[i].name, name) == 0)
			return true;
	return false;
}

/* Sets the specs of blk's block+medium: merge keeps the location's other specs, drop removes the named ones. */
static int write_specs(struct report *rp, const struct er_block *blk, bool merge, bool drop)
{
	const char *name = location_id(rp, blk->medium), *names[2 * ER_SPECS_MAX], *uris[2 * ER_SPECS_MAX];
	struct block *b = block_find(rp->c->inst, blk->key);
	/* the reported copy, not one of the same name waiting for its delete (a removeCache before this report):
	 * replacing nothing there appended a second live copy at each report, and a DELETE took only the first */
	struct location *old = b && name ? location_find_as(b, name, false) : NULL;
	char stack[2048], *buf = stack, *p;
	size_t need = 0;
	uint16_t n = 0;
	int rc = KC_OK;

	for (uint16_t j = 0; (merge || drop) && old && !old->pending && j < old->nspecs && n < ER_SPECS_MAX; j++) {
		if (!names_spec(blk, old->specs[j].name)) {
			names[n] = old->specs[j].name;
			uris[n++] = old->specs[j].uri;
		}
	}
	/* a location of more specs than a block record holds would be written, and lost (with the locations after it
	 * in its record) at the next load */
	if (!drop && n + blk->nspecs > ER_SPECS_MAX)
		return KC_INVALID_ARGUMENT;
	for (size_t i = 0; !drop && i < blk->nspecs; i++)
		need += strlen(blk->specs[i].uri) + GEN_LEN + 12;
	if (need > sizeof(stack) && !(buf = malloc(need)))
		return KC_INTERNAL_ERROR;
	p = buf;
	for (size_t i = 0; !drop && i < blk->nspecs; i++) {
		names[n] = blk->specs[i].name;
		uris[n++] = p;
		p = versioned(p, blk->specs[i].uri, rp->r->gen);
	}
	if (!drop || old)
		rc = put_location(rp, b, blk->key, name, old, names, uris, n);
	if (buf != stack)
		free(buf);
	return rc;
}

/* KC_OK once rp's reporter exists; KC_REACH_MAX_ENTITY_CAPACITY when the server keeps as many as it may. */
static int lazily_initialised(struct report *rp)
{
	struct call *c = rp->c;

	if (!rp->r)
		rp->r = reporter_get(c->k, c->inst, rp->storage, rp->type, rp->host);
	return rp->r ? KC_OK : KC_REACH_MAX_ENTITY_CAPACITY;
}

static int delta(struct report *rp, const struct er_event *ev)
{
	int rc;

	if (rp->r && rp->r->tombstone)
		return KC_NODE_NOT_REGISTERED;
	if ((rc = lazily_initialised(rp)) != KC_OK)
		return rc;
	if (!rp->r->gen[0])
		reporter_new_generation(rp->c->k, rp->r);
	reporter_merge_medium(rp->r, ev->b.medium);
	return write_specs(rp, &ev->b, ev->type == EV_ADD, ev->type == EV_DELETE);
}

/*
 * A failed snapshot is not rolled back (§6.5): what it wrote stays, under the candidate generation. The committed
 * generation is left as it was and the reporter turns soft (§6.11), so both the old data and the part written are
 * candidates; no cooldown starts and no cleanup, and a full retry converges.
 */
static int snapshot_abort(struct report *rp, const char *committed)
{
	struct reporter *r = rp->r;

	memcpy(r->gen, committed, sizeof(r->gen));
	r->strict = false;
	log_warn("op=kvcm_snapshot_abort instance=\"%s\" host=\"%s\" failed_writes=%zu", r->inst->id, r->host,
	         rp->nfailed);
	return KC_INTERNAL_ERROR;
}

static bool rate_limited(struct report *rp, uint64_t now)
{
	uint64_t min = (uint64_t)jn_i64(json_object_get(rp->storage->cfg, "event_report"), "snapshot_min_interval_ms");

	min = min ? min : rp->c->k->conf.er_snapshot_min_interval_ms;
	if (!rp->r->last_snapshot_ms || now - rp->r->last_snapshot_ms >= min)
		return false;
	rp->retry_after_ms = min - (now - rp->r->last_snapshot_ms);
	return true;
}

static int snapshot(struct report *rp, const struct er_event *ev)
{
	char committed[GEN_LEN + 1];
	uint64_t now = clock_ms();
	int rc;

	if (rp->r && rp->r->tombstone)
		return KC_NODE_NOT_REGISTERED;
	if ((rc = lazily_initialised(rp)) != KC_OK)
		return rc;
	if (rate_limited(rp, now))
		return KC_SNAPSHOT_RATE_LIMITED;
	memcpy(committed, rp->r->gen, sizeof(committed));
	reporter_new_generation(rp->c->k, rp->r);
	for (size_t i = 0; i < ev->nblocks; i++) {
		reporter_merge_medium(rp->r, ev->blocks[i].medium);
		if (write_specs(rp, &ev->blocks[i], false, false) != KC_OK) {
			store_dirty(rp);
			return snapshot_abort(rp, committed);
		}
	}
	/* the commit comes after the records are written: a snapshot whose metadata write failed is not committed */
	store_dirty(rp);
	if (rp->nfailed || rp->failed_untracked)
		return snapshot_abort(rp, committed);
	/* omitted blocks are hidden by the strict fence now and their metadata removed in the background */
	rp->r->strict = true;
	rp->r->last_snapshot_ms = now;
	rp->snapshot_committed = true;
	reporter_cleanup(rp->c->k, rp->r, rp->r->gen);
	return KC_OK;
}

static int liveness(struct report *rp, const struct er_event *ev)
{
	int rc;

	if (ev->type == EV_HEARTBEAT && rp->r && rp->r->tombstone)
		return KC_NODE_NOT_REGISTERED;
	if ((rc = lazily_initialised(rp)) != KC_OK)
		return rc;
	if (ev->type == EV_REGISTER && rp->r->tombstone) { /* a new lifecycle: nothing of the old one is visible */
		rp->r->tombstone = false;
		rp->r->strict = false;
		rp->r->last_snapshot_ms = 0;
	}
	for (size_t i = 0; i < ev->b.nspecs; i++)
		reporter_merge_medium(rp->r, ev->b.specs[i].name);
	rp->r->available = true;
	rp->r->last_heartbeat_ms = clock_ms();
	return KC_OK;
}

/* One item: invalid ones (checked when the events were read) have no effect at all. */
static int apply(struct report *rp, const struct er_event *ev)
{
	int rc;

	switch (ev->type) {
	case EV_ADD:
	case EV_DELETE:
		return delta(rp, ev);
	case EV_SNAPSHOT:
		return snapshot(rp, ev);
	case EV_HOST_DOWN:
		if ((rc = lazily_initialised(rp)) != KC_OK)
			return rc;
		reporter_tombstone(rp->c->k, rp->r);
		rp->host_down = true;
		return KC_OK;
	case EV_REGISTER:
	case EV_HEARTBEAT:
		return liveness(rp, ev);
	default:
		return KC_INVALID_ARGUMENT;
	}
}

/* §6.6: whole-request rules, checked before any side effect. */
static const char *shape_error(const struct er_events *e)
{
	size_t snaps = 0, deltas = 0, downs = 0;

	for (size_t i = 0; i < e->n; i++) {
		int t = e->ev[i].declared;

		snaps += t == EV_SNAPSHOT;
		deltas += t == EV_ADD || t == EV_DELETE;
		downs += t == EV_HOST_DOWN;
	}
	if (snaps > 1)
		return "at most one EVENT_BLOCK_SNAPSHOT per request";
	if (snaps && deltas)
		return "EVENT_BLOCK_SNAPSHOT cannot be mixed with EVENT_BLOCK_ADD/DELETE";
	if (downs && e->n > 1)
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
	int first = KC_OK;

	for (size_t i = 0; i < n && first == KC_OK; i++)
		first = results[i];
	call_status(c, first,
	            first == KC_OK ? "Events reported successfully" : "ReportEvent partially failed; see item_results");
	rp->enc(rp->out, &(struct report_reply){results, first != KC_OK ? n : 0,
	                                        rp->r && !rp->r->tombstone ? rp->r->gen : "", rp->retry_after_ms,
	                                        rp->host_down || (!had_generation && !rp->snapshot_committed),
	                                        jn_str(c->inst->group->cfg, "extra_info")});
}

/* The request-level checks of n events, before they are read; false when the call has been answered. */
static bool request_ok(struct report *rp, size_t n)
{
	struct call *c = rp->c;

	if (!rp->host[0] || strchr(rp->host, '#') || strlen(rp->host) >= KVCM_NAME_MAX) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {ReportEvent: {host_ip_port}}");
		return false;
	}
	if (rp->type != ST_EVENT_REPORT_L1P5 && rp->type != ST_EVENT_REPORT_L2) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {ReportEvent: {storage_type}}");
		return false;
	}
	if (n > c->k->conf.max_keys) {
		call_fail(c, KC_INVALID_ARGUMENT, "too many events (limit %u)", c->k->conf.max_keys);
		return false;
	}
	rp->storage = target_storage(c, rp->type);
	if (!rp->storage) {
		call_fail(c, KC_INSTANCE_NOT_EXIST, "instance group \"%s\" has no %s event-report storage",
		          c->inst->group->name, enum_name(&enum_storage_type, rp->type));
		return false;
	}
	return true;
}

/* The events read and the request's shape checked; false when the call has been answered. */
static bool events_ok(struct call *c, const struct er_events *e)
{
	const char *shape;

	if (!e) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return false;
	}
	if ((shape = shape_error(e))) {
		call_fail(c, KC_INVALID_ARGUMENT, "%s", shape);
		return false;
	}
	return true;
}

static void prefetch(const struct instance *inst, const struct er_events *e, size_t i, bool chain)
{
	if (i < e->n && (e->ev[i].type == EV_ADD || e->ev[i].type == EV_DELETE))
		block_prefetch(inst, e->ev[i].b.key, chain);
}

/*
 * A mutation whose block record could not be written failed, whatever its own result: the events folded into one
 * block's write share that write's result (§6.6), and the header then names the first failing item (§6.9).
 */
static void writes_failed(struct report *rp, const struct er_events *e, int *results)
{
	if (!rp->nfailed && !rp->failed_untracked)
		return;
	qsort(rp->failed, rp->nfailed, sizeof(*rp->failed), cmp_key);
	for (size_t i = 0; i < e->n; i++) {
		const struct er_event *ev = &e->ev[i];

		if ((ev->type != EV_ADD && ev->type != EV_DELETE) || results[i] != KC_OK)
			continue;
		if (rp->failed_untracked || bsearch(&ev->b.key, rp->failed, rp->nfailed, sizeof(*rp->failed), cmp_key))
			results[i] = KC_INTERNAL_ERROR;
	}
}

static void apply_all(struct report *rp, const struct er_events *e)
{
	struct call *c = rp->c;
	int *results = calloc(e->n, sizeof(*results));
	bool had_generation;

	if (!results) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return;
	}
	rp->wfault = fault_find(c, FAULT_REPORT_WRITE);
	rp->r = reporter_find(c->k, c->inst, rp->type, rp->host);
	had_generation = rp->r && !rp->r->tombstone && rp->r->gen[0];
	for (size_t i = 0; i < e->n; i++) {
		prefetch(c->inst, e, i + 2 * PREFETCH_AHEAD, false);
		prefetch(c->inst, e, i + PREFETCH_AHEAD, true);
		results[i] = apply(rp, &e->ev[i]);
	}
	store_dirty(rp);
	writes_failed(rp, e, results);
	reply(rp, results, e->n, had_generation);
	free(results);
	free(rp->failed);
}

void report_event_answer(struct call *c, struct report_request *in, report_reply_enc *enc, void *out)
{
	struct report rp = {.c = c, .enc = enc, .out = out, .host = in->host, .type = in->storage_type};

	if (call_input_failed(c, &in->d))
		return;
	if (!in->n) { /* a pure no-op: nothing is touched, every field at its default but the group's extra_info */
		call_ok(c, "");
		enc(out, &(struct report_reply){NULL, 0, "", 0, false, jn_str(c->inst->group->cfg, "extra_info")});
		return;
	}
	if (request_ok(&rp, in->n) && events_ok(c, in->events))
		apply_all(&rp, in->events);
}

void report_request_events(struct call *c, struct report_request *in, int (*read)(void *arg, struct er_events *e),
                           void *arg)
{
	in->events = NULL;
	if (!in->n || in->n > c->k->conf.max_keys)
		return;
	if (read(arg, &in->own) == 0)
		in->events = &in->own;
}

void report_request_free(struct report_request *in)
{
	er_events_free(&in->own);
}

static void report_reply_json(void *out, const struct report_reply *r)
{
	struct jw *w = out;

	jw_key(w, "item_results");
	jw_arr(w);
	for (size_t i = 0; i < r->nresults; i++)
		jw_str(w, code_name(r->results[i]));
	jw_arr_end(w);
	jw_kstr(w, "committed_snapshot_version", r->committed_snapshot_version);
	jw_ki64s(w, "retry_after_ms", (int64_t)r->retry_after_ms);
	jw_kbool(w, "snapshot_required", r->snapshot_required);
	jw_kstr(w, "extra_info", r->extra_info);
}

static int events_json(void *arg, struct er_events *e)
{
	return er_events_from_json(e, arg);
}

void report_request_json(struct call *c, struct report_request *in)
{
	json_t *events;

	memset(in, 0, sizeof(*in));
	er_events_init(&in->own);
	in->host = jd_str(&in->d, c->body, "host_ip_port");
	in->storage_type = jd_enum(&in->d, c->body, "storage_type", &enum_storage_type);
	events = jd_arr(&in->d, c->body, "events");
	if (c->parsed) { /* read by api_report_event_read */
		in->events = c->parsed;
		in->n = in->events->n;
	} else if (!in->d.bad) {
		in->n = json_array_size(events);
		report_request_events(c, in, events_json, events);
	}
}

void api_report_event(struct call *c)
{
	struct report_request in;

	report_request_json(c, &in);
	report_event_answer(c, &in, report_reply_json, &c->out);
	report_request_free(&in);
}

bool api_report_event_read(struct call *c, const char *body, size_t len)
{
	struct er_events *e = malloc(sizeof(*e));
	json_t *top;

	if (!e)
		return false;
	er_events_init(e);
	if (!er_events_scan(e, body, len, c->k->conf.max_keys, &top)) {
		free(e);
		return false;
	}
	c->body = top;
	c->parsed = e;
	return true;
}

void api_report_event_release(void *parsed)
{
	er_events_free(parsed);
	free(parsed);
}

void api_report_event_empty(struct jw *w)
{
	report_reply_json(w, &(struct report_reply){NULL, 0, "", 0, false, ""});
}

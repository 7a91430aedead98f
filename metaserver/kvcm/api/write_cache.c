/*
 * startWriteCache and finishWriteCache (reference kvcm.md §4.6-4.7), with our deliberate fixes: a key repeated
 * in one request is written once (later occurrences masked), and finish validates its mask before consuming the
 * session. Locations whose data is lost are pruned first (block_prune.h), so their blocks count as new.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "block_index.h"
#include "block_prune.h"
#include "block_record.h"
#include "deleter.h"
#include "fault_injection.h"
#include "hash.h"
#include "hmap.h"
#include "instance.h"
#include "kvcm_state.h"
#include "location_json.h"
#include "metrics.h"
#include "quota.h"
#include "reporter.h"
#include "storage_uri.h"
#include "write_cache.h"
#include "write_session.h"

/* What one startWriteCache request plans before it allocates. */
struct write_plan {
	const int64_t *keys; /* the request's */
	size_t n;
	bool *exists;
	size_t *fresh; /* indices (into keys) of the keys to write, in order */
	size_t nfresh;
	uint8_t *sel; /* nfresh x nspecs: the specs each fresh key provides (NULL: all) */
	uint64_t bytes, new_blocks;
};

static void plan_free(struct write_plan *p)
{
	free(p->exists);
	free(p->fresh);
	free(p->sel);
}

struct seen_key {
	struct hmap_node node;
	int64_t key;
};

static uint64_t seen_hash(const struct hmap_node *n)
{
	int64_t key = hmap_entry(n, struct seen_key, node)->key;

	return hash_bytes(&key, sizeof(key));
}

static bool seen_before(const struct hmap *t, int64_t key, uint64_t h)
{
	hmap_foreach_hash(t, h, n)
	{
		if (hmap_entry(n, struct seen_key, node)->key == key)
			return true;
	}
	return false;
}

/*
 * A key repeated earlier in the same request counts as existing: one location per distinct key. Sized for every key
 * up front, so the table never grows; out of memory, no key is masked (each is then written).
 */
static void mark_repeats(struct write_plan *p)
{
	struct seen_key *seen = calloc(p->n + 1, sizeof(*seen));
	struct hmap t;

	hmap_init(&t, seen_hash, p->n);
	for (size_t i = 0; seen && i < p->n; i++) {
		uint64_t h = hash_bytes(&p->keys[i], sizeof(p->keys[i]));

		if (seen_before(&t, p->keys[i], h)) {
			p->exists[i] = true;
			continue;
		}
		seen[i].key = p->keys[i];
		if (hmap_insert(&t, &seen[i].node, h))
			break;
	}
	hmap_free(&t);
	free(seen);
}

/* With spec groups, a block exists when one location holds every spec of its group. */
static bool covers(const struct location *l, const struct instance *inst, const struct spec_group *g)
{
	for (uint32_t s = 0; s < g->nspecs; s++) {
		bool found = false;

		for (uint16_t j = 0; j < l->nspecs && !found; j++)
			found = strcmp(l->specs[j].name, inst->specs[g->specs[s]].name) == 0;
		if (!found)
			return false;
	}
	return true;
}

/* Event-report replicas count when queries would return them. */
static bool block_exists(struct kvcm *k, const struct block *b, const struct instance *inst, const struct spec_group *g,
                         int32_t min_replicas)
{
	int32_t n = 0;

	for (const struct location *l = b ? b->locs : NULL; l; l = l->next)
		n += (!g || covers(l, inst, g)) && (!l->er_key || er_location_visible(k, inst, l));
	return n >= (min_replicas > 1 ? min_replicas : 1);
}

/* Resolves location_spec_group_names for n blocks; false when the call has been answered. */
static bool spec_groups(struct call *c, const struct write_request *in, size_t n, const struct spec_group ***out)
{
	const char **names = in->groups;
	size_t ng = in->ngroups;

	*out = NULL;
	if (call_input_failed(c, &in->in_groups))
		return false;
	if (!ng)
		return true;
	if (ng != n) {
		call_fail(c, KC_INTERNAL_ERROR, "location_spec_group_names has %zu entries for %zu blocks", ng, n);
		return false;
	}
	*out = calloc(n, sizeof(**out));
	for (size_t i = 0; *out && i < n; i++) {
		for (uint32_t g = 0; g < c->inst->nspec_groups && !(*out)[i]; g++)
			if (strcmp(c->inst->spec_groups[g].name, names[i]) == 0)
				(*out)[i] = &c->inst->spec_groups[g];
		if (!(*out)[i]) {
			call_fail(c, KC_INVALID_ARGUMENT, "location_spec_group_names: unknown group \"%.256s\"",
			          names[i]);
			free(*out);
			*out = NULL;
			return false;
		}
	}
	return true;
}

static bool plan(struct call *c, struct write_plan *p, const struct spec_group **groups, int32_t min_replicas)
{
	struct instance *inst = c->inst;

	p->exists = calloc(p->n, sizeof(bool));
	p->fresh = calloc(p->n, sizeof(size_t));
	if (groups)
		p->sel = calloc(p->n * inst->nspecs, 1);
	if (!p->exists || !p->fresh || (groups && !p->sel))
		return false;
	for (size_t i = 0; i < p->n; i++)
		p->exists[i] =
		    block_exists(c->k, block_find(inst, p->keys[i]), inst, groups ? groups[i] : NULL, min_replicas);
	mark_repeats(p);
	for (size_t i = 0; i < p->n; i++) {
		if (p->exists[i])
			continue;
		for (uint32_t j = 0; j < inst->nspecs; j++) {
			bool want = !groups;

			for (uint32_t s = 0; groups && s < groups[i]->nspecs; s++)
				want = want || groups[i]->specs[s] == j;
			if (groups)
				p->sel[p->nfresh * inst->nspecs + j] = want;
			p->bytes += want ? (uint64_t)(inst->specs[j].size > 0 ? inst->specs[j].size : 0) : 0;
		}
		p->new_blocks += !block_find(inst, p->keys[i]);
		p->fresh[p->nfresh++] = i;
	}
	return true;
}

/* The reply's block_mask: an offset when the existing keys are a clean prefix, else one bool per key. */
static struct mask reply_mask(const struct write_plan *p)
{
	struct mask m = {MASK_OFFSET, 0, p->exists, p->n};
	size_t first_missing = 0;

	while (first_missing < p->n && p->exists[first_missing])
		first_missing++;
	m.offset = (int32_t)first_missing;
	for (size_t i = first_missing; i < p->n; i++)
		if (p->exists[i])
			m.kind = MASK_BOOLS;
	return m;
}

static struct location *new_location(struct call *c, struct storage *s, char **uris, const uint8_t *sel)
{
	struct instance *inst = c->inst;
	const char *names[256], *us[256];
	uint16_t n = 0;
	struct location *l;

	for (uint32_t j = 0; j < inst->nspecs; j++) {
		if (sel && !sel[j])
			continue;
		names[n] = inst->specs[j].name;
		us[n++] = uris[j];
	}
	l = location_new(s, n, names, us);
	if (l) {
		kvcm_random_id(c->k, l->id, KVCM_LOC_ID_LEN);
		l->status = CLS_WRITING;
		l->create_time_us = kvcm_now_us();
	}
	return l;
}

/* Adds one WRITING location per fresh key. Returns the locations added (all of them unless out of memory). */
static size_t allocate(struct call *c, struct write_plan *p, struct storage *s, char **uris, struct location **out)
{
	struct instance *inst = c->inst;
	uint64_t now = kvcm_now_us();
	size_t done = 0;

	for (; done < p->nfresh; done++) {
		size_t i = p->fresh[done];
		bool fresh_block = !block_find(inst, p->keys[i]);
		struct block *b = block_get(inst, p->keys[i]);
		struct location *l, **tail;

		l = b ? new_location(c, s, uris + done * inst->nspecs, p->sel ? p->sel + done * inst->nspecs : NULL)
		      : NULL;
		if (!l) {
			if (b && !b->locs)
				block_remove(inst, b);
			break;
		}
		if (fresh_block) {
			usage_add_key(inst);
			b->has_prev = i > 0;
			b->prev_key = i > 0 ? p->keys[i - 1] : 0;
		}
		for (tail = &b->locs; *tail; tail = &(*tail)->next)
			;
		*tail = l;
		usage_add_location(inst, l);
		storage_hold_data(c->k, l);
		block_touch(inst, b, now);
		block_record_put(c->k, inst, b);
		out[done] = l;
	}
	return done;
}

static uint64_t session_timeout_ms(struct call *c, int32_t seconds, size_t nfresh)
{
	if (!nfresh)
		return c->k->conf.empty_session_timeout_ms;
	if (seconds <= 0)
		return 0; /* the reference: expires at the next sweep */
	if ((uint32_t)seconds > c->k->conf.max_write_timeout_s)
		seconds = (int32_t)c->k->conf.max_write_timeout_s;
	return (uint64_t)seconds * 1000;
}

static void write_reply_json(void *out, const struct write_reply *r)
{
	struct jw *o = out;

	jw_kstr(o, "write_session_id", r->session_id);
	jw_key(o, "block_mask");
	jw_mask(o, &r->mask);
	jw_key(o, "locations");
	jw_arr(o);
	for (size_t i = 0; i < r->nlocs; i++)
		jw_location(o, r->locs[i], NULL);
	jw_arr_end(o);
}

/* Undoes a partial allocation: what was added goes to the deleter at once. */
static void rollback(struct call *c, struct location **locs, size_t done, const struct write_plan *p)
{
	for (size_t d = 0; d < done; d++) {
		struct block *b = block_find(c->inst, p->keys[p->fresh[d]]);

		deleter_submit(c->k, c->inst, b, locs[d], 0);
		block_record_put(c->k, c->inst, b);
	}
}

/* A fresh key's URIs must not name data one of its block's locations (or a shared file's) still names. 0, or -1
 * out of memory. */
static int unique_uris(struct call *c, const struct write_plan *p, char **uris)
{
	uint32_t nspecs = c->inst->nspecs;

	for (size_t d = 0; d < p->nfresh; d++) {
		const struct block *b = block_find(c->inst, p->keys[p->fresh[d]]);

		for (uint32_t j = 0; j < nspecs; j++)
			if (uris[d * nspecs + j] && storage_uri_unique(c->k, b, &uris[d * nspecs + j]))
				return -1;
	}
	return 0;
}

static void start_write(struct call *c, struct write_plan *p, int32_t timeout_s, write_reply_enc *enc, void *out)
{
	char msg[512], **uris = NULL;
	struct location **locs = calloc(p->nfresh + 1, sizeof(*locs));
	struct storage *s = NULL;
	struct wsession *w = NULL;
	int64_t *fk = NULL;
	size_t done = 0;
	int code = KC_INTERNAL_ERROR;

	if (p->nfresh) {
		s = quota_pick_storage(c->k, c->inst, p->bytes, p->new_blocks, &code, msg, sizeof(msg));
		if (!s)
			goto fail;
		code = KC_INVALID_ARGUMENT;
		snprintf(msg, sizeof(msg), "cannot build URIs for the new blocks (names too long?)");
		uris = calloc(p->nfresh * c->inst->nspecs, sizeof(*uris));
		fk = malloc(p->nfresh * sizeof(*fk));
		if (!uris || !fk)
			goto fail;
		for (size_t d = 0; d < p->nfresh; d++)
			fk[d] = p->keys[p->fresh[d]];
		if (storage_make_uris(s, c->inst, fk, p->nfresh, p->sel, uris) || unique_uris(c, p, uris))
			goto fail;
	}
	code = KC_INTERNAL_ERROR;
	snprintf(msg, sizeof(msg), "too many open write sessions (limit %u, %u per instance)", c->k->conf.max_sessions,
	         c->k->conf.max_sessions_per_instance);
	if (!locs ||
	    !(w = session_create(c->k, c->inst, (uint32_t)p->nfresh, session_timeout_ms(c, timeout_s, p->nfresh))))
		goto fail;
	done = allocate(c, p, s, uris, locs);
	snprintf(msg, sizeof(msg), "out of memory");
	if (done < p->nfresh)
		goto fail;
	for (size_t d = 0; d < p->nfresh; d++) {
		w->items[d].key = p->keys[p->fresh[d]];
		memcpy(w->items[d].loc, locs[d]->id, sizeof(w->items[d].loc));
	}
	call_ok(c, "Write cache session started successfully");
	enc(out, &(struct write_reply){w->id, reply_mask(p), locs, p->nfresh});
	metrics_written(c->k->metrics, p->nfresh, p->bytes);
	goto out;
fail:
	rollback(c, locs, done, p);
	if (w)
		session_finish(c->k, w, NULL);
	call_fail(c, code, "%s", msg);
out:
	for (size_t i = 0; uris && i < p->nfresh * c->inst->nspecs; i++)
		free(uris[i]);
	free(uris);
	free(locs);
	free(fk);
}

/* The newest reference's replication write puts a replica on one named storage node; no storage here has nodes.
 * true when the call has been answered. */
static bool replication_refused(struct call *c, const struct write_request *in)
{
	if (!in->is_replication)
		return false;
	if (!in->target_node[0])
		call_fail(c, KC_INVALID_ARGUMENT,
		          "missing or invalid fields: {StartWriteCache: {replication_target_node_id}}");
	else
		call_fail(c, KC_UNSUPPORTED, "replication writes need node-aware storage, which mmc does not have");
	return true;
}

void write_cache_start(struct call *c, struct write_request *in, write_reply_enc *enc, void *out)
{
	struct write_plan p = {0};
	const struct spec_group **groups = NULL;

	if (fault_check(c, "StartWriteCache") || replication_refused(c, in) || call_input_failed(c, &in->head) ||
	    !keys_resolve(c, "StartWriteCache", &in->keys, &p.keys, &p.n) || !spec_groups(c, in, p.n, &groups))
		return;
	prune_keys(c->k, c->inst, p.keys, p.n); /* a block whose data was lost is written again */
	if (!plan(c, &p, groups, in->min_replicas))
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
	else
		start_write(c, &p, in->timeout_s, enc, out);
	free(groups);
	plan_free(&p);
}

void write_request_free(struct write_request *in)
{
	key_input_free(&in->keys);
	free(in->groups_mem);
}

void write_request_json(struct call *c, struct write_request *in)
{
	memset(in, 0, sizeof(*in));
	in->timeout_s = jd_i32(&in->head, c->body, "write_timeout_seconds");
	in->min_replicas = jd_i32(&in->head, c->body, "min_replica_count");
	in->is_replication = jd_bool(&in->head, c->body, "is_replication");
	in->target_node = jd_str(&in->head, c->body, "replication_target_node_id");
	key_input_json(c, &in->keys);
	in->ngroups =
	    jd_strs(&in->in_groups, c->body, "location_spec_group_names", &in->groups_mem, c->k->conf.max_keys);
	in->groups = in->groups_mem;
}

void api_start_write_cache(struct call *c)
{
	struct write_request in;

	write_request_json(c, &in);
	write_cache_start(c, &in, write_reply_json, &c->out);
	write_request_free(&in);
}

void api_start_write_cache_empty(struct jw *w)
{
	jw_kstr(w, "write_session_id", "");
	jw_key(w, "locations");
	jw_arr(w);
	jw_arr_end(w);
}

/* The finish mask indexes the session's locations. A bool mask shorter than them leaves the rest failed (the
 * seed's own example sends [true] for a session that, with its repeated key written once, has 2 locations). */
static bool finish_outcome(const struct mask *m, uint32_t n, bool *ok)
{
	if (m->kind == MASK_OFFSET) {
		if (m->offset < 0 || (uint32_t)m->offset > n)
			return false;
		for (uint32_t i = 0; i < n; i++)
			ok[i] = i < (uint32_t)m->offset;
		return true;
	}
	if (m->kind == MASK_BOOLS) {
		if (m->nvalues > n)
			return false;
		for (uint32_t i = 0; i < n; i++)
			ok[i] = i < m->nvalues && m->values[i];
		return true;
	}
	return n == 0; /* an empty mask fits a session without locations only */
}

void write_cache_finish(struct call *c, struct finish_request *in)
{
	struct wsession *w;
	bool *ok;

	if (fault_check(c, "FinishWriteCache") || call_input_failed(c, &in->d))
		goto out;
	if (!in->session_id[0] || !in->has_success_blocks) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {FinishWriteCache: {%s}}",
		          !in->session_id[0] ? "write_session_id" : "success_blocks");
		goto out;
	}
	w = session_find(c->k, in->session_id);
	if (!w) {
		call_fail(c, KC_INTERNAL_ERROR, "write_session_id has been deleted (unknown, expired or finished)");
		goto out;
	}
	if (w->inst != c->inst) {
		call_fail(c, KC_INVALID_ARGUMENT, "write session %s belongs to instance \"%.256s\"", w->id,
		          w->inst->id);
		goto out;
	}
	ok = calloc(w->n + 1, sizeof(bool));
	if (!ok || !finish_outcome(&in->mask, w->n, ok)) {
		/* validated before the session is consumed: the caller may retry with a right mask */
		call_fail(c, KC_INVALID_ARGUMENT, "success_blocks does not fit the session's %u locations", w->n);
		free(ok);
		goto out;
	}
	session_finish(c->k, w, ok);
	free(ok);
	call_ok(c, "Write cache session finished successfully");
out:
	mask_free(&in->mask);
}

void finish_request_json(struct call *c, struct finish_request *in)
{
	memset(in, 0, sizeof(*in));
	in->session_id = jd_str(&in->d, c->body, "write_session_id");
	in->has_success_blocks = jd_get(c->body, "success_blocks") != NULL;
	mask_read(&in->d, c->body, "success_blocks", c->k->conf.max_keys, &in->mask);
}

void api_finish_write_cache(struct call *c)
{
	struct finish_request in;

	finish_request_json(c, &in);
	write_cache_finish(c, &in);
}

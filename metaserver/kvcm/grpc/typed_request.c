/*
 * The hot requests from protobuf-c messages (typed_request.h). Where the JSON reader takes an absent member as
 * NULL (json_string_value of nothing), an empty proto3 string reads as NULL too: the mapping leaves it out.
 */
#include "typed_request.h"

#include <stdlib.h>
#include <string.h>

#include "kvcm_state.h"
#include "mmc/mmc.h"

typedef KvCacheManager__Proto__Meta__BlockMask pb_mask;
typedef KvCacheManager__Proto__Meta__EventItem pb_event;
typedef KvCacheManager__Proto__Meta__LocationSpec pb_spec;
typedef KvCacheManager__Proto__Meta__BlockSnapshotItem pb_snap_block;

/* A singular string member as the JSON reader sees it: absent when empty. */
static const char *member(const char *s)
{
	return s && *s ? s : NULL;
}

/* block_keys, else token_ids, with jd_i64s's limits. */
static void keys_pb(struct call *c, const int64_t *keys, size_t n, const int64_t *tokens, size_t nt,
                    struct key_input *in)
{
	size_t max = c->k->conf.max_keys;

	memset(in, 0, sizeof(*in));
	if (n > max) {
		in->d.too_many = true;
		return;
	}
	in->block_keys = keys;
	in->nblock = n;
	if (n)
		return;
	if (nt > max * 64)
		in->d.too_many = true;
	else if (nt) {
		in->tokens = tokens;
		in->ntokens = nt;
	}
}

/* A BlockMask as mask_read reads its JSON. */
static void mask_pb(struct call *c, const pb_mask *pm, struct mask *m, struct jd *d)
{
	const KvCacheManager__Proto__Meta__BoolMasksType *bm;

	memset(m, 0, sizeof(*m));
	if (!pm)
		return;
	if (pm->info_case == KV_CACHE_MANAGER__PROTO__META__BLOCK_MASK__INFO_OFFSET) {
		m->kind = MASK_OFFSET;
		m->offset = pm->offset;
	} else if (pm->info_case == KV_CACHE_MANAGER__PROTO__META__BLOCK_MASK__INFO_BOOL_MASKS) {
		bm = pm->bool_masks;
		m->kind = MASK_BOOLS;
		m->nvalues = bm->n_values;
		if (m->nvalues > c->k->conf.max_keys ||
		    (m->nvalues && !(m->values = calloc(m->nvalues, sizeof(bool))))) {
			d->too_many = true;
			mask_free(m);
			return;
		}
		for (size_t i = 0; i < m->nvalues; i++)
			m->values[i] = bm->values[i];
	}
}

/* A repeated string with jd_strs's limit: none when over it. */
static size_t strs_pb(char **v, size_t n, size_t max, const char ***out, struct jd *d)
{
	*out = NULL;
	if (n > max) {
		d->too_many = true;
		return 0;
	}
	*out = (const char **)v;
	return n;
}

void location_query_pb(struct call *c, const pb_location_request *m, struct location_query *q)
{
	q->query_type = m->query_type;
	q->sw_size = m->sw_size;
	q->filter.n = strs_pb(m->location_spec_names, m->n_location_spec_names, LOCATION_SPEC_NAMES_MAX,
	                      &q->filter.names, &q->head);
	spec_filter_sort(&q->filter);
	mask_pb(c, m->block_mask, &q->mask, &q->in_mask);
	keys_pb(c, m->block_keys, m->n_block_keys, m->token_ids, m->n_token_ids, &q->in_keys);
}

void write_request_pb(struct call *c, const pb_write_request *m, struct write_request *in)
{
	memset(in, 0, sizeof(*in));
	in->timeout_s = m->write_timeout_seconds;
	in->min_replicas = m->min_replica_count;
	in->is_replication = m->is_replication;
	in->target_node = m->replication_target_node_id;
	keys_pb(c, m->block_keys, m->n_block_keys, m->token_ids, m->n_token_ids, &in->keys);
	in->ngroups = strs_pb(m->location_spec_group_names, m->n_location_spec_group_names, c->k->conf.max_keys,
	                      &in->groups, &in->in_groups);
}

void finish_request_pb(struct call *c, const pb_finish_request *m, struct finish_request *in)
{
	memset(in, 0, sizeof(*in));
	in->session_id = m->write_session_id;
	in->has_success_blocks = m->success_blocks != NULL;
	mask_pb(c, m->success_blocks, &in->mask, &in->d);
}

/* A specs list (uris: LocationSpec messages, else names) in the arena; *shape_ok as json_specs says it. */
static struct er_spec *specs_pb(struct er_events *e, void *const *v, size_t n, bool uris, bool *shape_ok)
{
	struct er_spec *s;

	*shape_ok = n && n <= ER_SPECS_MAX;
	if (!*shape_ok)
		return NULL;
	s = arena_alloc(&e->mem, n * sizeof(*s));
	for (size_t i = 0; s && i < n; i++) {
		const pb_spec *sp = v[i];

		s[i].name = uris ? member(sp->name) : (const char *)v[i];
		s[i].uri = uris ? member(sp->uri) : NULL;
		*shape_ok = *shape_ok && s[i].name && (!uris || s[i].uri);
	}
	return s;
}

/* An ADD's, DELETE's or snapshot entry's fields; false when out of memory. */
static bool block_pb(struct er_events *e, const char *key, const char *medium, void *const *specs, size_t n, bool uris,
                     struct er_block *b, bool *ok)
{
	bool shape;
	struct er_spec *s = specs_pb(e, specs, n, uris, &shape);

	if (shape && !s)
		return false;
	*ok = er_block_read(b, member(key), member(medium), s, n, shape, uris);
	return true;
}

static bool snapshot_pb(struct er_events *e, const KvCacheManager__Proto__Meta__BlockSnapshotEventParams *p,
                        struct er_event *ev)
{
	size_t n = p->n_blocks;
	struct er_block *b = arena_alloc(&e->mem, (n + 1) * sizeof(*b));
	bool ok = n > 0; /* no blocks: the mapping leaves the array out */

	if (!b)
		return false;
	for (size_t i = 0; ok && i < n; i++) {
		const pb_snap_block *sb = p->blocks[i];

		if (!block_pb(e, sb->block_key, sb->medium, (void *const *)sb->specs, sb->n_specs, true, &b[i], &ok))
			return false;
	}
	return er_snapshot_blocks(e, ev, b, n, ok);
}

/* NODE_REGISTER's mediums (checked like spec names when there are any); HEARTBEAT has none. */
static bool mediums_pb(struct er_events *e, char **mediums, size_t n, struct er_event *ev)
{
	struct er_spec *s = arena_alloc(&e->mem, (n + 1) * sizeof(*s));

	if (!s)
		return false;
	for (size_t i = 0; i < n; i++)
		s[i] = (struct er_spec){mediums[i], NULL};
	ev->b.specs = s;
	ev->b.nspecs = n;
	if (n && !er_specs_ok(s, n, false))
		ev->type = 0;
	return true;
}

/* The EV_* type of the payload the item carries (the oneof's field numbers follow the event types), or 0. */
static int payload_type(const pb_event *it)
{
	return it->event_params_case ? (int)it->event_params_case - 1 : 0;
}

static bool item_pb(struct er_events *e, const pb_event *it, struct er_event *ev)
{
	int carried = payload_type(it);
	bool ok;

	ev->declared = it->event_type;
	ev->type = er_item_type(ev->declared, carried && carried != ev->declared, carried && carried == ev->declared);
	switch (ev->type) {
	case EV_ADD:
		if (!block_pb(e, it->block_add->block_key, it->block_add->medium, (void *const *)it->block_add->specs,
		              it->block_add->n_specs, true, &ev->b, &ok))
			return false;
		ev->type = ok ? ev->type : 0;
		return true;
	case EV_DELETE:
		if (!block_pb(e, it->block_delete->block_key, it->block_delete->medium,
		              (void *const *)it->block_delete->spec_names, it->block_delete->n_spec_names, false,
		              &ev->b, &ok))
			return false;
		ev->type = ok ? ev->type : 0;
		return true;
	case EV_SNAPSHOT:
		return snapshot_pb(e, it->block_snapshot, ev);
	case EV_REGISTER:
		return mediums_pb(e, it->node_register->mediums, it->node_register->n_mediums, ev);
	case EV_HEARTBEAT:
		return mediums_pb(e, NULL, 0, ev);
	default:
		return true;
	}
}

int er_events_from_pb(struct er_events *e, const pb_report_request *m)
{
	size_t n = m->n_events;

	e->ev = calloc(n + 1, sizeof(*e->ev));
	if (!e->ev)
		return MMC_ERROR;
	e->cap = n + 1;
	for (e->n = 0; e->n < n; e->n++)
		if (!item_pb(e, m->events[e->n], &e->ev[e->n]))
			return MMC_ERROR;
	return 0;
}

static int events_pb(void *arg, struct er_events *e)
{
	return er_events_from_pb(e, arg);
}

void report_request_pb(struct call *c, const pb_report_request *m, struct report_request *in)
{
	memset(in, 0, sizeof(*in));
	er_events_init(&in->own);
	in->host = m->host_ip_port;
	in->storage_type = m->storage_type;
	in->n = m->n_events;
	report_request_events(c, in, events_pb, (void *)m);
}

/*
 * The hot requests from protobuf-c messages (typed_request.h). Where the JSON reader takes an absent member as
 * NULL (json_string_value of nothing), an empty proto3 string reads as NULL too: the mapping leaves it out.
 */
#include "typed_request.h"

#include <stdlib.h>
#include <string.h>

#include "kvcm_state.h"

typedef KvCacheManager__Proto__Meta__BlockMask pb_mask;

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

#include "quota.h"

#include <stdio.h>
#include <string.h>

#include "group.h"
#include "kvcm_state.h"
#include "storage.h"

static void add(struct usage *u, int type, uint64_t bytes, bool sub)
{
	if (sub) {
		u->bytes -= bytes;
		u->bytes_by_type[type] -= bytes;
	} else {
		u->bytes += bytes;
		u->bytes_by_type[type] += bytes;
	}
}

void usage_add_location(struct instance *inst, const struct location *l)
{
	add(&inst->use, l->type % ST_COUNT, l->bytes, false);
	add(&inst->group->use, l->type % ST_COUNT, l->bytes, false);
	if (l->storage)
		l->storage->nlocations++;
}

void usage_sub_location(struct instance *inst, const struct location *l)
{
	add(&inst->use, l->type % ST_COUNT, l->bytes, true);
	add(&inst->group->use, l->type % ST_COUNT, l->bytes, true);
	if (l->storage)
		l->storage->nlocations--;
}

void usage_add_key(struct instance *inst)
{
	inst->use.keys++;
	inst->group->use.keys++;
}

void usage_sub_key(struct instance *inst)
{
	inst->use.keys--;
	inst->group->use.keys--;
}

static void pend(struct usage *u, int type, uint64_t bytes, int keys, bool undo)
{
	if (undo) {
		u->pending_bytes -= bytes;
		u->pending_by_type[type] -= bytes;
		u->pending_keys -= (uint64_t)keys;
	} else {
		u->pending_bytes += bytes;
		u->pending_by_type[type] += bytes;
		u->pending_keys += (uint64_t)keys;
	}
}

static bool all_pending(const struct block *b)
{
	for (const struct location *l = b->locs; l; l = l->next)
		if (!l->pending)
			return false;
	return true;
}

void usage_pending(struct instance *inst, struct block *b, const struct location *l)
{
	int key = !b->pending_key && all_pending(b);

	b->pending_key = b->pending_key || key;
	pend(&inst->use, l->type % ST_COUNT, l->bytes, key, false);
	pend(&inst->group->use, l->type % ST_COUNT, l->bytes, key, false);
}

void usage_unpending(struct instance *inst, struct block *b, const struct location *l)
{
	/* the key stops being pending when the block goes, or when it holds a live location again */
	bool last = b->locs == l && !l->next;
	int key = b->pending_key && (last || !all_pending(b));

	if (key)
		b->pending_key = false;
	pend(&inst->use, l->type % ST_COUNT, l->bytes, key, true);
	pend(&inst->group->use, l->type % ST_COUNT, l->bytes, key, true);
}

/* CPS_ALWAYS_X / CPS_PREFER_X name one of the reference's types; 0 when the strategy prefers nothing. */
static int preferred_type(int prefer, bool *always)
{
	static const int types[] = {0,
	                            ST_3FS,
	                            ST_3FS,
	                            ST_MOONCAKE,
	                            ST_MOONCAKE,
	                            ST_TAIRMEMPOOL,
	                            ST_TAIRMEMPOOL,
	                            ST_VCNS_3FS,
	                            ST_VCNS_3FS,
	                            ST_TAIRMEMPOOL_SSD,
	                            ST_TAIRMEMPOOL_SSD};

	*always = prefer > 0 && prefer <= 10 && prefer % 2 == 1;
	return prefer > 0 && prefer <= 10 ? types[prefer] : 0;
}

static bool type_has_room(const struct group *g, int type, uint64_t bytes)
{
	int64_t cap = g->type_capacity[type % ST_COUNT];

	return cap <= 0 || g->use.bytes_by_type[type % ST_COUNT] + bytes <= (uint64_t)cap;
}

struct storage *quota_pick_storage(struct kvcm *k, struct instance *inst, uint64_t bytes, uint64_t new_keys, int *code,
                                   char *msg, size_t msglen)
{
	struct group *g = inst->group;
	struct storage *first = NULL, *pref = NULL, *s;
	const char *missing = NULL;
	bool always, any = false;
	int want = preferred_type(g->prefer, &always);
	size_t i;
	json_t *v;

	*code = KC_INTERNAL_ERROR;
	if (g->max_key_count > 0 && inst->use.keys + new_keys > (uint64_t)g->max_key_count) {
		snprintf(msg, msglen, "instance \"%s\" would exceed max_key_count %lld (%llu keys + %llu new)",
		         inst->id, (long long)g->max_key_count, (unsigned long long)inst->use.keys,
		         (unsigned long long)new_keys);
		return NULL;
	}
	if (g->capacity > 0 && g->use.bytes + bytes > (uint64_t)g->capacity) {
		snprintf(msg, msglen, "instance group \"%s\" quota exceeded (%llu + %llu bytes > %lld)", g->name,
		         (unsigned long long)g->use.bytes, (unsigned long long)bytes, (long long)g->capacity);
		return NULL;
	}
	json_array_foreach(group_candidates(g), i, v)
	{
		s = storage_find(k, json_string_value(v));
		if (!s && !missing)
			missing = json_string_value(v);
		if (!s || !s->available || storage_is_event_report(s))
			continue;
		any = true;
		if (!type_has_room(g, s->type, bytes))
			continue;
		if (!first)
			first = s;
		if (!pref && want && s->type == want)
			pref = s;
	}
	if (pref || (first && !always))
		return pref ? pref : first;
	if (!any && missing) {
		snprintf(msg, msglen,
		         "no writable storage in instance group \"%s\": candidate storage \"%s\" does not exist",
		         g->name, missing);
		return NULL;
	}
	snprintf(msg, msglen, "%s in instance group \"%s\"",
	         !any              ? "no writable storage (all candidates unavailable)"
	         : always && first ? "no storage of the type data_storage_strategy requires"
	                           : "storage type quota exceeded for every candidate",
	         g->name);
	return NULL;
}

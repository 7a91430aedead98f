#include "state_load.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "block_index.h"
#include "block_record.h"
#include "block_scan.h"
#include "deleter.h"
#include "group.h"
#include "instance.h"
#include "kvcm_state.h"
#include "kvcm_store.h"
#include "log.h"
#include "mmc/mmc.h"
#include "quota.h"
#include "storage.h"
#include "storage_uri.h"

/* What the records read so far have led to. */
struct loading {
	struct kvcm *k;
	struct instance *inst; /* of the block records being read: they come by instance uid */
	uint64_t uid;
};

/* A group as written by any earlier version, in today's canonical form: fields added since take their defaults. */
static json_t *group_upgrade(json_t *v)
{
	struct jd d = {0};
	json_t *cfg = jd_normalize(&d, v, group_schema);

	return cfg ? cfg : json_incref(v);
}

static int load_json(void *arg, enum store_table t, const char *name, json_t *v)
{
	struct kvcm *k = ((struct loading *)arg)->k;
	char msg[256];

	switch (t) {
	case STORE_STORAGES:
		return storage_load(k, v, msg, sizeof(msg)) == KC_OK ? 0 : -1;
	case STORE_GROUPS:
		v = group_upgrade(v);
		if (group_add(k, v, false, false, msg, sizeof(msg)) == KC_OK)
			return 0;
		json_decref(v);
		return MMC_ERROR;
	case STORE_INSTANCES:
		return instance_load(k, v, msg, sizeof(msg)) ? 0 : -1;
	case STORE_ACCOUNTS:
		return account_load(k, name, v);
	case STORE_REMOVED:
		instance_load_removed(k, v);
		return 0;
	default:
		return MMC_ERROR;
	}
}

static struct instance *by_uid(struct kvcm *k, uint64_t uid)
{
	hmap_foreach(&k->instances, l)
	{
		struct instance *inst = hmap_entry(l, struct instance, hlink);

		if (inst->uid == uid)
			return inst;
	}
	for (struct list *it = k->zombie_instances.next; it != &k->zombie_instances; it = it->next)
		if (list_entry(it, struct instance, zombie_link)->uid == uid)
			return list_entry(it, struct instance, zombie_link);
	return NULL;
}

/* Instances removed before the restart, their deletes cut short: every block they still hold goes to the deleter
 * (its data unlinked or dropped), and one with none left goes at once, with its record. */
static void finish_removed(struct kvcm *k)
{
	struct list *it, *next;

	for (it = k->zombie_instances.next; it != &k->zombie_instances; it = next) {
		struct instance *inst = list_entry(it, struct instance, zombie_link);

		next = it->next;
		instance_hold(inst);
		if (inst->blocks.n && trim_instance(k, inst, NULL, NULL))
			log_error("op=kvcm_load removed_instance=\"%s\" err=\"out of memory: its data is not deleted\"",
			          inst->id);
		instance_release(k, inst);
	}
}

/* One block record: its locations counted in usage and file references; an empty one is dropped. */
static void load_block(void *arg, uint64_t uid, int64_t key, const void *rec, size_t len)
{
	struct loading *ld = arg;
	struct kvcm *k = ld->k;
	struct block *b;

	if (!ld->inst || uid != ld->uid) {
		ld->uid = uid;
		ld->inst = by_uid(k, uid);
	}
	if (!ld->inst) {
		store_del_block(&k->store, uid, key); /* its instance was removed */
		return;
	}
	if (!(b = block_get(ld->inst, key)))
		return;
	block_record_read(k, b, rec, len);
	for (struct location *l = b->locs; l; l = l->next) {
		usage_add_location(ld->inst, l);
		storage_hold_data(k, l);
	}
	if (!b->locs) {
		block_remove(ld->inst, b);
		block_record_del(k, ld->inst, key);
		return;
	}
	usage_add_key(ld->inst);
}

static int by_lru(const void *a, const void *b)
{
	const struct block *x = *(struct block *const *)a, *y = *(struct block *const *)b;

	return x->lru_time_us < y->lru_time_us ? -1 : x->lru_time_us > y->lru_time_us;
}

/* Records come in key order: rebuild the LRU from the stamps, and sweep what no session owns any more. */
static void settle(struct kvcm *k, struct instance *inst, uint64_t *swept)
{
	struct block **all = malloc((inst->blocks.n + 1) * sizeof(*all));
	size_t n = 0;

	if (!all)
		return;
	for (struct list *it = inst->lru.next; it != &inst->lru; it = it->next)
		all[n++] = list_entry(it, struct block, lru_link);
	qsort(all, n, sizeof(*all), by_lru);
	list_init(&inst->lru);
	for (size_t i = 0; i < n; i++)
		list_add_tail(&inst->lru, &all[i]->lru_link);
	for (size_t i = 0; i < n; i++) {
		bool changed = false;

		for (struct location *l = all[i]->locs; l; l = l->next) {
			if (l->status == CLS_WRITING || l->status == CLS_DELETING) {
				(*swept) += l->status == CLS_WRITING;
				deleter_submit(k, inst, all[i], l, 0);
				changed = true;
			}
		}
		if (changed)
			block_record_put(k, inst, all[i]);
	}
	free(all);
}

int state_load(struct kvcm *k)
{
	static const struct store_reader reader = {load_json, load_block};
	struct loading ld = {k, NULL, 0};
	uint64_t swept = 0, blocks = 0, ceiling = 0;

	if (store_next_uid(&k->store, &ceiling) || store_read(&k->store, &reader, &ld))
		return MMC_ERROR;
	if (ceiling > k->next_uid) /* uids of instances removed since: their blocks' records may still be stored */
		k->next_uid = ceiling;
	hmap_foreach(&k->instances, l)
	{
		struct instance *inst = hmap_entry(l, struct instance, hlink);

		settle(k, inst, &swept);
		blocks += inst->blocks.n;
	}
	finish_removed(k);
	log_info("op=kvcm_load storages=%s instances=%" PRIu64 " blocks=%" PRIu64 " orphaned_writing=%" PRIu64,
	         list_empty(&k->storages) ? "0" : ">0", k->instances.n, blocks, swept);
	return 0;
}

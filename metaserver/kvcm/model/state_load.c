/*
 * Loading KVCM's durable state at start-up (the read side of store/kvcm_store.c). Write sessions do not survive a
 * restart, so every CLS_WRITING location found here is an orphan: it is swept (deleted at once), and so is every
 * CLS_DELETING one whose deletion the restart interrupted.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "block_index.h"
#include "deleter.h"
#include "group.h"
#include "instance.h"
#include "kvcm_state.h"
#include "kvcm_store.h"
#include "log.h"
#include "persist.h"
#include "quota.h"
#include "storage.h"
#include "storage_uri.h"

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static bool take(struct reader *r, void *out, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return false;
	}
	memcpy(out, r->p, n);
	r->p += n;
	return true;
}

/* A length-prefixed string, NUL-terminated into a fresh buffer. */
static char *take_str(struct reader *r, int lenbytes)
{
	uint32_t len = 0;
	char *s;

	if (!take(r, &len, (size_t)lenbytes) || (size_t)(r->end - r->p) < len) {
		r->bad = true;
		return NULL;
	}
	s = malloc(len + 1);
	if (s) {
		memcpy(s, r->p, len);
		s[len] = '\0';
	}
	r->p += len;
	return s;
}

typedef int (*json_row_fn)(struct kvcm *k, const char *key, json_t *v);

static int each_json(struct kvcm *k, MDB_txn *txn, MDB_dbi dbi, json_row_fn fn)
{
	MDB_cursor *cur;
	MDB_val key, val;
	int rc = 0;

	if (mdb_cursor_open(txn, dbi, &cur))
		return -1;
	while (mdb_cursor_get(cur, &key, &val, MDB_NEXT) == 0) {
		json_error_t e;
		json_t *v = json_loadb(val.mv_data, val.mv_size, 0, &e);
		char name[KVCM_NAME_MAX + 1];

		snprintf(name, sizeof(name), "%.*s", (int)key.mv_size, (const char *)key.mv_data);
		if (!v || fn(k, name, v))
			log_error("op=kvcm_load err=\"bad record %s\"", name);
		json_decref(v);
	}
	mdb_cursor_close(cur);
	return rc;
}

static int load_storage(struct kvcm *k, const char *key, json_t *v)
{
	char msg[256];
	json_t *cfg = json_incref(json_object_get(v, "config"));

	if (storage_add(k, cfg, json_is_true(json_object_get(v, "is_available")), false, msg, sizeof(msg)) == KC_OK)
		return 0;
	json_decref(cfg);
	return -1;
}

static int load_group(struct kvcm *k, const char *key, json_t *v)
{
	char msg[256];

	if (group_add(k, json_incref(v), false, false, msg, sizeof(msg)) == KC_OK)
		return 0;
	json_decref(v);
	return -1;
}

static int load_instance(struct kvcm *k, const char *key, json_t *v)
{
	char msg[256];

	return instance_load(k, v, msg, sizeof(msg)) ? 0 : -1;
}

static struct location *read_location(struct kvcm *k, struct reader *r)
{
	char *id, *sname, *names[256] = {0}, *uris[256] = {0};
	uint8_t status = 0, type = 0;
	uint64_t ctime = 0;
	uint16_t nspecs = 0, j;
	struct location *l = NULL;
	struct storage *s;

	id = take_str(r, 2);
	take(r, &status, 1);
	take(r, &type, 1);
	take(r, &ctime, 8);
	sname = take_str(r, 2);
	take(r, &nspecs, 2);
	for (j = 0; j < nspecs && j < 256 && !r->bad; j++) {
		names[j] = take_str(r, 2);
		uris[j] = take_str(r, 4);
	}
	s = sname ? storage_find(k, sname) : NULL;
	if (!r->bad && s && id && nspecs <= 256)
		l = location_new_er(s, strncmp(id, "kvs#", 4) == 0 ? id : NULL, nspecs, (const char *const *)names,
		                    (const char *const *)uris);
	if (l) {
		if (!l->er_key)
			snprintf(l->id, sizeof(l->id), "%s", id);
		l->status = status;
		l->type = type;
		l->create_time_us = ctime;
	}
	for (j = 0; j < 256; j++) {
		free(names[j]);
		free(uris[j]);
	}
	free(sname);
	free(id);
	return l;
}

static void read_block(struct kvcm *k, struct instance *inst, int64_t key, struct reader *r)
{
	uint8_t version = 0, has_prev = 0;
	uint16_t nlocs = 0;
	struct block *b = block_get(inst, key);
	struct location **tail;

	if (!b)
		return;
	take(r, &version, 1);
	take(r, &has_prev, 1);
	take(r, &b->prev_key, 8);
	take(r, &b->lru_time_us, 8);
	take(r, &nlocs, 2);
	b->has_prev = has_prev;
	tail = &b->locs;
	for (uint16_t i = 0; i < nlocs && !r->bad; i++) {
		struct location *l = read_location(k, r);

		if (!l)
			continue;
		*tail = l;
		tail = &l->next;
		usage_add_location(inst, l);
		storage_hold_data(k, l);
	}
	if (!b->locs) {
		block_remove(inst, b);
		store_del_block(k, inst, key);
		return;
	}
	usage_add_key(inst);
}

static struct instance *by_uid(struct kvcm *k, uint64_t uid)
{
	chain_foreach(&k->instances, l)
	{
		struct instance *inst = chain_entry(l, struct instance, hlink);

		if (inst->uid == uid)
			return inst;
	}
	return NULL;
}

static void load_blocks(struct kvcm *k, MDB_txn *txn)
{
	struct instance *inst = NULL;
	MDB_cursor *cur;
	MDB_val key, val;
	uint64_t uid = 0;

	if (mdb_cursor_open(txn, k->db_blocks, &cur))
		return;
	while (mdb_cursor_get(cur, &key, &val, MDB_NEXT) == 0) {
		const uint8_t *kb = key.mv_data;
		uint64_t u = 0, kk = 0;
		struct reader r = {val.mv_data, (const uint8_t *)val.mv_data + val.mv_size, false};

		if (key.mv_size != 16)
			continue;
		for (int i = 0; i < 8; i++) {
			u = u << 8 | kb[i];
			kk = kk << 8 | kb[8 + i];
		}
		if (!inst || u != uid) {
			uid = u;
			inst = by_uid(k, u);
		}
		if (inst)
			read_block(k, inst, (int64_t)(kk ^ UINT64_C(0x8000000000000000)), &r);
		else
			persist_del(k->persist, k->db_blocks, key.mv_data, key.mv_size);
	}
	mdb_cursor_close(cur);
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
			store_put_block(k, inst, all[i]);
	}
	free(all);
}

int store_load(struct kvcm *k)
{
	MDB_txn *txn;
	uint64_t swept = 0, blocks = 0;

	if (persist_read_begin(k->persist, &txn))
		return -1;
	each_json(k, txn, k->db_storages, load_storage);
	each_json(k, txn, k->db_groups, load_group);
	each_json(k, txn, k->db_instances, load_instance);
	load_blocks(k, txn);
	mdb_txn_abort(txn);
	chain_foreach(&k->instances, l)
	{
		struct instance *inst = chain_entry(l, struct instance, hlink);

		settle(k, inst, &swept);
		blocks += inst->blocks.n;
	}
	log_info("op=kvcm_load storages=%s instances=%" PRIu64 " blocks=%" PRIu64 " orphaned_writing=%" PRIu64,
	         list_empty(&k->storages) ? "0" : ">0", k->instances.n, blocks, swept);
	return 0;
}

#include "kvcm_store.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "block_index.h"
#include "deleter.h"
#include "group.h"
#include "instance.h"
#include "kvcm_state.h"
#include "log.h"
#include "mmc/mmc.h"
#include "persist.h"
#include "quota.h"
#include "storage.h"
#include "storage_uri.h"

#define BLOCK_RECORD_VERSION 2

int store_open(struct kvcm *k)
{
	if (persist_dbi(k->persist, "kvcm_meta", &k->db_meta) ||
	    persist_dbi(k->persist, "kvcm_storages", &k->db_storages) ||
	    persist_dbi(k->persist, "kvcm_groups", &k->db_groups) ||
	    persist_dbi(k->persist, "kvcm_instances", &k->db_instances) ||
	    persist_dbi(k->persist, "kvcm_blocks", &k->db_blocks))
		return -1;
	return 0;
}

static void put_json(struct kvcm *k, MDB_dbi dbi, const char *key, json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);

	if (!s) {
		log_error("op=kvcm_store err=\"cannot encode %s\"", key);
		return;
	}
	persist_put(k->persist, dbi, key, strlen(key), s, strlen(s));
	k->store_writes++;
	free(s);
}

static int del_key(struct kvcm *k, MDB_dbi dbi, const void *key, size_t len)
{
	k->store_writes++;
	return persist_del(k->persist, dbi, key, len);
}

bool store_initialized(struct kvcm *k)
{
	MDB_txn *txn;
	MDB_val key = {11, "initialized"}, v;
	bool yes;

	if (persist_read_begin(k->persist, &txn))
		return false;
	yes = mdb_get(txn, k->db_meta, &key, &v) == 0;
	mdb_txn_abort(txn);
	return yes;
}

void store_mark_initialized(struct kvcm *k)
{
	persist_put(k->persist, k->db_meta, "initialized", 11, "1", 1);
	k->store_writes++;
}

void store_put_storage(struct kvcm *k, const struct storage *s)
{
	json_t *j = json_pack("{s:b, s:O}", "is_available", s->available, "config", s->cfg);

	put_json(k, k->db_storages, s->name, j);
	json_decref(j);
}

void store_del_storage(struct kvcm *k, const struct storage *s)
{
	del_key(k, k->db_storages, s->name, strlen(s->name));
}

void store_put_group(struct kvcm *k, const struct group *g)
{
	put_json(k, k->db_groups, g->name, g->cfg);
}

void store_del_group(struct kvcm *k, const struct group *g)
{
	del_key(k, k->db_groups, g->name, strlen(g->name));
}

void store_put_instance(struct kvcm *k, const struct instance *inst)
{
	json_t *j = instance_record(inst);

	put_json(k, k->db_instances, inst->id, j);
	json_decref(j);
}

void store_del_instance(struct kvcm *k, const struct instance *inst)
{
	del_key(k, k->db_instances, inst->id, strlen(inst->id));
}

/* (uid, key) big-endian, with the sign bit flipped so records sort by key within an instance. */
static void block_key(uint8_t out[16], uint64_t uid, int64_t key)
{
	uint64_t k2 = (uint64_t)key ^ UINT64_C(0x8000000000000000);

	for (int i = 0; i < 8; i++) {
		out[i] = (uint8_t)(uid >> (56 - 8 * i));
		out[8 + i] = (uint8_t)(k2 >> (56 - 8 * i));
	}
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

static uint8_t *put_bytes(uint8_t *p, const char *s, size_t n, int lenbytes)
{
	uint32_t len = (uint32_t)n;

	memcpy(p, &len, (size_t)lenbytes);
	memcpy(p + lenbytes, s, n);
	return p + lenbytes + n;
}

static size_t record_size(const struct block *b)
{
	size_t n = 2 + 8 + 8 + 2;

	for (const struct location *l = b->locs; l; l = l->next) {
		n += 2 + strlen(location_name(l)) + 2 + 8 + 2 + strlen(l->storage->name) + 2;
		for (uint16_t j = 0; j < l->nspecs; j++)
			n += 2 + strlen(l->specs[j].name) + 4 + strlen(l->specs[j].uri);
	}
	return n;
}

int store_put_block(struct kvcm *k, const struct instance *inst, const struct block *b)
{
	/* a snapshot writes thousands of records in one turn; most fit here and cost no malloc/free pair */
	uint8_t stack[4096];
	size_t n = record_size(b);
	uint8_t key[16], *buf = n <= sizeof(stack) ? stack : malloc(n), *p = buf;
	uint16_t nlocs = 0;
	int rc;

	if (!buf) {
		log_error("op=kvcm_store err=\"out of memory\"");
		return MMC_ERROR;
	}
	for (const struct location *l = b->locs; l; l = l->next)
		nlocs++;
	*p++ = BLOCK_RECORD_VERSION;
	*p++ = b->has_prev;
	p = put_u64(p, (uint64_t)b->prev_key);
	p = put_u64(p, b->lru_time_us);
	memcpy(p, &nlocs, 2);
	p += 2;
	for (const struct location *l = b->locs; l; l = l->next) {
		p = put_bytes(p, location_name(l), strlen(location_name(l)), 2);
		*p++ = l->status;
		*p++ = l->type;
		p = put_u64(p, l->create_time_us);
		p = put_bytes(p, l->storage->name, strlen(l->storage->name), 2);
		memcpy(p, &l->nspecs, 2);
		p += 2;
		for (uint16_t j = 0; j < l->nspecs; j++) {
			p = put_bytes(p, l->specs[j].name, strlen(l->specs[j].name), 2);
			p = put_bytes(p, l->specs[j].uri, strlen(l->specs[j].uri), 4);
		}
	}
	block_key(key, inst->uid, b->key);
	rc = persist_put(k->persist, k->db_blocks, key, sizeof(key), buf, (size_t)(p - buf));
	k->store_writes++;
	if (buf != stack)
		free(buf);
	return rc;
}

int store_del_block(struct kvcm *k, const struct instance *inst, int64_t key)
{
	uint8_t kb[16];

	block_key(kb, inst->uid, key);
	return del_key(k, k->db_blocks, kb, sizeof(kb));
}

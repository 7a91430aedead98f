#include "kvcm_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "persist.h"

static const char *const table_names[STORE_NTABLES] = {"kvcm_storages", "kvcm_groups", "kvcm_instances",
                                                       "kvcm_accounts"};

int store_open(struct kvcm_store *st, struct persist *p)
{
	st->persist = p;
	if (persist_dbi(p, "kvcm_meta", &st->meta) || persist_dbi(p, "kvcm_blocks", &st->blocks))
		return -1;
	for (int t = 0; t < STORE_NTABLES; t++)
		if (persist_dbi(p, table_names[t], &st->tables[t]))
			return -1;
	return 0;
}

bool store_initialized(struct kvcm_store *st)
{
	MDB_txn *txn;
	MDB_val key = {11, "initialized"}, v;
	bool yes;

	if (persist_read_begin(st->persist, &txn))
		return false;
	yes = mdb_get(txn, st->meta, &key, &v) == 0;
	mdb_txn_abort(txn);
	return yes;
}

void store_mark_initialized(struct kvcm_store *st)
{
	persist_put(st->persist, st->meta, "initialized", 11, "1", 1);
	st->writes++;
}

void store_put_json(struct kvcm_store *st, enum store_table t, const char *name, json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);

	if (!s) {
		log_error("op=kvcm_store table=%s name=\"%s\" err=\"cannot encode\"", table_names[t], name);
		return;
	}
	persist_put(st->persist, st->tables[t], name, strlen(name), s, strlen(s));
	st->writes++;
	free(s);
}

void store_del_json(struct kvcm_store *st, enum store_table t, const char *name)
{
	persist_del(st->persist, st->tables[t], name, strlen(name));
	st->writes++;
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

static void block_key_parse(const uint8_t in[16], uint64_t *uid, int64_t *key)
{
	uint64_t u = 0, k2 = 0;

	for (int i = 0; i < 8; i++) {
		u = u << 8 | in[i];
		k2 = k2 << 8 | in[8 + i];
	}
	*uid = u;
	*key = (int64_t)(k2 ^ UINT64_C(0x8000000000000000));
}

int store_put_block(struct kvcm_store *st, uint64_t uid, int64_t key, const void *rec, size_t len)
{
	uint8_t kb[16];

	block_key(kb, uid, key);
	st->writes++;
	return persist_put(st->persist, st->blocks, kb, sizeof(kb), rec, len);
}

int store_del_block(struct kvcm_store *st, uint64_t uid, int64_t key)
{
	uint8_t kb[16];

	block_key(kb, uid, key);
	st->writes++;
	return persist_del(st->persist, st->blocks, kb, sizeof(kb));
}

static int read_json(struct kvcm_store *st, MDB_txn *txn, enum store_table t, const struct store_reader *r, void *arg)
{
	MDB_cursor *cur;
	MDB_val key, val;

	if (mdb_cursor_open(txn, st->tables[t], &cur))
		return -1;
	while (mdb_cursor_get(cur, &key, &val, MDB_NEXT) == 0) {
		json_error_t e;
		json_t *v = json_loadb(val.mv_data, val.mv_size, 0, &e);
		char name[512]; /* an LMDB key is at most 511 bytes */

		snprintf(name, sizeof(name), "%.*s", (int)key.mv_size, (const char *)key.mv_data);
		if (!v || r->json(arg, t, name, v))
			log_error("op=kvcm_load table=%s err=\"bad record %s\"", table_names[t], name);
		json_decref(v);
	}
	mdb_cursor_close(cur);
	return 0;
}

static int read_blocks(struct kvcm_store *st, MDB_txn *txn, const struct store_reader *r, void *arg)
{
	MDB_cursor *cur;
	MDB_val key, val;
	uint64_t uid;
	int64_t k;

	if (mdb_cursor_open(txn, st->blocks, &cur))
		return -1;
	while (mdb_cursor_get(cur, &key, &val, MDB_NEXT) == 0) {
		if (key.mv_size != 16)
			continue;
		block_key_parse(key.mv_data, &uid, &k);
		r->block(arg, uid, k, val.mv_data, val.mv_size);
	}
	mdb_cursor_close(cur);
	return 0;
}

int store_read(struct kvcm_store *st, const struct store_reader *r, void *arg)
{
	MDB_txn *txn;
	int rc = 0;

	if (persist_read_begin(st->persist, &txn))
		return -1;
	for (int t = 0; t < STORE_NTABLES && !rc; t++)
		rc = read_json(st, txn, (enum store_table)t, r, arg);
	if (!rc)
		rc = read_blocks(st, txn, r, arg);
	mdb_txn_abort(txn);
	return rc;
}

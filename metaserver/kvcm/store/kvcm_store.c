#include "kvcm_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mmc/mmc.h"
#include "persist.h"

static const char *const table_names[STORE_NTABLES] = {"kvcm_storages", "kvcm_groups", "kvcm_instances",
                                                       "kvcm_accounts", "kvcm_removed_instances"};

int store_open(struct kvcm_store *st, struct persist *p)
{
	st->persist = p;
	if (persist_table(p, "kvcm_meta", &st->meta) || persist_table(p, "kvcm_blocks", &st->blocks))
		return MMC_ERROR;
	for (int t = 0; t < STORE_NTABLES; t++)
		if (persist_table(p, table_names[t], &st->tables[t]))
			return MMC_ERROR;
	/* memory is the truth: a call retried after a failed commit finds its change made and writes nothing, and
	 * others build on it (an instance in an auto-created group), so what a failed commit held goes again */
	persist_table_retry(st->meta);
	persist_table_retry(st->blocks);
	for (int t = 0; t < STORE_NTABLES; t++)
		persist_table_retry(st->tables[t]);
	return 0;
}

bool store_initialized(struct kvcm_store *st)
{
	char v[64];
	size_t len;

	return persist_get(st->persist, st->meta, "initialized", 11, v, sizeof(v), &len) == 0;
}

void store_mark_initialized(struct kvcm_store *st)
{
	persist_put(st->persist, st->meta, "initialized", 11, "1", 1);
	st->writes++;
}

void store_put_next_uid(struct kvcm_store *st, uint64_t next)
{
	persist_put(st->persist, st->meta, "next_uid", 8, &next, sizeof(next));
	st->writes++;
}

int store_next_uid(struct kvcm_store *st, uint64_t *next)
{
	size_t len = 0;
	int rc = persist_get(st->persist, st->meta, "next_uid", 8, next, sizeof(*next), &len);

	if (rc == MMC_OBJECT_NOT_EXISTS ||
	    (rc == 0 && len != sizeof(*next))) /* none, or not ours: numbered as before */
		*next = 0;
	return rc == MMC_OBJECT_NOT_EXISTS ? 0 : rc;
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

struct scan {
	struct kvcm_store *st;
	const struct store_reader *r;
	void *arg;
	enum store_table t;
};

static int read_json(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct scan *sc = arg;
	json_error_t e;
	json_t *v = json_loadb(val, vlen, 0, &e);
	char name[PERSIST_KEY_MAX + 1];

	snprintf(name, sizeof(name), "%.*s", (int)klen, (const char *)key);
	if (!v || sc->r->json(sc->arg, sc->t, name, v))
		log_error("op=kvcm_load table=%s err=\"bad record %s\"", table_names[sc->t], name);
	json_decref(v);
	return 0;
}

static int read_block(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct scan *sc = arg;
	uint64_t uid;
	int64_t k;

	if (klen != 16)
		return 0;
	block_key_parse(key, &uid, &k);
	sc->r->block(sc->arg, uid, k, val, vlen);
	return 0;
}

int store_read(struct kvcm_store *st, const struct store_reader *r, void *arg)
{
	struct scan sc = {st, r, arg, STORE_STORAGES};

	for (int t = 0; t < STORE_NTABLES; t++) {
		sc.t = (enum store_table)t;
		if (persist_scan(st->persist, st->tables[t], read_json, &sc))
			return MMC_ERROR;
	}
	return persist_scan(st->persist, st->blocks, read_block, &sc) ? -1 : 0;
}

/*
 * KVCM's durable state in the meta server's metadata store (LMDB or Redis, persist/persist.h): its own named tables,
 * written within the loop turn's group commit. The store knows tables, keys and bytes, not what a record means: the
 * model encodes its records (storages, groups and instances as canonical JSON; blocks in binary, model/block_record.c)
 * and rebuilds itself from them at start-up (model/state_load.c). Write sessions are never stored. Loop thread only.
 */
#ifndef MMC_KVCM_STORE_H
#define MMC_KVCM_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct persist;
struct persist_table;

/* The tables of named JSON records, read back in this order. */
/* STORE_REMOVED: instances removed whose data is still being deleted, by uid (a restart finishes their deletes) */
enum store_table { STORE_STORAGES, STORE_GROUPS, STORE_INSTANCES, STORE_ACCOUNTS, STORE_REMOVED, STORE_NTABLES };

struct kvcm_store {
	struct persist *persist;
	struct persist_table *meta, *blocks, *tables[STORE_NTABLES];
	uint64_t writes; /* bumped by every write: replies to requests that wrote wait for the commit */
};

/* Opens (creating) the tables in p. Returns 0 or MMC_ERROR. */
int store_open(struct kvcm_store *st, struct persist *p);
/* True once a startup config has been applied to this data dir (it is then never applied again). */
bool store_initialized(struct kvcm_store *st);
void store_mark_initialized(struct kvcm_store *st);

/* The instance uid ceiling: every uid given out is below it, durable with the instance record that took the uid.
 * A restart must not give a uid again whose block records may still be in the store (their deletes lost with a
 * crash): they would load as the new instance's. store_next_uid: the stored ceiling into *next (0 when none);
 * returns 0 or MMC_ERROR (the store could not be read). */
void store_put_next_uid(struct kvcm_store *st, uint64_t next);
int store_next_uid(struct kvcm_store *st, uint64_t *next);
/* Writes v (compact, members in order) as the record name of table t; logged when it cannot be encoded. */
void store_put_json(struct kvcm_store *st, enum store_table t, const char *name, json_t *v);
void store_del_json(struct kvcm_store *st, enum store_table t, const char *name);
/* Writes rec, len bytes, as the record of block key of instance uid. 0, or MMC_ERROR (logged): not durable. */
int store_put_block(struct kvcm_store *st, uint64_t uid, int64_t key, const void *rec, size_t len);
int store_del_block(struct kvcm_store *st, uint64_t uid, int64_t key);

/* What store_read() hands over, record by record (borrowed for the call). */
struct store_reader {
	/* a JSON record; nonzero: logged as a bad record */
	int (*json)(void *arg, enum store_table t, const char *name, json_t *v);
	/* a block record */
	void (*block)(void *arg, uint64_t uid, int64_t key, const void *rec, size_t len);
};

/*
 * Reads every record: the JSON tables in enum order, each by name, then the blocks by
 * instance uid and, within one, by key. A record that is not valid JSON is logged and skipped. Returns 0 or MMC_ERROR.
 */
int store_read(struct kvcm_store *st, const struct store_reader *r, void *arg);

#endif

/*
 * The meta server on its Redis metadata store, as an operator runs it: a private redis-server (appendfsync always)
 * on a free loopback port. Redis restarted while the server serves: puts fail with MMC_META_BACKUP_ERROR meanwhile,
 * gets keep working from memory, a new lender's mmc_init fails at once, puts recover by themselves, and a kill -9 of
 * the meta server afterwards loses no acknowledged put. The store's format version is checked at start (LMDB and
 * Redis), and a data dir of format 2 is moved to object records under ids; the Redis password comes from a file and
 * never shows in the log.
 */
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "redis_proc.h"
#include "store_fixture.h"

#define POOL  (64u << 20)
#define VALUE 4096
#define KEYS  20

static struct metaserver meta;
static struct redis_proc redis;
static char store_kv[128];

static void stop(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
	redis_proc_cleanup(&redis);
}

static void put_keys(mmc_store *s, const char *prefix)
{
	char key[64];

	for (int i = 0; i < KEYS; i++) {
		snprintf(key, sizeof(key), "%s/%d", prefix, i);
		fixture_put(s, key, VALUE, (uint64_t)i);
	}
}

static void keys_readable(mmc_store *s, const char *prefix)
{
	char key[64];

	for (int i = 0; i < KEYS; i++) {
		snprintf(key, sizeof(key), "%s/%d", prefix, i);
		cr_assert_eq(fixture_get(s, key, VALUE, (uint64_t)i), 0, "get %s", key);
	}
}

/* A store that registers a local service while Redis is down: its registration cannot be made durable, and
 * mmc_init says so at once (MMC_META_BACKUP_ERROR) instead of waiting out its heartbeat timeout for a reply the
 * server dropped and then reporting MMC_NOT_CONNECTED_META. */
static void lender_refused_while_redis_is_down(const char *url)
{
	mmc_local_config c = fixture_config(url, POOL);
	mmc_store *s = mmc_create();
	int rc;

	cr_assert_not_null(s);
	cr_assert_eq(mmc_setup(s, &c), 0);
	rc = mmc_init(s, 0, true);
	cr_assert_eq(rc, MMC_META_BACKUP_ERROR, "mmc_init of a lender while Redis is down: %d (%s)", rc,
	             mmc_strerror(rc));
	mmc_destroy(s);
}

Test(meta_store, puts_fail_while_redis_restarts_and_recover_without_losing_an_acknowledged_one, .fini = stop,
     .timeout = 180)
{
	const char *extra[] = {store_kv, NULL};
	static unsigned char buf[VALUE];
	mmc_store *s;
	char key[64];
	int rc = -1;

	cr_assert_eq(redis_proc_start(&redis, "always"), 0, "redis-server must start");
	/* the reference's key for the registry store */
	snprintf(store_kv, sizeof(store_kv), "kvcm.registry_storage.uri=%s", redis.uri);
	cr_assert_eq(metaserver_start(&meta, extra), 0);
	cr_assert(metaserver_log_has(&meta, "store=redis"), "the server runs on Redis");
	s = fixture_store(meta.url, true, POOL);
	put_keys(s, "before");

	redis_proc_kill(&redis);
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "during/%d", i);
		pattern_fill(buf, VALUE, 1000u + (uint64_t)i);
		rc = mmc_put_from(s, key, buf, VALUE, MMC_COPY_H2G, NULL);
		cr_assert_eq(rc, MMC_META_BACKUP_ERROR, "a put while Redis is down: %d (%s)", rc, mmc_strerror(rc));
	}
	keys_readable(s, "before"); /* from memory */
	lender_refused_while_redis_is_down(meta.url);

	cr_assert_eq(redis_proc_restart(&redis), 0);
	for (int i = 0; i < 100 && rc != 0; i++) {
		pattern_fill(buf, VALUE, 0);
		rc = mmc_put_from(s, "after/0", buf, VALUE, MMC_COPY_H2G, NULL);
		if (rc)
			usleep(100000);
	}
	cr_assert_eq(rc, 0, "puts recover once Redis is back: %s", mmc_strerror(rc));
	put_keys(s, "after");

	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, extra), 0);
	for (int i = 0; i < 200 && mmc_is_exist(s, "before/0") != 1; i++)
		usleep(50000);
	keys_readable(s, "before");
	keys_readable(s, "after");
	mmc_destroy(s);
}

/* kill -9 under batch puts on the Redis store: a batch whose result said OK for a key has that key afterwards. */
#define WRITERS   3
#define BATCH     16
#define MAX_CALLS 400

static mmc_store *bst;
static atomic_bool stop_batches;
static struct {
	int n;
	int ok[MAX_CALLS * BATCH];
} backed[WRITERS];

static void batch_key(char *buf, size_t len, int w, int i)
{
	snprintf(buf, len, "batch/%d/%d", w, i);
}

static void *batch_writer(void *arg)
{
	int w = (int)(intptr_t)arg;
	static _Thread_local unsigned char data[BATCH][VALUE];
	static _Thread_local char names[BATCH][64];
	const char *keys[BATCH];
	const void *bufs[BATCH];
	size_t sizes[BATCH];
	int results[BATCH];

	for (int c = 0; c < MAX_CALLS && !atomic_load(&stop_batches); c++) {
		for (int j = 0; j < BATCH; j++) {
			int i = c * BATCH + j;

			batch_key(names[j], sizeof(names[j]), w, i);
			pattern_fill(data[j], VALUE, (uint64_t)(w * 1000000 + i));
			keys[j] = names[j];
			bufs[j] = data[j];
			sizes[j] = VALUE;
		}
		if (mmc_batch_put_from(bst, keys, bufs, sizes, BATCH, MMC_COPY_H2G, NULL, results) != 0)
			continue;
		for (int j = 0; j < BATCH; j++)
			if (results[j] == 0)
				backed[w].ok[backed[w].n++] = c * BATCH + j;
		if (c % 8 == 7) /* bounds the pool use: the keys of this round stay */
			usleep(1000);
	}
	return NULL;
}

Test(meta_store, kill_9_during_batch_puts_loses_no_acknowledged_key_on_redis, .fini = stop, .timeout = 180)
{
	const char *extra[] = {store_kv, NULL};
	pthread_t th[WRITERS];
	char key[64];
	int total = 0, lost = 0;

	cr_assert_eq(redis_proc_start(&redis, "always"), 0, "redis-server must start");
	snprintf(store_kv, sizeof(store_kv), "ock.mmc.meta.store_uri=%s", redis.uri);
	cr_assert_eq(metaserver_start(&meta, extra), 0);
	bst = fixture_store(meta.url, true, 256u << 20);
	for (int w = 0; w < WRITERS; w++)
		cr_assert_eq(pthread_create(&th[w], NULL, batch_writer, (void *)(intptr_t)w), 0);
	for (int i = 0; i < 100 && backed[0].n < 4 * BATCH; i++)
		usleep(20000);
	/* deliberate: the stream goes on a while, so batches are in flight at the kill */
	usleep(200000);
	metaserver_kill(&meta); /* mid-stream: batches in flight fail, acknowledged ones must all be in Redis */
	atomic_store(&stop_batches, true);
	for (int w = 0; w < WRITERS; w++)
		pthread_join(th[w], NULL);
	cr_assert_eq(metaserver_restart(&meta, extra), 0);
	cr_assert_gt(backed[0].n, 0, "some batches were acknowledged before the kill");
	batch_key(key, sizeof(key), 0, backed[0].ok[0]);
	for (int i = 0; i < 200 && mmc_is_exist(bst, key) != 1; i++)
		usleep(50000);
	for (int w = 0; w < WRITERS; w++) {
		for (int j = 0; j < backed[w].n; j++, total++) {
			int i = backed[w].ok[j];

			batch_key(key, sizeof(key), w, i);
			if (fixture_get(bst, key, VALUE, (uint64_t)(w * 1000000 + i)) != 0 && lost++ < 5)
				cr_log_warn("acknowledged %s lost", key);
		}
	}
	cr_log_info("%d acknowledged batch keys checked after kill -9", total);
	cr_assert_eq(lost, 0, "%d of %d acknowledged keys lost", lost, total);
	mmc_destroy(bst);
}

/*
 * Redis comes back from a restart without its newest writes (no append-only file, a failover to a replica behind):
 * here, without the set entry that lists the objects' block. The meta server's connection is new, so what it knew of
 * the blocks is read again, and the block of the next puts is listed again; it kept believing the block listed, and
 * after a restart the load, which reads only listed blocks, found none of the acknowledged objects in it.
 */
Test(meta_store, a_block_redis_forgot_to_list_is_listed_again_after_a_reconnect, .fini = stop, .timeout = 120)
{
	const char *extra[] = {store_kv, NULL};
	char key[32], reply[64];
	mmc_store *s;

	cr_assert_eq(redis_proc_start(&redis, "always"), 0, "redis-server must start");
	snprintf(store_kv, sizeof(store_kv), "ock.mmc.meta.store_uri=%s", redis.uri);
	cr_assert_eq(metaserver_start(&meta, extra), 0);
	s = fixture_store(meta.url, true, 64u << 20);
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "before-%d", i);
		fixture_put(s, key, 4096, (uint64_t)i);
	}
	cr_assert_eq(redis_proc_cmd(&redis, "SREM mmc:p:objects_by_id 0", reply, sizeof(reply)), 0);
	cr_assert_str_eq(reply, ":1", "the first block was listed");
	cr_assert_eq(redis_proc_cmd(&redis, "CLIENT KILL TYPE normal", reply, sizeof(reply)), 0);
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "after-%d", i);
		for (int t = 0; t < 50 && mmc_put_from(s, key, (char[4096]){0}, 4096, MMC_COPY_H2G, NULL) != 0; t++)
			usleep(100000); /* the writer's connection was cut: a batch or two may fail */
	}
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, extra), 0);
	for (int i = 0; i < 200 && mmc_is_exist(s, "after-0") != 1; i++)
		usleep(50000);
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "before-%d", i);
		cr_expect_eq(mmc_is_exist(s, key), 1, "%s is gone after the restart", key);
		snprintf(key, sizeof(key), "after-%d", i);
		cr_expect_eq(mmc_is_exist(s, key), 1, "%s is gone after the restart", key);
	}
	mmc_destroy(s);
}

/*
 * A rewarm (SSD -> DRAM) gives its object a new id: its record moves, the old one deleted and the new one written in
 * one batch. With Redis down that batch fails; the delete was retried into the next batches, the new record was not,
 * and nobody was waiting to hear: once Redis was back the old record went, and after a restart the key was gone with
 * both. The new record is written again now, at each LRU checkpoint until a batch keeps it.
 */
Test(meta_store, a_rewarm_while_redis_is_down_keeps_its_record, .fini = stop, .timeout = 180)
{
	const char *extra[] = {store_kv, NULL};
	const char *k[] = {"rewarmed"};
	mmc_local_config c;
	char ssd[300];
	mmc_store *s;
	int rc = -1;

	cr_assert_eq(redis_proc_start(&redis, "always"), 0, "redis-server must start");
	snprintf(store_kv, sizeof(store_kv), "ock.mmc.meta.store_uri=%s", redis.uri);
	cr_assert_eq(metaserver_start(&meta, extra), 0);
	c = fixture_config(meta.url, 8u << 20);
	snprintf(ssd, sizeof(ssd), "%s/ssd.bin", meta.dir);
	snprintf(c.ssd_path, sizeof(c.ssd_path), "%s", ssd);
	c.ssd_size = 64u << 20;
	cr_assert_not_null(s = mmc_create());
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, true), 0);
	fixture_put(s, "rewarmed", 4096, 7);
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	redis_proc_kill(&redis);
	rc = mmc_prefetch_keys(s, k, 1, MMC_MEDIA_SSD, MMC_MEDIA_DRAM, 0);
	cr_log_info("the rewarm while Redis is down: %d (%s)", rc, mmc_strerror(rc));
	rc = -1;
	usleep(1500000); /* the rewarm's batch fails, and the LRU checkpoint's after it */
	cr_assert_eq(redis_proc_restart(&redis), 0);
	for (int i = 0; i < 100 && rc != 0; i++) { /* a batch that lands: the retried delete goes with it */
		rc = mmc_put_from(s, "after", (char[4096]){0}, 4096, MMC_COPY_H2G, NULL);
		if (rc)
			usleep(100000);
	}
	cr_assert_eq(rc, 0, "puts recover once Redis is back: %s", mmc_strerror(rc));
	usleep(2500000); /* the lost record is written again at the LRU checkpoint (every second) */
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, extra), 0);
	for (int i = 0; i < 200 && mmc_is_exist(s, "after") != 1; i++)
		usleep(50000);
	cr_expect_eq(mmc_is_exist(s, "rewarmed"), 1, "the rewarmed key is gone after the restart");
	cr_expect_eq(fixture_get(s, "rewarmed", 4096, 7), 0);
	mmc_destroy(s);
}

static void set_lmdb_format(const char *datadir, const char *version)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = {7, "version"}, v = {strlen(version), (void *)version};

	cr_assert_eq(mdb_env_create(&env), 0);
	mdb_env_set_maxdbs(env, 64);
	cr_assert_eq(mdb_env_open(env, datadir, MDB_NOTLS, 0644), 0);
	cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
	cr_assert_eq(mdb_dbi_open(txn, "mmc_format", 0, &dbi), 0, "the server wrote its format on first open");
	cr_assert_eq(mdb_get(txn, dbi, &k, &(MDB_val){0}), 0);
	cr_assert_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
	cr_assert_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

Test(meta_store, a_data_dir_of_a_newer_format_is_refused, .fini = stop, .timeout = 120)
{
	char datadir[300];

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	cr_assert_eq(metaserver_stop(&meta), 0);
	snprintf(datadir, sizeof(datadir), "%s/data", meta.dir);
	set_lmdb_format(datadir, "9");
	cr_assert_neq(metaserver_restart(&meta, NULL), 0, "a newer format must not be opened");
	cr_assert(metaserver_log_has(&meta, "metadata format 9"), "the log says why");
	set_lmdb_format(datadir, "1");
	cr_assert_eq(metaserver_restart(&meta, NULL), 0, "an older format opens (raised to the current one)");
}

/*
 * Rewrites a data dir as a format-2 server left it: every record of "objects_by_id" (under the object's id, value:
 * 32 bytes of header, checksum and stamp, 24 per blob, then the key) moved to "objects" under the key, as version
 * 3 without the key; the format set to 2. Returns the records moved.
 */
static int make_format_2(const char *datadir)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi ids, keyed, fmt;
	MDB_cursor *cur;
	MDB_val k, v, ver = {7, "version"}, two = {1, "2"};
	int moved = 0;

	cr_assert_eq(mdb_env_create(&env), 0);
	mdb_env_set_maxdbs(env, 64);
	cr_assert_eq(mdb_env_open(env, datadir, MDB_NOTLS, 0644), 0);
	cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
	cr_assert_eq(mdb_dbi_open(txn, "objects_by_id", 0, &ids), 0, "the server stores records under ids");
	cr_assert_eq(mdb_dbi_open(txn, "objects", MDB_CREATE, &keyed), 0);
	cr_assert_eq(mdb_dbi_open(txn, "mmc_format", 0, &fmt), 0);
	cr_assert_eq(mdb_cursor_open(txn, ids, &cur), 0);
	while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0) {
		unsigned char rec[512];
		uint32_t version = 3, nblobs;
		size_t head;

		memcpy(&nblobs, (char *)v.mv_data + 4, 4);
		head = 32 + 24 * (size_t)nblobs;
		cr_assert(k.mv_size == 8 && v.mv_size > head && head <= sizeof(rec));
		memcpy(rec, v.mv_data, head);
		memcpy(rec, &version, 4);
		cr_assert_eq(mdb_put(txn, keyed, &(MDB_val){v.mv_size - head, (char *)v.mv_data + head},
		                     &(MDB_val){head, rec}, 0),
		             0);
		moved++;
	}
	mdb_cursor_close(cur);
	cr_assert_eq(mdb_drop(txn, ids, 0), 0);
	cr_assert_eq(mdb_put(txn, fmt, &ver, &two, 0), 0);
	cr_assert_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
	return moved;
}

/* An upgrade as an operator meets it: a data dir of format 2 with objects, the new server started on it. */
Test(meta_store, a_data_dir_of_format_2_is_moved_under_ids_and_every_object_reads_back, .fini = stop, .timeout = 120)
{
	char datadir[300], key[64];
	mmc_store *s;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	s = fixture_store(meta.url, true, POOL);
	put_keys(s, "old");
	cr_assert_eq(metaserver_stop(&meta), 0);
	snprintf(datadir, sizeof(datadir), "%s/data", meta.dir);
	cr_assert_eq(make_format_2(datadir), KEYS);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	cr_assert(metaserver_log_has(&meta, "op=store_move objects=20"), "the log says what moved");
	snprintf(key, sizeof(key), "old/%d", KEYS - 1);
	for (int i = 0; i < 200 && mmc_is_exist(s, key) != 1; i++) /* until the lender has rejoined */
		usleep(50000);
	keys_readable(s, "old");
	put_keys(s, "new");
	cr_assert_eq(metaserver_stop(&meta), 0);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	for (int i = 0; i < 200 && mmc_is_exist(s, key) != 1; i++)
		usleep(50000);
	keys_readable(s, "old");
	keys_readable(s, "new");
	mmc_destroy(s);
}

Test(meta_store, a_redis_keyspace_of_a_newer_format_is_refused, .fini = stop, .timeout = 120)
{
	const char *extra[] = {store_kv, NULL};
	char reply[64];

	cr_assert_eq(redis_proc_start(&redis, "always"), 0, "redis-server must start");
	snprintf(store_kv, sizeof(store_kv), "ock.mmc.meta.store_uri=%s", redis.uri);
	cr_assert_eq(redis_proc_cmd(&redis, "HSET mmc:t:mmc_format version 9", reply, sizeof(reply)), 0);
	cr_assert_neq(metaserver_start(&meta, extra), 0, "a newer format must not be opened");
	cr_assert(metaserver_log_has(&meta, "metadata format 9"), "the log says why");
	metaserver_cleanup(&meta);
	/* another cluster's prefix on the same Redis is a keyspace of its own, written fresh */
	const char *other[] = {store_kv, "ock.mmc.meta.store_key_prefix=cluster2:", NULL};
	cr_assert_eq(metaserver_start(&meta, other), 0);
	cr_assert_eq(redis_proc_cmd(&redis, "HGET cluster2:t:mmc_format version", reply, sizeof(reply)), 0);
	cr_assert_str_eq(reply, "$1", "the current format was written under the prefix");
}

Test(meta_store, the_redis_password_comes_from_a_file_and_is_never_logged, .fini = stop, .timeout = 120)
{
	char reply[64], pwfile[300], pwkv[340];
	const char *extra[] = {store_kv, pwkv, NULL};
	FILE *f;
	mmc_store *s;

	cr_assert_eq(redis_proc_start(&redis, "always"), 0, "redis-server must start");
	cr_assert_eq(redis_proc_cmd(&redis, "CONFIG SET requirepass s3cret-pw", reply, sizeof(reply)), 0);
	cr_assert_str_eq(reply, "+OK");
	snprintf(store_kv, sizeof(store_kv), "ock.mmc.meta.store_uri=redis://127.0.0.1:%u/1", redis.port);
	snprintf(pwfile, sizeof(pwfile), "%s/pw", redis.dir);
	snprintf(pwkv, sizeof(pwkv), "ock.mmc.meta.store_password_file=%s", pwfile);
	f = fopen(pwfile, "w");
	cr_assert(f);
	fputs("wrong-pw\n", f);
	fclose(f);
	cr_assert_eq(chmod(pwfile, 0600), 0); /* a secret open to every user is refused */
	cr_assert_neq(metaserver_start(&meta, extra), 0, "a wrong password fails the start");
	cr_assert(metaserver_log_has(&meta, "AUTH refused"), "the log says why");
	cr_assert_not(metaserver_log_has(&meta, "wrong-pw"));
	metaserver_cleanup(&meta);
	f = fopen(pwfile, "w");
	cr_assert(f);
	fputs("s3cret-pw\n", f);
	fclose(f);
	cr_assert_eq(metaserver_start(&meta, extra), 0);
	s = fixture_store(meta.url, true, POOL);
	put_keys(s, "auth");
	mmc_destroy(s);
	cr_assert_eq(metaserver_stop(&meta), 0);
	cr_assert_not(metaserver_log_has(&meta, "s3cret"), "the password is not in the log");
}

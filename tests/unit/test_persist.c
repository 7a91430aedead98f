/*
 * The group commit and its stores, through the one interface the server uses (persist.h), on a real event loop:
 * every case that both stores promise runs twice, on LMDB in a fresh data dir (suite persist_lmdb) and on a real
 * redis-server on a free loopback port with appendfsync always (suite persist_redis). A waiter runs only after the
 * writes queued before it are in the store (checked from outside: a second LMDB environment, another Redis
 * connection), batches commit in order while the next one fills, what was acknowledged is there after a reopen, a
 * failed or fenced commit is visible to its waiters, and a newer format is refused.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <event2/event.h>
#include <lmdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lock.h"
#include "mmc/mmc.h"
#include "object_rec.h"
#include "persist.h"
#include "redis_proc.h"
#include "store_uri.h"
#include "uri_mask.h"

enum backend { LMDB, REDIS };

static enum backend be;
static struct redis_proc rp;
static struct event_base *base;
static struct persist *p;
static struct persist_table *tbl;
static char dir[64];
static int runs;

static int try_open(struct persist **out, uint64_t map_size, const char *prefix, char *err, size_t errlen)
{
	struct persist_opts o = {.dir = dir, .map_size = map_size, .sync = true};

	o.uri = be == REDIS ? rp.uri : NULL;
	o.key_prefix = prefix;
	return persist_open(out, base, &o, err, errlen);
}

static void open_store(void)
{
	char err[256];

	cr_assert_eq(try_open(&p, 64u << 20, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(persist_table(p, "t", &tbl), 0);
}

static void setup_common(void)
{
	snprintf(dir, sizeof(dir), "/tmp/mmc-persist-XXXXXX");
	cr_assert(mkdtemp(dir));
	base = event_base_new();
	cr_assert(base);
	cr_assert_eq(event_base_priority_init(base, 3), 0);
	runs = 0;
	open_store();
}

static void setup_lmdb(void)
{
	be = LMDB;
	setup_common();
}

static void setup_redis(void)
{
	be = REDIS;
	cr_assert_eq(redis_proc_start(&rp, "always"), 0, "redis-server (Debian's redis-server package) must start");
	setup_common();
}

static void teardown(void)
{
	char cmd[128];

	persist_close(p);
	p = NULL;
	event_base_free(base);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	if (be == REDIS)
		redis_proc_cleanup(&rp);
}

TestSuite(persist_lmdb, .timeout = 60);
TestSuite(persist_redis, .timeout = 60);

/* One body, two tests: on LMDB and on Redis. */
#define BOTH(name)                                                                                                     \
	static void name(void);                                                                                        \
	Test(persist_lmdb, name, .init = setup_lmdb, .fini = teardown)                                                 \
	{                                                                                                              \
		name();                                                                                                \
	}                                                                                                              \
	Test(persist_redis, name, .init = setup_redis, .fini = teardown)                                               \
	{                                                                                                              \
		name();                                                                                                \
	}                                                                                                              \
	static void name(void)

/* Is key in table "t", as someone else reading the store sees it (only what was committed)? */
static bool stored(const char *key)
{
	char cmd[256], reply[64];
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi d;
	MDB_val k = {strlen(key), (void *)key}, v;
	bool found;

	if (be == REDIS) {
		snprintf(cmd, sizeof(cmd), "HEXISTS mmc:t:t %s", key);
		cr_assert_eq(redis_proc_cmd(&rp, cmd, reply, sizeof(reply)), 0);
		return strcmp(reply, ":1") == 0;
	}
	cr_assert_eq(mdb_env_create(&env), 0);
	mdb_env_set_maxdbs(env, 4);
	cr_assert_eq(mdb_env_open(env, dir, MDB_RDONLY | MDB_NOTLS | MDB_NOLOCK, 0644), 0);
	cr_assert_eq(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	found = mdb_dbi_open(txn, "t", 0, &d) == 0 && mdb_get(txn, d, &k, &v) == 0;
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return found;
}

/* what a waiter saw when it ran */
struct seen {
	const char *key;
	uint64_t seq;
	int found, order;
};

static void check_durable(void *arg)
{
	struct seen *s = arg;

	s->found = stored(s->key);
	s->order = ++runs;
	cr_expect_geq(persist_durable_seq(p), s->seq, "ran before its batch was durable");
}

static void run_until(int n)
{
	for (int i = 0; i < 5000 && runs < n; i++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), usleep(1000);
}

static void run_until_durable(uint64_t seq)
{
	for (int i = 0; i < 5000 && persist_durable_seq(p) < seq; i++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), usleep(1000);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The store stops answering commits for hold_ms: a child holds LMDB's write lock, or has Redis DEBUG SLEEP. */
static pid_t hold_writer(int hold_ms)
{
	int fds[2];
	char c;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		if (be == REDIS) {
			struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(rp.port)};
			char cmd[64], reply[64];
			int fd = socket(AF_INET, SOCK_STREAM, 0);

			sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			snprintf(cmd, sizeof(cmd), "DEBUG SLEEP %.3f\r\n", hold_ms / 1000.0);
			if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
			    write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
				_exit(1);
			usleep(20000); /* Redis has read it and sleeps */
			if (write(fds[1], "l", 1) != 1 || read(fd, reply, sizeof(reply)) <= 0)
				_exit(1);
			_exit(0);
		}
		MDB_env *env;
		MDB_txn *txn;

		if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 4) || mdb_env_open(env, dir, MDB_NOTLS, 0644) ||
		    mdb_txn_begin(env, NULL, 0, &txn))
			_exit(1);
		if (write(fds[1], "l", 1) != 1)
			_exit(1);
		usleep((useconds_t)hold_ms * 1000);
		mdb_txn_abort(txn);
		mdb_env_close(env);
		_exit(0);
	}
	close(fds[1]);
	cr_assert_eq(read(fds[0], &c, 1), 1, "the child holds the store");
	close(fds[0]);
	return pid;
}

BOTH(a_waiter_runs_after_its_writes_are_committed)
{
	struct seen s = {"k1", 0, 0, 0};

	cr_assert_eq(persist_put(p, tbl, "k1", 2, "v1", 2), 0);
	cr_assert(persist_dirty(p));
	s.seq = persist_wait_seq(p);
	cr_assert_gt(s.seq, 0);
	cr_assert_eq(persist_after_commit(p, check_durable, &s), 0);
	run_until(1);
	cr_assert_eq(runs, 1);
	cr_assert(s.found, "the write was in the store when the waiter ran");
	cr_assert_not(persist_dirty(p));
	cr_assert_eq(persist_wait_seq(p), 0);
	cr_assert_eq(persist_commits(p), 2, "the format version, then k1");
}

BOTH(batches_commit_in_order_while_the_next_fills)
{
	struct seen a = {"a", 0, 0, 0}, b = {"b", 0, 0, 0}, none = {"a", 0, 0, 0};

	persist_put(p, tbl, "a", 1, "1", 1);
	a.seq = persist_wait_seq(p);
	persist_after_commit(p, check_durable, &a);
	/* let the loop hand batch a to the writer, then fill the next one */
	for (int i = 0; i < 100 && persist_wait_seq(p) == a.seq && runs == 0; i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		persist_put(p, tbl, "b", 1, "2", 1);
		b.seq = persist_wait_seq(p);
	}
	cr_assert_eq(b.seq, a.seq + 1, "the second write went into a new batch");
	persist_after_commit(p, check_durable, &b);
	run_until(2);
	cr_assert_eq(a.order, 1);
	cr_assert_eq(b.order, 2);
	cr_assert(a.found && b.found);
	/* with nothing pending a waiter still runs, on the next idle turn */
	none.seq = persist_durable_seq(p);
	persist_after_commit(p, check_durable, &none);
	run_until(3);
	cr_assert_eq(none.order, 3);
}

/* persist_scan's callback: appends "key=value;" to a string */
static int collect(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	char *out = arg;

	snprintf(out + strlen(out), 4096 - strlen(out), "%.*s=%.*s;", (int)klen, (const char *)k, (int)vlen,
	         (const char *)v);
	return 0;
}

static int stop_at_two(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	return ++*(int *)arg == 2 ? 7 : 0;
}

BOTH(flush_commits_everything_and_a_reopen_finds_it)
{
	char key[16], buf[16], all[4096] = "";
	size_t len = 0;
	uint64_t n = 0;
	int seen = 0;

	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(persist_put(p, tbl, key, strlen(key), key, strlen(key)), 0);
	}
	cr_assert_eq(persist_del(p, tbl, "k0", 2), 0);
	cr_assert_eq(persist_del(p, tbl, "never", 5), 0, "deleting a missing key is fine");
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_not(persist_dirty(p));
	persist_close(p);
	open_store();
	cr_assert_eq(persist_get(p, tbl, "k99", 3, buf, sizeof(buf), &len), 0);
	cr_assert_eq(len, 3);
	cr_assert_eq(memcmp(buf, "k99", 3), 0);
	cr_assert_eq(persist_get(p, tbl, "k0", 2, buf, sizeof(buf), &len), MMC_OBJECT_NOT_EXISTS);
	cr_assert_eq(persist_get(p, tbl, "k99", 3, buf, 2, &len), MMC_ERROR, "longer than the buffer");
	cr_assert_eq(persist_count(p, tbl, &n), 0);
	cr_assert_eq(n, 99);
	cr_assert_eq(persist_scan(p, tbl, stop_at_two, &seen), 7, "the callback's nonzero ends the scan");
	cr_assert_eq(seen, 2);
	/* key order, bytewise, like an LMDB cursor: k1 k10 k11 ... k2 ... */
	cr_assert_eq(persist_scan(p, tbl, collect, all), 0);
	cr_assert(strncmp(all, "k1=k1;k10=k10;k11=k11;", 22) == 0, "%.60s", all);
	cr_assert(strstr(all, "k99=k99;") && !strstr(all, "k0="));
}

/* A model of table "t" for the test below: value byte per id key (object_rec.h) 0..N-1 (0: absent). */
#define APPEND_KEYS 3000

struct model_check {
	const unsigned char *want;
	uint64_t seen, last;
	bool ordered;
};

static int check_model(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct model_check *c = arg;
	uint64_t id;

	cr_assert_eq(klen, REC_KEY_LEN);
	cr_assert_eq(vlen, 1);
	id = rec_id_of(k);
	cr_assert_lt(id, APPEND_KEYS);
	cr_assert_eq(*(const unsigned char *)v, c->want[id], "key %llu", (unsigned long long)id);
	c->ordered &= c->seen == 0 || id > c->last;
	c->last = id;
	c->seen++;
	return 0;
}

/*
 * LMDB appends a put past the table's last key (MDB_APPEND) and searches for any other: batches that mix growing
 * keys with older ones, rewrites, deletes (of the last key too) and keys shorter than the last one land exactly as
 * written, in order, across commits and a reopen.
 */
BOTH(puts_past_the_end_and_anywhere_else_land_as_written)
{
	static unsigned char want[APPEND_KEYS];
	unsigned char k[REC_KEY_LEN];
	unsigned seed = 5;
	uint64_t next = 0, n = 0, live = 0;
	struct model_check c = {want, 0, 0, true};

	memset(want, 0, sizeof(want));
	for (int batch = 0; batch < 30; batch++) {
		for (int i = 0; i < 100; i++) {
			uint64_t id =
			    rand_r(&seed) % 4 == 0 || next == APPEND_KEYS ? (uint64_t)rand_r(&seed) % (next + 1) : next;
			unsigned char v = (unsigned char)(1 + rand_r(&seed) % 250);

			if (id >= APPEND_KEYS)
				continue;
			next += id == next;
			rec_key_of(id, k);
			if (rand_r(&seed) % 5 == 0 || (i == 50 && next)) { /* i == 50: the last key itself */
				if (i == 50)
					rec_key_of(id = next - 1, k);
				cr_assert_eq(persist_del(p, tbl, k, REC_KEY_LEN), 0);
				want[id] = 0;
			} else {
				cr_assert_eq(persist_put(p, tbl, k, REC_KEY_LEN, &v, 1), 0);
				want[id] = v;
			}
		}
		cr_assert_eq(persist_put(p, tbl, "z", 1, "!", 1), 0); /* past every id, then gone */
		cr_assert_eq(persist_del(p, tbl, "z", 1), 0);
		cr_assert_eq(persist_flush(p), 0);
	}
	persist_close(p);
	open_store();
	cr_assert_eq(persist_scan(p, tbl, check_model, &c), 0);
	for (int i = 0; i < APPEND_KEYS; i++)
		live += want[i] != 0;
	cr_assert_eq(c.seen, live);
	cr_assert(c.ordered || be == REDIS, "an LMDB scan is in key order");
	cr_assert_eq(persist_count(p, tbl, &n), 0);
	cr_assert_eq(n, live);
}

/* Table "pk", packed (persist_table_packed), on the store as it is now. */
static struct persist_table *packed_table(void)
{
	struct persist_table *t;

	cr_assert_eq(persist_table(p, "pk", &t), 0);
	cr_assert_eq(persist_table_packed(p, t), 0);
	return t;
}

/* The store closed and opened again, and its table "pk". */
static struct persist_table *reopen_packed(void)
{
	persist_close(p);
	open_store();
	return packed_table();
}

static uint64_t redis_int(const char *cmd)
{
	char reply[64];

	cr_assert_eq(redis_proc_cmd(&rp, cmd, reply, sizeof(reply)), 0);
	cr_assert_eq(reply[0], ':', "%s: %s", cmd, reply);
	return strtoull(reply + 1, NULL, 10);
}

/* Every record of a packed table against the model, in key order, and its count. */
static void check_packed(struct persist_table *t, const unsigned char *want)
{
	struct model_check c = {want, 0, 0, true};
	uint64_t live = 0, n = 0;

	cr_assert_eq(persist_scan(p, t, check_model, &c), 0);
	for (int i = 0; i < APPEND_KEYS; i++)
		live += want[i] != 0;
	cr_assert_eq(c.seen, live);
	cr_assert(c.ordered, "a packed table is scanned in key order, on Redis too");
	cr_assert_eq(persist_count(p, t, &n), 0);
	cr_assert_eq(n, live);
}

/*
 * A packed table (Redis: 64 ids to a string that commits append to) keeps exactly what was written through growing
 * puts, rewrites, deletes and reopens; on Redis a block rewritten many times stays small, and a block whose records
 * are all deleted leaves the store.
 */
BOTH(a_packed_table_keeps_what_was_written_and_stays_compact)
{
	static unsigned char want[APPEND_KEYS];
	struct persist_table *t = packed_table();
	unsigned char k[REC_KEY_LEN], v;
	unsigned seed = 11;
	uint64_t next = 0;

	memset(want, 0, sizeof(want));
	for (int batch = 0; batch < 40; batch++) {
		for (int i = 0; i < 120; i++) {
			uint64_t id =
			    rand_r(&seed) % 3 == 0 || next == APPEND_KEYS ? (uint64_t)rand_r(&seed) % (next + 1) : next;

			if (id >= APPEND_KEYS)
				continue;
			next += id == next;
			rec_key_of(id, k);
			v = (unsigned char)(1 + rand_r(&seed) % 250);
			if (rand_r(&seed) % 4 == 0) {
				cr_assert_eq(persist_del(p, t, k, REC_KEY_LEN), 0);
				want[id] = 0;
			} else {
				cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &v, 1), 0);
				want[id] = v;
			}
		}
		cr_assert_eq(persist_flush(p), 0);
		if (batch % 10 == 9) { /* a reopen: the next commits start from what the load read */
			t = reopen_packed();
			check_packed(t, want);
		}
	}
	/* id 5, rewritten in 300 commits: its block keeps growing only until it is rewritten from its live entries */
	rec_key_of(5, k);
	for (int i = 0; i < 300; i++) {
		v = (unsigned char)(1 + i % 200);
		cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &v, 1), 0);
		cr_assert_eq(persist_flush(p), 0);
	}
	want[5] = v;
	/* ids 256..319, block 4: every one deleted */
	for (uint64_t id = 256; id < 320; id++) {
		rec_key_of(id, k);
		cr_assert_eq(persist_del(p, t, k, REC_KEY_LEN), 0);
		want[id] = 0;
	}
	cr_assert_eq(persist_flush(p), 0);
	rec_key_of(APPEND_KEYS - 1, k); /* one more commit of the table: the due blocks go with it */
	v = 7;
	cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &v, 1), 0);
	want[APPEND_KEYS - 1] = v;
	cr_assert_eq(persist_flush(p), 0);
	check_packed(t, want);
	{
		char buf[8];
		size_t len;

		rec_key_of(5, k);
		cr_assert_eq(persist_get(p, t, k, REC_KEY_LEN, buf, sizeof(buf), &len), 0);
		cr_assert_eq(len, 1);
		cr_assert_eq((unsigned char)buf[0], want[5]);
		rec_key_of(300, k);
		cr_assert_eq(persist_get(p, t, k, REC_KEY_LEN, buf, sizeof(buf), &len), MMC_OBJECT_NOT_EXISTS);
	}
	if (be == REDIS) {
		/* 64 entries of 9 bytes at most, and what 300 rewrites left: far below 300 entries more */
		cr_assert_lt(redis_int("STRLEN mmc:p:pk:0"), (2 * 64 + 32 + 8) * 9, "block 0 was rewritten");
		cr_assert_eq(redis_int("EXISTS mmc:p:pk:4"), 0, "a block with no record is deleted");
		cr_assert_eq(redis_int("SISMEMBER mmc:p:pk 4"), 0, "and leaves the set");
		cr_assert_eq(redis_int("SISMEMBER mmc:p:pk 0"), 1);
		cr_assert_eq(redis_int("EXISTS mmc:t:pk"), 0, "no hash");
	}
	check_packed(reopen_packed(), want);
}

/* Ids 0..MANY_KEYS-1 in 131 blocks of 64: a Redis load asks for them two windows of 64 GETs at a time, the last short.
 */
#define MANY_KEYS (64 * 130 + 17)

struct many_check {
	uint64_t seen;
	bool ordered;
};

static int check_many(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct many_check *c = arg;
	uint64_t id = rec_id_of(k);

	cr_assert_eq(klen, REC_KEY_LEN);
	cr_assert_eq(vlen, 2);
	cr_assert_eq(memcmp(v, (unsigned char[]){(unsigned char)id, (unsigned char)(id >> 8)}, 2), 0, "id %llu",
	             (unsigned long long)id);
	c->ordered &= id == c->seen; /* every id, in order */
	c->seen++;
	return 0;
}

BOTH(a_packed_table_of_many_blocks_loads_whole_and_in_order)
{
	struct persist_table *t = packed_table();
	struct many_check c = {0, true};
	unsigned char k[REC_KEY_LEN];
	uint64_t n = 0;

	for (uint64_t id = 0; id < MANY_KEYS; id++) {
		unsigned char v[2] = {(unsigned char)id, (unsigned char)(id >> 8)};

		rec_key_of(id, k);
		cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, v, 2), 0);
		if (id % 1000 == 999)
			cr_assert_eq(persist_flush(p), 0);
	}
	cr_assert_eq(persist_flush(p), 0);
	t = reopen_packed();
	cr_assert_eq(persist_scan(p, t, check_many, &c), 0);
	cr_assert_eq(c.seen, MANY_KEYS);
	cr_assert(c.ordered, "ids out of order or missing");
	cr_assert_eq(persist_count(p, t, &n), 0);
	cr_assert_eq(n, MANY_KEYS);
	if (be == REDIS)
		cr_assert_eq(redis_int("SCARD mmc:p:pk"), 131);
}

/* A Redis store of format 3 kept the records in a hash: the first load moves them into blocks, and drops the hash. */
Test(persist_redis, a_hash_of_the_older_format_moves_into_blocks, .init = setup_redis, .fini = teardown)
{
	static unsigned char want[APPEND_KEYS];
	struct persist_table *t;
	unsigned char k[REC_KEY_LEN];
	uint64_t n = 0;

	cr_assert_eq(persist_table(p, "pk", &t), 0); /* not packed: a hash, as format 3 wrote it */
	for (uint64_t id = 0; id < 1000; id++) {
		want[id] = (unsigned char)(1 + id % 250);
		rec_key_of(id, k);
		cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &want[id], 1), 0);
	}
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_eq(redis_int("HLEN mmc:t:pk"), 1000);
	t = reopen_packed();
	cr_assert(persist_scan_ordered(p, t), "a packed table's fast scan is in key order too");
	cr_assert_eq(persist_count(p, t, &n), 0);
	cr_assert_eq(n, 1000);
	cr_assert_eq(redis_int("HLEN mmc:t:pk"), 1000, "counted without a load (a load moves the hash)");
	check_packed(t, want);
	cr_assert_eq(redis_int("EXISTS mmc:t:pk"), 0, "the hash is gone");
	cr_assert_eq(redis_int("SCARD mmc:p:pk"), 16, "ids 0..999: blocks 0..15");
	check_packed(reopen_packed(), want);
	/* a damaged tail (here a slot out of range) ends the block there, and is rewritten before the next append */
	cr_assert_gt(redis_int("APPEND mmc:p:pk:0 garbage"), 7);
	t = reopen_packed();
	check_packed(t, want);
	want[1] = 77;
	rec_key_of(1, k);
	cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &want[1], 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	check_packed(reopen_packed(), want);
}

/* With a lock key, a packed table's writes go through the fenced script: all of them, or none once the lock moved. */
Test(persist_redis, a_packed_commit_after_the_lock_key_moved_fails_at_redis, .init = setup_redis, .fini = teardown)
{
	static unsigned char want[APPEND_KEYS];
	struct persist_table *t = packed_table();
	unsigned char k[REC_KEY_LEN];
	char reply[64];

	cr_assert_eq(redis_proc_cmd(&rp, "SET mmc-test-lock node-a", reply, sizeof(reply)), 0);
	cr_assert_eq(persist_set_redis_fence_key(p, "mmc-test-lock", "node-a"), 0);
	want[3] = 3;
	rec_key_of(3, k);
	cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &want[3], 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_eq(redis_proc_cmd(&rp, "SET mmc-test-lock node-b", reply, sizeof(reply)), 0);
	rec_key_of(4, k);
	cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &(unsigned char){4}, 1), 0);
	rec_key_of(3, k);
	cr_assert_eq(persist_del(p, t, k, REC_KEY_LEN), 0);
	cr_assert_eq(persist_flush(p), MMC_ERROR, "fenced");
	persist_set_redis_fence_key(p, NULL, NULL);
	check_packed(reopen_packed(), want);
}

BOTH(a_key_no_store_takes_is_refused_when_queued)
{
	static char huge[PERSIST_KEY_MAX + 1];
	char buf[4];
	size_t len;

	memset(huge, 'x', sizeof(huge));
	cr_assert_eq(persist_put(p, tbl, huge, sizeof(huge), "v", 1), MMC_ERROR, "refused when queued");
	cr_assert_eq(persist_put(p, tbl, huge, PERSIST_KEY_MAX, "v", 1), 0, "the longest key is fine");
	cr_assert_eq(persist_put(p, tbl, "", 0, "v", 1), MMC_ERROR);
	persist_put(p, tbl, "ok", 2, "v", 1);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_eq(persist_get(p, tbl, "ok", 2, buf, sizeof(buf), &len), 0);
	cr_assert_eq(persist_get(p, tbl, huge, PERSIST_KEY_MAX, buf, sizeof(buf), &len), 0);
}

/* Writes in a group land in one batch: the 2 ms rule hands no batch over between them. For a record moved to a new
 * key (a promoted object's renumbering): its old key's delete and its new key's write in two batches, a crash between
 * the two left neither. */
BOTH(writes_in_a_group_land_in_one_batch)
{
	uint64_t seq;

	persist_put(p, tbl, "old", 3, "1", 1);
	cr_assert_eq(persist_flush(p), 0);
	persist_put(p, tbl, "other", 5, "2", 1);
	usleep(3000); /* older than MAX_BATCH_AGE_NS: a write now would hand the batch over */
	persist_group_begin(p);
	persist_del(p, tbl, "old", 3);
	seq = persist_wait_seq(p);
	persist_put(p, tbl, "new", 3, "1", 1);
	persist_group_end(p);
	cr_assert_eq(persist_wait_seq(p), seq, "the delete and the write were handed over apart");
	cr_assert_eq(persist_flush(p), 0);
	cr_assert(!stored("old") && stored("new") && stored("other"));
}

/* A waiter that writes (and, slow enough, hands its own batch over by the 2 ms rule) must not make the loop hand a
 * second batch to the writer while one is flying: that batch would be marked durable without being committed. */
static struct seen after_y, after_z;
static pid_t holder;

static void write_while_landing(void *arg)
{
	struct timespec t0, t;

	persist_put(p, tbl, "x", 1, "1", 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do /* older than MAX_BATCH_AGE_NS: the next write hands the batch over */
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 3000000L);
	holder = hold_writer(300); /* so that the writer is surely still busy with y's batch below */
	persist_put(p, tbl, "y", 1, "2", 1);
	usleep(20000); /* the writer has taken y's batch and waits for the store */
	after_y.seq = persist_durable_seq(p) + 1;
	persist_after_commit(p, check_durable, &after_y);
	persist_put(p, tbl, "z", 1, "3", 1);
	after_z.seq = persist_wait_seq(p);
	persist_after_commit(p, check_durable, &after_z);
	check_durable(arg);
}

BOTH(writes_from_a_waiter_never_replace_the_flying_batch)
{
	struct seen w = {"w", 0, 0, 0};
	int status;

	after_y = (struct seen){"y", 0, 0, 0};
	after_z = (struct seen){"z", 0, 0, 0};
	persist_put(p, tbl, "w", 1, "0", 1);
	w.seq = persist_wait_seq(p);
	persist_after_commit(p, write_while_landing, &w);
	run_until(3);
	cr_assert_eq(runs, 3);
	cr_assert(w.found && after_y.found, "w and y were in the store when their waiters ran");
	cr_assert(after_z.found, "z was in the store when its waiter ran");
	cr_assert_gt(after_z.seq, after_y.seq);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_eq(waitpid(holder, &status, 0), holder);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

BOTH(a_wakeup_left_by_a_flush_does_not_make_the_loop_wait_for_the_store)
{
	struct seen b = {"b", 0, 0, 0};
	double t0;
	int status;

	persist_put(p, tbl, "a", 1, "1", 1);
	cr_assert_eq(persist_flush(p), 0); /* lands on the loop: the writer's wakeup stays in the eventfd */
	holder = hold_writer(1000);
	persist_put(p, tbl, "b", 1, "2", 1);
	usleep(3000);
	persist_put(p, tbl, "b2", 2, "2", 1); /* the 2 ms rule: batch b flies, and the writer is stuck */
	b.seq = persist_wait_seq(p);
	persist_after_commit(p, check_durable, &b);
	t0 = now_ms();
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	cr_expect_lt(now_ms() - t0, 500, "one loop turn waited %.0f ms for a commit", now_ms() - t0);
	cr_expect_eq(runs, 0, "b cannot be durable while the store is held");
	run_until(1);
	cr_assert_eq(runs, 1);
	cr_assert(b.found);
	waitpid(holder, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A loop that always has I/O ready never runs the low-priority commit event: the batch must go at 2 ms anyway. */
static void busy_cb(evutil_socket_t fd, short what, void *arg)
{
	(*(int *)arg)++;
	event_base_loopbreak(base); /* back to the test after each turn */
}

BOTH(a_loop_that_never_idles_still_commits)
{
	struct seen s = {"busy", 0, 0, 0};
	struct event *busy;
	int sv[2], turns = 0;
	double t0;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_eq(write(sv[1], "x", 1), 1); /* never read: sv[0] is readable on every turn */
	busy = event_new(base, sv[0], EV_READ | EV_PERSIST, busy_cb, &turns);
	cr_assert_eq(event_priority_set(busy, 1), 0);
	event_add(busy, NULL);
	persist_put(p, tbl, "busy", 4, "1", 1);
	s.seq = persist_wait_seq(p);
	persist_after_commit(p, check_durable, &s);
	t0 = now_ms();
	while (runs == 0 && now_ms() - t0 < 5000)
		event_base_loop(base, 0); /* one turn: the busy socket is always ready */
	event_free(busy);
	close(sv[0]);
	close(sv[1]);
	cr_assert_eq(runs, 1, "the waiter ran within 5 s of a busy loop (%d turns)", turns);
	cr_assert(s.found);
}

BOTH(a_batch_is_pending_until_it_lands)
{
	uint64_t seq;

	cr_assert_eq(persist_seq_state(p, 0), PERSIST_SEQ_DURABLE, "no batch: nothing to wait for");
	cr_assert_eq(persist_put(p, tbl, "k", 1, "v", 1), 0);
	seq = persist_wait_seq(p);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_PENDING);
	cr_assert_eq(persist_seq_state(p, seq + 1), PERSIST_SEQ_PENDING, "a batch not yet numbered");
	run_until_durable(seq);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_DURABLE);
}

/* A commit that fails still runs its waiters, which must be able to tell. */
static void saw_failure(void *arg)
{
	*(uint64_t *)arg = persist_failed_seq(p);
	runs++;
}

/* Puts key and runs the loop until its waiter ran; returns the batch's seq (its fate: persist_seq_state). */
static uint64_t put_and_land(const char *key, const void *val, size_t vlen)
{
	uint64_t failed = 0, seq;
	int before = runs;

	cr_assert_eq(persist_put(p, tbl, key, strlen(key), val, vlen), 0);
	seq = persist_wait_seq(p);
	persist_after_commit(p, saw_failure, &failed);
	run_until(before + 1);
	cr_assert_eq(runs, before + 1, "the waiter of %s ran", key);
	return seq;
}

Test(persist_lmdb, a_failed_commit_is_visible_to_its_waiters, .init = setup_lmdb, .fini = teardown)
{
	static char big[1 << 20];
	char err[256];
	uint64_t seq, later;

	persist_close(p);
	cr_assert_eq(try_open(&p, 256u << 10, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(persist_table(p, "t", &tbl), 0);
	cr_assert_eq(persist_failed_seq(p), 0);
	seq = put_and_land("big", big, sizeof(big)); /* queued: the map is only full at commit */
	cr_assert_eq(persist_failed_seq(p), seq, "the waiter learns that its batch failed");
	cr_assert_eq(persist_failures(p), 1, "counted for /metrics");
	/* a later batch that fits commits, and the failure stays on record */
	later = put_and_land("small", "1", 1);
	cr_assert_eq(persist_failed_seq(p), seq);
	cr_assert_gt(persist_durable_seq(p), seq);
	/* space unlinked by the failed batch must never be reused; by the later one, it may */
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_LOST);
	cr_assert_eq(persist_seq_state(p, later), PERSIST_SEQ_DURABLE);
}

/* Redis killed: commits fail (their waiters see it; the space-reuse rule sees LOST), reads from memory are the
 * caller's; Redis back: commits succeed again without anyone reconnecting by hand, and what Redis acknowledged
 * before the kill is still there (appendfsync always). */
Test(persist_redis, commits_fail_while_redis_is_down_and_recover_when_it_returns, .init = setup_redis, .fini = teardown)
{
	uint64_t before, during, after;
	char buf[8];
	size_t len;

	before = put_and_land("before", "1", 1);
	cr_assert_eq(persist_seq_state(p, before), PERSIST_SEQ_DURABLE);
	redis_proc_kill(&rp);
	during = put_and_land("during", "2", 1);
	cr_assert_eq(persist_seq_state(p, during), PERSIST_SEQ_LOST, "a commit while Redis is down fails");
	cr_assert_geq(persist_failures(p), 1);
	cr_assert_eq(redis_proc_restart(&rp), 0);
	/* the backoff (at most 1 s) decides when the writer tries again: batches fail fast until then */
	for (int i = 0; i < 100; i++) {
		after = put_and_land("after", "3", 1);
		if (persist_seq_state(p, after) == PERSIST_SEQ_DURABLE)
			break;
		usleep(100000);
	}
	cr_assert_eq(persist_seq_state(p, after), PERSIST_SEQ_DURABLE, "commits recover by themselves");
	cr_assert(stored("before"), "acknowledged before the kill: in the AOF");
	cr_assert(stored("after"));
	cr_assert_not(stored("during"));
	cr_assert_eq(persist_get(p, tbl, "before", 6, buf, sizeof(buf), &len), 0);
}

/* How many times Redis ran CLIENT KILL (INFO commandstats, read whole). */
static long client_kills(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(rp.port)};
	static char buf[65536];
	const char *cmd = "INFO commandstats\r\n", *at;
	size_t got = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	cr_assert_eq(write(fd, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
	/* a bulk reply: "$LEN\r\n", LEN bytes, "\r\n" */
	while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0) {
		got += (size_t)n;
		buf[got] = '\0';
		if (buf[0] == '$' && strstr(buf, "\r\n") &&
		    got >= (size_t)atol(buf + 1) + (strstr(buf, "\r\n") - buf) + 4)
			break;
	}
	close(fd);
	at = strstr(buf, "cmdstat_client|kill:calls=");
	return at ? atol(at + strlen("cmdstat_client|kill:calls=")) : 0;
}

/*
 * A connection that broke under a batch (Redis answered nothing in timeout_ms) is killed at Redis by the next one
 * before anything goes on it: what the old one still carries (a packet retransmitted late) lands before the next
 * batch or never, so it cannot bring back records a later batch deleted or overwrote.
 */
Test(persist_redis, a_connection_that_broke_is_killed_before_the_next_one_writes, .init = setup_redis, .fini = teardown)
{
	pid_t sleeper;
	uint64_t seq;

	put_and_land("before", "1", 1);
	cr_assert_eq(client_kills(), 0, "no connection broke yet");
	sleeper = hold_writer(2500); /* DEBUG SLEEP past the 2 s command timeout */
	seq = put_and_land("during", "2", 1);
	waitpid(sleeper, NULL, 0);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_DURABLE, "retried on a fresh connection once Redis woke");
	cr_assert_eq(client_kills(), 1, "the fresh connection killed the broken one first");
	put_and_land("after", "3", 1);
	cr_assert_eq(client_kills(), 1, "a connection that did not break is not killed again");
}

/* Batches that fail while Redis is down leave a packed table as Redis has it: deletes not applied, a put that may
 * have landed counted until a load says otherwise, and no block deleted under a record it still holds. */
Test(persist_redis, a_packed_table_rides_out_redis_going_down, .init = setup_redis, .fini = teardown)
{
	static unsigned char want[APPEND_KEYS];
	struct persist_table *t = packed_table();
	unsigned char k[REC_KEY_LEN], v;
	uint64_t n;
	int rc = MMC_ERROR;

	cr_assert_eq(persist_count(p, t, &n), 0, "the writer now knows the table: counts, rewrites and deletes");
	for (uint64_t id = 0; id < 100; id++) {
		want[id] = (unsigned char)(1 + id % 200);
		rec_key_of(id, k);
		cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &want[id], 1), 0);
	}
	cr_assert_eq(persist_flush(p), 0);
	rec_key_of(300, k); /* a commit that rewrites the full block 0 (its read would fail below, not its writes) */
	want[300] = 1;
	cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &want[300], 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	redis_proc_kill(&rp);
	for (uint64_t id = 0; id < 64; id++) { /* block 0, every record: fails, so they stay */
		rec_key_of(id, k);
		cr_assert_eq(persist_del(p, t, k, REC_KEY_LEN), 0);
	}
	rec_key_of(100, k);
	v = 9;
	cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &v, 1), 0); /* fails: never stored */
	cr_assert_eq(persist_flush(p), MMC_ERROR);
	cr_assert_eq(redis_proc_restart(&rp), 0);
	for (int i = 0; i < 100 && rc; i++) { /* the writer's backoff decides when it tries again */
		want[101] = 5;
		rec_key_of(101, k);
		cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &want[101], 1), 0);
		if ((rc = persist_flush(p)))
			usleep(100000);
	}
	cr_assert_eq(rc, 0, "commits recover by themselves");
	for (uint64_t id = 64; id < 102; id++) { /* block 1, every record the model has */
		rec_key_of(id, k);
		cr_assert_eq(persist_del(p, t, k, REC_KEY_LEN), 0);
		want[id] = 0;
	}
	cr_assert_eq(persist_flush(p), 0);
	rec_key_of(200, k);
	want[200] = 3;
	cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &want[200], 1), 0); /* a commit that takes what is due */
	cr_assert_eq(persist_flush(p), 0);
	check_packed(t, want);
	check_packed(reopen_packed(), want);
}

static bool fence_ok;

static bool fence(void *arg)
{
	return __atomic_load_n((bool *)arg, __ATOMIC_ACQUIRE);
}

BOTH(a_fenced_commit_fails_and_reaches_nothing)
{
	uint64_t seq;

	fence_ok = false;
	persist_set_fence(p, fence, &fence_ok);
	seq = put_and_land("fenced", "1", 1);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_LOST, "a leader without its lease commits nothing");
	cr_assert_not(stored("fenced"));
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	seq = put_and_land("leading", "1", 1);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_DURABLE);
	cr_assert(stored("leading"));
	persist_set_fence(p, NULL, NULL);
}

/* Failed batches are kept as runs of numbers (a store down for hours fails every batch: one run, not a number each):
 * every batch of a run, between runs and around them reads as it went. */
BOTH(failed_batches_in_runs_each_read_as_they_went)
{
	uint64_t seq[40];
	char key[16];

	fence_ok = true;
	persist_set_fence(p, fence, &fence_ok);
	for (int i = 0; i < 40; i++) {
		__atomic_store_n(&fence_ok, !(i >= 5 && i < 20) && i != 25 && i < 30, __ATOMIC_RELEASE);
		snprintf(key, sizeof(key), "k%d", i);
		seq[i] = put_and_land(key, "1", 1);
	}
	for (int i = 0; i < 40; i++) {
		bool lost = (i >= 5 && i < 20) || i == 25 || i >= 30;

		cr_assert_eq(persist_seq_state(p, seq[i]), lost ? PERSIST_SEQ_LOST : PERSIST_SEQ_DURABLE, "batch %d",
		             i);
	}
	persist_set_fence(p, NULL, NULL);
}

/* A delete whose batch failed: dropped from a plain table (its key may be written again), queued again in a table
 * that asked for it, and a flush while the store still refuses returns instead of retrying for ever. */
BOTH(a_failed_delete_goes_again_only_where_the_table_asks)
{
	uint64_t failed = 0, failures;

	put_and_land("plain", "1", 1);
	put_and_land("retried", "1", 1);
	fence_ok = false;
	persist_set_fence(p, fence, &fence_ok);
	cr_assert_eq(persist_del(p, tbl, "plain", 5), 0);
	cr_assert_eq(persist_flush(p), MMC_ERROR);
	persist_table_retry_deletes(tbl);
	cr_assert_eq(persist_del(p, tbl, "retried", 7), 0);
	persist_after_commit(p, saw_failure, &failed);
	cr_assert_eq(persist_flush(p), MMC_ERROR, "the store refuses: the flush returns");
	cr_assert(failed, "the waiter saw its batch fail");
	cr_assert(persist_dirty(p), "the delete waits in the open batch");
	cr_assert_eq(persist_flush(p), 0, "a retried delete alone is not committed: it waits for the next write");
	failures = persist_failures(p);
	event_base_loopexit(base, &(struct timeval){0, 200000});
	event_base_dispatch(base);
	cr_assert_eq(persist_failures(p), failures, "no commit is tried for it meanwhile (it would fail for ever)");
	cr_assert(stored("plain") && stored("retried"));
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	cr_assert_eq(persist_put(p, tbl, "next", 4, "1", 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_not(stored("retried"), "the retried delete went with the next commit");
	cr_assert(stored("plain"), "a plain table's failed delete is not retried");
	cr_assert(stored("next"));
	persist_set_fence(p, NULL, NULL);
}

/* A retried delete waits for the next write; at a close none comes, so it goes alone once more: the key it removed
 * does not come back with the next open. */
BOTH(a_retried_delete_goes_at_a_close)
{
	put_and_land("gone", "1", 1);
	persist_table_retry_deletes(tbl);
	fence_ok = false;
	persist_set_fence(p, fence, &fence_ok);
	cr_assert_eq(persist_del(p, tbl, "gone", 4), 0);
	cr_assert_eq(persist_flush(p), MMC_ERROR, "the store refuses");
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE); /* it takes commits again; no write comes */
	persist_close(p);
	open_store();
	cr_assert_not(stored("gone"), "a key removed before the store failed is back after a clean close");
}

/* "old" on disk, then moved to "new" (a kept delete and write) while the store refuses every commit. */
static void move_while_refused(void)
{
	put_and_land("old", "1", 1);
	persist_table_retry_deletes(tbl);
	fence_ok = false;
	persist_set_fence(p, fence, &fence_ok);
	cr_assert_eq(persist_del_kept(p, tbl, "old", 3), 0);
	cr_assert_eq(persist_put_kept(p, tbl, "new", 3, "1", 1), 0);
}

/* n batches of one plain write each ("w<first>", ...), each refused by the store. */
static void refused_writes(int first, int n)
{
	char key[16];

	for (int i = first; i < first + n; i++) {
		snprintf(key, sizeof(key), "w%d", i);
		cr_assert_eq(persist_put(p, tbl, key, strlen(key), "1", 1), 0);
		cr_assert_eq(persist_flush(p), MMC_ERROR, "the store refuses");
	}
}

/* A record moved to a new key (a promoted object renumbered): its batch failed, and the old key's delete, retried,
 * went with the next commit without the new key's write, which waited for a rewrite; a crash between left neither.
 * A kept pair goes again together, with the record's later plain write; a plain write does not. */
BOTH(a_kept_write_goes_again_with_the_retried_delete)
{
	char v[8];
	size_t len = 0;

	move_while_refused();
	cr_assert_eq(persist_put(p, tbl, "new", 3, "2", 1), 0); /* the moved record written again (a demote) */
	cr_assert_eq(persist_put(p, tbl, "plain", 5, "1", 1), 0);
	cr_assert_eq(persist_flush(p), MMC_ERROR, "the store refuses");
	cr_assert(persist_dirty(p), "the delete and the kept write wait in the open batch");
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	cr_assert_eq(persist_put(p, tbl, "next", 4, "1", 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert(!stored("old") && stored("new"), "the delete landed without the kept write");
	cr_assert_eq(persist_get(p, tbl, "new", 3, v, sizeof(v), &len), 0);
	cr_assert(len == 1 && v[0] == '2', "the store got the moved record's older write");
	cr_assert_not(stored("plain"), "a plain write of a failed batch is not retried");
	cr_assert(stored("next"));
	persist_set_fence(p, NULL, NULL);
}

/* A store that refuses every write: a kept pair goes again a few times, not with every batch (each try would fail
 * every batch it rides in); then it is parked whole, the store keeping the old record, never the delete alone, and
 * goes again once the store has taken a commit. */
BOTH(a_kept_pair_refused_again_and_again_is_parked_whole)
{

	move_while_refused();
	refused_writes(0, 4);
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	cr_assert_eq(persist_put(p, tbl, "next", 4, "1", 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert(stored("old") && !stored("new"), "the pair was not parked whole");
	cr_assert(stored("next"));
	cr_assert_eq(persist_put(p, tbl, "later", 5, "1", 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert(!stored("old") && stored("new"), "the parked pair went with the write after the store came back");
	persist_set_fence(p, NULL, NULL);
}

/* A moved record's pair parked, then the object removed: the remove takes the pair's old key with it, or the removed
 * key would come back with the next open. */
BOTH(a_removed_object_s_parked_pair_takes_its_old_record_along)
{

	move_while_refused();
	refused_writes(0, 3);
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	cr_assert_eq(persist_del(p, tbl, "new", 3), 0); /* the object removed: its record under the id it moved to */
	cr_assert_eq(persist_flush(p), 0);
	cr_assert(!stored("old") && !stored("new"), "the removed object's record under its old id is still stored");
	persist_close(p);
	open_store();
	cr_assert(!stored("old") && !stored("new"));
}

/* The writer's fence for the next test: its first commit waits for the test, then fails; later ones pass. */
static int fence_calls, fence_released;

static bool fence_once(void *arg)
{
	if (__atomic_fetch_add(&fence_calls, 1, __ATOMIC_ACQ_REL) > 0)
		return true;
	while (!__atomic_load_n(&fence_released, __ATOMIC_ACQUIRE))
		usleep(1000);
	return false;
}

/* A batch with key in it, flying until the test sets fence_released, then refused (fence_once). */
static void fly_refused_once(const char *key)
{
	fence_calls = fence_released = 0;
	persist_set_fence(p, fence_once, NULL);
	cr_assert_eq(persist_put(p, tbl, key, strlen(key), "1", 1), 0);
	for (int i = 0; i < 2000 && !__atomic_load_n(&fence_calls, __ATOMIC_ACQUIRE); i++) {
		event_base_loopexit(base, &(struct timeval){0, 1000});
		event_base_dispatch(base);
	}
	cr_assert_eq(__atomic_load_n(&fence_calls, __ATOMIC_ACQUIRE), 1, "the batch is flying");
}

/*
 * A retrying table (persist_table_retry): every write of a failed batch goes again, ahead of the writes queued while
 * it flew, so a key written again meanwhile ends as its newer value and one written only then is stored too.
 */
BOTH(a_failed_batch_of_a_retrying_table_goes_again_before_what_came_after)
{
	char v[16];
	size_t len = 0;

	persist_table_retry(tbl);
	fence_calls = fence_released = 0;
	persist_set_fence(p, fence_once, NULL);
	cr_assert_eq(persist_put(p, tbl, "k", 1, "old", 3), 0);
	cr_assert_eq(persist_put(p, tbl, "only-then", 9, "1", 1), 0);
	for (int i = 0; i < 2000 && !__atomic_load_n(&fence_calls, __ATOMIC_ACQUIRE); i++) {
		event_base_loopexit(base, &(struct timeval){0, 1000});
		event_base_dispatch(base); /* until the batch flies: the writer waits in the fence */
	}
	cr_assert_eq(__atomic_load_n(&fence_calls, __ATOMIC_ACQUIRE), 1, "the batch went to the writer");
	cr_assert_eq(persist_put(p, tbl, "k", 1, "new", 3), 0); /* queued while the first batch flies */
	__atomic_store_n(&fence_released, 1, __ATOMIC_RELEASE);
	cr_assert_eq(persist_flush(p), MMC_ERROR, "the first batch failed; the open one, its writes ahead, committed");
	cr_assert_eq(persist_failures(p), 1);
	cr_assert_not(persist_dirty(p));
	cr_assert_eq(persist_get(p, tbl, "k", 1, v, sizeof(v), &len), 0);
	cr_assert(len == 3 && memcmp(v, "new", 3) == 0, "k is %.*s", (int)len, v);
	cr_assert(stored("only-then"), "the failed batch's other write went again");
	persist_set_fence(p, NULL, NULL);
}

/* A retrying table's writes go again a bounded number of times: a store that refuses them for good (a full map)
 * must not fail every later batch with them for ever. */
/* A table that retries its writes (KVCM's): a write goes again with the next batches, three at most, each write
 * counting its own failures (one that failed once is not given up beside an older one at its third); past that it
 * is parked, and goes again once the store takes a commit, before anyone waiting is answered. */
BOTH(a_retried_write_goes_again_three_times_then_once_the_store_is_back)
{
	persist_table_retry(tbl);
	fence_ok = false;
	persist_set_fence(p, fence, &fence_ok);
	put_and_land("p", "1", 1);
	put_and_land("q", "1", 1); /* p's second failure */
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	put_and_land("r", "1", 1);
	cr_assert(stored("p") && stored("q") && stored("r"), "twice refused, then stored");
	__atomic_store_n(&fence_ok, false, __ATOMIC_RELEASE);
	put_and_land("s", "1", 1);
	put_and_land("t", "1", 1);
	put_and_land("u", "1", 1); /* s's third failure: parked; t's second, u's first */
	cr_assert(persist_dirty(p), "s is pending, parked");
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	put_and_land("v", "1", 1);
	cr_assert(stored("v") && stored("t") && stored("u"), "t and u went again with v: their own counts");
	cr_assert(stored("s"), "v's waiter was answered before the parked write was stored");
	cr_assert_not(persist_dirty(p));
	persist_set_fence(p, NULL, NULL);
}

Test(persist_lmdb, a_redis_fence_key_is_refused_on_lmdb, .init = setup_lmdb, .fini = teardown)
{
	cr_assert_eq(persist_set_redis_fence_key(p, "lock", "me"), MMC_INVALID_PARAM);
}

/* The lock key's value is checked at Redis, atomically with the commit: whoever set another value wins. */
/* Redis applies the rest of a transaction whose one command failed: the batch must still count as failed. */
Test(persist_redis, a_write_redis_refuses_inside_exec_fails_the_batch, .init = setup_redis, .fini = teardown)
{
	char reply[64];
	uint64_t seq;

	cr_assert_eq(redis_proc_cmd(&rp, "SET mmc:t:t not-a-hash", reply, sizeof(reply)), 0);
	seq = put_and_land("k", "1", 1);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_LOST, "WRONGTYPE inside EXEC is a failed commit");
}

/* arg: {id, found}; found set when the scan meets record id. */
static int find_record(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	uint64_t *want = arg;

	(void)v;
	(void)vlen;
	if (klen == REC_KEY_LEN && rec_id_of(k) == want[0])
		want[1] = 1;
	return 0;
}

/*
 * A failed batch may still have taken an emptied block off the packed table's set (Redis ran its EXEC, then one
 * command of it, or WAIT, fell short): the next record appended to that block lists it again, or a load, which reads
 * listed blocks only, would not find an acknowledged record.
 */
Test(persist_redis, a_block_a_failed_batch_unlisted_is_listed_again_by_its_next_record, .init = setup_redis,
     .fini = teardown)
{
	struct persist_table *t = packed_table();
	unsigned char k[REC_KEY_LEN], v = 7;
	uint64_t want[2] = {2, 0};
	char reply[64];

	cr_assert_eq(persist_scan(p, t, find_record, want), 0); /* loaded: the writer knows the table's blocks */
	rec_key_of(0, k);
	cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &v, 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_eq(persist_del(p, t, k, REC_KEY_LEN), 0);
	cr_assert_eq(persist_flush(p), 0); /* block 0 is empty now: the next plan deletes it and takes it off the set */
	cr_assert_eq(redis_proc_cmd(&rp, "SET mmc:t:t not-a-hash", reply, sizeof(reply)), 0);
	cr_assert_eq(persist_put(p, tbl, "x", 1, "1", 1), 0); /* WRONGTYPE inside the EXEC: the batch fails */
	rec_key_of(64, k);
	cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &v, 1), 0);
	cr_assert_neq(persist_flush(p), 0);
	cr_assert_eq(redis_int("SISMEMBER mmc:p:pk 0"), 0, "the failed batch's SREM landed (the case under test)");
	cr_assert_eq(redis_proc_cmd(&rp, "DEL mmc:t:t", reply, sizeof(reply)), 0);
	rec_key_of(2, k);
	cr_assert_eq(persist_put(p, t, k, REC_KEY_LEN, &v, 1), 0);
	cr_assert_eq(persist_flush(p), 0, "record 2 is acknowledged");
	t = reopen_packed();
	cr_assert_eq(persist_scan(p, t, find_record, want), 0);
	cr_assert(want[1], "an acknowledged record is missing after a reopen: its block is on no list");
}

Test(persist_redis, a_commit_after_the_lock_key_moved_fails_at_redis, .init = setup_redis, .fini = teardown)
{
	char reply[64];
	uint64_t seq;

	cr_assert_eq(redis_proc_cmd(&rp, "SET mmc-test-lock node-a", reply, sizeof(reply)), 0);
	cr_assert_eq(persist_set_redis_fence_key(p, "", "x"), MMC_INVALID_PARAM);
	cr_assert_eq(persist_set_redis_fence_key(p, "mmc-test-lock", "node-a"), 0);
	seq = put_and_land("while_leading", "1", 1);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_DURABLE);
	cr_assert_eq(redis_proc_cmd(&rp, "SET mmc-test-lock node-b", reply, sizeof(reply)), 0);
	seq = put_and_land("after_takeover", "1", 1);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_LOST, "node b holds the lock: node a's commit fails");
	cr_assert_not(stored("after_takeover"));
	cr_assert_eq(redis_proc_cmd(&rp, "DEL mmc-test-lock", reply, sizeof(reply)), 0);
	seq = put_and_land("lock_gone", "1", 1);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_LOST, "no lock at all: no commit either");
	cr_assert_eq(persist_set_redis_fence_key(p, NULL, NULL), 0);
	seq = put_and_land("unfenced", "1", 1);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_DURABLE);
}

/* The leader's elector renews its lease while the writer commits: a renewal (PEXPIRE of the same value) is no
 * fencing. The WATCH on the lock key failed every commit that a renewal overtook (20 of 8000 puts in 42 s at one
 * renewal per 100 ms). */
struct renewer {
	struct ha_lock *lock;
	struct ha_holder self;
	long renewals;
	bool stop;
};

static void *renew_until_stopped(void *arg)
{
	struct renewer *r = arg;
	struct ha_holder cur;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
		r->renewals += r->lock->ops->acquire(r->lock, &r->self, 60000, &cur) == 1;
	return NULL;
}

Test(persist_redis, lease_renewals_during_commits_fence_nothing, .init = setup_redis, .fini = teardown)
{
	struct renewer r = {.self = {.node_id = "node-a", .rpc = "tcp://127.0.0.1:1", .host = "127.0.0.1"}};
	struct ha_holder cur;
	char err[256], value[1024], reply[64];
	int failed = 0;
	pthread_t t;

	cr_assert_eq(ha_lock_open(&r.lock, rp.uri, NULL, 2000, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.lock->ops->acquire(r.lock, &r.self, 60000, &cur), 1);
	cr_assert_eq(ha_lock_redis_value(&r.self, value, sizeof(value)), 0);
	cr_assert_eq(persist_set_redis_fence_key(p, r.lock->redis_key, value), 0);
	cr_assert_eq(pthread_create(&t, NULL, renew_until_stopped, &r), 0);
	for (int i = 0; i < 300; i++) {
		char key[16];

		snprintf(key, sizeof(key), "k%d", i);
		failed += persist_seq_state(p, put_and_land(key, "1", 1)) != PERSIST_SEQ_DURABLE;
	}
	__atomic_store_n(&r.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	cr_log_info("300 fenced commits beside %ld lease renewals", r.renewals);
	cr_assert_gt(r.renewals, 0);
	cr_assert_eq(failed, 0, "%d of 300 commits of the lock's holder failed while it renewed its lease", failed);
	/* a real fencing still refuses: another holder's value */
	cr_assert_eq(redis_proc_cmd(&rp, "SET kvcm_lock:mmc_leader node-b", reply, sizeof(reply)), 0);
	cr_assert_eq(persist_seq_state(p, put_and_land("after_takeover", "1", 1)), PERSIST_SEQ_LOST);
	cr_assert_not(stored("after_takeover"));
	r.lock->ops->close(r.lock);
}

BOTH(a_newer_format_is_refused_at_open)
{
	struct persist_table *fmt;
	char err[256] = "", v[8];
	size_t len;
	int format;

	cr_assert_eq(persist_table(p, "mmc_format", &fmt), 0);
	cr_assert_eq(persist_get(p, fmt, "version", 7, v, sizeof(v), &len), 0, "written on first open");
	cr_assert_eq(len, 1);
	cr_assert_eq(v[0], '0' + persist_format_version(p));
	cr_assert_eq(persist_format_version(p), be == REDIS ? PERSIST_FORMAT_VERSION : PERSIST_FORMAT_LMDB);
	format = persist_format_version(p);
	persist_put(p, fmt, "version", 7, "9", 1);
	cr_assert_eq(persist_flush(p), 0);
	persist_close(p);
	p = NULL;
	cr_assert_eq(try_open(&p, 64u << 20, NULL, err, sizeof(err)), MMC_ERROR);
	cr_assert_null(p);
	snprintf(v, sizeof(v), "%d", format);
	cr_assert(strstr(err, "metadata format 9") && strstr(err, "reads format ") && strstr(err, v), "%s", err);
}

/* Format 1 (object records without an LRU stamp) opens and is raised to the current format, so that a release of
 * format 1 refuses the store instead of dropping the records it cannot read. */
BOTH(an_older_format_is_raised_at_open)
{
	struct persist_table *fmt;
	char err[256] = "", v[8];
	size_t len;

	cr_assert_eq(persist_table(p, "mmc_format", &fmt), 0);
	persist_put(p, fmt, "version", 7, "1", 1);
	cr_assert_eq(persist_flush(p), 0);
	persist_close(p);
	p = NULL;
	cr_assert_eq(try_open(&p, 64u << 20, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(persist_table(p, "mmc_format", &fmt), 0);
	cr_assert_eq(persist_get(p, fmt, "version", 7, v, sizeof(v), &len), 0);
	cr_assert_eq(len, 1);
	cr_assert_eq(v[0], '0' + persist_format_version(p));
}

BOTH(a_reload_lands_what_is_queued_and_keeps_tables_and_numbers)
{
	char err[256], buf[8];
	size_t len;
	uint64_t seq;

	cr_assert_eq(persist_put(p, tbl, "queued", 6, "1", 1), 0);
	seq = persist_wait_seq(p);
	cr_assert_eq(persist_reload(p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_DURABLE, "landed before the reload");
	cr_assert(stored("queued"));
	cr_assert_eq(persist_get(p, tbl, "queued", 6, buf, sizeof(buf), &len), 0, "the table is still valid");
	cr_assert_eq(persist_put(p, tbl, "later", 5, "2", 1), 0);
	cr_assert_gt(persist_wait_seq(p), seq, "batch numbers keep growing");
	cr_assert_eq(persist_flush(p), 0);
	cr_assert(stored("later"));
}

/* A standby's takeover: what another node committed is what the reload and a scan see. */
Test(persist_redis, a_reload_sees_what_another_node_committed, .init = setup_redis, .fini = teardown)
{
	char reply[64], all[4096] = "", err[256];

	put_and_land("mine", "1", 1);
	cr_assert_eq(redis_proc_cmd(&rp, "HSET mmc:t:t theirs 2", reply, sizeof(reply)), 0);
	redis_proc_kill(&rp);
	cr_assert_eq(redis_proc_restart(&rp), 0); /* the old connection is dead: the reload makes a new one */
	cr_assert_eq(persist_reload(p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(persist_scan(p, tbl, collect, all), 0);
	cr_assert_str_eq(all, "mine=1;theirs=2;");
}

Test(persist_redis, clusters_with_other_key_prefixes_share_one_redis, .init = setup_redis, .fini = teardown)
{
	struct persist *other;
	struct persist_table *t2;
	char err[256], buf[8];
	size_t len;
	uint64_t n = 1;

	put_and_land("ours", "1", 1);
	cr_assert_eq(try_open(&other, 64u << 20, "cluster2:", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(persist_table(other, "t", &t2), 0);
	cr_assert_eq(persist_get(other, t2, "ours", 4, buf, sizeof(buf), &len), MMC_OBJECT_NOT_EXISTS);
	cr_assert_eq(persist_count(other, t2, &n), 0);
	cr_assert_eq(n, 0);
	persist_close(other);
}

Test(persist_redis, an_unreachable_redis_fails_the_open_without_showing_the_password)
{
	struct persist_opts o = {.uri = "redis://admin:s3cret@127.0.0.1:1/0", .timeout_ms = 500};
	struct event_base *b = event_base_new();
	struct persist *q = NULL;
	char err[256] = "";

	cr_assert_eq(persist_open(&q, b, &o, err, sizeof(err)), MMC_ERROR);
	cr_assert(strstr(err, "redis://admin:***@127.0.0.1:1/0"), "%s", err);
	cr_assert_null(strstr(err, "s3cret"), "%s", err);
	o.uri = "memcached://x";
	cr_assert_eq(persist_open(&q, b, &o, err, sizeof(err)), MMC_INVALID_PARAM);
	event_base_free(b);
}

Test(store_uri, redis_uris_parse_and_redact)
{
	struct redis_uri u;
	char err[256], shown[256];

	cr_assert_eq(redis_uri_parse("redis://u:pw@db.example:6380/3", &u, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(u.host, "db.example");
	cr_assert_eq(u.port, 6380);
	cr_assert_eq(u.db, 3);
	cr_assert_str_eq(u.user, "u");
	cr_assert_str_eq(u.password, "pw");
	cr_assert_eq(redis_uri_parse("redis://token@h/?db=2&cluster_name=c", &u, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(u.port, 6379);
	cr_assert_eq(u.db, 2);
	cr_assert_str_eq(u.password, "token", "the reference's auth_token@");
	cr_assert_str_eq(u.user, "");
	cr_assert_eq(redis_uri_parse("redis://:pw@h:99999", &u, err, sizeof(err)), MMC_INVALID_PARAM);
	cr_assert_null(strstr(err, "pw@"), "%s", err);
	cr_assert_eq(redis_uri_parse("redis://h:1/x", &u, err, sizeof(err)), MMC_INVALID_PARAM);
	cr_assert_eq(redis_uri_parse("redis://", &u, err, sizeof(err)), MMC_INVALID_PARAM);
	uri_mask("redis://u:pw@h:1/0", shown, sizeof(shown));
	cr_assert_str_eq(shown, "redis://u:***@h:1/0");
	uri_mask("redis://tok@h:1", shown, sizeof(shown));
	cr_assert_str_eq(shown, "redis://***@h:1");
	uri_mask("lmdb", shown, sizeof(shown));
	cr_assert_str_eq(shown, "lmdb");
}

/* A password holding a blank or a quote ends a URI where a log's mask looks for its end, so it would show: such a
 * URI is refused, and the refusal shows none of it. */
Test(store_uri, a_password_a_log_could_not_mask_is_refused_unshown)
{
	static const char *const bad[] = {"redis://admin:ab\"cd@redis1:6379", "redis://admin:ab cd@redis1:6379",
	                                  "redis://admin:ab'cd@redis1:6379", "redis://ab\tcd@redis1:6379"};
	struct redis_uri u;
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(redis_uri_parse(bad[i], &u, err, sizeof(err)), MMC_INVALID_PARAM, "%s", bad[i]);
		cr_assert_null(strstr(err, "cd"), "the message shows the password: %s", err);
		cr_assert(strstr(err, "store_password_file"), "%s", err);
	}
	cr_assert(uri_userinfo_maskable("redis://u:p@ss#w/rd@h:1"), "'@', '#' and '/' are masked whole");
	cr_assert(uri_userinfo_maskable("lmdb"));
}

/* ock.mmc.meta.store_password_file with redis://mmc@host (docs/operations.md's example): mmc is the user and the
 * file the password; it was sent as the password, and the file ignored. */
Test(store_uri, a_password_file_makes_a_lone_token_the_user)
{
	struct redis_uri u;
	char err[256];

	cr_assert_eq(redis_uri_parse("redis://mmc@redis1:6379/2", &u, err, sizeof(err)), 0, "%s", err);
	redis_uri_set_password(&u, "from-file");
	cr_assert_str_eq(u.user, "mmc");
	cr_assert_str_eq(u.password, "from-file");
	cr_assert_eq(redis_uri_parse("redis://u:in-uri@h:1", &u, err, sizeof(err)), 0, "%s", err);
	redis_uri_set_password(&u, "from-file");
	cr_assert_str_eq(u.password, "in-uri", "the URI's own password wins, as documented");
	cr_assert_eq(redis_uri_parse("redis://h:1", &u, err, sizeof(err)), 0, "%s", err);
	redis_uri_set_password(&u, "from-file");
	cr_assert_str_eq(u.user, "");
	cr_assert_str_eq(u.password, "from-file");
	cr_assert_eq(redis_uri_parse("redis://tok@h:1", &u, err, sizeof(err)), 0, "%s", err);
	redis_uri_set_password(&u, NULL);
	cr_assert_str_eq(u.password, "tok", "without a file a lone token is the password, as the reference reads it");
}

/* A write of a parked key into an empty open batch: the batch it opens, parked ops ahead of it, is numbered, so the
 * write's waiters and whoever asks persist_wait_seq() wait for its commit and not for an older number. */
BOTH(a_write_that_unparks_into_an_empty_batch_is_numbered)
{
	uint64_t before;

	move_while_refused();
	refused_writes(0, 3);
	before = persist_durable_seq(p);
	cr_assert_eq(persist_del(p, tbl, "new", 3), 0); /* the moved object removed: its pair's write goes */
	cr_assert_gt(persist_wait_seq(p), before, "the remove's batch has no number of its own");
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert(!stored("old") && !stored("new"));
	persist_set_fence(p, NULL, NULL);
}

/* The moved record removed while its pair's last try flies: the remove is newer than the pair parked after it. */
BOTH(a_remove_queued_while_the_pair_s_last_try_flies_is_not_undone)
{

	move_while_refused();
	refused_writes(0, 2);
	fly_refused_once("w2"); /* the pair's third try */
	cr_assert_eq(persist_del(p, tbl, "new", 3), 0);
	__atomic_store_n(&fence_released, 1, __ATOMIC_RELEASE);
	persist_flush(p);
	cr_assert_eq(persist_put(p, tbl, "later", 5, "1", 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_not(stored("new"), "a removed object's record came back from its parked pair");
	cr_assert_not(stored("old"));
	persist_set_fence(p, NULL, NULL);
}

/* The moved record removed while the store refuses: the remove rides in the pair's batches, and goes where they go. */
BOTH(a_remove_in_the_pair_s_batch_is_not_undone)
{

	move_while_refused();
	cr_assert_eq(persist_del(p, tbl, "new", 3), 0);
	refused_writes(0, 3);
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	cr_assert_eq(persist_put(p, tbl, "next", 4, "1", 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_eq(persist_put(p, tbl, "later", 5, "1", 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_not(stored("new"), "a removed object's record came back from its parked pair");
	cr_assert_not(stored("old"));
	persist_set_fence(p, NULL, NULL);
}

/* A parked put of a table that retries its writes, refused every time it goes again (a full map refusing it while
 * batches without it commit): dropped after six refusals in all, as before parking, rather than failing every batch
 * it rides, and every reply deferred to it, for ever. */
BOTH(a_parked_put_refused_every_time_it_goes_again_is_dropped)
{
	uint64_t failed = 0;
	int before;

	persist_table_retry(tbl);
	fence_ok = false;
	persist_set_fence(p, fence, &fence_ok);
	put_and_land("x", "1", 1);
	put_and_land("x", "1", 1);
	put_and_land("x", "1", 1); /* its third refusal: parked */
	cr_assert(persist_dirty(p));
	for (int i = 0; i < 20 && persist_dirty(p); i++) {
		before = runs;
		cr_assert_eq(persist_after_commit(p, saw_failure, &failed), 0); /* it goes, and fails */
		run_until(before + 1);
	}
	cr_assert_not(persist_dirty(p), "refused in every round, it was never dropped");
	persist_set_fence(p, NULL, NULL);
}

/* A moved record's new key written again (a plain put: a demote, an LRU checkpoint) while its pair is parked: the
 * write takes the parked write's place in the pair and goes again with the delete, or a failure of its batch left
 * the store with neither record. Through a write queued now, and one queued while the pair's last try flew. */
BOTH(a_plain_write_of_a_parked_pair_s_new_key_stays_in_the_pair)
{
	move_while_refused();
	refused_writes(0, 3); /* parked */
	cr_assert_eq(persist_put(p, tbl, "new", 3, "2", 1), 0);
	cr_assert_eq(persist_flush(p), MMC_ERROR, "the store refuses");
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	cr_assert_eq(persist_put(p, tbl, "next", 4, "1", 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_eq(persist_put(p, tbl, "later", 5, "1", 1), 0);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert(!stored("old") && stored("new"), "the moved record is in the store under neither key");
	persist_set_fence(p, NULL, NULL);
}

BOTH(a_plain_write_queued_while_the_pair_flies_stays_in_the_pair)
{
	move_while_refused();
	refused_writes(0, 2);
	fly_refused_once("w2"); /* the pair's third try */
	cr_assert_eq(persist_put(p, tbl, "new", 3, "2", 1), 0);
	fence_ok = false;
	persist_set_fence(p, fence, &fence_ok); /* for the batches after the flying one */
	__atomic_store_n(&fence_released, 1, __ATOMIC_RELEASE);
	persist_flush(p);
	__atomic_store_n(&fence_ok, true, __ATOMIC_RELEASE);
	cr_assert_eq(persist_put(p, tbl, "later", 5, "1", 1), 0);
	persist_flush(p);
	cr_assert_eq(persist_put(p, tbl, "later2", 6, "1", 1), 0);
	persist_flush(p);
	cr_assert(!stored("old") && stored("new"), "the moved record is in the store under neither key");
	persist_set_fence(p, NULL, NULL);
}

static int slow_calls, slow_released;

/* The first commit waits for the test, then passes; later ones pass. */
static bool fence_slow_once(void *arg)
{
	(void)arg;
	if (__atomic_fetch_add(&slow_calls, 1, __ATOMIC_ACQ_REL) == 0)
		while (!__atomic_load_n(&slow_released, __ATOMIC_ACQUIRE))
			usleep(1000);
	return true;
}

static bool x_when_answered;

static void note_x(void *arg)
{
	(void)arg;
	x_when_answered = stored("x");
	runs++;
}

/* A waiter asked while a batch flies and writes are parked, then a write of one parked key unparks the others into
 * the open batch: the waiter is answered once those are durable, not when the flying batch lands. */
BOTH(a_waiter_asked_while_writes_are_parked_waits_for_them)
{
	int before;

	persist_table_retry(tbl);
	fence_ok = false;
	persist_set_fence(p, fence, &fence_ok);
	cr_assert_eq(persist_put(p, tbl, "x", 1, "1", 1), 0);
	cr_assert_eq(persist_put(p, tbl, "y", 1, "1", 1), 0);
	cr_assert_eq(persist_flush(p), MMC_ERROR);
	refused_writes(0, 2); /* x and y parked */
	slow_calls = slow_released = 0;
	persist_set_fence(p, fence_slow_once, NULL);
	cr_assert_eq(persist_put(p, tbl, "z", 1, "1", 1), 0);
	for (int i = 0; i < 2000 && !__atomic_load_n(&slow_calls, __ATOMIC_ACQUIRE); i++) {
		event_base_loopexit(base, &(struct timeval){0, 1000});
		event_base_dispatch(base);
	}
	cr_assert_eq(__atomic_load_n(&slow_calls, __ATOMIC_ACQUIRE), 1, "z's batch is flying");
	before = runs;
	cr_assert_eq(persist_after_commit(p, note_x, NULL), 0); /* a retried call that found its change made */
	cr_assert_eq(persist_put(p, tbl, "y", 1, "2", 1), 0);   /* unparks x into the open batch */
	__atomic_store_n(&slow_released, 1, __ATOMIC_RELEASE);
	run_until(before + 1);
	cr_assert_eq(runs, before + 1);
	cr_assert(x_when_answered, "answered before the parked write x was durable");
	persist_flush(p);
	persist_set_fence(p, NULL, NULL);
}

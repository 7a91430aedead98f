/*
 * The LMDB store: one environment in the data dir, one named database per table, one write transaction per batch
 * (fsync'd at commit unless opts->sync is off). The data dir is flock'ed against a second server.
 */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_dir.h"
#include "log.h"
#include "mmc/mmc.h"
#include "persist_backend.h"

struct lmdb_store {
	struct persist_backend be;
	MDB_env *env;
	MDB_dbi dbi[PERSIST_MAX_TABLES];
	int lock_fd;
	struct persist_fail_log fail_log;
	int bad_size_bucket; /* log_ratelimited's, for writes LMDB refuses one by one */
};

static struct lmdb_store *to_lmdb(struct persist_backend *be)
{
	return (struct lmdb_store *)be;
}

static int lmdb_table(struct persist_backend *be, uint32_t id, const char *name)
{
	struct lmdb_store *s = to_lmdb(be);
	MDB_txn *txn;
	int rc;

	/* a handle opened in a transaction becomes usable by others once that transaction commits */
	rc = mdb_txn_begin(s->env, NULL, 0, &txn);
	if (rc == 0 && (rc = mdb_dbi_open(txn, name, MDB_CREATE, &s->dbi[id])) == 0)
		rc = mdb_txn_commit(txn);
	else if (rc == 0)
		mdb_txn_abort(txn);
	if (rc) {
		log_error("op=lmdb_open_db db=\"%s\" err=\"%s\"", name, mdb_strerror(rc));
		return MMC_ERROR;
	}
	return 0;
}

/*
 * The last key of one table as a write transaction knows it. A put past it is an append (MDB_APPEND): no search down
 * the tree and no key compared on the way, only one with the last key. The object records' keys (ids) only grow, so
 * nearly every put of a group commit is one: the writer's CPU per new object fell from 0.68-0.81 to 0.26-0.33 µs at
 * 10^6 (docs/performance.md, "The writer appends"). The edge may be stale after a delete (then larger than the last
 * key: the put searches, as before); LMDB itself refuses an append that is not past its last key (MDB_KEYEXIST), and
 * the put then searches. Keys longer than EDGE_KEY_MAX never append.
 */
#define EDGE_KEY_MAX 64

struct edge {
	MDB_cursor *cur; /* NULL: not looked at in this transaction */
	bool usable;     /* the last key is known (or the table is empty) */
	size_t len;
	unsigned char key[EDGE_KEY_MAX];
};

/* LMDB's default order: bytewise, then the shorter first. */
static bool past_edge(const struct edge *e, const MDB_val *k)
{
	size_t n = k->mv_size < e->len ? k->mv_size : e->len;
	int c = n ? memcmp(k->mv_data, e->key, n) : 0;

	return c > 0 || (c == 0 && k->mv_size > e->len);
}

static void edge_set(struct edge *e, const MDB_val *k)
{
	e->usable = k->mv_size <= EDGE_KEY_MAX;
	e->len = e->usable ? k->mv_size : 0;
	if (e->usable)
		memcpy(e->key, k->mv_data, k->mv_size);
}

/* Its cursor (which LMDB closes with the transaction) and last key, the first time a put goes to the table. */
static int edge_open(MDB_txn *txn, MDB_dbi dbi, struct edge *e)
{
	MDB_val k, v;
	int rc = mdb_cursor_open(txn, dbi, &e->cur);

	if (rc)
		return rc;
	rc = mdb_cursor_get(e->cur, &k, &v, MDB_LAST);
	if (rc == MDB_NOTFOUND) {
		e->usable = true;
		e->len = 0;
		return 0;
	}
	if (rc == 0)
		edge_set(e, &k);
	return rc;
}

static int lmdb_put(MDB_txn *txn, MDB_dbi dbi, struct edge *e, MDB_val *k, MDB_val *v)
{
	int rc = e->cur ? 0 : edge_open(txn, dbi, e);

	if (rc)
		return rc;
	if (e->usable && past_edge(e, k)) {
		rc = mdb_cursor_put(e->cur, k, v, MDB_APPEND);
		if (rc == 0)
			edge_set(e, k);
		if (rc != MDB_KEYEXIST)
			return rc;
	}
	return mdb_put(txn, dbi, k, v, 0);
}

/* One write LMDB refuses (a value it cannot store) is logged and skipped; a failure that breaks the transaction
 * (map full, I/O) fails the commit. */
static int lmdb_commit(struct persist_backend *be, const struct persist_ops *ops)
{
	struct lmdb_store *s = to_lmdb(be);
	struct persist_op op = {.table = UINT32_MAX}; /* UINT32_MAX: the failure is not one write's */
	struct edge edges[PERSIST_MAX_TABLES] = {0};
	unsigned long long skipped;
	size_t off = 0;
	MDB_txn *txn;
	int rc = mdb_txn_begin(s->env, NULL, 0, &txn);

	if (rc)
		goto fail;
	while (persist_op_next(ops, &off, &op)) {
		MDB_val k = {op.klen, (void *)op.key}, v = {op.vlen, (void *)op.val};

		if (op.del)
			rc = mdb_del(txn, s->dbi[op.table], &k, NULL);
		else
			rc = lmdb_put(txn, s->dbi[op.table], &edges[op.table], &k, &v);
		rc = op.del && rc == MDB_NOTFOUND ? 0 : rc;
		if (rc == MDB_BAD_VALSIZE) /* this write is skipped, the batch goes on */
			log_ratelimited(&s->bad_size_bucket, LOG_ERROR, "op=%s table=%u klen=%zu err=\"%s\"",
			                op.del ? "lmdb_del" : "lmdb_put", op.table, op.klen, mdb_strerror(rc));
		else if (rc) {
			mdb_txn_abort(txn);
			goto fail;
		}
	}
	if ((rc = mdb_txn_commit(txn)) == 0)
		return 0;
	op.del = false;
	op.table = UINT32_MAX;
fail:
	if (persist_fail_log_due(&s->fail_log, &skipped))
		log_error(
		    "op=lmdb_commit err=\"%s\" at=%s table=%d writes=%zu failed_since_last_line=%llu (metadata of "
		    "this batch is not durable)",
		    mdb_strerror(rc), op.table == UINT32_MAX ? "commit" : (op.del ? "lmdb_del" : "lmdb_put"),
		    op.table == UINT32_MAX ? -1 : (int)op.table, ops->nops, skipped);
	return MMC_ERROR;
}

static int lmdb_get(struct persist_backend *be, uint32_t id, const void *key, size_t klen, void *buf, size_t cap,
                    size_t *len)
{
	struct lmdb_store *s = to_lmdb(be);
	MDB_val k = {klen, (void *)key}, v;
	MDB_txn *txn;
	int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);

	if (rc) {
		log_error("op=lmdb_read_begin err=\"%s\"", mdb_strerror(rc));
		return MMC_ERROR;
	}
	rc = mdb_get(txn, s->dbi[id], &k, &v);
	if (rc == 0 && v.mv_size <= cap) {
		memcpy(buf, v.mv_data, v.mv_size);
		*len = v.mv_size;
	}
	mdb_txn_abort(txn);
	return rc == MDB_NOTFOUND ? MMC_OBJECT_NOT_EXISTS : rc || v.mv_size > cap ? MMC_ERROR : 0;
}

static int lmdb_scan(struct persist_backend *be, uint32_t id, persist_scan_fn fn, void *arg)
{
	struct lmdb_store *s = to_lmdb(be);
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	int rc = 0;

	if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn))
		return MMC_ERROR;
	if (mdb_cursor_open(txn, s->dbi[id], &cur)) {
		mdb_txn_abort(txn);
		return MMC_ERROR;
	}
	while (rc == 0 && mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0)
		rc = fn(arg, k.mv_data, k.mv_size, v.mv_data, v.mv_size);
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc;
}

static int lmdb_count(struct persist_backend *be, uint32_t id, uint64_t *n)
{
	struct lmdb_store *s = to_lmdb(be);
	MDB_txn *txn;
	MDB_stat st;
	int rc;

	if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn))
		return MMC_ERROR;
	rc = mdb_stat(txn, s->dbi[id], &st);
	mdb_txn_abort(txn);
	*n = rc ? 0 : st.ms_entries;
	return rc ? MMC_ERROR : 0;
}

static int lmdb_reopen(struct persist_backend *be, char *err, size_t errlen)
{
	return 0; /* the environment is the data dir itself: nothing to reconnect */
}

static void lmdb_close(struct persist_backend *be)
{
	struct lmdb_store *s = to_lmdb(be);

	if (s->env)
		mdb_env_close(s->env);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	free(s);
}

static const struct persist_backend_ops lmdb_ops = {
    .name = "lmdb",
    .table = lmdb_table,
    .commit = lmdb_commit,
    .get = lmdb_get,
    .scan = lmdb_scan,
    .count = lmdb_count,
    .reopen = lmdb_reopen,
    .close = lmdb_close,
};

static int lock_dir(const char *dir, int *fd_out, char *err, size_t errlen)
{
	char path[4096];
	int fd;

	if (data_dir_prepare(dir, err, errlen))
		return MMC_ERROR;
	snprintf(path, sizeof(path), "%s/LOCK", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB)) {
		snprintf(err, errlen, "data dir \"%s\" is in use by another mmc-metaserver (%s)", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return MMC_ERROR;
	}
	*fd_out = fd;
	return 0;
}

int persist_lmdb_open(struct persist_backend **out, const struct persist_opts *opts, char *err, size_t errlen)
{
	struct lmdb_store *s = calloc(1, sizeof(*s));
	unsigned flags = MDB_NOTLS | (opts->sync ? 0 : MDB_NOSYNC | MDB_NOMETASYNC);
	int rc;

	if (!s)
		return MMC_MALLOC_FAILED;
	s->be.ops = &lmdb_ops;
	s->be.quick = !opts->sync; /* without fsync a commit is a few pwrites into the page cache */
	s->be.format = PERSIST_FORMAT_LMDB;
	s->lock_fd = -1;
	if (lock_dir(opts->dir, &s->lock_fd, err, errlen))
		goto fail;
	if ((rc = mdb_env_create(&s->env)) || (rc = mdb_env_set_maxdbs(s->env, PERSIST_MAX_TABLES)) ||
	    (rc = mdb_env_set_mapsize(s->env, opts->map_size)) || (rc = mdb_env_open(s->env, opts->dir, flags, 0644))) {
		snprintf(err, errlen, "cannot open LMDB in \"%s\": %s", opts->dir, mdb_strerror(rc));
		goto fail;
	}
	*out = &s->be;
	return 0;
fail:
	lmdb_close(&s->be);
	return MMC_ERROR;
}

#include "persist.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "mmc/mmc.h"

#define MAX_DBS         32
#define MAX_TXN_AGE_NS  2000000u /* commit at least this often under continuous load */
#define COMMIT_PRIORITY 2        /* lower than I/O (1): runs when the loop has nothing else ready */

struct waiter {
	void (*fn)(void *arg);
	void *arg;
};

struct persist {
	MDB_env *env;
	MDB_txn *txn;
	uint64_t txn_start_ns;
	struct event *commit_ev;
	struct waiter *waiters, *spare; /* spare: the array being run, so callbacks can queue new waiters */
	size_t nwaiters, capwaiters, capspare;
	int lock_fd;
	uint64_t commits;
};

static void commit_cb(evutil_socket_t fd, short what, void *arg)
{
	persist_flush(arg);
}

static int lock_dir(const char *dir, int *fd_out, char *err, size_t errlen)
{
	char path[4096];
	int fd;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create data dir \"%s\": %s", dir, strerror(errno));
		return MMC_ERROR;
	}
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

int persist_open(struct persist **out, struct event_base *base, const struct persist_opts *opts, char *err,
                 size_t errlen)
{
	struct persist *p = calloc(1, sizeof(*p));
	unsigned flags = MDB_NOTLS | (opts->sync ? 0 : MDB_NOSYNC | MDB_NOMETASYNC);
	int rc;

	if (!p)
		return MMC_MALLOC_FAILED;
	p->lock_fd = -1;
	if (lock_dir(opts->dir, &p->lock_fd, err, errlen))
		goto fail;
	if ((rc = mdb_env_create(&p->env)) || (rc = mdb_env_set_maxdbs(p->env, MAX_DBS)) ||
	    (rc = mdb_env_set_mapsize(p->env, opts->map_size)) || (rc = mdb_env_open(p->env, opts->dir, flags, 0644))) {
		snprintf(err, errlen, "cannot open LMDB in \"%s\": %s", opts->dir, mdb_strerror(rc));
		goto fail;
	}
	p->commit_ev = event_new(base, -1, 0, commit_cb, p);
	if (!p->commit_ev || event_priority_set(p->commit_ev, COMMIT_PRIORITY)) {
		snprintf(err, errlen, "cannot create the commit event");
		goto fail;
	}
	*out = p;
	return 0;
fail:
	persist_close(p);
	return MMC_ERROR;
}

void persist_close(struct persist *p)
{
	if (!p)
		return;
	if (p->env)
		persist_flush(p);
	if (p->commit_ev)
		event_free(p->commit_ev);
	if (p->env)
		mdb_env_close(p->env);
	if (p->lock_fd >= 0)
		close(p->lock_fd);
	free(p->waiters);
	free(p->spare);
	free(p);
}

int persist_dbi(struct persist *p, const char *name, MDB_dbi *dbi)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(p->env, NULL, 0, &txn);

	if (rc == 0)
		rc = mdb_dbi_open(txn, name, MDB_CREATE, dbi);
	if (rc == 0)
		rc = mdb_txn_commit(txn);
	else if (txn)
		mdb_txn_abort(txn);
	if (rc) {
		log_error("op=lmdb_open_db db=\"%s\" err=\"%s\"", name, mdb_strerror(rc));
		return MMC_ERROR;
	}
	return 0;
}

int persist_read_begin(struct persist *p, MDB_txn **txn)
{
	int rc = mdb_txn_begin(p->env, NULL, MDB_RDONLY, txn);

	if (rc) {
		log_error("op=lmdb_read_begin err=\"%s\"", mdb_strerror(rc));
		return MMC_ERROR;
	}
	return 0;
}

static MDB_txn *turn_txn(struct persist *p)
{
	int rc;

	if (p->txn) {
		if (clock_ns() - p->txn_start_ns > MAX_TXN_AGE_NS)
			persist_flush(p);
		else
			return p->txn;
	}
	rc = mdb_txn_begin(p->env, NULL, 0, &p->txn);
	if (rc) {
		log_error("op=lmdb_begin err=\"%s\"", mdb_strerror(rc));
		p->txn = NULL;
		return NULL;
	}
	p->txn_start_ns = clock_ns();
	event_active(p->commit_ev, 0, 0);
	return p->txn;
}

int persist_put(struct persist *p, MDB_dbi dbi, const void *key, size_t klen, const void *val, size_t vlen)
{
	MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
	MDB_txn *txn = turn_txn(p);
	int rc;

	if (!txn)
		return MMC_ERROR;
	rc = mdb_put(txn, dbi, &k, &v, 0);
	if (rc) {
		log_error("op=lmdb_put err=\"%s\"", mdb_strerror(rc));
		return MMC_ERROR;
	}
	return 0;
}

int persist_del(struct persist *p, MDB_dbi dbi, const void *key, size_t klen)
{
	MDB_val k = {klen, (void *)key};
	MDB_txn *txn = turn_txn(p);
	int rc;

	if (!txn)
		return MMC_ERROR;
	rc = mdb_del(txn, dbi, &k, NULL);
	if (rc && rc != MDB_NOTFOUND) {
		log_error("op=lmdb_del err=\"%s\"", mdb_strerror(rc));
		return MMC_ERROR;
	}
	return 0;
}

bool persist_dirty(const struct persist *p)
{
	return p->txn != NULL;
}

int persist_after_commit(struct persist *p, void (*fn)(void *arg), void *arg)
{
	if (p->nwaiters == p->capwaiters) {
		size_t cap = p->capwaiters ? p->capwaiters * 2 : 64;
		struct waiter *w = realloc(p->waiters, cap * sizeof(*w));

		if (!w)
			return MMC_MALLOC_FAILED;
		p->waiters = w;
		p->capwaiters = cap;
	}
	p->waiters[p->nwaiters++] = (struct waiter){fn, arg};
	event_active(p->commit_ev, 0, 0);
	return 0;
}

int persist_flush(struct persist *p)
{
	int rc = 0;
	size_t n;

	if (p->txn) {
		rc = mdb_txn_commit(p->txn);
		p->txn = NULL;
		if (rc)
			log_error("op=lmdb_commit err=\"%s\" (metadata of this turn is not durable)", mdb_strerror(rc));
		else
			p->commits++;
	}
	/* swap arrays first: a waiter may queue new waiters, which belong to the next commit */
	n = p->nwaiters;
	if (n) {
		struct waiter *run = p->waiters;
		size_t cap = p->capwaiters;

		p->waiters = p->spare;
		p->capwaiters = p->capspare;
		p->spare = NULL;
		p->capspare = 0;
		p->nwaiters = 0;
		for (size_t i = 0; i < n; i++)
			run[i].fn(run[i].arg);
		if (p->spare) { /* a waiter flushed again and parked its array there */
			free(run);
		} else {
			p->spare = run;
			p->capspare = cap;
		}
	}
	return rc ? MMC_ERROR : 0;
}

uint64_t persist_commits(const struct persist *p)
{
	return p->commits;
}

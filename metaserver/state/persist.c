#include "persist.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "log.h"
#include "mmc/mmc.h"

#define MAX_DBS          32
#define MAX_BATCH_AGE_NS 2000000u /* hand a batch over at least this often under continuous load */
#define COMMIT_PRIORITY  2        /* lower than I/O (1): runs when the loop has nothing else ready */
#define DEL_LEN          UINT32_MAX
#define FENCED           (-1) /* batch_commit: the fence refused the commit (no LMDB code is -1) */

struct waiter {
	void (*fn)(void *arg);
	void *arg;
};

/* One op in a batch's byte log: the header, the key, the value (none for a delete), padded to 8 bytes. */
struct op {
	uint32_t dbi, klen, vlen;
};

/* The writes of one group commit and the callbacks that wait for it. Owned by the loop, except that the writer
 * thread reads ops[] while the batch is flying. */
struct batch {
	unsigned char *ops;
	size_t len, cap, nops;
	uint64_t seq; /* numbered when its first write is queued; batches commit in this order */
	uint64_t first_ns;
	struct waiter *waiters, *spare; /* spare: the array being run, so callbacks can queue new waiters */
	size_t nwaiters, capwaiters, capspare;
};

struct persist {
	MDB_env *env;
	struct batch b[2];
	struct batch *open;   /* the loop appends here */
	struct batch *flying; /* with the writer thread, or NULL */
	struct event *commit_ev, *age_ev, *done_ev;
	int done_fd; /* eventfd: the writer thread's "flying batch is durable" */
	int lock_fd;
	uint64_t commits, failures;
	size_t max_key; /* mdb_env_get_maxkeysize: a longer key is refused when queued, like an LMDB put would */
	uint64_t last_seq, durable_seq; /* newest batch numbered; newest batch committed (or failed) */
	uint64_t failed_seq;            /* newest batch whose commit failed, 0: none */
	uint64_t lost_upto;             /* batches up to this one count as failed (a failure we could not record) */
	uint64_t *failed;               /* every batch whose commit failed, ascending: rare, so a plain array */
	size_t nfailed, capfailed;
	unsigned test_delay_ms;   /* MMC_TEST_COMMIT_DELAY_MS: widens the window before a commit, for tests */
	bool (*fence)(void *arg); /* persist_set_fence: asked by the writer right before each commit */
	void *fence_arg;

	pthread_t writer;
	bool writer_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool busy, stop;                        /* under mu: the writer holds a batch; it should exit */
	int result;                             /* under mu: LMDB code of the last commit */
	uint64_t commit_ns_sum, commit_ns_last; /* under mu: time the writer spent per commit (store latency) */
};

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static void *batch_append(struct batch *b, size_t n)
{
	unsigned char *ops = array_grow(b->ops, &b->cap, b->len + n, 1, 64 * 1024);

	if (!ops)
		return NULL;
	b->ops = ops;
	b->len += n;
	return b->ops + b->len - n;
}

/* Applies a batch in one write transaction (writer thread, or the loop thread while the writer is idle). One
 * write LMDB refuses (a key it cannot store) is logged and skipped; a failure that breaks the transaction fails
 * the commit, which is what the caller learns. */
static int batch_commit(const struct persist *p, const struct batch *b)
{
	MDB_env *env = p->env;
	MDB_txn *txn;
	int rc;

	if (p->test_delay_ms)
		usleep(p->test_delay_ms * 1000u);
	if (p->fence && !p->fence(p->fence_arg))
		return FENCED;
	rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (rc)
		return rc;
	for (size_t off = 0; off < b->len;) {
		struct op h;
		MDB_val k, v;

		memcpy(&h, b->ops + off, sizeof(h));
		k = (MDB_val){h.klen, b->ops + off + sizeof(h)};
		if (h.vlen == DEL_LEN) {
			rc = mdb_del(txn, h.dbi, &k, NULL);
			rc = rc == MDB_NOTFOUND ? 0 : rc;
			off += pad8(sizeof(h) + h.klen);
		} else {
			v = (MDB_val){h.vlen, b->ops + off + sizeof(h) + h.klen};
			rc = mdb_put(txn, h.dbi, &k, &v, 0);
			off += pad8(sizeof(h) + h.klen + h.vlen);
		}
		if (rc)
			log_error("op=%s dbi=%u klen=%u err=\"%s\"", h.vlen == DEL_LEN ? "lmdb_del" : "lmdb_put", h.dbi,
			          h.klen, mdb_strerror(rc));
		if (rc && rc != MDB_BAD_VALSIZE) { /* the transaction is broken (map full, I/O): report that error */
			mdb_txn_abort(txn);
			return rc;
		}
	}
	/* asked again last: applying a large batch takes time, and the lease may have ended meanwhile */
	if (p->fence && !p->fence(p->fence_arg)) {
		mdb_txn_abort(txn);
		return FENCED;
	}
	return mdb_txn_commit(txn);
}

/* The writer thread owns the disk: the loop never waits for an fsync unless it asks to (persist_flush). */
static void *writer_main(void *arg)
{
	struct persist *p = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->busy && !p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
		if (!p->busy)
			break;
		pthread_mutex_unlock(&p->mu);
		uint64_t t0 = clock_ns();
		int rc = batch_commit(p, p->flying);
		pthread_mutex_lock(&p->mu);
		p->commit_ns_last = clock_ns() - t0;
		p->commit_ns_sum += p->commit_ns_last;
		p->result = rc;
		p->busy = false;
		pthread_cond_broadcast(&p->cv);
		if (write(p->done_fd, &one, sizeof(one)) < 0)
			log_error("op=lmdb_writer err=\"eventfd write: %s\"", strerror(errno));
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void run_waiters(struct batch *b)
{
	struct waiter *run = b->waiters;
	size_t n = b->nwaiters, cap = b->capwaiters;

	if (!n)
		return;
	/* swap arrays first: a waiter may queue new waiters, which belong to a later commit */
	b->waiters = b->spare;
	b->capwaiters = b->capspare;
	b->spare = NULL;
	b->capspare = 0;
	b->nwaiters = 0;
	for (size_t i = 0; i < n; i++)
		run[i].fn(run[i].arg);
	if (b->spare) { /* a waiter ran this batch again and parked its array there */
		free(run);
	} else {
		b->spare = run;
		b->capspare = cap;
	}
}

/* Gives the open batch to the writer, if it has writes and the writer has none: one batch flies at a time, and the
 * writer reads it unlocked, so it must never be replaced (or appended to) before it lands. */
static void hand_off(struct persist *p)
{
	if (p->flying || !p->open->nops)
		return;
	p->flying = p->open;
	p->open = p->open == &p->b[0] ? &p->b[1] : &p->b[0];
	pthread_mutex_lock(&p->mu);
	p->busy = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static bool writer_busy(struct persist *p)
{
	bool busy;

	pthread_mutex_lock(&p->mu);
	busy = p->busy;
	pthread_mutex_unlock(&p->mu);
	return busy;
}

static void remember_failure(struct persist *p, uint64_t seq)
{
	uint64_t *f = array_grow(p->failed, &p->capfailed, p->nfailed + 1, sizeof(*f), 16);

	if (!f) { /* cannot tell this batch from a good one later: treat every batch up to it as lost */
		log_error("op=lmdb_commit err=\"out of memory recording a failed batch\" seq=%llu",
		          (unsigned long long)seq);
		p->lost_upto = seq;
		return;
	}
	p->failed = f;
	p->failed[p->nfailed++] = seq;
}

/* Waits for the flying batch (if any), then releases its waiters. Returns its LMDB code. */
static int land(struct persist *p)
{
	struct batch *b = p->flying;
	int rc;

	if (!b)
		return 0;
	pthread_mutex_lock(&p->mu);
	while (p->busy)
		pthread_cond_wait(&p->cv, &p->mu);
	rc = p->result;
	pthread_mutex_unlock(&p->mu);
	p->flying = NULL;
	p->durable_seq = b->seq;
	if (rc) {
		log_error("op=lmdb_commit err=\"%s\" writes=%zu (metadata of this batch is not durable)",
		          rc == FENCED ? "fenced: this server's leader lease is gone" : mdb_strerror(rc), b->nops);
		p->failed_seq = b->seq;
		p->failures++;
		remember_failure(p, b->seq);
	} else {
		p->commits++;
	}
	b->len = b->nops = 0;
	run_waiters(b);
	return rc;
}

static void done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct persist *p = arg;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_error("op=lmdb_writer err=\"eventfd read: %s\"", strerror(errno));
	/* a wakeup left over from a batch persist_flush already landed: the flying one signals again when done, and
	 * landing it now would make the loop wait for its fsync */
	if (writer_busy(p))
		return;
	land(p);
	/* what piled up while the disk was busy goes now: under load each commit carries the previous one's wait */
	hand_off(p);
}

static void commit_cb(evutil_socket_t fd, short what, void *arg)
{
	struct persist *p = arg;

	if (p->flying)
		return; /* done_cb hands the open batch over */
	if (p->open->nops)
		hand_off(p);
	else
		run_waiters(p->open);
}

/* The loop is idle (commit_ev) or the open batch is MAX_BATCH_AGE_NS old (age_ev, which runs with the I/O: a loop
 * that never idles and gets no more writes must still commit the ones it has). */
static void arm(struct persist *p)
{
	static const struct timeval age = {0, MAX_BATCH_AGE_NS / 1000};

	event_active(p->commit_ev, 0, 0);
	if (!evtimer_pending(p->age_ev, NULL))
		evtimer_add(p->age_ev, &age);
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

static int start_writer(struct persist *p)
{
	sigset_t all, old;
	int rc;

	/* signals stay with the loop thread, whose libevent handlers expect them */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&p->writer, NULL, writer_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	p->writer_started = rc == 0;
	return rc;
}

int persist_open(struct persist **out, struct event_base *base, const struct persist_opts *opts, char *err,
                 size_t errlen)
{
	struct persist *p = calloc(1, sizeof(*p));
	unsigned flags = MDB_NOTLS | (opts->sync ? 0 : MDB_NOSYNC | MDB_NOMETASYNC);
	int rc;

	if (!p)
		return MMC_MALLOC_FAILED;
	p->lock_fd = p->done_fd = -1;
	p->open = &p->b[0];
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (lock_dir(opts->dir, &p->lock_fd, err, errlen))
		goto fail;
	if ((rc = mdb_env_create(&p->env)) || (rc = mdb_env_set_maxdbs(p->env, MAX_DBS)) ||
	    (rc = mdb_env_set_mapsize(p->env, opts->map_size)) || (rc = mdb_env_open(p->env, opts->dir, flags, 0644))) {
		snprintf(err, errlen, "cannot open LMDB in \"%s\": %s", opts->dir, mdb_strerror(rc));
		goto fail;
	}
	p->max_key = (size_t)mdb_env_get_maxkeysize(p->env);
	p->test_delay_ms = opts->test_commit_delay_ms;
	p->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->commit_ev = event_new(base, -1, 0, commit_cb, p);
	p->age_ev = evtimer_new(base, commit_cb, p);
	p->done_ev = p->done_fd < 0 ? NULL : event_new(base, p->done_fd, EV_READ | EV_PERSIST, done_cb, p);
	if (!p->commit_ev || !p->age_ev || !p->done_ev || event_priority_set(p->commit_ev, COMMIT_PRIORITY) ||
	    event_add(p->done_ev, NULL) || start_writer(p)) {
		snprintf(err, errlen, "cannot start the LMDB writer");
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
	if (p->writer_started) {
		persist_flush(p);
		pthread_mutex_lock(&p->mu);
		p->stop = true;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->writer, NULL);
	}
	if (p->commit_ev)
		event_free(p->commit_ev);
	if (p->age_ev)
		event_free(p->age_ev);
	if (p->done_ev)
		event_free(p->done_ev);
	if (p->done_fd >= 0)
		close(p->done_fd);
	if (p->env)
		mdb_env_close(p->env);
	if (p->lock_fd >= 0)
		close(p->lock_fd);
	for (int i = 0; i < 2; i++) {
		free(p->b[i].ops);
		free(p->b[i].waiters);
		free(p->b[i].spare);
	}
	free(p->failed);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

int persist_dbi(struct persist *p, const char *name, MDB_dbi *dbi)
{
	MDB_txn *txn;
	int rc;

	/* a handle opened in a transaction becomes usable by others once that transaction commits, so the batches
	 * that will use it must come after */
	persist_flush(p);
	rc = mdb_txn_begin(p->env, NULL, 0, &txn);
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
	int rc;

	persist_flush(p); /* read what was written */
	rc = mdb_txn_begin(p->env, NULL, MDB_RDONLY, txn);
	if (rc) {
		log_error("op=lmdb_read_begin err=\"%s\"", mdb_strerror(rc));
		return MMC_ERROR;
	}
	return 0;
}

static int queue_op(struct persist *p, MDB_dbi dbi, const void *key, size_t klen, const void *val, size_t vlen,
                    bool del)
{
	struct batch *b = p->open;
	size_t n = pad8(sizeof(struct op) + klen + (del ? 0 : vlen));
	unsigned char *dst;

	/* refused now, while the caller can still tell its client, rather than skipped by the writer later */
	if (klen == 0 || klen > p->max_key) {
		log_error("op=lmdb_queue err=\"key length %zu outside 1..%zu\"", klen, p->max_key);
		return MMC_ERROR;
	}
	if (vlen > UINT32_MAX / 2 || !(dst = batch_append(b, n))) {
		log_error("op=lmdb_queue err=\"out of memory\" bytes=%zu", n);
		return MMC_ERROR;
	}
	memcpy(dst, &(struct op){dbi, (uint32_t)klen, del ? DEL_LEN : (uint32_t)vlen}, sizeof(struct op));
	memcpy(dst + sizeof(struct op), key, klen);
	if (!del && vlen)
		memcpy(dst + sizeof(struct op) + klen, val, vlen);
	if (b->nops++ == 0) {
		b->seq = ++p->last_seq;
		b->first_ns = clock_ns();
		arm(p);
	} else if (!p->flying && clock_ns() - b->first_ns > MAX_BATCH_AGE_NS) {
		hand_off(p); /* a loop that never idles still commits */
	}
	return 0;
}

int persist_put(struct persist *p, MDB_dbi dbi, const void *key, size_t klen, const void *val, size_t vlen)
{
	return queue_op(p, dbi, key, klen, val, vlen, false);
}

int persist_del(struct persist *p, MDB_dbi dbi, const void *key, size_t klen)
{
	return queue_op(p, dbi, key, klen, NULL, 0, true);
}

bool persist_dirty(const struct persist *p)
{
	return p->open->nops || p->flying;
}

uint64_t persist_wait_seq(const struct persist *p)
{
	return p->open->nops ? p->open->seq : p->flying ? p->flying->seq : 0;
}

uint64_t persist_durable_seq(const struct persist *p)
{
	return p->durable_seq;
}

uint64_t persist_failed_seq(const struct persist *p)
{
	return p->failed_seq;
}

static bool batch_failed(const struct persist *p, uint64_t seq)
{
	size_t lo = 0, hi = p->nfailed;

	if (seq <= p->lost_upto)
		return true;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->failed[mid] == seq)
			return true;
		if (p->failed[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

enum persist_seq_state persist_seq_state(const struct persist *p, uint64_t seq)
{
	if (seq == 0)
		return PERSIST_SEQ_DURABLE;
	if (seq > p->durable_seq)
		return PERSIST_SEQ_PENDING;
	return batch_failed(p, seq) ? PERSIST_SEQ_LOST : PERSIST_SEQ_DURABLE;
}

int persist_after_commit(struct persist *p, void (*fn)(void *arg), void *arg)
{
	/* with nothing queued, the newest writes are the flying ones: wait for those only */
	struct batch *b = !p->open->nops && p->flying ? p->flying : p->open;

	struct waiter *w = array_grow(b->waiters, &b->capwaiters, b->nwaiters + 1, sizeof(*w), 64);

	if (!w)
		return MMC_MALLOC_FAILED;
	b->waiters = w;
	b->waiters[b->nwaiters++] = (struct waiter){fn, arg};
	if (b == p->open)
		arm(p);
	return 0;
}

int persist_flush(struct persist *p)
{
	int rc = 0;

	/* waiters may write again (and hand a batch over themselves); those writes belong to this flush too */
	while (p->flying || p->open->nops || p->open->nwaiters) {
		if (p->flying)
			rc = land(p) ? MMC_ERROR : rc;
		else if (p->open->nops)
			hand_off(p);
		else
			run_waiters(p->open);
	}
	return rc;
}

void persist_set_fence(struct persist *p, bool (*fn)(void *arg), void *arg)
{
	persist_flush(p); /* the writer reads the fence unlocked: set it while it holds no batch */
	p->fence = fn;
	p->fence_arg = arg;
}

int persist_set_redis_fence_key(struct persist *p, const char *key, const char *expected)
{
	(void)p, (void)key, (void)expected;
	return MMC_INVALID_PARAM; /* LMDB: the data dir's lock keeps a second leader out, the lease fence does the rest
	                           */
}

uint64_t persist_commits(const struct persist *p)
{
	return p->commits;
}

void persist_commit_time(struct persist *p, uint64_t *sum_ns, uint64_t *last_ns)
{
	pthread_mutex_lock(&p->mu);
	*sum_ns = p->commit_ns_sum;
	*last_ns = p->commit_ns_last;
	pthread_mutex_unlock(&p->mu);
}

uint64_t persist_failures(const struct persist *p)
{
	return p->failures;
}

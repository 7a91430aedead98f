#include "persist.h"

/*
 * The group-commit front of every store: batches, their numbers, the waiters, the writer thread. What a commit does
 * in the store is the backend's (persist_lmdb.c, persist_redis.c).
 */
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "hash.h"
#include "hmap.h"
#include "log.h"
#include "mmc/mmc.h"
#include "persist_backend.h"
#include "quiet_thread.h"

#define MAX_BATCH_AGE_NS 2000000u /* hand a batch over at least this often under continuous load */
#define COMMIT_PRIORITY  2        /* lower than I/O (1): runs when the loop has nothing else ready */
#define QUICK_OPS_MAX    256u     /* a quick backend's batch up to this size commits on the loop */
#define QUICK_BYTES_MAX  (256u << 10)
#define DEL_LEN          UINT32_MAX
/*
 * How far a failed batch's writes (persist_table_retry) go again: a store that refuses them for good (a full LMDB
 * map, Redis at maxmemory) would otherwise fail every later batch with them, deletes that free room included, and a
 * store down for long under many writes would pile every version of a record up in memory. Past either bound they
 * are dropped (logged), as without retries; deletes of a table that retries them still go.
 */
#define RETRY_ATTEMPTS  3
#define RETRY_BYTES_MAX (256u << 20)
#define PARKED_ATTEMPTS (2 * RETRY_ATTEMPTS) /* a parked write refused this often in all is dropped (logged) */

struct waiter {
	void (*fn)(void *arg);
	void *arg;
};

/* One op in a batch's byte log: the header, the key, the value (none for a delete), padded to 8 bytes. */
struct op {
	uint32_t table, klen, vlen; /* table | OP_KEPT for persist_put_kept | the failed commits it went through */
};
#define OP_KEPT        0x80000000u
#define OP_TABLE       0x00ffffffu
#define OP_TRIES_SHIFT 24 /* 7 bits: failed commits an op went through (retry_failed) */
#define OP_TRIES_MAX   0x7fu

/* The writes of one group commit and the callbacks that wait for it. Owned by the loop, except that the writer
 * thread reads ops[] while the batch is flying. */
struct batch {
	unsigned char *ops;
	size_t len, cap, nops;
	size_t nretried; /* of nops, what failed batches left (persist_table_retry_deletes, persist_table_retry) */
	uint64_t seq;    /* numbered when its first write is queued; batches commit in this order */
	uint64_t first_ns;
	struct waiter *waiters, *spare; /* spare: the array being run, so callbacks can queue new waiters */
	size_t nwaiters, capwaiters, capspare;
};

struct persist {
	struct persist_backend *be;
	struct persist_table tables[PERSIST_MAX_TABLES];
	uint32_t ntables;
	struct batch b[2];
	struct batch *open; /* the loop appends here */
	/* kept ops (a record moved) refused RETRY_ATTEMPTS times: they go again once the store takes a commit, less
	 * what a later write of their key made stale (park, unpark, parked_drop_key) */
	struct batch parked;
	struct hmap parked_keys; /* a struct parked_key per parked op: which keys a queued write must look for */
	bool parked_unindexed;   /* out of memory indexing them: every write looks */
	struct batch *flying;    /* with the writer thread, or NULL */
	struct event *commit_ev, *age_ev, *done_ev;
	int done_fd; /* eventfd: the writer thread's "flying batch is durable" */
	uint64_t commits, failures;
	uint64_t last_commit_ns;        /* atomic: the store's time for the newest batch, by whichever thread ran it */
	uint64_t last_seq, durable_seq; /* newest batch numbered; newest batch committed (or failed) */
	uint64_t failed_seq;            /* newest batch whose commit failed, 0: none */
	uint64_t lost_upto;             /* batches up to this one count as failed (a failure we could not record) */
	/* every batch whose commit failed, as ascending runs [lo, hi] of consecutive numbers: a store down for hours
	 * fails every batch, one run; failures between commits are rare */
	struct seq_run {
		uint64_t lo, hi;
	} * failed;
	size_t nfailed, capfailed;
	unsigned test_delay_ms; /* MMC_TEST_COMMIT_DELAY_MS: widens the window before a commit, for tests */
	unsigned grouped;       /* persist_group_begin depth: no hand-off between two writes */

	pthread_t writer;
	bool writer_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool busy, stop;          /* under mu: the writer holds a batch; it should exit */
	int result;               /* under mu: MMC_* code of the last commit */
	bool (*fence)(void *arg); /* under mu: a commit it refuses fails */
	void *fence_arg;
	struct persist_fail_log fenced_log;
};

bool persist_fail_log_due(struct persist_fail_log *l, unsigned long long *skipped)
{
	uint64_t now = clock_ns();

	if (l->logged_ns && now - l->logged_ns < UINT64_C(1000000000)) {
		l->skipped++;
		return false;
	}
	*skipped = l->skipped;
	l->logged_ns = now;
	l->skipped = 0;
	return true;
}

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

bool persist_op_next(const struct persist_ops *ops, size_t *off, struct persist_op *op)
{
	struct op h;

	if (*off >= ops->len)
		return false;
	memcpy(&h, ops->buf + *off, sizeof(h));
	op->table = h.table & OP_TABLE;
	op->kept = (h.table & OP_KEPT) != 0;
	op->tries = (h.table >> OP_TRIES_SHIFT) & OP_TRIES_MAX;
	op->del = h.vlen == DEL_LEN;
	op->key = ops->buf + *off + sizeof(h);
	op->klen = h.klen;
	op->val = op->del ? NULL : ops->buf + *off + sizeof(h) + h.klen;
	op->vlen = op->del ? 0 : h.vlen;
	*off += pad8(sizeof(h) + h.klen + op->vlen);
	return true;
}

/* Applies a batch (on the writer thread, or on the loop for commit_here), and times it for /metrics. The fence is
 * asked last, so that a leader paused between the two cannot commit on a lease it lost meanwhile. */
static int batch_commit(struct persist *p, const struct batch *b)
{
	struct persist_ops ops = {b->ops, b->len, b->nops, NULL, NULL};
	uint64_t t0;
	int rc;

	if (p->test_delay_ms)
		usleep(p->test_delay_ms * 1000u);
	pthread_mutex_lock(&p->mu);
	ops.fence = p->fence;
	ops.fence_arg = p->fence_arg;
	pthread_mutex_unlock(&p->mu);
	if (ops.fence && !ops.fence(ops.fence_arg)) {
		unsigned long long skipped;

		if (persist_fail_log_due(&p->fenced_log, &skipped))
			log_error("op=persist_commit err=\"fenced: this server no longer leads\" writes=%zu "
			          "failed_since_last_line=%llu",
			          b->nops, skipped);
		return MMC_META_BACKUP_ERROR;
	}
	t0 = clock_ns();
	rc = p->be->ops->commit(p->be, &ops);
	__atomic_store_n(&p->last_commit_ns, clock_ns() - t0, __ATOMIC_RELAXED);
	return rc;
}

/* The writer thread owns the store: the loop never waits for a commit unless it asks to (persist_flush). */
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
		int rc = batch_commit(p, p->flying);
		pthread_mutex_lock(&p->mu);
		p->result = rc;
		p->busy = false;
		pthread_cond_broadcast(&p->cv);
		if (write(p->done_fd, &one, sizeof(one)) < 0)
			log_error("op=persist_writer err=\"eventfd write: %s\"", strerror(errno));
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

/*
 * Whether b is worth a commit: it has writes of its own, or someone waits for it. Deletes a failed batch left
 * (retry_deletes) go with the next write and are never committed on their own: while the store refuses every
 * commit (Redis down, map full, fenced) they would fail, come back and be sent again without end.
 */
static bool committable(const struct batch *b)
{
	return b->nops > b->nretried || (b->nops && b->nwaiters);
}

/* Closes the open batch (the other one, empty, opens) and returns it. */
static struct batch *close_open(struct persist *p)
{
	struct batch *b = p->open;

	p->open = b == &p->b[0] ? &p->b[1] : &p->b[0];
	return b;
}

/* Gives the open batch to the writer, which has none: one batch flies at a time, and the writer reads it unlocked, so
 * it must never be replaced (or appended to) before it lands. */
static void fly(struct persist *p)
{
	p->flying = close_open(p);
	pthread_mutex_lock(&p->mu);
	p->busy = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* fly, if the open batch has writes and the writer has none. */
static void hand_off(struct persist *p)
{
	if (!p->flying && committable(p->open))
		fly(p);
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
	struct seq_run *f;

	if (p->nfailed && p->failed[p->nfailed - 1].hi + 1 == seq) {
		p->failed[p->nfailed - 1].hi = seq;
		return;
	}
	f = array_grow(p->failed, &p->capfailed, p->nfailed + 1, sizeof(*f), 16);
	if (!f) { /* cannot tell this batch from a good one later: treat every batch up to it as lost */
		log_error("op=persist_commit err=\"out of memory recording a failed batch\" seq=%llu",
		          (unsigned long long)seq);
		p->lost_upto = seq;
		return;
	}
	p->failed = f;
	p->failed[p->nfailed++] = (struct seq_run){seq, seq};
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

/* Appends one write to b's log. Returns 0 or MMC_ERROR (out of memory, logged). */
static int append_op(struct batch *b, uint32_t table, const void *key, size_t klen, const void *val, size_t vlen,
                     bool del)
{
	size_t n = pad8(sizeof(struct op) + klen + (del ? 0 : vlen));
	unsigned char *dst;

	if (vlen > UINT32_MAX / 2 || !(dst = batch_append(b, n))) {
		log_error("op=persist_queue err=\"out of memory\" bytes=%zu", n);
		return MMC_ERROR;
	}
	memcpy(dst, &(struct op){table, (uint32_t)klen, del ? DEL_LEN : (uint32_t)vlen}, sizeof(struct op));
	memcpy(dst + sizeof(struct op), key, klen);
	if (!del && vlen)
		memcpy(dst + sizeof(struct op) + klen, val, vlen);
	b->nops++;
	return 0;
}

/* The open batch got its first write: it is numbered, and (commit) its commit armed. */
static void opened(struct persist *p, struct batch *b, bool commit)
{
	b->seq = ++p->last_seq;
	b->first_ns = clock_ns();
	if (commit)
		arm(p);
}

/* Whether a failed batch's op goes to the store again (persist_table_retry_deletes, persist_table_retry). */
static bool retried(const struct persist *p, const struct persist_op *op)
{
	const struct persist_table *t = &p->tables[op->table];

	return t->retry_writes || (op->del && t->retry_deletes);
}

/* The kept ops' keys of a failed batch (persist_put_kept, persist_del_kept): a plain put of one of them goes again
 * with them, or the store would get the older record after the newer. */
struct kept_keys {
	struct persist_op *v;
	size_t n, cap;
};

static void kept_keys_of(const struct batch *b, struct kept_keys *k)
{
	struct persist_ops ops = {b->ops, b->len, b->nops, NULL, NULL};
	struct persist_op op;
	size_t off = 0;

	while (persist_op_next(&ops, &off, &op)) {
		struct persist_op *grown;

		if (!op.kept)
			continue;
		if (!(grown = array_grow(k->v, &k->cap, k->n + 1, sizeof(*grown), 8)))
			return; /* out of memory: its plain puts are not kept, as before kept ops */
		k->v = grown;
		k->v[k->n++] = op;
	}
}

/* Whether op is kept, or a later write of a key a kept op wrote: it goes where they go (again, or parked), or it
 * could land before them and be undone (a remove of the moved record, then its parked write). */
static bool kept(const struct kept_keys *k, const struct persist_op *op)
{
	if (op->kept)
		return true;
	for (size_t i = 0; i < k->n; i++)
		if (k->v[i].table == op->table && k->v[i].klen == op->klen &&
		    memcmp(k->v[i].key, op->key, op->klen) == 0)
			return true;
	return false;
}

/* The bytes of b's puts that go again: in tables that retry every write, and kept ones. */
static size_t retried_put_bytes(const struct persist *p, const struct batch *b, const struct kept_keys *k)
{
	struct persist_ops ops = {b->ops, b->len, b->nops, NULL, NULL};
	struct persist_op op;
	size_t off = 0, bytes = 0;

	while (persist_op_next(&ops, &off, &op))
		if (!op.del && (p->tables[op.table].retry_writes || kept(k, &op)))
			bytes += op.klen + op.vlen;
	return bytes;
}

/* Kept ops given up on (pk, whole pairs) join the parked ones, within the bound of retried puts; past it they are
 * dropped, and the store keeps the old records. */
struct parked_key {
	struct hmap_node node;
	uint64_t h;
};

static uint64_t op_hash(uint32_t table, const void *key, size_t klen)
{
	return hash_bytes(key, klen) ^ (uint64_t)(table + 1) * 0x9e3779b97f4a7c15u;
}

static uint64_t parked_key_hash(const struct hmap_node *n)
{
	return hmap_entry(n, struct parked_key, node)->h;
}

static void parked_index(struct persist *p, const struct batch *pk)
{
	struct persist_ops ops = {pk->ops, pk->len, pk->nops, NULL, NULL};
	struct persist_op op;
	size_t off = 0;

	while (persist_op_next(&ops, &off, &op)) {
		struct parked_key *k = malloc(sizeof(*k));

		if (k)
			k->h = op_hash(op.table, op.key, op.klen);
		if (!k || hmap_insert(&p->parked_keys, &k->node, k->h)) {
			free(k);
			p->parked_unindexed = true;
		}
	}
}

static void parked_unindex(struct persist *p)
{
	hmap_foreach(&p->parked_keys, n)
	{
		hmap_remove(&p->parked_keys, n, parked_key_hash(n));
		free(hmap_entry(n, struct parked_key, node));
	}
	p->parked_unindexed = false;
}

/* Drops one index entry of hash h (a parked op of that key went). */
static void parked_unindex_one(struct persist *p, uint64_t h)
{
	hmap_foreach_hash(&p->parked_keys, h, n)
	{
		if (parked_key_hash(n) == h) {
			hmap_remove(&p->parked_keys, n, h);
			free(hmap_entry(n, struct parked_key, node));
			return;
		}
	}
}

static bool parked_may_hold(const struct persist *p, uint64_t h)
{
	if (p->parked_unindexed)
		return true;
	hmap_foreach_hash(&p->parked_keys, h, n)
	{
		if (parked_key_hash(n) == h)
			return true;
	}
	return false;
}

static void park(struct persist *p, struct batch *pk)
{
	unsigned char *tail;

	if (!pk->nops)
		return;
	if (p->parked.len + pk->len > RETRY_BYTES_MAX || !(tail = batch_append(&p->parked, pk->len))) {
		log_error(
		    "op=persist_retry err=\"too much to retry\" writes=%zu: the store keeps what it had; a restart "
		    "loads it",
		    pk->nops);
		return;
	}
	memcpy(tail, pk->ops, pk->len);
	p->parked.nops += pk->nops;
	parked_index(p, pk);
	log_error(
	    "op=persist_retry writes=%zu parked=%zu: refused again and again, they go again once the store takes a "
	    "commit",
	    pk->nops, p->parked.nops);
}

/* The parked kept ops go into the open batch, ahead of what was queued there (they are older), once the store took a
 * commit: with the next write, or alone at a close. */
static void unpark(struct persist *p)
{
	struct batch *o = p->open, *k = &p->parked;
	unsigned char *tail = NULL;
	size_t n = k->nops;

	if (!n || (o->len && !(tail = batch_append(k, o->len))))
		return; /* out of memory: they stay parked */
	if (o->len)
		memcpy(tail, o->ops, o->len);
	free(o->ops);
	o->ops = k->ops;
	o->len = k->len;
	o->cap = k->cap;
	*k = (struct batch){0};
	parked_unindex(p);
	o->nretried += n;
	if ((o->nops += n) == n)
		opened(p, o, false);
}

#define DROPPED      1 /* parked_drop_key: an op went */
#define DROPPED_KEPT 2 /* ... a kept one: the newer write takes its place in its pair (kept too) */

/* A write of key (table t) was queued: a parked op of the key is stale, and going after it would undo it (a removed
 * key's record back, an older record over a newer). A parked pair may lose its write here and keep its delete: the
 * newer write takes the write's place, and is kept as the write was (retried with the delete). DROPPED flags. */
static int parked_drop_key(struct persist *p, uint32_t t, const void *key, size_t klen)
{
	uint64_t h = op_hash(t, key, klen);
	struct persist_ops ops = {p->parked.ops, p->parked.len, p->parked.nops, NULL, NULL};
	struct persist_op op;
	size_t off = 0, w = 0, n = 0;
	int dropped = 0;

	if (!p->parked.nops || !parked_may_hold(p, h))
		return 0;
	/* in place: nothing to allocate, so a stale op can never stay for want of memory */
	for (size_t at = 0; persist_op_next(&ops, &off, &op); at = off) {
		if (op.table == t && op.klen == klen && memcmp(op.key, key, klen) == 0) {
			parked_unindex_one(p, h);
			dropped |= DROPPED | (op.kept ? DROPPED_KEPT : 0);
			continue;
		}
		memmove(p->parked.ops + w, p->parked.ops + at, off - at);
		w += off - at;
		n++;
	}
	if (!dropped)
		return 0;
	p->parked.len = w;
	p->parked.nops = n;
	p->parked_unindexed &= n != 0;
	return dropped;
}

/* parked_drop_key for every op of b, a batch newer than what is parked; an op that took a kept op's place is marked
 * kept. True when an op went. */
static bool parked_drop_batch(struct persist *p, struct batch *b)
{
	struct persist_ops ops = {b->ops, b->len, b->nops, NULL, NULL};
	struct persist_op op;
	bool dropped = false;

	for (size_t at = 0, off = 0; p->parked.nops && persist_op_next(&ops, &off, &op); at = off) {
		int d = parked_drop_key(p, op.table, op.key, op.klen);

		if (d & DROPPED_KEPT)
			((struct op *)(void *)(b->ops + at))->table |= OP_KEPT;
		dropped |= d != 0;
	}
	return dropped;
}

/*
 * What a failed batch b wrote to tables that retry goes into the open batch, ahead of what was queued there since: the
 * store then gets both in the order memory made them, as if b had committed, and a key written again since ends as
 * its newer write. Retried ops commit with the next write or the next waiter, never alone (committable).
 */
static void retry_failed(struct persist *p, const struct batch *b)
{
	struct persist_ops ops = {b->ops, b->len, b->nops, NULL, NULL};
	struct batch *o = p->open, t = {0}, pk = {0};
	struct persist_op op;
	struct kept_keys k = {0};
	size_t off = 0, nops, puts, dropped = 0;
	unsigned kept_tries = 0;
	bool fits, kept_again, unpark_after = false;
	unsigned char *tail = NULL;

	kept_keys_of(b, &k);
	for (size_t i = 0; i < k.n; i++)
		kept_tries = k.v[i].tries > kept_tries ? k.v[i].tries : kept_tries;
	puts = retried_put_bytes(p, b, &k);
	fits = puts <= RETRY_BYTES_MAX;
	/* a kept op goes again within the bounds of retried puts, its pair (a record moved: the old key's delete and
	 * the new key's write) together or not at all: past them it is parked, and the store keeps the old record,
	 * whose space is never reused (its release waited for a batch that failed), until the pair goes again */
	kept_again = kept_tries + 1 < RETRY_ATTEMPTS && fits;
	while (persist_op_next(&ops, &off, &op)) {
		bool keep = kept(&k, &op);
		unsigned tries = op.tries < OP_TRIES_MAX ? op.tries + 1 : OP_TRIES_MAX;
		/* each write its own count (one that failed once is not given up beside an older one), deletes too:
		 * past three tries a write is parked instead of being copied into every batch while the store is down
		 */
		bool again = keep ? kept_again : tries < RETRY_ATTEMPTS && (op.del || fits);
		/* a plain put parked and refused again each time it went: the store refuses it for good (a full map),
		 * and every batch it rides with, and every reply deferred to it, would fail with it. Never a delete or
		 * a moved record's pair: the store would keep a record of an object removed (it would come back) */
		bool given_up = !keep && !op.del && tries >= PARKED_ATTEMPTS;

		dropped += (keep || retried(p, &op)) && given_up;
		if ((keep || retried(p, &op)) && !given_up &&
		    append_op(again ? &t : &pk, op.table | (keep ? OP_KEPT : 0) | tries << OP_TRIES_SHIFT, op.key,
		              op.klen, op.val, op.vlen, op.del))
			goto out; /* out of memory (logged): the store keeps what it had, as without retries */
	}
	if (dropped)
		log_error(
		    "op=persist_retry err=\"refused again and again\" writes=%zu: dropped, the store keeps what it "
		    "had; a restart loads it",
		    dropped);
	park(p, &pk);
	if (t.nops) {
		if (o->len && !(tail = batch_append(&t, o->len)))
			goto out;
		if (o->len)
			memcpy(tail, o->ops, o->len);
		nops = t.nops;
		free(o->ops);
		o->ops = t.ops;
		o->len = t.len;
		o->cap = t.cap;
		t.ops = NULL;
		o->nretried += nops;
		if ((o->nops += nops) == nops)
			opened(p, o, false); /* numbered; it commits with the next write */
	}
	/* what goes again now (ahead in o) and what was queued while b flew are newer than what is parked */
	unpark_after = parked_drop_batch(p, o);
out:
	if (unpark_after) /* what a pair kept of itself rides with the write that broke it up */
		unpark(p);
	free(t.ops);
	free(pk.ops);
	free(k.v);
}

/*
 * b committed while writes were parked, which now go with the open batch: b's waiters wait for that one too. A call
 * that found its change made (a retried one, whose first try failed) waits for whatever is pending (persist_dirty):
 * it must not be acknowledged before the parked write that made it is durable. Out of memory: they run now.
 */
static void defer_waiters(struct persist *p, struct batch *b)
{
	struct batch *o = p->open;
	struct waiter *w;

	if (!b->nwaiters || !(w = array_grow(o->waiters, &o->capwaiters, o->nwaiters + b->nwaiters, sizeof(*w), 64)))
		return;
	o->waiters = w;
	memcpy(o->waiters + o->nwaiters, b->waiters, b->nwaiters * sizeof(*w));
	o->nwaiters += b->nwaiters;
	b->nwaiters = 0;
	arm(p);
}

/* Batch b, no longer open nor flying, has committed (rc 0) or failed: number it, empty it, release its waiters. */
static void landed(struct persist *p, struct batch *b, int rc)
{
	p->durable_seq = b->seq;
	if (rc) {
		p->failed_seq = b->seq;
		p->failures++;
		remember_failure(p, b->seq);
		retry_failed(p, b);
	} else {
		p->commits++;
		if (p->parked.nops) {
			unpark(p);
			defer_waiters(p, b);
		}
	}
	b->len = b->nops = b->nretried = 0;
	run_waiters(b);
}

/* Waits for the flying batch (if any), then releases its waiters. Returns its MMC_* code (the backend logged why). */
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
	landed(p, b, rc);
	return rc;
}

/*
 * A small batch of a quick backend (LMDB without fsync) commits here, on the loop: handing it to the writer and
 * back costs two thread wake-ups, which on a small or busy machine take longer than the commit (measured: 30 µs
 * in the store, 130 µs from queue to reply through the writer). Large batches, and everything with fsync or a
 * network in the way, still go to the writer so that the loop keeps serving meanwhile.
 */
static bool commit_here(struct persist *p)
{
	const struct batch *o = p->open;
	struct batch *b;

	/* the test delay sleeps in batch_commit: never on the loop */
	if (!p->be->quick || p->test_delay_ms || p->flying || !committable(o) || o->nops > QUICK_OPS_MAX ||
	    o->len > QUICK_BYTES_MAX)
		return false;
	b = close_open(p);
	landed(p, b, batch_commit(p, b));
	return true;
}

/* The open batch goes now: on the loop if it is small and the store quick, else to the writer (if it is free). */
static void commit_open(struct persist *p)
{
	if (!commit_here(p))
		hand_off(p);
}

static void done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct persist *p = arg;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_error("op=persist_writer err=\"eventfd read: %s\"", strerror(errno));
	/* a wakeup left over from a batch persist_flush already landed: the flying one signals again when done, and
	 * landing it now would make the loop wait for its fsync */
	if (writer_busy(p))
		return;
	land(p);
	/* what piled up while the disk was busy goes now: under load each commit carries the previous one's wait */
	commit_open(p);
}

static void commit_cb(evutil_socket_t fd, short what, void *arg)
{
	struct persist *p = arg;

	if (p->flying)
		return; /* done_cb hands the open batch over */
	if (committable(p->open))
		commit_open(p);
	else
		run_waiters(p->open);
}

static int start_writer(struct persist *p)
{
	int rc = quiet_thread_create(&p->writer, writer_main, p);

	p->writer_started = rc == 0;
	return rc;
}

static int open_backend(struct persist_backend **be, const struct persist_opts *opts, char *err, size_t errlen)
{
	const char *uri = opts->uri;

	if (!uri || !uri[0] || strcmp(uri, "lmdb") == 0)
		return persist_lmdb_open(be, opts, err, errlen);
	if (strncmp(uri, "redis://", 8) == 0)
		return persist_redis_open(be, opts, err, errlen);
	snprintf(err, errlen, "metadata store URI must be \"lmdb\" or \"redis://[user:password@]host:port[/db]\"");
	return MMC_INVALID_PARAM;
}

static int start_loop_side(struct persist *p, struct event_base *base)
{
	p->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->commit_ev = event_new(base, -1, 0, commit_cb, p);
	p->age_ev = evtimer_new(base, commit_cb, p);
	p->done_ev = p->done_fd < 0 ? NULL : event_new(base, p->done_fd, EV_READ | EV_PERSIST, done_cb, p);
	if (!p->commit_ev || !p->age_ev || !p->done_ev || event_priority_set(p->commit_ev, COMMIT_PRIORITY) ||
	    event_add(p->done_ev, NULL) || start_writer(p))
		return MMC_ERROR;
	return 0;
}

int persist_open(struct persist **out, struct event_base *base, const struct persist_opts *opts, char *err,
                 size_t errlen)
{
	struct persist *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return MMC_MALLOC_FAILED;
	p->done_fd = -1;
	p->open = &p->b[0];
	hmap_init(&p->parked_keys, parked_key_hash, 16);
	p->test_delay_ms = opts->test_commit_delay_ms;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if ((rc = open_backend(&p->be, opts, err, errlen)))
		goto fail;
	rc = MMC_ERROR;
	if (start_loop_side(p, base)) {
		snprintf(err, errlen, "cannot start the metadata writer thread");
		goto fail;
	}
	if (persist_format_check(p, err, errlen))
		goto fail;
	*out = p;
	return 0;
fail:
	persist_close(p);
	return rc;
}

/*
 * Deletes of a failed batch wait for the next write to go again (committable); at a close none comes, and a restart
 * would load the records they delete (a removed key back). So they go once more, alone; if the store still refuses
 * them, that is said.
 */
static void flush_retries(struct persist *p)
{
	size_t n;

	if (p->flying)
		return;
	unpark(p);
	if (!(n = p->open->nops))
		return;
	fly(p);
	if (land(p))
		log_error("op=persist_close err=\"the store refused the retried writes again\" writes=%zu (a restart "
		          "may load records removed before the store failed)",
		          n);
}

void persist_close(struct persist *p)
{
	if (!p)
		return;
	if (p->writer_started) {
		persist_flush(p);
		flush_retries(p);
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
	if (p->be)
		p->be->ops->close(p->be);
	for (int i = 0; i < 2; i++) {
		free(p->b[i].ops);
		free(p->b[i].waiters);
		free(p->b[i].spare);
	}
	free(p->parked.ops);
	parked_unindex(p);
	hmap_free(&p->parked_keys);
	free(p->failed);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

int persist_format_version(const struct persist *p)
{
	return p->be->format;
}

const char *persist_backend_name(const struct persist *p)
{
	return p->be->ops->name;
}

int persist_reload(struct persist *p, char *err, size_t errlen)
{
	persist_flush(p); /* the writer is idle from here: the connection is the loop's to replace */
	if (p->be->ops->reopen(p->be, err, errlen))
		return MMC_ERROR;
	return persist_format_check(p, err, errlen) ? MMC_ERROR : 0;
}

static bool table_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= PERSIST_TABLE_NAME)
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

int persist_table(struct persist *p, const char *name, struct persist_table **out)
{
	struct persist_table *t;

	for (uint32_t i = 0; i < p->ntables; i++)
		if (strcmp(p->tables[i].name, name) == 0)
			return *out = &p->tables[i], 0;
	if (!table_name_ok(name) || p->ntables == PERSIST_MAX_TABLES) {
		log_error("op=persist_table table=\"%s\" err=\"bad name or too many tables\"", name);
		return MMC_ERROR;
	}
	/* the batches that use a new table come after its creation */
	persist_flush(p);
	t = &p->tables[p->ntables];
	t->id = p->ntables;
	snprintf(t->name, sizeof(t->name), "%s", name);
	if (p->be->ops->table(p->be, t->id, name))
		return MMC_ERROR;
	p->ntables++;
	*out = t;
	return 0;
}

void persist_table_retry_deletes(struct persist_table *t)
{
	t->retry_deletes = true;
}

void persist_table_retry(struct persist_table *t)
{
	t->retry_writes = true;
}

int persist_table_packed(struct persist *p, struct persist_table *t)
{
	int rc = p->be->ops->pack ? p->be->ops->pack(p->be, t->id, t->name) : 0;

	t->packed = rc == 0 && p->be->ops->pack;
	return rc;
}

int persist_get(struct persist *p, struct persist_table *t, const void *key, size_t klen, void *buf, size_t cap,
                size_t *len)
{
	persist_flush(p); /* read what was written */
	return p->be->ops->get(p->be, t->id, key, klen, buf, cap, len);
}

int persist_scan(struct persist *p, struct persist_table *t, persist_scan_fn fn, void *arg)
{
	persist_flush(p);
	return p->be->ops->scan(p->be, t->id, fn, arg);
}

int persist_scan_ahead(struct persist *p, struct persist_table *t, persist_prep_fn prep, persist_ahead_fn fn, void *arg)
{
	persist_flush(p);
	return persist_scan_ahead_be(p->be, t->id, prep, fn, arg);
}

bool persist_scan_ordered(const struct persist *p, const struct persist_table *t)
{
	return !p->be->ops->scan_any || t->packed;
}

int persist_count(struct persist *p, struct persist_table *t, uint64_t *n)
{
	persist_flush(p);
	return p->be->ops->count(p->be, t->id, n);
}

void persist_set_fence(struct persist *p, bool (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&p->mu);
	p->fence = fn;
	p->fence_arg = arg;
	pthread_mutex_unlock(&p->mu);
}

int persist_set_redis_fence_key(struct persist *p, const char *key, const char *expected)
{
	if (!p->be->ops->fence_key || (key && (!key[0] || !expected)))
		return MMC_INVALID_PARAM;
	return p->be->ops->fence_key(p->be, key, expected);
}

static int queue_op(struct persist *p, struct persist_table *t, const void *key, size_t klen, const void *val,
                    size_t vlen, bool del, bool kept)
{
	int dropped;
	struct batch *b = p->open;

	/* refused now, while the caller can still tell its client, rather than skipped by the writer later */
	if (klen == 0 || klen > PERSIST_KEY_MAX) {
		log_error("op=persist_queue err=\"key length %zu outside 1..%d\"", klen, PERSIST_KEY_MAX);
		return MMC_ERROR;
	}
	/* a parked op of the key is older: it goes, and what its pair kept of itself rides ahead of this write (a
	 * remove acknowledged must not leave the moved record's old key on disk) */
	dropped = p->parked.nops ? parked_drop_key(p, t->id, key, klen) : 0;
	if (dropped)
		unpark(p);
	kept |= (dropped & DROPPED_KEPT) != 0;
	if (append_op(b, t->id | (kept ? OP_KEPT : 0), key, klen, val, vlen, del))
		return MMC_ERROR;
	if (b->nops == 1) {
		opened(p, b, true);
	} else if (b->nops == b->nretried + 1) {
		arm(p); /* the first write of a batch that carries retried deletes */
	} else if (!p->grouped && !p->flying && (b->nops < 64 || b->nops % 64 == 0) &&
	           clock_ns() - b->first_ns > MAX_BATCH_AGE_NS) {
		/* a loop that never idles still commits; past 64 ops the clock is read every 64th (once an op, it was
		 * 8% of a batch of puts' time) */
		hand_off(p);
	}
	return 0;
}

int persist_put(struct persist *p, struct persist_table *t, const void *key, size_t klen, const void *val, size_t vlen)
{
	return queue_op(p, t, key, klen, val, vlen, false, false);
}

int persist_put_kept(struct persist *p, struct persist_table *t, const void *key, size_t klen, const void *val,
                     size_t vlen)
{
	return queue_op(p, t, key, klen, val, vlen, false, true);
}

int persist_del_kept(struct persist *p, struct persist_table *t, const void *key, size_t klen)
{
	return queue_op(p, t, key, klen, NULL, 0, true, true);
}

int persist_del(struct persist *p, struct persist_table *t, const void *key, size_t klen)
{
	return queue_op(p, t, key, klen, NULL, 0, true, false);
}

void persist_group_begin(struct persist *p)
{
	p->grouped++;
}

void persist_group_end(struct persist *p)
{
	p->grouped--;
}

bool persist_dirty(const struct persist *p)
{
	return p->open->nops || p->flying || p->parked.nops;
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

		if (p->failed[mid].lo <= seq && seq <= p->failed[mid].hi)
			return true;
		if (p->failed[mid].hi < seq)
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
	struct batch *b;
	struct waiter *w;

	/* parked writes are pending too (persist_dirty): they go with this waiter's batch where they cannot fail
	 * others' writes with them (the store took its last commit, or the batch holds nothing else); else they wait
	 * for the next commit, and so does the waiter (defer_waiters) */
	if (p->parked.nops && !p->flying && (!p->open->nops || p->failed_seq != p->durable_seq))
		unpark(p);
	/* with nothing queued, the newest writes are the flying ones: wait for those only (unless writes are parked:
	 * one unparked into the open batch meanwhile would not be durable when the flying one lands) */
	b = !p->open->nops && p->flying && !p->parked.nops ? p->flying : p->open;
	w = array_grow(b->waiters, &b->capwaiters, b->nwaiters + 1, sizeof(*w), 64);

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
	while (p->flying || committable(p->open) || p->open->nwaiters) {
		if (p->flying)
			rc = land(p) ? MMC_ERROR : rc;
		else if (committable(p->open))
			hand_off(p);
		else
			run_waiters(p->open);
	}
	return rc;
}

uint64_t persist_commits(const struct persist *p)
{
	return p->commits;
}

uint64_t persist_failures(const struct persist *p)
{
	return p->failures;
}

uint64_t persist_last_commit_ns(const struct persist *p)
{
	return __atomic_load_n(&p->last_commit_ns, __ATOMIC_RELAXED);
}

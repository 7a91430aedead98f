/*
 * The LMDB group commit with its writer thread, on a real event loop and a real data directory: a waiter runs only
 * after the writes queued before it are on disk, batches commit in order while the next one fills, and what was
 * acknowledged is there after a reopen.
 */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mmc/mmc.h"
#include "persist.h"

static struct event_base *base;
static struct persist *p;
static MDB_dbi dbi;
static char dir[64];

static void open_store(void)
{
	struct persist_opts o = {.dir = dir, .map_size = 64u << 20, .sync = true};
	char err[256];

	cr_assert_eq(persist_open(&p, base, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(persist_dbi(p, "t", &dbi), 0);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/mmc-persist-XXXXXX");
	cr_assert(mkdtemp(dir));
	base = event_base_new();
	cr_assert(base);
	cr_assert_eq(event_base_priority_init(base, 3), 0);
	open_store();
}

static void teardown(void)
{
	char cmd[128];

	persist_close(p);
	event_base_free(base);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* what a waiter saw when it ran: the value of its key in a fresh read transaction */
struct seen {
	struct persist *p;
	const char *key;
	uint64_t seq;
	int found, order;
};
static int runs;

static void check_durable(void *arg)
{
	struct seen *s = arg;
	MDB_env *env;
	MDB_txn *txn;
	MDB_val k = {strlen(s->key), (void *)s->key}, v;

	/* a second environment on the same files: sees only what was committed */
	cr_assert_eq(mdb_env_create(&env), 0);
	mdb_env_set_maxdbs(env, 4);
	cr_assert_eq(mdb_env_open(env, dir, MDB_RDONLY | MDB_NOTLS | MDB_NOLOCK, 0644), 0);
	cr_assert_eq(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	MDB_dbi d;
	s->found = mdb_dbi_open(txn, "t", 0, &d) == 0 && mdb_get(txn, d, &k, &v) == 0;
	mdb_txn_abort(txn);
	mdb_env_close(env);
	s->order = ++runs;
	cr_expect_geq(persist_durable_seq(s->p), s->seq, "ran before its batch was durable");
}

static void run_until(int n)
{
	for (int i = 0; i < 2000 && runs < n; i++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), usleep(1000);
}

static void run_until_durable(uint64_t seq)
{
	for (int i = 0; i < 2000 && persist_durable_seq(p) < seq; i++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), usleep(1000);
}

TestSuite(persist, .init = setup, .fini = teardown, .timeout = 60);

Test(persist, a_waiter_runs_after_its_writes_are_committed)
{
	struct seen s = {p, "k1", 0, 0, 0};

	runs = 0;
	cr_assert_eq(persist_put(p, dbi, "k1", 2, "v1", 2), 0);
	cr_assert(persist_dirty(p));
	s.seq = persist_wait_seq(p);
	cr_assert_gt(s.seq, 0);
	cr_assert_eq(persist_after_commit(p, check_durable, &s), 0);
	run_until(1);
	cr_assert_eq(runs, 1);
	cr_assert(s.found, "the write was on disk when the waiter ran");
	cr_assert_not(persist_dirty(p));
	cr_assert_eq(persist_wait_seq(p), 0);
}

Test(persist, batches_commit_in_order_while_the_next_fills)
{
	struct seen a = {p, "a", 0, 0, 0}, b = {p, "b", 0, 0, 0}, none = {p, "a", 0, 0, 0};

	runs = 0;
	persist_put(p, dbi, "a", 1, "1", 1);
	a.seq = persist_wait_seq(p);
	persist_after_commit(p, check_durable, &a);
	/* let the loop hand batch a to the writer, then fill the next one */
	for (int i = 0; i < 100 && persist_wait_seq(p) == a.seq && runs == 0; i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		persist_put(p, dbi, "b", 1, "2", 1);
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

Test(persist, flush_commits_everything_and_a_reopen_finds_it)
{
	char key[16];
	MDB_txn *txn;
	MDB_val k = {3, "k99"}, v;

	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(persist_put(p, dbi, key, strlen(key), key, strlen(key)), 0);
	}
	cr_assert_eq(persist_del(p, dbi, "k0", 2), 0);
	cr_assert_eq(persist_del(p, dbi, "never", 5), 0, "deleting a missing key is fine");
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_not(persist_dirty(p));
	persist_close(p);
	open_store();
	cr_assert_eq(persist_read_begin(p, &txn), 0);
	cr_assert_eq(mdb_get(txn, dbi, &k, &v), 0);
	cr_assert_eq(v.mv_size, 3);
	k = (MDB_val){2, "k0"};
	cr_assert_eq(mdb_get(txn, dbi, &k, &v), MDB_NOTFOUND);
	mdb_txn_abort(txn);
}

Test(persist, a_key_lmdb_refuses_does_not_sink_the_batch)
{
	static char huge[1024];
	MDB_txn *txn;
	MDB_val k = {2, "ok"}, v;

	memset(huge, 'x', sizeof(huge)); /* longer than LMDB's key limit (511) */
	cr_assert_eq(persist_put(p, dbi, huge, sizeof(huge), "v", 1), MMC_ERROR,
	             "refused when queued, not skipped later");
	cr_assert_eq(persist_put(p, dbi, "", 0, "v", 1), MMC_ERROR);
	persist_put(p, dbi, "ok", 2, "v", 1);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_eq(persist_read_begin(p, &txn), 0);
	cr_assert_eq(mdb_get(txn, dbi, &k, &v), 0);
	mdb_txn_abort(txn);
}

/* A child process holds LMDB's write lock for hold_ms: the writer thread blocks in mdb_txn_begin meanwhile. */
static pid_t hold_writer_lock(int hold_ms)
{
	int fds[2];
	char c;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		MDB_env *env;
		MDB_txn *txn;

		close(fds[0]);
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
	cr_assert_eq(read(fds[0], &c, 1), 1, "the child took the write lock");
	close(fds[0]);
	return pid;
}

/* A waiter that writes (and, slow enough, hands its own batch over by the 2 ms rule) must not make the loop hand a
 * second batch to the writer while one is flying: that batch would be marked durable without being committed. */
static struct seen after_y, after_z;
static pid_t holder;

static void write_while_landing(void *arg)
{
	struct timespec t0, t;

	persist_put(p, dbi, "x", 1, "1", 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do /* older than MAX_BATCH_AGE_NS: the next write hands the batch over */
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 3000000L);
	holder = hold_writer_lock(200); /* so that the writer is surely still busy with y's batch below */
	persist_put(p, dbi, "y", 1, "2", 1);
	usleep(20000); /* the writer has taken y's batch and waits for the lock */
	after_y.seq = persist_durable_seq(p) + 1;
	persist_after_commit(p, check_durable, &after_y);
	persist_put(p, dbi, "z", 1, "3", 1);
	after_z.seq = persist_wait_seq(p);
	persist_after_commit(p, check_durable, &after_z);
	check_durable(arg);
}

Test(persist, writes_from_a_waiter_never_replace_the_flying_batch)
{
	struct seen w = {p, "w", 0, 0, 0};
	int status;

	runs = 0;
	after_y = (struct seen){p, "y", 0, 0, 0};
	after_z = (struct seen){p, "z", 0, 0, 0};
	persist_put(p, dbi, "w", 1, "0", 1);
	w.seq = persist_wait_seq(p);
	persist_after_commit(p, write_while_landing, &w);
	run_until(3);
	cr_assert_eq(runs, 3);
	cr_assert(w.found && after_y.found, "w and y were on disk when their waiters ran");
	cr_assert(after_z.found, "z was on disk when its waiter ran");
	cr_assert_gt(after_z.seq, after_y.seq);
	cr_assert_eq(persist_flush(p), 0);
	cr_assert_eq(waitpid(holder, &status, 0), holder);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

Test(persist, a_wakeup_left_by_a_flush_does_not_make_the_loop_wait_for_the_disk)
{
	struct seen b = {p, "b", 0, 0, 0};
	double t0;
	int status;

	runs = 0;
	persist_put(p, dbi, "a", 1, "1", 1);
	cr_assert_eq(persist_flush(p), 0); /* lands on the loop: the writer's wakeup stays in the eventfd */
	holder = hold_writer_lock(1000);
	persist_put(p, dbi, "b", 1, "2", 1);
	usleep(3000);
	persist_put(p, dbi, "b2", 2, "2", 1); /* the 2 ms rule: batch b flies, and the writer is stuck */
	b.seq = persist_wait_seq(p);
	persist_after_commit(p, check_durable, &b);
	t0 = now_ms();
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	cr_expect_lt(now_ms() - t0, 500, "one loop turn waited %.0f ms for a commit", now_ms() - t0);
	cr_expect_eq(runs, 0, "b cannot be durable while the lock is held");
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

Test(persist, a_loop_that_never_idles_still_commits)
{
	struct seen s = {p, "busy", 0, 0, 0};
	struct event *busy;
	int sv[2], turns = 0;
	double t0;

	runs = 0;
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_eq(write(sv[1], "x", 1), 1); /* never read: sv[0] is readable on every turn */
	busy = event_new(base, sv[0], EV_READ | EV_PERSIST, busy_cb, &turns);
	cr_assert_eq(event_priority_set(busy, 1), 0);
	event_add(busy, NULL);
	persist_put(p, dbi, "busy", 4, "1", 1);
	s.seq = persist_wait_seq(p);
	persist_after_commit(p, check_durable, &s);
	t0 = now_ms();
	while (runs == 0 && now_ms() - t0 < 2000)
		event_base_loop(base, 0); /* one turn: the busy socket is always ready */
	event_free(busy);
	close(sv[0]);
	close(sv[1]);
	cr_assert_eq(runs, 1, "the waiter ran within 2 s of a busy loop (%d turns)", turns);
	cr_assert(s.found);
}

/* A commit that fails (here: the map is full) still runs its waiters, which must be able to tell. */
static void saw_failure(void *arg)
{
	*(uint64_t *)arg = persist_failed_seq(p);
	runs++;
}

Test(persist, a_failed_commit_is_visible_to_its_waiters)
{
	static char big[1 << 20];
	struct persist_opts small = {.dir = dir, .map_size = 256u << 10, .sync = true};
	char err[256];
	uint64_t seq, failed = 0, later = 0;

	persist_close(p);
	cr_assert_eq(persist_open(&p, base, &small, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(persist_dbi(p, "t", &dbi), 0);
	cr_assert_eq(persist_failed_seq(p), 0);
	runs = 0;
	cr_assert_eq(persist_put(p, dbi, "big", 3, big, sizeof(big)), 0, "queued: the map is only full at commit");
	seq = persist_wait_seq(p);
	persist_after_commit(p, saw_failure, &failed);
	run_until(1);
	cr_assert_eq(runs, 1);
	cr_assert_eq(failed, seq, "the waiter learns that its batch failed");
	cr_assert_eq(persist_failures(p), 1, "counted for /metrics");
	/* a later batch that fits commits, and the failure stays on record */
	persist_put(p, dbi, "small", 5, "1", 1);
	persist_after_commit(p, saw_failure, &later);
	run_until(2);
	cr_assert_eq(later, seq);
	cr_assert_gt(persist_durable_seq(p), seq);
	/* space unlinked by the failed batch must never be reused; by the later one, it may */
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_LOST);
	cr_assert_eq(persist_seq_state(p, persist_durable_seq(p)), PERSIST_SEQ_DURABLE);
}

Test(persist, a_batch_is_pending_until_it_lands)
{
	uint64_t seq;

	cr_assert_eq(persist_seq_state(p, 0), PERSIST_SEQ_DURABLE, "no batch: nothing to wait for");
	cr_assert_eq(persist_put(p, dbi, "k", 1, "v", 1), 0);
	seq = persist_wait_seq(p);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_PENDING);
	cr_assert_eq(persist_seq_state(p, seq + 1), PERSIST_SEQ_PENDING, "a batch not yet numbered");
	run_until_durable(seq);
	cr_assert_eq(persist_seq_state(p, seq), PERSIST_SEQ_DURABLE);
}

/*
 * A peer that stops answering in the middle of a transfer, then answers late (SIGSTOP, then SIGCONT of the process
 * that owns the bytes). Every byte moves by tcp RMA here: the host path is off, as between two hosts. The promise
 * under test: a call that gave up on an RMA leaves nothing behind that can still land, neither in the caller's
 * buffer (a get) nor in pool space that is given to another key afterwards (a put); and a put that waited for a
 * peer while the meta server restarted writes nothing after it knows (its space may be another key's by then),
 * nor does a move between tiers that a lender's stalled disk held up past it.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"
#include "pattern.h"
#include "store_fixture.h"

#define SIZE (4u << 20)

static struct metaserver meta;
static char env_meta[128], reply[8192];
/* the reader gives up on a stalled RMA after 400 ms; the owner's lease outlives the pause */
static const char *env[] = {env_meta, "MMC_HOST_PATH=off", "MMC_PROTOCOL=host_tcp", "MMC_TEST_RMA_MS=400", NULL};

#define CMD(n, ...) (node_cmd((n), reply, sizeof(reply), __VA_ARGS__), atoi(reply))

/* The state letter of thread tid of pid (its /proc stat: 'S' asleep, 'T' or 't' stopped); 0 when it is gone. */
static char thread_state(pid_t pid, const char *tid)
{
	char path[320], line[512], *close = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, tid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fgets(line, sizeof(line), f))
		close = strrchr(line, ')');
	fclose(f);
	return close ? close[2] : 0;
}

/* Whether every thread of pid is stopped. */
static bool all_stopped(pid_t pid)
{
	char path[320];
	struct dirent *d;
	DIR *dir;
	bool all = true;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return false;
	while (all && (d = readdir(dir))) {
		char state = d->d_name[0] == '.' ? 'T' : thread_state(pid, d->d_name);

		all = state == 'T' || state == 't' || state == 0; /* 0: a thread that ended meanwhile */
	}
	closedir(dir);
	return all;
}

/*
 * SIGSTOP, and wait until it took: a process stops only once one of its threads has taken the signal, and until
 * then (a loaded machine: tens of ms) its other threads still answer RMA.
 */
static void stop_process(pid_t pid)
{
	cr_assert_eq(kill(pid, SIGSTOP), 0);
	for (int i = 0; i < 5000 && !all_stopped(pid); i++)
		usleep(1000);
	cr_assert(all_stopped(pid), "process %d did not stop", (int)pid);
}

/* The thread of pid whose name is comm; 0 when it has none. */
static pid_t thread_named(pid_t pid, const char *comm)
{
	char path[320], name[64];
	struct dirent *d;
	pid_t found = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	cr_assert_not_null(dir = opendir(path));
	while (!found && (d = readdir(dir))) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/comm", (int)pid, d->d_name);
		if (d->d_name[0] == '.' || !(f = fopen(path, "r")))
			continue;
		if (fgets(name, sizeof(name), f) && strcmp(strtok(name, "\n"), comm) == 0)
			found = atoi(d->d_name);
		fclose(f);
	}
	closedir(dir);
	return found;
}

/* Whether thread tid of pid sleeps in system call nr ("S", and nr first in its /proc syscall file). */
static bool sleeps_in(pid_t pid, pid_t tid, long nr)
{
	char path[128], line[256];
	bool yes;
	FILE *f;

	snprintf(path, sizeof(path), "%d", (int)tid);
	if (thread_state(pid, path) != 'S')
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (!(f = fopen(path, "r")))
		return false;
	yes = fgets(line, sizeof(line), f) && strtol(line, NULL, 10) == nr;
	fclose(f);
	return yes;
}

/*
 * Stops one thread of a child process, and only that one (ptrace): a disk that hangs under the thread that reads
 * it, while the rest of the process runs; the thread is first seen asleep in system call nr (-1: anywhere), so
 * that it holds no lock the others need. false where this process may not trace its children.
 */
static bool stall_thread(pid_t pid, pid_t tid, long nr)
{
	int status;

	for (int i = 0; i < 500 && nr >= 0 && !sleeps_in(pid, tid, nr); i++)
		usleep(2000);
	cr_assert(nr < 0 || sleeps_in(pid, tid, nr), "thread %d never slept in system call %ld", (int)tid, nr);
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)PTRACE_O_TRACESYSGOOD))
		return false;
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, tid, NULL, NULL), 0);
	cr_assert_eq(waitpid(tid, &status, __WALL), tid);
	return true;
}

/*
 * Lets a stalled thread run up to its next entry into system call nr, and stops it there; false when it enters
 * give_up first (it went back to waiting for its next command: nr never came), or when this kernel cannot say which
 * system call a thread is in. Signals the thread gets meanwhile are delivered.
 */
static bool stall_at_syscall(pid_t tid, long nr, long give_up)
{
	struct __ptrace_syscall_info info;
	int status, sig = 0;

	for (int i = 0; i < 10000; i++) {
		cr_assert_eq(ptrace(PTRACE_SYSCALL, tid, NULL, (void *)(long)sig), 0);
		cr_assert_eq(waitpid(tid, &status, __WALL), tid);
		sig = 0;
		if (!WIFSTOPPED(status))
			return false;
		if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			if (status >> 16 == 0 && WSTOPSIG(status) != SIGTRAP) /* a signal, not a ptrace event */
				sig = WSTOPSIG(status);
			continue;
		}
		if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(info), &info) <= 0)
			return false;
		if (info.op == PTRACE_SYSCALL_INFO_ENTRY && (long)info.entry.nr == nr)
			return true;
		if (info.op == PTRACE_SYSCALL_INFO_ENTRY && (long)info.entry.nr == give_up && i > 0)
			return false;
	}
	return false;
}

static void start_node(struct node *n, int lend)
{
	cr_assert_eq(node_start(n, env), 0);
	node_cmd(n, reply, sizeof(reply), "init %d %llu", lend, 64ull << 20);
	cr_assert_eq(atoi(reply), 0, "init: %s", reply);
}

static void stop(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

/*
 * The reader's get times out while the owner is stopped; the reader then reuses its buffer. Once the owner runs
 * again it answers the old read request. A later get from the same owner is answered after it (one connection,
 * served in order), so when that get is back, a late landing of the first read has happened, if it ever will.
 */
Test(stall, a_timed_out_get_never_lands_later, .fini = stop, .timeout = 120)
{
	struct node owner, reader;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_node(&owner, 1);
	start_node(&reader, 0);
	cr_assert_eq(CMD(&owner, "put stalled %u 7", SIZE), 0, "%s", reply);
	cr_assert_eq(CMD(&reader, "get stalled %u 7", SIZE), 0, "%s", reply); /* the connection is up */
	for (int round = 0; round < 3; round++) {
		stop_process(owner.pid);
		cr_expect_neq(CMD(&reader, "hold stalled %u", SIZE), 0, "a get from a stopped owner: %s", reply);
		cr_assert_eq(kill(owner.pid, SIGCONT), 0);
		cr_expect_eq(CMD(&owner, "exist stalled"), 1, "the owner still holds the key: %s", reply);
		cr_expect_eq(CMD(&reader, "get stalled %u 7", SIZE), 0, "the owner answers again: %s", reply);
		cr_expect_eq(CMD(&reader, "held"), 0,
		             "round %d: the timed-out get wrote into the buffer after it returned "
		             "(byte %s)",
		             round, strchr(reply, ' ') ? strchr(reply, ' ') + 1 : "?");
	}
	node_kill(&reader);
	node_kill(&owner);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * A meta server that stops answering (paused, hung) while its connections stay up: a store drops its connection
 * once the server has answered none of its pings for the server's heartbeat timeout, so a call waiting on it fails
 * then (MMC_NOT_CONNECTED_META), not after timeout_ms, and what that server granted stops being used; the store is
 * back once the server runs again. TCP alone kept the connection, and the call waited out timeout_ms.
 */
Test(stall, a_stopped_meta_server_is_dropped_after_its_heartbeat_timeout, .fini = stop, .timeout = 120)
{
	const char *conf[] = {"ock.mmc.meta.heartbeat_timeout_ms=1500", NULL};
	mmc_local_config c;
	mmc_store *s = mmc_create();
	uint64_t t0, waited;
	int rc = -1;

	cr_assert_eq(metaserver_start(&meta, conf), 0);
	c = fixture_config(meta.url, 0);
	c.timeout_ms = 30000;
	c.retry_ms = 0;
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, 0), 0);
	cr_assert_eq(mmc_is_exist(s, "k"), 0);
	stop_process(meta.pid);
	t0 = now_ms();
	rc = mmc_is_exist(s, "k");
	waited = now_ms() - t0;
	cr_assert_eq(kill(meta.pid, SIGCONT), 0);
	cr_expect_eq(rc, MMC_NOT_CONNECTED_META, "a call to the stopped server: %d after %llu ms", rc,
	             (unsigned long long)waited);
	cr_expect_lt(waited, 10000, "the call waited %llu ms: the silence was not noticed", (unsigned long long)waited);
	for (uint64_t end = now_ms() + 15000; (rc = mmc_is_exist(s, "k")) != 0 && now_ms() < end;)
		usleep(50000);
	cr_expect_eq(rc, 0, "the store is back once the server runs again");
	mmc_destroy(s);
}

/*
 * A GVA read under a lease granted by a server that then went silent past its heartbeat window (paused, cut off)
 * reads nothing, however long the lease: a successor may have given the space to another object. The lender's
 * pool takes a new key when it joins a new server, which stops the read where the provider checks keys; this
 * check does not depend on that.
 */
Test(stall, a_gva_read_under_a_silent_server_s_lease_reads_nothing, .fini = stop, .timeout = 120)
{
	const char *conf[] = {"ock.mmc.meta.heartbeat_timeout_ms=1500", NULL};
	const char *k[] = {"silent"};
	static unsigned char buf[64 << 10];
	size_t size = sizeof(buf);
	void *b = buf;
	mmc_key_info info;
	mmc_store *st;
	mmc_gva g;
	int res;

	cr_assert_eq(metaserver_start(&meta, conf), 0);
	st = fixture_store(meta.url, true, 8u << 20);
	pattern_fill(buf, size, 5);
	cr_assert_eq(mmc_put_from(st, "silent", buf, size, MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_get_key_info(st, "silent", 0, &info), 0);
	cr_assert_eq(mmc_batch_add_lease(st, k, 1, 60000, &res), 0);
	cr_assert_eq(res, 0);
	g = info.gva[0];
	stop_process(meta.pid);
	usleep(1400000); /* past three quarters of the heartbeat timeout since the server last answered */
	memset(buf, 0x5a, size);
	cr_expect_eq(mmc_batch_copy(st, &g, &b, &size, 1, MMC_COPY_G2H, 0), MMC_LEASE_EXPIRED);
	for (size_t i = 0; i < size; i++)
		cr_assert_eq(buf[i], 0x5a, "the read under a silent server's lease wrote the buffer at %zu", i);
	cr_assert_eq(kill(meta.pid, SIGCONT), 0);
	mmc_destroy(st);
}

/* How many times stores asked the meta server for a service's coordinates (/metrics). */
static uint64_t service_queries(void)
{
	double v = 0;

	cr_assert_eq(hc_metric(meta.admin_port, "mmc_rpc_requests_total{op=\"service\"}", &v), 200);
	return (uint64_t)v;
}

/*
 * A transfer that failed on a peer forgets the peer's coordinates, and the next one asks for them again: the pool
 * may have a new key that nothing else would tell this store about (its owner registered again while this store's
 * own connection stayed up). A peer that answered is asked for once.
 */
Test(stall, a_peer_a_transfer_failed_on_is_asked_for_again, .fini = stop, .timeout = 120)
{
	struct node owner, reader;
	uint64_t asked;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_node(&owner, 1);
	start_node(&reader, 0);
	cr_assert_eq(CMD(&owner, "put asked %u 7", SIZE), 0, "%s", reply);
	cr_assert_eq(CMD(&reader, "get asked %u 7", SIZE), 0, "%s", reply);
	asked = service_queries();
	cr_assert_eq(CMD(&reader, "get asked %u 7", SIZE), 0, "%s", reply);
	cr_assert_eq(service_queries(), asked, "a peer that answered is not asked for again");
	stop_process(owner.pid);
	cr_expect_neq(CMD(&reader, "hold asked %u", SIZE), 0, "a get from a stopped owner: %s", reply);
	cr_assert_eq(kill(owner.pid, SIGCONT), 0);
	cr_assert_eq(CMD(&reader, "get asked %u 7", SIZE), 0, "%s", reply);
	cr_expect_eq(service_queries(), asked + 1, "asked for once more after the failed transfer");
	node_kill(&reader);
	node_kill(&owner);
}

/*
 * A batch put to an owner that is stopped cannot have placed a byte: no key of it may answer MMC_OK. A write's own
 * completion says only that the bytes left (tcp: reached the kernel); the fence read after them is what proves they
 * landed, and its failure is every key's written to that owner, not only the last one's (it was: 7 of 8 keys here
 * answered MMC_OK, committed with bytes that a severed connection could drop).
 */
Test(stall, a_put_to_a_stopped_owner_stores_no_key, .fini = stop, .timeout = 120)
{
	struct node owner, writer;
	char *r;
	int ok = 0;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_node(&owner, 1);
	start_node(&writer, 0);
	cr_assert_eq(CMD(&writer, "bput warm/ 2 4096 1"), 0, "%s", reply); /* the connection is up */
	stop_process(owner.pid);
	node_cmd(&writer, reply, sizeof(reply), "bput stopped/ 8 4096 5");
	cr_assert_eq(kill(owner.pid, SIGCONT), 0);
	strtol(reply, &r, 10);
	for (int i = 0; i < 8; i++)
		ok += strtol(r, &r, 10) == 0;
	cr_expect_eq(ok, 0, "keys stored while their only owner was stopped: %d (%s)", ok, reply);
	cr_expect_eq(CMD(&writer, "bput after/ 8 4096 9"), 0, "the owner is written to again: %s", reply);
	cr_expect_eq(CMD(&writer, "bget after/ 8 4096 9"), 0, "and read back: %s", reply);
	node_kill(&writer);
	node_kill(&owner);
}

/* ---- a prefix read under a deadline ---- */

#define PAGE (1u << 20)

/* the reader would wait 10 s for a stalled RMA: only the prefix read's own deadline may end it sooner */
static const char *env_patient[] = {env_meta, "MMC_HOST_PATH=off", "MMC_PROTOCOL=host_tcp", "MMC_TEST_RMA_MS=10000",
                                    NULL};

static void start_sized(struct node *n, int lend, const char *const *e, unsigned long long pool)
{
	cr_assert_eq(node_start(n, e), 0);
	node_cmd(n, reply, sizeof(reply), "init %d %llu", lend, pool);
	cr_assert_eq(atoi(reply), 0, "init: %s", reply);
}

static void start_with(struct node *n, int lend, const char *const *e)
{
	start_sized(n, lend, e, 64ull << 20);
}

/* "CODE LANDED MS" of a prefix command */
static void prefix(struct node *r, unsigned timeout_ms, int *code, unsigned *landed, unsigned *ms)
{
	node_cmd(r, reply, sizeof(reply), "prefix pre/ 8 %u 100 %u", PAGE, timeout_ms);
	cr_assert_eq(sscanf(reply, "%d %u %u", code, landed, ms), 3, "%s", reply);
}

/*
 * Pages 0-3 of a prefix live on owner a, pages 4-7 on owner b. With b stopped, a prefix read returns pages 0-3 by
 * its deadline (MMC_OK, landed 4) instead of waiting for b, and leaves nothing behind: no lease (b's pages can be
 * removed at once when it runs again) and no RMA (a later read of the whole prefix gets every byte right).
 */
Test(stall, a_prefix_read_returns_the_leading_pages_by_its_deadline, .fini = stop, .timeout = 120)
{
	struct node a, b, r;
	unsigned landed, ms;
	int code;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_node(&a, 1);
	start_node(&b, 1);
	start_with(&r, 0, env_patient);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(CMD(i < 4 ? &a : &b, "put pre/%d %u %d", i, PAGE, 100 + i), 0, "%s", reply);
	prefix(&r, 5000, &code, &landed, &ms);
	cr_assert_eq(code, 0, "%s", reply);
	cr_assert_eq(landed, 8, "every page, in time: %s", reply);

	stop_process(b.pid);
	prefix(&r, 800, &code, &landed, &ms);
	cr_expect_eq(code, 0, "a prefix read answers MMC_OK with what landed: %s", reply);
	cr_expect_eq(landed, 4, "the pages of the running owner, not the stopped one's: %s", reply);
	cr_expect_lt(ms, 800 + 1000, "it returned by its deadline (plus a scheduling slice on a loaded machine)");
	/* the connection to b was closed when the first gave up: this one waits for a new one, within its deadline,
	 * and still takes what a's pages brought */
	prefix(&r, 800, &code, &landed, &ms);
	cr_assert_eq(kill(b.pid, SIGCONT), 0);
	cr_expect_eq(code, 0, "%s", reply);
	cr_expect_eq(landed, 4, "a later prefix read, b still stopped: %s", reply);
	cr_expect_lt(ms, 800 + 1000, "a later prefix read returned by its deadline: %s", reply);

	cr_expect_eq(CMD(&b, "remove pre/5"), 0, "no lease of the given-up read holds the page: %s", reply);
	prefix(&r, 5000, &code, &landed, &ms);
	cr_expect_eq(code, 0, "the bytes of every landed page are right: %s", reply);
	cr_expect_eq(landed, 5, "the prefix now ends at the removed page: %s", reply);
	node_kill(&r);
	node_kill(&b);
	node_kill(&a);
}

/* A meta server, owner a holding the 8 pages of prefix pre/, and a reader r that waits for nothing but its own
 * deadlines. */
static void one_owner_s_prefix(struct node *a, struct node *r)
{
	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_node(a, 1);
	start_with(r, 0, env_patient);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(CMD(a, "put pre/%d %u %d", i, PAGE, 100 + i), 0, "%s", reply);
}

/*
 * Keys a prefix read gave up on at its deadline timed out for the reader's sake, not the owner's: the owner's
 * coordinates stay cached, and the next read does not ask the meta server for them (a reader missing deadlines
 * under load would otherwise add a meta call per owner to each read).
 */
Test(stall, a_prefix_read_past_its_deadline_keeps_the_owner_s_coordinates, .fini = stop, .timeout = 120)
{
	struct node a, r;
	unsigned landed, ms;
	uint64_t asked;
	int code;

	one_owner_s_prefix(&a, &r);
	prefix(&r, 5000, &code, &landed, &ms);
	cr_assert_eq(landed, 8, "%s", reply);
	asked = service_queries();
	stop_process(a.pid);
	prefix(&r, 300, &code, &landed, &ms);
	cr_assert_eq(kill(a.pid, SIGCONT), 0);
	cr_expect_eq(landed, 0, "the owner was stopped: %s", reply);
	prefix(&r, 5000, &code, &landed, &ms);
	cr_expect_eq(landed, 8, "%s", reply);
	cr_expect_eq(service_queries(), asked, "the owner was not asked for again");
	node_kill(&r);
	node_kill(&a);
}

/* Stops pid after ms, from a child: the caller meanwhile waits in a call. */
static pid_t stop_later(pid_t pid, unsigned ms)
{
	pid_t c = fork();

	if (c == 0) {
		usleep(ms * 1000);
		kill(pid, SIGSTOP);
		_exit(0);
	}
	return c;
}

#define BIG (128u << 20)

/*
 * The owner stops in the middle of answering a large read: part of an answer has arrived when the reader gives
 * up. libfabric's own way to close that connection crashed the reader there (rxm's flush of a half-received
 * answer); it is cut from the socket now. The reader lives on, nothing lands in its buffer after the call, and the
 * owner answers again once it runs.
 */
Test(stall, a_read_cut_off_in_the_middle_of_its_answer_leaves_the_reader_running, .fini = stop, .timeout = 120)
{
	struct node owner, reader;
	int cut = 0;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_sized(&owner, 1, env, 256ull << 20);
	start_node(&reader, 0);
	cr_assert_eq(CMD(&owner, "put big %u 9", BIG), 0, "%s", reply);
	cr_assert_eq(CMD(&reader, "get big %u 9", BIG), 0, "%s", reply); /* the connection is up */
	for (unsigned round = 0; round < 4; round++) {
		pid_t stopper = stop_later(owner.pid, 2 + 4 * round);

		node_cmd(&reader, reply, sizeof(reply), "hold big %u", BIG);
		cut += atoi(reply) == MMC_TIMEOUT;
		waitpid(stopper, NULL, 0);
		cr_assert_eq(kill(owner.pid, SIGCONT), 0);
		cr_assert(kill(reader.pid, 0) == 0 && reply[0], "round %u: the reader died", round);
		cr_expect_eq(CMD(&reader, "get big %u 9", BIG), 0, "round %u: the owner answers again: %s", round,
		             reply);
		cr_expect_eq(CMD(&reader, "held"), 0, "round %u: the cut read wrote into the buffer after it returned",
		             round);
	}
	cr_expect_gt(cut, 0, "no round stopped the owner before its answer was done");
	node_kill(&reader);
	node_kill(&owner);
}

/*
 * A prefix read whose deadline passes while its reads from a running owner are still arriving (a budget shorter
 * than the transfer): the routine case of a deadline, not a fault. Every such call cut the connection through
 * libfabric, which crashed the reader within a few calls.
 */
Test(stall, prefix_reads_past_their_deadline_from_a_running_owner_leave_the_reader_running, .fini = stop,
     .timeout = 120)
{
	struct node a, r;
	unsigned landed, ms;
	int code;

	one_owner_s_prefix(&a, &r);
	for (int call = 0; call < 40; call++) {
		prefix(&r, 1 + call % 4, &code, &landed, &ms);
		cr_assert_eq(code, 0, "call %d: %s", call, reply);
	}
	prefix(&r, 5000, &code, &landed, &ms);
	cr_expect_eq(landed, 8, "the whole prefix afterwards: %s", reply);
	node_kill(&r);
	node_kill(&a);
}

/*
 * The reader's process started libfabric before libmmc: libfabric's connection progress then runs at its own pace
 * (10 ms), not the 1 ms libmmc asks for. A stalled read is still cut off, nothing of it lands later, and the next get
 * from the owner, once it runs, opens a new connection instead of failing on the dead one.
 */
Test(stall, a_process_that_started_libfabric_first_cuts_a_stalled_read_too, .fini = stop, .timeout = 120)
{
	static const char *env_first[] = {
	    env_meta, "MMC_HOST_PATH=off", "MMC_PROTOCOL=host_tcp", "MMC_TEST_RMA_MS=400", "MMC_TEST_FABRIC_FIRST=1",
	    NULL};
	struct node owner, reader;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_node(&owner, 1);
	start_with(&reader, 0, env_first);
	cr_assert_eq(CMD(&owner, "put stalled %u 7", SIZE), 0, "%s", reply);
	cr_assert_eq(CMD(&reader, "get stalled %u 7", SIZE), 0, "%s", reply);
	stop_process(owner.pid);
	cr_expect_neq(CMD(&reader, "hold stalled %u", SIZE), 0, "a get from a stopped owner: %s", reply);
	cr_assert_eq(kill(owner.pid, SIGCONT), 0);
	cr_expect_eq(CMD(&reader, "get stalled %u 7", SIZE), 0, "the owner answers again: %s", reply);
	cr_expect_eq(CMD(&reader, "held"), 0, "nothing landed in the buffer after the call returned: %s", reply);
	node_kill(&reader);
	node_kill(&owner);
}

/*
 * A batch whose keys alternate between two owners that turn its posts away (both stopped before the reader ever
 * connected to them, so the provider keeps answering "try again"): each owner keeps the call waiting
 * rma_timeout_ms once, not once per key. The batch remembered one refusing owner, and the keys of the other each
 * waited again: 8 keys took 8 x rma_timeout_ms.
 */
Test(stall, a_batch_waits_for_each_refusing_owner_once, .fini = stop, .timeout = 120)
{
	struct node a, b, w, r;
	int rank_a, rank_b;
	uint64_t t0, took;

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_node(&a, 1);
	rank_a = atoi(strchr(reply, ' ') + 1);
	start_node(&b, 1);
	rank_b = atoi(strchr(reply, ' ') + 1);
	start_node(&w, 0);
	start_node(&r, 0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(CMD(&w, "put p%d 4096 %d 1 %d", i, 7 + i, i % 2 ? rank_b : rank_a), 0, "%s", reply);
	stop_process(a.pid);
	stop_process(b.pid);
	t0 = now_ms();
	node_cmd(&r, reply, sizeof(reply), "bget p 8 4096 7");
	took = now_ms() - t0;
	cr_assert_eq(kill(a.pid, SIGCONT), 0);
	cr_assert_eq(kill(b.pid, SIGCONT), 0);
	cr_expect(strncmp(reply, "0 -3004", 7) == 0, "every key timed out: %s", reply);
	cr_expect_lt(took, 2500, "8 keys on 2 refusing owners kept the call %llu ms (rma_timeout_ms 400)",
	             (unsigned long long)took);
	node_kill(&r);
	node_kill(&w);
	node_kill(&b);
	node_kill(&a);
}

/* A command on a node of its own thread: the test restarts the meta server while the command waits. */
struct waiting {
	struct node *n;
	const char *cmd;
	char reply[256];
};

static void *waiting_main(void *arg)
{
	struct waiting *w = arg;

	node_cmd(w->n, w->reply, sizeof(w->reply), "%s", w->cmd);
	return NULL;
}

/* Whether every per-key code of a bput/bget reply ("CODE R0 R1 ...") is 0. */
static bool all_zero(const char *r)
{
	char *end;

	for (long v = strtol(r, &end, 10); end != r; v = strtol(r, &end, 10)) {
		if (v)
			return false;
		r = end;
	}
	return true;
}

/* Puts fill/0 .. fill/N-1 of 256 KiB from node n, once there is room for them (a lender rejoining): a late write into
 * a pool lands in one of them. */
static void fill(struct node *n, unsigned nkeys)
{
	bool filled = false;

	for (int i = 0; i < 200 && !filled; i++) {
		(void)CMD(n, "bput fill/ %u %u 100", nkeys, 256u << 10);
		if (!(filled = all_zero(reply)))
			usleep(20000);
	}
	cr_assert(filled, "the fill: %s", reply);
}

/* Whether fill/0 .. fill/N-1 still read back right. */
static void fill_check(struct node *n, unsigned nkeys, const char *after)
{
	(void)CMD(n, "bget fill/ %u %u 100", nkeys, 256u << 10);
	cr_expect(all_zero(reply), "the fill's bytes are intact after %s (99: wrong bytes): %s", after, reply);
}

/* A writer whose next writes go first to a lender about to die, then to a live one, and another client. */
struct late_case {
	struct node dead, live, writer, other;
};

static const char *late_meta_env[] = {"ock.mmc.meta.rejoin_write_grace_ms=100", NULL};

static void late_start(struct late_case *c, unsigned long long dead_pool)
{
	static const char *env_slow[] = {env_meta, "MMC_HOST_PATH=off", "MMC_PROTOCOL=host_tcp", "MMC_TEST_RMA_MS=4000",
	                                 NULL};

	cr_assert_eq(metaserver_start(&meta, late_meta_env), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_sized(&c->dead, 1, env, dead_pool);
	start_sized(&c->live, 1, env, 16ull << 20);
	start_with(&c->writer, 0, env_slow);
	start_with(&c->other, 0, env);
}

/*
 * Kills the dead lender (before the meta server notices: its port refuses connections, and the provider turns the
 * writer's first write away until rma_timeout_ms), runs cmd on the writer meanwhile, restarts the meta server, then
 * fills 12 of the live lender's 16 MiB from the other client once the lender has rejoined and its grace has passed:
 * a write of the writer's that went out after the restart would land in one of those. Checks them.
 */
static void late_run(struct late_case *c, const char *cmd)
{
	struct waiting w = {.n = &c->writer, .cmd = cmd};
	pthread_t th;

	node_kill(&c->dead);
	cr_assert_eq(pthread_create(&th, NULL, waiting_main, &w), 0);
	usleep(300000); /* the writer waits on its first write */
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, late_meta_env), 0);
	fill(&c->other, 48);
	pthread_join(th, NULL);
	cr_log_info("the writer's %s: %s", cmd, w.reply);
	fill_check(&c->other, 48, "the writer wrote");
	node_kill(&c->other);
	node_kill(&c->writer);
	node_kill(&c->live);
}

/*
 * A batch put waits on its first key for a lender killed before the meta server noticed, and meanwhile the meta
 * server restarts. Its second key was placed by the dead server on a live lender, in space the new server knows
 * nothing of and gives to other puts once that lender has rejoined. The waiting put must not write its second key
 * there after it knows the server is gone: it used to, with the lender's new key just learned from the new server,
 * over another put's bytes. The writer's extents have two lanes, the roomier lender's first: key 0 goes to the
 * dead lender, key 1 to the live one.
 */
Test(stall, a_put_that_waited_past_a_meta_restart_writes_nothing_after_it, .fini = stop, .timeout = 120)
{
	struct late_case c;

	late_start(&c, 48ull << 20);
	/* the writer's extents: a lane on each lender, kept for its next puts */
	cr_assert_eq(CMD(&c.writer, "bput warm/ 2 %u 30", 256u << 10), 0, "%s", reply);
	late_run(&c, "bput late/ 2 262144 40");
}

/*
 * The same for a GVA copy: its ranges were allocated by the dead server, the first on the dead lender and the last
 * on the live one (a malloc goes to the roomiest lender: the dead one is larger until the padding between has
 * taken 2 MiB of it), and their write lease died with that server.
 */
Test(stall, a_gva_copy_that_waited_past_a_meta_restart_writes_nothing_after_it, .fini = stop, .timeout = 120)
{
	struct late_case c;

	late_start(&c, (16ull << 20) + (128u << 10));
	cr_assert_eq(CMD(&c.writer, "gmalloc first/ 1 %u 60000", 256u << 10), 0, "%s", reply);
	cr_assert_eq(CMD(&c.writer, "gmalloc pad/ 8 %u 60000", 256u << 10), 0, "%s", reply);
	cr_assert_eq(CMD(&c.writer, "gmalloc second/ 1 %u 60000", 256u << 10), 0, "%s", reply);
	/* the writer meets the dead lender before it dies (this put goes to the roomier lender too) */
	cr_assert_eq(CMD(&c.writer, "put warm 4096 30"), 0, "%s", reply);
	late_run(&c, "gcopy 40");
}

/*
 * A write already handed to the provider when the meta server died, held up on the writer's side (its thread stopped
 * entering the system call that sends it), goes out only after the lender rejoined the restarted server and another
 * client's puts filled its pool. The lender took a new key before it rejoined, so the provider refuses the write
 * there (the writer's lease is checked before each post, not inside one): it used to land over those puts' bytes,
 * as the lender took its new key only at the second reconnect after a restart.
 */
Test(stall, a_write_posted_before_a_meta_restart_is_refused_after_it, .fini = stop, .timeout = 120)
{
	struct node lender, writer, other;
	struct waiting w = {.n = &writer, .cmd = "bput late/ 2 262144 40"};
	pthread_t th;

	cr_assert_eq(metaserver_start(&meta, late_meta_env), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_sized(&lender, 1, env, 16ull << 20);
	start_with(&writer, 0, env);
	start_with(&other, 0, env);
	/* the writer's extent on the lender, and its connection to it, for the next put */
	cr_assert_eq(CMD(&writer, "bput warm/ 2 %u 30", 256u << 10), 0, "%s", reply);
	if (!stall_thread(writer.pid, writer.pid, SYS_read)) /* waiting for its next command */
		cr_skip_test("ptrace of a child's thread is not allowed here: %s", strerror(errno));
	cr_assert_eq(pthread_create(&th, NULL, waiting_main, &w), 0);
	if (!stall_at_syscall(writer.pid, SYS_sendmsg, SYS_read)) /* its first write to the lender */
		cr_skip_test("the provider sent the write from another thread, or this kernel cannot say (no "
		             "PTRACE_GET_SYSCALL_INFO): the test cannot hold it up");
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, late_meta_env), 0);
	fill(&other, 48); /* 12 of the lender's 16 MiB, once it rejoined */
	cr_assert_eq(ptrace(PTRACE_DETACH, writer.pid, NULL, NULL), 0);
	pthread_join(th, NULL);
	cr_log_info("the writer's put: %s", w.reply);
	fill_check(&other, 48, "the writer's write");
	node_kill(&other);
	node_kill(&writer);
	node_kill(&lender);
}

/*
 * A lender the meta server unmounted (its heartbeats stopped: the process was stopped) and that joins the same server
 * again is a new incarnation, whose whole pool the server hands to new puts at once. A writer granted space there
 * before (a GVA malloc), which still knows the lender's old coordinates, must not land its copy in that pool
 * afterwards: it used to, under the pool's unchanged key, over the new puts' bytes.
 */
Test(stall, a_write_granted_before_a_lender_was_unmounted_lands_nowhere_after_it_joins_again, .fini = stop,
     .timeout = 120)
{
	static const char *meta_env[] = {"ock.mmc.meta.heartbeat_timeout_ms=500", NULL};
	struct node lender, writer, other;

	cr_assert_eq(metaserver_start(&meta, meta_env), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	start_sized(&lender, 1, env, 16ull << 20);
	start_with(&writer, 0, env);
	start_with(&other, 0, env);
	cr_assert_eq(CMD(&writer, "put warm 4096 30"), 0, "%s", reply); /* the writer meets the lender */
	cr_assert_eq(CMD(&writer, "gmalloc first/ 4 %u 60000", 256u << 10), 0, "%s", reply);
	stop_process(lender.pid);
	usleep(1500000); /* past the heartbeat timeout: the server unmounts the lender */
	cr_assert_eq(kill(lender.pid, SIGCONT), 0);
	fill(&other, 48); /* 12 of its 16 MiB, once it joined again */
	cr_log_info("the writer's copy: %d", CMD(&writer, "gcopy 40"));
	fill_check(&other, 48, "the writer's copy");
	node_kill(&other);
	node_kill(&writer);
	node_kill(&lender);
}

/* ---- a move between tiers that the lost meta server asked for ---- */

/* A lender with an SSD tier whose worker is stopped with a read of "cold" back into DRAM queued (a get asked for
 * it), and another client. */
struct tier_case {
	struct node lender, other;
	pid_t worker;
};

/* What the meta server counts as used in the pools' DRAM (/metrics). */
static uint64_t dram_used(void)
{
	double v = 0;

	cr_assert_eq(hc_metric(meta.admin_port, "mmc_pool_used_bytes{media=\"dram\"}", &v), 200);
	return (uint64_t)v;
}

static void tier_start(struct tier_case *c)
{
	static char env_ssd[340];
	static const char *lender_env[] = {env_meta, "MMC_HOST_PATH=off", "MMC_PROTOCOL=host_tcp", env_ssd, NULL};
	struct node reader;
	struct waiting w = {.n = &reader, .cmd = "get cold 1048576 7"};
	uint64_t before;
	pthread_t th;

	cr_assert_eq(metaserver_start(&meta, late_meta_env), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
	snprintf(env_ssd, sizeof(env_ssd), "MMC_TEST_SSD_PATH=%s/ssd.bin", meta.dir);
	start_sized(&c->lender, 1, lender_env, 8ull << 20);
	start_with(&reader, 0, env);
	start_with(&c->other, 0, env);
	cr_assert_eq(CMD(&c->lender, "put cold 1048576 7"), 0, "%s", reply);
	cr_assert_eq(CMD(&c->lender, "evict cold"), 0, "%s", reply);
	cr_assert_neq(c->worker = thread_named(c->lender.pid, "mmc-ssd"), 0, "the lender's SSD worker");
	before = dram_used();
	if (!stall_thread(c->lender.pid, c->worker, SYS_futex)) /* idle: waiting for its next move */
		cr_skip_test("ptrace of a child's thread is not allowed here: %s", strerror(errno));
	cr_assert_eq(pthread_create(&th, NULL, waiting_main, &w), 0);
	/* the server reserves the read's DRAM and sends the move in one go: once it is reserved, the move is on its
	 * way, ahead of anything the lender reads after it */
	for (int i = 0; i < 500 && dram_used() < before + (1u << 20); i++)
		usleep(20000);
	cr_assert_geq(dram_used(), before + (1u << 20), "the get's read was asked for");
	kill(reader.pid, SIGKILL); /* and its get with it: the new server will not ask again */
	pthread_join(th, NULL);
	node_kill(&reader);
}

/* Whether no per-key code of a bput/bget reply is MISMATCH (99): keys that failed are no wrong bytes. */
static bool none_wrong(const char *r)
{
	char *end;

	for (long v = strtol(r, &end, 10); end != r; v = strtol(r, &end, 10)) {
		if (v == 99)
			return false;
		r = end;
	}
	return true;
}

/* Lets the worker's disk answer, and waits until the worker went past the old read. */
static void tier_release(struct tier_case *c)
{
	cr_assert_eq(ptrace(PTRACE_DETACH, c->worker, NULL, NULL), 0);
	/* the worker moves in order: once a later move is done, the old one has run, or been dropped */
	cr_assert_eq(CMD(&c->lender, "put probe 4096 3"), 0, "%s", reply);
	cr_assert_eq(CMD(&c->lender, "evict probe"), 0, "%s", reply);
}

static void tier_check(struct tier_case *c)
{
	fill_check(&c->other, 24, "the old read");
	cr_expect_eq(CMD(&c->other, "get cold 1048576 7"), 0, "the key itself is still read right: %s", reply);
	node_kill(&c->other);
	node_kill(&c->lender);
}

/*
 * A get of a key on the lender's SSD makes the meta server reserve DRAM on the lender and ask its SSD worker to
 * read the key there. The worker's disk hangs (the thread is stopped) while the meta server restarts; the new server
 * knows nothing of that reservation and, once the lender has rejoined, places other puts in its DRAM. When the disk
 * answers, the old read must not land: it used to, over one of those puts' bytes (wrong bytes, MMC_OK).
 */
Test(stall, a_move_the_lost_meta_server_asked_for_writes_nothing_after_it, .fini = stop, .timeout = 120)
{
	struct tier_case c;

	tier_start(&c);
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, late_meta_env), 0);
	fill(&c.other, 24); /* 6 of the lender's 8 MiB, once it rejoined */
	tier_release(&c);
	tier_check(&c);
}

/*
 * The same read, its disk hanging inside the read itself (the worker stopped as it enters pread): it cannot be
 * called back, so the lender rejoins the restarted server only once it has ended. Puts tried meanwhile find no room
 * there (they wait, then fail); none may take the read's range before it landed.
 */
Test(stall, a_move_in_progress_when_the_meta_server_is_lost_ends_before_the_lender_rejoins, .fini = stop,
     .timeout = 120)
{
	struct tier_case c;

	tier_start(&c);
	cr_assert(stall_at_syscall(c.worker, SYS_pread64, -1), "the worker never started the read");
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, late_meta_env), 0);
	usleep(500000); /* long enough for a rejoin and its grace (100 ms) */
	(void)CMD(&c.other, "bput early/ 24 %u 200", 256u << 10);
	cr_log_info("puts while the read hangs: %s", reply);
	tier_release(&c);
	(void)CMD(&c.other, "bget early/ 24 %u 200", 256u << 10);
	cr_expect(none_wrong(reply), "no put made while the read hung got wrong bytes: %s", reply);
	fill(&c.other, 24); /* 6 of the lender's 8 MiB, once it rejoined */
	tier_check(&c);
}

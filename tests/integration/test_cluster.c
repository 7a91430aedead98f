/*
 * Membership across processes: replicas that survive the kill -9 of one owner, local services that join and leave
 * while traffic runs, the world_size cap and stable service ids.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pattern.h"
#include "store_fixture.h"

static struct metaserver meta;
static char env_meta[128], reply[8192];
static const char *env[] = {env_meta, NULL};

#define CMD(n, ...) (node_cmd((n), reply, sizeof(reply), __VA_ARGS__), atoi(reply))

static void start_node(struct node *n, int lend)
{
	cr_assert_eq(node_start(n, env), 0);
	node_cmd(n, reply, sizeof(reply), "init %d %llu", lend, 32ull << 20);
	cr_assert_eq(atoi(reply), 0, "init: %s", reply);
}

static int node_rank(void)
{
	return atoi(strchr(reply, ' ') + 1);
}

static void start_meta(const char *const *extra)
{
	cr_assert_eq(metaserver_start(&meta, extra), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
}

static void stop(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

Test(cluster, replicas_survive_the_kill_of_one_owner, .fini = stop, .timeout = 90)
{
	struct node a, b, c, reader;
	unsigned long long size, blobs, loc[2], type[2];
	int rc, ra, rb, rc_rank;

	start_meta(NULL);
	start_node(&a, 1);
	ra = node_rank();
	start_node(&b, 1);
	rb = node_rank();
	start_node(&c, 1);
	rc_rank = node_rank();
	start_node(&reader, 0);
	/* two replicas, one of them on b */
	cr_assert_eq(CMD(&a, "put twin 300000 9 2 %d", rb), 0, "%s", reply);
	node_cmd(&reader, reply, sizeof(reply), "info twin");
	cr_assert_eq(
	    sscanf(reply, "%d %llu %llu %llu %llu %llu %llu", &rc, &size, &blobs, &loc[0], &type[0], &loc[1], &type[1]),
	    7, "%s", reply);
	cr_assert_eq(blobs, 2);
	cr_assert((int)loc[0] == rb || (int)loc[1] == rb);
	/* kill b: the other replica serves */
	node_kill(&b);
	for (int i = 0; i < 50; i++) {
		node_cmd(&reader, reply, sizeof(reply), "info twin");
		if (sscanf(reply, "%d %llu %llu", &rc, &size, &blobs) == 3 && blobs == 1)
			break;
		usleep(100000);
	}
	cr_assert_eq(blobs, 1, "b's replica is gone: %s", reply);
	cr_assert_eq(CMD(&reader, "get twin 300000 9"), 0);
	cr_assert_eq(CMD(&c, "get twin 300000 9"), 0);
	cr_assert_eq(CMD(&reader, "exist twin"), 1);
	(void)ra;
	(void)rc_rank;
	node_kill(&a);
	node_kill(&c);
	node_kill(&reader);
}

struct traffic {
	const char *url;
	atomic_bool stop;
	atomic_bool pause, paused;
	atomic_int ok, missing, other, rounds;
};

/* A client putting and getting batches while services come and go. */
static void *run_traffic(void *arg)
{
	struct traffic *t = arg;
	mmc_store *s = fixture_store(t->url, false, 0);
	char names[16][32], bufs[16][8192];
	const char *keys[16];
	void *pb[16];
	size_t sizes[16];
	int res[16];

	for (int round = 0; !atomic_load(&t->stop); round++) {
		atomic_store(&t->paused, atomic_load(&t->pause));
		if (atomic_load(&t->pause)) {
			usleep(1000);
			continue;
		}
		for (int i = 0; i < 16; i++) {
			snprintf(names[i], sizeof(names[i]), "t/%d/%d", round, i);
			keys[i] = names[i];
			pb[i] = bufs[i];
			sizes[i] = sizeof(bufs[i]);
			pattern_fill(bufs[i], sizeof(bufs[i]), (uint64_t)(round * 16 + i));
		}
		mmc_batch_put_from(s, keys, (const void *const *)pb, sizes, 16, MMC_COPY_H2G, NULL, res);
		memset(bufs, 0, sizeof(bufs));
		mmc_batch_get_into(s, keys, pb, sizes, 16, MMC_COPY_G2H, res);
		for (int i = 0; i < 16; i++) {
			if (res[i] == 0 && pattern_check(bufs[i], sizeof(bufs[i]), (uint64_t)(round * 16 + i)) == 8192)
				atomic_fetch_add(&t->ok, 1);
			else if (res[i] == MMC_OBJECT_NOT_EXISTS || res[i] == MMC_ERROR ||
			         res[i] == MMC_LINK_NOT_FOUND || res[i] == MMC_TIMEOUT)
				atomic_fetch_add(&t->missing, 1); /* its service just died (mid-transfer: a timeout) */
			else if (atomic_fetch_add(&t->other, 1) < 5)
				fprintf(stderr, "key %s: %d\n", keys[i], res[i]);
		}
		atomic_fetch_add(&t->rounds, 1);
	}
	mmc_destroy(s);
	return NULL;
}

/* Lets the traffic run `rounds` more rounds (or 20 s, on a loaded machine). */
static void wait_rounds(struct traffic *t, int rounds)
{
	int target = atomic_load(&t->rounds) + rounds;

	for (int i = 0; i < 2000 && atomic_load(&t->rounds) < target; i++)
		usleep(10000);
}

/* Polls (up to 10 s) until the meta server's log says it unmounted the service of that rank. */
static void unmounted(int rank)
{
	char line[64];

	snprintf(line, sizeof(line), "op=unmount rank=%d ", rank);
	for (int i = 0; i < 1000 && !metaserver_log_has(&meta, line); i++)
		usleep(10000);
	cr_assert(metaserver_log_has(&meta, line), "the meta server did not unmount rank %d", rank);
}

Test(cluster, services_join_and_leave_during_traffic, .fini = stop, .timeout = 120)
{
	struct node a, b, c, d;
	struct traffic t = {0};
	pthread_t th;
	int ra, rb, rc, rd;

	start_meta(NULL);
	start_node(&a, 1);
	ra = node_rank();
	start_node(&b, 1);
	rb = node_rank();
	start_node(&c, 1);
	rc = node_rank();
	cr_assert(ra != rb && rb != rc && ra != rc, "distinct ids %d %d %d", ra, rb, rc);
	t.url = meta.url;
	pthread_create(&th, NULL, run_traffic, &t);
	wait_rounds(&t, 10);
	/*
	 * libfabric 1.17's shm provider queues the answers of all peers in one ring per endpoint: an operation in
	 * flight to a process that dies blocks every later answer (docs/operations.md). So over shm the client is
	 * quiet at the instant of the kill; over tcp the kill lands mid-transfer.
	 */
	if (strcmp(getenv("MMC_PROTOCOL") ? getenv("MMC_PROTOCOL") : "", "host_shm") == 0) {
		atomic_store(&t.pause, true);
		while (!atomic_load(&t.paused))
			usleep(1000);
	}
	node_kill(&c);
	unmounted(rc); /* the meta server saw the connection drop: nothing is placed on c any more */
	atomic_store(&t.pause, false);
	wait_rounds(&t, 10);
	start_node(&d, 1); /* a new service joins mid-traffic */
	rd = node_rank();
	cr_assert(rd != ra && rd != rb, "a new service never takes a live service's id");
	cr_assert_eq(CMD(&b, "teardown"), 0, "a clean leave");
	wait_rounds(&t, 10);
	atomic_store(&t.stop, true);
	pthread_join(th, NULL);
	cr_log_info("rounds %d ok %d missing %d other %d", atomic_load(&t.rounds), atomic_load(&t.ok),
	            atomic_load(&t.missing), atomic_load(&t.other));
	cr_assert_eq(atomic_load(&t.other), 0, "no wrong bytes, no unexpected errors");
	cr_assert_gt(atomic_load(&t.ok), 16 * 20);
	/* what a wrote is still there after the others came and went */
	cr_assert_eq(CMD(&a, "put keep 5000 4"), 0);
	cr_assert_eq(CMD(&d, "get keep 5000 4"), 0);
	node_kill(&a);
	node_kill(&b);
	node_kill(&d);
}

Test(cluster, world_size_caps_the_services, .fini = stop, .timeout = 60)
{
	const char *cap[] = {"ock.mmc.meta.world_size=2", NULL};
	struct node a, b, c;
	int ra, rb;

	start_meta(cap);
	start_node(&a, 1);
	ra = node_rank();
	start_node(&b, 1);
	rb = node_rank();
	cr_assert_eq(node_start(&c, env), 0);
	node_cmd(&c, reply, sizeof(reply), "init 1 %llu", 32ull << 20);
	cr_assert_eq(atoi(reply), MMC_EXCEED_CAPACITY, "a third service: %s", reply);
	node_cmd(&c, reply, sizeof(reply), "init 0");
	cr_assert_eq(atoi(reply), 0, "client-only stores do not count: %s", reply);
	node_kill(&c);
	cr_assert_eq(CMD(&b, "teardown"), 0);
	start_node(&c, 1);
	cr_assert_neq(node_rank(), ra, "not the live service's id");
	(void)rb;
	node_kill(&a);
	node_kill(&b);
	node_kill(&c);
}

/*
 * A server started (or restarted) after a piped child must not inherit that child's stdin: mmc-bench stops its
 * targets by closing their stdin, and bench_cluster_stop waited forever after a server restart.
 */
Test(cluster, a_later_server_does_not_hold_a_childs_stdin, .fini = stop, .timeout = 30)
{
	char *argv[] = {"/bin/cat", NULL}, c;
	int to_child, from_child;
	pid_t pid = proc_spawn_piped(argv[0], argv, environ, &to_child, &from_child);
	struct pollfd p;
	int ready;

	cr_assert_gt(pid, 0);
	start_meta(NULL);
	close(to_child);
	/* cat sees EOF, exits, and its stdout (our from_child) reads EOF in turn */
	p = (struct pollfd){.fd = from_child, .events = POLLIN};
	ready = poll(&p, 1, 5000);
	if (ready != 1)
		kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert_eq(ready, 1, "cat did not see EOF on its stdin within 5 s");
	cr_assert_eq(read(from_child, &c, 1), 0);
	close(from_child);
}

/*
 * The same-host path: a local service's pool is a shared file that other processes on the host map and copy with
 * memcpy, whatever network provider either side uses. Owners are mmc-test-node processes; the reader is this
 * process (public API only). Run once per protocol; with MMC_HOST_PATH=off (the stand-in for two hosts) the same
 * gets and puts go over the network provider, and the checks that only the host path can pass are skipped.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pattern.h"
#include "store_fixture.h"

#define NKEYS    16
#define KEY_SIZE ((size_t)1 << 20)
#define MISMATCH 99

static struct metaserver meta;
static char env_meta[128], reply[8192];
static const char *env[] = {env_meta, NULL};

#define CMD(n, ...) (node_cmd((n), reply, sizeof(reply), __VA_ARGS__), atoi(reply))

static bool host_path_on(void)
{
	const char *v = getenv("MMC_HOST_PATH");

	return !v || (strcmp(v, "off") && strcmp(v, "0") && strcmp(v, "false"));
}

static const char *my_protocol(void)
{
	return getenv("MMC_PROTOCOL") ? getenv("MMC_PROTOCOL") : "host_tcp";
}

/* With the host path, owners use the other provider: only the host path connects the two. */
static const char *owner_protocol(void)
{
	if (!host_path_on())
		return my_protocol();
	return strcmp(my_protocol(), "host_shm") == 0 ? "host_tcp" : "host_shm";
}

static void start(void)
{
	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", meta.url);
}

static void stop(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(host_path, .init = start, .fini = stop, .timeout = 120);

/* An owner process lending `pool` bytes over `protocol`; returns its rank. */
static int start_owner(struct node *n, const char *protocol, unsigned long long pool)
{
	char *saved = strdup(my_protocol());

	setenv("MMC_PROTOCOL", protocol, 1); /* the child's environment is ours plus extras, ours first */
	cr_assert_eq(node_start(n, env), 0);
	setenv("MMC_PROTOCOL", saved, 1);
	free(saved);
	node_cmd(n, reply, sizeof(reply), "init 1 %llu", pool);
	cr_assert_eq(atoi(reply), 0, "init: %s", reply);
	return atoi(strchr(reply, ' ') + 1);
}

/* The owner's pool file under /dev/shm or /dev/hugepages, or "" when it has none. */
static void pool_file_of(pid_t pid, char *out, size_t len)
{
	static const char *const dirs[] = {"/dev/shm", "/dev/hugepages"};
	char prefix[64];

	out[0] = '\0';
	snprintf(prefix, sizeof(prefix), "mmc-pool.%d.", (int)pid);
	for (size_t i = 0; i < 2 && !out[0]; i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
				snprintf(out, len, "%s/%s", dirs[i], e->d_name);
		if (d)
			closedir(d);
	}
}

static bool mapped_here(const char *path)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	bool found = false;

	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, path) != NULL;
	if (f)
		fclose(f);
	return found;
}

struct batch {
	char *keys[NKEYS];
	void *bufs[NKEYS];
	size_t sizes[NKEYS];
	int res[NKEYS];
};

static void batch_init(struct batch *b, const char *prefix, uint64_t seed, bool fill)
{
	for (int i = 0; i < NKEYS; i++) {
		b->keys[i] = malloc(64);
		snprintf(b->keys[i], 64, "%s%d", prefix, i);
		b->bufs[i] = calloc(1, KEY_SIZE);
		b->sizes[i] = KEY_SIZE;
		if (fill)
			pattern_fill(b->bufs[i], KEY_SIZE, seed + (uint64_t)i);
	}
}

static void batch_fini(struct batch *b)
{
	for (int i = 0; i < NKEYS; i++) {
		free(b->keys[i]);
		free(b->bufs[i]);
	}
}

static atomic_int wrong_bytes; /* keys that came back MMC_OK with bytes not their own: must stay 0 */

/* Gets the batch; counts keys that came back right, and in wrong_bytes those that came back wrong. Any thread. */
static int batch_get_checked(mmc_store *s, struct batch *b, uint64_t seed)
{
	int ok = 0;

	for (int i = 0; i < NKEYS; i++)
		memset(b->bufs[i], 0, KEY_SIZE);
	if (mmc_batch_get_into(s, (const char *const *)b->keys, b->bufs, b->sizes, NKEYS, MMC_COPY_G2H, b->res))
		return -1;
	for (int i = 0; i < NKEYS; i++) {
		if (b->res[i])
			continue;
		if (pattern_check(b->bufs[i], KEY_SIZE, seed + (uint64_t)i) != KEY_SIZE)
			atomic_fetch_add(&wrong_bytes, 1);
		else
			ok++;
	}
	return ok;
}

Test(host_path, the_pool_is_a_private_file_removed_when_its_owner_leaves)
{
	struct node o;
	char path[512];
	struct stat st;

	start_owner(&o, owner_protocol(), 32ull << 20);
	pool_file_of(o.pid, path, sizeof(path));
	if (!host_path_on()) {
		cr_expect_str_empty(path, "with the host path off the pool stays private memory");
		node_stop(&o);
		return;
	}
	cr_assert_str_not_empty(path, "the owner's pool is a named shared file");
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
	cr_expect_geq((unsigned long long)st.st_size, 32ull << 20);
	cr_assert_eq(CMD(&o, "teardown"), 0);
	cr_expect_neq(stat(path, &st), 0, "the file is removed when the owner unregisters");
	node_stop(&o);
}

Test(host_path, a_killed_owners_file_is_removed_by_the_next_owner)
{
	struct node a, b;
	char path[512];
	struct stat st;

	if (!host_path_on())
		cr_skip_test("the host path is off");
	start_owner(&a, owner_protocol(), 32ull << 20);
	pool_file_of(a.pid, path, sizeof(path));
	cr_assert_str_not_empty(path);
	node_kill(&a);
	cr_assert_eq(stat(path, &st), 0, "SIGKILL leaves the file behind");
	start_owner(&b, owner_protocol(), 32ull << 20);
	cr_expect_neq(stat(path, &st), 0, "the next owner on the host removed the leftover");
	node_stop(&b);
}

/*
 * The path an owner registered may name another pool where this process looks it up: /proc/PID/fd/N in another PID
 * namespace (containers on one kernel, host networking: same boot id, same host name). Played here by moving one
 * owner's pool file over the other's name. The reader sees the other pool's key and goes by the network (with
 * host_shm, which has none, the keys fail: never the other pool's bytes).
 */
Test(host_path, a_pool_path_naming_another_pool_is_not_used)
{
	struct node a, b;
	char pa[512], pb[512];
	mmc_store *w = fixture_store(meta.url, false, 0), *s;
	struct batch bt;
	int rb;

	if (!host_path_on())
		cr_skip_test("the host path is off");
	start_owner(&a, my_protocol(), 32ull << 20);
	rb = start_owner(&b, my_protocol(), 32ull << 20);
	pool_file_of(a.pid, pa, sizeof(pa));
	pool_file_of(b.pid, pb, sizeof(pb));
	if (!pa[0] || !pb[0])
		cr_skip_test("the pools are memfds: no file to move");
	mmc_replicate_config rc = {.replica_num = 1, .preferred_count = 1, .preferred_local_service_ids = {rb}};
	batch_init(&bt, "named/", 31, true);
	cr_assert_eq(mmc_batch_put_from(w, (const char *const *)bt.keys, (const void *const *)bt.bufs, bt.sizes, NKEYS,
	                                MMC_COPY_H2G, &rc, bt.res),
	             0);
	mmc_destroy(w);
	cr_assert_eq(rename(pa, pb), 0); /* b's name now opens a's pool */
	s = fixture_store(meta.url, false, 0);
	if (strcmp(my_protocol(), "host_shm") == 0) /* no network provider to fall back on: the keys fail */
		cr_assert_eq(batch_get_checked(s, &bt, 31), 0, "b's keys came from a's pool");
	else
		cr_assert_eq(batch_get_checked(s, &bt, 31), NKEYS, "b's keys are read, over the network");
	cr_assert_eq(atomic_load(&wrong_bytes), 0);
	cr_assert_not(mapped_here(pb), "a's pool stays mapped under b's name");
	batch_fini(&bt);
	mmc_destroy(s);
	node_stop(&b); /* removes its name, a's file now */
	node_stop(&a);
}

/* Puts and gets both ways between this process and an owner with another network provider, byte-exact. */
Test(host_path, same_host_processes_with_different_providers_exchange_data)
{
	struct node o;
	mmc_store *s = fixture_store(meta.url, false, 0);
	struct batch b;
	char *layers[4];
	size_t lsz[4] = {100000, 1, 300000, KEY_SIZE - 400001};
	int rank = start_owner(&o, owner_protocol(), 64ull << 20);
	mmc_replicate_config rc = {.replica_num = 1, .preferred_count = 1, .preferred_local_service_ids = {rank}};

	batch_init(&b, "mixed/", 7, true);
	cr_assert_eq(mmc_batch_put_from(s, (const char *const *)b.keys, (const void *const *)b.bufs, b.sizes, NKEYS,
	                                MMC_COPY_H2G, &rc, b.res),
	             0);
	for (int i = 0; i < NKEYS; i++)
		cr_assert_eq(b.res[i], 0, "put %d: %s", i, mmc_strerror(b.res[i]));
	cr_assert_eq(CMD(&o, "bget mixed/ %d %zu 7", NKEYS, KEY_SIZE), 0, "%s", reply);
	cr_assert_eq(strspn(reply, "0 "), strlen(reply), "the owner reads what we wrote: %s", reply);
	cr_assert_eq(CMD(&o, "bput owned/ %d %zu 21", NKEYS, KEY_SIZE), 0, "%s", reply);
	batch_fini(&b);
	batch_init(&b, "owned/", 21, false);
	cr_assert_eq(batch_get_checked(s, &b, 21), NKEYS);
	cr_assert_eq(atomic_load(&wrong_bytes), 0);
	/* a layer list, split differently from the put */
	for (int l = 0; l < 4; l++)
		layers[l] = malloc(lsz[l]);
	cr_assert_eq(mmc_get_into_layers(s, "owned/3", (void *const *)layers, lsz, 4, MMC_COPY_G2H), 0);
	memset(b.bufs[0], 0, KEY_SIZE);
	for (size_t l = 0, off = 0; l < 4; off += lsz[l], l++) {
		memcpy((char *)b.bufs[0] + off, layers[l], lsz[l]);
		free(layers[l]);
	}
	cr_expect_eq(pattern_check(b.bufs[0], KEY_SIZE, 24), KEY_SIZE, "the layers hold the object in order");
	batch_fini(&b);
	mmc_destroy(s);
	node_stop(&o);
}

struct reader {
	mmc_store *s;
	atomic_bool stop;
	atomic_int rounds; /* polled by the test while the reader runs */
	int ok, failed;
};

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	struct batch b;

	batch_init(&b, "victim/", 40, false);
	while (!atomic_load(&r->stop)) {
		int ok = batch_get_checked(r->s, &b, 40);

		r->rounds++;
		if (ok < 0)
			continue;
		r->ok += ok;
		r->failed += NKEYS - ok;
		if (ok == 0 && r->failed)
			break; /* every key now fails cleanly */
	}
	batch_fini(&b);
	return NULL;
}

/*
 * The owner is killed while this process reads its keys in a loop of batches: every key either comes back with its
 * own bytes or fails with an error, the reader never crashes, and once the owner's gone nothing reads. A new owner
 * (a new incarnation) then holds new bytes under the same keys, and only those are read.
 */
Test(host_path, an_owner_killed_mid_batch_fails_its_keys_cleanly, .timeout = 180)
{
	struct node o, o2;
	mmc_store *s = fixture_store(meta.url, false, 0);
	struct reader r = {.s = s};
	pthread_t t;
	struct batch b;
	int rank = start_owner(&o, owner_protocol(), 64ull << 20);

	cr_assert_eq(CMD(&o, "bput victim/ %d %zu 40", NKEYS, KEY_SIZE), 0, "%s", reply);
	batch_init(&b, "victim/", 40, false);
	cr_assert_eq(batch_get_checked(s, &b, 40), NKEYS, "before the kill every key reads");
	pthread_create(&t, NULL, read_loop, &r);
	for (int i = 0; i < 1000 && atomic_load(&r.rounds) == 0; i++) /* the kill lands amid the reads */
		usleep(1000);
	node_kill(&o);
	pthread_join(t, NULL);
	cr_expect_gt(r.failed, 0, "the keys of the killed owner fail (%d rounds, %d ok)", atomic_load(&r.rounds), r.ok);
	cr_assert_eq(atomic_load(&wrong_bytes), 0, "no key reads MMC_OK with bytes that are not its own");
	/* a new incarnation of the owner, with other bytes under the same keys */
	start_owner(&o2, owner_protocol(), 64ull << 20);
	(void)rank;
	cr_assert_eq(CMD(&o2, "bput victim/ %d %zu 90", NKEYS, KEY_SIZE), 0, "%s", reply);
	cr_expect_eq(batch_get_checked(s, &b, 90), NKEYS, "the new incarnation's bytes, and only those");
	cr_expect_eq(atomic_load(&wrong_bytes), 0);
	batch_fini(&b);
	mmc_destroy(s);
	node_stop(&o2);
}

/* A GVA copy from a pool whose owner was killed after the lease was granted fails; it never reads or crashes. */
Test(host_path, a_gva_copy_from_a_killed_owner_fails)
{
	struct node o;
	mmc_store *s = fixture_store(meta.url, false, 0);
	const char *k[1] = {"gva/0"};
	mmc_key_info info;
	int res[1];
	void *buf = calloc(1, KEY_SIZE);
	size_t size = KEY_SIZE;

	start_owner(&o, owner_protocol(), 32ull << 20);
	cr_assert_eq(CMD(&o, "put gva/0 %zu 5", KEY_SIZE), 0, "%s", reply);
	cr_assert_eq(mmc_get_key_info(s, k[0], 0, &info), 0);
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 30000, res), 0);
	cr_assert_eq(res[0], 0);
	cr_assert_eq(mmc_batch_copy(s, &info.gva[0], &buf, &size, 1, MMC_COPY_G2H, 0), 0, "the owner is alive");
	cr_assert_eq(pattern_check(buf, KEY_SIZE, 5), KEY_SIZE);
	node_kill(&o);
	memset(buf, 0, KEY_SIZE);
	cr_expect_neq(mmc_batch_copy(s, &info.gva[0], &buf, &size, 1, MMC_COPY_G2H, 0), 0,
	              "no copy from a dead owner's pool");
	free(buf);
	mmc_destroy(s);
}

/* A get whose copy outlives its lease reports MMC_LEASE_EXPIRED, on the host path as over the network. */
Test(host_path, a_reader_whose_lease_expires_gets_lease_expired)
{
	struct node o;
	mmc_local_config c = fixture_config(meta.url, 0);
	mmc_store *s = mmc_create();
	size_t big = (size_t)48 << 20;
	void *buf = malloc(big);

	c.lease_ttl_ms = 1; /* shorter than any 48 MiB copy */
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, false), 0);
	start_owner(&o, owner_protocol(), 64ull << 20);
	cr_assert_eq(CMD(&o, "put big %zu 3", big), 0, "%s", reply);
	cr_expect_eq(mmc_get_into(s, "big", buf, big, MMC_COPY_G2H), MMC_LEASE_EXPIRED);
	free(buf);
	mmc_destroy(s);
	node_stop(&o);
}

/* A reader lets go of a pool whose owner left: the gone process's memory is not kept alive by its mapping. */
Test(host_path, a_reader_unmaps_the_pool_of_an_owner_that_left)
{
	struct node o;
	mmc_store *s = fixture_store(meta.url, false, 0);
	char path[512];
	int left = 50;

	if (!host_path_on())
		cr_skip_test("the host path is off");
	start_owner(&o, owner_protocol(), 32ull << 20);
	pool_file_of(o.pid, path, sizeof(path));
	cr_assert_eq(CMD(&o, "put here 4096 1"), 0, "%s", reply);
	cr_assert_eq(fixture_get(s, "here", 4096, 1), 0);
	cr_assert(mapped_here(path), "the reader mapped the owner's pool");
	node_kill(&o);
	while (mapped_here(path) && left--) {
		fixture_get(s, "here", 4096, 1); /* any transfer call sweeps gone owners */
		usleep(100000);
	}
	cr_expect_not(mapped_here(path), "the reader unmapped the pool of its killed owner");
	cr_expect_neq(access(path, F_OK), 0, "and removed the file the killed owner left");
	mmc_destroy(s);
}

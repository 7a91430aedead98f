/*
 * Tenants (ock.mmc.meta.tenants_file): a tenant is the secret its store proves, its keys a namespace no other
 * tenant's call reaches (every key call of the C API tried across them), its quota held under a burst while the
 * other tenant's objects stay, and the default tenant as a single-tenant cluster always had it.
 */
#include <criterion/criterion.h>
#include <mmc/mmc.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"
#include "raw_rpc.h"
#include "store_conf.h"

#define CLUSTER "cluster-secret-0123456789abcdef"
#define ALPHA   "alpha-secret-0123456789abcdef"
#define BETA    "beta-secret-0123456789abcdef00"
#define OBJ     4096

static struct metaserver meta;
static char cluster_file[64], alpha_file[64], beta_file[64], tenants_file[64];

static void fini(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
	unlink(cluster_file);
	unlink(alpha_file);
	unlink(beta_file);
	unlink(tenants_file);
}

TestSuite(tenants, .fini = fini, .timeout = 180);

/* The server with the cluster secret and the tenants alpha and beta; quotas holds alpha's (e.g. max_objects=8). */
static void start(const char *quotas)
{
	static char env_token[128], env_tenants[128];
	const char *extra[] = {env_token, env_tenants, NULL};
	char lines[512];

	conf_write_file(cluster_file, CLUSTER "\n");
	conf_write_file(alpha_file, ALPHA "\n");
	conf_write_file(beta_file, BETA "\n");
	snprintf(lines, sizeof(lines), "# name secret_file quotas\nalpha %s %s\nbeta %s\n", alpha_file, quotas,
	         beta_file);
	conf_write_file(tenants_file, lines); /* mkstemp: mode 0600 */
	snprintf(env_token, sizeof(env_token), "ock.mmc.meta.auth_token_file=%s", cluster_file);
	snprintf(env_tenants, sizeof(env_tenants), "ock.mmc.meta.tenants_file=%s", tenants_file);
	cr_assert_eq(metaserver_start(&meta, extra), 0);
}

/* A store of tenant (NULL: the default tenant) proving the secret in file. */
static int open_as(const char *tenant, const char *file, bool lend, mmc_store **s)
{
	char lines[256];

	snprintf(lines, sizeof(lines), "%s%s%sock.mmc.client.auth_token_file = %s\n",
	         tenant ? "ock.mmc.client.tenant = " : "", tenant ? tenant : "", tenant ? "\n" : "", file);
	return store_open(meta.url, lines, lend, s);
}

static mmc_store *store_as(const char *tenant, const char *file, bool lend)
{
	mmc_store *s = NULL;

	cr_assert_eq(open_as(tenant, file, lend, &s), 0, "a store of tenant %s", tenant ? tenant : "default");
	return s;
}

static void put(mmc_store *s, const char *key, char fill)
{
	char buf[OBJ];

	memset(buf, fill, sizeof(buf));
	cr_assert_eq(mmc_put_from(s, key, buf, sizeof(buf), MMC_COPY_H2G, NULL), 0, "put %s", key);
}

/* The first byte of key's object as s reads it, or the get's code. */
static int get(mmc_store *s, const char *key)
{
	char buf[OBJ];
	int rc = mmc_get_into(s, key, buf, sizeof(buf), MMC_COPY_G2H);

	return rc ? rc : buf[0];
}

/* The value of `name{tenant="t"} N` on the admin port's /metrics; -1 when absent. */
static long long metric(const char *name, const char *tenant)
{
	char cmd[512], line[128] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "curl -sf http://127.0.0.1:%u/metrics | grep -F '%s{tenant=\"%s\"} '",
	         meta.admin_port, name, tenant);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (!fgets(line, sizeof(line), p))
		line[0] = '\0';
	pclose(p);
	return line[0] ? atoll(strrchr(line, ' ') + 1) : -1;
}

/* Every call of the C API that names a key, by other (another tenant's store) on key, which only owner holds. */
static void unreachable(mmc_store *other, mmc_store *owner, const char *key, char fill)
{
	const char *keys[1] = {key};
	char buf[OBJ];
	void *bufs[1] = {buf};
	size_t sizes[1] = {OBJ}, landed = 9;
	int results[1] = {7}, wr[1] = {0};
	mmc_key_info info[1];
	mmc_gva gva[1] = {0};
	uint64_t removed = 9;

	cr_assert_eq(get(other, key), MMC_OBJECT_NOT_EXISTS, "get");
	cr_assert_eq(mmc_is_exist(other, key), 0, "exist");
	cr_assert_eq(mmc_batch_is_exist(other, keys, 1, results), 0);
	cr_assert_eq(results[0], 0, "batch exist");
	cr_assert_eq(mmc_batch_get_into(other, keys, bufs, sizes, 1, MMC_COPY_G2H, results), 0);
	cr_assert_eq(results[0], MMC_OBJECT_NOT_EXISTS, "batch get");
	cr_assert_eq(mmc_get_key_info(other, key, 0, &info[0]), 0);
	cr_assert_eq(info[0].size, 0, "key info");
	cr_assert_eq(mmc_batch_get_key_info(other, keys, 1, 0, info), 0);
	cr_assert_eq(info[0].size, 0, "batch key info");
	cr_assert_eq(mmc_batch_get_into_prefix(other, keys, bufs, sizes, 1, MMC_COPY_G2H, 5000, &landed), 0);
	cr_assert_eq(landed, 0, "prefix read");
	cr_assert_eq(mmc_batch_add_lease(other, keys, 1, 60000, results), 0);
	cr_assert_eq(results[0], MMC_OBJECT_NOT_EXISTS, "lease");
	cr_assert_neq(mmc_batch_remove_lease(other, keys, 1), 0, "a lease release of a key it has no lease on");
	cr_assert_neq(mmc_evict_keys(other, keys, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0, "evict");
	cr_assert_eq(mmc_remove(other, key), MMC_OBJECT_NOT_EXISTS, "remove");
	cr_assert_eq(mmc_batch_remove(other, keys, 1, results), 0);
	cr_assert_eq(results[0], MMC_OBJECT_NOT_EXISTS, "batch remove");
	cr_assert_eq(mmc_remove_by_regex(other, key, &removed), 0);
	cr_assert_eq(removed, 0, "regex remove");
	/* a GVA allocation of the same name is a new object of its own namespace, not the owner's address */
	cr_assert_eq(mmc_get_key_info(owner, key, 0, &info[0]), 0);
	cr_assert_eq(mmc_batch_malloc(other, keys, sizes, 1, MMC_MEDIA_DRAM, 0, gva), 0);
	cr_assert_neq(gva[0], 0, "malloc");
	cr_assert_neq(gva[0], info[0].gva[0], "malloc handed out the owner's object");
	wr[0] = 1; /* dropped: nothing is published */
	cr_assert_eq(mmc_batch_write_finish(other, keys, wr, 1, results), 0);
	cr_assert_eq(get(owner, key), fill, "the owner's object after all of the other's calls");
}

Test(tenants, no_call_reaches_another_tenants_keys)
{
	mmc_store *d, *a, *b;
	uint64_t removed = 0;

	start("");
	d = store_as(NULL, cluster_file, true); /* the pool */
	a = store_as("alpha", alpha_file, true);
	b = store_as("beta", beta_file, false);
	/* one name, three objects */
	put(d, "shared", 'd');
	put(a, "shared", 'a');
	put(b, "shared", 'b');
	cr_assert_eq(get(d, "shared"), 'd');
	cr_assert_eq(get(a, "shared"), 'a');
	cr_assert_eq(get(b, "shared"), 'b');
	put(a, "a/only", 'A');
	put(b, "b/only", 'B');
	put(d, "d/only", 'D');
	unreachable(b, a, "a/only", 'A');
	unreachable(d, a, "a/only", 'A');
	unreachable(a, b, "b/only", 'B');
	unreachable(a, d, "d/only", 'D');
	unreachable(b, d, "d/only", 'D');
	/* a pattern matches the key as its store wrote it, and only that tenant's: an anchored one too */
	cr_assert_eq(mmc_remove_by_regex(a, "^a/", &removed), 0);
	cr_assert_eq(removed, 1);
	cr_assert_eq(mmc_remove_all(b, &removed), 0);
	cr_assert_eq(removed, 2, "beta's remove_all: its own two");
	cr_assert_eq(get(a, "shared"), 'a');
	cr_assert_eq(mmc_remove_all(d, &removed), 0);
	cr_assert_eq(removed, 2, "the default tenant's remove_all: its own two");
	cr_assert_eq(get(a, "shared"), 'a', "a tenant's object after the default tenant's remove_all");
	cr_assert_eq(metric("mmc_tenant_objects", "alpha"), 1);
	cr_assert_eq(metric("mmc_tenant_objects", "beta"), 0);
	cr_assert_eq(metric("mmc_tenant_objects", "default"), 0);
	mmc_destroy(b);
	mmc_destroy(a);
	mmc_destroy(d);
}

Test(tenants, the_secret_names_the_tenant)
{
	mmc_store *s;
	char buf[OBJ] = {0};

	start("");
	cr_assert_eq(open_as("alpha", beta_file, false, &s), MMC_NOT_AUTHORIZED, "alpha named with beta's secret");
	mmc_destroy(s);
	cr_assert_eq(open_as("alpha", cluster_file, false, &s), MMC_NOT_AUTHORIZED, "alpha named with the cluster's");
	mmc_destroy(s);
	cr_assert_eq(open_as("gamma", alpha_file, false, &s), MMC_NOT_AUTHORIZED, "a tenant the server has not");
	mmc_destroy(s);
	cr_assert_eq(open_as(NULL, alpha_file, false, &s), MMC_NOT_AUTHORIZED, "alpha's secret as the cluster's");
	mmc_destroy(s);
	cr_assert(!metaserver_log_has(&meta, ALPHA), "a tenant's secret is in the server's log");
	/* the default tenant may not name a key inside the tenants' tag space */
	s = store_as(NULL, cluster_file, true);
	cr_assert_eq(mmc_put_from(s,
	                          "\xff"
	                          "alpha\xff"
	                          "x",
	                          buf, sizeof(buf), MMC_COPY_H2G, NULL),
	             MMC_INVALID_PARAM);
	mmc_destroy(s);
}

/* A tenant's keys are stored after its tag (0xFF alpha 0xFF: 7 bytes), so alpha's longest key is 248 bytes: a longer
 * one fails the whole call, as any bad key does, instead of alone at the server while the rest is stored. */
Test(tenants, a_key_too_long_for_the_tenant_s_tag_fails_its_call)
{
	char longest[MMC_KEY_MAX + 1], over[MMC_KEY_MAX + 1], buf[OBJ] = {0};
	const char *keys[] = {"short", over};
	const void *bufs[] = {buf, buf};
	size_t sizes[] = {OBJ, OBJ};
	int results[2];
	mmc_store *s;

	start("");
	s = store_as("alpha", alpha_file, true);
	memset(longest, 'k', MMC_KEY_MAX - 7);
	longest[MMC_KEY_MAX - 7] = '\0';
	memset(over, 'o', MMC_KEY_MAX - 6);
	over[MMC_KEY_MAX - 6] = '\0';
	put(s, longest, 3);
	cr_assert_eq(get(s, longest), 3);
	cr_assert_eq(mmc_batch_put_from(s, keys, bufs, sizes, 2, MMC_COPY_H2G, NULL, results), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_is_exist(s, "short"), 0, "a batch with a bad key stores nothing");
	cr_assert_eq(mmc_is_exist(s, over), MMC_INVALID_PARAM);
	mmc_destroy(s);
}

Test(tenants, a_burst_stays_inside_its_quota)
{
	mmc_store *d, *a, *b;
	char key[32];
	const char *keys[8];
	int results[8];

	start("max_objects=8 max_bytes=64KB");
	d = store_as(NULL, cluster_file, true);
	a = store_as("alpha", alpha_file, false);
	b = store_as("beta", beta_file, false);
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "beta/%d", i);
		put(b, key, 'b');
	}
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "alpha/%d", i);
		put(a, key, 'a'); /* the quota evicts alpha's oldest */
		cr_assert_leq(metric("mmc_tenant_objects", "alpha"), 8, "after put %d", i);
	}
	cr_assert_eq(get(a, "alpha/99"), 'a', "the newest stays");
	cr_assert_eq(mmc_is_exist(a, "alpha/0"), 0, "the oldest went");
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "beta/%d", i);
		cr_assert_eq(get(b, key), 'b', "beta's %s after alpha's burst", key);
	}
	cr_assert_geq(metric("mmc_tenant_quota_evictions_total", "alpha"), 92);
	cr_assert_eq(metric("mmc_tenant_quota_evictions_total", "beta"), 0);
	/* with every object of alpha's leased, nothing of it may go: the quota refuses */
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "alpha/%d", 92 + i);
		keys[i] = strdup(key);
	}
	cr_assert_eq(mmc_batch_add_lease(a, keys, 8, 60000, results), 0);
	{
		char buf[OBJ] = {0};

		cr_assert_eq(mmc_put_from(a, "alpha/refused", buf, sizeof(buf), MMC_COPY_H2G, NULL),
		             MMC_NOT_ENOUGH_MEMORY);
		/* and a GVA allocation (placed by the allocation queue, not in an extent) */
		const char *gkey[1] = {"alpha/gva"};
		size_t gsize[1] = {OBJ};
		mmc_gva gva[1] = {1};

		cr_assert_eq(mmc_batch_malloc(a, gkey, gsize, 1, MMC_MEDIA_DRAM, 0, gva), 0);
		cr_assert_eq(gva[0], 0, "a GVA allocation past the quota");
		cr_assert_eq(mmc_batch_remove_lease(a, keys, 8), 0);
	}
	cr_assert_geq(metric("mmc_tenant_refused_total", "alpha"), 1);
	cr_assert_eq(metric("mmc_tenant_objects", "beta"), 8);
	for (int i = 0; i < 8; i++)
		free((void *)keys[i]);
	mmc_destroy(b);
	mmc_destroy(a);
	mmc_destroy(d);
}

Test(tenants, a_restart_keeps_namespaces_and_counts)
{
	static char env_token[128], env_tenants[128];
	const char *extra[] = {env_token, env_tenants, NULL};
	mmc_store *d, *a, *b;

	start("");
	d = store_as(NULL, cluster_file, true);
	a = store_as("alpha", alpha_file, false);
	put(a, "kept", 'a');
	put(a, "kept/2", 'a');
	cr_assert_eq(metaserver_stop(&meta), 0);
	snprintf(env_token, sizeof(env_token), "ock.mmc.meta.auth_token_file=%s", cluster_file);
	snprintf(env_tenants, sizeof(env_tenants), "ock.mmc.meta.tenants_file=%s", tenants_file);
	cr_assert_eq(metaserver_restart(&meta, extra), 0);
	for (int i = 0; i < 100 && mmc_is_exist(a, "kept") != 1; i++) /* the pool's service rejoins */
		usleep(50000);
	cr_assert_eq(get(a, "kept"), 'a', "alpha's object after the restart");
	cr_assert_eq(metric("mmc_tenant_objects", "alpha"), 2, "alpha's count rebuilt by the load");
	b = store_as("beta", beta_file, false);
	cr_assert_eq(mmc_is_exist(b, "kept"), 0);
	cr_assert_eq(mmc_is_exist(d, "kept"), 0);
	mmc_destroy(b);
	mmc_destroy(a);
	mmc_destroy(d);
}

/* Rewrites the running server's tenants file with text and has it read again (SIGHUP). */
static void reload_tenants(const char *text, int nth);

/* A tenant left out of the file at a restart and configured again by a reload: its kept objects count in its quota
 * from then on. They were counted nowhere, and a remove of one took the count below zero (2^64 - 1: every later
 * put refused). */
Test(tenants, a_tenant_configured_again_counts_its_kept_objects)
{
	static char env_token[128], env_tenants[128];
	const char *extra[] = {env_token, env_tenants, NULL};
	char lines[256];
	mmc_store *d, *a = NULL;

	start("max_objects=4");
	d = store_as(NULL, cluster_file, true);
	a = store_as("alpha", alpha_file, false);
	put(a, "kept", 'a');
	mmc_destroy(a);
	snprintf(lines, sizeof(lines), "beta %s\n", beta_file);
	conf_write_file(tenants_file, lines);
	cr_assert_eq(metaserver_stop(&meta), 0);
	snprintf(env_token, sizeof(env_token), "ock.mmc.meta.auth_token_file=%s", cluster_file);
	snprintf(env_tenants, sizeof(env_tenants), "ock.mmc.meta.tenants_file=%s", tenants_file);
	cr_assert_eq(metaserver_restart(&meta, extra), 0, "the server without alpha");
	snprintf(lines, sizeof(lines), "beta %s\nalpha %s max_objects=4\n", beta_file, alpha_file);
	reload_tenants(lines, 2);
	for (int i = 0; i < 100 && open_as("alpha", alpha_file, false, &a) != 0; i++) {
		mmc_destroy(a);
		usleep(50000);
	}
	for (int i = 0; i < 100 && mmc_is_exist(a, "kept") != 1; i++) /* the pool's service rejoins */
		usleep(50000);
	cr_assert_eq(metric("mmc_tenant_objects", "alpha"), 1, "its kept object counts again");
	cr_assert_eq(mmc_remove(a, "kept"), 0);
	cr_assert_eq(metric("mmc_tenant_objects", "alpha"), 0, "and leaves the count when removed");
	put(a, "after", 'n');
	cr_assert_eq(metric("mmc_tenant_objects", "alpha"), 1);
	mmc_destroy(a);
	mmc_destroy(d);
}

static void reload_tenants(const char *text, int nth)
{
	char needle[64];
	FILE *f = fopen(tenants_file, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(kill(meta.pid, SIGHUP), 0);
	snprintf(needle, sizeof(needle), "op=reload key=ock.mmc.meta.tenants_file tenants_known=%d", nth);
	for (int i = 0; i < 100 && !metaserver_log_has(&meta, needle); i++)
		usleep(50000);
	cr_assert(metaserver_log_has(&meta, needle), "no reload of the tenants file");
}

Test(tenants, a_reload_adds_removes_and_requotas_tenants)
{
	char gamma_file[64], lines[512];
	mmc_store *d, *a, *b, *g;

	start("");
	d = store_as(NULL, cluster_file, true);
	a = store_as("alpha", alpha_file, false);
	b = store_as("beta", beta_file, false);
	put(a, "kept", 'a');
	cr_assert_eq(open_as("gamma", alpha_file, false, &g), MMC_NOT_AUTHORIZED, "gamma before it exists");
	mmc_destroy(g);
	conf_write_file(gamma_file, "gamma-secret-0123456789abcdef\n");
	/* alpha out, gamma in, beta held to one object */
	snprintf(lines, sizeof(lines), "beta %s max_objects=1\ngamma %s\n", beta_file, gamma_file);
	reload_tenants(lines, 3);
	cr_assert_lt(mmc_is_exist(a, "kept"), 0, "a removed tenant's store is cut off");
	mmc_destroy(a);
	cr_assert_eq(open_as("alpha", alpha_file, false, &a), MMC_NOT_AUTHORIZED, "a removed tenant");
	mmc_destroy(a);
	g = store_as("gamma", gamma_file, false);
	cr_assert_eq(mmc_is_exist(g, "kept"), 0);
	put(b, "b/1", 'b');
	put(b, "b/2", 'b');
	cr_assert_eq(metric("mmc_tenant_objects", "beta"), 1, "beta's new quota");
	cr_assert_eq(metric("mmc_tenant_objects", "alpha"), 1, "a removed tenant's objects stay counted");
	/* alpha back: its objects are its own again */
	snprintf(lines, sizeof(lines), "alpha %s\nbeta %s\ngamma %s\n", alpha_file, beta_file, gamma_file);
	reload_tenants(lines, 3); /* the same count as the first reload's line: wait for the hello to pass instead */
	for (int i = 0; i < 100 && open_as("alpha", alpha_file, false, &a) != 0; i++) {
		mmc_destroy(a);
		usleep(50000);
	}
	cr_assert_eq(get(a, "kept"), 'a', "alpha back, with its object");
	mmc_destroy(g);
	mmc_destroy(b);
	mmc_destroy(a);
	mmc_destroy(d);
	unlink(gamma_file);
}

/* A removed object a lease still pins holds its space: it stays in its tenant's quota until the space is freed. It
 * used to leave the counts with the index, so a tenant could hold any amount by leasing, then removing. */
Test(tenants, a_removed_object_still_pinned_counts_in_its_quota)
{
	const char *pinned[1] = {"alpha/pinned"};
	mmc_store *d, *a;
	int result;

	start("max_objects=2");
	d = store_as(NULL, cluster_file, true);
	a = store_as("alpha", alpha_file, false);
	put(a, "alpha/pinned", 'p');
	cr_assert_eq(mmc_batch_add_lease(a, pinned, 1, 60000, &result), 0);
	cr_assert_eq(result, 0);
	cr_assert_eq(mmc_remove(a, "alpha/pinned"), 0);
	cr_assert_eq(metric("mmc_tenant_objects", "alpha"), 1, "removed, still pinned: still counted");
	put(a, "alpha/1", '1');
	put(a, "alpha/2", '2'); /* the quota's second place is the pinned one's: alpha/1 is evicted for it */
	cr_assert_eq(mmc_is_exist(a, "alpha/1"), 0, "two objects' space with the pinned one");
	cr_assert_eq(metric("mmc_tenant_objects", "alpha"), 2);
	cr_assert_eq(mmc_batch_remove_lease(a, pinned, 1), 0);
	for (int i = 0; i < 100 && metric("mmc_tenant_objects", "alpha") != 1; i++)
		usleep(20000); /* the sweep frees it */
	cr_assert_eq(metric("mmc_tenant_objects", "alpha"), 1, "its space freed, it leaves the counts");
	mmc_destroy(a);
	mmc_destroy(d);
}

/* A tenant removed by a reload while one of its connections waits to prove the secret: the connection is closed,
 * and no proof admits it. The removed tenant's secret is wiped, and a proof under the empty key, which anyone can
 * make, used to admit it into the tenant's kept objects. */
Test(tenants, a_tenant_removed_during_its_challenge_is_not_admitted)
{
	uint8_t cn[32];
	Mmc__AuthChallenge *ch;
	char lines[256];
	int fd, rc;

	start("");
	cr_assert((fd = raw_dial(meta.rpc_port)) >= 0);
	cr_assert_not_null(ch = raw_hello_tenant(fd, "beta", cn), "beta is challenged");
	snprintf(lines, sizeof(lines), "alpha %s\n", alpha_file);
	reload_tenants(lines, 2); /* beta is still known: removed */
	rc = raw_prove_tenant(fd, "beta", "", cn, ch);
	cr_assert_neq(rc, 0, "a removed tenant was admitted");
	close(fd);
	/* nor a new hello: a removed tenant is challenged as a name nobody has */
	cr_assert((fd = raw_dial(meta.rpc_port)) >= 0);
	cr_assert_not_null(ch = raw_hello_tenant(fd, "beta", cn));
	cr_assert_neq(raw_prove_tenant(fd, "beta", "", cn, ch), 0);
	close(fd);
}

Test(tenants, a_server_without_tenants_admits_none)
{
	static char env_token[128];
	const char *extra[] = {env_token, NULL};
	mmc_store *s;

	conf_write_file(cluster_file, CLUSTER "\n");
	conf_write_file(alpha_file, ALPHA "\n");
	snprintf(env_token, sizeof(env_token), "ock.mmc.meta.auth_token_file=%s", cluster_file);
	cr_assert_eq(metaserver_start(&meta, extra), 0);
	cr_assert_eq(open_as("alpha", alpha_file, false, &s), MMC_NOT_AUTHORIZED);
	mmc_destroy(s);
	/* the default tenant as before: a key starting with 0xFF is any other key */
	s = store_as(NULL, cluster_file, true);
	put(s,
	    "\xff"
	    "alpha\xff"
	    "x",
	    'x');
	cr_assert_eq(get(s, "\xff"
	                    "alpha\xff"
	                    "x"),
	             'x');
	mmc_destroy(s);
	cr_assert_eq(metric("mmc_tenant_objects", "default"), -1, "no tenant metrics without tenants");
}

Test(tenants, a_tenants_file_others_may_read_is_refused)
{
	static char env_tenants[128];
	const char *extra[] = {env_tenants, NULL};

	char line[128];

	conf_write_file(alpha_file, ALPHA "\n");
	snprintf(line, sizeof(line), "alpha %s\n", alpha_file);
	conf_write_file(tenants_file, line);
	cr_assert_eq(chmod(tenants_file, 0644), 0);
	snprintf(env_tenants, sizeof(env_tenants), "ock.mmc.meta.tenants_file=%s", tenants_file);
	cr_assert_neq(metaserver_start(&meta, extra), 0, "a tenants file of mode 0644");
	cr_assert(metaserver_log_has(&meta, "chmod 600"), "the refusal says why");
}

/*
 * The tenants file (ock.mmc.meta.tenants_file) as the state layer reads it: the lines it takes, each it refuses
 * and why, the tags keys get, and the quota arithmetic. Real files in a temporary directory; no server.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meta.h"
#include "mmc/mmc.h"
#include "tenants.h"

#define CLUSTER "cluster-secret-0123456789"

static struct meta m;
static char dir[64], err[512];

static void write_file(const char *name, const char *text, mode_t mode)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

/* tenants_load of a tenants file holding text (mode 0600), beside the secret files a.token .. d.token. */
static int load(const char *text)
{
	char path[128];

	write_file("tenants", text, 0600);
	snprintf(path, sizeof(path), "%s/tenants", dir);
	err[0] = '\0';
	tenants_free(&m);
	return tenants_load(&m, path, CLUSTER, err, sizeof(err));
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/mmc-tenants-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	write_file("a.token", "alpha-secret-0123456789\n", 0600);
	write_file("b.token", "beta-secret-0123456789\n", 0600);
	write_file("c.token", "short\n", 0600);
	write_file("d.token", CLUSTER "\n", 0600);
}

static void teardown(void)
{
	char cmd[128];

	tenants_free(&m);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(tenants_file, .init = setup, .fini = teardown);

Test(tenants_file, a_file_names_tenants_their_tags_and_quotas)
{
	cr_assert_eq(load("# tenants\n\nalpha a.token max_bytes=1GB max_objects=100\n  beta\tb.token\n"
	                  "default - max_objects=7\n"),
	             0, "%s", err);
	cr_assert_eq(m.tenants.n, 3);
	cr_assert_str_eq(m.tenants.t[0].name, "default");
	cr_assert_eq(m.tenants.t[0].max_objects, 7);
	cr_assert_eq(m.tenants.t[0].taglen, 0, "the default tenant's keys are stored as they are");
	cr_assert_eq(m.tenants.t[1].max_bytes, 1ull << 30);
	cr_assert_eq(m.tenants.t[1].max_objects, 100);
	cr_assert_str_eq(m.tenants.t[1].secret, "alpha-secret-0123456789");
	cr_assert_eq(m.tenants.t[2].max_bytes, 0, "no quota");
	cr_assert_eq(m.tenants.t[1].taglen, 7);
	cr_assert_eq(memcmp(m.tenants.t[1].tag,
	                    "\xff"
	                    "alpha\xff",
	                    7),
	             0);
	cr_assert_eq(tenant_by_name(&m, "beta"), &m.tenants.t[2]);
	cr_assert_null(tenant_by_name(&m, "gamma"));
}

Test(tenants_file, a_key_belongs_to_the_tenant_its_tag_names)
{
	cr_assert_eq(load("alpha a.token\nbeta b.token\n"), 0, "%s", err);
	cr_assert_eq(tenant_of_key(&m, "plain", 5), 0);
	cr_assert_eq(tenant_of_key(&m,
	                           "\xff"
	                           "alpha\xff"
	                           "k",
	                           8),
	             1);
	cr_assert_eq(tenant_of_key(&m,
	                           "\xff"
	                           "beta\xff",
	                           6),
	             2);
	cr_assert_eq(tenant_of_key(&m,
	                           "\xff"
	                           "alph\xff"
	                           "k",
	                           7),
	             TENANT_NONE, "a name's prefix is not the name");
	cr_assert_eq(tenant_of_key(&m,
	                           "\xff"
	                           "gamma\xff"
	                           "k",
	                           8),
	             TENANT_NONE, "a tenant not in the file");
	cr_assert_eq(tenant_of_key(&m,
	                           "\xff"
	                           "alpha",
	                           6),
	             TENANT_NONE, "no closing byte");
}

Test(tenants_file, bad_lines_are_refused_with_the_reason)
{
	static const struct {
		const char *text, *says;
	} bad[] = {
	    {"alpha\n", "expected `name secret_file"},
	    {"al.pha a.token\n", "letters, digits"},
	    {"abcdefghijklmnopq a.token\n", "1 to 16"},
	    {"alpha a.token\nalpha b.token\n", "named twice"},
	    {"alpha c.token\n", "shorter than 16"},
	    {"alpha d.token\n", "the cluster secret's or another tenant's"},
	    {"alpha a.token\nbeta a.token\n", "the cluster secret's or another tenant's"},
	    {"default a.token\n", "its file is `-`"},
	    {"alpha a.token max_bytes=lots\n", "max_bytes=SIZE or max_objects=N"},
	    {"alpha a.token quota=1\n", "max_bytes=SIZE or max_objects=N"},
	    {"alpha missing.token\n", "cannot read"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(load(bad[i].text), MMC_INVALID_PARAM, "accepted: %s", bad[i].text);
		cr_assert(strstr(err, bad[i].says), "%s: the message \"%s\" does not say \"%s\"", bad[i].text, err,
		          bad[i].says);
		cr_assert_eq(m.tenants.n, 0, "a refused file leaves no tenants");
		cr_assert(!strstr(err, "alpha-secret"), "the message holds a secret: %s", err);
	}
}

/* tenants_reload of text over the running table. */
static int reload(const char *text)
{
	char path[128];

	write_file("tenants", text, 0600);
	snprintf(path, sizeof(path), "%s/tenants", dir);
	err[0] = '\0';
	return tenants_reload(&m, path, CLUSTER, err, sizeof(err));
}

Test(tenants_file, a_reload_keeps_each_tenants_place)
{
	cr_assert_eq(load("alpha a.token\nbeta b.token\n"), 0, "%s", err);
	m.tenants.t[1].objects = 5; /* counts are the index's: a reload keeps them */
	write_file("e.token", "gamma-secret-0123456789\n", 0600);
	cr_assert_eq(reload("beta b.token max_objects=3\ngamma e.token\n"), 0, "%s", err);
	cr_assert_eq(m.tenants.n, 4);
	cr_assert(m.tenants.t[1].removed);
	cr_assert_null(tenant_by_name(&m, "alpha"), "a removed tenant cannot be claimed");
	cr_assert_str_eq(m.tenants.t[1].secret, "", "nor proved");
	cr_assert_eq(m.tenants.t[1].objects, 5);
	cr_assert_eq(tenant_of_key(&m,
	                           "\xff"
	                           "alpha\xff"
	                           "k",
	                           8),
	             1, "its keys are still its own");
	cr_assert_eq(m.tenants.t[2].max_objects, 3);
	cr_assert_eq(tenant_by_name(&m, "gamma"), &m.tenants.t[3]);
	cr_assert_eq(reload("alpha a.token\nbeta b.token\n"), 0, "%s", err);
	cr_assert_eq(tenant_by_name(&m, "alpha"), &m.tenants.t[1], "back in its place");
	cr_assert_str_eq(m.tenants.t[1].secret, "alpha-secret-0123456789");
	cr_assert(m.tenants.t[3].removed);
	cr_assert_eq(reload("alpha c.token\n"), MMC_INVALID_PARAM, "a bad file");
	cr_assert_str_eq(m.tenants.t[1].secret, "alpha-secret-0123456789", "keeps the running table");
	cr_assert_not_null(tenant_by_name(&m, "beta"));
}

Test(tenants_file, a_file_others_may_read_is_refused)
{
	char path[128];

	write_file("tenants", "alpha a.token\n", 0644);
	snprintf(path, sizeof(path), "%s/tenants", dir);
	cr_assert_eq(tenants_load(&m, path, CLUSTER, err, sizeof(err)), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "chmod 600"), "%s", err);
}

Test(tenants_file, quotas_count_pool_bytes_and_objects)
{
	struct tenant t = {.max_bytes = 3 * 4096, .max_objects = 2};

	cr_assert_eq(tenant_bytes(1, 1), 4096, "a replica takes whole 4 KiB blocks");
	cr_assert_eq(tenant_bytes(4097, 2), 4 * 4096);
	cr_assert(tenant_fits(&t, 3 * 4096));
	cr_assert(!tenant_fits(&t, 3 * 4096 + 1));
	t.objects = 2;
	cr_assert(!tenant_fits(&t, 1), "the object quota is full");
	t.max_objects = 0;
	t.bytes = 2 * 4096;
	cr_assert(tenant_fits(&t, 4096));
	cr_assert(!tenant_fits(&t, 2 * 4096));
}

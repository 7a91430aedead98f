#include "bench_cluster.h"

#include <fcntl.h>
#include <mmc/mmc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TENANT_TOKEN "MMC_BENCH_TENANT_TOKEN" /* the tenant's secret file, for this process and its children */
#define TENANTS_FILE "MMC_BENCH_TENANTS_FILE" /* the server's tenants file */

static char tenant_dir[64];

static void tenant_cleanup(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/tenants", tenant_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/bench.token", tenant_dir);
	unlink(path);
	rmdir(tenant_dir);
}

/* mode 0600: the server refuses a tenants file others may read */
static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t n = fd >= 0 ? write(fd, text, strlen(text)) : -1;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

int bench_tenant_setup(void)
{
	char path[128];

	snprintf(tenant_dir, sizeof(tenant_dir), "/tmp/mmc-bench-tenant-XXXXXX");
	if (!mkdtemp(tenant_dir))
		return -1;
	atexit(tenant_cleanup);
	snprintf(path, sizeof(path), "%s/bench.token", tenant_dir);
	if (write_text(path, "bench-tenant-secret-0123456789abcdef\n") || setenv(TENANT_TOKEN, path, 1))
		return -1;
	snprintf(path, sizeof(path), "%s/tenants", tenant_dir);
	return write_text(path, "bench bench.token\n") || setenv(TENANTS_FILE, path, 1) ? -1 : 0;
}

const char *const *bench_server_extras(int sync)
{
	static char tenants[200];
	static const char *extras[3];
	int n = 0;

	if (!sync)
		extras[n++] = "ock.mmc.meta.lmdb.sync=false";
	if (getenv(TENANTS_FILE)) {
		snprintf(tenants, sizeof(tenants), "ock.mmc.meta.tenants_file=%s", getenv(TENANTS_FILE));
		extras[n++] = tenants;
	}
	extras[n] = NULL;
	return n ? extras : NULL;
}

void bench_tenant_config(struct mmc_local_config *cfg)
{
	const char *token = getenv(TENANT_TOKEN);

	if (!token)
		return;
	snprintf(cfg->tenant, sizeof(cfg->tenant), "bench");
	snprintf(cfg->auth_token_file, sizeof(cfg->auth_token_file), "%s", token);
}

/* rma_timeout_ms 0: the library's default */
static mmc_store *open_store(const char *url, const char *protocol, int lend, uint64_t pool, bool verify,
                             uint32_t rma_timeout_ms)
{
	mmc_local_config cfg = mmc_default_local_config();
	mmc_store *s = mmc_create();

	cfg.verify_checksum = verify;
	if (rma_timeout_ms)
		cfg.rma_timeout_ms = rma_timeout_ms;
	snprintf(cfg.meta_service_url, sizeof(cfg.meta_service_url), "%s", url);
	snprintf(cfg.protocol, sizeof(cfg.protocol), "%s", protocol);
	cfg.dram_size = pool;
	cfg.max_dram_size = pool > cfg.max_dram_size ? pool : cfg.max_dram_size;
	bench_tenant_config(&cfg);
	if (!s || mmc_setup(s, &cfg) || mmc_init(s, 0, lend != 0)) {
		mmc_destroy(s);
		return NULL;
	}
	return s;
}

int bench_target_main(int argc, char **argv)
{
	char buf[16];
	uint32_t rank = 0;
	mmc_store *s;

	if (argc < 5)
		return 2;
	s = open_store(argv[2], argv[3], 1, strtoull(argv[4], NULL, 0), false, 0);
	if (!s) {
		printf("fail\n");
		return 1;
	}
	mmc_get_local_service_id(s, &rank);
	printf("ready %u\n", rank);
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	mmc_destroy(s);
	return 0;
}

extern char **environ;

static int spawn_target(struct bench_cluster *c, int i, const char *self, const char *protocol, uint64_t pool)
{
	char poolstr[32], line[64];
	char *argv[] = {(char *)self, "target", c->meta.url, (char *)protocol, poolstr, NULL};
	int in, out;
	FILE *f;
	pid_t pid;

	snprintf(poolstr, sizeof(poolstr), "%llu", (unsigned long long)pool);
	pid = proc_spawn_piped(self, argv, environ, &in, &out);
	if (pid < 0)
		return -1;
	c->targets[i] = pid;
	c->target_in[i] = in;
	f = fdopen(out, "r");
	if (!f || !fgets(line, sizeof(line), f) || sscanf(line, "ready %u", &c->ranks[i]) != 1) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

/* Without $MMC_METASERVER, use the server next to this binary: installed (bin/) or in the build tree. */
void bench_find_metaserver(const char *self)
{
	static const char *const rel[] = {"/mmc-metaserver", "/../metaserver/mmc-metaserver"};
	char dir[4096], path[4200];
	const char *slash = strrchr(self, '/');

	if (getenv("MMC_METASERVER") || !slash)
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - self), self);
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", dir, rel[i]);
		if (access(path, X_OK) == 0) {
			setenv("MMC_METASERVER", path, 1);
			return;
		}
	}
}

int bench_cluster_start(struct bench_cluster *c, const char *self, const char *protocol, int ntargets, uint64_t pool,
                        int sync)
{
	memset(c, 0, sizeof(*c));
	bench_find_metaserver(self);
	if (metaserver_start(&c->meta, bench_server_extras(sync))) {
		fprintf(stderr, "mmc-bench: cannot start mmc-metaserver (set MMC_METASERVER)\n");
		return -1;
	}
	for (int i = 0; i < ntargets && i < BENCH_MAX_TARGETS; i++) {
		if (spawn_target(c, i, self, protocol, pool)) {
			fprintf(stderr, "mmc-bench: target %d did not start\n", i);
			c->ntargets = i + 1;
			bench_cluster_stop(c);
			return -1;
		}
		c->ntargets = i + 1;
	}
	return 0;
}

void bench_cluster_stop(struct bench_cluster *c)
{
	for (int i = 0; i < c->ntargets; i++) {
		close(c->target_in[i]);
		waitpid(c->targets[i], NULL, 0);
	}
	c->ntargets = 0;
	metaserver_cleanup(&c->meta);
}

struct mmc_store *bench_client(const struct bench_cluster *c, const char *protocol, int lend_pool, uint64_t pool)
{
	return open_store(c->meta.url, protocol, lend_pool, pool, false, 0);
}

struct mmc_store *bench_client_checked(const struct bench_cluster *c, const char *protocol, bool verify_checksum)
{
	return open_store(c->meta.url, protocol, 0, 0, verify_checksum, 0);
}

struct mmc_store *bench_client_rma_timeout(const struct bench_cluster *c, const char *protocol, uint32_t rma_timeout_ms)
{
	return open_store(c->meta.url, protocol, 0, 0, false, rma_timeout_ms);
}

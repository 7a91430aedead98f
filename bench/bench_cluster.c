#include "bench_cluster.h"

#include <mmc/mmc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
	static const char *const nosync[] = {"ock.mmc.meta.lmdb.sync=false", NULL};

	memset(c, 0, sizeof(*c));
	bench_find_metaserver(self);
	if (metaserver_start(&c->meta, sync ? NULL : nosync)) {
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

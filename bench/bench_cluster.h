/*
 * A throwaway cluster for benchmarks: an mmc-metaserver in a temp dir and N target processes (this binary
 * re-executed as `mmc-bench target`) that each lend a pool. The benchmark process is a client-only store, so every
 * byte it moves crosses the fabric to another process.
 */
#ifndef MMC_BENCH_CLUSTER_H
#define MMC_BENCH_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc.h"

struct mmc_local_config;

#define BENCH_MAX_TARGETS 8

struct bench_cluster {
	struct metaserver meta;
	int ntargets;
	pid_t targets[BENCH_MAX_TARGETS];
	int target_in[BENCH_MAX_TARGETS]; /* closing it stops the target */
	uint32_t ranks[BENCH_MAX_TARGETS];
};

/* self: argv[0] of the benchmark. protocol: host_tcp / host_shm. pool: bytes per target. sync: LMDB fsync per
 * group commit (the server's default) or not (--env ock.mmc.meta.lmdb.sync=false). */
int bench_cluster_start(struct bench_cluster *c, const char *self, const char *protocol, int ntargets, uint64_t pool,
                        int sync);
void bench_cluster_stop(struct bench_cluster *c);

/* Sets $MMC_METASERVER to the server next to this binary (installed or build tree) unless it is set. */
void bench_find_metaserver(const char *self);

/* The `target` subcommand: lend a pool until stdin closes. */
int bench_target_main(int argc, char **argv);

/*
 * --tenant: a tenants file naming tenant "bench" and its secret, in a fresh temp dir (removed at exit). The servers
 * this process starts get ock.mmc.meta.tenants_file, and every store (targets and client processes inherit the
 * environment that says where the secret is) connects as that tenant: the cost of tenancy, next to a run without.
 * Returns 0 or -1.
 */
int bench_tenant_setup(void);
/* The --env extras of the benchmark's server: no fsync unless sync, the tenants file after --tenant. */
const char *const *bench_server_extras(int sync);
/* The tenant and its secret's file into cfg, after --tenant (in this process or its parent). */
void bench_tenant_config(struct mmc_local_config *cfg);

/* A client-only store on the cluster's meta server. */
struct mmc_store *bench_client(const struct bench_cluster *c, const char *protocol, int lend_pool, uint64_t pool);
/* A client-only store with ock.mmc.client.verify_checksum set as given. */
struct mmc_store *bench_client_checked(const struct bench_cluster *c, const char *protocol, bool verify_checksum);
/* A client-only store whose stalled RMAs fail after rma_timeout_ms (ock.mmc.client.rma_timeout_ms). */
struct mmc_store *bench_client_rma_timeout(const struct bench_cluster *c, const char *protocol,
                                           uint32_t rma_timeout_ms);

#endif

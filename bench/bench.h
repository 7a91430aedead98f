/* mmc-bench: the options every subcommand shares, the object shapes, and the table format. */
#ifndef MMC_BENCH_H
#define MMC_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_stats.h"

#define BENCH_MAX_LIST   16
#define BENCH_MAX_PIECES 255

/* The object layout a benchmark moves: `npieces` buffers per key, laid end to end in the object. */
struct shape {
	const char *name; /* "flat", "layers" or "dsr1" */
	size_t block;     /* bytes per key */
	int npieces;
	size_t piece[BENCH_MAX_PIECES];
};

struct bench_opts {
	const char *self; /* argv[0], re-executed for targets */
	const char *protocols[2];
	int nprotocols;
	size_t sizes[BENCH_MAX_LIST];
	int nsizes;
	int batches[BENCH_MAX_LIST];
	int nbatches;
	bool batch_given; /* --batch was on the command line */
	int layers;       /* split each block into this many equal pieces */
	bool dsr1;        /* --shape dsr1: 61 x (128 KiB + 16 KiB) per key, ignores sizes and layers */
	int threads;      /* client threads per client process */
	int procs;        /* client processes */
	int targets;      /* processes that lend a pool (local services) */
	double seconds;   /* per measurement */
	bool quick;
	int sync[2]; /* LMDB sync modes to run: 1 on (the default), 0 off */
	int nsync;
	uint64_t index[BENCH_MAX_LIST]; /* meta: keys in the index */
	int nindex;
	bool no_raw, no_redis;
	int checksum;      /* data: BENCH_CK_* (--checksum off|on|both) */
	bool no_host_path; /* --no-host-path: $MMC_HOST_PATH=off for this process and its targets (two hosts) */
	bool unbacked;     /* meta: the pool is an unbacked range only metadata names (bench_unbacked.h) */
	bool tenant;       /* --tenant: every store connects as tenant "bench" (bench_tenant_setup) */
	bool check;        /* --check: parse and validate the options, run nothing */
};

/* --checksum: client stores without ock.mmc.client.verify_checksum, with it, or both, alternating round by round. */
enum { BENCH_CK_OFF = 0, BENCH_CK_ON = 1, BENCH_CK_BOTH = 2 };

/* Parses the shared flags after the subcommand. Returns 0; 1 for --help (usage printed) or --check (the options are
 * valid, and it said so: the caller runs nothing and exits 0); -1 on a bad flag or value (usage on stderr). */
int bench_parse(int argc, char **argv, struct bench_opts *o, const char *usage);
/* The layout of one key for a block size under o (flat, --layers or --shape dsr1). */
void bench_shape(const struct bench_opts *o, size_t block, struct shape *sh);
/* "64KiB", "1MiB", "8784KiB" */
const char *bench_size_str(size_t bytes, char *buf, size_t len);
const char *bench_proto_str(const char *protocol);
/* Before a run over protocol: with --no-host-path, shm means libfabric's shm provider (FI_PROVIDER=shm, inherited by
 * the targets), since host_shm is otherwise the host path only. */
void bench_use_protocol(const struct bench_opts *o, const char *protocol);

int bench_data_main(int argc, char **argv, const char *self);
int bench_meta_main(int argc, char **argv, const char *self);
int bench_gva_main(int argc, char **argv, const char *self);
int bench_ssd_main(int argc, char **argv, const char *self);
int bench_idle_main(int argc, char **argv, const char *self);
int bench_prefix_main(int argc, char **argv, const char *self);
int bench_rtt_main(int argc, char **argv, const char *self);
int bench_raw_main(int argc, char **argv, const char *self);
int bench_rma_target_main(int argc, char **argv);

#endif

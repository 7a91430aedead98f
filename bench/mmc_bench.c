/*
 * mmc-bench: benchmarks of mmc against the limits that matter, measured in the same run.
 *
 *   mmc-bench data [options]   batch put/get (flat, layers, DeepSeek-R1 shape) vs memcpy, raw RMA and Redis
 *   mmc-bench meta [options]   batch_is_exist, batch_get_key_info, tiny puts: keys/s vs keys in the index
 *   mmc-bench gva [options]    layer-wise GVA copies vs batch_get_into_layers / put_from_layers vs memcpy
 *   mmc-bench ssd [options]    the SSD tier: demote, rewarm and gets from SSD vs the device's own speed
 *   mmc-bench idle [options]   CPU per idle second of a lending store and of the meta server
 *   mmc-bench prefix [options] mmc_batch_get_into_prefix vs mmc_batch_get_into, and with one lender stopped
 *   mmc-bench rtt [options]    a bare loopback TCP round trip: the floor under every call to the meta server
 *   mmc-bench all --quick      every subcommand in its short mode (what CI runs)
 *   mmc-bench target ... / rma-target ...   (internal) processes that lend a pool
 *
 * Benchmarks are never tests: CI only runs `mmc-bench all --quick` to prove they still work; it fails on errors,
 * never on speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmc/mmc.h>

#include "bench.h"
#include "bench_cluster.h"
#include "bench_meta.h"

static const char usage[] =
    "usage: mmc-bench SUBCOMMAND [--help] [options]\n"
    "  data    batch put/get (flat, layers, DeepSeek-R1 shape) vs cold memcpy, raw libfabric RMA and Redis\n"
    "  meta    batch_is_exist, batch_get_key_info, tiny puts: keys/s vs keys in the index\n"
    "  gva     layer-wise GVA copies vs batch_get_into_layers / put_from_layers vs memcpy\n"
    "  ssd     the SSD tier: demote, rewarm, gets from SSD vs the device\n"
    "  idle    CPU seconds per idle second of a lending store and of the meta server\n"
    "  prefix  deadline-aware prefix read vs batch get: its cost, and its wait with one lender stopped\n"
    "  rtt     a bare loopback TCP round trip between two processes: the floor under a meta call\n"
    "  all     every benchmark in its short mode (all --quick: what CI runs)\n"
    "Every subcommand takes --help, and --check (validate the options, run nothing); --no-host-path makes\n"
    "same-host peers use the network provider (two hosts).\n";

#ifndef MMC_BENCH_BUILDTYPE
#define MMC_BENCH_BUILDTYPE "unknown"
#endif

static const char all_usage[] = "usage: mmc-bench all --quick   every benchmark in its short mode (what CI runs)\n";

static int run_all(int argc, char **argv, const char *self)
{
	char *quick[] = {argv[0], "--quick", NULL};
	char *dsr1[] = {argv[0], "--quick", "--shape", "dsr1", "--batch", "2", "--no-redis", NULL};
	char *ck[] = {argv[0], "--quick", "--checksum", "both", "--sizes", "64K", "--no-redis", "--no-raw", NULL};
	struct bench_opts o;
	int rc = bench_parse(argc, argv, &o, all_usage);

	if (rc)
		return rc > 0 ? 0 : 2;
	rc |= bench_data_main(2, quick, self);
	rc |= bench_data_main(7, dsr1, self);
	rc |= bench_data_main(8, ck, self);
	rc |= bench_meta_main(2, quick, self);
	rc |= bench_gva_main(2, quick, self);
	rc |= bench_ssd_main(2, quick, self);
	rc |= bench_idle_main(2, quick, self);
	rc |= bench_prefix_main(2, quick, self);
	rc |= bench_rtt_main(2, quick, self);
	printf("\nmmc-bench all: %s\n", rc ? "FAILED" : "ok");
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc >= 2 ? argv[1] : "";

	/* the raw libfabric baselines start libfabric before libmmc would set this: set it for both, as libmmc does */
	setenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL", "1000", 0);
	if (strcmp(cmd, "target") == 0)
		return bench_target_main(argc, argv);
	if (strcmp(cmd, "rma-target") == 0)
		return bench_rma_target_main(argc, argv);
	if (strcmp(cmd, "meta-client") == 0)
		return bench_meta_client_main(argc, argv);
	if (strcmp(cmd, "data") == 0 || strcmp(cmd, "meta") == 0 || strcmp(cmd, "gva") == 0 ||
	    strcmp(cmd, "ssd") == 0 || strcmp(cmd, "idle") == 0 || strcmp(cmd, "prefix") == 0 ||
	    strcmp(cmd, "rtt") == 0 || strcmp(cmd, "all") == 0)
		printf("# mmc-bench %s, %s build%s\n", mmc_version(), MMC_BENCH_BUILDTYPE,
		       strcmp(MMC_BENCH_BUILDTYPE, "release") ? " (not release: not for comparisons)" : "");
	fflush(stdout); /* before any child is forked */
	if (strcmp(cmd, "idle") == 0)
		return bench_idle_main(argc - 1, argv + 1, argv[0]);
	if (strcmp(cmd, "data") == 0)
		return bench_data_main(argc - 1, argv + 1, argv[0]);
	if (strcmp(cmd, "meta") == 0)
		return bench_meta_main(argc - 1, argv + 1, argv[0]);
	if (strcmp(cmd, "gva") == 0)
		return bench_gva_main(argc - 1, argv + 1, argv[0]);
	if (strcmp(cmd, "ssd") == 0)
		return bench_ssd_main(argc - 1, argv + 1, argv[0]);
	if (strcmp(cmd, "prefix") == 0)
		return bench_prefix_main(argc - 1, argv + 1, argv[0]);
	if (strcmp(cmd, "rtt") == 0)
		return bench_rtt_main(argc - 1, argv + 1, argv[0]);
	if (strcmp(cmd, "all") == 0)
		return run_all(argc - 1, argv + 1, argv[0]);
	fputs(usage, strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ? stdout : stderr);
	return strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ? 0 : 2;
}

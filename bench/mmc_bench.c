/*
 * mmc-bench: benchmarks of mmc against the limits that matter, measured in the same run.
 *
 *   mmc-bench data [options]   batch put/get between two processes vs memcpy
 *   mmc-bench target ...       (internal) a process that lends a pool
 *
 * Benchmarks are never tests: CI only runs `mmc-bench data --quick` to prove the benchmark still works.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bench_cluster.h"

void bench_header(const char *title)
{
	printf("\n# %s\n", title);
	printf("%-9s %-4s %10s %6s %6s %10s %10s %10s %12s %8s\n", "provider", "op", "block", "batch", "layers", "GB/s",
	       "p50 ms", "p99 ms", "memcpy GB/s", "ratio");
}

void bench_row(const char *proto, const char *op, size_t block, int batch, int layers, uint64_t bytes,
               struct samples *s, double baseline_gbs)
{
	double med = samples_median(s), p99 = samples_p99(s), gbs = (double)bytes / med / 1e9;
	char blk[32];

	if (block >= (1u << 20) && block % (1u << 20) == 0)
		snprintf(blk, sizeof(blk), "%zuMiB", block >> 20);
	else if (block >= 1024 && block % 1024 == 0)
		snprintf(blk, sizeof(blk), "%zuKiB", block >> 10);
	else
		snprintf(blk, sizeof(blk), "%zuB", block);
	printf("%-9s %-4s %10s %6d %6d %10.2f %10.3f %10.3f %12.2f %8.2f\n",
	       strncmp(proto, "host_", 5) ? proto : proto + 5, op, blk, batch, layers, gbs, med * 1e3, p99 * 1e3,
	       baseline_gbs, gbs / baseline_gbs);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "target") == 0)
		return bench_target_main(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "data") == 0)
		return bench_data_main(argc - 1, argv + 1, argv[0]);
	printf("usage: mmc-bench data [--help] [options]\n");
	return argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) ? 0 : 2;
}

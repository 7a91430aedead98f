/* mmc-bench: subcommands and the shared table format. */
#ifndef MMC_BENCH_H
#define MMC_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "bench_stats.h"

int bench_data_main(int argc, char **argv, const char *self);

void bench_header(const char *title);
/* One row: GB/s at the median call time, median and p99 call time, the baseline and the ratio to it. */
void bench_row(const char *proto, const char *op, size_t block, int batch, int layers, uint64_t bytes,
               struct samples *s, double baseline_gbs);

#endif

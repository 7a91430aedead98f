/* Timing samples and the summary every benchmark table prints: median and p99 of per-call time. */
#ifndef MMC_BENCH_STATS_H
#define MMC_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

struct samples {
	double *v; /* seconds per call */
	size_t n, cap;
};

void samples_add(struct samples *s, double seconds);
double samples_median(struct samples *s);
double samples_p99(struct samples *s);
void samples_free(struct samples *s);
/* Appends every sample of src to dst and frees src. */
void samples_merge(struct samples *dst, struct samples *src);
double now_s(void);

#endif

#include "bench_stats.h"

#include <stdlib.h>
#include <time.h>

void samples_add(struct samples *s, double seconds)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		double *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = seconds;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double quantile(struct samples *s, double q)
{
	size_t i;

	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(*s->v), cmp);
	i = (size_t)(q * (double)(s->n - 1) + 0.5);
	return s->v[i];
}

double samples_median(struct samples *s)
{
	return quantile(s, 0.5);
}

double samples_p99(struct samples *s)
{
	return quantile(s, 0.99);
}

void samples_free(struct samples *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void samples_merge(struct samples *dst, struct samples *src)
{
	for (size_t i = 0; i < src->n; i++)
		samples_add(dst, src->v[i]);
	samples_free(src);
}

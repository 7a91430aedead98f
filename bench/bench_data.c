/*
 * `mmc-bench data`: batch put and get between this process (client only) and a target process that holds the pool,
 * next to a single-thread memcpy of the same bytes measured in the same run.
 */
#include <mmc/mmc.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_cluster.h"
#include "bench_stats.h"

struct data_opts {
	const char *protocols[2];
	int nprotocols;
	size_t sizes[8];
	int nsizes;
	int batch;
	int layers;
	double seconds;
};

struct buffers {
	char **keys;
	void **bufs;        /* batch blocks, each `size` bytes */
	void ***layer_bufs; /* per key: `layers` pointers into the block */
	size_t **layer_sizes;
	size_t *layer_count;
	size_t *sizes;
	int *results;
	void *dst; /* memcpy baseline destination */
};

static int alloc_buffers(struct buffers *b, int batch, size_t size, int layers)
{
	memset(b, 0, sizeof(*b));
	b->keys = calloc((size_t)batch, sizeof(*b->keys));
	b->bufs = calloc((size_t)batch, sizeof(*b->bufs));
	b->layer_bufs = calloc((size_t)batch, sizeof(*b->layer_bufs));
	b->layer_sizes = calloc((size_t)batch, sizeof(*b->layer_sizes));
	b->layer_count = calloc((size_t)batch, sizeof(*b->layer_count));
	b->sizes = calloc((size_t)batch, sizeof(*b->sizes));
	b->results = calloc((size_t)batch, sizeof(*b->results));
	b->dst = aligned_alloc(4096, ((size_t)batch * size + 4095) & ~(size_t)4095);
	if (!b->keys || !b->bufs || !b->layer_bufs || !b->layer_sizes || !b->layer_count || !b->sizes || !b->results ||
	    !b->dst)
		return -1;
	for (int i = 0; i < batch; i++) {
		size_t per = size / (size_t)layers;

		b->keys[i] = calloc(1, 64);
		b->bufs[i] = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
		b->layer_bufs[i] = calloc((size_t)layers, sizeof(void *));
		b->layer_sizes[i] = calloc((size_t)layers, sizeof(size_t));
		if (!b->keys[i] || !b->bufs[i] || !b->layer_bufs[i] || !b->layer_sizes[i])
			return -1;
		memset(b->bufs[i], i + 1, size);
		b->sizes[i] = size;
		b->layer_count[i] = (size_t)layers;
		for (int l = 0; l < layers; l++) {
			b->layer_bufs[i][l] = (char *)b->bufs[i] + (size_t)l * per;
			b->layer_sizes[i][l] = l == layers - 1 ? size - per * (size_t)(layers - 1) : per;
		}
	}
	return 0;
}

static void free_buffers(struct buffers *b, int batch)
{
	for (int i = 0; b->keys && i < batch; i++) {
		free(b->keys[i]);
		free(b->bufs[i]);
		free(b->layer_bufs[i]);
		free(b->layer_sizes[i]);
	}
	free(b->keys);
	free(b->bufs);
	free(b->layer_bufs);
	free(b->layer_sizes);
	free(b->layer_count);
	free(b->sizes);
	free(b->results);
	free(b->dst);
}

static double memcpy_baseline(struct buffers *b, int batch, size_t size, double seconds)
{
	struct samples s = {0};
	double end = now_s() + seconds, med;

	do {
		double t0 = now_s();

		for (int i = 0; i < batch; i++)
			memcpy((char *)b->dst + (size_t)i * size, b->bufs[i], size);
		samples_add(&s, now_s() - t0);
	} while (now_s() < end || s.n < 3);
	med = samples_median(&s);
	samples_free(&s);
	return (double)batch * (double)size / med / 1e9;
}

static int check(const int *results, int n, const char *what)
{
	for (int i = 0; i < n; i++) {
		if (results[i]) {
			fprintf(stderr, "mmc-bench: %s failed for key %d: %s\n", what, i, mmc_strerror(results[i]));
			return -1;
		}
	}
	return 0;
}

/* One (protocol, size) case: put then get the batch, again and again, for `seconds`. */
static int run_case(mmc_store *s, const char *proto, size_t size, const struct data_opts *o, int *seq)
{
	struct buffers b;
	struct samples put = {0}, get = {0};
	double end, mc;
	int rc = -1;
	uint64_t bytes = (uint64_t)o->batch * size;

	if (alloc_buffers(&b, o->batch, size, o->layers))
		goto out;
	for (int i = 0; i < o->batch; i++)
		mmc_register_buffer(s, b.bufs[i], size);
	end = now_s() + o->seconds;
	do {
		double t0, t1, t2;

		for (int i = 0; i < o->batch; i++)
			snprintf(b.keys[i], 64, "bench/%d/%d", *seq, i);
		(*seq)++;
		t0 = now_s();
		if (mmc_batch_put_from_layers(s, (const char *const *)b.keys, (const void *const *const *)b.layer_bufs,
		                              (const size_t *const *)b.layer_sizes, b.layer_count, (size_t)o->batch,
		                              MMC_COPY_H2G, NULL, b.results) ||
		    check(b.results, o->batch, "put"))
			goto out;
		t1 = now_s();
		if (mmc_batch_get_into_layers(s, (const char *const *)b.keys, (void *const *const *)b.layer_bufs,
		                              (const size_t *const *)b.layer_sizes, b.layer_count, (size_t)o->batch,
		                              MMC_COPY_G2H, b.results) ||
		    check(b.results, o->batch, "get"))
			goto out;
		t2 = now_s();
		samples_add(&put, t1 - t0);
		samples_add(&get, t2 - t1);
		mmc_batch_remove(s, (const char *const *)b.keys, (size_t)o->batch, b.results);
	} while (now_s() < end || put.n < 3);
	mc = memcpy_baseline(&b, o->batch, size, o->seconds / 4);
	bench_row(proto, "put", size, o->batch, o->layers, bytes, &put, mc);
	bench_row(proto, "get", size, o->batch, o->layers, bytes, &get, mc);
	rc = 0;
out:
	for (int i = 0; b.bufs && i < o->batch; i++)
		mmc_unregister_buffer(s, b.bufs[i], size);
	free_buffers(&b, o->batch);
	samples_free(&put);
	samples_free(&get);
	return rc;
}

static int parse(int argc, char **argv, struct data_opts *o)
{
	static const struct option opts[] = {
	    {"protocol", required_argument, NULL, 'p'}, {"sizes", required_argument, NULL, 's'},
	    {"batch", required_argument, NULL, 'b'},    {"layers", required_argument, NULL, 'l'},
	    {"seconds", required_argument, NULL, 't'},  {"quick", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct data_opts){{"host_shm", "host_tcp"}, 2, {65536, 1048576}, 2, 16, 1, 2.0};
	while ((c = getopt_long(argc, argv, "p:s:b:l:t:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->nprotocols = 1;
			o->protocols[0] = strcmp(optarg, "tcp") == 0   ? "host_tcp"
			                  : strcmp(optarg, "shm") == 0 ? "host_shm"
			                                               : optarg;
			break;
		case 's':
			o->nsizes = 0;
			for (char *t = strtok(optarg, ","); t && o->nsizes < 8; t = strtok(NULL, ","))
				o->sizes[o->nsizes++] = strtoull(t, NULL, 0);
			break;
		case 'b':
			o->batch = atoi(optarg);
			break;
		case 'l':
			o->layers = atoi(optarg);
			break;
		case 't':
			o->seconds = atof(optarg);
			break;
		case 'q':
			o->seconds = 0.2;
			break;
		default:
			printf("usage: mmc-bench data [--protocol tcp|shm] [--sizes B,B,...] [--batch N] [--layers L]\n"
			       "                      [--seconds S] [--quick]\n");
			return c == 'h' ? 1 : -1;
		}
	}
	if (o->batch < 1 || o->batch > MMC_BATCH_MAX || o->layers < 1 || o->layers > MMC_LAYERS_MAX)
		return -1;
	return 0;
}

int bench_data_main(int argc, char **argv, const char *self)
{
	struct data_opts o;
	int rc = parse(argc, argv, &o), seq = 0;
	size_t largest = 0;

	if (rc)
		return rc > 0 ? 0 : 2;
	for (int i = 0; i < o.nsizes; i++)
		largest = o.sizes[i] > largest ? o.sizes[i] : largest;
	bench_header("data path: batch put/get between two processes (client only -> pool owner)");
	for (int p = 0; p < o.nprotocols && rc == 0; p++) {
		struct bench_cluster c;
		mmc_store *s;

		if (bench_cluster_start(&c, self, o.protocols[p], 1, 2 * largest * (uint64_t)o.batch + (64u << 20)))
			return 1;
		s = bench_client(&c, o.protocols[p], 0, 0);
		for (int i = 0; s && i < o.nsizes && rc == 0; i++)
			rc = run_case(s, o.protocols[p], o.sizes[i], &o, &seq);
		if (!s)
			rc = -1;
		mmc_destroy(s);
		bench_cluster_stop(&c);
	}
	return rc ? 1 : 0;
}

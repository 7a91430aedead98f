/*
 * `mmc-bench gva`: the layer-wise one-copy flow of a KV connector against the plain layer calls, on the same
 * DeepSeek-R1 blocks (61 layers x (128 KiB K + 16 KiB V) per block), in one run:
 *   writer: mmc_batch_malloc(blocks) + one mmc_batch_copy per layer (K and V of every block) + batch_write_finish
 *   reader: batch_get_key_info + batch_add_lease + one batch_copy per layer + batch_remove_lease
 *   plain:  mmc_batch_put_from_layers / mmc_batch_get_into_layers of the same blocks
 * next to a single-thread memcpy (hot and cold) of the same bytes.
 */
#include <mmc/mmc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_cluster.h"
#include "bench_data.h"
#include "bench_memcpy.h"

#define LAYERS 61

static const char usage[] = "usage: mmc-bench gva [options]\n"
                            "  --batch N            blocks per call (default 16)\n"
                            "  --protocol tcp|shm   (default shm,tcp)\n"
                            "  --sync on|off|both   LMDB fsync per group commit (default on)\n"
                            "  --seconds S          per measurement (default 2); --quick\n"
                            "  --no-host-path       same-host peers use the network provider (two hosts)\n";

struct gva_run {
	mmc_store *s;
	const struct shape *sh;
	struct kbufs *b;
	mmc_gva *gvas;
	mmc_key_info *info;
	int *res;
	int32_t *ok;
	mmc_gva *g; /* 2 x blocks ranges of one layer */
	void **bufs;
	size_t *sizes;
};

/* The K and V ranges of `layer` in every block: into (write) or out of (read) the objects at gvas. */
static int copy_layer(struct gva_run *r, int layer, bool write)
{
	size_t off = (size_t)layer * (r->sh->piece[0] + r->sh->piece[1]);
	int n = 0;

	for (int i = 0; i < r->b->batch; i++) {
		for (int kv = 0; kv < 2; kv++) {
			size_t at = off + (kv ? r->sh->piece[0] : 0);

			r->g[n] = r->gvas[i] + at;
			r->bufs[n] = (char *)(write ? r->b->src[i] : r->b->dst[i]) + at;
			r->sizes[n++] = r->sh->piece[kv];
		}
	}
	return mmc_batch_copy(r->s, r->g, r->bufs, r->sizes, (size_t)n, write ? MMC_COPY_H2G : MMC_COPY_G2H, 0);
}

static int gva_write(struct gva_run *r)
{
	const char *const *keys = (const char *const *)r->b->keys;
	size_t n = (size_t)r->b->batch;

	for (size_t i = 0; i < n; i++)
		r->sizes[i] = r->sh->block;
	if (mmc_batch_malloc(r->s, keys, r->sizes, n, MMC_MEDIA_DRAM, 0, r->gvas))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!r->gvas[i])
			return -1;
	for (int l = 0; l < LAYERS; l++)
		if (copy_layer(r, l, true))
			return -1;
	if (mmc_batch_write_finish(r->s, keys, r->ok, n, r->res))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (r->res[i])
			return -1;
	return 0;
}

static int gva_read(struct gva_run *r)
{
	const char *const *keys = (const char *const *)r->b->keys;
	size_t n = (size_t)r->b->batch;
	int rc = 0;

	if (mmc_batch_get_key_info(r->s, keys, n, 0, r->info) || mmc_batch_add_lease(r->s, keys, n, 0, r->res))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (r->res[i] || !r->info[i].blob_num)
			return -1;
		r->gvas[i] = r->info[i].gva[0];
	}
	for (int l = 0; l < LAYERS && rc == 0; l++)
		rc = copy_layer(r, l, false);
	return mmc_batch_remove_lease(r->s, keys, n) || rc ? -1 : 0;
}

static int plain(struct gva_run *r, bool put)
{
	struct kbufs *b = r->b;
	int rc;

	if (put)
		rc = mmc_batch_put_from_layers(r->s, (const char *const *)b->keys,
		                               (const void *const *const *)b->src_pieces,
		                               (const size_t *const *)b->piece_sizes, b->npieces, (size_t)b->batch,
		                               MMC_COPY_H2G, NULL, b->results);
	else
		rc = mmc_batch_get_into_layers(r->s, (const char *const *)b->keys, (void *const *const *)b->dst_pieces,
		                               (const size_t *const *)b->piece_sizes, b->npieces, (size_t)b->batch,
		                               MMC_COPY_G2H, b->results);
	for (int i = 0; rc == 0 && i < b->batch; i++)
		rc = b->results[i];
	return rc ? -1 : 0;
}

static void name_keys(struct kbufs *b, int seq)
{
	for (int i = 0; i < b->batch; i++)
		snprintf(b->keys[i], 96, "g/%d/%d", seq, i);
}

static int verify(const struct gva_run *r)
{
	for (int i = 0; i < r->b->batch; i++)
		if (memcmp(r->b->src[i], r->b->dst[i], r->sh->block))
			return -1;
	return 0;
}

/* One round of the four timed calls; the first round (warm-up) checks the bytes of both reads. */
static int round_once(struct gva_run *r, int seq, struct samples *s, bool check)
{
	double t[5];
	int rc;

	name_keys(r->b, seq);
	t[0] = now_s();
	rc = gva_write(r);
	t[1] = now_s();
	rc = rc ? rc : gva_read(r);
	t[2] = now_s();
	if (rc == 0 && check && verify(r))
		rc = -1;
	mmc_batch_remove(r->s, (const char *const *)r->b->keys, (size_t)r->b->batch, r->res);
	name_keys(r->b, -seq - 1);
	for (int i = 0; check && i < r->b->batch; i++)
		memset(r->b->dst[i], 0, r->sh->block);
	t[3] = now_s();
	rc = rc ? rc : plain(r, true);
	t[4] = now_s();
	rc = rc ? rc : plain(r, false);
	if (rc == 0 && check && verify(r))
		rc = -1;
	samples_add(&s[0], t[1] - t[0]);
	samples_add(&s[1], t[2] - t[1]);
	samples_add(&s[2], t[4] - t[3]);
	samples_add(&s[3], now_s() - t[4]);
	mmc_batch_remove(r->s, (const char *const *)r->b->keys, (size_t)r->b->batch, r->res);
	return rc;
}

static int run_alloc(struct gva_run *r, int batch)
{
	size_t n = (size_t)batch;

	r->gvas = calloc(n, sizeof(*r->gvas));
	r->info = calloc(n, sizeof(*r->info));
	r->res = calloc(n, sizeof(*r->res));
	r->ok = calloc(n, sizeof(*r->ok));
	r->g = calloc(2 * n, sizeof(*r->g));
	r->bufs = calloc(2 * n, sizeof(*r->bufs));
	r->sizes = calloc(2 * n, sizeof(*r->sizes));
	return r->gvas && r->info && r->res && r->ok && r->g && r->bufs && r->sizes ? 0 : -1;
}

static void run_free(struct gva_run *r)
{
	free(r->gvas);
	free(r->info);
	free(r->res);
	free(r->ok);
	free(r->g);
	free(r->bufs);
	free(r->sizes);
}

static void row(const char *op, const struct shape *sh, int batch, struct samples *s, double cold, double plain_gbs,
                double *out)
{
	double med = samples_median(s), p99 = samples_p99(s), g = med > 0 ? (double)batch * sh->block / med / 1e9 : 0;

	printf("%-16s %5d %7.2f %8.3f %8.3f %7.2f %8.2f", op, batch, g, med * 1e3, p99 * 1e3, cold, g / cold);
	if (plain_gbs > 0)
		printf(" %8.2f", g / plain_gbs);
	printf("\n");
	fflush(stdout);
	if (out)
		*out = g;
}

static int section(const struct bench_opts *o, const char *protocol, int sync, const struct shape *sh, int batch,
                   double hot, double cold)
{
	static const char *const ops[] = {"gva_write", "gva_read", "put_from_layers", "get_into_layers"};
	struct samples s[4] = {{0}};
	struct bench_cluster c;
	struct gva_run r = {0};
	struct kbufs b;
	double end, put_g = 0, get_g = 0;
	int rc, seq = 0;

	if (bench_cluster_start(&c, o->self, protocol, o->targets, 3 * (uint64_t)batch * sh->block + (64u << 20), sync))
		return -1;
	r.s = bench_client(&c, protocol, 0, 0);
	r.sh = sh;
	r.b = &b;
	rc = r.s && kbufs_alloc(&b, sh, batch) == 0 && run_alloc(&r, batch) == 0 ? 0 : -1;
	for (int i = 0; rc == 0 && i < batch; i++)
		rc = mmc_register_buffer(r.s, b.src[i], sh->block) || mmc_register_buffer(r.s, b.dst[i], sh->block);
	rc = rc ? rc : round_once(&r, seq++, s, true);
	for (int i = 0; i < 4; i++)
		samples_free(&s[i]);
	end = now_s() + o->seconds;
	while (rc == 0 && (now_s() < end || s[0].n < 3))
		rc = round_once(&r, seq++, s, false);
	if (rc == 0) {
		printf(
		    "\n# GVA layer-wise flow vs layer calls: provider %s, LMDB sync %s, DeepSeek-R1 blocks (%d layers, "
		    "%zu KiB each), memcpy hot %.2f GB/s\n",
		    bench_proto_str(protocol), sync ? "on" : "off", LAYERS, sh->block >> 10, hot);
		printf("# gva_write = malloc + 61 x batch_copy + write_finish; gva_read = key_info + add_lease + 61 x "
		       "batch_copy + remove_lease; /plain = against the layer call in the same direction\n");
		printf("%-16s %5s %7s %8s %8s %7s %8s %8s\n", "op", "blocks", "GB/s", "p50ms", "p99ms", "mcpyC",
		       "/mcpyC", "/plain");
		row(ops[2], sh, batch, &s[2], cold, 0, &put_g);
		row(ops[3], sh, batch, &s[3], cold, 0, &get_g);
		row(ops[0], sh, batch, &s[0], cold, put_g, NULL);
		row(ops[1], sh, batch, &s[1], cold, get_g, NULL);
	} else {
		fprintf(stderr, "mmc-bench gva: a call failed or bytes came back different\n");
	}
	for (int i = 0; i < 4; i++)
		samples_free(&s[i]);
	run_free(&r);
	kbufs_free(&b);
	mmc_destroy(r.s);
	bench_cluster_stop(&c);
	return rc;
}

int bench_gva_main(int argc, char **argv, const char *self)
{
	struct bench_opts o;
	struct shape sh;
	struct kbufs b;
	double hot, cold;
	int rc = bench_parse(argc, argv, &o, usage), batch;

	if (rc)
		return rc > 0 ? 0 : 2;
	o.self = self;
	o.dsr1 = true;
	bench_shape(&o, 0, &sh);
	batch = o.batch_given ? o.batches[0] : 16;
	if (o.quick && !o.batch_given)
		batch = 4;
	if (kbufs_alloc(&b, &sh, batch)) {
		kbufs_free(&b);
		return 1;
	}
	hot = memcpy_hot(&sh, b.src, b.dst, batch, o.seconds / 2);
	kbufs_free(&b);
	cold = memcpy_cold(&sh, batch, o.seconds / 2);
	memcpy_cold_free();
	for (int p = 0; p < o.nprotocols && rc == 0; p++) {
		bench_use_protocol(&o, o.protocols[p]);
		for (int y = 0; y < o.nsync && rc == 0; y++)
			rc = section(&o, o.protocols[p], o.sync[y], &sh, batch, hot, cold);
	}
	if (rc)
		fprintf(stderr, "mmc-bench gva: FAILED\n");
	return rc ? 1 : 0;
}

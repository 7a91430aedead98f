/*
 * The mmc side of the data benchmarks: client-only stores (in one or more client processes, each with one or
 * more threads) that put, get and remove batches of keys held by the cluster's target processes. A client that
 * lent a pool would have its single puts land in its own pool by memcpy; a client-only store makes every byte
 * cross the fabric to another process.
 */
#ifndef MMC_BENCH_DATA_H
#define MMC_BENCH_DATA_H

#include "bench.h"
#include "bench_cluster.h"

/* Key buffers of one client thread: batch blocks of sh->block bytes, one piece list per key. */
struct kbufs {
	int batch;
	char **keys;
	void **src, **dst;
	void ***src_pieces, ***dst_pieces;
	size_t **piece_sizes;
	size_t *npieces;
	int *results;
};

int kbufs_alloc(struct kbufs *b, const struct shape *sh, int batch);
void kbufs_free(struct kbufs *b);

/* Put, get and remove batches from threads x procs clients for o->seconds; one sample per call per client. */
int data_measure(const struct bench_cluster *c, const char *protocol, const struct bench_opts *o,
                 const struct shape *sh, int batch, struct samples *put, struct samples *get);

#endif

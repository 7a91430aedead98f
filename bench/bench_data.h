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

/* Per-call times; with --checksum both, put_ck and get_ck hold the rounds of the store with verify_checksum on. */
struct dsamples {
	struct samples put, get, put_ck, get_ck;
};

void dsamples_free(struct dsamples *d);

/*
 * Interleaving with a baseline: the clients run `rounds` rounds of round_s seconds each and, after each round, stop
 * while between(arg) runs in the calling process, so what it measures sees the same machine as the clients' calls
 * next to it. The clients keep their stores (and extents) from round to round.
 */
struct data_gate {
	int rounds;
	double round_s;
	int (*between)(void *arg);
	void *arg;
};

/*
 * Put, get and remove batches from threads x procs clients, for the rounds of g (or, g NULL, one round of
 * o->seconds); one sample per call per client. With --checksum both each client thread alternates calls between a
 * store without and one with verify_checksum, on the same buffers and targets, so both see the same load.
 */
int data_measure(const struct bench_cluster *c, const char *protocol, const struct bench_opts *o,
                 const struct shape *sh, int batch, const struct data_gate *g, struct dsamples *out);

#endif

/*
 * A local service that lends a pool no process has mapped, for metadata benchmarks at 10^7-10^8 objects on a small
 * machine. Only metadata may name it: a byte written there by RMA would go nowhere.
 */
#ifndef MMC_BENCH_UNBACKED_H
#define MMC_BENCH_UNBACKED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct bench_unbacked {
	int fd; /* its session with the meta server: closing it unmounts the pool */
	uint32_t rank;
	uint64_t incarnation;
	uint8_t secret[64]; /* what a rejoin presents */
	size_t secret_len;
	uint64_t bytes;
	uint64_t next_id;
	pthread_t thread; /* heartbeats */
	atomic_bool stop;
};

/* Registers a DRAM pool of bytes with the meta server on 127.0.0.1:port. Returns 0 or -1 (said on stderr). */
int bench_unbacked_start(struct bench_unbacked *u, uint16_t port, uint64_t bytes);
/* After a restart of the meta server: stops the heartbeats and closes the dead connection (detach), then (rejoin,
 * the server now on 127.0.0.1:port) registers again with its rank, incarnation and secret, as a local service does,
 * which takes its objects back, and beats again. rejoin returns 0 or -1. */
void bench_unbacked_detach(struct bench_unbacked *u);
int bench_unbacked_rejoin(struct bench_unbacked *u, uint16_t port);
void bench_unbacked_stop(struct bench_unbacked *u);

#endif

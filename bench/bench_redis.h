/*
 * The baseline users pick today: a private redis-server (Debian's, persistence off, on a free loopback port)
 * driven through hiredis. Each client thread has its own connection and moves a batch of blocks as one pipeline
 * of SETs, then one of GETs whose replies are copied into the caller's buffers (what a KV connector must do).
 * Built only when hiredis is found; otherwise redis_start() says so and the baseline column reads "-".
 */
#ifndef MMC_BENCH_REDIS_H
#define MMC_BENCH_REDIS_H

#include <stdint.h>
#include <sys/types.h>

#include "bench.h"

struct redis_server {
	pid_t pid;
	uint16_t port;
	char dir[64];
};

int redis_start(struct redis_server *r);
void redis_stop(struct redis_server *r);

/* GB/s (threads x bytes per call / median call) of SET and GET of batch blocks per thread. 0 on failure. */
int redis_measure(const struct redis_server *r, const struct shape *sh, int batch, int threads, double seconds,
                  double *set_gbs, double *get_gbs);

#endif

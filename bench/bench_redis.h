/*
 * The baseline users pick today: a private redis-server (Debian's, on a free loopback port) driven through hiredis,
 * either with persistence off (what LMCache deployments run) or with an append-only file fsynced before each reply
 * (appendfsync always: the same promise as mmc-metaserver's default LMDB sync). Each client thread has its own
 * connection and moves a batch of blocks as one pipeline of SETs, then one of GETs whose replies are copied into the
 * caller's buffers (what a KV connector must do). Without a redis-server to start, redis_start() fails and the
 * baseline column reads "-".
 */
#ifndef MMC_BENCH_REDIS_H
#define MMC_BENCH_REDIS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench.h"

struct redis_server {
	pid_t pid;
	uint16_t port;
	char dir[64];
};

struct redisContext;

/* A connection to the server on 127.0.0.1:port, or NULL. redisFree() it. */
struct redisContext *redis_connect(uint16_t port);
/* fsync: appendonly yes, appendfsync always; else no persistence at all. */
int redis_start(struct redis_server *r, bool fsync);
void redis_stop(struct redis_server *r);

/* GB/s (threads x bytes per call / median call) of SET and GET of batch blocks per thread. 0 on failure. */
int redis_measure(const struct redis_server *r, const struct shape *sh, int batch, int threads, double seconds,
                  double *set_gbs, double *get_gbs);

#endif

/* What `mmc-bench meta` and its client processes share: the key space, a put's metadata, the leader's CPU clock. */
#ifndef MMC_BENCH_META_H
#define MMC_BENCH_META_H

#include <mmc/mmc.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FILL_CHUNK 4096
#define TINY       64
#define KEY_CHARS  96

/* Writes key i of the index into buf (KEY_CHARS bytes): 64 hex digits of a prefix hash, then "@tp0@kv". */
const char *key_name(char *buf, size_t i);
/* A put's metadata alone (batch_malloc + write_finish of TINY-byte objects, no byte moved). 0 or -1. */
int put_meta(mmc_store *s, const char **keys, int batch, int *res);
/* CPU time of pid's main thread (the server's loop) in ns, from /proc/<pid>/schedstat; 0 if unknown. */
uint64_t cpu_ns(pid_t pid);
/* CPU time of all of pid's threads in ns (the loop, the store's writer, KVCM's), from /proc/<pid>/task/{*}/schedstat;
 * 0 if unknown. */
uint64_t cpu_all_ns(pid_t pid);
/* Bytes pid caused to be written to storage so far (write_bytes of /proc/<pid>/io: the metadata store's pages,
 * whether the store or the kernel's writeback wrote them); 0 if unknown. */
uint64_t proc_write_bytes(pid_t pid);
/* A size field of /proc/<pid>/status ("VmRSS", "RssAnon", "RssFile") in bytes; 0 if unknown. */
uint64_t proc_status_bytes(pid_t pid, const char *field);

/* The Redis baseline (bench_meta_redis.c): Redis with the same keys, asked the same per call. */
struct meta_redis;
struct samples;
enum meta_redis_op { META_REDIS_EXISTS, META_REDIS_GET, META_REDIS_SET };
/* Starts a private redis-server (persistence off) for calls of up to max(batch, FILL_CHUNK) keys; NULL if none
 * started (the reason is on stderr). */
struct meta_redis *meta_redis_start(int batch);
void meta_redis_stop(struct meta_redis *r);
pid_t meta_redis_pid(const struct meta_redis *r);
/* Redis holds keys 0 .. n-1 of the index (key_name), each with a TINY-byte value. 0 or -1. */
int meta_redis_fill(struct meta_redis *r, size_t n);
/* Calls of batch keys for seconds (at least 3), each one pipeline: EXISTS or GET of random keys of the index, or SET
 * of fresh keys (then DEL of them, untimed). The time of each call goes to out. 0, or -1 if a reply was wrong. */
int meta_redis_measure(struct meta_redis *r, enum meta_redis_op op, int batch, double seconds, struct samples *out);

/* `mmc-bench meta --procs P --threads T`: P client processes x T threads against the one leader, after the sweep. */
int bench_meta_many(const char *self, const char *url, const char *protocol, size_t nkeys, int batch, int procs,
                    int threads, double seconds, pid_t server);
/* The client process of it (`mmc-bench meta-client ...`). */
int bench_meta_client_main(int argc, char **argv);

#endif

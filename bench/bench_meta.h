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

/* `mmc-bench meta --procs P --threads T`: P client processes x T threads against the one leader, after the sweep. */
int bench_meta_many(const char *self, const char *url, const char *protocol, size_t nkeys, int batch, int procs,
                    int threads, double seconds, pid_t server);
/* The client process of it (`mmc-bench meta-client ...`). */
int bench_meta_client_main(int argc, char **argv);

#endif

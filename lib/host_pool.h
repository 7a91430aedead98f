/*
 * A local service's pool as a named shared file, so that other processes on the same host can map it and copy
 * with memcpy (the host path, host_map.h) while remote peers still reach it by RMA.
 *
 * The file is /dev/hugepages/mmc-pool.<pid>.<random> when hugetlbfs is mounted and has the pages, else under
 * /dev/shm, else (a /dev/shm too small, as in containers) a memfd that readers open as /proc/<pid>/fd/<n>; created
 * O_EXCL with mode 0600 and its pages allocated up front (fallocate), so that neither the owner
 * nor a peer copying into it can take a SIGBUS when tmpfs runs out later. Behind the pool's last byte sits one
 * header page that says whether the pool may be used: the owner's current incarnation and a random key that
 * changes whenever the pool's fabric key changes (a meta server restart) and is 0 once the owner has left.
 *
 * Liveness without pids: the owner holds an open-file-description write lock on the file for its whole life; the
 * kernel drops it when the owner exits, however it exits. A probe for that lock tells a reader whether the owner
 * still runs, and tells the next owner on the host which files are leftovers of killed processes (it unlinks
 * them). A child the owner forks holds no share of the lock: its copy of the descriptor is pointed at /dev/null and
 * the mapping is not inherited (fork_guard.h).
 */
#ifndef MMC_HOST_POOL_H
#define MMC_HOST_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOST_POOL_PATH_SIZE 128
#define HOST_POOL_MAGIC     UINT64_C(0x6d6d632d706f6f6c) /* "mmc-pool" */

/* The page after the pool's last byte. Written by the owner only; read by every process that maps the pool. */
struct host_pool_hdr {
	uint64_t magic;
	uint64_t pool_size;           /* bytes before this header */
	_Atomic uint64_t key;         /* 0: the owner left; a reader's key must match */
	_Atomic uint64_t incarnation; /* the owner's registered incarnation; 0 while it (re)registers */
};

struct host_pool {
	int fd;
	char path[HOST_POOL_PATH_SIZE];
	struct host_pool_hdr *hdr;
	size_t map_len; /* pool + header */
	bool memfd;     /* path is /proc/PID/fd/N: nothing to unlink */
};

/*
 * Creates and maps a pool of len bytes (a multiple of 2 MiB), 2 MiB aligned. Returns 0 with *base set and *huge
 * true on hugetlbfs, or MMC_MALLOC_FAILED (no shared memory of that size here: the caller falls back to a private
 * pool). Removes other owners' leftover pool files first.
 */
int host_pool_create(struct host_pool *hp, size_t len, void **base, bool *huge);
/* One place only: dir (a hugetlbfs or tmpfs mount), or NULL for a memfd. */
int host_pool_create_in(struct host_pool *hp, const char *dir, size_t len, void **base, bool *huge);
/* Marks the pool left (key 0), unlinks its file and unmaps it. Accepts a pool that was never created (fd < 0). */
void host_pool_destroy(struct host_pool *hp, void *base);

/* A fresh random non-zero key (published before the registration that carries it). */
uint64_t host_pool_rekey(struct host_pool *hp);
void host_pool_set_incarnation(struct host_pool *hp, uint64_t incarnation);

/* True while the process that created the pool file open on fd still runs. */
bool host_pool_owner_alive(int fd);

#endif

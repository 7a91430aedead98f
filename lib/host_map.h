/*
 * Another process's pool on this host, mapped into ours (the host path): a get or put to it is a memcpy. Opened
 * from the path the owner registered (host_pool.h), refcounted so that a transfer in progress keeps its mapping
 * while the peer cache replaces or drops it. The mapping stays valid for as long as it is mapped, whatever the owner
 * does (exits, is killed, unlinks the file), so a vanished owner can never make a copy fault; whether the bytes may
 * be used is host_map_usable()'s answer, asked before and after copying.
 */
#ifndef MMC_HOST_MAP_H
#define MMC_HOST_MAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host_pool.h"

struct host_map {
	atomic_uint refs;
	int fd;
	char *base;     /* the pool's byte 0 */
	size_t size;    /* pool bytes, the header excluded */
	size_t map_len; /* pool + header */
	const struct host_pool_hdr *hdr;
	char path[HOST_POOL_PATH_SIZE];
};

/*
 * Maps the pool file at path (it must be an mmc pool file of this user, of pool_size bytes). Returns 0 with one
 * reference, or MMC_LINK_NOT_FOUND (gone, not ours, not a pool, or mapping refused: the caller uses the network).
 */
int host_map_open(const char *path, uint64_t pool_size, struct host_map **out);
struct host_map *host_map_ref(struct host_map *m);
/* Drops a reference; the last one unmaps, and removes the file of an owner that died without doing so (a killed
 * owner's pool would otherwise hold its memory until the next pool is created on the host). NULL-safe. */
void host_map_unref(struct host_map *m);

/* The header names key, whatever its incarnation (0 while the owner registers again): the file is that owner's pool.
 * A path names another process's pool where the PID namespace differs (/proc/PID/fd/N of a memfd pool): containers
 * on one kernel share the boot id, and with host networking the host name too. */
bool host_map_keyed(const struct host_map *m, uint64_t key);
/* Cheap (two loads): the header still names (key, incarnation). */
bool host_map_current(const struct host_map *m, uint64_t key, uint64_t incarnation);
/* host_map_current() and the owner still runs (one fcntl). */
bool host_map_usable(const struct host_map *m, uint64_t key, uint64_t incarnation);
/*
 * host_map_usable(), once an owner that is registering again has read its answer: while the header names key with
 * incarnation 0 and the owner runs, waits (sleeping, in steps of up to 2 ms) until it names an incarnation or
 * until_ms (clock_ms()) passes. The meta server that named this pool and incarnation to the caller had already
 * taken the owner's Register (a rejoin after a meta server restart), so the answer is normally on its way (a Register
 * whose answer was lost leaves the header at 0 until the next attempt, hence until_ms); without the wait a same-host
 * reader fails a readable key for the length of one round trip. Thread-safe; it reads only.
 */
bool host_map_await(const struct host_map *m, uint64_t key, uint64_t incarnation, uint64_t until_ms);

#endif

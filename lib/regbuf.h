/*
 * Buffers the application registered with mmc_register_buffer(): sorted by address, looked up for each RMA to find
 * the local descriptor. Readers (every data call) share a read lock taken once per call. Thread-safe.
 */
#ifndef MMC_REGBUF_H
#define MMC_REGBUF_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

struct regbuf {
	uintptr_t addr;
	size_t len;
	struct fab_mr mr;
};

struct regbufs {
	pthread_rwlock_t lock;
	struct regbuf *v;
	size_t n, cap;
};

void regbufs_init(struct regbufs *r);
/* Unregisters everything and frees. */
void regbufs_fini(struct regbufs *r);
int regbufs_add(struct regbufs *r, struct fabric *f, void *buf, size_t len);
/* MMC_INVALID_PARAM when (buf, len) is not registered. */
int regbufs_del(struct regbufs *r, void *buf, size_t len);
/* Caller holds the read lock: the registration that contains [buf, buf+len), or NULL. */
const struct regbuf *regbufs_find(const struct regbufs *r, const void *buf, size_t len);

#endif

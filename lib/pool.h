/*
 * The memory a local service lends: one mmap'ed region, 2 MiB aligned, huge pages when the system has them. Shared
 * (a named file that same-host processes map, host_pool.h) when asked and possible, else private anonymous memory.
 */
#ifndef MMC_POOL_H
#define MMC_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "host_pool.h"

#define POOL_ALIGN ((size_t)2 << 20)

struct pool {
	void *base;
	size_t size;
	bool huge;
	bool shared;           /* host.path names it; other processes on this host may map it */
	struct host_pool host; /* when shared */
};

/* Maps size bytes rounded up to 2 MiB; shared: try a host pool first. Returns 0 or MMC_MALLOC_FAILED. */
int pool_map(struct pool *p, size_t size, bool shared);
void pool_unmap(struct pool *p);

#endif

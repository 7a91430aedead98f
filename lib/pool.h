/* The memory a local service lends: one mmap'ed region, 2 MiB aligned, huge pages when the system has them. */
#ifndef MMC_POOL_H
#define MMC_POOL_H

#include <stdbool.h>
#include <stddef.h>

#define POOL_ALIGN ((size_t)2 << 20)

struct pool {
	void *base;
	size_t size;
	bool huge;
};

/* Maps size bytes rounded up to 2 MiB. Returns 0 or MMC_MALLOC_FAILED. */
int pool_map(struct pool *p, size_t size);
void pool_unmap(struct pool *p);

#endif

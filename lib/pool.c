#include "pool.h"

#include <stdint.h>
#include <sys/mman.h>

#include "lg.h"
#include "mmc/mmc.h"

int pool_map(struct pool *p, size_t size, bool shared)
{
	size_t len = (size + POOL_ALIGN - 1) & ~(POOL_ALIGN - 1);
	void *m;

	p->base = NULL;
	p->size = 0;
	p->huge = false;
	p->shared = false;
	p->host.fd = -1;
	if (len == 0)
		return MMC_INVALID_PARAM;
	if (shared && host_pool_create(&p->host, len, &p->base, &p->huge) == 0) {
		p->shared = true;
		p->size = len;
		return 0;
	}
	if (shared)
		lg_warn("no shared memory for a pool of %zu bytes: same-host peers will reach it over the network "
		        "provider",
		        len);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (m != MAP_FAILED) {
		p->huge = true;
	} else {
		/* over-map by 2 MiB and trim, so the pool starts on a huge-page boundary for THP */
		char *raw = mmap(NULL, len + POOL_ALIGN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uintptr_t start;

		if (raw == MAP_FAILED) {
			lg_error("cannot map a pool of %zu bytes", len);
			return MMC_MALLOC_FAILED;
		}
		start = ((uintptr_t)raw + POOL_ALIGN - 1) & ~(uintptr_t)(POOL_ALIGN - 1);
		if (start > (uintptr_t)raw)
			munmap(raw, start - (uintptr_t)raw);
		munmap((char *)start + len, (uintptr_t)raw + POOL_ALIGN - start);
		m = (void *)start;
		madvise(m, len, MADV_HUGEPAGE);
	}
	/* a child forked without exec cannot use the pool; inherited, every page this process writes after the fork
	 * would be copied for it */
	madvise(m, len, MADV_DONTFORK);
	p->base = m;
	p->size = len;
	return 0;
}

void pool_unmap(struct pool *p)
{
	if (p->shared)
		host_pool_destroy(&p->host, p->base);
	else if (p->base)
		munmap(p->base, p->size);
	p->base = NULL;
	p->size = 0;
	p->shared = false;
}

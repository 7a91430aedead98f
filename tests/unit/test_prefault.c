/*
 * The prefault worker (metaserver/state/prefault.h): blocks made ahead and handed out once, none lost or made
 * beyond the limit, ranges faulted in without a byte of them changed, and nothing done without a worker; and the
 * slab's chunks made through it during a load.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prefault.h"
#include "slab.h"

#define BLOCK ((size_t)64 << 10)

static atomic_int made, dropped;

static void *make(void)
{
	void *p = mmap(NULL, BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	atomic_fetch_add(&made, 1);
	return p;
}

static void drop(void *p)
{
	atomic_fetch_add(&dropped, 1);
	munmap(p, BLOCK);
}

static void reset(void)
{
	atomic_store(&made, 0);
	atomic_store(&dropped, 0);
}

/* A block from the worker, waiting for it up to 5 s. */
static void *take_wait(void)
{
	for (int i = 0; i < 5000; i++) {
		void *b = prefault_take();

		if (b)
			return b;
		usleep(1000);
	}
	return NULL;
}

Test(prefault, blocks_handed_out_once_up_to_the_limit, .init = reset)
{
	void *got[40];
	size_t limit = 40, n = 0;

	cr_assert(prefault_start(BLOCK, limit, make, drop));
	cr_assert_not(prefault_start(BLOCK, limit, make, drop), "one worker at a time");
	for (; n < 30; n++) {
		cr_assert_not_null(got[n] = take_wait(), "block %zu", n);
		for (size_t i = 0; i < n; i++)
			cr_assert_neq(got[i], got[n], "a block handed out twice");
		cr_assert_eq(*(volatile char *)got[n], 0, "blocks come zeroed");
		memset(got[n], 0x5a, BLOCK); /* ours now */
	}
	cr_assert_geq(prefault_stop(), 30 * BLOCK, "the worker counts what it faulted in");
	cr_assert_leq(atomic_load(&made), (int)limit);
	cr_assert_eq(atomic_load(&made), (int)n + atomic_load(&dropped), "every block made is taken or dropped");
	cr_assert_null(prefault_take(), "no worker: nothing to take");
	for (size_t i = 0; i < n; i++)
		munmap(got[i], BLOCK);
}

Test(prefault, the_limit_stops_the_worker, .init = reset)
{
	cr_assert(prefault_start(BLOCK, 3, make, drop));
	for (int i = 0; i < 3; i++)
		cr_assert_not_null(take_wait());
	usleep(50000);
	cr_assert_null(prefault_take(), "a fourth block beyond the limit");
	prefault_stop();
	cr_assert_eq(atomic_load(&made), 3);
	cr_assert_eq(atomic_load(&dropped), 0);
}

static bool resident(const char *p, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *v = malloc(len / page);
	bool all = true;

	cr_assert_not_null(v);
	cr_assert_eq(mincore((void *)p, len, v), 0);
	for (size_t i = 0; i < len / page; i++)
		all &= v[i] & 1;
	free(v);
	return all;
}

/* MADV_POPULATE_WRITE: Linux 5.14 on. */
static bool populate_write_works(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *probe = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool works;

	cr_assert_neq(probe, MAP_FAILED);
	works = madvise(probe, page, MADV_POPULATE_WRITE) == 0;
	munmap(probe, page);
	return works;
}

Test(prefault, ranges_faulted_in_unchanged, .init = reset)
{
	size_t len = (size_t)8 << 20, page = (size_t)sysconf(_SC_PAGESIZE);
	char *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool populate_write = populate_write_works();

	cr_assert_neq(r, MAP_FAILED);
	memset(r + 3 * page + 17, 0xa5, 100); /* written before: kept */
	cr_assert_not(resident(r, len));
	cr_assert(prefault_start(BLOCK, 0, make, drop));
	prefault_range(r + 5, len - 10); /* not page-aligned: the pages around it go in */
	for (int i = 0; i < 5000 && !resident(r, len) && populate_write; i++)
		usleep(1000);
	prefault_stop();
	cr_assert_eq(atomic_load(&made), 0, "no block asked for");
	if (populate_write)
		cr_assert(resident(r, len), "the worker faulted the range in");
	for (size_t i = 0, bad = 0; i < len && !bad; i++) {
		bad = (unsigned char)r[i] != (i >= 3 * page + 17 && i < 3 * page + 117 ? 0xa5 : 0);
		cr_assert_not(bad, "byte %zu changed", i);
	}
	munmap(r, len);
}

Test(prefault, nothing_without_a_worker, .init = reset)
{
	char buf[64];

	prefault_range(buf, sizeof(buf));
	cr_assert_null(prefault_take());
	cr_assert_eq(prefault_stop(), 0);
	cr_assert_eq(atomic_load(&made), 0);
}

Test(prefault, a_loads_slab_chunks_come_faulted_in, .init = reset)
{
	void *rec[3];
	uint32_t h[3];
	size_t faulted;

	slab_populate((size_t)8 << 20);
	for (int i = 0; i < 3; i++) {
		/* a record of a class of its own each: three chunks */
		cr_assert_neq(h[i] = slab_alloc(64 + 8 * (size_t)i, &rec[i]), 0);
		cr_assert_eq(((uintptr_t)rec[i] & (SLAB_CHUNK - 1)), SLAB_HEADER, "the first record after the header");
		cr_assert(resident((char *)rec[i] - SLAB_HEADER, SLAB_CHUNK), "chunk %d faulted in", i);
		cr_assert_eq(*(volatile char *)rec[i], 0);
	}
	faulted = slab_populate(0);
	cr_assert_leq(faulted, 3 * SLAB_CHUNK, "chunks made but not taken are not counted");
	for (int i = 0; i < 3; i++)
		cr_assert_eq(slab_ptr(h[i]), rec[i]);
	slab_fini();
}

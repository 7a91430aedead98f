/*
 * The prefault worker (metaserver/state/prefault.h): blocks made ahead and handed out once, none lost or made
 * beyond the limit, ranges faulted in without a byte of them changed, and nothing done without a worker; and the
 * slab's chunks made through it, during a load and after, in huge pages where the kernel has them.
 */
#include <criterion/criterion.h>
#include <stdio.h>
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

/* The kernel's transparent huge page mode: "always", "madvise" or "never" ("" if unknown). */
static const char *thp_mode(void)
{
	static char mode[16];
	char line[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char *a, *b;

	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
	}
	mode[0] = '\0';
	if ((a = strchr(line, '[')) && (b = strchr(a, ']')) && (size_t)(b - a - 1) < sizeof(mode))
		snprintf(mode, sizeof(mode), "%.*s", (int)(b - a - 1), a + 1);
	return mode;
}

/* THPeligible of the mapping that holds p, from /proc/self/smaps; -1 if not found. */
static int thp_eligible(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;
	int v = -1;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int e;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (in && sscanf(line, "THPeligible: %d", &e) == 1)
			v = e;
	}
	fclose(f);
	return v;
}

/* Waits up to 5 s for the worker to have n blocks ready. */
static void ready_wait(size_t n)
{
	for (int i = 0; i < 5000 && prefault_ready() < n; i++)
		usleep(1000);
	cr_assert_geq(prefault_ready(), n, "the worker made no chunks ahead");
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

	cr_assert(prefault_start(BLOCK, limit, PREFAULT_AHEAD, make, drop));
	cr_assert_not(prefault_start(BLOCK, limit, PREFAULT_AHEAD, make, drop), "one worker at a time");
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
	cr_assert(prefault_start(BLOCK, 3, PREFAULT_AHEAD, make, drop));
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
	cr_assert(prefault_start(BLOCK, 0, PREFAULT_AHEAD, make, drop));
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
	ready_wait(3); /* else the loop may make a chunk itself, in small pages for good */
	for (int i = 0; i < 3; i++) {
		/* a record of a class of its own each: three chunks */
		cr_assert_neq(h[i] = slab_alloc(64 + 8 * (size_t)i, &rec[i]), 0);
		cr_assert_eq(((uintptr_t)rec[i] & (SLAB_CHUNK - 1)), SLAB_HEADER, "the first record after the header");
		cr_assert(resident((char *)rec[i] - SLAB_HEADER, SLAB_CHUNK), "chunk %d faulted in", i);
		cr_assert_eq(*(volatile char *)rec[i], 0);
		if (strcmp(thp_mode(), "madvise") == 0 || strcmp(thp_mode(), "always") == 0)
			cr_assert_eq(thp_eligible(rec[i]), 1, "chunk %d: small pages khugepaged may merge", i);
	}
	faulted = slab_populate(0);
	cr_assert_leq(faulted, 3 * SLAB_CHUNK, "chunks made but not taken are not counted");
	for (int i = 0; i < 3; i++)
		cr_assert_eq(slab_ptr(h[i]), rec[i]);
	slab_fini();
}

Test(prefault, chunks_are_made_ahead_in_huge_pages_after_a_load_too, .init = reset)
{
	void *rec[2];
	const char *mode = thp_mode();

	slab_populate((size_t)8 << 20);
	cr_assert_eq(slab_populate(0), 0, "no chunk taken during the load");
	ready_wait(2); /* slab_populate(0) left a worker that keeps chunks ahead */
	for (int i = 0; i < 2; i++) {
		cr_assert_neq(slab_alloc(64 + 8 * (size_t)i, &rec[i]), 0);
		cr_assert(resident((char *)rec[i] - SLAB_HEADER, SLAB_CHUNK), "chunk %d made by the worker", i);
		if (strcmp(mode, "madvise") == 0 || strcmp(mode, "always") == 0)
			cr_assert_eq(thp_eligible(rec[i]), 1, "chunk %d not in a huge-page mapping (THP %s)", i, mode);
	}
	ready_wait(1); /* and it makes more once they are taken */
	slab_fini();
	cr_assert_eq(prefault_ready(), 0, "slab_fini stops the worker");
}

Test(prefault, what_the_loop_writes_first_is_in_small_pages, .init = reset)
{
	const char *mode = thp_mode();
	char *table = slab_map(SLAB_CHUNK * 2);
	void *rec;

	cr_assert_not_null(table);
	cr_assert_neq(slab_alloc(64, &rec), 0); /* no worker started: the loop maps the chunk */
	table[SLAB_CHUNK + 5] = 1;              /* a resize's first write */
	cr_assert_not(resident((char *)rec - SLAB_HEADER, SLAB_CHUNK), "faulted in page by page, as used");
	cr_assert_not(resident(table + SLAB_CHUNK, SLAB_CHUNK), "a table faulted in page by page");
	if (strcmp(mode, "madvise") == 0 || strcmp(mode, "always") == 0) {
		cr_assert_eq(thp_eligible(rec), 0, "a huge page the loop would zero at its first touch (THP %s)", mode);
		cr_assert_eq(thp_eligible(table), 0, "a table the loop writes first in a huge page (THP %s)", mode);
	}
	slab_unmap(table, SLAB_CHUNK * 2);
	slab_fini();
}

static atomic_int fails; /* makes that fail before one succeeds */

static void *make_failing(void)
{
	if (atomic_load(&fails) > 0) {
		atomic_fetch_sub(&fails, 1);
		return NULL;
	}
	return make();
}

Test(prefault, a_failed_make_is_tried_again_at_the_next_take, .init = reset)
{
	atomic_store(&fails, 1);
	cr_assert(prefault_start(BLOCK, 10, 2, make_failing, drop));
	for (int i = 0; i < 5000 && atomic_load(&fails); i++) /* the worker's first make fails... */
		usleep(1000);
	usleep(50000); /* deliberate: a worker that tried again on its own would have made a block by now */
	cr_assert_eq(prefault_ready(), 0, "a starved worker waits for the next take");
	cr_assert_null(prefault_take()); /* ...and this take finds nothing, but wakes it */
	munmap(take_wait(), BLOCK);      /* which then makes blocks again */
	prefault_stop();
	cr_assert_eq(atomic_load(&made), 1 + atomic_load(&dropped));
}

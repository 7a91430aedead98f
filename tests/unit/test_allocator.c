/* metaserver/allocator.c: fill, free, coalesce, double free, fragmentation, rebuild, and a model check. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>

#include "allocator.h"
#include "mmc/mmc.h"
#include "mmc_assert.h"

#define PAGE 4096u

Test(allocator, fill_aligned_until_full)
{
	struct allocator *a = alloc_create(16 * PAGE);
	uint64_t off[16], x;

	for (int i = 0; i < 16; i++) {
		cr_assert_eq(alloc_reserve(a, PAGE, &off[i]), 0);
		cr_assert_eq(off[i] % PAGE, 0);
		for (int j = 0; j < i; j++)
			cr_assert_neq(off[i], off[j]);
	}
	cr_assert_eq(alloc_reserve(a, 1, &x), MMC_NOT_ENOUGH_MEMORY);
	cr_assert_eq(alloc_used(a), 16 * PAGE);
	cr_assert_eq(alloc_largest_free(a), 0);
	alloc_destroy(a);
}

Test(allocator, sizes_round_up_and_zero_is_refused)
{
	struct allocator *a = alloc_create(4 * PAGE + 100);
	uint64_t o1, o2, x;

	cr_assert_eq(alloc_capacity(a), 4 * PAGE, "capacity rounds down to whole pages");
	cr_assert_eq(alloc_reserve(a, 0, &x), MMC_INVALID_PARAM);
	cr_assert_eq(alloc_reserve(a, 1, &o1), 0);
	cr_assert_eq(alloc_reserve(a, PAGE + 1, &o2), 0);
	cr_assert_eq(alloc_used(a), 3 * PAGE);
	cr_assert_eq(alloc_reserve(a, 2 * PAGE, &x), MMC_NOT_ENOUGH_MEMORY);
	alloc_destroy(a);
}

Test(allocator, free_coalesces_with_both_neighbours)
{
	struct allocator *a = alloc_create(8 * PAGE);
	uint64_t o[4], big;

	for (int i = 0; i < 4; i++)
		cr_assert_eq(alloc_reserve(a, 2 * PAGE, &o[i]), 0);
	cr_assert_eq(alloc_release(a, o[0]), 0);
	cr_assert_eq(alloc_release(a, o[2]), 0);
	cr_assert_eq(alloc_largest_free(a), 2 * PAGE, "two separate holes");
	cr_assert_eq(alloc_reserve(a, 4 * PAGE, &big), MMC_NOT_ENOUGH_MEMORY, "fragmented");
	cr_assert_eq(alloc_release(a, o[1]), 0); /* joins the left and the right hole */
	cr_assert_eq(alloc_largest_free(a), 6 * PAGE);
	cr_assert_eq(alloc_reserve(a, 6 * PAGE, &big), 0);
	cr_assert_eq(alloc_release(a, big), 0);
	cr_assert_eq(alloc_release(a, o[3]), 0);
	cr_assert_eq(alloc_block_count(a), 1, "everything merged back into one block");
	cr_assert_eq(alloc_used(a), 0);
	alloc_destroy(a);
}

Test(allocator, double_free_and_foreign_offsets_are_refused)
{
	struct allocator *a = alloc_create(4 * PAGE);
	uint64_t o;

	cr_assert_eq(alloc_reserve(a, PAGE, &o), 0);
	cr_assert_eq(alloc_release(a, o), 0);
	cr_assert_eq(alloc_release(a, o), MMC_INVALID_PARAM, "double free");
	cr_assert_eq(alloc_release(a, 123), MMC_INVALID_PARAM, "not a block start");
	cr_assert_eq(alloc_release(a, 100 * PAGE), MMC_INVALID_PARAM, "outside the pool");
	cr_assert_eq(alloc_used(a), 0);
	alloc_destroy(a);
}

Test(allocator, best_fit_prefers_the_smallest_hole)
{
	struct allocator *a = alloc_create(16 * PAGE);
	uint64_t o[6], x;

	/* holes of 3 pages (at 0) and 1 page (later) */
	cr_assert_eq(alloc_reserve(a, 3 * PAGE, &o[0]), 0);
	cr_assert_eq(alloc_reserve(a, PAGE, &o[1]), 0);
	cr_assert_eq(alloc_reserve(a, PAGE, &o[2]), 0);
	cr_assert_eq(alloc_reserve(a, PAGE, &o[3]), 0);
	cr_assert_eq(alloc_release(a, o[0]), 0);
	cr_assert_eq(alloc_release(a, o[2]), 0);
	cr_assert_eq(alloc_reserve(a, PAGE, &x), 0);
	cr_assert_eq(x, o[2], "the one-page hole, not the front of the three-page one");
	alloc_destroy(a);
}

Test(allocator, mark_rebuilds_reservations)
{
	struct allocator *a = alloc_create(16 * PAGE);
	uint64_t x;

	cr_assert_eq(alloc_mark(a, 4 * PAGE, 2 * PAGE), 0);
	cr_assert_eq(alloc_mark(a, 0, 100), 0);
	cr_assert_eq(alloc_mark(a, 5 * PAGE, PAGE), MMC_INVALID_PARAM, "overlaps");
	cr_assert_eq(alloc_mark(a, 100, PAGE), MMC_INVALID_PARAM, "misaligned");
	cr_assert_eq(alloc_mark(a, 15 * PAGE, 2 * PAGE), MMC_INVALID_PARAM, "past the end");
	cr_assert_eq(alloc_used(a), 3 * PAGE);
	cr_assert_eq(alloc_release(a, 4 * PAGE), 0);
	cr_assert_eq(alloc_release(a, 0), 0);
	cr_assert_eq(alloc_reserve(a, 16 * PAGE, &x), 0, "all space came back");
	alloc_destroy(a);
}

/* Random reserve/release against a page bitmap: no overlap, no leak, accounting exact. */
Test(allocator, random_against_a_model)
{
	enum { PAGES = 1024, LIVE = 256 };
	struct allocator *a = alloc_create(PAGES * PAGE);
	unsigned char used[PAGES] = {0};
	uint64_t off[LIVE], len[LIVE];
	int n = 0;

	srand(42);
	for (int step = 0; step < 20000; step++) {
		if (n < LIVE && (n == 0 || rand() % 2)) {
			uint64_t pages = 1 + (uint64_t)(rand() % 16), o;

			if (alloc_reserve(a, pages * PAGE, &o) != 0)
				continue;
			for (uint64_t p = o / PAGE; p < o / PAGE + pages; p++) {
				cr_assert_eq(used[p], 0, "page %llu handed out twice", (unsigned long long)p);
				used[p] = 1;
			}
			off[n] = o;
			len[n++] = pages;
		} else {
			int i = rand() % n;

			cr_assert_eq(alloc_release(a, off[i]), 0);
			for (uint64_t p = off[i] / PAGE; p < off[i] / PAGE + len[i]; p++)
				used[p] = 0;
			off[i] = off[--n];
			len[i] = len[n];
		}
	}
	while (n)
		cr_assert_eq(alloc_release(a, off[--n]), 0);
	cr_assert_eq(alloc_used(a), 0);
	cr_assert_eq(alloc_block_count(a), 1);
	alloc_destroy(a);
}

/* A stand-in for the persistence layer: batches up to `durable` have landed, `lost` failed. */
struct batches {
	uint64_t durable, lost;
};

static enum persist_seq_state batch_state(const void *ctx, uint64_t seq)
{
	const struct batches *b = ctx;

	if (seq > b->durable)
		return PERSIST_SEQ_PENDING;
	return seq == b->lost ? PERSIST_SEQ_LOST : PERSIST_SEQ_DURABLE;
}

Test(allocator, freed_space_waits_for_the_commit_of_its_delete)
{
	struct batches b = {.durable = 4};
	struct allocator *a = alloc_create(2 * PAGE);
	uint64_t o1, o2, x;

	alloc_set_durability(a, batch_state, &b);
	cr_assert_eq(alloc_reserve(a, PAGE, &o1), 0);
	cr_assert_eq(alloc_reserve(a, PAGE, &o2), 0);
	cr_assert_eq(alloc_release_after(a, o1, 5), 0);
	cr_assert_eq(alloc_reserve(a, PAGE, &x), MMC_NOT_ENOUGH_MEMORY, "reused before its delete was on disk");
	cr_assert_eq(alloc_largest_free(a), 0);
	cr_assert_eq(alloc_held(a), PAGE);
	cr_assert_eq(alloc_used(a), PAGE, "held bytes are on their way back, not in use");
	cr_assert_eq(alloc_release(a, o1), MMC_INVALID_PARAM, "a held block cannot be freed twice");
	b.durable = 5;
	cr_assert_eq(alloc_reserve(a, PAGE, &x), 0, "free once the batch landed");
	cr_assert_eq(x, o1);
	cr_assert_eq(alloc_held(a), 0);
	cr_assert_eq(alloc_release_after(a, o2, 3), 0, "an already durable batch frees at once");
	cr_assert_eq(alloc_largest_free(a), PAGE);
	alloc_destroy(a);
}

/* A batch's removes, adjacent blocks held in either order, become one free block once it lands, and so do a later
 * batch's, beside them; a block whose batch was lost stays reserved between. */
Test(allocator, adjacent_holds_of_a_landed_batch_free_as_one_block)
{
	enum { BLOCKS = 64 };
	struct batches b = {.lost = 4};
	struct allocator *a = alloc_create(BLOCKS * PAGE);
	uint64_t o[BLOCKS], x;

	alloc_set_durability(a, batch_state, &b);
	for (int i = 0; i < BLOCKS; i++) {
		cr_assert_eq(alloc_reserve(a, PAGE, &o[i]), 0);
		cr_assert_eq(o[i], (uint64_t)i * PAGE);
	}
	for (int i = 0; i < 20; i++) /* up */
		cr_assert_eq(alloc_release_after(a, o[i], 1), 0);
	for (int i = 39; i >= 20; i--) /* down */
		cr_assert_eq(alloc_release_after(a, o[i], 1), 0);
	cr_assert_eq(alloc_release_after(a, o[40], 2), 0);
	cr_assert_eq(alloc_release_after(a, o[42], 3), 0);
	cr_assert_eq(alloc_release_after(a, o[41], 3), 0);
	cr_assert_eq(alloc_release_after(a, o[43], 4), 0);
	cr_assert_eq(alloc_release_after(a, o[44], 5), 0);
	cr_assert_eq(alloc_held(a), 45 * PAGE);
	b.durable = 1;
	cr_assert_eq(alloc_held(a), 5 * PAGE, "blocks 40 to 44 wait for their batches");
	cr_assert_eq(alloc_largest_free(a), 40 * PAGE, "blocks 0 to 39: one free block");
	cr_assert_eq(alloc_block_count(a), 1 + 24);
	b.durable = 5;
	cr_assert_eq(alloc_held(a), 0);
	cr_assert_eq(alloc_lost(a), PAGE, "block 43's batch was lost");
	cr_assert_eq(alloc_largest_free(a), 43 * PAGE, "blocks 0 to 42");
	cr_assert_eq(alloc_block_count(a), 1 + 1 + 1 + 19, "free 0-42, 43 lost, free 44, 45-63");
	cr_assert_eq(alloc_reserve(a, 43 * PAGE, &x), 0);
	cr_assert_eq(x, 0);
	cr_assert_eq(alloc_used(a), (43 + 1 + 19) * PAGE);
	cr_assert_eq(alloc_largest_free(a), PAGE, "block 44 alone");
	alloc_destroy(a);
}

Test(allocator, holds_free_in_batch_order_and_a_failed_batch_keeps_its_space)
{
	struct batches b = {.durable = 0, .lost = 2};
	struct allocator *a = alloc_create(4 * PAGE);
	uint64_t off[4], x;

	alloc_set_durability(a, batch_state, &b);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(alloc_reserve(a, PAGE, &off[i]), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(alloc_release_after(a, off[i], (uint64_t)i + 1), 0);
	cr_assert_eq(alloc_held(a), 3 * PAGE);
	b.durable = 1;
	cr_assert_eq(alloc_held(a), 2 * PAGE);
	cr_assert_eq(alloc_reserve(a, PAGE, &x), 0);
	cr_assert_eq(x, off[0]);
	b.durable = 3;
	cr_assert_eq(alloc_held(a), 0);
	cr_assert_eq(alloc_lost(a), PAGE, "the delete of batch 2 never reached the disk");
	cr_assert_eq(alloc_largest_free(a), PAGE, "only batch 3's block came back");
	cr_assert_eq(alloc_release_after(a, off[1], 0), MMC_INVALID_PARAM, "a lost block is never handed out");
	cr_assert_eq(alloc_release(a, off[3]), 0);
	cr_assert_eq(alloc_used(a), 2 * PAGE, "the reuse and the lost block");
	alloc_destroy(a);
}

/* A block whose record's delete could not even be queued (ALLOC_SEQ_NEVER) is lost at once, and holds after it
 * still free in their turn: the record stays on disk, and a restart would load it over the block's next owner. */
Test(allocator, a_block_whose_delete_was_never_queued_is_never_handed_out)
{
	struct batches b = {.durable = 0};
	struct allocator *a = alloc_create(2 * PAGE);
	uint64_t off[2], x;

	alloc_set_durability(a, batch_state, &b);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(alloc_reserve(a, PAGE, &off[i]), 0);
	cr_assert_eq(alloc_release_after(a, off[0], ALLOC_SEQ_NEVER), 0);
	cr_assert_eq(alloc_release_after(a, off[1], 1), 0);
	cr_assert_eq(alloc_lost(a), PAGE);
	b.durable = UINT64_MAX - 1;
	cr_assert_eq(alloc_reserve(a, PAGE, &x), 0, "the later hold freed once its batch landed");
	cr_assert_eq(x, off[1]);
	cr_assert_eq(alloc_reserve(a, PAGE, &x), MMC_NOT_ENOUGH_MEMORY, "the block of the undeleted record was reused");
	alloc_destroy(a);
}

Test(allocator, split_cuts_a_range_out_of_a_reservation_and_each_piece_frees_alone)
{
	struct allocator *a = alloc_create(16 * PAGE);
	uint64_t ext, x;

	cr_assert_eq(alloc_reserve(a, 8 * PAGE, &ext), 0);
	cr_assert_eq(alloc_split(a, ext + 2 * PAGE, PAGE + 1), 0, "the middle: three blocks");
	cr_assert_eq(alloc_used(a), 8 * PAGE, "splitting reserves nothing more");
	cr_assert_eq(alloc_block_count(a), 4);
	cr_assert_eq(alloc_split(a, ext + PAGE, 2 * PAGE), MMC_INVALID_PARAM, "a range over two blocks");
	cr_assert_eq(alloc_split(a, ext + 100, PAGE), MMC_INVALID_PARAM, "misaligned");
	cr_assert_eq(alloc_split(a, ext + 4 * PAGE, 8 * PAGE), MMC_INVALID_PARAM, "past the block");
	cr_assert_eq(alloc_split(a, ext + 8 * PAGE, PAGE), MMC_INVALID_PARAM, "free space");
	cr_assert_eq(alloc_split(a, ext + 4 * PAGE, 4 * PAGE), 0, "the tail: two blocks");
	cr_assert_eq(alloc_release(a, ext + 2 * PAGE), 0, "the cut range frees alone");
	cr_assert_eq(alloc_used(a), 6 * PAGE);
	cr_assert_eq(alloc_release(a, ext), 0);
	cr_assert_eq(alloc_release(a, ext + 4 * PAGE), 0);
	cr_assert_eq(alloc_used(a), 0);
	cr_assert_eq(alloc_block_count(a), 1, "all of it coalesced again");
	cr_assert_eq(alloc_reserve(a, 16 * PAGE, &x), 0);
	alloc_destroy(a);
}

/* Reserved blocks are bits in sparse leaves of 128 MiB: blocks that span leaves, and leaves never touched. */
Test(allocator, blocks_across_the_leaves_of_a_large_sparse_pool)
{
	const uint64_t GiB = 1ull << 30, leaf = 128ull << 20;
	struct allocator *a = alloc_create(1024 * GiB);
	uint64_t small, big, last, x;

	cr_assert_not_null(a);
	cr_assert_eq(alloc_reserve(a, PAGE, &small), 0);
	cr_assert_eq(alloc_reserve(a, 300 * GiB, &big), 0);
	cr_assert_eq(alloc_reserve(a, PAGE, &last), 0);
	cr_assert_eq(alloc_block_size(a, small), PAGE);
	cr_assert_eq(alloc_block_size(a, big), 300 * GiB, "ends where the next block starts, 2400 leaves on");
	cr_assert_eq(alloc_block_size(a, last), PAGE, "ends where the free space starts");
	cr_assert_eq(alloc_block_size(a, big + PAGE), 0, "inside a block: no block starts there");
	cr_assert_eq(alloc_split(a, big + 3 * leaf - PAGE, 2 * PAGE), 0, "a piece across a leaf boundary");
	cr_assert_eq(alloc_block_size(a, big), 3 * leaf - PAGE);
	cr_assert_eq(alloc_block_size(a, big + 3 * leaf - PAGE), 2 * PAGE);
	cr_assert_eq(alloc_block_size(a, big + 3 * leaf + PAGE), 300 * GiB - 3 * leaf - PAGE);
	cr_assert_eq(alloc_release(a, big + 3 * leaf - PAGE), 0);
	cr_assert_eq(alloc_release(a, big), 0);
	cr_assert_eq(alloc_largest_free(a), 1024 * GiB - 300 * GiB - 2 * PAGE, "the free tail, not the hole");
	cr_assert_eq(alloc_release(a, big + 3 * leaf + PAGE), 0);
	cr_assert_eq(alloc_release(a, small), 0);
	cr_assert_eq(alloc_block_count(a), 3, "the front coalesced into one hole up to the last block");
	cr_assert_eq(alloc_reserve(a, last, &x), 0);
	cr_assert_eq(x, 0, "the hole fits exactly: the best fit");
	cr_assert_eq(alloc_release(a, x), 0);
	cr_assert_eq(alloc_release(a, last), 0);
	cr_assert_eq(alloc_block_count(a), 1);
	cr_assert_eq(alloc_reserve(a, 1024 * GiB, &x), 0);
	alloc_destroy(a);
}

/* Reserve, release now or after a batch, split, and rebuild with mark, against a model of who owns each page. */
Test(allocator, random_with_splits_holds_and_a_rebuild_against_a_model)
{
	enum { PAGES = 2048, LIVE = 300 };
	struct batches b = {0};
	struct allocator *a = alloc_create(PAGES * PAGE), *re;
	uint64_t start[LIVE], len[LIVE], seq = 0, held = 0;
	int n = 0;

	alloc_set_durability(a, batch_state, &b);
	srand(7);
	for (int step = 0; step < 30000; step++) {
		int op = rand() % 8, i = n ? rand() % n : 0;
		uint64_t pages = 1 + (uint64_t)(rand() % 24), o;

		if (op < 3 && n < LIVE) {
			if (alloc_reserve(a, pages * PAGE, &o) == 0) {
				start[n] = o;
				len[n++] = pages;
			}
		} else if (op == 3 && n && n < LIVE && len[i] > 1) { /* cut the front page off block i */
			cr_assert_eq(alloc_split(a, start[i], PAGE), 0);
			start[n] = start[i] + PAGE;
			len[n++] = len[i] - 1;
			len[i] = 1;
		} else if (op == 4 && n) { /* release after a batch that lands later */
			cr_assert_eq(alloc_release_after(a, start[i], ++seq), 0);
			held += len[i] * PAGE;
			start[i] = start[--n];
			len[i] = len[n];
		} else if (op == 5) {
			b.durable = seq;
			held = 0;
		} else if (n) {
			cr_assert_eq(alloc_release(a, start[i]), 0);
			start[i] = start[--n];
			len[i] = len[n];
		}
		if (n)
			cr_assert_eq(alloc_block_size(a, start[i % n]), len[i % n] * PAGE);
		cr_assert_eq(alloc_held(a), held);
	}
	b.durable = seq;
	re = alloc_create(PAGES * PAGE);
	for (int i = 0; i < n; i++)
		cr_assert_eq(alloc_mark(re, start[i], len[i] * PAGE), 0);
	cr_assert_eq(alloc_used(re), alloc_used(a));
	cr_assert_eq(alloc_largest_free(re), alloc_largest_free(a));
	cr_assert_eq(alloc_block_count(re), alloc_block_count(a), "the same blocks, free ones coalesced alike");
	while (n) {
		n--;
		cr_assert_eq(alloc_release(a, start[n]), 0);
		cr_assert_eq(alloc_release(re, start[n]), 0);
	}
	cr_assert_eq(alloc_used(a) + alloc_used(re), 0);
	cr_assert_eq(alloc_block_count(a) + alloc_block_count(re), 2);
	alloc_destroy(a);
	alloc_destroy(re);
}

/* Who holds page p in the model below: the first page of its block, FREE_PAGE, or a held block's first page |
 * HELD_PAGE. */
enum { FREE_PAGE = -1, HELD_PAGE = 1 << 30 };

static bool model_held(int owner)
{
	return owner != FREE_PAGE && (owner & HELD_PAGE);
}

/* The reply alloc_split owes the model: 0 when [p, p + pages) lies inside one reserved, unheld block. */
static int model_split(const int *owner, int npages, int p, int pages)
{
	if (p + pages > npages || owner[p] == FREE_PAGE || model_held(owner[p]))
		return MMC_INVALID_PARAM;
	for (int q = p + 1; q < p + pages; q++)
		if (owner[q] != owner[p])
			return MMC_INVALID_PARAM;
	return 0;
}

/* A block is the run of pages with one owner: its size from its first page, as alloc_block_size gives it. */
static uint64_t model_block_size(const int *owner, int npages, int p)
{
	int q = p;

	if (owner[p] != p)
		return 0;
	while (q < npages && owner[q] == p)
		q++;
	return (uint64_t)(q - p) * PAGE;
}

/* Splits anywhere, of any size, good and bad, in blocks that span leaves of 128 MiB, some held and some landed (the
 * holes they leave between blocks): alloc_split's answer and every block's size after it, against a model of who
 * owns each page. */
Test(allocator, splits_anywhere_against_a_model)
{
	enum { LEAF = 32768, PAGES = 3 * LEAF };
	struct batches b = {0};
	struct allocator *a = alloc_create((uint64_t)PAGES * PAGE);
	static int owner[PAGES];
	uint64_t o, seq = 0;

	cr_assert_not_null(a);
	alloc_set_durability(a, batch_state, &b);
	for (int p = 0; p < PAGES; p++)
		owner[p] = FREE_PAGE;
	srand(29);
	for (int step = 0; step < 6000; step++) {
		int op = rand() % 12, p = rand() % PAGES, small = rand() % 2,
		    pages = 1 + rand() % (small ? 4 : 2 * LEAF);
		int want, from;

		if (op < 2) { /* a reserve: best fit, so the holes landed batches leave fill again */
			int n = 1 + rand() % (small ? 16 : LEAF);

			if (alloc_reserve(a, (uint64_t)n * PAGE, &o) == 0)
				for (int q = (int)(o / PAGE); q < (int)(o / PAGE) + n; q++) {
					cr_assert_eq(owner[q], FREE_PAGE, "page %d handed out twice", q);
					owner[q] = (int)(o / PAGE);
				}
			continue;
		}
		if (op == 2 && owner[p] != FREE_PAGE && !model_held(owner[p])) { /* release p's block after a batch */
			int first = owner[p];

			cr_assert_eq(alloc_release_after(a, (uint64_t)first * PAGE, ++seq), 0);
			for (int q = first; q < PAGES && owner[q] == first; q++)
				owner[q] = first | HELD_PAGE;
			continue;
		}
		if (op == 3) { /* the batches land: held blocks become holes */
			b.durable = seq;
			(void)alloc_held(a);
			for (int q = 0; q < PAGES; q++)
				if (model_held(owner[q]))
					owner[q] = FREE_PAGE;
			continue;
		}
		want = model_split(owner, PAGES, p, pages);
		from = owner[p];
		cr_assert_eq(alloc_split(a, (uint64_t)p * PAGE, (uint64_t)pages * PAGE), want, "page %d, %d pages", p,
		             pages);
		if (want)
			continue;
		for (int q = p; q < p + pages; q++)
			owner[q] = p;
		for (int q = p + pages; q < PAGES && owner[q] == from; q++)
			owner[q] = p + pages;
		cr_assert_eq(alloc_block_size(a, (uint64_t)from * PAGE), model_block_size(owner, PAGES, from));
		cr_assert_eq(alloc_block_size(a, (uint64_t)p * PAGE), (uint64_t)pages * PAGE);
		if (p + pages < PAGES)
			cr_assert_eq(alloc_block_size(a, (uint64_t)(p + pages) * PAGE),
			             model_block_size(owner, PAGES, p + pages));
	}
	for (int p = 0; p < PAGES; p++)
		cr_assert_eq(alloc_block_size(a, (uint64_t)p * PAGE), model_block_size(owner, PAGES, p), "page %d", p);
	alloc_destroy(a);
}

/* The ends a split can meet, one by one: the next block's start, a hole, a held block, the pool's end, a leaf's end;
 * and the arguments it refuses. Each good split adds one block at an end and two in a middle. */
Test(allocator, split_at_every_kind_of_end)
{
	enum { LEAF = 32768, PAGES = 3 * LEAF };
	const uint64_t P = PAGE;
	struct batches b = {0};
	struct allocator *a = alloc_create(PAGES * P);
	uint64_t x[5], n;

	alloc_set_durability(a, batch_state, &b);
	/* A [0, LEAF+100) | R [.., +10) | hole [.., +10) | H held [.., +10) | T to the pool's end */
	cr_assert_eq(alloc_reserve(a, (LEAF + 100) * P, &x[0]), 0);
	for (int i = 1; i < 4; i++)
		cr_assert_eq(alloc_reserve(a, 10 * P, &x[i]), 0);
	cr_assert_eq(alloc_reserve(a, (PAGES - LEAF - 130) * P, &x[4]), 0);
	cr_assert_eq(x[4], (LEAF + 130) * P);
	cr_assert_eq(alloc_release(a, x[2]), 0);
	cr_assert_eq(alloc_release_after(a, x[3], 1), 0);
	n = alloc_block_count(a);

	cr_assert_eq(alloc_split(a, (LEAF - 2) * P, 4 * P), 0, "across the first leaf's end");
	cr_assert_eq(alloc_block_count(a), n += 2);
	cr_assert_eq(alloc_block_size(a, 0), (LEAF - 2) * P);
	cr_assert_eq(alloc_block_size(a, (LEAF - 2) * P), 4 * P);
	cr_assert_eq(alloc_split(a, (LEAF + 90) * P, 10 * P), 0, "up to the next block's start");
	cr_assert_eq(alloc_block_count(a), n += 1);
	cr_assert_eq(alloc_block_size(a, (LEAF + 2) * P), 88 * P);
	cr_assert_eq(alloc_split(a, x[1] + 5 * P, 5 * P), 0, "up to a hole");
	cr_assert_eq(alloc_block_count(a), n += 1);
	cr_assert_eq(alloc_split(a, x[1] + 8 * P, 4 * P), MMC_INVALID_PARAM, "into the hole");
	cr_assert_eq(alloc_split(a, x[2], P), MMC_INVALID_PARAM, "in the hole");
	cr_assert_eq(alloc_split(a, x[3], P), MMC_INVALID_PARAM, "in a held block");
	cr_assert_eq(alloc_split(a, (PAGES - 3) * P, 3 * P), 0, "up to the pool's end");
	cr_assert_eq(alloc_block_count(a), n += 1);
	cr_assert_eq(alloc_split(a, (PAGES - 5) * P, 3 * P), MMC_INVALID_PARAM, "past the block");
	cr_assert_eq(alloc_split(a, (PAGES - 2) * P, 3 * P), MMC_INVALID_PARAM, "past the pool's end");
	cr_assert_eq(alloc_split(a, (2 * LEAF - 1) * P, 2 * P), 0, "across the second leaf's end");
	cr_assert_eq(alloc_block_count(a), n += 2);
	cr_assert_eq(alloc_block_size(a, x[4]), (2 * LEAF - 1) * P - x[4]);
	cr_assert_eq(alloc_split(a, x[4], UINT64_MAX - 100), MMC_INVALID_PARAM, "a size that wraps");
	cr_assert_eq(alloc_split(a, x[4], UINT64_MAX - 2 * P), MMC_INVALID_PARAM, "an end that wraps");
	cr_assert_eq(alloc_split(a, x[4], 0), MMC_INVALID_PARAM, "empty");
	cr_assert_eq(alloc_split(a, x[4] + 1, P), MMC_INVALID_PARAM, "misaligned");
	cr_assert_eq(alloc_split(a, PAGES * P, P), MMC_INVALID_PARAM, "at the pool's end");
	cr_assert_eq(alloc_block_count(a), n, "a refused split changes nothing");
	b.durable = 1;
	cr_assert_eq(alloc_held(a), 0);
	cr_assert_eq(alloc_split(a, x[1] + 5 * P, 5 * P), 0, "a whole block: nothing to cut");
	cr_assert_eq(alloc_block_count(a), n - 1, "the hole and the landed block merged into one");
	alloc_destroy(a);
}

/* The allocator's invariants are MMC_ASSERTs: a debug build stops at a broken one; a release build (NDEBUG)
 * compiles them out. */
#ifndef NDEBUG
Test(allocator, invariant_broken_aborts_in_debug_builds, .signal = SIGABRT)
{
	int held = 0;

	MMC_ASSERT(held == 1);
}
#else
Test(allocator, invariant_compiled_out_in_release_builds)
{
	int held = 0;

	MMC_ASSERT(held == 1);
	cr_assert_eq(held, 0);
}
#endif

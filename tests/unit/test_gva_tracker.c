/* lib/gva_tracker.c: which grant answers for a range, which grant a finish names, and what a release drops. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "gva_tracker.h"

static struct gva_tracker *t;

static void setup(void)
{
	cr_assert_not_null(t = gva_tracker_new());
}

static void teardown(void)
{
	gva_tracker_free(t);
}

TestSuite(gva_tracker, .init = setup, .fini = teardown);

static struct gva_entry grant(enum gva_kind kind, const char *key, uint64_t start, uint64_t len, uint64_t token)
{
	struct gva_entry e;

	memset(&e, 0, sizeof(e));
	e.kind = (uint8_t)kind;
	e.start = start;
	e.end = start + len;
	e.token = token;
	e.expiry_ms = 1000;
	e.thread = pthread_self();
	snprintf(e.key, sizeof(e.key), "%s", key);
	return e;
}

static void add(struct gva_entry e)
{
	cr_assert_eq(gva_tracker_add(t, &e, 1, 0), 0);
}

static uint64_t token_at(uint64_t gva, uint64_t len, enum gva_kind kind)
{
	const struct gva_entry *e = gva_tracker_find(t, gva, len, kind);

	return e ? e->token : 0;
}

Test(gva_tracker, a_later_grant_answers_for_every_byte_it_covers)
{
	add(grant(GVA_WRITE, "old", 0x11000, 0x1000, 1)); /* inside the new one, starting after it */
	add(grant(GVA_WRITE, "new", 0x10000, 0x2000, 2));
	cr_assert_eq(token_at(0x10000, 0x1000, GVA_WRITE), 2);
	cr_assert_eq(token_at(0x11000, 0x1000, GVA_WRITE), 2, "the stale grant starting later does not answer");
	cr_assert_eq(token_at(0x10000, 0x2000, GVA_WRITE), 2);
	cr_assert_eq(token_at(0x10000, 0x2001, GVA_WRITE), 0, "past its end");
	/* an earlier grant over the same start, and one the new grant starts inside */
	add(grant(GVA_WRITE, "a", 0x20000, 0x2000, 3));
	add(grant(GVA_WRITE, "b", 0x21000, 0x2000, 4));
	cr_assert_eq(token_at(0x20000, 0x1000, GVA_WRITE), 0, "a was retired by b");
	cr_assert_eq(token_at(0x22000, 0x1000, GVA_WRITE), 4);
}

Test(gva_tracker, kinds_do_not_retire_each_other)
{
	add(grant(GVA_WRITE, "k", 0x10000, 0x1000, 1));
	add(grant(GVA_READ, "k", 0x10000, 0x1000, 1));
	add(grant(GVA_READ, "j", 0x30000, 0x1000, 5));
	add(grant(GVA_WRITE, "w", 0x2f000, 0x3000, 6)); /* a write grant around a read grant of another key */
	cr_assert_eq(token_at(0x10000, 0x1000, GVA_WRITE), 1);
	cr_assert_eq(token_at(0x10000, 0x1000, GVA_READ), 1);
	cr_assert_eq(token_at(0x31000, 0x1000, GVA_WRITE), 6, "found past a read grant that ends before");
	cr_assert_eq(token_at(0x30000, 0x1000, GVA_READ), 5);
}

Test(gva_tracker, a_read_grant_retired_is_gone_a_write_grant_stays_for_its_finish)
{
	const char *keys[] = {"old"};
	struct gva_keys k;
	uint64_t tokens[1], seqs[1], losses[1] = {99};

	add(grant(GVA_READ, "r-old", 0x10000, 0x1000, 1));
	add(grant(GVA_READ, "r-new", 0x10000, 0x1000, 2));
	cr_assert_eq(t->n, 1, "the stale read grant is dropped");
	add(grant(GVA_WRITE, "old", 0x20000, 0x1000, 3));
	add(grant(GVA_WRITE, "new", 0x20000, 0x1000, 4));
	cr_assert_eq(t->n, 3);
	cr_assert_eq(token_at(0x20000, 0x1000, GVA_WRITE), 4);
	cr_assert_eq(gva_keys_init(&k, keys, 1), 0);
	gva_tracker_finish_grants(t, &k, pthread_self(), tokens, seqs, losses);
	cr_assert_eq(tokens[0], 3, "the finish of the retired grant's key names it: the server then refuses it");
	gva_tracker_drop_finished(t, &k, seqs, pthread_self());
	cr_assert_eq(t->n, 2);
	cr_assert_eq(token_at(0x20000, 0x1000, GVA_WRITE), 4, "the live grant stays");
	gva_keys_fini(&k);
}

/* A reader that lets its leases run out instead of releasing them: each ran-out read grant goes at the next add. */
Test(gva_tracker, read_grants_that_ran_out_go_at_the_next_add_write_grants_stay)
{
	struct gva_entry e;

	for (uint64_t i = 0; i < 1000; i++) {
		e = grant(GVA_READ, "r", 0x100000 + i * 0x1000, 0x1000, i + 1);
		e.expiry_ms = 500;
		cr_assert_eq(gva_tracker_add(t, &e, 1, 0), 0);
	}
	e = grant(GVA_WRITE, "w", 0x10000, 0x1000, 5000);
	e.expiry_ms = 500;
	cr_assert_eq(gva_tracker_add(t, &e, 1, 0), 0);
	cr_assert_eq(t->n, 1001);
	e = grant(GVA_READ, "late", 0x2000000, 0x1000, 6000);
	e.expiry_ms = 100000;
	cr_assert_eq(gva_tracker_add(t, &e, 1, 1000), 0);
	cr_assert_eq(t->n, 1002, "a read grant that ran out stays a minute: a copy under it is told MMC_LEASE_EXPIRED");
	cr_assert_eq(token_at(0x100000, 0x1000, GVA_READ), 1);
	e = grant(GVA_READ, "later", 0x3000000, 0x1000, 7000);
	e.expiry_ms = 100000;
	cr_assert_eq(gva_tracker_add(t, &e, 1, 500 + 60000), 0);
	cr_assert_eq(t->n, 3, "the 1000 read grants that ran out a minute ago are gone");
	cr_assert_eq(token_at(0x2000000, 0x1000, GVA_READ), 6000);
	cr_assert_eq(token_at(0x10000, 0x1000, GVA_WRITE), 5000, "a write grant stays for its thread's finish");
}

static void *add_from_another_thread(void *arg)
{
	struct gva_entry *e = arg;

	e->thread = pthread_self();
	return NULL;
}

Test(gva_tracker, a_finish_names_its_thread_s_grant_else_the_live_one)
{
	const char *keys[] = {"k", "k", "none"};
	struct gva_entry mine = grant(GVA_WRITE, "k", 0x10000, 0x1000, 7),
	                 theirs = grant(GVA_WRITE, "k", 0x40000, 0x1000, 8);
	struct gva_keys k;
	uint64_t tokens[3], seqs[3], losses[3] = {99, 99, 99};
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, add_from_another_thread, &theirs), 0);
	pthread_join(th, NULL);
	mine.losses = 3; /* granted on the connection before the last loss */
	add(mine);
	add(theirs); /* later, another thread's, not overlapping */
	cr_assert_eq(gva_keys_init(&k, keys, 3), 0);
	gva_tracker_finish_grants(t, &k, pthread_self(), tokens, seqs, losses);
	cr_assert_eq(tokens[0], 7, "this thread's own, not the newer one");
	cr_assert_eq(tokens[1], 7, "a key given twice names the same grant");
	cr_assert_eq(tokens[2], 0, "no grant: the key alone");
	cr_assert_eq(losses[0], 3, "the connection it was granted on, so that the finish goes to that server only");
	cr_assert_eq(losses[2], 99, "no grant: left as it was");
	gva_tracker_finish_grants(t, &k, th, tokens, seqs, losses); /* as the other thread */
	cr_assert_eq(tokens[0], 8);
	gva_keys_fini(&k);
	cr_assert_eq(gva_keys_init(&k, keys + 2, 1), 0);
	gva_tracker_finish_grants(t, &k, pthread_self(), tokens, seqs, losses);
	cr_assert_eq(tokens[0], 0);
	gva_keys_fini(&k);
	/* a thread that allocated nothing names the key's live grant */
	keys[2] = "k";
	cr_assert_eq(gva_keys_init(&k, keys + 2, 1), 0);
	gva_tracker_finish_grants(t, &k, (pthread_t)0, tokens, seqs, losses);
	cr_assert_eq(tokens[0], 8, "the newest live grant of the key");
	gva_keys_fini(&k);
}

Test(gva_tracker, a_release_drops_the_keys_read_grants_and_says_which_were_live)
{
	const char *keys[] = {"a", "b", "c"};
	struct gva_keys k;
	bool held[3];
	int results[3] = {0, 0, 0};
	struct gva_entry expired = grant(GVA_READ, "b", 0x20000, 0x1000, 2);

	expired.expiry_ms = 10;
	add(grant(GVA_READ, "a", 0x10000, 0x1000, 1));
	add(grant(GVA_READ, "a", 0x50000, 0x1000, 1)); /* a second replica */
	add(expired);
	add(grant(GVA_WRITE, "a", 0x60000, 0x1000, 9));
	cr_assert_eq(gva_keys_init(&k, keys, 3), 0);
	gva_tracker_drop_reads(t, &k, NULL, 100, held);
	cr_assert(held[gva_keys_place(&k, 0)] && !held[gva_keys_place(&k, 1)] && !held[gva_keys_place(&k, 2)]);
	cr_assert_eq(t->n, 1, "only the write grant is left");
	add(grant(GVA_READ, "a", 0x10000, 0x1000, 1));
	add(grant(GVA_READ, "b", 0x20000, 0x1000, 2));
	results[0] = -1; /* a renewal that failed for a keeps a's grant */
	gva_tracker_drop_reads(t, &k, results, 100, NULL);
	cr_assert_eq(token_at(0x10000, 0x1000, GVA_READ), 1);
	cr_assert_eq(token_at(0x20000, 0x1000, GVA_READ), 0);
	gva_keys_fini(&k);
}

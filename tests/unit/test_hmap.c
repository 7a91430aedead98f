/* common/hmap: lookups, removal and iteration stay exact while the table grows, and when every key collides. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "hash.h"
#include "hmap.h"

struct item {
	struct hmap_node node;
	uint64_t key;
	uint64_t hash; /* what it was inserted with: the tests choose it to force collisions */
	int seen;
};

static uint64_t item_hash(const struct hmap_node *n)
{
	return hmap_entry(n, struct item, node)->hash;
}

static uint64_t keyed(uint64_t key)
{
	return hash_bytes(&key, sizeof(key));
}

static struct item *find(const struct hmap *t, uint64_t key, uint64_t h)
{
	hmap_foreach_hash(t, h, n)
	{
		struct item *it = hmap_entry(n, struct item, node);

		if (it->key == key)
			return it;
	}
	return NULL;
}

static struct item *items_new(size_t n, uint64_t (*hash_of)(uint64_t key))
{
	struct item *v = calloc(n, sizeof(*v));

	cr_assert_not_null(v);
	for (size_t i = 0; i < n; i++) {
		v[i].key = i;
		v[i].hash = hash_of(i);
	}
	return v;
}

/* Every item of v still in the table is found under its hash, and the others are not. */
static void expect_exactly(const struct hmap *t, struct item *v, size_t n, const bool *in)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++) {
		struct item *it = find(t, v[i].key, v[i].hash);

		cr_assert_eq(it, in[i] ? &v[i] : NULL, "key %zu", i);
		count += in[i];
	}
	cr_assert_eq(t->n, count);
}

/* Each item in the table visited once by hmap_foreach. */
static void expect_visits(const struct hmap *t, struct item *v, size_t n, const bool *in)
{
	for (size_t i = 0; i < n; i++)
		v[i].seen = 0;
	hmap_foreach(t, node) hmap_entry(node, struct item, node)->seen++;
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(v[i].seen, in[i] ? 1 : 0, "key %zu seen %d times", i, v[i].seen);
}

static void insert_all(struct hmap *t, struct item *v, size_t n, bool *in)
{
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(hmap_insert(t, &v[i].node, v[i].hash), 0);
		in[i] = true;
	}
}

Test(hmap, empty_table_finds_nothing)
{
	struct hmap t;
	struct item it = {.key = 1, .hash = 7};

	hmap_init(&t, item_hash, 0);
	cr_assert_null(hmap_first(&t, 7));
	cr_assert_null(hmap_bucket(&t, 7));
	cr_assert_not(hmap_remove(&t, &it.node, 7));
	hmap_foreach(&t, n) cr_assert_fail("an empty table has no node");
	hmap_free(&t);
}

/* Checked after every insert: the growth is incremental, so lookups must work while two arrays hold the items. */
Test(hmap, growth_keeps_every_key_findable)
{
	enum { N = 5000 };
	struct item *v = items_new(N, keyed);
	bool *in = calloc(N, sizeof(*in));
	struct hmap t;
	int growing = 0;

	hmap_init(&t, item_hash, 4);
	for (size_t i = 0; i < N; i++) {
		cr_assert_eq(hmap_insert(&t, &v[i].node, v[i].hash), 0);
		in[i] = true;
		growing += t.old != NULL;
		if (i % 97 == 0 || t.old)
			expect_exactly(&t, v, i + 1, in);
	}
	cr_assert_gt(growing, 0, "no insert saw a growth in progress");
	cr_assert_geq(t.nb, N / 2);
	expect_visits(&t, v, N, in);
	hmap_free(&t);
	cr_assert_eq(t.n, 0);
	cr_assert_null(hmap_first(&t, v[0].hash));
	free(in);
	free(v);
}

Test(hmap, a_presized_table_never_grows)
{
	enum { N = 1000 };
	struct item *v = items_new(N, keyed);
	struct hmap t;
	uint64_t nb = 0;

	hmap_init(&t, item_hash, N);
	for (size_t i = 0; i < N; i++) {
		cr_assert_eq(hmap_insert(&t, &v[i].node, v[i].hash), 0);
		nb = nb ? nb : t.nb;
		cr_assert_eq(t.nb, nb);
		cr_assert_null(t.old);
	}
	cr_assert_eq(nb, 1024);
	hmap_free(&t);
	free(v);
}

/* Removes every third item inside hmap_foreach, in a settled table and in one caught halfway through a growth. */
static void remove_while_iterating(size_t n, bool growing)
{
	struct item *v = items_new(n, keyed);
	bool *in = calloc(n, sizeof(*in));
	struct hmap t;
	size_t visited = 0;

	hmap_init(&t, item_hash, 2);
	insert_all(&t, v, n, in);
	cr_assert_eq(t.old != NULL, growing);
	hmap_foreach(&t, node)
	{
		struct item *it = hmap_entry(node, struct item, node);

		visited++;
		if (it->key % 3 == 0) {
			cr_assert(hmap_remove(&t, node, it->hash));
			in[it->key] = false;
			node->next = (void *)1; /* as if freed: the loop must not read it again */
		}
	}
	cr_assert_eq(visited, n);
	expect_exactly(&t, v, n, in);
	expect_visits(&t, v, n, in);
	for (size_t i = 0; i < n; i++)
		if (!in[i])
			cr_assert_not(hmap_remove(&t, &v[i].node, v[i].hash), "key %zu removed twice", i);
	hmap_free(&t);
	free(in);
	free(v);
}

Test(hmap, removal_during_iteration)
{
	remove_while_iterating(4096, false);
}

Test(hmap, removal_during_iteration_while_growing)
{
	/* 2^k + 1 items: the last insert doubled the buckets and moved only a few of the old ones */
	remove_while_iterating(4097, true);
}

static uint64_t same_hash(uint64_t key)
{
	(void)key;
	return 42;
}

/* High bits only: these share a bucket in every array the table reaches. */
static uint64_t low_bits_equal(uint64_t key)
{
	return (key % 7) << 40;
}

static void collisions(uint64_t (*hash_of)(uint64_t key))
{
	enum { N = 2000 };
	struct item *v = items_new(N, hash_of);
	bool *in = calloc(N, sizeof(*in));
	struct hmap t;

	hmap_init(&t, item_hash, 2);
	insert_all(&t, v, N, in);
	expect_exactly(&t, v, N, in);
	for (size_t i = 0; i < N; i += 2) {
		cr_assert(hmap_remove(&t, &v[i].node, v[i].hash));
		in[i] = false;
	}
	expect_exactly(&t, v, N, in);
	expect_visits(&t, v, N, in);
	for (size_t i = 0; i < N; i += 2) {
		cr_assert_eq(hmap_insert(&t, &v[i].node, v[i].hash), 0);
		in[i] = true;
	}
	expect_exactly(&t, v, N, in);
	hmap_free(&t);
	free(in);
	free(v);
}

Test(hmap, every_key_with_one_hash)
{
	collisions(same_hash);
}

Test(hmap, keys_colliding_in_every_bucket_array)
{
	collisions(low_bits_equal);
}

Test(hmap, removes_only_the_node_given)
{
	struct item a = {.key = 1, .hash = 5}, b = {.key = 1, .hash = 5}, stranger = {.key = 2, .hash = 5};
	struct hmap t;

	hmap_init(&t, item_hash, 0);
	cr_assert_eq(hmap_insert(&t, &a.node, a.hash), 0);
	cr_assert_eq(hmap_insert(&t, &b.node, b.hash), 0);
	cr_assert_eq(hmap_first(&t, 5), &b.node, "the newest first");
	cr_assert_not(hmap_remove(&t, &stranger.node, stranger.hash));
	cr_assert(hmap_remove(&t, &b.node, b.hash));
	cr_assert_eq(hmap_first(&t, 5), &a.node);
	cr_assert_eq(t.n, 1);
	hmap_free(&t);
}

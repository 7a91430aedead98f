/*
 * Location pruning (docs/kvcm.md "Location pruning", the reference's location_pruning_test): a dummy storage's
 * location whose file was deleted behind the manager's back is no longer served, and its block is written again.
 * A query that meets such locations prunes every one of them in its keys at once, past a prefix's end too; a
 * startWriteCache prunes before it plans. File (NFS) URIs are not checked, as in the reference.
 */
#include "prune_test.h"

static void up(void)
{
	srv_up(NULL);
	prune_fixture(&srv, "pg", "p", NULL);
}

TestSuite(prune, .init = up, .fini = srv_down, .timeout = 60);

static const char *const chain = "[100,101,102,103,104]";

/* Writes the chain, creating every file, and returns its five locations (the start reply). */
static json_t *write_chain(void)
{
	json_t *s = prune_start("p", chain, NULL);

	cr_assert_eq(json_array_size(jpath(s, "locations")), 5);
	prune_touch_all(s);
	prune_finish("p", s);
	cr_assert_eq(prune_prefix_hits("p", chain), 5);
	return s;
}

/* The status of key in getCacheMeta ("CLS_NOT_FOUND" once its block is gone). */
static bool meta_gone(int key)
{
	json_t *r = CALL("getCacheMeta", "{\"instance_id\":\"p\",\"block_keys\":[%d]}", key);
	bool gone = strstr(json_string_value(json_array_get(jpath(r, "metas"), 0)), "CLS_NOT_FOUND") != NULL;

	json_decref(r);
	return gone;
}

/* The re-write allocates exactly keys (hex file names), whose files it creates, and the chain is whole again. */
static void rewrite_expect(const int64_t *keys, size_t n)
{
	json_t *s = prune_start("p", chain, NULL);

	cr_assert_eq(json_array_size(jpath(s, "locations")), n, "%zu locations re-allocated",
	             json_array_size(jpath(s, "locations")));
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(prune_uri_key(s, i), keys[i], "location %zu is for key %lld", i, (long long)keys[i]);
	prune_touch_all(s);
	prune_finish("p", s);
	json_decref(s);
	cr_expect_eq(prune_prefix_hits("p", chain), 5, "the whole chain is served again");
}

Test(prune, a_query_prunes_a_lost_suffix)
{
	json_t *s = write_chain();
	const int64_t again[] = {101, 102, 103, 104};

	for (size_t i = 1; i < 5; i++)
		prune_remove(s, i);
	cr_expect_eq(prune_prefix_hits("p", chain), 1, "only the first block's file is left");
	cr_expect(meta_gone(104), "the query pruned the lost blocks");
	rewrite_expect(again, 4);
	json_decref(s);
}

Test(prune, a_query_prunes_past_the_prefix_end)
{
	json_t *s = write_chain();
	const int64_t again[] = {101, 103};

	prune_remove(s, 1);
	prune_remove(s, 3);
	cr_expect_eq(prune_prefix_hits("p", chain), 1);
	cr_expect(meta_gone(103), "the block after the prefix's end was checked by the same query");
	cr_expect(!meta_gone(102), "a block whose file exists stays");
	rewrite_expect(again, 2);
	json_decref(s);
}

Test(prune, a_write_prunes_without_a_query)
{
	json_t *s = write_chain(), *r;
	const int64_t again[] = {101, 103};
	char *mask;

	prune_remove(s, 1);
	prune_remove(s, 3);
	r = prune_start("p", chain, NULL);
	mask = json_dumps(jpath(r, "block_mask"), JSON_COMPACT);
	cr_expect_str_eq(mask, "{\"bool_masks\":{\"values\":[true,false,true,false,true]}}");
	free(mask);
	prune_finish("p", r); /* files not written: the blocks' data is lost again */
	json_decref(r);
	rewrite_expect(again, 2);
	json_decref(s);
}

Test(prune, every_block_lost)
{
	json_t *s = write_chain();
	const int64_t again[] = {100, 101, 102, 103, 104};

	for (size_t i = 0; i < 5; i++)
		prune_remove(s, i);
	cr_expect_eq(prune_prefix_hits("p", chain), 0);
	rewrite_expect(again, 5);
	json_decref(s);
}

Test(prune, batch_get_and_length_see_the_loss)
{
	json_t *s = write_chain(), *r;

	prune_remove(s, 2);
	r = CALL("getCacheLocationLen", "{\"instance_id\":\"p\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":%s}",
	         chain);
	cr_expect_str_eq(json_string_value(jpath(r, "cache_location_len")), "4");
	json_decref(r);
	r = CALL("getCacheLocation", "{\"instance_id\":\"p\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":%s}",
	         chain);
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(r, "locations"), 2), "type")), "ST_UNSPECIFIED");
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(r, "locations"), 3), "type")), "ST_DUMMY");
	json_decref(r);
	json_decref(s);
}

Test(prune, file_uris_are_not_checked)
{
	json_t *s;

	EXPECT_CODE(ADMIN("createInstanceGroup", "{\"instance_group\":{\"name\":\"fg\",\"storage_candidates\":"
	                                         "[\"nfs_01\"]}}"),
	            "OK");
	cr_assert(register_simple(&srv.meta, "fg", "f", 1024));
	s = prune_start("f", "[1,2]", NULL);
	prune_finish("f", s); /* no file was ever written: the reference's NFS back-end never says "lost" */
	json_decref(s);
	cr_expect_eq(prune_prefix_hits("f", "[1,2]"), 2);
}

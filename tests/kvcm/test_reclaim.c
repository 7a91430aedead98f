/*
 * Quotas and reclaim (reference kvcm.md §5.3): max_key_count is a hard limit, byte quotas per group and per
 * storage type refuse writes, and crossing the used_percentage water level evicts the least recently written
 * SERVING blocks (never WRITING ones) after delay_before_delete_ms.
 */
#include "kvcm_test.h"

static const char *const debug_on[] = {DEBUG_SERVICE, NULL};

static void up(void)
{
	srv_up(debug_on);
	srv_clock_freeze(); /* reclaim runs on its timer, but deletes wait delay_before_delete_ms of logical time */
}

TestSuite(reclaim, .init = up, .fini = srv_down, .timeout = 30);

/* An instance group over nfs_01 with the given limits. */
static json_t *group_call(const char *api, const char *prefix, const char *name, long capacity, long nfs_capacity,
                          double pct, long max_keys, int version)
{
	return ADMIN(api,
	             "{%s\"instance_group\":{\"name\":\"%s\",\"storage_candidates\":[\"nfs_01\"],"
	             "\"quota\":{\"capacity\":%ld,\"quota_config\":[{\"storage_type\":\"ST_NFS\",\"capacity\":%ld}]},"
	             "\"cache_config\":{\"reclaim_strategy\":{\"reclaim_policy\":1,\"trigger_strategy\":{"
	             "\"used_percentage\":%g},\"delay_before_delete_ms\":100},\"meta_indexer_config\":{"
	             "\"max_key_count\":%ld}},\"version\":%d}}",
	             prefix, name, capacity, nfs_capacity, pct, max_keys, version);
}

static bool write_one(const char *id, int key)
{
	char keys[32];

	snprintf(keys, sizeof(keys), "[%d]", key);
	return write_keys(&srv.meta, id, keys);
}

static bool cached(const char *id, int key)
{
	json_t *r = CALL("getCacheLocation", "{\"instance_id\":\"%s\",\"block_keys\":[%d]}", id, key);
	bool hit = json_array_size(jpath(r, "locations")) == 1;

	json_decref(r);
	return hit;
}

Test(reclaim, max_key_count_then_reclaim)
{
	int i;

	EXPECT_CODE(group_call("createInstanceGroup", "", "rg", 32768, 32768, 3.2, 16, 1), "OK");
	cr_assert(register_simple(&srv.meta, "rg", "r", 1024));
	for (i = 1; i <= 16; i++)
		cr_assert(write_one("r", i), "write %d", i);
	EXPECT_CODE(CALL("startWriteCache", "{\"instance_id\":\"r\",\"block_keys\":[17]}"), "INTERNAL_ERROR");
	EXPECT_CODE(group_call("updateInstanceGroup", "\"current_version\":1,", "rg", 32768, 32768, 0.1, 16, 2), "OK");
	srv_clock_advance(0); /* a reclaim pass: the oldest block is deleted after delay_before_delete_ms (100) */
	EXPECT_CODE(CALL("startWriteCache", "{\"instance_id\":\"r\",\"block_keys\":[17]}"), "INTERNAL_ERROR");
	srv_clock_advance(100);
	cr_assert(srv_deletes_done());
	cr_assert(write_one("r", 17), "the 17th write succeeds once reclaim made room");
	cr_expect(!cached("r", 1), "the oldest block is reclaimed first");
	cr_expect(cached("r", 17));
}

Test(reclaim, writing_blocks_survive)
{
	json_t *s;

	EXPECT_CODE(group_call("createInstanceGroup", "", "wg", 1 << 20, 1 << 20, 3.2, 8, 1), "OK");
	cr_assert(register_simple(&srv.meta, "wg", "w", 1024));
	for (int i = 1; i <= 4; i++)
		cr_assert(write_one("w", i));
	s = CALL("startWriteCache", "{\"instance_id\":\"w\",\"block_keys\":[5,6,7,8],\"write_timeout_seconds\":30}");
	cr_assert_str_eq(code_of(s), "OK");
	EXPECT_CODE(group_call("updateInstanceGroup", "\"current_version\":1,", "wg", 1 << 20, 1 << 20, 0.1, 8, 2),
	            "OK");
	srv_clock_advance(0);   /* a reclaim pass */
	srv_clock_advance(100); /* past delay_before_delete_ms */
	cr_assert(srv_deletes_done());
	for (int i = 1; i <= 4; i++)
		cr_expect(!cached("w", i), "serving block %d is reclaimed", i);
	EXPECT_CODE(CALL("finishWriteCache",
	                 "{\"instance_id\":\"w\",\"write_session_id\":\"%s\",\"success_blocks\":"
	                 "{\"offset\":4}}",
	                 json_string_value(jpath(s, "write_session_id"))),
	            "OK");
	/* the session's blocks were WRITING during the reclaim: they survived it */
	cr_expect(cached("w", 8));
	json_decref(s);
}

Test(reclaim, byte_quotas_refuse_writes)
{
	int i;

	EXPECT_CODE(group_call("createInstanceGroup", "", "bg", 10000, 1 << 20, 3.2, 1000, 1), "OK");
	cr_assert(register_simple(&srv.meta, "bg", "b", 1000));
	for (i = 1; i <= 10; i++)
		cr_assert(write_one("b", i));
	EXPECT_CODE(CALL("startWriteCache", "{\"instance_id\":\"b\",\"block_keys\":[11]}"), "INTERNAL_ERROR");
	/* the per-type quota */
	EXPECT_CODE(group_call("createInstanceGroup", "", "tg", 1 << 20, 5000, 3.2, 1000, 1), "OK");
	cr_assert(register_simple(&srv.meta, "tg", "t", 1000));
	for (i = 1; i <= 5; i++)
		cr_assert(write_one("t", i));
	EXPECT_CODE(CALL("startWriteCache", "{\"instance_id\":\"t\",\"block_keys\":[6]}"), "INTERNAL_ERROR");
}

Test(reclaim, byte_water_level_evicts_oldest_after_the_delay)
{
	json_t *r;
	int left = 0;

	EXPECT_CODE(group_call("createInstanceGroup", "", "lg", 100000, 100000, 0.9, 1000, 1), "OK");
	cr_assert(register_simple(&srv.meta, "lg", "l", 10000));
	for (int i = 1; i <= 8; i++)
		cr_assert(write_one("l", i));
	EXPECT_CODE(group_call("updateInstanceGroup", "\"current_version\":1,", "lg", 100000, 100000, 0.5, 1000, 2),
	            "OK");
	srv_clock_advance(0); /* a reclaim pass; deletion waits delay_before_delete_ms (100 ms) */
	r = CALL("getCacheMeta", "{\"instance_id\":\"l\",\"block_keys\":[1]}");
	cr_expect(strstr(json_string_value(json_array_get(jpath(r, "metas"), 0)), "CLS_DELETING"),
	          "evicted, not yet deleted: %s", json_string_value(json_array_get(jpath(r, "metas"), 0)));
	json_decref(r);
	srv_clock_advance(99);
	cr_expect_gt(srv_metric("mmc_kvcm_pending_deletes"), 0, "deleted before delay_before_delete_ms");
	srv_clock_advance(1);
	cr_assert(srv_deletes_done());
	for (int i = 1; i <= 8; i++)
		left += cached("l", i);
	cr_expect_eq(left, 4, "80000 of 100000 bytes over a 0.5 water level: 4 blocks go, 4 stay");
	cr_expect(!cached("l", 1) && cached("l", 8));
	r = CALL("getCacheMeta", "{\"instance_id\":\"l\",\"block_keys\":[1]}");
	cr_expect_str_eq(json_string_value(json_array_get(jpath(r, "metas"), 0)), "{\"status\":\"CLS_NOT_FOUND\"}");
	json_decref(r);
}

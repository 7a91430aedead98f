/*
 * The cache reclaimer as the reference specifies it (its reclaiming_test, server_config.cc): the
 * kvcm.cache_reclaimer.* keys, Group LRU across a group's instances, no over-eviction while delayed deletes are in
 * flight (their bytes and keys are credited to the water level), the pending limits, the back-off of a round that
 * can do nothing, and the metrics under the reference's cache_reclaimer.* names (getMetrics).
 *
 * The logical clock is frozen: each srv_clock_advance runs the reclaimer's rounds until one makes no progress,
 * then the deletes that came due. The reclaimer's own timer is set to a minute, so that only the test drives it.
 */
#include "kvcm_test.h"

#define GROUP "rg"

/* Starts srv with the debug clock, an idle reclaimer timer and the reclaimer keys in extra (NULL-terminated). */
static void up_with(const char *const *extra)
{
	const char *env[24] = {DEBUG_SERVICE, "kvcm.cache_reclaimer.idle_interval_ms=60000"};
	int n = 2;

	for (int i = 0; extra && extra[i] && n < 23; i++)
		env[n++] = extra[i];
	srv_up(env);
	srv_clock_freeze();
}

TestSuite(reclaimer, .fini = srv_down, .timeout = 60);

/* Creates (version 1) or updates (to version 2) GROUP on nfs_01: capacities in KiB, one per storage type. */
static void group(bool update, long kib, long nfs_kib, long max_keys, double pct, long delay_ms)
{
	EXPECT_CODE(ADMIN(update ? "updateInstanceGroup" : "createInstanceGroup",
	                  "{%s\"instance_group\":{\"name\":\"" GROUP "\",\"storage_candidates\":[\"nfs_01\"],"
	                  "\"quota\":{\"capacity\":%ld,\"quota_config\":[{\"storage_type\":3,\"capacity\":%ld},"
	                  "{\"storage_type\":4,\"capacity\":%ld}]},\"cache_config\":{\"reclaim_strategy\":{"
	                  "\"reclaim_policy\":1,\"trigger_strategy\":{\"used_percentage\":%g},"
	                  "\"delay_before_delete_ms\":%ld},\"meta_indexer_config\":{\"max_key_count\":%ld}},"
	                  "\"version\":%d}}",
	                  update ? "\"current_version\":1," : "", kib * 1024, nfs_kib * 1024, nfs_kib * 1024, pct,
	                  delay_ms, max_keys, update ? 2 : 1),
	            "OK");
}

/* Registers id in GROUP (tp0 of 1 KiB) and writes keys 1..n, oldest first. */
static void fill(const char *id, int n)
{
	cr_assert(register_simple(&srv.meta, GROUP, id, 1024));
	for (int i = 1; i <= n; i++) {
		char keys[32];

		snprintf(keys, sizeof(keys), "[%d]", i);
		cr_assert(write_keys(&srv.meta, id, keys), "write %d", i);
	}
}

static bool tags_match(json_t *tags, const char *group, const char *type)
{
	size_t want = (group != NULL) + (type != NULL), i;
	json_t *t;

	if (json_array_size(tags) != want)
		return false;
	json_array_foreach(tags, i, t)
	{
		const char *k = json_string_value(jpath(t, "tag_key")), *v = json_string_value(jpath(t, "tag_value"));

		if (!(strcmp(k, "instance_group") == 0 && group && strcmp(v, group) == 0) &&
		    !(strcmp(k, "storage_type") == 0 && type && strcmp(v, type) == 0))
			return false;
	}
	return true;
}

/* getMetrics' one cache_reclaimer.<name> entry with exactly these tags (NULL: absent); -1 when not exactly one. */
static long metric(const char *name, const char *group, const char *type)
{
	json_t *r = ADMIN("getMetrics", "{}"), *m;
	char full[128];
	long v = -1;
	int found = 0;
	size_t i;

	snprintf(full, sizeof(full), "cache_reclaimer.%s", name);
	json_array_foreach(jpath(r, "metrics"), i, m)
	{
		json_t *val = jpath(m, "metric_value");

		if (strcmp(json_string_value(jpath(m, "metric_name")), full) != 0 ||
		    !tags_match(jpath(m, "metric_tags"), group, type))
			continue;
		found++;
		v = jpath(val, "int_value") ? atol(json_string_value(jpath(val, "int_value")))
		                            : (long)json_real_value(jpath(val, "float_value"));
	}
	json_decref(r);
	return found == 1 ? v : -1;
}

/* Polls until the metric reads want (a delete finishing on an I/O thread); its last value. */
static long metric_becomes(const char *name, const char *group, const char *type, long want)
{
	long v = metric(name, group, type);

	for (int i = 0; v != want && i < POLL_CAP; i++) {
		poll_pause();
		v = metric(name, group, type);
	}
	return v;
}

/* How many of id's keys 1..n a query still finds. */
static int survivors(const char *id, int n)
{
	int left = 0;

	for (int i = 1; i <= n; i++) {
		json_t *r = CALL("getCacheLocation", "{\"instance_id\":\"%s\",\"block_keys\":[%d]}", id, i);

		left += json_array_size(jpath(r, "locations")) == 1;
		json_decref(r);
	}
	return left;
}

/* What three one-key requests in flight show: all of it credited, none of it done. */
static void expect_three_in_flight(void)
{
	cr_expect_eq(metric("delete_submit_count", NULL, NULL), 3);
	cr_expect_eq(metric("delete_complete_count", NULL, NULL), 0);
	cr_expect_eq(metric("pending_delete_handler_count", NULL, NULL), 3);
	cr_expect_eq(metric("pending_location_count", NULL, NULL), 3);
	cr_expect_eq(metric("pending_delete_bytes", NULL, NULL), 3 * 1024);
	cr_expect_eq(metric("credited_delete_bytes", NULL, NULL), 3 * 1024);
	cr_expect_eq(metric("predicted_deleted_key_count", NULL, NULL), 3);
	cr_expect_eq(metric("pending_location_count", GROUP, "file"), 3);
	cr_expect_eq(metric("pending_delete_bytes", GROUP, "file"), 3 * 1024);
	cr_expect_eq(metric("credited_delete_bytes", GROUP, "file"), 3 * 1024);
	cr_expect_eq(metric("predicted_deleted_key_count", GROUP, NULL), 3);
}

/* Once the deletes are done, everything in flight reads 0 and the credit is gone with them. */
static void expect_drained(void)
{
	cr_expect_eq(metric_becomes("delete_complete_count", NULL, NULL, 3), 3);
	cr_expect_eq(metric("pending_delete_handler_count", NULL, NULL), 0);
	cr_expect_eq(metric("pending_location_count", NULL, NULL), 0);
	cr_expect_eq(metric("credited_delete_bytes", NULL, NULL), 0);
	cr_expect_eq(metric("predicted_deleted_key_count", NULL, NULL), 0);
	cr_expect_eq(metric("pending_delete_bytes", GROUP, "file"), 0);
	cr_expect_eq(metric("credited_delete_bytes", GROUP, "file"), 0);
	cr_expect_eq(metric("predicted_deleted_key_count", GROUP, NULL), 0);
}

/*
 * 12 blocks of 1 KiB at a 0.5 water level: with del_batch_size 4, the few candidates make one-key requests; three
 * bring either level from 60% to 45% (50% is still over), and their credit keeps a fourth out while the
 * five-second delay runs.
 */
static void no_over_eviction(long kib, long nfs_kib, long max_keys)
{
	static const char *const env[] = {"kvcm.cache_reclaimer.del_batch_size=4", NULL};

	up_with(env);
	group(false, kib, nfs_kib, max_keys, 3.2, 5000);
	fill("i", 12);
	group(true, kib, nfs_kib, max_keys, 0.5, 5000);
	srv_clock_advance(0);
	expect_three_in_flight();
	cr_expect_eq(survivors("i", 12), 9);
	cr_expect(survivors("i", 3) == 0, "the oldest blocks went");
	srv_clock_advance(0);
	cr_expect_eq(metric("delete_submit_count", NULL, NULL), 3, "the credit kept a fourth request out");
	srv_clock_advance(5000);
	expect_drained();
	srv_clock_advance(0);
	cr_expect_eq(metric("delete_submit_count", NULL, NULL), 3);
	cr_expect_eq(survivors("i", 12), 9);
}

Test(reclaimer, byte_credit_prevents_over_eviction)
{
	no_over_eviction(20, 30, 30);
}

Test(reclaimer, key_credit_prevents_over_eviction)
{
	no_over_eviction(1024, 1024, 20);
}

Test(reclaimer, group_credit_spans_instances)
{
	static const char *const env[] = {"kvcm.cache_reclaimer.del_batch_size=4", NULL};

	up_with(env);
	group(false, 20, 30, 16, 3.2, 3000);
	fill("i1", 6);
	fill("i2", 6);
	group(true, 20, 30, 16, 0.5, 3000);
	srv_clock_advance(0);
	cr_expect_eq(metric("delete_submit_count", NULL, NULL), 3);
	cr_expect_eq(metric("pending_delete_handler_count", NULL, NULL), 3);
	cr_expect_eq(survivors("i1", 6) + survivors("i2", 6), 9);
	cr_expect_eq(survivors("i2", 6), 6, "the group's oldest blocks were i1's");
	srv_clock_advance(3000);
	cr_expect_eq(metric_becomes("pending_delete_handler_count", NULL, NULL, 0), 0);
	cr_expect_eq(metric("delete_submit_count", NULL, NULL), 3);
}

Test(reclaimer, group_lru_takes_the_cold_small_instance_first)
{
	static const char *const env[] = {"kvcm.cache_reclaimer.del_batch_size=2",
	                                  "kvcm.cache_reclaimer.key_sampling_size_total=64", NULL};

	up_with(env);
	EXPECT_CODE(ADMIN("createInstanceGroup",
	                  "{\"instance_group\":{\"name\":\"" GROUP "\",\"storage_candidates\":[\"nfs_01\"],\"quota\":{"
	                  "\"capacity\":20480},\"cache_config\":{\"reclaim_strategy\":{\"trigger_strategy\":{"
	                  "\"used_percentage\":3.2},\"delay_before_delete_ms\":1000},\"meta_indexer_config\":{"
	                  "\"max_key_count\":128}},\"version\":1}}"),
	            "OK");
	fill("old_small", 4);
	fill("new_large", 12);
	EXPECT_CODE(ADMIN("updateInstanceGroup",
	                  "{\"current_version\":1,\"instance_group\":{\"name\":\"" GROUP "\",\"storage_candidates\":["
	                  "\"nfs_01\"],\"quota\":{\"capacity\":20480},\"cache_config\":{\"reclaim_strategy\":{"
	                  "\"trigger_strategy\":{\"used_percentage\":0.71},\"delay_before_delete_ms\":1000},"
	                  "\"meta_indexer_config\":{\"max_key_count\":128}},\"version\":2}}"),
	            "OK");
	srv_clock_advance(0);
	cr_expect_eq(metric("delete_submit_count", NULL, NULL), 2, "80% to 70%: two one-key requests");
	cr_expect_eq(metric("group_lru_submitted_block_count", NULL, NULL), 2);
	cr_expect_eq(survivors("old_small", 4), 2);
	cr_expect_eq(survivors("new_large", 12), 12);
}

Test(reclaimer, a_round_that_can_do_nothing_backs_off)
{
	long rounds;

	up_with(NULL);
	group(false, 20, 30, 32, 3.2, 100);
	cr_assert(register_simple(&srv.meta, GROUP, "w", 1024));
	for (int i = 1; i <= 12; i++)
		EXPECT_CODE(CALL("startWriteCache",
		                 "{\"instance_id\":\"w\",\"block_keys\":[%d],\"write_timeout_seconds\":"
		                 "30}",
		                 i),
		            "OK");
	group(true, 20, 30, 32, 0.1, 100);
	rounds = metric("reclaim_cron_count", NULL, NULL);
	srv_clock_advance(0);
	cr_expect_eq(metric("reclaim_no_progress_backoff_count", NULL, NULL), 1, "WRITING blocks cannot be reclaimed");
	cr_expect_eq(metric("reclaim_cron_count", NULL, NULL), rounds + 1, "one round, then the back-off");
	srv_clock_advance(0);
	cr_expect_eq(metric("reclaim_no_progress_backoff_count", NULL, NULL), 2);
	cr_expect_eq(metric("delete_submit_count", NULL, NULL), 0);
}

Test(reclaimer, pending_limits_hold_back_new_requests)
{
	static const char *const env[] = {"kvcm.cache_reclaimer.del_batch_size=4",
	                                  "kvcm.cache_reclaimer.pending_delete_handler_limit=1", NULL};

	up_with(env);
	group(false, 20, 30, 30, 3.2, 5000);
	fill("i", 12);
	group(true, 20, 30, 30, 0.5, 5000);
	srv_clock_advance(0);
	cr_expect_eq(metric("delete_submit_count", NULL, NULL), 1);
	cr_expect_gt(metric("pending_limit_reject_count", GROUP, "process"), 0);
	cr_expect_gt(metric("reclaim_no_progress_backoff_count", NULL, NULL), 0);
	srv_clock_advance(5000);
	cr_expect_eq(metric_becomes("delete_complete_count", NULL, NULL, 1), 1);
	srv_clock_advance(0);
	cr_expect_eq(metric("delete_submit_count", NULL, NULL), 2, "the finished request made room for the next");
	cr_expect_eq(survivors("i", 12), 10);
}

Test(reclaimer, the_reference_keys_start_the_server)
{
	static const char *const env[] = {
	    "kvcm.cache_reclaimer.key_sampling_size_total=64",
	    "kvcm.cache_reclaimer.key_sampling_size_per_task=100",
	    "kvcm.cache_reclaimer.del_batch_size=8",
	    "kvcm.cache_reclaimer.worker_size=4",
	    "kvcm.cache_reclaimer.inflight_delete_timeout_ms=1234",
	    "kvcm.cache_reclaimer.pending_location_limit_per_group_type=11",
	    "kvcm.cache_reclaimer.pending_bytes_limit_per_group_type=22",
	    "kvcm.cache_reclaimer.pending_delete_handler_limit=33",
	    "kvcm.cache_reclaimer.pending_bytes_limit=44",
	    "kvcm.cache_reclaimer.group_lru_min_sampling_ratio=5",
	    "kvcm.cache_reclaimer.group_lru_max_sampling_size=1000",
	    "kvcm.cache_reclaimer.group_lru_max_delete_requests_per_round=16",
	    NULL,
	};
	static const char *const zero_ratio[] = {"kvcm.cache_reclaimer.group_lru_min_sampling_ratio=0", NULL};
	static const char *const zero_limit[] = {"kvcm.cache_reclaimer.pending_delete_handler_limit=0", NULL};
	struct kvcm_srv s;

	up_with(env);
	cr_expect_eq(metric("delete_submit_count", NULL, NULL), 0);
	cr_expect_neq(kvcm_srv_start(&s, zero_ratio), 0, "a ratio of 0 is refused, as the reference refuses it");
	kvcm_srv_stop(&s);
	cr_expect_neq(kvcm_srv_start(&s, zero_limit), 0, "a pending limit of 0 is refused");
	kvcm_srv_stop(&s);
}

/* a literal, so that the compiler checks the arguments of the format (at any optimization level) */
#define GROUP_CFG                                                                                                      \
	"\"storage_candidates\":[\"nfs_01\"],\"quota\":{\"capacity\":4096},\"cache_config\":{\"reclaim_strategy\":{"   \
	"\"trigger_strategy\":{\"used_percentage\":%g},\"delay_before_delete_ms\":5000}}"

/* A group name is a label value: quotes and backslashes are escaped on the page, and getMetrics gives it back. */
Test(reclaimer, group_names_are_escaped_in_labels)
{
	static const char *const json_name = "q\\\"g\\\\1"; /* q"g\1 */
	char body[600], group[300];

	up_with(NULL);
	snprintf(group, sizeof(group), GROUP_CFG, 3.2);
	snprintf(body, sizeof(body), "{\"instance_group\":{\"name\":\"%s\",%s,\"version\":1}}", json_name, group);
	EXPECT_CODE(ADMIN("createInstanceGroup", "%s", body), "OK");
	cr_assert(register_simple(&srv.meta, json_name, "e", 1024));
	cr_assert(write_keys(&srv.meta, "e", "[1]"));
	cr_assert(write_keys(&srv.meta, "e", "[2]"));
	snprintf(group, sizeof(group), GROUP_CFG, 0.1);
	snprintf(body, sizeof(body), "{\"current_version\":1,\"instance_group\":{\"name\":\"%s\",%s,\"version\":2}}",
	         json_name, group);
	EXPECT_CODE(ADMIN("updateInstanceGroup", "%s", body), "OK");
	srv_clock_advance(0);
	cr_expect_eq(metric("pending_location_count", "q\"g\\1", "file"), 2);
	cr_expect_eq(metric("predicted_deleted_key_count", "q\"g\\1", NULL), 2);
}

/*
 * The admin API: storages, instance groups (with the version check), instances, health and metrics.
 */
#include "kvcm_test.h"

#include <unistd.h>

TestSuite(admin, .init = (void (*)(void))0, .timeout = 30);

static void up(void)
{
	srv_up(NULL);
}

static void up_debug(void)
{
	static const char *const debug_on[] = {DEBUG_SERVICE, NULL};

	srv_up(debug_on);
}

#define GROUP(name, cands, version)                                                                                    \
	"{\"instance_group\":{\"name\":\"" name "\",\"storage_candidates\":" cands ",\"global_quota_group_name\":"     \
	"\"q\",\"max_instance_count\":10,\"quota\":{\"capacity\":1000000,\"quota_config\":[{\"storage_type\":"         \
	"\"ST_NFS\",\"capacity\":500000}]},\"cache_config\":{\"reclaim_strategy\":{\"reclaim_policy\":"                \
	"\"POLICY_LRU\",\"trigger_strategy\":{\"used_percentage\":0.8},\"delay_before_delete_ms\":100},"               \
	"\"data_storage_strategy\":\"CPS_PREFER_3FS\",\"meta_indexer_config\":{\"max_key_count\":1000}},"              \
	"\"user_data\":\"u\",\"version\":" version "}}"

Test(admin, storages, .init = up, .fini = srv_down)
{
	json_t *r;
	char body[512];

	snprintf(body, sizeof(body),
	         "{\"storage\":{\"global_unique_name\":\"s2\",\"nfs\":{\"root_path\":\"%s/s2/\","
	         "\"key_count_per_file\":1},\"check_storage_available_when_open\":true}}",
	         srv.root);
	EXPECT_CODE(ADMIN("addStorage", "%s", body), "OK");
	EXPECT_CODE(ADMIN("addStorage", "%s", body), "DUPLICATE_ENTITY");
	EXPECT_CODE(ADMIN("addStorage", "{\"storage\":{\"global_unique_name\":\"d1\",\"dummy\":{}}}"), "OK");
	EXPECT_CODE(
	    ADMIN("addStorage", "{\"storage\":{\"global_unique_name\":\"m1\",\"mmc\":{\"key_prefix\":\"kv/\"}}}"),
	    "OK");
	EXPECT_CODE(ADMIN("addStorage", "{\"storage\":{\"global_unique_name\":\"x\"}}"), "INVALID_ARGUMENT");
	EXPECT_CODE(ADMIN("addStorage", "{\"storage\":{\"global_unique_name\":\"x\",\"nfs\":{},\"dummy\":{}}}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(ADMIN("addStorage", "{\"storage\":{\"global_unique_name\":\"x\",\"threefs\":{}}}"), "UNSUPPORTED");
	EXPECT_CODE(ADMIN("addStorage", "{\"storage\":{\"global_unique_name\":\"x\",\"nfs\":{\"root_path\":\"rel\"}}}"),
	            "INVALID_ARGUMENT");
	r = ADMIN("listStorage", "{\"trace_id\":\"t\"}");
	cr_assert_str_eq(code_of(r), "OK");
	cr_expect_eq(json_array_size(jpath(r, "storage")), 6, "nfs_01, the two event-report defaults and 3 more");
	cr_expect(jpath(jpath(r, "header"), "tracer_result") == NULL, "admin headers have no tracer_result");
	json_decref(r);
	EXPECT_CODE(ADMIN("disableStorage", "{\"storage_unique_name\":\"s2\"}"), "OK");
	r = ADMIN("listStorage", "{}");
	for (size_t i = 0; i < json_array_size(jpath(r, "storage")); i++) {
		json_t *st = json_array_get(jpath(r, "storage"), i);

		cr_expect_eq(json_is_true(jpath(st, "is_available")),
		             strcmp(json_string_value(jpath(st, "global_unique_name")), "s2") != 0);
	}
	json_decref(r);
	EXPECT_CODE(ADMIN("enableStorage", "{\"storage_unique_name\":\"s2\"}"), "OK");
	EXPECT_CODE(ADMIN("enableStorage", "{\"storage_unique_name\":\"nope\"}"), "INSTANCE_NOT_EXIST");
	EXPECT_CODE(ADMIN("removeStorage", "{\"storage_unique_name\":\"nfs_01\"}"), "INVALID_ARGUMENT");
	EXPECT_CODE(ADMIN("removeStorage", "{\"storage_unique_name\":\"d1\"}"), "OK");
	EXPECT_CODE(ADMIN("removeStorage", "{\"storage_unique_name\":\"d1\"}"), "INSTANCE_NOT_EXIST");
}

Test(admin, instance_groups, .init = up, .fini = srv_down)
{
	json_t *r, *g;

	EXPECT_CODE(ADMIN("createInstanceGroup", GROUP("g1", "[\"nfs_01\"]", "1")), "OK");
	EXPECT_CODE(ADMIN("createInstanceGroup", GROUP("g1", "[\"nfs_01\"]", "1")), "DUPLICATE_ENTITY");
	/* a missing candidate is accepted (test_grpc_differences.py); an event-report one is not a data storage */
	EXPECT_CODE(ADMIN("createInstanceGroup", GROUP("g2", "[\"event_report_l2_default\"]", "1")),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(ADMIN("createInstanceGroup", "{}"), "INVALID_ARGUMENT");
	r = ADMIN("getInstanceGroup", "{\"name\":\"g1\"}");
	cr_assert_str_eq(code_of(r), "OK");
	g = jpath(r, "instance_group");
	cr_expect_str_eq(json_string_value(jpath(g, "version")), "1");
	cr_expect_str_eq(json_string_value(jpath(jpath(g, "quota"), "capacity")), "1000000");
	cr_expect_str_eq(
	    json_string_value(jpath(json_array_get(jpath(jpath(g, "quota"), "quota_config"), 0), "storage_type")),
	    "ST_NFS");
	cr_expect_str_eq(json_string_value(jpath(jpath(g, "cache_config"), "data_storage_strategy")), "CPS_PREFER_3FS");
	json_decref(r);
	/* updates need the current version */
	EXPECT_CODE(ADMIN("updateInstanceGroup", "{\"current_version\":5,%s", GROUP("g1", "[\"nfs_01\"]", "2") + 1),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(ADMIN("updateInstanceGroup", "{\"current_version\":1,%s", GROUP("g1", "[\"nfs_01\"]", "2") + 1),
	            "OK");
	r = ADMIN("getInstanceGroup", "{\"name\":\"g1\"}");
	cr_expect_str_eq(json_string_value(jpath(jpath(r, "instance_group"), "version")), "2");
	json_decref(r);
	r = ADMIN("listInstanceGroup", "{}");
	cr_expect_eq(json_array_size(jpath(r, "instance_group")), 3, "default, test_group and g1");
	json_decref(r);
	cr_assert(register_simple(&srv.meta, "g1", "a1", 100));
	EXPECT_CODE(ADMIN("removeInstanceGroup", "{\"name\":\"g1\"}"), "INVALID_ARGUMENT");
	EXPECT_CODE(ADMIN("removeInstance", "{\"instance_group\":\"g1\",\"instance_id\":\"a1\"}"), "OK");
	EXPECT_CODE(ADMIN("removeInstanceGroup", "{\"name\":\"g1\"}"), "OK");
	EXPECT_CODE(ADMIN("getInstanceGroup", "{\"name\":\"g1\"}"), "INSTANCE_NOT_EXIST");
}

/* The admin API's registerInstance refuses a missing group too (the reference's admin suite checks it). */
Test(admin, no_auto_create, .timeout = 30)
{
	json_t *r;

	srv_up(NULL);
	r = ADMIN("registerInstance", "{\"instance_group\":\"missing_group\",\"instance_id\":\"x\",\"block_size\":8,"
	                              "\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"d\"},"
	                              "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":1}]}");
	cr_expect_str_neq(code_of(r), "OK");
	cr_expect(strstr(message_of(r), "missing_group"), "the message names the group: %s", message_of(r));
	json_decref(r);
	srv_down();
}

Test(admin, instances, .init = up, .fini = srv_down)
{
	json_t *r;

	cr_assert(register_simple(&srv.meta, "default", "a", 100));
	cr_assert(register_simple(&srv.meta, "test_group", "b", 100));
	EXPECT_CODE(ADMIN("registerInstance", "{\"instance_group\":\"default\",\"instance_id\":\"c\",\"block_size\":8,"
	                                      "\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"d\"},"
	                                      "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":1}]}"),
	            "OK");
	r = ADMIN("listInstanceInfo", "{\"instance_group_name\":\"\"}");
	cr_expect_eq(json_array_size(jpath(r, "instance_info")), 3);
	json_decref(r);
	r = ADMIN("listInstanceInfo", "{\"instance_group_name\":\"default\"}");
	cr_expect_eq(json_array_size(jpath(r, "instance_info")), 2);
	json_decref(r);
	r = ADMIN("getInstanceInfo", "{\"instance_id\":\"a\"}");
	cr_expect_str_eq(json_string_value(jpath(jpath(r, "instance_info"), "instance_group_name")), "default");
	json_decref(r);
	cr_assert(write_keys(&srv.meta, "a", "[1,2]"));
	EXPECT_CODE(ADMIN("getCacheMeta", "{\"instance_id\":\"a\",\"block_keys\":[1]}"), "OK");
	EXPECT_CODE(ADMIN("removeInstance", "{\"instance_id\":\"a\"}"), "OK");
	EXPECT_CODE(CALL("getInstanceInfo", "{\"instance_id\":\"a\"}"), "INSTANCE_NOT_EXIST");
	EXPECT_CODE(ADMIN("removeInstance", "{\"instance_id\":\"a\"}"), "INSTANCE_NOT_EXIST");
	/* the id can be registered again, with another config */
	EXPECT_CODE(CALL("registerInstance", "{\"instance_group\":\"default\",\"instance_id\":\"a\",\"block_size\":16,"
	                                     "\"model_deployment\":{\"model_name\":\"m2\",\"dtype\":\"d\"},"
	                                     "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":1}]}"),
	            "OK");
	r = CALL("getCacheLocation", "{\"instance_id\":\"a\",\"block_keys\":[1]}");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 0, "the new instance starts empty");
	json_decref(r);
}

Test(admin, health_and_metrics, .init = up, .fini = srv_down)
{
	json_t *r = ADMIN("checkHealth", "{}");
	char *body;

	cr_expect_str_eq(code_of(r), "OK");
	cr_expect(json_is_true(jpath(r, "is_leader")) && json_is_true(jpath(r, "is_health")));
	json_decref(r);
	cr_assert_eq(hc_request(&srv.admin, "GET", "/api/healthy", NULL, 0, &body), 200);
	cr_expect_str_eq(body, "{\"status\":\"OK\"}");
	free(body);
	cr_assert(register_simple(&srv.meta, "default", "a", 100));
	cr_assert(write_keys(&srv.meta, "a", "[1,2]"));
	json_decref(CALL("getCacheLocation", "{\"instance_id\":\"a\",\"block_keys\":[1,2,3]}"));
	cr_assert_eq(hc_request(&srv.admin, "GET", "/metrics", NULL, 0, &body), 200);
	cr_expect(strstr(body, "mmc_kvcm_requests_total{api=\"getCacheLocation\",code=\"OK\"} 1"), "%s", body);
	cr_expect(strstr(body, "mmc_kvcm_request_duration_seconds_count{api=\"startWriteCache\"} 1"));
	cr_expect(strstr(body, "# TYPE mmc_kvcm_request_duration_seconds histogram"));
	cr_expect(strstr(body, "mmc_kvcm_block_keys 2"));
	cr_expect(strstr(body, "mmc_kvcm_stored_bytes{storage_type=\"ST_NFS\"} 200"));
	cr_expect(strstr(body, "mmc_kvcm_query_keys_total 3"));
	cr_expect(strstr(body, "mmc_kvcm_query_hit_keys_total 2"));
	/* the object store's own gauges share the page */
	cr_expect(strstr(body, "# TYPE mmc_objects gauge"), "%s", body);
	cr_expect(strstr(body, "\nmmc_lmdb_commit_failures_total 0\n"), "%s", body);
	cr_expect(strstr(body, "\nmmc_lmdb_commits_total "), "%s", body);
	cr_expect(strstr(body, "\nmmc_store_commit_failures_total{store=\"lmdb\"} 0\n"), "%s", body);
	cr_expect(strstr(body, "\nmmc_store_commits_total{store=\"lmdb\"} "), "%s", body);
	cr_expect(strstr(body, "mmc_pool_bytes{media=\"dram\"} "));
	free(body);
	/* GET is for those two only; the admin port has no MetaService write APIs */
	cr_expect_eq(hc_request(&srv.admin, "GET", "/api/listStorage", NULL, 0, &body), 404);
	free(body);
	cr_expect_eq(hc_request(&srv.admin, "POST", "/api/startWriteCache", "{}", 2, &body), 404);
	free(body);
}

Test(admin, remove_instance_then_its_group, .init = up_debug, .fini = srv_down)
{
	bool removed = false;

	srv_clock_freeze();
	EXPECT_CODE(ADMIN("createInstanceGroup",
	                  "{\"instance_group\":{\"name\":\"rg\",\"storage_candidates\":[\"nfs_01\"],"
	                  "\"event_report_storage_candidates\":[\"event_report_l2_default\"],"
	                  "\"cache_config\":{\"reclaim_strategy\":{\"delay_before_delete_ms\":300}}}}"),
	            "OK");
	cr_assert(register_simple(&srv.meta, "rg", "x", 100));
	cr_assert(write_keys(&srv.meta, "x", "[1,2,3]"));
	EXPECT_CODE(
	    CALL("reportEvent",
	         "{\"instance_id\":\"x\",\"host_ip_port\":\"h:1\",\"storage_type\":"
	         "\"ST_EVENT_REPORT_L2\",\"events\":[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{"
	         "\"block_key\":\"9\",\"medium\":\"gpu\",\"specs\":[{\"name\":\"tp0\",\"uri\":\"x://h/9\"}]}}]}"),
	    "OK");
	EXPECT_CODE(ADMIN("removeInstance", "{\"instance_id\":\"x\"}"), "OK");
	/* refused while the removed instance's deletes wait (delay_before_delete_ms 300), then accepted */
	srv_clock_advance(299);
	EXPECT_CODE(ADMIN("removeInstanceGroup", "{\"name\":\"rg\"}"), "INVALID_ARGUMENT");
	srv_clock_advance(1);
	for (int i = 0; i < POLL_CAP && !removed; i++) {
		json_t *r = ADMIN("removeInstanceGroup", "{\"name\":\"rg\"}");

		removed = strcmp(code_of(r), "OK") == 0;
		json_decref(r);
		if (!removed)
			poll_pause();
	}
	cr_expect(removed, "the group can be removed once its removed instance is gone");
	cr_assert(register_simple(&srv.meta, "default", "x", 100));
	cr_expect(write_keys(&srv.meta, "x", "[1]"));
}

Test(admin, debug_clock_freezes_and_advances, .init = up_debug, .fini = srv_down)
{
	uint64_t t0;
	char *body = NULL;

	EXPECT_CODE(ADMIN("debugClock", "{\"advance_ms\":5}"), "INVALID_ARGUMENT"); /* a running clock */
	t0 = srv_clock_freeze();
	cr_expect_eq(srv_clock_freeze(), t0, "frozen: no time passes");
	cr_expect_eq(srv_clock_advance(250), t0 + 250);
	cr_expect_eq(srv_clock_advance(0), t0 + 250);
	EXPECT_CODE(ADMIN("debugClock", "{\"advance_ms\":-1}"), "INVALID_ARGUMENT");
	cr_expect_eq(hc_request(&srv.admin, "POST", "/api/debugClock", "{\"advance_ms\":\"x\"}", 18, &body), 400);
	free(body);
}

Test(admin, debug_clock_needs_the_debug_service, .init = up, .fini = srv_down)
{
	char *body = NULL;

	cr_expect_eq(hc_request(&srv.admin, "POST", "/api/debugClock", "{\"freeze\":true}", 15, &body), 404);
	free(body);
}

/* Without leader election the one server is the only candidate, as on the reference's in-memory coordination: a
 * leaderDemote keeps it from leading for the campaign delay, after which it leads again, its state intact. */
Test(admin, leader_demote_without_election, .init = up_debug, .fini = srv_down)
{
	const char *get = "{\"instance_id\":\"a\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[1]}";
	json_t *r;

	srv_clock_freeze();
	cr_assert(register_simple(&srv.meta, "default", "a", 100));
	cr_assert(write_keys(&srv.meta, "a", "[1]"));
	EXPECT_CODE(ADMIN("updateLeaderElectorConfig", "{\"campaign_delay_time_ms\":100000}"), "OK");
	EXPECT_CODE(ADMIN("leaderDemote", "{}"), "OK");
	r = ADMIN("checkHealth", "{}");
	cr_expect(json_is_false(jpath(r, "is_leader")) && json_is_true(jpath(r, "is_health")));
	json_decref(r);
	EXPECT_CODE(CALL("getCacheLocation", "%s", get), "SERVER_NOT_LEADER");
	EXPECT_CODE(CALL("getClusterInfo", "{}"), "SERVICE_NOT_READY"); /* no leader for now */
	EXPECT_CODE(ADMIN("leaderDemote", "{}"), "SERVER_NOT_LEADER");
	srv_clock_advance(99999);
	EXPECT_CODE(CALL("getCacheLocation", "%s", get), "SERVER_NOT_LEADER");
	srv_clock_advance(1);
	r = ADMIN("checkHealth", "{}");
	cr_expect(json_is_true(jpath(r, "is_leader")), "leading again after the campaign delay");
	json_decref(r);
	r = CALL("getCacheLocation", "%s", get);
	cr_expect_str_eq(code_of(r), "OK");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 1, "the state is kept");
	json_decref(r);
	r = CALL("getClusterInfo", "{}");
	cr_expect_str_eq(json_string_value(jpath(r, "leader_node_id")), json_string_value(jpath(r, "self_node_id")));
	json_decref(r);
}

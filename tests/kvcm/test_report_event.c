/*
 * reportEvent (reference kvcm.md §6, the §6.13 matrix rows noted per test): reporters, deltas, snapshots,
 * liveness, tombstones, validation without side effects, and what queries see.
 */
#include "report_test.h"

static const char *const debug_on[] = {DEBUG_SERVICE, NULL};

static void up(void)
{
	report_up(debug_on);
}

TestSuite(report_event, .init = up, .fini = srv_down, .timeout = 30);

Test(report_event, empty_events_are_a_no_op) /* R-05 */
{
	json_t *r = report("h:1", L2, "[]");

	cr_assert_str_eq(code_of(r), "OK");
	cr_expect_eq(json_array_size(jpath(r, "item_results")), 0);
	cr_expect_str_eq(gen_of(r), "");
	cr_expect(json_is_false(jpath(r, "snapshot_required")));
	cr_expect_str_eq(json_string_value(jpath(r, "retry_after_ms")), "0");
	json_decref(r);
}

Test(report_event, fresh_reporter_and_generation) /* R-02, D-02, D-12, R-06 */
{
	json_t *r = report("10.0.0.8:8080", L2,
	                   "[" REGISTER "," ADD("123", "gpu", "tp0",
	                                        "event_report://10.0.0.8:9600/gpu/123?size=4096") "," HEARTBEAT "]");
	char u[1024], want[1024], gen[40];

	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	cr_expect_eq(strlen(gen_of(r)), 32);
	cr_expect(json_is_true(jpath(r, "snapshot_required")), "the request that creates the generation");
	cr_expect_str_eq(json_string_value(jpath(r, "extra_info")), "xi");
	snprintf(gen, sizeof(gen), "%s", gen_of(r));
	json_decref(r);
	uris(123, u, sizeof(u));
	snprintf(want, sizeof(want), "event_report://10.0.0.8:9600/gpu/123?size=4096&s_version=%s", gen);
	cr_expect_str_eq(u, want, "exactly one s_version appended, the rest unchanged");
	r = report("10.0.0.8:8080", L2, "[" ADD("124", "gpu", "tp0", "event_report://10.0.0.8:9600/gpu/124") "]");
	cr_expect_str_eq(gen_of(r), gen, "later deltas reuse the generation");
	cr_expect(json_is_false(jpath(r, "snapshot_required")));
	json_decref(r);
	uris(124, u, sizeof(u));
	snprintf(want, sizeof(want), "event_report://10.0.0.8:9600/gpu/124?s_version=%s", gen);
	cr_expect_str_eq(u, want);
}

Test(report_event, add_merges_delete_removes_last_wins) /* D-07, D-08, D-09, D-11 */
{
	char u[2048];

	EXPECT_CODE(report("h:1", L2, "[" ADD("5", "gpu", "a", "x://h:1/a1") "," ADD("5", "gpu", "b", "x://h:1/b") "]"),
	            "OK");
	uris(5, u, sizeof(u));
	cr_expect(strstr(u, "x://h:1/a1?") && strstr(u, "x://h:1/b?"), "both specs: %s", u);
	EXPECT_CODE(report("h:1", L2, "[" ADD("5", "gpu", "a", "x://h:1/a2") "]"), "OK");
	uris(5, u, sizeof(u));
	cr_expect(strstr(u, "x://h:1/a2?") && !strstr(u, "/a1?") && strstr(u, "x://h:1/b?"), "merge by name: %s", u);
	EXPECT_CODE(report("h:1", L2, "[" DEL("5", "gpu", "a") "," DEL("99", "gpu", "zz") "]"), "OK");
	uris(5, u, sizeof(u));
	cr_expect(!strstr(u, "/a2") && strstr(u, "x://h:1/b?"), "delete removes exactly that spec: %s", u);
	EXPECT_CODE(report("h:1", L2,
	                   "[" ADD("6", "gpu", "a", "x://h:1/v1") "," DEL("6", "gpu", "a") "," ADD("6", "gpu", "a",
	                                                                                           "x://h:1/v2") "]"),
	            "OK");
	uris(6, u, sizeof(u));
	cr_expect(strstr(u, "x://h:1/v2?") && !strstr(u, "/v1?"), "last operation wins: %s", u);
	EXPECT_CODE(
	    report("h:1", L2, "[" ADD("6", "gpu", "a", "x://h:1/v2") "," ADD("6", "gpu", "a", "x://h:1/v2") "]"), "OK");
	EXPECT_CODE(report("h:1", L2, "[" DEL("6", "gpu", "a") "]"), "OK");
	cr_expect(!visible(6), "set semantics: one delete removes the spec");
}

/* An ADD while the block's reported copy waits for its delete (a removeCache just before): one live copy, which one
 * DELETE removes. The old copy was found first by its name and kept, so each ADD appended another live copy, and a
 * DELETE took only the first of them. */
Test(report_event, an_add_while_the_old_copy_waits_for_its_delete_is_one_location)
{
	srv_clock_freeze();
	EXPECT_CODE(report("h:1", L1P5, "[" ADD("55", "gpu", "a", "x://h:1/v1") "]"), "OK");
	EXPECT_CODE(CALL("removeCache", "{\"instance_id\":\"e\",\"block_keys\":[55]}"), "OK");
	EXPECT_CODE(report("h:1", L1P5, "[" ADD("55", "gpu", "a", "x://h:1/v2") "]"), "OK");
	EXPECT_CODE(report("h:1", L1P5, "[" ADD("55", "gpu", "a", "x://h:1/v3") "]"), "OK");
	srv_clock_advance(1500); /* past delay_before_delete_ms, within the reporter's liveness */
	cr_assert(srv_deletes_done());
	cr_expect(visible(55), "the copy reported after the remove is served");
	EXPECT_CODE(report("h:1", L1P5, "[" DEL("55", "gpu", "a") "]"), "OK");
	cr_expect(!visible(55), "a DELETE left a copy served");
}

/* A location holds at most 256 specs, as many as a block record stores: an ADD past that is refused. It used to be
 * kept (up to 512), and the next load lost it with every location after it in its block's record. */
Test(report_event, a_location_takes_no_more_specs_than_its_record_holds)
{
	size_t cap = 300 * 160, at = 0;
	char *events = malloc(cap);
	json_t *r, *res;

	cr_assert_not_null(events);
	at += (size_t)snprintf(events + at, cap - at, "[");
	for (int i = 0; i < 257; i++)
		at += (size_t)snprintf(events + at, cap - at,
		                       "%s{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"77\","
		                       "\"medium\":\"gpu\",\"specs\":[{\"name\":\"s%d\",\"uri\":\"x://m/%d\"}]}}",
		                       i ? "," : "", i, i);
	snprintf(events + at, cap - at, "]");
	r = report("many:1", L2, events);
	res = jpath(r, "item_results");
	cr_assert_eq(json_array_size(res), 257, "%s", message_of(r));
	cr_expect_str_eq(json_string_value(json_array_get(res, 255)), "OK", "the 256th spec");
	cr_expect_str_eq(json_string_value(json_array_get(res, 256)), "INVALID_ARGUMENT", "the 257th");
	json_decref(r);
	free(events);
}

Test(report_event, item_validation_has_no_side_effects) /* V-01..V-05, D-04, D-05 */
{
	static const char *const bad[] = {
	    "{\"event_type\":\"EVENT_BLOCK_ADD\"}",
	    "{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_delete\":{\"block_key\":\"7\",\"medium\":\"gpu\",\"spec_"
	    "names\":[\"a\"]}}",
	    ADD("7", "gp#u", "a", "x://h/a"),
	    ADD("7", "", "a", "x://h/a"),
	    ADD("x7", "gpu", "a", "x://h/a"),
	    ADD("7", "gpu", "", "x://h/a"),
	    ADD("7", "gpu", "a", "x://h/a?s_version=0123456789abcdef0123456789abcdef"),
	    ADD("7", "gpu", "a", "not a uri"),
	    ADD("7", "gpu", "a", "x://h:port/a"),
	    "{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"7\",\"medium\":\"gpu\",\"specs\":[]}}",
	    "{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"7\",\"medium\":\"gpu\",\"specs\":[{"
	    "\"name\":\"a\","
	    "\"uri\":\"x://h/1\"},{\"name\":\"a\",\"uri\":\"x://h/2\"}]}}",
	    "{\"event_type\":\"EVENT_UNSPECIFIED\"}",
	    "{\"event_type\":\"EVENT_HEARTBEAT\"}",
	};
	json_t *r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = CALL("reportEvent",
		         "{\"instance_id\":\"e\",\"host_ip_port\":\"v:1\",\"storage_type\":\"%s\",\"events\":[%s]}", L2,
		         bad[i]);
		cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT", "case %zu", i);
		cr_expect_str_eq(json_string_value(json_array_get(jpath(r, "item_results"), 0)), "INVALID_ARGUMENT",
		                 "case %zu", i);
		cr_expect_str_eq(gen_of(r), "", "case %zu: an invalid-only delta creates no generation", i);
		cr_expect(json_is_true(jpath(r, "snapshot_required")), "case %zu", i);
		json_decref(r);
	}
	cr_expect(!visible(7));
	/* partial failure: the valid item stays, results keep the order */
	r = report("v:1", L2, "[" ADD("8", "gpu", "a", "x://h/8") "," ADD("9", "g#", "a", "x://h/9") "]");
	cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT", "the header carries the first failing item's code");
	cr_expect_str_eq(json_string_value(json_array_get(jpath(r, "item_results"), 0)), "OK");
	cr_expect_str_eq(json_string_value(json_array_get(jpath(r, "item_results"), 1)), "INVALID_ARGUMENT");
	json_decref(r);
	cr_expect(visible(8));
}

Test(report_event, request_shape_and_common_fields) /* V-06, V-07, shape rows of §6.6 */
{
	EXPECT_CODE(report("s:1", L2, "[" SNAP("[]") "," ADD("1", "gpu", "a", "x://h/a") "]"), "INVALID_ARGUMENT");
	EXPECT_CODE(report("s:1", L2, "[" SNAP("[]") "," SNAP("[]") "]"), "INVALID_ARGUMENT");
	EXPECT_CODE(report("s:1", L2, "[" HOST_DOWN "," REGISTER "]"), "INVALID_ARGUMENT");
	cr_expect(!visible(1));
	EXPECT_CODE(report("s#1", L2, "[" REGISTER "]"), "INVALID_ARGUMENT");
	EXPECT_CODE(report("", L2, "[" REGISTER "]"), "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("reportEvent", "{\"instance_id\":\"e\",\"host_ip_port\":\"s:1\",\"events\":[" REGISTER "]}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(report("s:1", "ST_NFS", "[" REGISTER "]"), "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("reportEvent",
	                 "{\"instance_id\":\"nobody\",\"host_ip_port\":\"s:1\",\"storage_type\":\"%s\","
	                 "\"events\":[" REGISTER "]}",
	                 L2),
	            "INSTANCE_NOT_EXIST");
	/* the default group lists both default event-report storages; group "other" (from default) too, but a group
	 * without the L2 one answers INSTANCE_NOT_EXIST */
	EXPECT_CODE(ADMIN("createInstanceGroup",
	                  "{\"instance_group\":{\"name\":\"nol2\",\"storage_candidates\":[\"nfs_01\"]}}"),
	            "OK");
	cr_assert(register_simple(&srv.meta, "nol2", "n", 64));
	EXPECT_CODE(CALL("reportEvent",
	                 "{\"instance_id\":\"n\",\"host_ip_port\":\"s:1\",\"storage_type\":\"%s\",\"events\":[" REGISTER
	                 "]}",
	                 L2),
	            "INSTANCE_NOT_EXIST");
}

Test(report_event, snapshots) /* S-01, S-02, S-05, S-08, Q-01, Q-09 */
{
	json_t *r;
	char gen[40], u[1024];

	srv_clock_freeze();
	EXPECT_CODE(report("p:1", L2, "[" ADD("1", "gpu", "a", "x://p/1") "," ADD("2", "gpu", "a", "x://p/2") "]"),
	            "OK");
	r = report(
	    "p:1", L2,
	    "[" SNAP("[" SBLOCK("1", "gpu", "a", "x://p/1new") "," SBLOCK("1", "cpu", "a", "x://p/1cpu") "]") "]");
	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	cr_expect(json_is_false(jpath(r, "snapshot_required")));
	snprintf(gen, sizeof(gen), "%s", gen_of(r));
	cr_expect_eq(strlen(gen), 32);
	json_decref(r);
	uris(1, u, sizeof(u));
	cr_expect(strstr(u, "x://p/1new?s_version=") && strstr(u, "x://p/1cpu?s_version="), "both mediums, one row: %s",
	          u);
	cr_expect(!visible(2), "an omitted block is hidden at once by the strict fence");
	/* the same block+medium twice is invalid, and changes nothing */
	r = report("p:1", L2,
	           "[" SNAP("[" SBLOCK("3", "gpu", "a", "x://p/3") "," SBLOCK("3", "gpu", "b", "x://p/3b") "]") "]");
	cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT");
	cr_expect_str_eq(gen_of(r), gen);
	json_decref(r);
	/* the rate limit counts from the last successful snapshot */
	r = report("p:1", L2, "[" SNAP("[]") "]");
	cr_expect_str_eq(code_of(r), "SNAPSHOT_RATE_LIMITED");
	cr_expect_neq(atoll(json_string_value(jpath(r, "retry_after_ms"))), 0);
	json_decref(r);
	srv_clock_advance(499);
	EXPECT_CODE(report("p:1", L2, "[" SNAP("[]") "]"), "SNAPSHOT_RATE_LIMITED");
	srv_clock_advance(1); /* snapshot_min_interval_ms (500) since the last snapshot */
	r = report("p:1", L2, "[" SNAP("[]") "]");
	cr_expect_str_eq(code_of(r), "OK", "an empty snapshot clears the reporter");
	cr_expect_str_neq(gen_of(r), gen);
	json_decref(r);
	cr_expect(!visible(1));
	r = CALL("getCacheMeta", "{\"instance_id\":\"e\",\"block_keys\":[1,2]}");
	cr_expect_str_eq(json_string_value(json_array_get(jpath(r, "metas"), 0)), "{\"status\":\"CLS_NOT_FOUND\"}",
	                 "cleanup removed the metadata");
	json_decref(r);
}

Test(report_event, host_down_and_tombstone) /* D-01, L-03 */
{
	json_t *r;

	EXPECT_CODE(report("d:1", L2, "[" ADD("1", "gpu", "a", "x://d/1") "]"), "OK");
	cr_assert(visible(1));
	r = report("d:1", L2, "[" HOST_DOWN "]");
	cr_expect_str_eq(code_of(r), "OK");
	cr_expect(json_is_true(jpath(r, "snapshot_required")));
	cr_expect_str_eq(gen_of(r), "");
	json_decref(r);
	cr_expect(!visible(1), "hidden at once");
	EXPECT_CODE(report("d:1", L2, "[" HEARTBEAT "]"), "NODE_NOT_REGISTERED");
	r = report("d:1", L2, "[" ADD("2", "gpu", "a", "x://d/2") "," REGISTER "]");
	cr_expect_str_eq(json_string_value(json_array_get(jpath(r, "item_results"), 0)), "NODE_NOT_REGISTERED");
	cr_expect_str_eq(json_string_value(json_array_get(jpath(r, "item_results"), 1)), "OK");
	json_decref(r);
	EXPECT_CODE(report("d:1", L2, "[" ADD("2", "gpu", "a", "x://d/2") "]"), "OK");
	cr_expect(visible(2));
	EXPECT_CODE(report("d:1", L2, "[" HOST_DOWN "]"), "OK");
	EXPECT_CODE(report("d:1", L2, "[" HOST_DOWN "]"), "OK");
}

Test(report_event, liveness) /* L-01, L-02, L-06, Q-08 */
{
	json_t *r;
	char gen[40];

	srv_clock_freeze();
	r = report("l:1", L2, "[" REGISTER "," ADD("1", "gpu", "a", "x://l/1") "]");
	snprintf(gen, sizeof(gen), "%s", gen_of(r));
	json_decref(r);
	cr_assert(visible(1));
	srv_clock_advance(400);
	cr_expect(visible(1), "silent for heartbeat_timeout_ms (400): not yet timed out");
	srv_clock_advance(1);
	cr_expect(!visible(1), "a silent reporter is hidden");
	EXPECT_CODE(report("l:1", L2, "[" ADD("2", "gpu", "a", "x://l/2") "]"), "OK");
	cr_expect(!visible(2), "data mutations do not refresh liveness");
	r = report("l:1", L2, "[" HEARTBEAT "]");
	cr_expect_str_eq(gen_of(r), gen, "revived within grace: same generation");
	cr_expect(json_is_false(jpath(r, "snapshot_required")));
	json_decref(r);
	cr_expect(visible(1) && visible(2));
	srv_clock_advance(1000); /* timeout + grace (400 + 600): hidden, not yet unregistered */
	EXPECT_CODE(report("l:1", L2, "[" HEARTBEAT "]"), "OK");
	srv_clock_advance(1001); /* past timeout + grace: unregistered */
	EXPECT_CODE(report("l:1", L2, "[" HEARTBEAT "]"), "NODE_NOT_REGISTERED");
}

/* An event-report storage removed while a reporter still names it (a group stopped listing it): the reporter's
 * liveness goes on under the default parameters. Every sweep used to read the freed storage (ASan: a
 * heap-use-after-free, and the server aborts). */
Test(report_event, a_storage_removed_under_its_reporter_is_not_read_again)
{
	EXPECT_CODE(report("gone:1", L2, "[" REGISTER "," HEARTBEAT "]"), "OK");
	EXPECT_CODE(
	    ADMIN("updateInstanceGroup",
	          "{\"current_version\":0,\"instance_group\":{\"name\":\"eg\",\"storage_candidates\":[\"nfs_01\"],"
	          "\"extra_info\":\"xi\",\"event_report_storage_candidates\":[\"event_report_l1p5_default\"],"
	          "\"version\":1}}"),
	    "OK");
	EXPECT_CODE(ADMIN("removeStorage", "{\"storage_unique_name\":\"er_fast\"}"), "OK");
	srv_clock_freeze();
	for (int i = 0; i < 5; i++)
		srv_clock_advance(500); /* liveness sweeps over the reporter */
	EXPECT_CODE(ADMIN("checkHealth", "{}"), "OK");
}

Test(report_event, reporters_are_independent) /* I-01, I-02 */
{
	EXPECT_CODE(report("i:1", L2, "[" ADD("1", "gpu", "a", "x://i/l2") "]"), "OK");
	EXPECT_CODE(report("i:1", "ST_EVENT_REPORT_L1P5", "[" ADD("1", "gpu", "b", "x://i/l1") "]"), "OK");
	EXPECT_CODE(report("j:1", L2, "[" ADD("1", "gpu", "c", "x://j/l2") "]"), "OK");
	EXPECT_CODE(report("i:1", L2, "[" HOST_DOWN "]"), "OK");
	{
		char u[2048];

		uris(1, u, sizeof(u));
		cr_expect(!strstr(u, "x://i/l2") && strstr(u, "x://i/l1") && strstr(u, "x://j/l2"), "%s", u);
	}
}

Test(report_event, restart_hides_until_the_first_event) /* P-01, P-02, P-03 */
{
	json_t *r;

	EXPECT_CODE(report("r:1", L2, "[" ADD("1", "gpu", "a", "x://r/1") "," ADD("2", "gpu", "a", "x://r/2") "]"),
	            "OK");
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_assert_eq(kvcm_srv_restart(&srv, NULL), 0);
	cr_expect(!visible(1), "no reporter in this process yet");
	r = report("r:1", L2, "[" HEARTBEAT "]");
	cr_expect_str_eq(code_of(r), "OK");
	cr_expect(json_is_true(jpath(r, "snapshot_required")));
	cr_expect_str_eq(gen_of(r), "");
	json_decref(r);
	cr_expect(visible(1) && visible(2), "soft mode: historical metadata is a candidate again");
	r = report("r:1", L2, "[" DEL("2", "gpu", "a") "]");
	cr_expect(json_is_true(jpath(r, "snapshot_required")), "the delta that creates the generation");
	cr_expect_eq(strlen(gen_of(r)), 32);
	json_decref(r);
	cr_expect(visible(1) && !visible(2), "a delta touches only what it names");
}

/* A request's records are written once per block after its last event: what a restart loads is its end state. */
Test(report_event, a_restart_loads_the_state_each_request_left)
{
	char u[2048];

	EXPECT_CODE(
	    report("z:1", L2,
	           "[" ADD("9", "gpu", "a", "x://z/9a") "," ADD("9", "gpu", "b", "x://z/9b") "," ADD(
	               "4", "gpu", "a",
	               "x://z/4") "," DEL("4", "gpu",
	                                  "a") "," ADD("6", "gpu", "a",
	                                               "x://z/6v1") "," DEL("6", "gpu",
	                                                                    "a") "," ADD("6", "gpu", "a",
	                                                                                 "x://z/6v2") "," ADD("2",
	                                                                                                      "gpu",
	                                                                                                      "a",
	                                                                                                      "x://z/"
	                                                                                                      "2") "]"),
	    "OK");
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_assert_eq(kvcm_srv_restart(&srv, NULL), 0);
	EXPECT_CODE(report("z:1", L2, "[" HEARTBEAT "]"), "OK");
	uris(9, u, sizeof(u));
	cr_expect(strstr(u, "x://z/9a?s_version=") && strstr(u, "x://z/9b?s_version="), "%s", u);
	cr_expect(!visible(4));
	uris(6, u, sizeof(u));
	cr_expect(strstr(u, "x://z/6v2?s_version=") && !strstr(u, "6v1"), "%s", u);
	cr_expect(visible(2));
}

Test(report_event, writers_count_visible_replicas)
{
	json_t *r;

	EXPECT_CODE(report("w:1", L2, "[" ADD("50", "gpu", "tp0", "x://w/50") "]"), "OK");
	r = CALL("startWriteCache", "{\"instance_id\":\"e\",\"block_keys\":[50,51],\"write_timeout_seconds\":5}");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 1, "block 50 has a visible event-report replica");
	json_decref(r);
	r = CALL("startWriteCache",
	         "{\"instance_id\":\"e\",\"block_keys\":[50],\"min_replica_count\":2,\"write_timeout_seconds\":5}");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 1, "min_replica_count 2 wants a second one");
	json_decref(r);
}

Test(report_event, register_is_idempotent_and_snapshot_specs_unique) /* R-01, S-03, CFG-01 */
{
	json_t *r;

	EXPECT_CODE(report("g:1", L2, "[" REGISTER "," REGISTER "]"), "OK");
	r = report("g:1", L2, "[" REGISTER "]");
	cr_expect_str_eq(gen_of(r), "");
	cr_expect(json_is_true(jpath(r, "snapshot_required")));
	json_decref(r);
	r = report("g:1", L2,
	           "[" SNAP("[{\"block_key\":\"1\",\"medium\":\"gpu\",\"specs\":[{\"name\":\"a\",\"uri\":\"x://g/1\"},"
	                    "{\"name\":\"a\",\"uri\":\"x://g/2\"}]}]") "]");
	cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT");
	cr_expect_str_eq(gen_of(r), "", "a rejected snapshot has no side effect");
	json_decref(r);
	cr_expect(!visible(1));
	EXPECT_CODE(ADMIN("addStorage", "{\"storage\":{\"global_unique_name\":\"neg\",\"storage_type\":"
	                                "\"ST_EVENT_REPORT_L2\",\"event_report\":{\"heartbeat_timeout_ms\":-1}}}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(ADMIN("addStorage", "{\"storage\":{\"global_unique_name\":\"nt\",\"event_report\":{}}}"),
	            "INVALID_ARGUMENT");
}

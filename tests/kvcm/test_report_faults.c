/*
 * The debug service (reference kvcm.md §4.17) and, through its ReportEventMetaWrite fault point (an mmc
 * extension), reportEvent's answer to failed metadata writes: the §6.13 rows D-13, D-14 and S-09.
 */
#include "report_test.h"

#include <unistd.h>

static const char *const debug_on[] = {"kvcm.service.enable_debug_service=true", NULL};

static void up(void)
{
	report_up(debug_on);
}

TestSuite(faults, .init = up, .fini = srv_down, .timeout = 30);

static void inject(const char *api, const char *strategy, int at_call, int at_write)
{
	EXPECT_CODE(ADMIN("injectFault",
	                  "{\"api_name\":\"%s\",\"fault_type\":\"FT_INTERNAL_ERROR\",\"fault_trigger_strategy\":\"%s\","
	                  "\"trigger_at_call\":%d,\"trigger_at_write\":%d}",
	                  api, strategy, at_call, at_write),
	            "OK");
}

/* The code of api's reply to body, with its message checked when it is a fault's. */
static void expect_fault(json_t *r, const char *api)
{
	char want[128];

	cr_assert(r, "%s: no JSON reply", api);
	cr_expect_str_eq(code_of(r), "INTERNAL_ERROR", "%s: %s", api, message_of(r));
	snprintf(want, sizeof(want), "%s fail due to fault injection", api);
	cr_expect_str_eq(message_of(r), want);
	json_decref(r);
}

#define WRITE_BODY "{\"trace_id\":\"%s\",\"instance_id\":\"e\",\"block_keys\":[77],\"write_timeout_seconds\":5}"
#define QUERY_BODY "{\"trace_id\":\"%s\",\"instance_id\":\"e\",\"query_type\":1,\"block_keys\":[77]}"

Test(faults, always_faults_every_call_until_removed)
{
	inject("RegisterInstance", "ALWAYS", -1, 0);
	inject("GetCacheLocation", "ALWAYS", -1, 0);
	inject("getCacheLocationLen", "ALWAYS", -1, 0);
	inject("StartWriteCache", "ALWAYS", -1, 0);
	inject("FinishWriteCache", "ALWAYS", -1, 0);
	expect_fault(CALL("registerInstance", "{\"instance_group\":\"eg\",\"instance_id\":\"x\",\"block_size\":8,"
	                                      "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":64}]}"),
	             "RegisterInstance");
	expect_fault(CALL("getCacheLocation", QUERY_BODY, "q"), "GetCacheLocation");
	expect_fault(CALL("getCacheLocationLen", QUERY_BODY, "q"), "GetCacheLocationLen");
	expect_fault(CALL("startWriteCache", WRITE_BODY, "w"), "StartWriteCache");
	expect_fault(CALL("finishWriteCache",
	                  "{\"instance_id\":\"e\",\"write_session_id\":\"s\",\"success_blocks\":{\"bool_masks\":"
	                  "{\"values\":[true]}}}"),
	             "FinishWriteCache");
	EXPECT_CODE(CALL("getCacheMeta", "{\"instance_id\":\"e\",\"block_keys\":[77]}"), "OK");
	EXPECT_CODE(ADMIN("removeFault", "{\"api_name\":\"StartWriteCache\"}"), "OK");
	cr_expect(write_keys(&srv.meta, "e", "[77]") == false, "finishWriteCache is still faulted");
	EXPECT_CODE(ADMIN("removeFault", "{\"api_name\":\"GetCacheLocation\"}"), "OK");
	EXPECT_CODE(CALL("getCacheLocation", QUERY_BODY, "q"), "OK");
	expect_fault(CALL("getCacheLocationLen", QUERY_BODY, "q"), "GetCacheLocationLen");
	EXPECT_CODE(ADMIN("clearFaults", "{}"), "OK");
	EXPECT_CODE(CALL("getCacheLocationLen", QUERY_BODY, "q"), "OK");
	cr_expect(write_keys(&srv.meta, "e", "[78]"));
	cr_expect(register_simple(&srv.meta, "eg", "x", 64));
}

Test(faults, once_fires_on_the_trace_id_suffix)
{
	inject("GetCacheLocation", "ONCE", 3, 0);
	EXPECT_CODE(CALL("getCacheLocation", QUERY_BODY, "req_2"), "OK");
	expect_fault(CALL("getCacheLocation", QUERY_BODY, "a_b_3"), "GetCacheLocation");
	EXPECT_CODE(CALL("getCacheLocation", QUERY_BODY, "req3"), "OK");
	EXPECT_CODE(CALL("getCacheLocation", QUERY_BODY, "3_x"), "OK");
	EXPECT_CODE(CALL("getCacheLocation", QUERY_BODY, "req_3x"), "OK");
	EXPECT_CODE(CALL("getCacheLocation", QUERY_BODY, "req_4"), "OK");
}

Test(faults, bad_injections_are_invalid)
{
	/* unknown names are the enum's 0 (test_differences.c); numbers outside the enums are refused */
	EXPECT_CODE(ADMIN("injectFault", "{\"api_name\":\"GetCacheLocation\",\"fault_type\":5,"
	                                 "\"fault_trigger_strategy\":\"ALWAYS\"}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(ADMIN("injectFault", "{\"api_name\":\"GetCacheLocation\",\"fault_type\":\"FT_INTERNAL_ERROR\","
	                                 "\"fault_trigger_strategy\":7}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(
	    ADMIN("injectFault", "{\"fault_type\":\"FT_INTERNAL_ERROR\",\"fault_trigger_strategy\":\"ALWAYS\"}"),
	    "INVALID_ARGUMENT");
	EXPECT_CODE(ADMIN("injectFault", "{\"api_name\":\"ReportEventMetaWrite\",\"fault_type\":\"FT_INTERNAL_ERROR\","
	                                 "\"fault_trigger_strategy\":\"ALWAYS\",\"trigger_at_write\":-1}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("getCacheLocation", QUERY_BODY, "q"), "OK");
	/* at most 64 faults; replacing one is fine when full */
	for (int i = 0; i < 64; i++) {
		char name[32];

		snprintf(name, sizeof(name), "Api%d", i);
		inject(name, "ALWAYS", -1, 0);
	}
	EXPECT_CODE(ADMIN("injectFault", "{\"api_name\":\"GetCacheLocation\",\"fault_type\":\"FT_INTERNAL_ERROR\","
	                                 "\"fault_trigger_strategy\":\"ALWAYS\"}"),
	            "INVALID_ARGUMENT");
	inject("Api7", "ONCE", 1, 0);
	EXPECT_CODE(ADMIN("removeFault", "{\"api_name\":\"Api3\"}"), "OK");
	inject("GetCacheLocation", "ALWAYS", -1, 0);
	expect_fault(CALL("getCacheLocation", QUERY_BODY, "q"), "GetCacheLocation");
}

Test(faults, the_service_is_absent_unless_enabled)
{
	char *out = NULL;

	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_assert_eq(kvcm_srv_restart(&srv, NULL), 0);
	cr_expect_eq(hc_request(&srv.admin, "POST", "/api/injectFault", "{}", 2, &out), 404);
	free(out);
	out = NULL;
	cr_expect_eq(hc_request(&srv.admin, "POST", "/api/clearFaults", "{}", 2, &out), 404);
	free(out);
	out = NULL;
	cr_expect_eq(hc_request(&srv.admin, "POST", "/api/removeFault", "{}", 2, &out), 404);
	free(out);
	EXPECT_CODE(CALL("getCacheLocation", QUERY_BODY, "q"), "OK");
}

/* D-13: the failed write is answered per item, the generation (which exists) is kept, and it is not durable. */
Test(faults, a_failed_delta_write_is_reported)
{
	json_t *r = report("m:1", L2, "[" ADD("1", "gpu", "a", "x://m/1") "]");
	char gen[40];

	snprintf(gen, sizeof(gen), "%s", gen_of(r));
	json_decref(r);
	inject("ReportEventMetaWrite", "ALWAYS", -1, 0);
	r = report("m:1", L2, "[" ADD("2", "gpu", "a", "x://m/2") "]");
	cr_expect_str_eq(code_of(r), "INTERNAL_ERROR");
	cr_expect_str_eq(item_of(r, 0), "INTERNAL_ERROR");
	cr_expect_str_eq(gen_of(r), gen, "the generation existed and is kept");
	cr_expect(json_is_false(jpath(r, "snapshot_required")));
	json_decref(r);
	/* a first delta whose write fails still creates the generation (§6.3) */
	r = report("n:1", L2, "[" ADD("3", "gpu", "a", "x://n/3") "]");
	cr_expect_str_eq(code_of(r), "INTERNAL_ERROR");
	cr_expect_eq(strlen(gen_of(r)), 32);
	cr_expect(json_is_true(jpath(r, "snapshot_required")));
	snprintf(gen, sizeof(gen), "%s", gen_of(r));
	json_decref(r);
	EXPECT_CODE(ADMIN("clearFaults", "{}"), "OK");
	r = report("n:1", L2, "[" ADD("4", "gpu", "a", "x://n/4") "]");
	cr_expect_str_eq(code_of(r), "OK");
	cr_expect_str_eq(gen_of(r), gen);
	cr_expect(json_is_false(jpath(r, "snapshot_required")));
	json_decref(r);
	/* what failed was not written: a restart loads the rest */
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_assert_eq(kvcm_srv_restart(&srv, debug_on), 0);
	EXPECT_CODE(report("m:1", L2, "[" HEARTBEAT "]"), "OK");
	EXPECT_CODE(report("n:1", L2, "[" HEARTBEAT "]"), "OK");
	cr_expect(visible(1) && visible(4));
	cr_expect(!visible(2) && !visible(3), "the failed writes did not reach the metadata store");
}

/* D-14: events folded into one block's record share its write's result; the header is the first failing item. */
Test(faults, folded_events_share_the_write_result)
{
	json_t *r;

	EXPECT_CODE(report("f:1", L2, "[" ADD("10", "gpu", "a", "x://f/10") "]"), "OK");
	inject("ReportEventMetaWrite", "ONCE", 5, 2); /* the 2nd record (in key order) of the call traced *_5 */
	r = report_on(&srv.meta, "r_4", "f:1", L2, "[" ADD("11", "gpu", "a", "x://f/11") "]");
	cr_expect_str_eq(code_of(r), "OK", "not the triggering call");
	json_decref(r);
	r = report_on(
	    &srv.meta, "r_5", "f:1", L2,
	    "[" ADD("10", "gpu", "b", "x://f/10b") "," ADD("20", "gpu", "a", "x://f/20") "," ADD(
	        "30", "gpu", "a", "x://f/30") "," ADD("20", "gpu", "b", "x://f/20b") "," DEL("20", "gpu", "a") "]");
	cr_expect_str_eq(code_of(r), "INTERNAL_ERROR", "%s", message_of(r));
	cr_expect_str_eq(item_of(r, 0), "OK");
	cr_expect_str_eq(item_of(r, 1), "INTERNAL_ERROR");
	cr_expect_str_eq(item_of(r, 2), "OK");
	cr_expect_str_eq(item_of(r, 3), "INTERNAL_ERROR");
	cr_expect_str_eq(item_of(r, 4), "INTERNAL_ERROR");
	cr_expect_eq(json_array_size(jpath(r, "item_results")), 5);
	json_decref(r);
	/* the header is the first failing item's code, even when a later item failed its write */
	inject("ReportEventMetaWrite", "ALWAYS", -1, 0);
	r = report("f:1", L2, "[" ADD("40", "g#", "a", "x://f/40") "," ADD("50", "gpu", "a", "x://f/50") "]");
	cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT");
	cr_expect_str_eq(item_of(r, 0), "INVALID_ARGUMENT");
	cr_expect_str_eq(item_of(r, 1), "INTERNAL_ERROR");
	json_decref(r);
	/* a retry of the failed items converges */
	EXPECT_CODE(ADMIN("removeFault", "{\"api_name\":\"ReportEventMetaWrite\"}"), "OK");
	EXPECT_CODE(report("f:1", L2, "[" ADD("20", "gpu", "b", "x://f/20b") "," DEL("20", "gpu", "a") "]"), "OK");
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_assert_eq(kvcm_srv_restart(&srv, debug_on), 0);
	EXPECT_CODE(report("f:1", L2, "[" HEARTBEAT "]"), "OK");
	{
		char u[2048];

		uris(20, u, sizeof(u));
		cr_expect(strstr(u, "x://f/20b?") && !strstr(u, "x://f/20?"), "%s", u);
		uris(10, u, sizeof(u));
		cr_expect(strstr(u, "x://f/10b?") && strstr(u, "x://f/10?"), "%s", u);
	}
	cr_expect(visible(30) && visible(11) && !visible(50));
}

/* S-09: a snapshot whose metadata write fails is not committed; the data stays readable; a full retry converges. */
Test(faults, a_failed_snapshot_keeps_data_readable)
{
	json_t *r;
	char gen[40];

	srv_clock_freeze();
	r = report("s:1", L2,
	           "[" SNAP("[" SBLOCK("1", "gpu", "a", "x://s/1") "," SBLOCK("3", "gpu", "a", "x://s/3") "]") "]");
	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	snprintf(gen, sizeof(gen), "%s", gen_of(r));
	json_decref(r);
	srv_clock_advance(550); /* past snapshot_min_interval_ms (500), and heartbeat_timeout_ms (400) */
	EXPECT_CODE(report("s:1", L2, "[" HEARTBEAT "]"), "OK");
	inject("ReportEventMetaWrite", "ONCE", 7, 2);
	r = report_on(&srv.meta, "snap_7", "s:1", L2,
	              "[" SNAP("[" SBLOCK("1", "gpu", "a", "x://s/1n") "," SBLOCK(
	                  "4", "gpu", "a", "x://s/4n") "," SBLOCK("5", "gpu", "a", "x://s/5n") "]") "]");
	cr_expect_str_eq(code_of(r), "INTERNAL_ERROR");
	cr_expect_str_eq(gen_of(r), gen, "the committed generation is unchanged");
	cr_expect(json_is_false(jpath(r, "snapshot_required")));
	json_decref(r);
	/* soft now: the block the snapshot omitted (still of the committed generation) and what it wrote are both
	 * candidates */
	cr_expect(visible(3), "old data stays readable");
	cr_expect(visible(1) && visible(5), "the written part is readable");
	/* no cooldown started: the full retry is accepted at once and fences the result */
	r = report_on(&srv.meta, "snap_8", "s:1", L2,
	              "[" SNAP("[" SBLOCK("1", "gpu", "a", "x://s/1n") "," SBLOCK(
	                  "4", "gpu", "a", "x://s/4n") "," SBLOCK("5", "gpu", "a", "x://s/5n") "]") "]");
	cr_expect_str_eq(code_of(r), "OK", "%s", message_of(r));
	cr_expect_str_neq(gen_of(r), gen);
	json_decref(r);
	cr_expect(visible(1) && visible(4) && visible(5));
	cr_expect(!visible(3), "strict again: the omitted block is hidden");
	EXPECT_CODE(report("s:1", L2, "[" SNAP("[]") "]"), "SNAPSHOT_RATE_LIMITED");
}

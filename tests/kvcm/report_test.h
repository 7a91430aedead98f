/*
 * What the reportEvent test files share: one instance "e" in group "eg" with a fast L2 event-report storage
 * (short heartbeat timeout, grace and snapshot interval) and the default L1P5 one, event builders, and readers
 * of what queries see.
 */
#ifndef MMC_TEST_KVCM_REPORT_TEST_H
#define MMC_TEST_KVCM_REPORT_TEST_H

#include <stdio.h>

#include "kvcm_test.h"

#define FAST_L2                                                                                                        \
	"{\"storage\":{\"global_unique_name\":\"er_fast\",\"storage_type\":\"ST_EVENT_REPORT_L2\",\"event_report\":{"  \
	"\"heartbeat_timeout_ms\":400,\"cleanup_grace_ms\":600,\"liveness_check_interval_ms\":100,"                    \
	"\"snapshot_min_interval_ms\":500}}}"

/* Starts srv with extra --env entries and registers instance "e" in group "eg" (extra_info "xi"). */
static inline void report_up(const char *const *extra)
{
	srv_up(extra);
	EXPECT_CODE(ADMIN("addStorage", FAST_L2), "OK");
	EXPECT_CODE(ADMIN("createInstanceGroup",
	                  "{\"instance_group\":{\"name\":\"eg\",\"storage_candidates\":[\"nfs_01\"],"
	                  "\"extra_info\":\"xi\",\"event_report_storage_candidates\":[\"er_fast\","
	                  "\"event_report_l1p5_default\"]}}"),
	            "OK");
	cr_assert(register_simple(&srv.meta, "eg", "e", 4096));
}

/* POST reportEvent with trace_id trace for host with events (a JSON array text) on type, on connection c. */
static inline json_t *report_on(struct hc *c, const char *trace, const char *host, const char *type, const char *events)
{
	return hc_call(c, "reportEvent",
	               "{\"trace_id\":\"%s\",\"instance_id\":\"e\",\"host_ip_port\":\"%s\",\"storage_type\":\"%s\","
	               "\"events\":%s}",
	               trace, host, type, events);
}

static inline json_t *report(const char *host, const char *type, const char *events)
{
	return report_on(&srv.meta, "t", host, type, events);
}

#define L2   "ST_EVENT_REPORT_L2"
#define L1P5 "ST_EVENT_REPORT_L1P5"
#define ADD(key, medium, name, uri)                                                                                    \
	"{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"" key "\",\"medium\":\"" medium            \
	"\",\"specs\":[{\"name\":\"" name "\",\"uri\":\"" uri "\"}]}}"
#define DEL(key, medium, name)                                                                                         \
	"{\"event_type\":\"EVENT_BLOCK_DELETE\",\"block_delete\":{\"block_key\":\"" key "\",\"medium\":\"" medium      \
	"\",\"spec_names\":[\"" name "\"]}}"
#define REGISTER     "{\"event_type\":\"EVENT_NODE_REGISTER\",\"node_register\":{\"mediums\":[\"gpu\"]}}"
#define HEARTBEAT    "{\"event_type\":\"EVENT_HEARTBEAT\",\"heartbeat\":{\"system_status\":{\"a\":\"b\"}}}"
#define HOST_DOWN    "{\"event_type\":\"EVENT_HOST_DOWN\",\"host_down\":{}}"
#define SNAP(blocks) "{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_snapshot\":{\"blocks\":" blocks "}}"
#define SBLOCK(key, medium, name, uri)                                                                                 \
	"{\"block_key\":\"" key "\",\"medium\":\"" medium "\",\"specs\":[{\"name\":\"" name "\",\"uri\":\"" uri "\"}]" \
	"}"

static inline const char *gen_of(json_t *r)
{
	return json_string_value(jpath(r, "committed_snapshot_version"));
}

/* item_results[i] of a reply ("" when there is none). */
static inline const char *item_of(json_t *r, size_t i)
{
	const char *s = json_string_value(json_array_get(jpath(r, "item_results"), i));

	return s ? s : "";
}

/* The URIs a BATCH_GET returns for key, joined by spaces ("" for a miss). */
static inline void uris(int64_t key, char *out, size_t cap)
{
	json_t *r =
	    CALL("getCacheLocation", "{\"instance_id\":\"e\",\"query_type\":1,\"block_keys\":[%lld]}", (long long)key);
	json_t *specs = jpath(json_array_get(jpath(r, "locations"), 0), "location_specs");
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < json_array_size(specs); i++) {
		const char *u = json_string_value(jpath(json_array_get(specs, i), "uri"));

		if (u[0])
			len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? " " : "", u);
	}
	json_decref(r);
}

static inline bool visible(int64_t key)
{
	char u[4096];

	uris(key, u, sizeof(u));
	return u[0] != '\0';
}

#endif

/*
 * The event-report query APIs: getHostCacheState (reference kvcm.md §4.14, Q-05, Q-06) and
 * getCacheLocationsByBackend (§4.5, Q-07, Q-10..Q-13).
 */
#include "kvcm_test.h"

static void up(void)
{
	srv_up(NULL);
	cr_assert(register_simple(&srv.meta, "default", "h", 64));
}

TestSuite(host_query, .init = up, .fini = srv_down, .timeout = 30);

static void add(const char *host, const char *type, const char *key, const char *medium, const char *spec)
{
	EXPECT_CODE(
	    CALL(
	        "reportEvent",
	        "{\"instance_id\":\"h\",\"host_ip_port\":\"%s\",\"storage_type\":\"%s\",\"events\":[{\"event_type\":"
	        "\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"%s\",\"medium\":\"%s\",\"specs\":[{\"name\":\"%s\","
	        "\"uri\":\"event_report://%s/%s/%s\"}]}}]}",
	        host, type, key, medium, spec, host, medium, key),
	    "OK");
}

/* "host=local/fetch/total ..." of a getHostCacheState reply for keys 1..5 of instance inst. */
static void state_of(const char *inst, const char *extra, char *out, size_t cap)
{
	json_t *r = CALL("getHostCacheState", "{\"instance_id\":\"%s\",\"block_cache_keys\":[1,2,3,4,5]%s}", inst,
	                 extra),
	       *hs;
	size_t len = 0;

	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	hs = jpath(r, "hosts");
	out[0] = '\0';
	for (size_t i = 0; i < json_array_size(hs); i++) {
		json_t *h = json_array_get(hs, i), *fetch = jpath(h, "p2p_1_fetch"),
		       *total = jpath(h, "p2p_1_total_match");
		bool p2p = strstr(extra, "p2p_host_count") != NULL;

		/* the reference leaves the peer fields out unless a peer was asked for; read as "no peer's help" */
		cr_assert_eq(fetch != NULL, p2p, "p2p_1_fetch present: %d, p2p asked: %d", fetch != NULL, p2p);
		cr_assert_eq(total != NULL, p2p);
		len += (size_t)snprintf(out + len, cap - len, "%s%s=%s/%s/%s", i ? " " : "",
		                        json_string_value(jpath(h, "host_ip_port")),
		                        json_string_value(jpath(h, "local")), fetch ? json_string_value(fetch) : "0",
		                        json_string_value(total ? total : jpath(h, "local")));
	}
	json_decref(r);
}

static void hosts(const char *extra, char *out, size_t cap)
{
	state_of("h", extra, out, cap);
}

#define L2   "ST_EVENT_REPORT_L2"
#define L1P5 "ST_EVENT_REPORT_L1P5"

Test(host_query, host_cache_state)
{
	char got[512];

	add("b:1", L2, "1", "gpu", "s");
	add("b:1", L2, "2", "gpu", "s");
	add("a:1", L2, "1", "gpu", "s");
	add("a:1", L2, "2", "gpu", "s");
	add("a:1", L2, "3", "cpu", "s");
	add("a:1", L1P5, "4", "gpu", "s"); /* the L1P5 reporter of the same host counts too */
	add("c:1", L1P5, "2", "gpu", "s"); /* misses the first key: left out */
	hosts("", got, sizeof(got));
	cr_expect_str_eq(got, "a:1=4/0/4 b:1=2/0/2");
	hosts(",\"medium\":[\"gpu\"]", got, sizeof(got));
	cr_expect_str_eq(got, "a:1=2/0/2 b:1=2/0/2");
	hosts(",\"p2p_host_count\":2", got, sizeof(got));
	cr_expect_str_eq(got, "a:1=4/0/4 b:1=2/1/3", "b:1 fetches key 3 from the L2 peer a:1");
	hosts(",\"p2p_host_count\":1", got, sizeof(got));
	cr_expect_str_eq(got, "a:1=4/0/4 b:1=2/0/2", "only the host with the largest local gets a peer");
	EXPECT_CODE(CALL("getHostCacheState",
	                 "{\"instance_id\":\"h\",\"query_type\":\"QT_BATCH_GET\",\"block_cache_keys\":[1]}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("reportEvent",
	                 "{\"instance_id\":\"h\",\"host_ip_port\":\"a:1\",\"storage_type\":\"%s\",\"events\":[{"
	                 "\"event_type\":\"EVENT_HOST_DOWN\",\"host_down\":{}}]}",
	                 L2),
	            "OK");
	hosts("", got, sizeof(got));
	cr_expect_str_eq(got, "b:1=2/0/2", "the L2 reporter of a:1 is gone; its L1P5 one lacks the first key");
}

/* A hybrid model: full-attention spec "full" in group "F_full", Mamba state "linear" in group "L_linear". */
static void register_mamba(const char *id, bool eagle)
{
	EXPECT_CODE(CALL("registerInstance",
	                 "{\"instance_group\":\"default\",\"instance_id\":\"%s\",\"block_size\":4,"
	                 "\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"bf16\",\"use_eagle_pop\":%s},"
	                 "\"location_spec_infos\":[{\"name\":\"full\",\"size\":100},{\"name\":\"linear\",\"size\":10}],"
	                 "\"location_spec_groups\":[{\"name\":\"F_full\",\"spec_names\":[\"full\"]},{\"name\":"
	                 "\"L_linear\",\"spec_names\":[\"linear\"]}],\"default_query_type\":"
	                 "\"QT_PREFIX_MATCH_WITH_MAMBA\"}",
	                 id, eagle ? "true" : "false"),
	            "OK");
}

/* One ADD of key on host (medium gpu) with the given specs ("full", "linear" or "full,linear"). */
static void add_specs(const char *inst, const char *host, const char *type, int key, const char *specs)
{
	char list[256] = "";
	size_t len = 0;

	for (const char *p = specs; *p;) {
		size_t n = strcspn(p, ",");

		len += (size_t)snprintf(list + len, sizeof(list) - len,
		                        "%s{\"name\":\"%.*s\",\"uri\":\"event_report://%s/gpu/%d\"}", len ? "," : "",
		                        (int)n, p, host, key);
		p += n + (p[n] == ',');
	}
	EXPECT_CODE(CALL("reportEvent",
	                 "{\"instance_id\":\"%s\",\"host_ip_port\":\"%s\",\"storage_type\":\"%s\",\"events\":[{"
	                 "\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"%d\",\"medium\":"
	                 "\"gpu\",\"specs\":[%s]}}]}",
	                 inst, host, type, key, list),
	            "OK");
}

/* "host=local/fetch/total ..." of getHostCacheState over keys 1..5 of inst. */
#define PLAIN ",\"query_type\":\"QT_PREFIX_MATCH\""

/* Reference §4.14: full-attention specs need a prefix, Mamba state only the last block matched. */
Test(host_query, mamba_state_coverage_skips_gaps)
{
	char got[512];

	register_mamba("m", false);
	register_mamba("me", true);
	for (int k = 1; k <= 5; k++)
		for (int e = 0; e < 2; e++) {
			const char *inst = e ? "me" : "m";

			/* A:1 has the state only at keys 2 and 5, B:1 full attention for keys 1-2, state at 1 */
			add_specs(inst, "A:1", L2, k, k == 2 || k == 5 ? "full,linear" : "full");
			if (k <= 2)
				add_specs(inst, "B:1", L2, k, k == 1 ? "full,linear" : "full");
		}
	state_of("m", "", got, sizeof(got));
	cr_expect_str_eq(got, "A:1=5/0/5 B:1=1/0/1", "state at the last block of the full prefix");
	state_of("m", PLAIN, got, sizeof(got));
	cr_expect_str_eq(got, "A:1=5/0/5 B:1=2/0/2", "the plain rule looks at any spec");
	state_of("me", "", got, sizeof(got));
	cr_expect_str_eq(got, "A:1=2/0/2 B:1=1/0/1", "Eagle pop: full prefix 4, so the state at key 2 is the last");
	state_of("me", PLAIN, got, sizeof(got));
	cr_expect_str_eq(got, "A:1=4/0/4 B:1=1/0/1", "Eagle pop shortens the plain prefix too");
	EXPECT_CODE(CALL("getHostCacheState", "{\"instance_id\":\"h\",\"query_type\":\"QT_PREFIX_MATCH_WITH_MAMBA\","
	                                      "\"block_cache_keys\":[1]}"),
	            "INVALID_ARGUMENT");
}

/*
 * A:1 (L1P5, no peer for others) holds full attention for keys 1-3 and state at 1. The L2 peer P:1 holds full
 * attention for 1-5 without state, Q:1 state for 1-5 with full attention only at 1.
 */
Test(host_query, mamba_p2p)
{
	char got[512];

	register_mamba("m", false);
	register_mamba("me", true);
	for (int e = 0; e < 2; e++) {
		const char *inst = e ? "me" : "m";

		for (int k = 1; k <= 5; k++) {
			if (k <= 3)
				add_specs(inst, "A:1", L1P5, k, k == 1 ? "full,linear" : "full");
			add_specs(inst, "P:1", L2, k, "full");
			add_specs(inst, "Q:1", L2, k, k == 1 ? "full,linear" : "linear");
		}
	}
	state_of("m", "", got, sizeof(got));
	cr_expect_str_eq(got, "A:1=1/0/1 Q:1=1/0/1", "P:1 holds no state: local 0");
	state_of("m", ",\"p2p_host_count\":1", got, sizeof(got));
	cr_expect_str_eq(got, "A:1=1/4/5 Q:1=1/0/1", "full attention 4-5 from P:1, state 2-5 from Q:1");
	state_of("m", ",\"p2p_host_count\":2", got, sizeof(got));
	cr_expect_str_eq(got, "A:1=1/4/5 Q:1=1/4/5", "Q:1 takes full attention 2-5 from P:1");
	state_of("m", PLAIN ",\"p2p_host_count\":3", got, sizeof(got));
	cr_expect_str_eq(got, "A:1=3/2/5 P:1=5/0/5 Q:1=5/0/5", "the plain rule counts any spec");
	state_of("me", ",\"p2p_host_count\":2", got, sizeof(got));
	cr_expect_str_eq(got, "A:1=1/4/4", "Eagle pop: Q:1's local is 0, A:1 still fetches key 5 but cannot end there");
}

/* Groups other than 'F' (full attention) and 'L' (Mamba state) cannot be matched this way. */
Test(host_query, mamba_group_categories)
{
	EXPECT_CODE(CALL("registerInstance",
	                 "{\"instance_group\":\"default\",\"instance_id\":\"w\",\"block_size\":4,"
	                 "\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"bf16\"},\"location_spec_infos\":"
	                 "[{\"name\":\"full\",\"size\":100},{\"name\":\"swa\",\"size\":10}],\"location_spec_groups\":"
	                 "[{\"name\":\"F\",\"spec_names\":[\"full\"]},{\"name\":\"W\",\"spec_names\":[\"swa\"]}]}"),
	            "OK");
	EXPECT_CODE(CALL("getHostCacheState", "{\"instance_id\":\"w\",\"query_type\":\"QT_PREFIX_MATCH_WITH_MAMBA\","
	                                      "\"block_cache_keys\":[1]}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("getHostCacheState", "{\"instance_id\":\"w\",\"block_cache_keys\":[1]}"), "OK");
}

/* The specs of key i in a ByBackend reply, as "name@uri,..." per location joined by '|'. */
static void by_backend(const char *body, char *out, size_t cap)
{
	json_t *r = CALL("getCacheLocationsByBackend", "%s", body), *kl;
	size_t len = 0;

	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	kl = jpath(r, "key_locations");
	out[0] = '\0';
	for (size_t i = 0; i < json_array_size(kl); i++) {
		json_t *locs = jpath(json_array_get(kl, i), "locations");

		len += (size_t)snprintf(out + len, cap - len, "%s[", i ? " " : "");
		for (size_t j = 0; j < json_array_size(locs); j++) {
			json_t *l = json_array_get(locs, j), *specs = jpath(l, "location_specs");

			cr_expect_eq((size_t)json_integer_value(jpath(l, "spec_size")), json_array_size(specs));
			for (size_t s = 0; s < json_array_size(specs); s++) {
				const char *u = json_string_value(jpath(json_array_get(specs, s), "uri"));

				len += (size_t)snprintf(out + len, cap - len, "%s%s@%.3s", j || s ? "," : "",
				                        json_string_value(jpath(json_array_get(specs, s), "name")),
				                        strstr(u, "://") + 3);
			}
		}
		len += (size_t)snprintf(out + len, cap - len, "]");
	}
	json_decref(r);
}

#define BB(strategy, names)                                                                                            \
	"{\"instance_id\":\"h\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":[82000,82001],\"location_spec_"         \
	"names\":" names ",\"backend_selectors\":[{\"backend_type\":\"ST_EVENT_REPORT_L2\",\"strategy\":\"" strategy   \
	"\"}]}"

Test(host_query, by_backend_filters_before_peer_selection)
{
	char got[512];

	add("A:1", L2, "82000", "gpu", "full_0");
	add("A:1", L2, "82001", "gpu", "full_0");
	add("B:1", L2, "82000", "gpu", "linear_1");
	by_backend(BB("LSS_V6D_PREFIX", "[\"linear_1\"]"), got, sizeof(got));
	cr_expect_str_eq(got, "[linear_1@B:1] []");
	by_backend(BB("LSS_V6D_COVERAGE", "[\"linear_1\"]"), got, sizeof(got));
	cr_expect_str_eq(got, "[linear_1@B:1] []");
	by_backend(BB("LSS_V6D_PREFIX", "[\"unknown_spec\"]"), got, sizeof(got));
	cr_expect_str_eq(got, "[] []");
	by_backend(BB("LSS_V6D_PREFIX", "[]"), got, sizeof(got));
	cr_expect_str_eq(got, "[full_0@A:1] [full_0@A:1]", "the longest prefix wins");
	EXPECT_CODE(CALL("getCacheLocationsByBackend", "{\"instance_id\":\"h\",\"query_type\":1,\"block_keys\":[1],"
	                                               "\"backend_selectors\":[{\"backend_type\":263}]}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("getCacheLocationsByBackend", "{\"instance_id\":\"h\",\"query_type\":1,\"block_keys\":[1],"
	                                               "\"backend_selectors\":[]}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("getCacheLocationsByBackend", "{\"instance_id\":\"h\",\"query_type\":2,\"block_keys\":[1],"
	                                               "\"backend_selectors\":[{\"backend_type\":\"ST_NFS\"}]}"),
	            "INVALID_ARGUMENT");
}

Test(host_query, by_backend_data_storages_come_first)
{
	char got[512];

	cr_assert(write_keys(&srv.meta, "h", "[7]"));
	add("A:1", L2, "7", "gpu", "tp0");
	add("A:1", L2, "8", "gpu", "tp0");
	by_backend(
	    "{\"instance_id\":\"h\",\"query_type\":1,\"block_keys\":[7,8,9],\"backend_selectors\":[{\"backend_type\":"
	    "\"ST_EVENT_REPORT_L2\",\"strategy\":1},{\"backend_type\":\"ST_NFS\"}]}",
	    got, sizeof(got));
	cr_expect(strncmp(got, "[tp0@", 5) == 0 && strstr(got, ",tp0@A:1] [tp0@A:1] []"), "%s", got);
}

Test(host_query, get_cache_location_sees_reports)
{
	json_t *r;

	add("A:1", L2, "1", "gpu", "tp0");
	add("B:1", L2, "1", "cpu", "tp0");
	add("A:1", L2, "2", "gpu", "tp0");
	r = CALL("getCacheLocation", "{\"instance_id\":\"h\",\"block_keys\":[1,2,3]}");
	cr_assert_eq(json_array_size(jpath(r, "locations")), 2);
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(r, "locations"), 0), "type")),
	                 "ST_EVENT_REPORT_L2");
	cr_expect_eq(json_integer_value(jpath(json_array_get(jpath(r, "locations"), 0), "spec_size")), 2,
	             "one row with the specs of both hosts");
	json_decref(r);
}

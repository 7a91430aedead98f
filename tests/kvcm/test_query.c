/*
 * getCacheLocation query types (reference kvcm.md §4.3) over one pattern of cached keys, the default query type,
 * masks and location_spec_names.
 */
#include "kvcm_test.h"

static void up(void)
{
	srv_up(NULL);
	EXPECT_CODE(
	    CALL("registerInstance",
	         "{\"instance_group\":\"default\",\"instance_id\":\"q\",\"block_size\":8,\"model_deployment\":"
	         "{\"model_name\":\"m\",\"dtype\":\"fp16\"},\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":"
	         "10},{\"name\":\"tp1\",\"size\":10}]}"),
	    "OK");
	/* cached: 1 2 3 _ 5 6 7 8 _ 10 */
	cr_assert(write_keys(&srv.meta, "q", "[1,2,3,5,6,7,8,10]"));
}

TestSuite(query, .init = up, .fini = srv_down, .timeout = 30);

/* The rows of a query as a string: 'h' a hit, '.' a placeholder. */
static void rows(const char *body, char *out, size_t cap)
{
	json_t *r = CALL("getCacheLocation", "%s", body), *locs = jpath(r, "locations");
	size_t i;

	cr_assert_str_eq(code_of(r), "OK", "%s: %s", body, message_of(r));
	for (i = 0; i < json_array_size(locs) && i + 1 < cap; i++) {
		json_t *l = json_array_get(locs, i);
		bool hit = strcmp(json_string_value(jpath(l, "type")), "ST_UNSPECIFIED") != 0;

		out[i] = hit ? 'h' : '.';
		if (!hit) /* placeholders carry the instance's spec names with empty URIs */
			cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(l, "location_specs"), 0), "uri")),
			                 "");
	}
	out[i] = '\0';
	json_decref(r);
}

#define KEYS "[1,2,3,4,5,6,7,8,9,10]"

static void expect_rows(const char *body, const char *want)
{
	char got[64];

	rows(body, got, sizeof(got));
	cr_expect_str_eq(got, want, "%s", body);
}

Test(query, prefix_match)
{
	expect_rows("{\"instance_id\":\"q\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":" KEYS "}", "hhh");
	expect_rows("{\"instance_id\":\"q\",\"query_type\":2,\"block_keys\":[5,6,7,8,9,10]}", "hhhh");
	expect_rows("{\"instance_id\":\"q\",\"query_type\":2,\"block_keys\":[4,5]}", "");
	/* masked keys are dropped before matching: skipping 4 lets the prefix run on */
	expect_rows(
	    "{\"instance_id\":\"q\",\"query_type\":2,\"block_keys\":[1,2,3,4,5,6],\"block_mask\":{\"bool_masks\":"
	    "{\"values\":[false,false,false,true]}}}",
	    "hhhhh");
	expect_rows("{\"instance_id\":\"q\",\"query_type\":2,\"block_keys\":[4,5,6],\"block_mask\":{\"offset\":1}}",
	            "hh");
	expect_rows("{\"instance_id\":\"q\",\"query_type\":2,\"block_keys\":[1,2,3],\"block_mask\":{\"bool_masks\":"
	            "{\"values\":[true,true,true]}}}",
	            "");
}

Test(query, default_query_type)
{
	/* no query_type and no default_query_type: prefix match */
	expect_rows("{\"instance_id\":\"q\",\"block_keys\":" KEYS "}", "hhh");
	EXPECT_CODE(CALL("registerInstance",
	                 "{\"instance_group\":\"default\",\"instance_id\":\"qb\",\"block_size\":8,\"model_deployment\":"
	                 "{\"model_name\":\"m\",\"dtype\":\"fp16\"},\"default_query_type\":\"QT_BATCH_GET\","
	                 "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":10}]}"),
	            "OK");
	cr_assert(write_keys(&srv.meta, "qb", "[1,3]"));
	{
		char got[16];
		json_t *r = CALL("getCacheLocation", "{\"instance_id\":\"qb\",\"block_keys\":[1,2,3]}");

		cr_expect_eq(json_array_size(jpath(r, "locations")), 3, "the instance's default BATCH_GET");
		json_decref(r);
		(void)got;
	}
}

Test(query, batch_get_ignores_the_mask)
{
	expect_rows("{\"instance_id\":\"q\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":" KEYS
	            ",\"block_mask\":{\"offset\":5}}",
	            "hhh.hhhh.h");
}

Test(query, reverse_roll_sliding_window)
{
	expect_rows(
	    "{\"instance_id\":\"q\",\"query_type\":\"QT_REVERSE_ROLL_SW_MATCH\",\"sw_size\":1,\"block_keys\":" KEYS "}",
	    ".........h");
	expect_rows("{\"instance_id\":\"q\",\"query_type\":3,\"sw_size\":2,\"block_keys\":" KEYS "}", "......hh..");
	expect_rows("{\"instance_id\":\"q\",\"query_type\":3,\"sw_size\":4,\"block_keys\":" KEYS "}", "....hhhh..");
	expect_rows("{\"instance_id\":\"q\",\"query_type\":3,\"sw_size\":3,\"block_keys\":[1,2,3,4]}", "hhh.");
	expect_rows("{\"instance_id\":\"q\",\"query_type\":3,\"sw_size\":5,\"block_keys\":" KEYS "}", "..........");
	expect_rows("{\"instance_id\":\"q\",\"query_type\":3,\"sw_size\":10,\"block_keys\":[1,2,3,5,6,7,8,10,1,2]}",
	            "hhhhhhhhhh");
}

Test(query, len_counts_hits)
{
	static const struct {
		const char *body, *len;
	} cases[] = {
	    {"{\"instance_id\":\"q\",\"query_type\":2,\"block_keys\":" KEYS "}", "3"},
	    {"{\"instance_id\":\"q\",\"query_type\":1,\"block_keys\":" KEYS "}", "8"},
	    {"{\"instance_id\":\"q\",\"query_type\":3,\"sw_size\":4,\"block_keys\":" KEYS "}", "4"},
	    {"{\"instance_id\":\"q\",\"block_keys\":[4]}", "0"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *r = CALL("getCacheLocationLen", "%s", cases[i].body);

		cr_expect_str_eq(json_string_value(jpath(r, "cache_location_len")), cases[i].len, "%s", cases[i].body);
		json_decref(r);
	}
}

Test(query, location_spec_names_filter)
{
	json_t *r = CALL("getCacheLocation", "{\"instance_id\":\"q\",\"block_keys\":[1,4],\"query_type\":1,"
	                                     "\"location_spec_names\":[\"tp1\"]}"),
	       *l;

	l = json_array_get(jpath(r, "locations"), 0);
	cr_expect_eq(json_integer_value(jpath(l, "spec_size")), 1, "spec_size counts the specs returned");
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(l, "location_specs"), 0), "name")), "tp1");
	l = json_array_get(jpath(r, "locations"), 1);
	cr_expect_eq(json_integer_value(jpath(l, "spec_size")), 1);
	json_decref(r);
	r = CALL("getCacheLocation", "{\"instance_id\":\"q\",\"block_keys\":[1,2]}");
	l = json_array_get(jpath(r, "locations"), 0);
	cr_expect_eq(json_integer_value(jpath(l, "spec_size")), 2);
	json_decref(r);
	/* a name no location has: nothing matches */
	expect_rows("{\"instance_id\":\"q\",\"query_type\":2,\"block_keys\":[1,2],\"location_spec_names\":[\"zz\"]}",
	            "");
	/* several names, in any order, among names no location has (the filter is matched as a sorted set) */
	r = CALL("getCacheLocation", "{\"instance_id\":\"q\",\"block_keys\":[1],\"query_type\":1,"
	                             "\"location_spec_names\":[\"zz\",\"tp1\",\"a\",\"tp0\",\"tp1\"]}");
	l = json_array_get(jpath(r, "locations"), 0);
	cr_expect_eq(json_integer_value(jpath(l, "spec_size")), 2, "tp0 and tp1, each once");
	json_decref(r);
}

Test(query, write_and_read_locations_are_equal)
{
	json_t *s =
	           CALL("startWriteCache", "{\"instance_id\":\"q\",\"block_keys\":[123],\"write_timeout_seconds\":10}"),
	       *r;

	EXPECT_CODE(CALL("finishWriteCache",
	                 "{\"instance_id\":\"q\",\"write_session_id\":\"%s\",\"success_blocks\":{"
	                 "\"bool_masks\":{\"values\":[true]}}}",
	                 json_string_value(jpath(s, "write_session_id"))),
	            "OK");
	r = CALL("getCacheLocation", "{\"instance_id\":\"q\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[123]}");
	/* the basic smoke test of the newest reference: the same location, published (status), same id */
	for (const char *const *f = (const char *const[]){"type", "spec_size", "location_specs", "id", NULL}; *f; f++)
		cr_expect(json_equal(json_object_get(json_array_get(jpath(r, "locations"), 0), *f),
		                     json_object_get(json_array_get(jpath(s, "locations"), 0), *f)),
		          "%s", *f);
	cr_expect_str_eq(json_string_value(json_object_get(json_array_get(jpath(s, "locations"), 0), "status")),
	                 "CLS_WRITING");
	cr_expect_str_eq(json_string_value(json_object_get(json_array_get(jpath(r, "locations"), 0), "status")),
	                 "CLS_SERVING");
	json_decref(r);
	json_decref(s);
}

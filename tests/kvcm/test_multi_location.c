/*
 * A key with several locations (docs/kvcm.md "Multi-location keys", the reference's multi_location_test): one
 * written per location spec group (tp0 through GroupA, tp1 through GroupB) keeps both, queries show them merged
 * as one location with both specs, and losing one location's data leaves the other served.
 */
#include "prune_test.h"

#define REGISTRATION                                                                                                   \
	"\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":1024},{\"name\":\"tp1\",\"size\":1024}],"                 \
	"\"location_spec_groups\":[{\"name\":\"GroupA\",\"spec_names\":[\"tp0\"]},"                                    \
	"{\"name\":\"GroupB\",\"spec_names\":[\"tp1\"]}]"

static void up(void)
{
	srv_up(NULL);
	prune_fixture(&srv, "mg", "m", REGISTRATION);
}

TestSuite(multi_location, .init = up, .fini = srv_down, .timeout = 60);

/* Writes keys through spec group g (creating the files); returns the start reply. */
static json_t *write_group(const char *keys, const char *g, size_t expect)
{
	json_t *s = prune_start("m", keys, g);

	cr_assert_eq(json_array_size(jpath(s, "locations")), expect, "%s allocated %zu locations", g,
	             json_array_size(jpath(s, "locations")));
	prune_touch_all(s);
	prune_finish("m", s);
	return s;
}

/* The spec names of location i of a reply, joined with ','. */
static const char *names_of(json_t *r, size_t i)
{
	static char out[256];
	size_t len = 0, j;
	json_t *spec;

	out[0] = '\0';
	json_array_foreach(prune_specs(r, i), j, spec) len += (size_t)snprintf(
	    out + len, sizeof(out) - len, "%s%s", j ? "," : "", json_string_value(jpath(spec, "name")));
	return out;
}

static void expect_names(json_t *r, size_t n, const char *names)
{
	cr_assert_eq(json_array_size(jpath(r, "locations")), n);
	for (size_t i = 0; i < n; i++)
		cr_expect_str_eq(names_of(r, i), names, "location %zu", i);
}

Test(multi_location, two_spec_groups_show_both_locations)
{
	json_t *a = write_group("[500,501,502]", "GroupA", 3), *b = write_group("[500,501,502]", "GroupB", 3), *r;

	expect_names(a, 3, "tp0");
	expect_names(b, 3, "tp1");
	r = prune_prefix("m", "[500,501,502]");
	expect_names(r, 3, "tp0,tp1");
	cr_expect_eq(json_integer_value(jpath(json_array_get(jpath(r, "locations"), 0), "spec_size")), 2);
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(r, "locations"), 0), "status")), "CLS_SERVING");
	json_decref(r);
	r = CALL("getCacheLocation", "{\"instance_id\":\"m\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":[500,9],"
	                             "\"location_spec_names\":[\"tp1\"]}");
	cr_expect_str_eq(names_of(r, 0), "tp1", "a filter on the second location's spec still hits");
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(r, "locations"), 1), "type")), "ST_UNSPECIFIED");
	json_decref(r);
	json_decref(a);
	json_decref(b);
}

Test(multi_location, losing_one_location_keeps_the_other)
{
	json_t *a = write_group("[600,601,602]", "GroupA", 3), *b = write_group("[600,601,602]", "GroupB", 3), *r, *a2;

	for (size_t i = 0; i < 3; i++)
		prune_remove(a, i);
	r = prune_prefix("m", "[600,601,602]");
	expect_names(r, 3, "tp1");
	json_decref(r);
	a2 = write_group("[600,601,602]", "GroupA", 3);
	for (size_t i = 0; i < 3; i++)
		cr_expect_eq(prune_uri_key(a2, i), 600 + (int64_t)i);
	r = prune_prefix("m", "[600,601,602]");
	expect_names(r, 3, "tp0,tp1");
	json_decref(r);
	json_decref(a);
	json_decref(b);
	json_decref(a2);
}

Test(multi_location, losing_every_location_ends_the_prefix)
{
	json_t *a = write_group("[700,701,702]", "GroupA", 3), *b = write_group("[700,701,702]", "GroupB", 3);

	prune_remove(a, 1);
	prune_remove(b, 1);
	cr_expect_eq(prune_prefix_hits("m", "[700,701,702]"), 1);
	json_decref(a);
	json_decref(b);
}

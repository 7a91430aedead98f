/*
 * getCacheLocation, getCacheLocationLen and getHostCacheState bodies are read by a fast key reader when they have
 * the usual shape, else by jansson. Each body here is sent as it is and with a leading member only jansson reads
 * ("zz":null); the two replies must be the same, byte for byte, and the fast reader must have taken the body
 * exactly when it has the usual shape.
 */
#include "kvcm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const limits[] = {"kvcm.service.max_keys_per_request=8", NULL};

static void report(const char *key)
{
	EXPECT_CODE(CALL("reportEvent",
	                 "{\"instance_id\":\"q\",\"host_ip_port\":\"a:1\",\"storage_type\":\"ST_EVENT_REPORT_L2\","
	                 "\"events\":[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"%s\","
	                 "\"medium\":\"gpu\",\"specs\":[{\"name\":\"tp0\",\"uri\":\"event_report://a:1/%s\"}]}}]}",
	                 key, key),
	            "OK");
}

static void up(void)
{
	srv_up(limits);
	cr_assert(register_simple(&srv.meta, "default", "q", 4096));
	report("1");
	report("2");
	report("3");
	report("-5");
	report("9223372036854775807");
	report("-9223372036854775808");
}

TestSuite(key_read, .init = up, .fini = srv_down, .timeout = 60);

/* mmc_kvcm_fast_read_requests_total: bodies a fast reader took. */
static long fast_reads(void)
{
	return srv_metric("mmc_kvcm_fast_read_requests_total");
}

/* "status body" of POST /api/<api> with body, the request_id (a time stamp) blanked. */
static char *post(const char *api, const char *body)
{
	char path[64], *out = NULL, *s = NULL, *id;
	int status;

	snprintf(path, sizeof(path), "/api/%s", api);
	status = hc_request(&srv.meta, "POST", path, body, strlen(body), &out);
	cr_assert(asprintf(&s, "%d %s", status, out ? out : "") > 0);
	free(out);
	if ((id = strstr(s, "\"request_id\":\"")))
		for (id += 14; *id && *id != '"'; id++)
			*id = '*';
	return s;
}

/* Members after instance_id "q" (K: the key array's name); whether the fast reader takes them. */
static const struct {
	const char *members;
	bool fast;
} cases[] = {
    {",\"K\":[1,2,3]", true},
    {",\"K\":[3,2,1,1]", true},
    {",\"query_type\":\"QT_PREFIX_MATCH\",\"K\":[1,2,4]", true},
    {",\"query_type\":1,\"K\":[1,2,3]", true},
    {",\"query_type\":\"QT_BATCH_GET\",\"K\":[9223372036854775807,-9223372036854775808,-5,0,4]", true},
    {" , \"trace_id\" : \"t\" ,\r\n\t\"K\" : [ 1 , 2 ] ", true},
    {",\"trace_id\":\"t\",\"sw_size\":2,\"K\":[1]", true},
    {",\"p2p_host_count\":1,\"K\":[1,2,3]", true},
    {",\"K\":[1],\"query_type\":true", true},
    {",\"K\":[1],\"sw_size\":false", true},
    {",\"K\":[1,2,3,4,5,6,7,8]", true},
    {",\"query_type\":\"QT_NOPE\",\"K\":[1]", true},
    {",\"query_type\":-1,\"K\":[1]", true},
    {",\"trace_id\":7,\"K\":[1]", true},
    {",\"sw_size\":99999999999,\"K\":[1]", true},
    {",\"K\":[1],\"blockKeys\":\"x\"", true},
    {",\"K\":[1],\"blockCacheKeys\":\"x\"", true},
    /* what the fast reader leaves to jansson */
    {",\"K\":[1,2,3,4,5,6,7,8,9]", false},
    {",\"K\":[]", false},
    {"", false},
    {",\"K\":null", false},
    {",\"K\":\"1\"", false},
    {",\"K\":[\"1\",\"2\"]", false},
    {",\"K\":[1.0,2]", false},
    {",\"K\":[1.5]", false},
    {",\"K\":[1e2]", false},
    {",\"K\":[-0]", false},
    {",\"K\":[01]", false},
    {",\"K\":[9223372036854775808]", false},
    {",\"K\":[-9223372036854775809]", false},
    {",\"K\":[18446744073709551616]", false},
    {",\"K\":[1,true]", false},
    {",\"K\":[1,[2]]", false},
    {",\"K\":[1,]", false},
    {",\"K\":[1]x", false},
    {",\"K\":[1],\"K\":[2]", false},
    {",\"trace_id\":\"a\",\"trace_id\":\"a\",\"K\":[1]", false},
    {",\"blockKeys\":[1,2]", false},
    {",\"blockCacheKeys\":[1,2]", false},
    {",\"token_ids\":[1,2,3,4]", false},
    {",\"K\":[1],\"block_mask\":{\"offset\":1}", false},
    {",\"K\":[1],\"location_spec_names\":[\"tp0\"]", false},
    {",\"K\":[1],\"medium\":[\"gpu\"]", false},
    {",\"K\":[1],\"trace_id\":\"\\u0074\"", false},
    {",\"K\":[1],\"trace_id\":\"t\\t\"", false},
    {",\"K\":[1],\"trace_id\":\"\xc3\xa9\"", false},
    {",\"K\":[1],\"trace_id\":null", false},
    {",\"K\":[1],\"sw_size\":1.0", false},
    {",\"K\":[1],\"yy\":{}", false},
};

/* body: {"instance_id":"q"<members>} with K replaced by key. */
static void body_of(char *out, size_t cap, const char *lead, const char *members, const char *key)
{
	size_t n = (size_t)snprintf(out, cap, "{%s\"instance_id\":\"q\"", lead), kl = strlen(key);

	for (const char *p = members; *p && n + kl + 2 < cap; p++) {
		if (p[0] == '"' && p[1] == 'K' && p[2] == '"') {
			n += (size_t)snprintf(out + n, cap - n, "\"%s\"", key);
			p += 2;
		} else {
			out[n++] = *p;
		}
	}
	snprintf(out + n, cap - n, "}");
}

static void both(const char *api, const char *key, size_t i)
{
	char fast[1024], slow[1024];
	long n0 = fast_reads(), n1;
	char *a, *b;

	body_of(fast, sizeof(fast), "", cases[i].members, key);
	body_of(slow, sizeof(slow), "\"zz\":null,", cases[i].members, key);
	a = post(api, fast);
	n1 = fast_reads();
	b = post(api, slow);
	cr_expect_str_eq(a, b, "%s case %zu: %s\n%s\n%s", api, i, fast, a, b);
	cr_expect_eq(n1 - n0, cases[i].fast, "%s case %zu: fast reader %s: %s", api, i,
	             cases[i].fast ? "not used" : "used", fast);
	cr_expect_eq(fast_reads(), n1, "%s case %zu: null sends the body to jansson", api, i);
	free(a);
	free(b);
}

Test(key_read, both_readers_agree)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		both("getCacheLocation", "block_keys", i);
		both("getCacheLocationLen", "block_keys", i);
		both("getHostCacheState", "block_cache_keys", i);
	}
}

Test(key_read, usual_bodies_find_the_blocks)
{
	char *a = post("getCacheLocation", "{\"instance_id\":\"q\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":["
	                                   "9223372036854775807,-9223372036854775808,-5,4]}");

	cr_expect(strstr(a, "event_report://a:1/9223372036854775807?") && strstr(a, "event_report://a:1/-5?") &&
	              strstr(a, "event_report://a:1/-9223372036854775808?"),
	          "%s", a);
	free(a);
	a = post("getCacheLocation", "{\"instance_id\":\"nope\",\"block_keys\":[1]}");
	cr_expect(strstr(a, "INSTANCE_NOT_EXIST"), "%s", a);
	free(a);
}

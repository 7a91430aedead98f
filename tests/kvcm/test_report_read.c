/*
 * reportEvent bodies are read by a fast reader when they have the usual shape, else by jansson. These tests send
 * each request in a form the fast reader takes and in one it declines (an extra numeric member), to two reporters,
 * and expect the same replies and the same stored locations; and they expect HTTP 400 for every malformed body
 * that looks almost like the usual shape.
 */
#include "kvcm_test.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const limits[] = {"kvcm.service.max_keys_per_request=4", NULL};

static void up(void)
{
	srv_up(limits);
	cr_assert(register_simple(&srv.meta, "default", "e", 4096));
}

TestSuite(report_read, .init = up, .fini = srv_down, .timeout = 60);

#define ADD(key, medium, name, uri)                                                                                    \
	"{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"" key "\",\"medium\":\"" medium            \
	"\",\"specs\":[{\"name\":\"" name "\",\"uri\":\"" uri "\"}]}}"
#define DEL(key, medium, names)                                                                                        \
	"{\"event_type\":\"EVENT_BLOCK_DELETE\",\"block_delete\":{\"block_key\":\"" key "\",\"medium\":\"" medium      \
	"\",\"spec_names\":" names "}}"
#define REGISTER "{\"event_type\":\"EVENT_NODE_REGISTER\",\"node_register\":{\"mediums\":[\"gpu\"]}}"

/* Event lists, each applied by a fresh reporter; keys 1..4 only. */
static const char *const cases[] = {
    "[" ADD("1", "gpu", "a", "x://h/1") "]",
    "[" ADD("1", "gpu", "a", "x://h/1") "," ADD("1", "gpu", "b", "x://h/1b?p=1#f") "," ADD("2", "ssd", "a",
                                                                                           "x://h:9/2") "]",
    "[" ADD("1", "gpu", "a", "x://h/1") "," ADD("1", "gpu", "b", "x://h/b") "," DEL("1", "gpu", "[\"a\"]") "]",
    "[" ADD("3", "gpu", "a", "x://h/3") "," DEL("3", "gpu", "[\"a\"]") "," DEL("4", "gpu", "[\"z\"]") "]",
    "[" DEL("4", "gpu", "[\"a\",\"b\"]") "]",
    "[" REGISTER "," ADD("2", "gpu", "a", "x://h/2") "]",
    /* order of members, white space, short escapes */
    "[ {\"block_add\" : {\"specs\":[{\"uri\":\"x:\\/\\/h\\/1\",\"name\":\"t\\tp\"}],\"medium\":\"gpu\","
    "\"block_key\":\"1\"},\r\n\t\"event_type\":\"EVENT_BLOCK_ADD\"} ]",
    "[{\"event_type\":\"2\",\"block_add\":{\"block_key\":\"2\",\"medium\":\"gpu\",\"specs\":[{\"name\":\"a\","
    "\"uri\":\"x://h/2\"}]}}]",
    "[{\"event_type\":\"EVENT_BLOCK_DELETE\",\"block_delete\":{\"block_key\":\"2\",\"medium\":\"gpu\","
    "\"spec_names\":[\"a\"],\"specs\":[{\"name\":\"q\"}]}}]",
    "[" ADD("3", "gpu", "a long spec name with \\\"quotes\\\" and a tab\\t", "x://h/a/long/path/\\/x") "]",
    "[" ADD("4", "gpu", "del\x7f", "x://h/4") "]",
    /* non-ASCII and \u escapes: jansson reads these in both forms */
    "[" ADD("1", "g\\u0070u", "\xc3\xa9", "x://h/\xc3\xa9") "]",
    /* invalid items, alone and among valid ones */
    "[" ADD("1", "gp#u", "a", "x://h/a") "," ADD("2", "gpu", "a", "x://h/2") "]",
    "[" ADD("1", "", "a", "x://h/a") "]",
    "[" ADD("x1", "gpu", "a", "x://h/a") "]",
    "[" ADD("-1", "gpu", "a", "x://h/a") "," ADD(" 1", "gpu", "a", "x://h/a") "]",
    "[" ADD("18446744073709551615", "gpu", "a", "x://h/a") "," ADD("18446744073709551616", "gpu", "a", "x://h/a") "]",
    "[" ADD("1", "gpu", "", "x://h/a") "," ADD("1", "gpu", "a", "not a uri") "," ADD("1", "gpu", "a", "x://h:p/a") "]",
    "[" ADD("1", "gpu", "a", "x://h/a?s_version=0123456789abcdef0123456789abcdef") "]",
    "[{\"event_type\":\"EVENT_BLOCK_ADD\"}]",
    "[{}]",
    "[{\"block_add\":{\"block_key\":\"1\",\"medium\":\"gpu\",\"specs\":[{\"name\":\"a\",\"uri\":\"x://h/1\"}]}}]",
    "[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_delete\":{\"block_key\":\"1\",\"medium\":\"gpu\","
    "\"spec_names\":[\"a\"]}}]",
    "[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"1\",\"medium\":\"gpu\",\"specs\":[]},"
    "\"block_delete\":{}}]",
    "[{\"block_delete\":{},\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"1\",\"medium\":\"gpu\","
    "\"specs\":[{\"name\":\"a\",\"uri\":\"x://h/1\"}]}}]",
    "[{\"event_type\":\"EVENT_BLOCK_DELETE\",\"block_add\":{},\"block_delete\":{\"block_key\":\"1\",\"medium\":"
    "\"gpu\",\"spec_names\":[\"a\"]}}]",
    "[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"1\",\"medium\":\"gpu\",\"specs\":[{"
    "\"name\":\"a\",\"uri\":\"x://h/1\"},{\"name\":\"a\",\"uri\":\"x://h/2\"}]}}]",
    "[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"1\",\"medium\":\"gpu\",\"specs\":[{"
    "\"name\":\"a\"}]}}]",
    "[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"1\",\"medium\":\"gpu\",\"specs\":[{}]}}]",
    "[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"medium\":\"gpu\",\"specs\":[{\"name\":\"a\","
    "\"uri\":\"x://h/1\"}]}}]",
    "[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"1\",\"specs\":[{\"name\":\"a\","
    "\"uri\":\"x://h/1\"}]}}]",
    "[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"1\",\"medium\":\"gpu\"}}]",
    "[" DEL("1", "gpu", "[]") "," DEL("1", "gpu", "[\"a\",\"a\"]") "," DEL("1", "gpu", "[\"\"]") "]",
    "[{\"event_type\":\"EVENT_BLOCK_DELETE\",\"block_delete\":{\"block_key\":\"1\",\"medium\":\"gpu\"}}]",
    "[{\"event_type\":\"EVENT_UNSPECIFIED\"},{\"event_type\":\"EVENT_NOPE\"},{\"event_type\":\"99\"},"
    "{\"event_type\":\"99999999999\"}]",
    "[{\"event_type\":\"EVENT_HEARTBEAT\",\"block_add\":{}}]",
    "[" REGISTER "," ADD("1", "gpu", "a", "x://h/1") ",{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\"}]",
    "[" ADD("1", "gpu", "a", "x://h/1") ",{\"event_type\":\"EVENT_HOST_DOWN\",\"host_down\":{}}]",
};

/* "key:location-specs;" of host's locations on keys 1..4, each s_version value cut out. */
static void stored(const char *host, char *out, size_t cap)
{
	json_t *r = CALL("getCacheMetaDetail", "{\"instance_id\":\"e\",\"block_keys\":[1,2,3,4]}"), *items, *locs;
	size_t len = 0, hl = strlen(host);

	cr_assert(r);
	items = jpath(r, "items");
	out[0] = '\0';
	for (size_t i = 0; i < json_array_size(items); i++) {
		locs = jpath(json_array_get(items, i), "locations");
		for (size_t j = 0; j < json_array_size(locs); j++) {
			json_t *l = json_array_get(locs, j), *specs = jpath(l, "location_specs");
			const char *id = json_string_value(jpath(l, "location_id"));

			if (strlen(id) < hl || strcmp(id + strlen(id) - hl, host) != 0)
				continue;
			len += (size_t)snprintf(out + len, cap - len, "%zu:%.*s", i + 1, (int)(strlen(id) - hl), id);
			for (size_t k = 0; k < json_array_size(specs); k++) {
				const char *u = json_string_value(jpath(json_array_get(specs, k), "uri"));
				const char *sv = strstr(u, "s_version=");

				len += (size_t)snprintf(out + len, cap - len, " %s=%.*s%s",
				                        json_string_value(jpath(json_array_get(specs, k), "name")),
				                        sv ? (int)(sv - u) : (int)strlen(u), u, sv ? sv + 42 : "");
			}
			len += (size_t)snprintf(out + len, cap - len, ";");
		}
	}
	json_decref(r);
}

/* The reply fields that must not depend on the reader, as one string. */
static char *outcome(json_t *r)
{
	json_t *items = jpath(r, "item_results");
	char *s = NULL, *codes = json_dumps(items ? items : json_null(), JSON_COMPACT);
	const char *gen = json_string_value(jpath(r, "committed_snapshot_version"));

	cr_assert(asprintf(&s, "%s|%s|%s|gen:%zu|%s|%s|%s", code_of(r), message_of(r), codes, gen ? strlen(gen) : 99,
	                   json_is_true(jpath(r, "snapshot_required")) ? "required" : "-",
	                   json_string_value(jpath(r, "retry_after_ms")),
	                   json_string_value(jpath(r, "extra_info"))) > 0);
	free(codes);
	return s;
}

static char *send_events(const char *host, const char *extra, const char *events)
{
	json_t *r = CALL("reportEvent",
	                 "{\"trace_id\":\"t\",\"instance_id\":\"e\",\"host_ip_port\":\"%s\"%s,\"storage_type\":"
	                 "\"ST_EVENT_REPORT_L2\",\"events\":%s}",
	                 host, extra, events);
	char *s;

	cr_assert(r, "%s: no JSON reply for %s", host, events);
	s = outcome(r);
	json_decref(r);
	return s;
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* mmc_kvcm_fast_read_requests_total: bodies the fast reader took. */
static long fast_reads(void)
{
	return srv_metric("mmc_kvcm_fast_read_requests_total");
}

/* Whether the fast reader takes a body with these events: ASCII, no \\u escape, no REGISTER or HOST_DOWN payload. */
static bool usual(const char *events)
{
	for (const char *p = events; *p; p++)
		if ((unsigned char)*p >= 0x7f)
			return false;
	return !strstr(events, "\\u") && !strstr(events, "node_register") && !strstr(events, "host_down");
}

/* Sends events as host (fast form) and as host2 (a form only jansson reads); expects the same outcome. */
static void both(const char *host, const char *host2, const char *events, const char *what)
{
	long n0 = fast_reads(), n1, n2;
	char *a = send_events(host, "", events), *b;

	n1 = fast_reads();
	b = send_events(host2, ",\"zz\":0", events);
	n2 = fast_reads();
	cr_expect_str_eq(a, b, "%s", what);
	cr_expect_eq(n1 - n0, usual(events), "%s: fast reader %s", what, usual(events) ? "not used" : "used");
	cr_expect_eq(n2, n1, "%s: a numeric member sends the body to jansson", what);
	free(a);
	free(b);
}

Test(report_read, both_readers_agree)
{
	char fast[64], slow[64], sf[4096], ss[4096], what[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(fast, sizeof(fast), "#fast%zu:1", i);
		snprintf(slow, sizeof(slow), "#slow%zu:1", i);
		snprintf(what, sizeof(what), "case %zu", i);
		/* twice: the second time the reporter has a generation */
		both(fast + 1, slow + 1, cases[i], what);
		both(fast + 1, slow + 1, cases[i], what);
		stored(fast, sf, sizeof(sf));
		stored(slow, ss, sizeof(ss));
		cr_expect_str_eq(sf, ss, "case %zu: stored locations", i);
	}
}

/* Every special byte (or escape) at every offset of a string, so the reader's 8-byte scan meets it everywhere. */
Test(report_read, strings_read_the_same_at_every_offset)
{
	static const char *const specials[] = {"\\\"", "\\\\", "\\t", "\\/", "\xc3\xa9", "\x7f", ""};
	char fast[64], slow[64], sf[4096], ss[4096], name[64], events[512];

	for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); k++) {
		for (int at = 0; at < 20; at++) {
			char *a;

			snprintf(name, sizeof(name), "%.*s%s%.*s", at, "aaaaaaaaaaaaaaaaaaaa", specials[k], 19 - at,
			         "bbbbbbbbbbbbbbbbbbbb");
			snprintf(events, sizeof(events),
			         "[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"1\",\"medium\":"
			         "\"gpu\",\"specs\":[{\"name\":\"%s\",\"uri\":\"x://h/%s\"}]}}]",
			         name, name);
			snprintf(fast, sizeof(fast), "#f%zu-%d:1", k, at);
			snprintf(slow, sizeof(slow), "#s%zu-%d:1", k, at);
			both(fast + 1, slow + 1, events, name);
			a = send_events(fast + 1, "", events);
			cr_expect(starts(a, "OK|"), "%s: %s", name, a);
			free(a);
			stored(fast, sf, sizeof(sf));
			stored(slow, ss, sizeof(ss));
			cr_expect_str_eq(sf, ss, "%s", name);
		}
	}
}

Test(report_read, usual_body_applies)
{
	char s[4096];
	char *a = send_events("u:1", "", "[" ADD("1", "gpu", "a", "x://h/1?q=1") "]");

	cr_expect(starts(a, "OK|Events reported successfully|[]|gen:32|required|0|"), "%s", a);
	free(a);
	stored("#u:1", s, sizeof(s));
	cr_expect_str_eq(s, "1:kvs#event_report_l2#gpu a=x://h/1?q=1&;");
}

static void expect_400(const char *body)
{
	char *out = NULL;
	int status = hc_request(&srv.meta, "POST", "/api/reportEvent", body, strlen(body), &out);

	cr_expect_eq(status, 400, "%s -> %d %s", body, status, out ? out : "");
	cr_expect_str_eq(out ? out : "", "{}", "%s", body);
	free(out);
}

#define HEAD "{\"instance_id\":\"e\",\"host_ip_port\":\"m:1\",\"storage_type\":\"ST_EVENT_REPORT_L2\","

Test(report_read, malformed_bodies_are_bad_requests)
{
	static const char *const bodies[] = {
	    HEAD "\"events\":[" ADD("1", "gpu", "a", "x://h/1") "]",
	    HEAD "\"events\":[" ADD("1", "gpu", "a", "x://h/1") "]}}",
	    HEAD "\"events\":[" ADD("1", "gpu", "a", "x://h/1") "]} x",
	    HEAD "\"events\":[" ADD("1", "gpu", "a", "x://h/1") ",]}",
	    HEAD "\"events\":[" ADD("1", "gpu", "a", "x://h/1") "],}",
	    HEAD "\"events\":[" ADD("1", "gpu", "a", "x://h/1") "],\"events\":[]}",
	    HEAD "\"host_ip_port\":\"m:1\",\"events\":[]}",
	    HEAD "\"events\":[{\"event_type\":\"EVENT_BLOCK_ADD\",\"event_type\":\"EVENT_BLOCK_ADD\"}]}",
	    HEAD "\"events\":[{\"block_add\":{},\"block_add\":{}}]}",
	    HEAD "\"events\":[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"medium\":\"a\",\"medium\":\"b\"}}]}",
	    HEAD "\"events\":[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"specs\":[{\"name\":\"a\","
	         "\"name\":\"b\"}]}}]}",
	    HEAD "\"events\":[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"specs\":[],\"specs\":[]}}]}",
	    HEAD "\"events\":[{\"event_type\" \"EVENT_BLOCK_ADD\"}]}",
	    HEAD "\"events\":[{\"event_type\":\"EVENT_BLOCK_ADD}]}",
	    HEAD "\"events\":[{\"event_type\":\"EVENT\\xBLOCK_ADD\"}]}",
	    HEAD "\"events\":[{\"event_type\":\"EVENT\tBLOCK_ADD\"}]}",
	    HEAD "\"events\":[{\"event_type\":\"EVENT_BLOCK_ADD\"} {}]}",
	    HEAD "\"events\":{}}",
	    HEAD "\"events\":\"[]\"}",
	    HEAD "\"trace_id\":7,\"events\":[]}",
	    "[" ADD("1", "gpu", "a", "x://h/1") "]",
	};

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		expect_400(bodies[i]);
	EXPECT_CODE(CALL("getCacheLocation", "{\"instance_id\":\"e\",\"block_keys\":[1]}"), "OK");
}

Test(report_read, event_limit_in_both_readers)
{
	static const char *const five = "[" ADD("1", "gpu", "a", "x://h/1") "," ADD("2", "gpu", "a", "x://h/2") "," ADD(
	    "3", "gpu", "a", "x://h/3") "," ADD("4", "gpu", "a", "x://h/4") "," ADD("1", "gpu", "b", "x://h/1") "]";
	char *a = send_events("n:1", "", five), *b = send_events("o:1", ",\"zz\":0", five);

	cr_expect(starts(a, "INVALID_ARGUMENT|too many events (limit 4)|[]|gen:0|-|0|"), "%s", a);
	cr_expect_str_eq(a, b);
	free(a);
	free(b);
}

Test(report_read, heartbeat_mediums_that_are_not_strings_are_ignored)
{
	EXPECT_CODE(CALL("reportEvent", HEAD "\"events\":[" REGISTER "]}"), "OK");
	EXPECT_CODE(CALL("reportEvent", HEAD "\"events\":[{\"event_type\":\"EVENT_HEARTBEAT\",\"heartbeat\":{"
	                                     "\"mediums\":[1,null,\"ssd\"]}}]}"),
	            "OK");
	EXPECT_CODE(CALL("reportEvent", HEAD "\"events\":[" ADD("1", "ssd", "a", "x://h/1") "]}"), "OK");
}

#define SNAPSHOT(blocks) "[{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_snapshot\":{\"blocks\":" blocks "}}]"
#define SB(key, medium, uri)                                                                                           \
	"{\"block_key\":\"" key "\",\"medium\":\"" medium "\",\"specs\":[{\"name\":\"a\",\"uri\":\"" uri "\"}]}"

/* Snapshots, each sent once per reporter (a second one would be rate limited): the code expected, fast or not. */
static const struct {
	const char *events, *code;
	bool fast;
} snapshots[] = {
    {SNAPSHOT("[" SB("1", "gpu", "x://h/1") "," SB("2", "gpu", "x://h/2") "," SB("2", "ssd", "x://h/2s") "]"), "OK",
     true},
    {SNAPSHOT("[" SB("3", "gpu", "x://h/3") "," SB("1", "gpu", "x://h/1") "," SB("2", "gpu", "x://h/2") "]"), "OK",
     true},
    {SNAPSHOT("[" SB("2", "ssd", "x://h/2s") "," SB("1", "gpu", "x://h/1") "," SB("2", "gpu", "x://h/2") "]"), "OK",
     true},
    {SNAPSHOT("[" SB("1", "gpu", "x://h/1") "," SB("1", "gpu", "x://h/1b") "]"), "INVALID_ARGUMENT", true},
    /* the same key written differently, out of order, far apart */
    {SNAPSHOT("[" SB("3", "gpu", "x://h/3") "," SB("1", "gpu", "x://h/1") "," SB("2", "gpu", "x://h/2") "," SB(
         "03", "gpu", "x://h/3b") "]"),
     "INVALID_ARGUMENT", true},
    {SNAPSHOT("[]"), "OK", true},
    {"[{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_snapshot\":{}}]", "INVALID_ARGUMENT", true},
    {SNAPSHOT("[" SB("1", "gpu", "x://h/1") "," SB("2", "gpu", "not a uri") "]"), "INVALID_ARGUMENT", true},
    {SNAPSHOT("[" SB("1", "gp#u", "x://h/1") "]"), "INVALID_ARGUMENT", true},
    {SNAPSHOT("[{\"block_key\":\"1\",\"medium\":\"gpu\"}]"), "INVALID_ARGUMENT", true},
    {SNAPSHOT("[{\"block_key\":\"1\",\"medium\":\"gpu\",\"specs\":[]}]"), "INVALID_ARGUMENT", true},
    {SNAPSHOT("[{\"block_key\":\"1\",\"medium\":\"gpu\",\"spec_names\":[\"z\"],\"specs\":[{\"name\":\"a\","
              "\"uri\":\"x:\\/\\/h\\/1\"}]}]"),
     "OK", true},
    {"[{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_add\":{},\"block_snapshot\":{\"blocks\":[]}}]",
     "INVALID_ARGUMENT", true},
    {"[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_snapshot\":{\"blocks\":[]}}]", "INVALID_ARGUMENT", true},
    {"[{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_snapshot\":{\"blocks\":[]}}," ADD("1", "gpu", "a",
                                                                                          "x://h/1") "]",
     "INVALID_ARGUMENT", true},
    /* what the fast reader leaves to jansson */
    {"[{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_snapshot\":{\"blocks\":{}}}]", "INVALID_ARGUMENT", false},
    {SNAPSHOT("[\"1\"]"), "INVALID_ARGUMENT", false},
    {SNAPSHOT("[{\"block_key\":\"1\",\"medium\":\"gpu\",\"zz\":\"1\",\"specs\":[{\"name\":\"a\",\"uri\":\"x://h/"
              "1\"}]}]"),
     "OK", false},
    {"[{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_snapshot\":{\"zz\":\"1\",\"blocks\":[" SB("1", "gpu",
                                                                                                  "x://h/1") "]}}]",
     "OK", false},
};

Test(report_read, snapshot_bodies_read_the_same)
{
	char fast[64], slow[64], sf[4096], ss[4096], what[32];

	for (size_t i = 0; i < sizeof(snapshots) / sizeof(snapshots[0]); i++) {
		long n0 = fast_reads();
		char *a, *b;

		snprintf(fast, sizeof(fast), "#sfast%zu:1", i);
		snprintf(slow, sizeof(slow), "#sslow%zu:1", i);
		snprintf(what, sizeof(what), "snapshot %zu", i);
		a = send_events(fast + 1, "", snapshots[i].events);
		cr_expect_eq(fast_reads() - n0, snapshots[i].fast, "%s: fast reader %s", what,
		             snapshots[i].fast ? "not used" : "used");
		b = send_events(slow + 1, ",\"zz\":0", snapshots[i].events);
		cr_expect(starts(a, snapshots[i].code) && a[strlen(snapshots[i].code)] == '|', "%s: %s", what, a);
		cr_expect_str_eq(a, b, "%s", what);
		free(a);
		free(b);
		stored(fast, sf, sizeof(sf));
		stored(slow, ss, sizeof(ss));
		cr_expect_str_eq(sf, ss, "%s: stored locations", what);
		if (strcmp(snapshots[i].code, "OK") == 0 && strstr(snapshots[i].events, "x://h/1\""))
			cr_expect(strstr(sf, "1:kvs#event_report_l2#gpu a=x://h/1?;"), "%s: %s", what, sf);
	}
}

/*
 * Hostile and sloppy input: malformed JSON, wrong types, huge bodies, too many keys, unknown paths and methods,
 * connection floods and garbage bytes are answered (or refused) cleanly, and the server keeps serving.
 */
#include "kvcm_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *const limits[] = {"kvcm.service.max_body_size=1MB", "kvcm.service.max_keys_per_request=1000",
                                     "kvcm.service.max_connections=8", NULL};

#define Q1 "{\"instance_id\":\"i\",\"block_keys\":[1]}"

static void up(void)
{
	srv_up(limits);
	cr_assert(register_simple(&srv.meta, "default", "i", 100));
	cr_assert(write_keys(&srv.meta, "i", "[1,2]"));
}

TestSuite(robust, .init = up, .fini = srv_down, .timeout = 30);

static int post(const char *api, const char *body, char **out)
{
	char path[64];

	snprintf(path, sizeof(path), "/api/%s", api);
	return hc_request(&srv.meta, "POST", path, body, strlen(body), out);
}

static void expect_400(const char *api, const char *body)
{
	char *out = NULL;
	int status = post(api, body, &out);

	cr_expect_eq(status, 400, "%s %s -> %d %s", api, body, status, out ? out : "");
	cr_expect_str_eq(out ? out : "", "{}");
	free(out);
}

/* Polls until the server has closed every connection but the fixture's two (meta, admin). */
static bool connections_settled(void)
{
	for (int i = 0; i < POLL_CAP; i++) {
		if (srv_metric("mmc_kvcm_http_connections") <= 2)
			return true;
		poll_pause();
	}
	return false;
}

static void still_serving(void)
{
	json_t *r = CALL("getCacheLocation", "{\"instance_id\":\"i\",\"block_keys\":[1,2]}");

	cr_assert_str_eq(code_of(r), "OK");
	cr_assert_eq(json_array_size(jpath(r, "locations")), 2);
	json_decref(r);
}

Test(robust, malformed_json)
{
	static const char *const bodies[] = {"",
	                                     "{",
	                                     "[]",
	                                     "null",
	                                     "123",
	                                     "\"s\"",
	                                     "{\"a\":1,\"a\":2}",
	                                     "{\"a\":}",
	                                     "{\"instance_id\":\"i\",\"block_keys\":[1,]}",
	                                     "\xff\xfe{}"};

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		expect_400("getCacheLocation", bodies[i]);
	still_serving();
}

Test(robust, wrong_types)
{
	static const char *const bodies[] = {
	    "{\"instance_id\":\"i\",\"block_keys\":\"abc\"}",
	    "{\"instance_id\":\"i\",\"block_keys\":[\"x\"]}",
	    "{\"instance_id\":\"i\",\"block_keys\":[1.5]}",
	    "{\"instance_id\":\"i\",\"block_keys\":[null]}",
	    "{\"instance_id\":\"i\",\"block_keys\":[{}]}",
	    "{\"instance_id\":\"i\",\"block_keys\":[1],\"block_mask\":{\"offset\":\"x\"}}",
	    "{\"instance_id\":\"i\",\"block_keys\":[1],\"block_mask\":{\"bool_masks\":{\"values\":[1]}}}",
	    "{\"instance_id\":\"i\",\"block_keys\":[1],\"block_mask\":{\"offset\":0,\"bool_masks\":{}}}",
	    "{\"instance_id\":\"i\",\"block_keys\":[1],\"block_mask\":[]}",
	    "{\"instance_id\":\"i\",\"block_keys\":[1],\"query_type\":{}}",
	    "{\"instance_id\":\"i\",\"block_keys\":[1],\"sw_size\":99999999999}",
	    "{\"instance_id\":\"i\",\"block_keys\":[1],\"location_spec_names\":[1]}",
	    "{\"instance_id\":\"i\",\"block_keys\":[123456789012345678901234567890]}",
	};

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		expect_400("getCacheLocation", bodies[i]);
	expect_400("startWriteCache", "{\"instance_id\":\"i\",\"block_keys\":[9],\"write_timeout_seconds\":\"ten\"}");
	expect_400("registerInstance", "{\"instance_id\":5}");
	expect_400("registerInstance", "{\"instance_id\":\"z\",\"model_deployment\":[]}");
	expect_400("registerInstance", "{\"instance_id\":\"z\",\"model_deployment\":{\"use_mla\":\"yes\"}}");
	expect_400("getInstanceInfo", "{\"trace_id\":7}");
	expect_400("finishWriteCache", "{\"instance_id\":\"i\",\"write_session_id\":[],\"success_blocks\":{}}");
	still_serving();
}

Test(robust, lenient_where_proto3_json_is)
{
	json_t *r;

	/* unknown keys, camelCase names, 64-bit keys as strings, enums as numbers and quoted numbers */
	r = CALL("getCacheLocation", "{\"instanceId\":\"i\",\"blockKeys\":[\"1\",2],\"zzz\":{\"deep\":[1,{}]},"
	                             "\"queryType\":\"1\"}");
	cr_expect_str_eq(code_of(r), "OK");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 2);
	json_decref(r);
	/* null is absent; an unknown enum name keeps the default */
	r = CALL("getCacheLocation", "{\"instance_id\":\"i\",\"block_keys\":[1],\"block_mask\":null,"
	                             "\"query_type\":\"QT_NO_SUCH_TYPE\"}");
	cr_expect_str_eq(code_of(r), "OK");
	json_decref(r);
	r = CALL("getCacheLocation", "{\"instance_id\":\"i\",\"block_keys\":[-9223372036854775808,"
	                             "9223372036854775807]}");
	cr_expect_str_eq(code_of(r), "OK");
	json_decref(r);
}

Test(robust, huge_bodies_and_too_many_keys)
{
	size_t n = 2u << 20;
	char *big = malloc(n + 64), *out = NULL;
	int status;
	json_t *r;
	char keys[8192];
	size_t len = 0;

	snprintf(big, 64, "{\"instance_id\":\"i\",\"pad\":\"");
	memset(big + strlen(big), 'a', n);
	strcpy(big + n, "\"}");
	status = post("getCacheLocation", big, &out);
	cr_expect(status == 413 || status == -1, "a body over kvcm.service.max_body_size is refused (got %d)", status);
	free(out);
	free(big);
	hc_close(&srv.meta);
	still_serving();
	len += (size_t)snprintf(keys + len, sizeof(keys) - len, "[0");
	for (int i = 1; i < 1001; i++)
		len += (size_t)snprintf(keys + len, sizeof(keys) - len, ",%d", i);
	snprintf(keys + len, sizeof(keys) - len, "]");
	r = CALL("getCacheLocation", "{\"instance_id\":\"i\",\"block_keys\":%s}", keys);
	cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT", "1001 keys over a limit of 1000");
	cr_expect(strstr(message_of(r), "1000"), "%s", message_of(r));
	json_decref(r);
	r = CALL("startWriteCache", "{\"instance_id\":\"i\",\"block_keys\":%s}", keys);
	cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT");
	json_decref(r);
	still_serving();
}

Test(robust, unknown_paths_and_methods)
{
	static const char *const paths[] = {"/api/noSuchApi",          "/api/",   "/api", "/", "/getCacheLocation",
	                                    "/api/getCacheLocation/x", "/metrics"};
	char *out = NULL;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		cr_expect_eq(hc_request(&srv.meta, "POST", paths[i], "{}", 2, &out), 404, "%s", paths[i]);
		free(out);
	}
	cr_expect_eq(hc_request(&srv.meta, "GET", "/api/getCacheLocation", NULL, 0, &out), 404);
	free(out);
	cr_expect_eq(hc_request(&srv.meta, "PUT", "/api/getCacheLocation", "{}", 2, &out), 404);
	free(out);
	/* a query string does not change the route */
	{
		int st = hc_request(&srv.meta, "POST", "/api/getCacheLocation?x=1", Q1, strlen(Q1), &out);

		cr_expect_eq(st, 200, "query string: %d %s", st, out ? out : "");
	}
	free(out);
	still_serving();
}

static int raw_connect(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(srv.m.http_port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	return fd;
}

Test(robust, connection_limit_and_garbage)
{
	struct hc c[10];
	int refused = 0, fd;
	char *out;

	for (int i = 0; i < 10; i++) {
		int status;

		c[i].fd = -1;
		c[i].port = srv.m.http_port;
		cr_assert_eq(hc_connect(&c[i], srv.m.http_port), 0);
		status = hc_request(&c[i], "POST", "/api/getCacheLocation", Q1, strlen(Q1), &out);
		refused += status == 503;
		free(out);
	}
	/* the fixture's own connection (from up) counts too: 8 allowed in all */
	cr_expect_geq(refused, 2, "connections over kvcm.service.max_connections are refused");
	for (int i = 0; i < 10; i++)
		hc_close(&c[i]);
	cr_assert(connections_settled(), "the server did not see the connections close");
	fd = raw_connect();
	cr_assert(write(fd, "\x16\x03\x01garbage\r\n\r\n", 15) == 15);
	close(fd);
	fd = raw_connect();
	cr_assert(write(fd, "POST /api/getCacheLocation HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"tru", 65) == 65);
	close(fd);
	cr_assert(connections_settled(), "the server did not drop the garbage connections");
	still_serving();
}

/*
 * KVCM on the Redis metadata store (a private redis-server, appendfsync always) with Redis killed and restarted
 * while the server serves: writes are not acknowledged while Redis is down, reads keep answering from memory,
 * writes recover by themselves once Redis is back, and everything acknowledged survives a kill -9 of the server.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kvcm_test.h"
#include "redis_proc.h"

static struct redis_proc redis;
static char store_kv[128];

static void up(void)
{
	const char *extra[] = {store_kv, NULL};

	cr_assert_eq(redis_proc_start(&redis, "always"), 0, "redis-server must start");
	snprintf(store_kv, sizeof(store_kv), "kvcm.registry_storage.uri=%s", redis.uri);
	srv_up(extra);
}

static void down(void)
{
	srv_down();
	redis_proc_cleanup(&redis);
}

TestSuite(redis_store, .init = up, .fini = down, .timeout = 90);

static long location_len(const char *keys)
{
	json_t *r = CALL("getCacheLocationLen", "{\"instance_id\":\"a\",\"block_keys\":%s}", keys);
	json_t *len = jpath(r, "cache_location_len"); /* an int64 as a string */
	long n = json_is_string(len) ? atol(json_string_value(len)) : (long)json_integer_value(len);

	json_decref(r);
	return n;
}

/* /metrics counts the failed commits under the store's own name */
static void expect_commit_failures_seen(void)
{
	const char *name = "\nmmc_store_commit_failures_total{store=\"redis\"} ";
	char *body = NULL, *p;

	cr_assert_eq(hc_request(&srv.admin, "GET", "/metrics", NULL, 0, &body), 200);
	p = strstr(body, name);
	cr_expect(p && atol(p + strlen(name)) > 0, "%s", body);
	cr_expect(strstr(body, "\nmmc_store_commits_total{store=\"redis\"} "), "%s", body);
	free(body);
}

Test(redis_store, writes_wait_out_a_redis_restart_and_nothing_acknowledged_is_lost)
{
	const char *extra[] = {store_kv, NULL};
	bool ok = false;

	cr_assert(register_simple(&srv.meta, "default", "a", 4096));
	cr_assert(write_keys(&srv.meta, "a", "[1,2]"));
	redis_proc_kill(&redis);
	cr_assert_not(write_keys(&srv.meta, "a", "[3]"), "a write while Redis is down is not acknowledged");
	cr_assert_not(register_simple(&srv.meta, "default", "b", 4096), "nor is a registration");
	expect_commit_failures_seen();
	EXPECT_CODE(CALL("getInstanceInfo", "{\"instance_id\":\"a\"}"), "OK");
	cr_assert_eq(location_len("[1,2]"), 2, "reads answer from memory");
	cr_assert_eq(redis_proc_restart(&redis), 0);
	for (int i = 0; i < POLL_CAP && !ok; i++)
		if (!(ok = write_keys(&srv.meta, "a", "[4]")))
			poll_pause();
	cr_assert(ok, "writes recover by themselves");
	metaserver_kill(&srv.m);
	cr_assert_eq(kvcm_srv_restart(&srv, extra), 0);
	EXPECT_CODE(CALL("getInstanceInfo", "{\"instance_id\":\"a\"}"), "OK");
	cr_assert_eq(location_len("[1,2,4]"), 3, "every acknowledged block is back");
}

/* Redis refuses writes (as it does with too few replicas): every commit fails until refusing(false). */
static void refusing(bool on)
{
	char reply[256];

	cr_assert_eq(redis_proc_cmd(&redis,
	                            on ? "CONFIG SET min-replicas-to-write 1" : "CONFIG SET min-replicas-to-write 0",
	                            reply, sizeof(reply)),
	             0);
	cr_assert_str_eq(reply, "+OK");
}

/*
 * A change whose commit failed was answered INTERNAL_ERROR but stays in memory, so its retry finds it made and writes
 * nothing: that OK, and every later call building on it (a write into the instance), used to rest on a record that
 * was never stored. After a kill -9 the registration was gone and the removed block served again. What a failed
 * commit held now goes to the store again, with the next write.
 */
Test(redis_store, a_retry_after_a_failed_commit_is_durable_when_answered)
{
	const char *extra[] = {store_kv, NULL};

	cr_assert(register_simple(&srv.meta, "default", "a", 4096));
	cr_assert(write_keys(&srv.meta, "a", "[1,2]"));
	refusing(true);
	cr_assert_not(register_simple(&srv.meta, "default", "b", 4096), "refused: not acknowledged");
	EXPECT_CODE(CALL("removeCache", "{\"instance_id\":\"a\",\"block_keys\":[1]}"), "INTERNAL_ERROR");
	refusing(false);
	cr_assert(register_simple(&srv.meta, "default", "b", 4096), "the retry");
	EXPECT_CODE(CALL("removeCache", "{\"instance_id\":\"a\",\"block_keys\":[1]}"), "OK");
	cr_assert(write_keys(&srv.meta, "b", "[7]"));
	metaserver_kill(&srv.m);
	cr_assert_eq(kvcm_srv_restart(&srv, extra), 0);
	EXPECT_CODE(CALL("getInstanceInfo", "{\"instance_id\":\"b\"}"), "OK");
	cr_expect_eq(location_len("[1]"), 0, "the acknowledged removal is not undone");
	cr_expect_eq(location_len("[2]"), 1);
	{
		json_t *r = CALL("getCacheLocationLen", "{\"instance_id\":\"b\",\"block_keys\":[7]}");

		cr_expect_str_eq(code_of(r), "OK", "%s", message_of(r));
		json_decref(r);
	}
}

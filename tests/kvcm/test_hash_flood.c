/*
 * Hash flooding the block index: block keys a client computed to share one bucket of the unkeyed hash the index used
 * to take (tests/support/flood_keys.c). The index is keyed per process now, so a big request costs what it costs
 * with random keys. With the unkeyed hash a startWriteCache walked one chain for every key: 112 s instead of 0.35 s
 * for 65536 keys, with every other request waiting behind it.
 */
#include "kvcm_test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "flood_keys.h"

/* Half of kvcm.service.max_keys_per_request's default: the unkeyed walk takes 30 s, a failure inside the timeout. */
#define NKEYS 32768
/* A guard against a quadratic walk (minutes), far above a normal request (under a second), not a speed claim. */
#define BOUND_MS 10000

TestSuite(hash_flood, .timeout = 300);

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* {"instance_id":"i","block_keys":[k0,k1,...],"write_timeout_seconds":30} */
static char *write_body(const int64_t *keys, size_t n, size_t *len)
{
	size_t cap = n * 21 + 128, at;
	char *b = malloc(cap);

	cr_assert_not_null(b);
	at = (size_t)snprintf(b, cap, "{\"instance_id\":\"i\",\"block_keys\":[");
	for (size_t i = 0; i < n; i++)
		at += (size_t)snprintf(b + at, cap - at, "%s%" PRId64, i ? "," : "", keys[i]);
	at += (size_t)snprintf(b + at, cap - at, "],\"write_timeout_seconds\":30}");
	*len = at;
	return b;
}

Test(hash_flood, block_keys_sharing_one_unkeyed_bucket_do_not_stall_a_write, .fini = srv_down)
{
	int64_t *keys = malloc(NKEYS * sizeof(*keys));
	char *body, *out = NULL;
	size_t len;
	uint64_t t0, ms;
	json_t *r;

	cr_assert_not_null(keys);
	flood_block_keys(keys, NKEYS);
	body = write_body(keys, NKEYS, &len);
	srv_up(NULL);
	cr_assert(register_simple(&srv.meta, "default", "i", 64));
	t0 = now_ms();
	cr_assert_eq(hc_request(&srv.meta, "POST", "/api/startWriteCache", body, len, &out), 200);
	ms = now_ms() - t0;
	r = json_loads(out, 0, NULL);
	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	cr_assert_eq(json_array_size(jpath(r, "locations")), NKEYS, "one location per key");
	cr_expect_lt(ms, BOUND_MS, "a %d-key startWriteCache of colliding keys took %llu ms", NKEYS,
	             (unsigned long long)ms);
	cr_expect(register_simple(&srv.meta, "default", "j", 64), "the server stopped serving");
	json_decref(r);
	free(out);
	free(body);
	free(keys);
}

/* The registry's order follows the per-process key: listings sort by id, so that every server lists alike. */
Test(hash_flood, instances_are_listed_in_id_order, .fini = srv_down)
{
	static const char *const ids[] = {"m", "c", "x", "a", "q", "f", "z", "b", "k", "d"};
	const size_t n = sizeof(ids) / sizeof(ids[0]);
	json_t *r, *info;

	srv_up(NULL);
	for (size_t i = 0; i < n; i++)
		cr_assert(register_simple(&srv.meta, "default", ids[i], 64));
	r = ADMIN("listInstanceInfo", "{}");
	info = jpath(r, "instance_info");
	cr_assert_eq(json_array_size(info), n);
	for (size_t i = 1; i < n; i++) {
		const char *a = json_string_value(jpath(json_array_get(info, i - 1), "instance_id"));
		const char *b = json_string_value(jpath(json_array_get(info, i), "instance_id"));

		cr_assert(a && b);
		cr_expect_lt(strcmp(a, b), 0, "instance %zu (%s) listed after %s", i, b, a);
	}
	json_decref(r);
}

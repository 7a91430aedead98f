/*
 * 16 concurrent clients write and query disjoint and overlapping keys: every key ends with exactly one serving
 * location, none lost and none duplicated.
 */
#include "kvcm_test.h"

#include <pthread.h>

#define CLIENTS 16
#define ROUNDS  20
#define BATCH   8
#define SHARED  64

static void up(void)
{
	srv_up(NULL);
	cr_assert(register_simple(&srv.meta, "default", "c", 256));
}

TestSuite(concurrency, .init = up, .fini = srv_down, .timeout = 60);

struct worker {
	int id;
	int errors;
	char why[256];
};

static void keys_json(char *out, size_t cap, long first, int n)
{
	size_t len = (size_t)snprintf(out, cap, "[%ld", first);

	for (int i = 1; i < n; i++)
		len += (size_t)snprintf(out + len, cap - len, ",%ld", first + i);
	snprintf(out + len, cap - len, "]");
}

static void fail(struct worker *w, const char *what, json_t *r)
{
	if (!w->errors++)
		snprintf(w->why, sizeof(w->why), "%s: %s %s", what, code_of(r), message_of(r));
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct hc c = {-1, srv.m.http_port};
	char keys[512];

	for (int round = 0; round < ROUNDS; round++) {
		json_t *r;

		/* disjoint: this client's own keys */
		keys_json(keys, sizeof(keys), 1000000L * (w->id + 1) + round * BATCH, BATCH);
		if (!write_keys(&c, "c", keys))
			fail(w, "write own keys", NULL);
		r = hc_call(&c, "getCacheLocation", "{\"instance_id\":\"c\",\"block_keys\":%s}", keys);
		if (json_array_size(jpath(r, "locations")) != BATCH)
			fail(w, "own keys not all served", r);
		json_decref(r);
		/* overlapping: every client writes the same shared keys */
		keys_json(keys, sizeof(keys), (round * BATCH) % SHARED, BATCH);
		if (!write_keys(&c, "c", keys))
			fail(w, "write shared keys", NULL);
		/* another client may still be writing some of them: only the shape is certain here */
		r = hc_call(&c, "getCacheLocation", "{\"instance_id\":\"c\",\"query_type\":1,\"block_keys\":%s}", keys);
		if (strcmp(code_of(r), "OK") != 0 || json_array_size(jpath(r, "locations")) != BATCH)
			fail(w, "shared batch get", r);
		json_decref(r);
	}
	hc_close(&c);
	return NULL;
}

/* Every key of [first, first+n) has exactly one location, SERVING. */
static void check_keys(long first, int n)
{
	char keys[1 << 14];
	json_t *r, *items;

	keys_json(keys, sizeof(keys), first, n);
	r = CALL("getCacheMetaDetail", "{\"instance_id\":\"c\",\"block_keys\":%s}", keys);
	items = jpath(r, "items");
	cr_assert_eq(json_array_size(items), (size_t)n);
	for (int i = 0; i < n; i++) {
		json_t *locs = jpath(json_array_get(items, (size_t)i), "locations");

		cr_expect_eq(json_array_size(locs), 1, "key %ld has %zu locations", first + i, json_array_size(locs));
		cr_expect_str_eq(json_string_value(jpath(json_array_get(locs, 0), "status")), "CLS_SERVING", "key %ld",
		                 first + i);
	}
	json_decref(r);
}

Test(concurrency, sixteen_clients)
{
	pthread_t t[CLIENTS];
	struct worker w[CLIENTS];
	json_t *r;

	for (int i = 0; i < CLIENTS; i++) {
		w[i] = (struct worker){.id = i};
		cr_assert_eq(pthread_create(&t[i], NULL, run, &w[i]), 0);
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(t[i], NULL);
		cr_expect_eq(w[i].errors, 0, "client %d: %d errors, first: %s", i, w[i].errors, w[i].why);
	}
	for (int i = 0; i < CLIENTS; i++)
		check_keys(1000000L * (i + 1), ROUNDS * BATCH);
	check_keys(0, SHARED);
	r = ADMIN("listInstanceInfo", "{}");
	json_decref(r);
	r = CALL("getCacheLocationLen", "{\"instance_id\":\"c\",\"query_type\":1,\"block_keys\":[0,1,2,63,64]}");
	cr_expect_str_eq(json_string_value(jpath(r, "cache_location_len")), "4");
	json_decref(r);
}

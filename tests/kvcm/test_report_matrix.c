/*
 * The reference's reportEvent test matrix (kvcm.md §6.13) rows not covered by test_report_event.c: combined
 * requests, concurrent reporters and connections, snapshot/delta ordering, cleanup against newer writes, the
 * liveness gate on every query entry point, and restart re-convergence. Concurrency here is real: several
 * connections from several threads, with the outcome checked against what a serial order allows.
 */
#include "report_test.h"

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const debug_on[] = {DEBUG_SERVICE, NULL};

static void up(void)
{
	report_up(debug_on);
}

TestSuite(report_matrix, .init = up, .fini = srv_down, .timeout = 60);

#define THREADS 8

/* n ADD events of spec on keys first, first + step, ... as a JSON array text (malloc'd). */
static char *adds(long first, long n, long step, const char *spec, const char *host)
{
	size_t cap = (size_t)n * 160 + 16, len = 1;
	char *s = malloc(cap);

	cr_assert(s);
	s[0] = '[';
	for (long i = 0; i < n; i++) {
		long key = first + i * step;

		len += (size_t)snprintf(s + len, cap - len,
		                        "%s{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"%ld\","
		                        "\"medium\":\"gpu\",\"specs\":[{\"name\":\"%s\",\"uri\":\"x://%s/%ld/%s\"}]}}",
		                        i ? "," : "", key, spec, host, key, spec);
	}
	snprintf(s + len, cap - len, "]");
	return s;
}

/* Whether getCacheMeta still has a record for key. */
static bool has_meta(long key)
{
	json_t *r = CALL("getCacheMeta", "{\"instance_id\":\"e\",\"block_keys\":[%ld]}", key);
	bool yes = r && !strstr(json_string_value(json_array_get(jpath(r, "metas"), 0)), "CLS_NOT_FOUND");

	json_decref(r);
	return yes;
}

/* Polls until key's metadata is gone (a background cleanup finished with it); false after 10 s. */
static bool meta_gone(long key)
{
	for (int i = 0; i < 1000; i++) {
		if (!has_meta(key))
			return true;
		usleep(10000);
	}
	return false;
}

Test(report_matrix, fresh_register_snapshot_heartbeat_in_any_order) /* */
{
	json_t *r =
	    report("r3a:1", L2, "[" HEARTBEAT "," SNAP("[" SBLOCK("1", "gpu", "a", "x://a/1") "]") "," REGISTER "]");

	cr_expect_str_eq(code_of(r), "OK", "%s", message_of(r));
	cr_expect_eq(strlen(gen_of(r)), 32);
	cr_expect(json_is_false(jpath(r, "snapshot_required")), "a snapshot committed in the request");
	json_decref(r);
	r = report("r3b:1", L2, "[" SNAP("[" SBLOCK("2", "gpu", "a", "x://b/2") "]") "," REGISTER "," HEARTBEAT "]");
	cr_expect_str_eq(code_of(r), "OK", "%s", message_of(r));
	cr_expect(json_is_false(jpath(r, "snapshot_required")));
	json_decref(r);
	cr_expect(visible(1) && visible(2));
}

Test(report_matrix, fresh_add_or_delete_before_register) /* */
{
	json_t *r = report("r4a:1", L2, "[" ADD("1", "gpu", "a", "x://a/1") "," REGISTER "," HEARTBEAT "]");

	cr_expect_str_eq(code_of(r), "OK", "%s", message_of(r));
	cr_expect_eq(json_array_size(jpath(r, "item_results")), 0);
	cr_expect_eq(strlen(gen_of(r)), 32);
	cr_expect(json_is_true(jpath(r, "snapshot_required")));
	json_decref(r);
	cr_expect(visible(1));
	r = report("r4b:1", L2, "[" DEL("2", "gpu", "a") "," REGISTER "]");
	cr_expect_str_eq(code_of(r), "OK", "%s", message_of(r));
	cr_expect_eq(strlen(gen_of(r)), 32);
	json_decref(r);
}

Test(report_matrix, first_delete_creates_a_reusable_generation) /* D-03 */
{
	json_t *r = report("d3:1", L2, "[" DEL("9", "gpu", "a") "," DEL("9", "cpu", "b") "]");
	char gen[40];

	cr_expect_str_eq(code_of(r), "OK", "a missing DELETE is idempotent OK");
	cr_expect_eq(strlen(gen_of(r)), 32, "even when nothing was deleted");
	cr_expect(json_is_true(jpath(r, "snapshot_required")));
	snprintf(gen, sizeof(gen), "%s", gen_of(r));
	json_decref(r);
	r = report("d3:1", L2, "[" ADD("9", "gpu", "a", "x://d/9") "]");
	cr_expect_str_eq(gen_of(r), gen);
	cr_expect(json_is_false(jpath(r, "snapshot_required")));
	json_decref(r);
	{
		char u[1024], want[1024];

		uris(9, u, sizeof(u));
		snprintf(want, sizeof(want), "x://d/9?s_version=%s", gen);
		cr_expect_str_eq(u, want);
	}
}

/* Threads that start together, each on its own connection. */
struct racer {
	pthread_t t;
	int id;
	const char *body; /* events; NULL: the racer builds its own */
	const char *host;
	const char *type; /* NULL: L2 */
	char code[64], gen[40], item0[64];
	bool required;
	int errors;
};

static pthread_barrier_t start_line;

static void *race(void *arg)
{
	struct racer *w = arg;
	struct hc c = {-1, srv.m.http_port};
	char own[512];
	json_t *r;

	if (!w->body)
		snprintf(own, sizeof(own), "[" ADD("1", "gpu", "s%d", "x://d/s%d") "]", w->id, w->id);
	pthread_barrier_wait(&start_line);
	r = report_on(&c, "race", w->host, w->type ? w->type : L2, w->body ? w->body : own);
	snprintf(w->code, sizeof(w->code), "%s", r ? code_of(r) : "no reply");
	snprintf(w->gen, sizeof(w->gen), "%s", r ? gen_of(r) : "");
	snprintf(w->item0, sizeof(w->item0), "%s", item_of(r, 0));
	w->required = r && json_is_true(jpath(r, "snapshot_required"));
	json_decref(r);
	hc_close(&c);
	return NULL;
}

static void run_racers(struct racer *w, int n)
{
	pthread_barrier_init(&start_line, NULL, (unsigned)n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(pthread_create(&w[i].t, NULL, race, &w[i]), 0);
	for (int i = 0; i < n; i++)
		pthread_join(w[i].t, NULL);
	pthread_barrier_destroy(&start_line);
}

Test(report_matrix, concurrent_first_deltas_make_one_generation) /* D-06 */
{
	struct racer w[THREADS] = {0};
	int required = 0;
	char u[4096];

	for (int i = 0; i < THREADS; i++) {
		w[i].id = i;
		w[i].host = "d6:1";
	}
	run_racers(w, THREADS);
	for (int i = 0; i < THREADS; i++) {
		cr_expect_str_eq(w[i].code, "OK", "racer %d", i);
		cr_expect_str_eq(w[i].gen, w[0].gen, "racer %d: one generation", i);
		required += w[i].required;
	}
	cr_expect_eq(strlen(w[0].gen), 32);
	cr_expect_eq(required, 1, "exactly one request created the generation");
	EXPECT_CODE(report("d6:1", L2, "[" HEARTBEAT "]"), "OK"); /* deltas do not refresh liveness */
	uris(1, u, sizeof(u));
	for (int i = 0; i < THREADS; i++) {
		char want[64];

		snprintf(want, sizeof(want), "x://d/s%d?s_version=%s", i, w[0].gen);
		cr_expect(strstr(u, want), "spec s%d kept: %s", i, u);
	}
}

struct writer {
	pthread_t t;
	int id, errors;
};

/* 20 rounds of ADDs of this writer's spec to blocks 1..20, each round on the same connection. */
static void *write_specs(void *arg)
{
	struct writer *w = arg;
	struct hc c = {-1, srv.m.http_port};
	char spec[16], host[16];

	snprintf(spec, sizeof(spec), "s%d", w->id);
	snprintf(host, sizeof(host), "d10:1");
	pthread_barrier_wait(&start_line);
	for (int round = 0; round < 20; round++) {
		char *ev = adds(1, 20, 1, spec, host), *body = malloc(strlen(ev) + sizeof(HEARTBEAT) + 2);
		json_t *r;

		/* a loaded machine may take longer than heartbeat_timeout_ms + cleanup_grace_ms (1 s) for all rounds;
		 * without a heartbeat the reporter would be unregistered mid-test and its deltas refused */
		cr_assert(body);
		sprintf(body, "[" HEARTBEAT ",%s", ev + 1);
		free(ev);
		ev = body;
		r = report_on(&c, "w", host, L2, ev);

		w->errors += !r || strcmp(code_of(r), "OK") != 0;
		json_decref(r);
		free(ev);
	}
	hc_close(&c);
	return NULL;
}

Test(report_matrix, concurrent_writes_to_different_specs_are_kept) /* D-10 */
{
	struct writer w[THREADS] = {0};
	char u[8192];

	pthread_barrier_init(&start_line, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		w[i].id = i;
		cr_assert_eq(pthread_create(&w[i].t, NULL, write_specs, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(w[i].t, NULL);
		cr_expect_eq(w[i].errors, 0, "writer %d", i);
	}
	pthread_barrier_destroy(&start_line);
	EXPECT_CODE(report("d10:1", L2, "[" HEARTBEAT "]"), "OK"); /* deltas do not refresh liveness */
	for (long key = 1; key <= 20; key++) {
		uris(key, u, sizeof(u));
		for (int i = 0; i < THREADS; i++) {
			char want[64];

			snprintf(want, sizeof(want), "x://d10:1/%ld/s%d?", key, i);
			cr_expect(strstr(u, want), "block %ld lost spec s%d: %s", key, i, u);
		}
	}
}

Test(report_matrix, snapshot_and_delta_converge_in_either_order) /* S-07 */
{
	struct racer w[2] = {0};
	char u[2048];
	json_t *r;

	/* serial: snapshot then delta keeps both; delta then snapshot keeps what the snapshot says */
	EXPECT_CODE(report("s7a:1", L2, "[" SNAP("[" SBLOCK("1", "gpu", "a", "x://a/1") "]") "]"), "OK");
	EXPECT_CODE(report("s7a:1", L2, "[" ADD("2", "gpu", "a", "x://a/2") "]"), "OK");
	cr_expect(visible(1) && visible(2), "a post-commit delta is under the committed generation");
	EXPECT_CODE(report("s7b:1", L2, "[" ADD("4", "gpu", "a", "x://b/4") "]"), "OK");
	EXPECT_CODE(report("s7b:1", L2, "[" SNAP("[" SBLOCK("3", "gpu", "a", "x://b/3") "]") "]"), "OK");
	cr_expect(visible(3) && !visible(4), "the snapshot fences the earlier delta out");
	/* concurrent: the result is the one of the order the replies reveal */
	r = report("s7c:1", L2, "[" ADD("9", "gpu", "z", "x://c/9") "]");
	json_decref(r);
	w[0].host = w[1].host = "s7c:1";
	w[0].body = "[" SNAP("[" SBLOCK("5", "gpu", "a", "x://c/5a") "]") "]";
	w[1].body = "[" ADD("5", "gpu", "b", "x://c/5b") "]";
	run_racers(w, 2);
	cr_expect_str_eq(w[0].code, "OK");
	cr_expect_str_eq(w[1].code, "OK");
	EXPECT_CODE(report("s7c:1", L2, "[" HEARTBEAT "]"), "OK");
	uris(5, u, sizeof(u));
	cr_expect(strstr(u, "x://c/5a?"), "%s", u);
	if (strcmp(w[1].gen, w[0].gen) == 0)
		cr_expect(strstr(u, "x://c/5b?"), "the delta came after the snapshot and is kept: %s", u);
	else
		cr_expect(!strstr(u, "x://c/5b?"), "the delta came first; the snapshot replaced the block: %s", u);
	cr_expect(!visible(9));
}

/*
 * S-10, S-11: a cleanup scan spans loop turns (4096 blocks each); writes it meets from a newer attempt, here a
 * lifecycle begun by REGISTER right after HOST_DOWN, are not its to remove. The blocks scanned last are re-added.
 */
Test(report_matrix, cleanup_spares_newer_writes)
{
	const long n = 60000, k = 200;
	char *ev = adds(1, n, 1, "a", "cl:1"), *again, *body;
	json_t *r = report("cl:1", L2, ev);

	free(ev);
	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	json_decref(r);
	again = adds(n - k + 1, k, 1, "b", "cl:1");
	cr_assert(asprintf(&body, "[" REGISTER ",%s", again + 1) > 0);
	free(again);
	EXPECT_CODE(report("cl:1", L2, "[" HOST_DOWN "]"), "OK"); /* cleanup of every location, in the background */
	r = report("cl:1", L2, body);
	free(body);
	cr_expect_str_eq(code_of(r), "OK", "%s", message_of(r));
	json_decref(r);
	cr_assert(meta_gone(1), "the cleanup finishes");
	cr_assert(meta_gone(n - k));
	EXPECT_CODE(report("cl:1", L2, "[" HEARTBEAT "]"), "OK");
	for (long key = n - k + 1; key <= n; key++) {
		char u[2048];

		uris(key, u, sizeof(u));
		/* a location the new lifecycle wrote is kept whole: the old spec merged into it may stay (§6.12) */
		cr_expect(strstr(u, "/b?"), "block %ld: %s", key, u);
	}
}

Test(report_matrix, cleanup_deletes_metadata_only) /* S-12 */
{
	char path[512], uri[600], ev[2048];
	struct stat st;
	FILE *f;

	srv_clock_freeze();
	snprintf(path, sizeof(path), "%s/reporter_block_1", srv.root);
	f = fopen(path, "w");
	cr_assert(f);
	fputs("engine data", f);
	fclose(f);
	snprintf(uri, sizeof(uri), "file://%s", path);
	snprintf(ev, sizeof(ev),
	         "[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"1\",\"medium\":\"disk\","
	         "\"specs\":[{\"name\":\"a\",\"uri\":\"%s\"}]}},{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{"
	         "\"block_key\":\"2\",\"medium\":\"disk\",\"specs\":[{\"name\":\"a\",\"uri\":\"%s\"}]}}]",
	         uri, uri);
	EXPECT_CODE(report("s12:1", L2, ev), "OK");
	EXPECT_CODE(report("s12:1", L2, "[" SNAP("[" SBLOCK("3", "gpu", "a", "x://s/3") "]") "]"), "OK");
	cr_expect(meta_gone(1) && meta_gone(2), "omitted blocks' metadata is removed");
	EXPECT_CODE(report("s12:1", L2, "[" HOST_DOWN "]"), "OK");
	cr_expect(meta_gone(3));
	srv_clock_advance(3600000); /* past any delay_before_delete_ms */
	cr_expect(srv_deletes_done(), "a physical delete would have finished on the I/O threads");
	cr_expect_eq(stat(path, &st), 0, "the reporter's data is never deleted");
}

Test(report_matrix, snapshot_of_an_unavailable_reporter_commits_hidden) /* S-13 */
{
	json_t *r;
	char gen[40];

	srv_clock_freeze();
	r = report("s13:1", L2, "[" ADD("1", "gpu", "a", "x://s/1") "]");

	json_decref(r);
	srv_clock_advance(600); /* past heartbeat_timeout_ms (400), within the grace (600) */
	cr_expect(!visible(1));
	r = report("s13:1", L2,
	           "[" SNAP("[" SBLOCK("1", "gpu", "a", "x://s/1") "," SBLOCK("2", "gpu", "a", "x://s/2") "]") "]");
	cr_expect_str_eq(code_of(r), "OK", "%s", message_of(r));
	snprintf(gen, sizeof(gen), "%s", gen_of(r));
	json_decref(r);
	cr_expect(!visible(1) && !visible(2), "committed, but the reporter is still unavailable");
	r = report("s13:1", L2, "[" HEARTBEAT "]");
	cr_expect_str_eq(gen_of(r), gen, "the heartbeat keeps the snapshot's generation");
	json_decref(r);
	cr_expect(visible(1) && visible(2));
}

/* Specs with a URI in a getCacheLocation reply's first row (a miss is a placeholder of empty URIs). */
static size_t served_specs(json_t *r)
{
	json_t *specs = jpath(json_array_get(jpath(r, "locations"), 0), "location_specs");
	size_t n = 0;

	for (size_t i = 0; i < json_array_size(specs); i++)
		n += json_string_value(jpath(json_array_get(specs, i), "uri"))[0] != '\0';
	return n;
}

/* What each query entry point sees of key 1, as "location/len/hosts/by_backend/write". */
static void entry_points(char *out, size_t cap)
{
	json_t *a = CALL("getCacheLocation", "{\"instance_id\":\"e\",\"query_type\":1,\"block_keys\":[1]}");
	json_t *b = CALL("getCacheLocationLen", "{\"instance_id\":\"e\",\"query_type\":1,\"block_keys\":[1]}");
	json_t *c = CALL("getHostCacheState", "{\"instance_id\":\"e\",\"block_cache_keys\":[1]}");
	json_t *d = CALL("getCacheLocationsByBackend",
	                 "{\"instance_id\":\"e\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":[1],"
	                 "\"backend_selectors\":[{\"backend_type\":\"ST_EVENT_REPORT_L2\",\"strategy\":"
	                 "\"LSS_V6D_PREFIX\"}]}");
	json_t *w = CALL("startWriteCache", "{\"instance_id\":\"e\",\"block_keys\":[1],\"write_timeout_seconds\":5}");

	snprintf(out, cap, "%zu/%s/%zu/%zu/%zu", served_specs(a), json_string_value(jpath(b, "cache_location_len")),
	         json_array_size(jpath(c, "hosts")),
	         json_array_size(jpath(json_array_get(jpath(d, "key_locations"), 0), "locations")),
	         json_array_size(jpath(w, "locations")));
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(d);
	json_decref(w);
}

Test(report_matrix, liveness_gates_every_query_entry_point) /* */
{
	char seen[128];

	srv_clock_freeze();
	EXPECT_CODE(report("q4:1", L2, "[" REGISTER "," ADD("1", "gpu", "tp0", "x://q/1") "]"), "OK");
	entry_points(seen, sizeof(seen));
	cr_expect_str_eq(seen, "1/1/1/1/0", "live: seen everywhere, and counted as a replica by writers: %s", seen);
	srv_clock_advance(600); /* past heartbeat_timeout_ms (400) */
	entry_points(seen, sizeof(seen));
	cr_expect_str_eq(seen, "0/0/0/0/1", "timed out: hidden everywhere, and no replica: %s", seen);
	EXPECT_CODE(report("q4:1", L2, "[" HEARTBEAT "]"), "OK");
	entry_points(seen, sizeof(seen));
	cr_expect_str_eq(seen, "1/1/1/1/0");
}

Test(report_matrix, unknown_hosts_are_invisible_after_a_restart) /* Q-03 (the host part) */
{
	EXPECT_CODE(report("q3a:1", L2, "[" ADD("1", "gpu", "a", "x://qa/1") "]"), "OK");
	EXPECT_CODE(report("q3b:1", L2, "[" ADD("2", "gpu", "a", "x://qb/2") "]"), "OK");
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_assert_eq(kvcm_srv_restart(&srv, NULL), 0);
	EXPECT_CODE(report("q3a:1", L2, "[" HEARTBEAT "]"), "OK");
	cr_expect(visible(1));
	cr_expect(!visible(2), "a host this process has not heard from is unknown");
	cr_expect(has_meta(2), "but its metadata is kept");
}

Test(report_matrix, grace_expiry_unregisters_and_cleans_up) /* L-04 */
{
	json_t *r;

	srv_clock_freeze();
	EXPECT_CODE(report("l4:1", L2, "[" REGISTER "," ADD("1", "gpu", "a", "x://l/1") "]"), "OK");
	EXPECT_CODE(report("l4b:1", L2, "[" REGISTER "," ADD("2", "gpu", "a", "x://l/2") "]"), "OK");
	for (int i = 0; i < 11; i++) { /* keep the other host alive past l4's timeout + grace (1 s) */
		srv_clock_advance(100);
		EXPECT_CODE(report("l4b:1", L2, "[" HEARTBEAT "]"), "OK");
	}
	cr_expect(meta_gone(1), "unregistered past the grace, and its metadata cleaned up");
	cr_expect(visible(2) && has_meta(2), "another host is unaffected");
	EXPECT_CODE(report("l4:1", L2, "[" ADD("1", "gpu", "a", "x://l/1") "]"), "NODE_NOT_REGISTERED");
	r = report("l4:1", L2, "[" REGISTER "]");
	cr_expect_str_eq(code_of(r), "OK");
	cr_expect_str_eq(gen_of(r), "", "a new lifecycle starts without a generation");
	cr_expect(json_is_true(jpath(r, "snapshot_required")));
	json_decref(r);
}

/* L-05, C-01: HOST_DOWN amid a stream of deltas from other connections. */
struct streamer {
	pthread_t t;
	int id, rejected, other;
	atomic_int ok; /* polled by the test while the stream runs */
	bool stop_at_reject;
};

static void *stream(void *arg)
{
	struct streamer *s = arg;
	struct hc c = {-1, srv.m.http_port};

	pthread_barrier_wait(&start_line);
	for (int i = 0; i < 200; i++) {
		char ev[512];
		json_t *r;

		snprintf(ev, sizeof(ev), "[" ADD("%d", "gpu", "a", "x://l5/%d") "]", 1000 * (s->id + 1) + i,
		         1000 * (s->id + 1) + i);
		r = report_on(&c, "s", "l5:1", L2, ev);
		if (r && strcmp(code_of(r), "OK") == 0 && !s->rejected)
			s->ok++;
		else if (r && strcmp(code_of(r), "NODE_NOT_REGISTERED") == 0)
			s->rejected++;
		else
			s->other++; /* includes an OK after a rejection: the tombstone must hold */
		json_decref(r);
	}
	hc_close(&c);
	return NULL;
}

Test(report_matrix, host_down_amid_deltas) /* L-05, C-01 */
{
	struct streamer s[4] = {0};
	json_t *r;
	char gen[40];

	r = report("l5:1", L2, "[" REGISTER "," ADD("1", "gpu", "a", "x://l5/1") "]");
	snprintf(gen, sizeof(gen), "%s", gen_of(r));
	json_decref(r);
	pthread_barrier_init(&start_line, NULL, 5);
	for (int i = 0; i < 4; i++) {
		s[i].id = i;
		cr_assert_eq(pthread_create(&s[i].t, NULL, stream, &s[i]), 0);
	}
	pthread_barrier_wait(&start_line);
	for (int i = 0; i < 4; i++) /* the host goes down amid every stream */
		for (int j = 0; j < POLL_CAP && atomic_load(&s[i].ok) == 0; j++)
			poll_pause();
	r = report("l5:1", L2, "[" HOST_DOWN "]");
	cr_expect_str_eq(code_of(r), "OK");
	cr_expect_str_eq(gen_of(r), "", "the generation goes with the reporter");
	cr_expect(json_is_true(jpath(r, "snapshot_required")));
	json_decref(r);
	for (int i = 0; i < 4; i++) {
		pthread_join(s[i].t, NULL);
		cr_expect_eq(s[i].other, 0, "streamer %d: only OK before and NODE_NOT_REGISTERED after", i);
		cr_expect_eq(s[i].ok + s[i].rejected, 200);
	}
	pthread_barrier_destroy(&start_line);
	cr_expect(meta_gone(1));
	for (int i = 0; i < 4; i++)
		cr_expect(!visible(1000 * (i + 1)) && !visible(1000 * (i + 1) + 199));
	r = report("l5:1", L2, "[" REGISTER "," ADD("7", "gpu", "a", "x://l5/7") "]");
	cr_expect_eq(strlen(gen_of(r)), 32);
	cr_expect_str_neq(gen_of(r), gen, "a new lifecycle, a new generation");
	json_decref(r);
	cr_expect(visible(7));
}

/* One snapshot of n blocks 1..n (spec a) as a JSON array text (malloc'd). */
static char *big_snapshot(long n, const char *host)
{
	size_t cap = (size_t)n * 120 + 200, o;
	char *s = malloc(cap);

	cr_assert(s);
	o = (size_t)snprintf(s, cap, "[{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_snapshot\":{\"blocks\":[");
	for (long i = 1; i <= n; i++)
		o += (size_t)snprintf(s + o, cap - o,
		                      "%s{\"block_key\":\"%ld\",\"medium\":\"gpu\",\"specs\":[{\"name\":\"a\","
		                      "\"uri\":\"x://%s/%ld\"}]}",
		                      i > 1 ? "," : "", i, host, i);
	snprintf(s + o, cap - o, "]}}]");
	return s;
}

Test(report_matrix, reporters_do_not_block_each_other) /* C-02, and S-08 under concurrency */
{
	const long n = 20000;
	char *snap = big_snapshot(n, "c2a");
	struct racer w[4] = {0};

	/* a large snapshot of one reporter racing a delta of another and two snapshots of a third, on the default
	 * L1P5 storage: its 30 s heartbeat timeout outlasts the snapshot even under a sanitizer */
	for (int i = 0; i < 4; i++)
		w[i].type = L1P5;
	w[0].host = "c2a:1";
	w[0].body = snap;
	w[1].host = "c2b:1";
	w[1].body = "[" ADD("1", "gpu", "b", "x://c2b/1") "]";
	w[2].host = w[3].host = "c2c:1";
	w[2].body = w[3].body = "[" SNAP("[" SBLOCK("2", "gpu", "c", "x://c2c/2") "]") "]";
	run_racers(w, 4);
	cr_expect_str_eq(w[0].code, "OK");
	cr_expect_str_eq(w[1].code, "OK");
	cr_expect((strcmp(w[2].code, "OK") == 0 && strcmp(w[3].code, "SNAPSHOT_RATE_LIMITED") == 0) ||
	              (strcmp(w[3].code, "OK") == 0 && strcmp(w[2].code, "SNAPSHOT_RATE_LIMITED") == 0),
	          "one of two concurrent snapshots of a reporter commits: %s, %s", w[2].code, w[3].code);
	free(snap);
	{
		char u[2048];

		uris(1, u, sizeof(u));
		cr_expect(strstr(u, "x://c2a/1?") && strstr(u, "x://c2b/1?"), "%s", u);
	}
	cr_expect(visible(n) && visible(2));
}

Test(report_matrix, a_snapshot_after_a_restart_reconverges) /* P-04 */
{
	json_t *r;

	EXPECT_CODE(report("p4:1", L2, "[" ADD("1", "gpu", "a", "x://p/1") "," ADD("2", "gpu", "a", "x://p/2") "]"),
	            "OK");
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_assert_eq(kvcm_srv_restart(&srv, NULL), 0);
	EXPECT_CODE(report("p4:1", L2, "[" HEARTBEAT "]"), "OK");
	cr_expect(visible(1) && visible(2), "soft after the restart");
	r = report("p4:1", L2, "[" SNAP("[" SBLOCK("1", "gpu", "a", "x://p/1") "]") "]");
	cr_expect_str_eq(code_of(r), "OK", "%s", message_of(r));
	cr_expect(json_is_false(jpath(r, "snapshot_required")));
	json_decref(r);
	cr_expect(visible(1) && !visible(2), "strict: the snapshot is the whole state");
	cr_expect(meta_gone(2), "the history it omitted is cleaned up");
}

/*
 * locations that reportEvent never writes (its validation forbids them) but a metadata store may hold,
 * e.g. from another version: written into the stopped server's LMDB as block records next to a good one.
 */
struct rec {
	uint8_t *p, *end;
};

static void put(struct rec *r, const void *v, size_t n)
{
	cr_assert(r->p + n <= r->end);
	memcpy(r->p, v, n);
	r->p += n;
}

static void put_str(struct rec *r, const char *s, int lenbytes)
{
	uint32_t n = (uint32_t)strlen(s);

	put(r, &n, (size_t)lenbytes);
	put(r, s, n);
}

/* A block record (format of metaserver/kvcm/model/block_record.c) with one location id holding specs name=uri. */
static size_t record(uint8_t *buf, size_t cap, uint8_t status, uint8_t type, const char *id, int nspecs,
                     const char *const *uris_)
{
	struct rec r = {buf, buf + cap};
	uint8_t version = 2, has_prev = 0;
	uint64_t zero = 0, now = 1;
	uint16_t one = 1, n = (uint16_t)nspecs;

	put(&r, &version, 1);
	put(&r, &has_prev, 1);
	put(&r, &zero, 8);
	put(&r, &now, 8);
	put(&r, &one, 2);
	put_str(&r, id, 2);
	put(&r, &status, 1);
	put(&r, &type, 1);
	put(&r, &now, 8);
	put_str(&r, "er_fast", 2);
	put(&r, &n, 2);
	for (int i = 0; i < nspecs; i++) {
		char name[16];

		snprintf(name, sizeof(name), "s%d", i);
		put_str(&r, name, 2);
		put_str(&r, uris_[i], 4);
	}
	return (size_t)(r.p - buf);
}

struct crafted {
	long key;
	const char *id;
	int nspecs;
	const char *uris[2];
	bool visible;
};

#define SV  "s_version=0123456789abcdef0123456789abcdef"
#define LOC "kvs#event_report_l2#gpu#q2:1"

static const struct crafted crafted[] = {
    {101, LOC, 1, {"x://q/101?" SV}, true}, /* control: well formed */
    {102, LOC, 1, {"x://q/102"}, true},     /* legacy: no s_version, soft mode */
    {103, LOC, 0, {NULL}, false},           /* no spec */
    {104, LOC, 1, {"not a uri"}, false},
    {105, LOC, 1, {"x://q/105?" SV "&" SV}, false},                         /* two s_version */
    {106, LOC, 1, {"x://q/106?s_version=0123"}, false},                     /* not 32 hex */
    {107, LOC, 2, {"x://q/107?" SV, "x://q:port/107"}, false},              /* one bad spec closes the location */
    {108, "kvs#event_report_l2#gpu", 1, {"x://q/108?" SV}, false},          /* malformed id */
    {109, "kvs#event_report_l1p5#gpu#q2:1", 1, {"x://q/109?" SV}, false},   /* id of the wrong type */
    {110, "kvs#event_report_l2#gpu#nobody:1", 1, {"x://q/110?" SV}, false}, /* a host never heard from */
    {111, "kvs#v6d#gpu#q2:1", 1, {"x://q/111?" SV}, false},                 /* not a type of ours */
};

static void write_crafted(void)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *cur;
	MDB_val k, v;
	uint8_t key[16], buf[1024];
	char dir[300];

	snprintf(dir, sizeof(dir), "%s/data", srv.m.dir); /* --data-dir of tests/support/proc.c */
	cr_assert_eq(mdb_env_create(&env), 0);
	cr_assert_eq(mdb_env_set_maxdbs(env, 64), 0);
	cr_assert_eq(mdb_env_open(env, dir, 0, 0644), 0);
	cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
	cr_assert_eq(mdb_dbi_open(txn, "kvcm_blocks", 0, &dbi), 0);
	cr_assert_eq(mdb_cursor_open(txn, dbi, &cur), 0);
	cr_assert_eq(mdb_cursor_get(cur, &k, &v, MDB_FIRST), 0, "the reported block 1 has a record");
	cr_assert_eq(k.mv_size, 16);
	memcpy(key, k.mv_data, 8); /* the instance's uid */
	mdb_cursor_close(cur);
	for (size_t i = 0; i < sizeof(crafted) / sizeof(crafted[0]); i++) {
		const struct crafted *c = &crafted[i];
		uint64_t kk = (uint64_t)c->key ^ UINT64_C(0x8000000000000000);

		for (int j = 0; j < 8; j++)
			key[8 + j] = (uint8_t)(kk >> (56 - 8 * j));
		k = (MDB_val){16, key};
		v = (MDB_val){record(buf, sizeof(buf), 3 /* CLS_SERVING */, 8 /* ST_EVENT_REPORT_L2 */, c->id,
		                     c->nspecs, c->uris),
		              buf};
		cr_assert_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
	}
	cr_assert_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

Test(report_matrix, malformed_locations_fail_closed) /* */
{
	EXPECT_CODE(report("q2:1", L2, "[" ADD("1", "gpu", "a", "x://q/1") "]"), "OK");
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	write_crafted();
	cr_assert_eq(kvcm_srv_restart(&srv, NULL), 0);
	EXPECT_CODE(report("q2:1", L2, "[" HEARTBEAT "]"), "OK");
	cr_expect(visible(1));
	for (size_t i = 0; i < sizeof(crafted) / sizeof(crafted[0]); i++)
		cr_expect_eq(visible(crafted[i].key), crafted[i].visible, "block %ld (%s)", crafted[i].key,
		             crafted[i].id);
}

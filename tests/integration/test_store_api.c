/*
 * The object store API beyond single put/get: batches with per-key results, layer lists, replicas, placement,
 * client-only stores and copy directions. Three stores in this process are three local services.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pattern.h"
#include "store_fixture.h"

#define POOL (48u << 20)

static struct metaserver meta;
static mmc_store *s1, *s2, *s3;

static void start(void)
{
	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	s1 = fixture_store(meta.url, true, POOL);
	s2 = fixture_store(meta.url, true, POOL);
	s3 = fixture_store(meta.url, true, POOL);
}

static void stop(void)
{
	mmc_destroy(s1);
	mmc_destroy(s2);
	mmc_destroy(s3);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(store_api, .init = start, .fini = stop, .timeout = 120);

Test(store_api, mixed_batch_results)
{
	const char *keys[] = {"a", "missing", "b", "a"};
	char ba[5000], bb[3000], bm[10], ba2[5000];
	void *bufs[] = {ba, bm, bb, ba2};
	size_t sizes[] = {5000, 10, 2999, 5000};
	int res[4], exist[4];

	fixture_put(s1, "a", 5000, 1);
	fixture_put(s2, "b", 3000, 2);
	cr_assert_eq(mmc_batch_get_into(s3, keys, bufs, sizes, 4, MMC_COPY_G2H, res), 0);
	cr_assert_eq(res[0], 0);
	cr_assert_eq(res[1], MMC_OBJECT_NOT_EXISTS);
	cr_assert_eq(res[2], MMC_INVALID_PARAM, "wrong size");
	cr_assert_eq(res[3], 0, "a repeated key is read twice");
	cr_assert_eq(pattern_check(ba, 5000, 1), 5000);
	cr_assert_eq(pattern_check(ba2, 5000, 1), 5000);
	cr_assert_eq(mmc_batch_is_exist(s3, keys, 4, exist), 0);
	cr_assert(exist[0] == 1 && exist[1] == 0 && exist[2] == 1 && exist[3] == 1);
	cr_assert_eq(mmc_batch_remove(s3, keys, 3, res), 0);
	cr_assert(res[0] == 0 && res[1] == MMC_OBJECT_NOT_EXISTS && res[2] == 0);
	cr_assert_eq(mmc_batch_is_exist(s3, keys, 4, exist), 0);
	cr_assert(exist[0] == 0 && exist[1] == 0 && exist[2] == 0 && exist[3] == 0);
}

Test(store_api, duplicate_key_in_one_batch_puts_once)
{
	const char *keys[] = {"dup", "dup", "other"};
	char b0[4096], b1[4096], b2[100];
	const void *bufs[] = {b0, b1, b2};
	size_t sizes[] = {4096, 4096, 100};
	int res[3] = {-1, -1, -1};

	pattern_fill(b0, 4096, 10);
	pattern_fill(b1, 4096, 11);
	pattern_fill(b2, 100, 12);
	cr_assert_eq(mmc_batch_put_from(s1, keys, bufs, sizes, 3, MMC_COPY_H2G, NULL, res), 0);
	cr_assert(res[0] == 0 && res[1] == 0 && res[2] == 0, "%d %d %d", res[0], res[1], res[2]);
	cr_assert_eq(fixture_get(s2, "dup", 4096, 10), 0, "the first occurrence wins");
	cr_assert_eq(fixture_get(s2, "other", 100, 12), 0);
}

/* The first entry wins when the repeats differ in size too: a small repeat after a large key would otherwise be
 * published through an extent before the large one's allocation (the stored object was the second). */
Test(store_api, a_small_repeat_after_a_large_key_does_not_win)
{
	enum { LARGE = 5 << 20, SMALL = 4096 };
	const char *keys[] = {"mixdup", "mixdup", "mixother"};
	char *large = malloc(LARGE), small[SMALL], other[SMALL];
	const void *bufs[] = {large, small, other};
	size_t sizes[] = {LARGE, SMALL, SMALL};
	int res[3] = {-1, -1, -1};

	cr_assert(large);
	pattern_fill(large, LARGE, 20);
	pattern_fill(small, SMALL, 21);
	pattern_fill(other, SMALL, 22);
	cr_assert_eq(mmc_batch_put_from(s1, keys, bufs, sizes, 3, MMC_COPY_H2G, NULL, res), 0);
	cr_assert(res[0] == 0 && res[1] == 0 && res[2] == 0, "%d %d %d", res[0], res[1], res[2]);
	cr_assert_eq(fixture_get(s2, "mixdup", LARGE, 20), 0, "the first occurrence, 5 MiB, is not what was stored");
	cr_assert_eq(fixture_get(s2, "mixother", SMALL, 22), 0);
	free(large);
}

Test(store_api, batch_limits)
{
	enum { N = 16385 };
	char **keys = calloc(N, sizeof(*keys));
	void **bufs = calloc(N, sizeof(*bufs));
	size_t *sizes = calloc(N, sizeof(*sizes));
	int *res = calloc(N, sizeof(*res));
	char *data = calloc(N, 64);

	for (int i = 0; i < N; i++) {
		keys[i] = malloc(32);
		snprintf(keys[i], 32, "lim/%d", i);
		bufs[i] = data + (size_t)i * 64;
		memset(bufs[i], i & 0xff, 64);
		sizes[i] = 64;
	}
	cr_assert_eq(mmc_batch_put_from(s1, (const char *const *)keys, (const void *const *)bufs, sizes, N,
	                                MMC_COPY_H2G, NULL, res),
	             MMC_INVALID_PARAM, "16385 keys");
	for (int i = 0; i < N; i++)
		cr_assert_eq(res[i], 0, "an n refused writes no result (results[] may be shorter than n)");
	cr_assert_eq(mmc_batch_put_from(s1, (const char *const *)keys, (const void *const *)bufs, sizes, 0,
	                                MMC_COPY_H2G, NULL, res),
	             MMC_INVALID_PARAM, "0 keys");
	cr_assert_eq(mmc_batch_put_from(s1, (const char *const *)keys, (const void *const *)bufs, sizes, N - 1,
	                                MMC_COPY_H2G, NULL, res),
	             0, "16384 keys");
	for (int i = 0; i < N - 1; i++)
		cr_assert_eq(res[i], 0, "key %d: %d", i, res[i]);
	memset(data, 0, (size_t)N * 64);
	cr_assert_eq(mmc_batch_get_into(s2, (const char *const *)keys, bufs, sizes, N - 1, MMC_COPY_G2H, res), 0);
	for (int i = 0; i < N - 1; i++) {
		cr_assert_eq(res[i], 0);
		cr_assert_eq(((unsigned char *)bufs[i])[63], i & 0xff);
	}
	cr_assert_eq(mmc_batch_is_exist(s3, (const char *const *)keys, N - 1, res), 0);
	for (int i = 0; i < N - 1; i++)
		cr_assert_eq(res[i], 1);
	cr_assert_eq(mmc_batch_remove(s3, (const char *const *)keys, N - 1, res), 0);
	for (int i = 0; i < N; i++)
		free(keys[i]);
	free(keys);
	free(bufs);
	free(sizes);
	free(res);
	free(data);
}

Test(store_api, layers_gather_and_scatter)
{
	char whole[9196], l0[100], l1[5000], l2[4096], g0[5100], g1[4096], *many[256];
	const void *put_bufs[] = {l0, l1, l2};
	size_t put_sizes[] = {100, 5000, 4096};
	void *get_bufs[] = {g0, g1};
	size_t get_sizes[] = {5100, 4096}, bad_sizes[] = {5100, 4095}, many_sizes[256];

	pattern_fill(whole, sizeof(whole), 33);
	memcpy(l0, whole, 100);
	memcpy(l1, whole + 100, 5000);
	memcpy(l2, whole + 5100, 4096);
	cr_assert_eq(mmc_put_from_layers(s1, "layered", put_bufs, put_sizes, 3, MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_get_into_layers(s2, "layered", get_bufs, get_sizes, 2, MMC_COPY_G2H), 0);
	cr_assert_eq(memcmp(g0, whole, 5100), 0, "the split on get may differ from the put's");
	cr_assert_eq(memcmp(g1, whole + 5100, 4096), 0);
	cr_assert_eq(fixture_get(s3, "layered", sizeof(whole), 33), 0, "one object, readable as one buffer");
	cr_assert_eq(mmc_get_into_layers(s2, "layered", get_bufs, bad_sizes, 2, MMC_COPY_G2H), MMC_INVALID_PARAM,
	             "total differs");
	cr_assert_eq(mmc_get_into_layers(s2, "layered", get_bufs, get_sizes, 0, MMC_COPY_G2H), MMC_INVALID_PARAM);
	/* sizes whose sum wraps to the object's size: refused, not copied at their real lengths */
	cr_assert_eq(
	    mmc_get_into_layers(s2, "layered", get_bufs, (size_t[]){SIZE_MAX, sizeof(whole) + 1}, 2, MMC_COPY_G2H),
	    MMC_INVALID_PARAM);
	/* 255 layers is the most */
	for (int i = 0; i < 256; i++) {
		many[i] = whole + i * 16;
		many_sizes[i] = 16;
	}
	cr_assert_eq(mmc_put_from_layers(s1, "l255", (const void *const *)many, many_sizes, 255, MMC_COPY_H2G, NULL),
	             0);
	cr_assert_eq(mmc_put_from_layers(s1, "l256", (const void *const *)many, many_sizes, 256, MMC_COPY_H2G, NULL),
	             MMC_INVALID_PARAM);
	cr_assert_eq(mmc_get_into_layers(s2, "l255", (void *const *)many, many_sizes, 255, MMC_COPY_G2H), 0);
	put_bufs[1] = NULL;
	cr_assert_eq(mmc_put_from_layers(s1, "nul", put_bufs, put_sizes, 3, MMC_COPY_H2G, NULL), MMC_INVALID_PARAM);
}

Test(store_api, batch_layers)
{
	enum { K = 4, L = 61 };
	const char *keys[K] = {"bl/0", "bl/1", "bl/2", "bl/3"};
	char *data = malloc((size_t)K * L * 1024);
	void *bufs[K][L], *rows[K];
	size_t sizes[K][L], *srows[K], layers[K];
	int res[K];

	for (int k = 0; k < K; k++) {
		for (int l = 0; l < L; l++) {
			bufs[k][l] = data + ((size_t)k * L + l) * 1024;
			sizes[k][l] = l % 2 ? 128 : 1024;
			pattern_fill(bufs[k][l], sizes[k][l], (uint64_t)(k * 1000 + l));
		}
		rows[k] = bufs[k];
		srows[k] = sizes[k];
		layers[k] = L;
	}
	cr_assert_eq(mmc_batch_put_from_layers(s1, keys, (const void *const *const *)rows, (const size_t *const *)srows,
	                                       layers, K, MMC_COPY_L2G, NULL, res),
	             0);
	for (int k = 0; k < K; k++)
		cr_assert_eq(res[k], 0);
	memset(data, 0, (size_t)K * L * 1024);
	cr_assert_eq(mmc_batch_get_into_layers(s2, keys, (void *const *const *)rows, (const size_t *const *)srows,
	                                       layers, K, MMC_COPY_G2L, res),
	             0);
	for (int k = 0; k < K; k++) {
		cr_assert_eq(res[k], 0);
		for (int l = 0; l < L; l++)
			cr_assert_eq(pattern_check(bufs[k][l], sizes[k][l], (uint64_t)(k * 1000 + l)), sizes[k][l]);
	}
	layers[2] = 0; /* any bad key rejects the whole batch */
	cr_assert_eq(mmc_batch_get_into_layers(s2, keys, (void *const *const *)rows, (const size_t *const *)srows,
	                                       layers, K, MMC_COPY_G2L, res),
	             MMC_INVALID_PARAM);
	cr_assert_eq(res[0], MMC_INVALID_PARAM);
	free(data);
}

Test(store_api, replicas_and_preferred_services)
{
	mmc_replicate_config three = {.replica_num = 3}, four = {.replica_num = 4};
	mmc_replicate_config pref = {.replica_num = 2, .preferred_count = 1};
	mmc_replicate_config bad = {.replica_num = 1, .preferred_count = 1, .preferred_local_service_ids = {999}};
	char buf[8192];
	mmc_key_info info;
	uint32_t r3 = fixture_rank(s3);

	pattern_fill(buf, sizeof(buf), 5);
	cr_assert_eq(mmc_put_from(s1, "rep3", buf, sizeof(buf), MMC_COPY_H2G, &three), 0);
	cr_assert_eq(mmc_get_key_info(s2, "rep3", 0, &info), 0);
	cr_assert_eq(info.size, sizeof(buf));
	cr_assert_eq(info.blob_num, 3);
	cr_assert(info.loc[0] != info.loc[1] && info.loc[1] != info.loc[2] && info.loc[0] != info.loc[2],
	          "replicas on distinct services");
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(info.type[i], MMC_MEDIA_DRAM);
		cr_assert_neq(info.gva[i], 0);
	}
	cr_assert_eq(fixture_get(s2, "rep3", sizeof(buf), 5), 0);
	cr_assert_eq(mmc_put_from(s1, "rep4", buf, sizeof(buf), MMC_COPY_H2G, &four), MMC_NOT_ENOUGH_MEMORY,
	             "more replicas than services");
	cr_assert_eq(mmc_is_exist(s1, "rep4"), 0, "never a partial object");
	pref.preferred_local_service_ids[0] = (int32_t)r3;
	cr_assert_eq(mmc_put_from(s1, "pref", buf, sizeof(buf), MMC_COPY_H2G, &pref), 0);
	cr_assert_eq(mmc_get_key_info(s1, "pref", 0, &info), 0);
	cr_assert_eq(info.blob_num, 2);
	cr_assert(info.loc[0] == r3 || info.loc[1] == r3, "the preferred service holds a replica");
	cr_assert_eq(mmc_put_from(s1, "badpref", buf, sizeof(buf), MMC_COPY_H2G, &bad), MMC_INVALID_PARAM);
}

Test(store_api, placement_local_first_and_spread)
{
	enum { N = 30 };
	const char *keys[N];
	char names[N][16], buf[4096];
	const void *bufs[N];
	size_t sizes[N];
	int res[N], seen[3] = {0};
	mmc_key_info info[N];
	uint32_t ranks[3] = {fixture_rank(s1), fixture_rank(s2), fixture_rank(s3)};

	fixture_put(s2, "mine", 4096, 1);
	cr_assert_eq(mmc_get_key_info(s1, "mine", 0, &info[0]), 0);
	cr_assert_eq(info[0].loc[0], ranks[1], "a single put lands in the writer's own pool");
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "spread/%d", i);
		keys[i] = names[i];
		bufs[i] = buf;
		sizes[i] = sizeof(buf);
	}
	cr_assert_eq(mmc_batch_put_from(s1, keys, bufs, sizes, N, MMC_COPY_H2G, NULL, res), 0);
	cr_assert_eq(mmc_batch_get_key_info(s1, keys, N, 0, info), 0);
	for (int i = 0; i < N; i++)
		for (int r = 0; r < 3; r++)
			seen[r] += info[i].loc[0] == ranks[r];
	cr_assert(seen[0] >= 5 && seen[1] >= 5 && seen[2] >= 5, "a batch spreads by free space: %d %d %d", seen[0],
	          seen[1], seen[2]);
}

Test(store_api, client_only_store)
{
	mmc_store *c = fixture_store(meta.url, false, 0);
	uint32_t id;

	cr_assert_eq(mmc_get_local_service_id(c, &id), MMC_NOT_STARTED);
	fixture_put(c, "from-client", 12345, 8);
	cr_assert_eq(fixture_get(c, "from-client", 12345, 8), 0);
	cr_assert_eq(fixture_get(s1, "from-client", 12345, 8), 0);
	cr_assert_eq(mmc_is_exist(c, "from-client"), 1);
	cr_assert_eq(mmc_remove(c, "from-client"), 0);
	mmc_destroy(c);
}

Test(store_api, copy_directions)
{
	static const int put_ok[] = {MMC_COPY_L2G, MMC_COPY_H2G, MMC_COPY_L2GH, MMC_COPY_H2GH, MMC_COPY_AUTO};
	static const int get_ok[] = {MMC_COPY_G2L, MMC_COPY_G2H, MMC_COPY_GH2L, MMC_COPY_GH2H, MMC_COPY_AUTO};
	static const int put_bad[] = {MMC_COPY_G2L, MMC_COPY_G2H, MMC_COPY_GH2L, MMC_COPY_GH2H, MMC_COPY_G2G, -1, 10};
	static const int get_bad[] = {MMC_COPY_L2G, MMC_COPY_H2G, MMC_COPY_L2GH, MMC_COPY_H2GH, MMC_COPY_G2G, -1, 10};
	char buf[256], key[32];

	for (size_t i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "dir/%zu", i);
		pattern_fill(buf, sizeof(buf), i);
		cr_assert_eq(mmc_put_from(s1, key, buf, sizeof(buf), put_ok[i], NULL), 0, "put direct %d", put_ok[i]);
		memset(buf, 0, sizeof(buf));
		cr_assert_eq(mmc_get_into(s2, key, buf, sizeof(buf), get_ok[i]), 0, "get direct %d", get_ok[i]);
		cr_assert_eq(pattern_check(buf, sizeof(buf), i), sizeof(buf));
	}
	for (size_t i = 0; i < 7; i++) {
		cr_assert_eq(mmc_put_from(s1, "dir/x", buf, sizeof(buf), put_bad[i], NULL), MMC_INVALID_PARAM);
		cr_assert_eq(mmc_get_into(s1, "dir/0", buf, sizeof(buf), get_bad[i]), MMC_INVALID_PARAM);
	}
}

Test(store_api, local_service_ids_are_distinct_and_stable)
{
	uint32_t a = fixture_rank(s1), b = fixture_rank(s2), c = fixture_rank(s3);

	cr_assert(a != b && b != c && a != c);
	cr_assert_eq(fixture_rank(s1), a);
}

Test(store_api, config_file_setup)
{
	char path[] = "/tmp/mmc-local-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	mmc_local_config c = mmc_default_local_config();
	mmc_store *s = mmc_create();
	const char *proto = getenv("MMC_PROTOCOL");

	fprintf(f,
	        "ock.mmc.meta_service_url = %s\nock.mmc.local_service.protocol = %s\n"
	        "ock.mmc.local_service.dram.size = 16MB\nock.mmc.log_level = error\n",
	        meta.url, proto ? proto : "host_tcp");
	fclose(f);
	snprintf(c.config_path, sizeof(c.config_path), "%s", path);
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, true), 0, "the meta server address came from the file");
	fixture_put(s, "via-file", 100, 3);
	cr_assert_eq(fixture_get(s1, "via-file", 100, 3), 0);
	mmc_destroy(s);
	unlink(path);
}

Test(store_api, remove_by_regex_and_remove_all)
{
	static const char *keys[] = {"rx/a/1", "rx/a/2", "rx/b/1", "plain"};
	static char buf[4096];
	uint64_t removed = 99;

	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(mmc_put_from(s1, keys[i], buf, sizeof(buf), MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_remove_by_regex(s2, "^rx/a/", &removed), 0);
	cr_assert_eq(removed, 2);
	cr_assert_eq(mmc_is_exist(s1, "rx/a/1"), 0);
	cr_assert_eq(mmc_is_exist(s1, "rx/a/2"), 0);
	cr_assert_eq(mmc_is_exist(s1, "rx/b/1"), 1, "not matched: kept");
	cr_assert_eq(mmc_remove_by_regex(s2, "^rx/a/", &removed), 0);
	cr_assert_eq(removed, 0, "nothing left to match");
	removed = 99;
	cr_assert_eq(mmc_remove_by_regex(s2, "(", &removed), MMC_INVALID_PARAM, "a pattern that does not compile");
	cr_assert_eq(removed, 99, "untouched on error");
	/* patterns whose compilation could hold the server's loop for seconds (bounded repetition, 6 s and 5 GB for
	 * this one), or whose matching backtracks (a back-reference): refused at once */
	cr_assert_eq(mmc_remove_by_regex(s2, "((a{1,150}){1,150}){1,150}", &removed), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_remove_by_regex(s2, "^(rx)/\\1", &removed), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_remove_by_regex(s2, "^rx/[{]", &removed), 0, "a literal brace in brackets");
	cr_assert_eq(mmc_remove_by_regex(s2, "", &removed), MMC_INVALID_PARAM, "every key is mmc_remove_all");
	cr_assert_eq(mmc_remove_by_regex(s2, NULL, &removed), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_remove_by_regex(s2, "x", NULL), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_remove_by_regex(NULL, "x", &removed), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_remove_all(NULL, &removed), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_remove_all(s3, &removed), 0);
	cr_assert_geq(removed, 2, "rx/b/1 and plain at least (other tests' keys too)");
	cr_assert_eq(mmc_is_exist(s1, "plain"), 0);
	cr_assert_eq(mmc_is_exist(s1, "rx/b/1"), 0);
}

/*
 * A pattern that is slow to match (glibc builds the states of its automaton as keys need them: ".*a" and 60 dots over
 * hex keys took about a millisecond a key, and 891 MB, before the walk compiled it again every 4096 keys; 64 us a key
 * since) gets a quarter of the server's heartbeat timeout: MMC_TIMEOUT then, instead of holding the loop for minutes
 * while every store's heartbeat runs out. The server here has a heartbeat timeout of 1 s, so a walk of these keys
 * (2.1 s on a quick machine) outlasts its 250 ms eight times over: under the default 10 s the walk could finish in
 * time on a fast machine, and the test would say nothing.
 */
/* splitmix64: random-looking hex keys, as content hashes are */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15u;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
	return x ^ (x >> 31);
}

Test(store_api, a_pattern_slow_to_match_is_given_up_in_time, .timeout = 120)
{
	enum { N = 2 * 16384 };
	static char names[N][56], buf[64];
	static const char *keys[N];
	static const void *bufs[N];
	static size_t sizes[N];
	static int results[N];
	char pattern[80] = ".*a";
	const char *quick_heartbeat[] = {"ock.mmc.meta.heartbeat_timeout_ms=1000", NULL};
	struct metaserver m;
	mmc_store *s;
	uint64_t removed = 0, t0;
	int rc;

	cr_assert_eq(metaserver_start(&m, quick_heartbeat), 0);
	s = fixture_store(m.url, true, POOL);

	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "slow/%016llx%016llx%016llx", (unsigned long long)mix(3 * i),
		         (unsigned long long)mix(3 * i + 1), (unsigned long long)mix(3 * i + 2));
		keys[i] = names[i];
		bufs[i] = buf;
		sizes[i] = sizeof(buf);
	}
	for (int i = 0; i < N; i += N / 2)
		cr_assert_eq(mmc_batch_put_from(s, keys + i, bufs + i, sizes + i, N / 2, MMC_COPY_H2G, NULL, results),
		             0);
	memset(pattern + 3, '.', 61);
	t0 = proc_now_ms();
	rc = mmc_remove_by_regex(s, pattern, &removed);
	cr_log_info("%d keys: %d after %llu ms", N, rc, (unsigned long long)(proc_now_ms() - t0));
	cr_assert_eq(rc, MMC_TIMEOUT, "%d", rc);
	cr_assert_lt(proc_now_ms() - t0, 2000, "the walk held the server for %llu ms",
	             (unsigned long long)(proc_now_ms() - t0));
	cr_assert_eq(mmc_is_exist(s, "anything"), 0, "the server answers");
	mmc_destroy(s);
	cr_expect_eq(metaserver_cleanup(&m), 0, "the metaserver log has a sanitizer report");
}

/* In a forked child: what the parent's store answers there, then a store of the child's own reading the parent's
 * object. Returns a bit per failure, 0 when all went as documented. */
static int child_uses_parents_store(mmc_store *parents, const char *key, size_t size, uint64_t seed)
{
	mmc_local_config c = fixture_config(meta.url, 0);
	mmc_store *own = mmc_create();
	void *buf = malloc(size);
	int bad = 0;

	bad |= (mmc_is_exist(parents, key) != MMC_CLIENT_NOT_INIT) << 0;
	bad |= (mmc_setup(parents, &c) != MMC_INVALID_PARAM) << 1;
	bad |= (mmc_init(parents, 0, true) != MMC_INVALID_PARAM) << 2;
	bad |= (mmc_teardown(parents) != MMC_CLIENT_NOT_INIT) << 3;
	mmc_destroy(parents);
	bad |= (!own || !buf || mmc_setup(own, &c) || mmc_init(own, 0, false)) << 4;
	bad |=
	    (!(bad & 16) && (mmc_get_into(own, key, buf, size, MMC_COPY_G2H) || pattern_check(buf, size, seed) != size))
	    << 5;
	mmc_destroy(own);
	free(buf);
	return bad;
}

/*
 * A child forked without exec (Python's multiprocessing, a store object collected in the child) has a copy of its
 * parent's store but none of its threads. Tearing that copy down sent an Unregister on the parent's connection: the
 * meta server dropped the parent's local service with its objects, and the child waited for a reply forever.
 */
Test(store_api, a_forked_child_leaves_the_parents_store_alone)
{
	uint32_t rank = fixture_rank(s1);
	uint64_t until;
	int status = -1;
	pid_t child;

	fixture_put(s1, "forked", 8192, 71);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(child_uses_parents_store(s1, "forked", 8192, 71));
	for (until = proc_now_ms() + 20000; waitpid(child, &status, WNOHANG) == 0 && proc_now_ms() < until;)
		usleep(10000);
	if (proc_now_ms() >= until) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child: status %#x (exit code: failure bits)",
	          status);
	cr_expect_eq(fixture_rank(s1), rank, "the parent's service is the same");
	cr_expect_eq(fixture_get(s2, "forked", 8192, 71), 0, "and still holds its object");
	fixture_put(s1, "after-fork", 4096, 72);
	cr_expect_eq(fixture_get(s3, "after-fork", 4096, 72), 0, "the parent's store works on");
}

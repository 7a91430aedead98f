/*
 * Storage back-ends: file (real files, created by the writer, really deleted on remove, trim and reclaim; a file
 * shared by several blocks goes with the last of them), mmc (blocks in the mmc pool, dropped from it on delete,
 * and not served once the pool lost them) and dummy.
 */
#include "kvcm_test.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void up(void)
{
	static const char *const debug_on[] = {"kvcm.service.enable_debug_service=true", NULL};

	srv_up(debug_on); /* debugClock: deletes wait delay_before_delete_ms of logical time */
}

TestSuite(storage, .init = up, .fini = srv_down, .timeout = 60);

/* A group writing to storage, deleting at once. */
static void group_on(const char *group, const char *storage)
{
	EXPECT_CODE(ADMIN("createInstanceGroup",
	                  "{\"instance_group\":{\"name\":\"%s\",\"storage_candidates\":[\"%s\"],\"cache_config\":{"
	                  "\"reclaim_strategy\":{\"delay_before_delete_ms\":0}}}}",
	                  group, storage),
	            "OK");
}

static void add_storage(const char *name, const char *spec)
{
	EXPECT_CODE(ADMIN("addStorage", "{\"storage\":{\"global_unique_name\":\"%s\",%s}}", name, spec), "OK");
}

/* Starts a write of keys and returns the reply (locations' URIs inside). */
static json_t *start(const char *id, const char *keys)
{
	json_t *r = CALL("startWriteCache", "{\"instance_id\":\"%s\",\"block_keys\":%s,\"write_timeout_seconds\":30}",
	                 id, keys);

	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	return r;
}

static const char *uri(json_t *started, size_t i)
{
	return json_string_value(
	    jpath(json_array_get(jpath(json_array_get(jpath(started, "locations"), i), "location_specs"), 0), "uri"));
}

/* What a writer does with a file:// (or dummy://) URI: creates the file (and its directories). */
static void write_file(const char *u, char *path, size_t cap)
{
	char cmd[1200];
	const char *p = strstr(u, "://") + 3, *q = strchr(p, '?');

	snprintf(path, cap, "%.*s", (int)(q - p), p);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\" && echo data >> '%s'", path, path);
	cr_assert_eq(system(cmd), 0);
}

static void finish_all(const char *id, json_t *started)
{
	EXPECT_CODE(CALL("finishWriteCache",
	                 "{\"instance_id\":\"%s\",\"write_session_id\":\"%s\",\"success_blocks\":{"
	                 "\"offset\":%zu}}",
	                 id, json_string_value(jpath(started, "write_session_id")),
	                 json_array_size(jpath(started, "locations"))),
	            "OK");
}

/* A write of one block of id, as a writer makes it: started, its file written (path: where), finished. */
static void write_one(const char *id, const char *key, char *path, size_t cap)
{
	json_t *s = start(id, key);

	write_file(uri(s, 0), path, cap);
	finish_all(id, s);
	json_decref(s);
}

static bool gone_soon(const char *path)
{
	struct stat st;

	for (int i = 0; i < POLL_CAP; i++) {
		if (stat(path, &st) != 0)
			return true;
		poll_pause();
	}
	return false;
}

static void *remove_one(void *arg)
{
	json_t **reply = arg;

	*reply = CALL("removeCache", "{\"instance_id\":\"d\",\"block_keys\":[1]}");
	return NULL;
}

/*
 * A remove's file goes only once the record that marks its location DELETING is on disk: it went when the group's
 * delay ran out, and a kill before the commit (or a failover) loaded the location as SERVING with its file gone.
 * Every commit of the restarted server here waits 1.5 s, and the group deletes at once.
 */
Test(storage, a_file_stays_until_its_delete_is_on_disk)
{
	char body[512], path[512];
	json_t *reply = NULL;
	pthread_t th;
	struct stat st;

	snprintf(body, sizeof(body), "\"nfs\":{\"root_path\":\"%s/del/\",\"key_count_per_file\":1}", srv.root);
	add_storage("del_store", body);
	group_on("dg", "del_store");
	cr_assert(register_simple(&srv.meta, "dg", "d", 64));
	write_one("d", "[1]", path, sizeof(path));
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	setenv("MMC_TEST_COMMIT_DELAY_MS", "1500", 1);
	cr_assert_eq(kvcm_srv_restart(&srv, NULL), 0);
	unsetenv("MMC_TEST_COMMIT_DELAY_MS");
	cr_assert_eq(pthread_create(&th, NULL, remove_one, &reply), 0);
	usleep(700000);
	cr_expect_eq(stat(path, &st), 0, "the file went before its DELETING record was on disk");
	pthread_join(th, NULL);
	EXPECT_CODE(reply, "OK");
	cr_expect(gone_soon(path), "the file goes once the record is on disk");
}

Test(storage, file_deletes_real_files)
{
	char body[512], p1[512], p2[512], p3[512];
	json_t *s;
	struct stat st;

	snprintf(body, sizeof(body), "\"nfs\":{\"root_path\":\"%s/one/\",\"key_count_per_file\":1}", srv.root);
	add_storage("one_per_file", body);
	group_on("fg", "one_per_file");
	cr_assert(register_simple(&srv.meta, "fg", "f", 64));
	s = start("f", "[1,2]");
	write_file(uri(s, 0), p1, sizeof(p1));
	write_file(uri(s, 1), p2, sizeof(p2));
	finish_all("f", s);
	json_decref(s);
	EXPECT_CODE(CALL("removeCache", "{\"instance_id\":\"f\",\"block_keys\":[1]}"), "OK");
	cr_expect(gone_soon(p1), "removeCache unlinks %s", p1);
	cr_expect_eq(stat(p2, &st), 0, "other blocks' files stay");
	EXPECT_CODE(CALL("trimCache", "{\"instance_id\":\"f\",\"strategy\":\"TS_REMOVE_ALL_CACHE\"}"), "OK");
	cr_expect(gone_soon(p2), "trimCache unlinks %s", p2);
	/* a failed write deletes what the writer may have left */
	s = start("f", "[3]");
	write_file(uri(s, 0), p3, sizeof(p3));
	EXPECT_CODE(CALL("finishWriteCache",
	                 "{\"instance_id\":\"f\",\"write_session_id\":\"%s\",\"success_blocks\":{"
	                 "\"offset\":0}}",
	                 json_string_value(jpath(s, "write_session_id"))),
	            "OK");
	cr_expect(gone_soon(p3), "a failed block's file is unlinked");
	json_decref(s);
}

/*
 * An instance removed, then registered again under its id while the removed one's deletes wait for
 * delay_before_delete_ms: the new instance writes elsewhere ("<id>~<n>"), and those deletes take the old files
 * only. Both used to be the same path, and the old deletes unlinked the new instance's file while its location
 * still said CLS_SERVING.
 */
Test(storage, an_instance_registered_again_keeps_its_files_from_the_old_one_s_deletes)
{
	char body[512], old_path[512], new_path[512];
	json_t *r;
	struct stat st;

	srv_clock_freeze();
	snprintf(body, sizeof(body), "\"nfs\":{\"root_path\":\"%s/again/\",\"key_count_per_file\":1}", srv.root);
	add_storage("again", body);
	EXPECT_CODE(ADMIN("createInstanceGroup",
	                  "{\"instance_group\":{\"name\":\"ag\",\"storage_candidates\":[\"again\"],\"cache_config\":{"
	                  "\"reclaim_strategy\":{\"delay_before_delete_ms\":1000}}}}"),
	            "OK");
	cr_assert(register_simple(&srv.meta, "ag", "twice", 64));
	write_one("twice", "[1]", old_path, sizeof(old_path));
	EXPECT_CODE(ADMIN("removeInstance", "{\"instance_id\":\"twice\"}"), "OK");
	cr_assert(register_simple(&srv.meta, "ag", "twice", 64), "the id is registered again at once");
	write_one("twice", "[1]", new_path, sizeof(new_path));
	cr_assert_str_neq(old_path, new_path, "the new instance writes where the old one's deletes do not reach");
	srv_clock_advance(1000); /* the removed instance's deletes are due */
	cr_expect(gone_soon(old_path), "the removed instance's file is unlinked");
	cr_expect_eq(stat(new_path, &st), 0, "the new instance's file stays");
	r = CALL("getCacheLocation", "{\"instance_id\":\"twice\",\"block_keys\":[1]}");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 1, "and is served");
	json_decref(r);
}

Test(storage, shared_file_goes_with_its_last_block)
{
	char body[512], p[512], p2[512];
	json_t *s;
	struct stat st;

	snprintf(body, sizeof(body), "\"nfs\":{\"root_path\":\"%s/shared\",\"key_count_per_file\":4}", srv.root);
	add_storage("four_per_file", body);
	group_on("sg", "four_per_file");
	cr_assert(register_simple(&srv.meta, "sg", "s", 64));
	s = start("s", "[10,11,12]");
	write_file(uri(s, 0), p, sizeof(p));
	write_file(uri(s, 2), p2, sizeof(p2));
	cr_assert_str_eq(p, p2, "one file for the three blocks");
	finish_all("s", s);
	json_decref(s);
	EXPECT_CODE(CALL("removeCache", "{\"instance_id\":\"s\",\"block_keys\":[10,11]}"), "OK");
	cr_assert(srv_deletes_done());
	cr_expect_eq(stat(p, &st), 0, "block 12 still uses the file");
	EXPECT_CODE(CALL("removeCache", "{\"instance_id\":\"s\",\"block_keys\":[12]}"), "OK");
	cr_expect(gone_soon(p), "the last block takes the file along");
}

Test(storage, reclaim_deletes_files)
{
	char body[512], p[512];

	snprintf(body, sizeof(body), "\"nfs\":{\"root_path\":\"%s/rc/\",\"key_count_per_file\":1}", srv.root);
	add_storage("rc", body);
	EXPECT_CODE(
	    ADMIN("createInstanceGroup",
	          "{\"instance_group\":{\"name\":\"rg\",\"storage_candidates\":[\"rc\"],\"quota\":{\"capacity\":"
	          "1000},\"cache_config\":{\"reclaim_strategy\":{\"trigger_strategy\":{\"used_percentage\":0.5},"
	          "\"delay_before_delete_ms\":0}}}}"),
	    "OK");
	cr_assert(register_simple(&srv.meta, "rg", "r", 400));
	write_one("r", "[1]", p, sizeof(p));
	cr_assert(write_keys(&srv.meta, "r", "[2]")); /* 800 of 1000 bytes: over the 0.5 water level */
	cr_expect(gone_soon(p), "the reclaimed block's file is unlinked");
}

/* Served while its file exists (a lost one is pruned: test_prune.c); never reported to registerInstance. */
Test(storage, dummy_is_metadata_only)
{
	char spec[400], want[400], path[1024];
	json_t *s, *r;

	snprintf(spec, sizeof(spec), "\"dummy\":{\"root_path\":\"%s/dm/\"}", srv.root);
	add_storage("dm", spec);
	group_on("dg", "dm");
	cr_assert(register_simple(&srv.meta, "dg", "d", 64));
	s = start("d", "[5]");
	snprintf(want, sizeof(want), "dummy://%s/dm/d/tp0/5?size=64", srv.root);
	cr_expect_str_eq(uri(s, 0), want);
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(s, "locations"), 0), "type")), "ST_DUMMY");
	write_file(uri(s, 0), path, sizeof(path));
	finish_all("d", s);
	json_decref(s);
	r = CALL("getCacheLocation", "{\"instance_id\":\"d\",\"block_keys\":[5]}");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 1);
	json_decref(r);
	r = CALL("registerInstance", "{\"instance_group\":\"dg\",\"instance_id\":\"d\",\"block_size\":8,"
	                             "\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"fp16\"},"
	                             "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":64}]}");
	cr_expect_str_eq(json_string_value(jpath(r, "storage_configs")), "[]", "dummy storages are not reported");
	json_decref(r);
}

/* Runs "VERB KEY [ARGS]" on the node and returns its result code. */
static int node_result(struct node *n, const char *verb, const char *key, const char *args)
{
	char reply[256];

	node_cmd(n, reply, sizeof(reply), "%s %s%s", verb, key, args);
	return atoi(reply);
}

Test(storage, mmc_blocks_live_in_the_pool)
{
	static char env_meta[128];
	const char *env[] = {env_meta, NULL};
	struct node n;
	char reply[256], key[300];
	json_t *s, *r;
	const char *u;

	add_storage("pool", "\"mmc\":{\"key_prefix\":\"kvcm/\"}");
	group_on("mg", "pool");
	cr_assert(register_simple(&srv.meta, "mg", "m", 4096));
	snprintf(env_meta, sizeof(env_meta), "MMC_TEST_META=%s", srv.m.url);
	cr_assert_eq(node_start(&n, env), 0);
	node_cmd(&n, reply, sizeof(reply), "init 1 %llu", 64ull << 20);
	cr_assert_eq(strncmp(reply, "0 ", 2), 0, "local service init: %s", reply);

	s = start("m", "[42]");
	u = uri(s, 0);
	cr_assert_str_eq(u, "mmc://kvcm/m/tp0/2a?size=4096");
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(s, "locations"), 0), "type")), "ST_MMC");
	snprintf(key, sizeof(key), "%.*s", (int)(strchr(u, '?') - u - 6), u + 6);
	cr_assert_eq(node_result(&n, "put", key, " 4096 7"), 0);
	finish_all("m", s);
	json_decref(s);
	r = CALL("getCacheLocation", "{\"instance_id\":\"m\",\"block_keys\":[42]}");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 1);
	json_decref(r);
	EXPECT_CODE(CALL("removeCache", "{\"instance_id\":\"m\",\"block_keys\":[42]}"), "OK");
	for (int i = 0; i < POLL_CAP && node_result(&n, "exist", key, "") == 1; i++)
		poll_pause();
	cr_expect_eq(node_result(&n, "exist", key, ""), 0, "removeCache drops the object from the pool");

	/* a block the pool lost (removed behind KVCM's back) is not served */
	s = start("m", "[43]");
	u = uri(s, 0);
	snprintf(key, sizeof(key), "%.*s", (int)(strchr(u, '?') - u - 6), u + 6);
	cr_assert_eq(node_result(&n, "put", key, " 4096 8"), 0);
	finish_all("m", s);
	json_decref(s);
	cr_assert_eq(node_result(&n, "remove", key, ""), 0);
	r = CALL("getCacheLocation", "{\"instance_id\":\"m\",\"block_keys\":[43]}");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 0);
	json_decref(r);
	node_kill(&n);
}

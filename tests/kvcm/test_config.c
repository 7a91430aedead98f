/*
 * Configuration: kvcm.startup_config (applied once per data directory), unknown kvcm.* keys, and the built-in
 * default (nfs_01, the event-report storages and group "default").
 */
#include "kvcm_test.h"

#include <stdio.h>
#include <unistd.h>

TestSuite(config, .timeout = 30);

static bool has_storage(const char *name)
{
	json_t *r = ADMIN("listStorage", "{}");
	bool found = false;

	for (size_t i = 0; i < json_array_size(jpath(r, "storage")); i++)
		found = found ||
		        strcmp(json_string_value(jpath(json_array_get(jpath(r, "storage"), i), "global_unique_name")),
		               name) == 0;
	json_decref(r);
	return found;
}

Test(config, builtin_default)
{
	json_t *r, *g;

	srv_up(NULL);
	cr_expect(has_storage("nfs_01") && has_storage("event_report_l1p5_default") &&
	          has_storage("event_report_l2_default"));
	r = ADMIN("getInstanceGroup", "{\"name\":\"default\"}");
	g = jpath(r, "instance_group");
	cr_expect_str_eq(json_string_value(jpath(jpath(g, "quota"), "capacity")), "30000000000");
	cr_expect_str_eq(
	    json_string_value(jpath(jpath(jpath(g, "cache_config"), "meta_indexer_config"), "max_key_count")),
	    "1000000");
	cr_expect_str_eq(json_string_value(jpath(jpath(g, "cache_config"), "data_storage_strategy")), "CPS_PREFER_3FS");
	cr_expect_eq(json_array_size(jpath(g, "event_report_storage_candidates")), 2);
	json_decref(r);
	srv_down();
}

Test(config, startup_config_file)
{
	static char path[300], env_path[400];
	const char *env[] = {env_path, NULL};
	json_t *r;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/mmc-kvcm-startup-%d.json", (int)getpid());
	f = fopen(path, "w");
	cr_assert(f);
	fprintf(
	    f, "{\"storage_config\":[{\"type\":\"dummy\",\"global_unique_name\":\"d1\",\"storage_spec\":{\"root_path\":"
	       "\"/x/\"}},{\"global_unique_name\":\"m1\",\"mmc\":{}}],\"instance_group\":{\"name\":\"default\","
	       "\"storage_candidates\":[\"d1\"],\"quota\":{\"capacity\":1000,\"quota_config\":[{\"storage_type\":"
	       "\"dummy\",\"capacity\":500}]},\"cache_config\":{\"cache_prefer_strategy\":2}}}");
	fclose(f);
	snprintf(env_path, sizeof(env_path), "kvcm.startup_config=%s", path);
	srv_up(env);
	cr_expect(has_storage("d1") && has_storage("m1") && !has_storage("nfs_01"));
	r = ADMIN("getInstanceGroup", "{\"name\":\"default\"}");
	cr_expect_str_eq(
	    json_string_value(jpath(
	        json_array_get(jpath(jpath(jpath(r, "instance_group"), "quota"), "quota_config"), 0), "storage_type")),
	    "ST_DUMMY", "internal type names are accepted");
	json_decref(r);
	cr_assert(register_simple(&srv.meta, "default", "i", 100));
	cr_expect(write_keys(&srv.meta, "i", "[1,2,3,4,5]"));
	EXPECT_CODE(CALL("startWriteCache", "{\"instance_id\":\"i\",\"block_keys\":[6]}"), "INTERNAL_ERROR");
	/* applied once: a restart with another file keeps what was persisted */
	f = fopen(path, "w");
	fprintf(f, "{}");
	fclose(f);
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_assert_eq(kvcm_srv_restart(&srv, env), 0);
	cr_expect(has_storage("d1"));
	unlink(path);
	srv_down();
}

Test(config, bad_settings_stop_the_server)
{
	static const char *const unknown[] = {"kvcm.no_such_key=1", NULL};
	static const char *const bad_value[] = {"kvcm.service.max_connections=zero", NULL};
	static const char *const bad_file[] = {"kvcm.startup_config=/nonexistent/startup.json", NULL};
	struct kvcm_srv s;
	char cmd[600];

	cr_expect_neq(kvcm_srv_start(&s, unknown), 0, "an unknown kvcm key is refused");
	snprintf(cmd, sizeof(cmd), "grep -q 'kvcm.no_such_key' '%s'", s.m.log);
	cr_expect_eq(system(cmd), 0, "the message names the key");
	kvcm_srv_stop(&s);
	cr_expect_neq(kvcm_srv_start(&s, bad_value), 0);
	kvcm_srv_stop(&s);
	cr_expect_neq(kvcm_srv_start(&s, bad_file), 0);
	kvcm_srv_stop(&s);
}

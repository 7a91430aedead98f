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
	EXPECT_CODE(ADMIN("getInstanceGroup", "{\"name\":\"test_group\"}"), "OK");
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

/* Every key the reference server's settings table takes (tair-kvcache server_config.cc, the versions of 0b29f6b3
 * and 93b1a302 and the Raft one), with a value it accepts. kvcm.cache_reclaimer.* are tested with the reclaimer. */
static const char *const reference_keys[] = {
    "kvcm.registry_storage.uri=local://?cluster_name=test",
    "kvcm.coordination.uri=",
    "kvcm.distributed_lock.uri=",
    "kvcm.leader_elector.node_id=n1",
    "kvcm.leader_elector.lease_ms=10000",
    "kvcm.leader_elector.loop_interval_ms=100",
    "kvcm.service.io_thread_num=2",
    "kvcm.service.enable_debug_service=false",
    "kvcm.logger.log_level=4",
    "kvcm.kv_meta.rpc_port=0",
    "kvcm.schedule_plan_executor_thread_count=8",
    "kvcm.schedule_plan_migration_worker_budget=3",
    "kvcm.meta_query.worker_count=4",
    "kvcm.meta_query.parallel_threshold=256",
    "kvcm.meta_query.chunk_size=128",
    "kvcm.cache_gc.enabled=true",
    "kvcm.cache_gc.scan_interval_ms=100",
    "kvcm.cache_gc.round_pause_ms=300000",
    "kvcm.cache_gc.scan_batch_size=256",
    "kvcm.cache_gc.orphan_writing_grace_period_ms=86400000",
    "kvcm.cache_gc.max_inflight_delete_requests=64",
    "kvcm.cache_gc.event_report_cleanup_enabled=true",
    "kvcm.cache_gc.event_report_action_batch_size=256",
    "kvcm.metrics.reporter_type=local",
    "kvcm.metrics.reporter_config=",
    "kvcm.metrics.report_interval_ms=20000",
    "kvcm.metrics.enable_prometheus=true",
    "kvcm.metrics.prometheus_prefix=kvcm",
    "kvcm.metrics.revisit_interval_buckets=1,5,30",
    "kvcm.event.event_publishers_configs=",
    "kvcm.service.advertised_host=127.0.0.1",
    "kvcm.service.custom_info=zone=a",
    "kvcm.affinity.enabled=false",
    "kvcm.affinity.strategy_file=",
    "kvcm.service.admin_auth_token=s3cr3t-admin-token",
    "kvcm.raft.server_id=0",
    "kvcm.raft.host=",
    "kvcm.raft.port=0",
    "kvcm.raft.peers=",
    "kvcm.raft.data_dir=",
    "kvcm.raft.snapshot_distance=50000",
    "kvcm.raft.election_timeout_lower=1000",
    "kvcm.raft.election_timeout_upper=2000",
    "kvcm.raft.heart_beat_interval=100",
    NULL,
};

/* kvcm.x=y as a config file line "kvcm.x = y" (the reference's own config files are in this form). */
static void write_conf(FILE *f, const char *const *entries)
{
	for (size_t i = 0; entries[i]; i++) {
		const char *eq = strchr(entries[i], '=');

		fprintf(f, "%.*s = %s\n", (int)(eq - entries[i]), entries[i], eq + 1);
	}
}

/* Each is accepted: implemented, or with one log line naming it and saying it has no effect here. The whole table
 * goes through the real binary's --check-config (more keys than a test may pass as --env). */
Test(config, reference_server_keys_are_accepted)
{
	static char conf[300], log[300], cmd[1200];
	FILE *f;
	int rc;

	snprintf(conf, sizeof(conf), "/tmp/mmc-kvcm-refkeys-%d.conf", (int)getpid());
	snprintf(log, sizeof(log), "/tmp/mmc-kvcm-refkeys-%d.log", (int)getpid());
	f = fopen(conf, "w");
	cr_assert(f);
	write_conf(f, reference_keys);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' --check-config --config '%s' 2>'%s'", getenv("MMC_METASERVER"), conf, log);
	rc = system(cmd);
	cr_expect_eq(rc, 0, "--check-config takes every key of the reference: %d", rc);
	snprintf(cmd, sizeof(cmd),
	         "test $(grep -c 'op=config key=kvcm.raft.peers .*no effect in mmc' '%s') = 1 && "
	         "test $(grep -c 'op=config key=kvcm.service.admin_auth_token .*no effect in mmc' '%s') = 1",
	         log, log);
	cr_expect_eq(system(cmd), 0, "one line says a key has no effect");
	snprintf(cmd, sizeof(cmd), "grep -q 's3cr3t-admin-token' '%s'", log);
	cr_expect_neq(system(cmd), 0, "the reference's admin token is in the log");
	unlink(conf);
	unlink(log);
}

/* The reference's local:// registry (files at its path) is the LMDB store of the data directory: what is
 * registered survives a restart. */
Test(config, local_registry_uri_is_the_data_dir)
{
	static const char *const env[] = {"kvcm.registry_storage.uri=local:///tmp/kvcm_registry?cluster_name=t", NULL};
	char cmd[600];

	srv_up(env);
	snprintf(cmd, sizeof(cmd), "grep -q 'key=kvcm.registry_storage.uri .*kept in LMDB' '%s'", srv.m.log);
	cr_expect_eq(system(cmd), 0, "one line says where the registry is kept");
	cr_assert(register_simple(&srv.meta, "default", "r", 100));
	cr_assert_eq(metaserver_stop(&srv.m), 0);
	cr_assert_eq(kvcm_srv_restart(&srv, env), 0);
	EXPECT_CODE(CALL("getInstanceInfo", "{\"instance_id\":\"r\"}"), "OK");
	srv_down();
}

/* kvcm.service.custom_info is this leader's custom_info in both forms of cluster info. */
Test(config, custom_info_names_the_leader)
{
	static const char *const env[] = {"kvcm.service.custom_info=zone=a", NULL};
	json_t *r;

	srv_up(env);
	r = CALL("getClusterInfo", "{}");
	cr_expect_str_eq(json_string_value(jpath(jpath(r, "leader_endpoint"), "custom_info")), "zone=a");
	json_decref(r);
	r = ADMIN("getManagerClusterInfo", "{}");
	cr_expect_str_eq(json_string_value(jpath(jpath(r, "leader_endpoint"), "custom_info")), "zone=a");
	json_decref(r);
	srv_down();
}

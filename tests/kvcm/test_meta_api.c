/*
 * One test per MetaService endpoint and per row of the situation -> code table (reference kvcm.md §2.3).
 */
#include "kvcm_test.h"

static const char *const debug_on[] = {DEBUG_SERVICE, NULL};

static void up(void)
{
	srv_up(debug_on);
	cr_assert(register_simple(&srv.meta, "default", "i1", 1024));
}

TestSuite(meta, .init = up, .fini = srv_down, .timeout = 30);

#define REG_BODY(group, id, bs, md, specs)                                                                             \
	"{\"instance_group\":\"" group "\",\"instance_id\":\"" id "\",\"block_size\":" bs ",\"model_deployment\":" md  \
	",\"location_spec_infos\":" specs "}"
#define MD    "{\"model_name\":\"m\",\"dtype\":\"fp16\"}"
#define SPECS "[{\"name\":\"tp0\",\"size\":1024}]"

Test(meta, register_instance_returns_storage_configs)
{
	json_t *r = CALL("registerInstance", REG_BODY("default", "r1", "8", MD, SPECS)), *cfgs;

	cr_assert_str_eq(code_of(r), "OK");
	cfgs = json_loads(json_string_value(jpath(r, "storage_configs")), 0, NULL);
	cr_assert(json_is_array(cfgs) && json_array_size(cfgs) == 1, "storage_configs must be a JSON list");
	cr_expect_str_eq(json_string_value(jpath(json_array_get(cfgs, 0), "global_unique_name")), "nfs_01");
	cr_expect_str_eq(json_string_value(jpath(json_array_get(cfgs, 0), "type")), "file");
	cr_expect(json_is_string(jpath(r, "extra_info")));
	cr_expect_str_eq(json_string_value(jpath(jpath(r, "header"), "tracer_result")), "");
	json_decref(cfgs);
	json_decref(r);
}

Test(meta, register_instance_invalid_fields)
{
	static const struct {
		const char *body, *field;
	} bad[] = {
	    {REG_BODY("", "x", "8", MD, SPECS), "instance_group"},
	    {REG_BODY("default", "", "8", MD, SPECS), "instance_id"},
	    {REG_BODY("default", "x", "0", MD, SPECS), "block_size"},
	    {REG_BODY("default", "x", "-1", MD, SPECS), "block_size"},
	    {"{\"instance_group\":\"default\",\"instance_id\":\"x\",\"block_size\":8,\"location_spec_infos\":" SPECS
	     "}",
	     "model_deployment"},
	    {REG_BODY("default", "x", "8", "{\"model_name\":\"\",\"dtype\":\"fp16\"}", SPECS), "model_deployment"},
	    {REG_BODY("default", "x", "8", "{\"model_name\":\"m\"}", SPECS), "model_deployment"},
	    {REG_BODY("default", "x", "8", MD, "[]"), "location_spec_infos"},
	    {REG_BODY("default", "x", "8", MD, "[{\"name\":\"\",\"size\":1}]"), "location_spec_infos"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *r = CALL("registerInstance", "%s", bad[i].body);

		cr_expect_str_eq(code_of(r), "INVALID_ARGUMENT", "case %zu: %s", i, message_of(r));
		cr_expect(strstr(message_of(r), bad[i].field), "case %zu: message \"%s\" does not name %s", i,
		          message_of(r), bad[i].field);
		json_decref(r);
	}
	EXPECT_CODE(CALL("getInstanceInfo", "{\"instance_id\":\"x\"}"), "INSTANCE_NOT_EXIST");
}

Test(meta, register_instance_idempotent_and_duplicate_entity)
{
	json_t *r;

	EXPECT_CODE(CALL("registerInstance", REG_BODY("default", "d1", "8", MD, SPECS)), "OK");
	EXPECT_CODE(CALL("registerInstance", REG_BODY("default", "d1", "8", MD, SPECS)), "OK");
	/* user_data is not part of the identity */
	EXPECT_CODE(
	    CALL("registerInstance", REG_BODY("default", "d1", "8",
	                                      "{\"model_name\":\"m\",\"dtype\":\"fp16\",\"user_data\":\"u\"}", SPECS)),
	    "OK");
	r = CALL("registerInstance",
	         REG_BODY("default", "d1", "16", "{\"model_name\":\"other\",\"dtype\":\"fp16\"}", SPECS));
	cr_expect_str_eq(code_of(r), "DUPLICATE_ENTITY");
	cr_expect(strstr(message_of(r), "d1") && strstr(message_of(r), "model_deployment") &&
	              strstr(message_of(r), "block_size"),
	          "message: %s", message_of(r));
	json_decref(r);
	r = CALL("registerInstance", REG_BODY("default", "d1", "8", MD, "[{\"name\":\"tp1\",\"size\":1024}]"));
	cr_expect_str_eq(code_of(r), "DUPLICATE_ENTITY");
	cr_expect(strstr(message_of(r), "location_spec_infos"), "message: %s", message_of(r));
	json_decref(r);
}

/* The reference's own tests: a missing group is an error whose message names it. */
Test(meta, register_instance_into_a_missing_group_fails)
{
	json_t *r = CALL("registerInstance", REG_BODY("absolutely_nonexistent_group_xyz", "g1", "8", MD, SPECS));

	cr_expect_str_neq(code_of(r), "OK");
	cr_expect(strstr(message_of(r), "absolutely_nonexistent_group_xyz"), "the message names the group: %s",
	          message_of(r));
	json_decref(r);
	EXPECT_CODE(ADMIN("getInstanceGroup", "{\"name\":\"absolutely_nonexistent_group_xyz\"}"), "INSTANCE_NOT_EXIST");
	/* the group of the reference's registerInstance example is built in */
	EXPECT_CODE(CALL("registerInstance", REG_BODY("test_group", "g2", "8", MD, SPECS)), "OK");
}

/* kvcm.instance_group.auto_create: mmc's former default. */
Test(meta, register_instance_creates_missing_group_from_default, .init = NULL)
{
	static const char *const env[] = {"kvcm.instance_group.auto_create=true", NULL};
	json_t *r;

	srv_up(env);
	EXPECT_CODE(CALL("registerInstance", REG_BODY("brand_new", "g1", "8", MD, SPECS)), "OK");
	r = ADMIN("getInstanceGroup", "{\"name\":\"brand_new\"}");
	cr_assert_str_eq(code_of(r), "OK");
	cr_expect_str_eq(json_string_value(jpath(jpath(r, "instance_group"), "name")), "brand_new");
	cr_expect_str_eq(json_string_value(json_array_get(jpath(jpath(r, "instance_group"), "storage_candidates"), 0)),
	                 "nfs_01");
	json_decref(r);
	/* a group name longer than any group's may be is refused: its group could not be stored, and the instance
	 * would be gone after a restart */
	{
		char name[600];

		memset(name, 'g', sizeof(name) - 1);
		name[sizeof(name) - 1] = '\0';
		EXPECT_CODE(CALL("registerInstance", REG_BODY("%s", "g2", "8", MD, SPECS), name), "INVALID_ARGUMENT");
	}
}

Test(meta, get_instance_info)
{
	json_t *r = CALL("getInstanceInfo", "{\"trace_id\":\"abc\",\"instance_id\":\"i1\"}"), *info;

	cr_assert_str_eq(code_of(r), "OK");
	cr_expect_str_eq(json_string_value(jpath(r, "instance_group")), "default");
	info = jpath(r, "instance_info");
	cr_expect_str_eq(json_string_value(jpath(info, "instance_id")), "i1");
	cr_expect_eq(json_integer_value(jpath(info, "block_size")), 8);
	cr_expect_str_eq(json_string_value(jpath(jpath(info, "model_deployment"), "model_name")), "m");
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(info, "location_spec_infos"), 0), "size")),
	                 "1024", "int64 fields are printed as strings");
	cr_expect(strncmp(json_string_value(jpath(jpath(r, "header"), "request_id")), "abc_", 4) == 0);
	json_decref(r);
	EXPECT_CODE(CALL("getInstanceInfo", "{\"instance_id\":\"nobody\"}"), "INSTANCE_NOT_EXIST");
}

Test(meta, instance_scoped_apis_check_the_instance_first)
{
	static const char *const apis[] = {"getCacheLocation", "getCacheLocationLen", "startWriteCache",
	                                   "finishWriteCache", "removeCache",         "trimCache",
	                                   "getCacheMeta",     "getCacheMetaDetail"};

	for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++) {
		EXPECT_CODE(hc_call(&srv.meta, apis[i], "{\"instance_id\":\"ghost\",\"block_keys\":[1]}"),
		            "INSTANCE_NOT_EXIST");
		EXPECT_CODE(hc_call(&srv.meta, apis[i], "{\"block_keys\":[1]}"), "INSTANCE_NOT_EXIST");
	}
}

Test(meta, empty_keys_are_invalid)
{
	static const char *const apis[] = {"getCacheLocation", "getCacheLocationLen", "startWriteCache",
	                                   "removeCache",      "getCacheMeta",        "getCacheMetaDetail"};

	for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++) {
		EXPECT_CODE(hc_call(&srv.meta, apis[i], "{\"instance_id\":\"i1\"}"), "INVALID_ARGUMENT");
		EXPECT_CODE(hc_call(&srv.meta, apis[i], "{\"instance_id\":\"i1\",\"block_keys\":[],\"token_ids\":[]}"),
		            "INVALID_ARGUMENT");
	}
}

Test(meta, get_cache_location_and_len)
{
	json_t *r;

	cr_assert(write_keys(&srv.meta, "i1", "[1,2,3]"));
	r = CALL("getCacheLocation", "{\"instance_id\":\"i1\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[1,2,"
	                             "3,4]}");
	cr_assert_str_eq(code_of(r), "OK");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 3);
	json_decref(r);
	r = CALL("getCacheLocationLen", "{\"instance_id\":\"i1\",\"query_type\":2,\"block_keys\":[1,2,3,4]}");
	cr_assert_str_eq(code_of(r), "OK");
	cr_expect_str_eq(json_string_value(jpath(r, "cache_location_len")), "3");
	json_decref(r);
	r = CALL("getCacheLocationLen",
	         "{\"instance_id\":\"i1\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":[9,2]}");
	cr_expect_str_eq(json_string_value(jpath(r, "cache_location_len")), "1");
	json_decref(r);
}

Test(meta, unsupported_and_bad_query_types)
{
	EXPECT_CODE(CALL("getCacheLocation", "{\"instance_id\":\"i1\",\"query_type\":4,\"block_keys\":[1]}"),
	            "INTERNAL_ERROR");
	EXPECT_CODE(CALL("getCacheLocationLen", "{\"instance_id\":\"i1\",\"query_type\":99,\"block_keys\":[1]}"),
	            "INTERNAL_ERROR");
	for (int sw = -1; sw <= 0; sw++)
		EXPECT_CODE(CALL("getCacheLocation",
		                 "{\"instance_id\":\"i1\",\"query_type\":\"QT_REVERSE_ROLL_SW_MATCH\",\"sw_size\":%d,"
		                 "\"block_keys\":[1,2]}",
		                 sw),
		            "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("getCacheLocation", "{\"instance_id\":\"i1\",\"query_type\":3,\"sw_size\":3,\"block_keys\":[1,"
	                                     "2]}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("getCacheLocationLen", "{\"instance_id\":\"i1\",\"query_type\":3,\"sw_size\":0,"
	                                        "\"block_keys\":[1]}"),
	            "INVALID_ARGUMENT");
}

Test(meta, get_cluster_info)
{
	json_t *r = CALL("getClusterInfo", "{\"trace_id\":\"t\"}"), *ep;

	cr_assert_str_eq(code_of(r), "OK");
	cr_expect_str_eq(json_string_value(jpath(r, "self_node_id")), json_string_value(jpath(r, "leader_node_id")));
	ep = jpath(r, "leader_endpoint");
	cr_expect_eq(json_integer_value(jpath(ep, "meta_http_port")), srv.m.http_port);
	/* the newest reference keeps the admin ports off the MetaService */
	cr_expect_null(jpath(ep, "admin_http_port"));
	cr_expect_null(jpath(ep, "admin_rpc_port"));
	cr_expect_gt(json_integer_value(jpath(ep, "meta_rpc_port")), 0);
	cr_expect(strlen(json_string_value(jpath(ep, "host"))) > 0);
	json_decref(r);
}

Test(meta, trim_cache_strategies)
{
	srv_clock_freeze();
	EXPECT_CODE(CALL("trimCache", "{\"instance_id\":\"i1\"}"), "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("trimCache", "{\"instance_id\":\"i1\",\"strategy\":\"TS_REMOVE_ALL_META\"}"), "UNSUPPORTED");
	EXPECT_CODE(CALL("trimCache", "{\"instance_id\":\"i1\",\"strategy\":3}"), "UNSUPPORTED");
	cr_assert(write_keys(&srv.meta, "i1", "[5,6]"));
	EXPECT_CODE(CALL("trimCache", "{\"instance_id\":\"i1\",\"strategy\":\"TS_REMOVE_ALL_CACHE\","
	                              "\"begin_timestamp\":0,\"end_timestamp\":0}"),
	            "OK");
	/* asynchronous: the default group waits delay_before_delete_ms (1 s) before deleting */
	srv_clock_advance(1000);
	for (int i = 0; i < POLL_CAP; i++) {
		json_t *r = CALL("getCacheMeta", "{\"instance_id\":\"i1\",\"block_keys\":[5,6]}");
		bool gone = strcmp(json_string_value(json_array_get(jpath(r, "metas"), 1)),
		                   "{\"status\":\"CLS_NOT_FOUND\"}") == 0;

		json_decref(r);
		if (gone)
			return;
		poll_pause();
	}
	cr_assert_fail("trimCache did not delete the blocks");
}

Test(meta, remove_cache_is_asynchronous_and_total)
{
	json_t *r;
	bool gone = false;

	srv_clock_freeze();
	cr_assert(write_keys(&srv.meta, "i1", "[7,8]"));
	EXPECT_CODE(
	    CALL("removeCache", "{\"instance_id\":\"i1\",\"block_keys\":[7,12345],\"block_mask\":{\"offset\":1}}"),
	    "OK");
	r = CALL("getCacheMeta", "{\"instance_id\":\"i1\",\"block_keys\":[7,8]}");
	cr_expect(strstr(json_string_value(json_array_get(jpath(r, "metas"), 0)), "CLS_DELETING"),
	          "removed but not yet deleted: %s", json_string_value(json_array_get(jpath(r, "metas"), 0)));
	cr_expect(strstr(json_string_value(json_array_get(jpath(r, "metas"), 1)), "CLS_SERVING"));
	json_decref(r);
	r = CALL("getCacheLocation", "{\"instance_id\":\"i1\",\"block_keys\":[7]}");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 0, "a DELETING location is not served");
	json_decref(r);
	srv_clock_advance(999);
	cr_expect_eq(srv_metric("mmc_kvcm_pending_deletes"), 1, "deleted before delay_before_delete_ms (1 s)");
	srv_clock_advance(1);
	for (int i = 0; i < POLL_CAP && !gone; i++) {
		r = CALL("getCacheMeta", "{\"instance_id\":\"i1\",\"block_keys\":[7]}");
		gone = strcmp(json_string_value(json_array_get(jpath(r, "metas"), 0)),
		              "{\"status\":\"CLS_NOT_FOUND\"}") == 0;
		json_decref(r);
		if (!gone)
			poll_pause();
	}
	cr_expect(gone, "removeCache did not delete the block");
}

Test(meta, get_cache_meta_rows_are_independent)
{
	json_t *r;
	const char *m0, *m1;

	cr_assert(write_keys(&srv.meta, "i1", "[21]"));
	/* a hit followed by a miss: the miss must not carry the hit's id (the reference leaks it) */
	r = CALL("getCacheMeta", "{\"instance_id\":\"i1\",\"block_keys\":[21,22,23],\"block_mask\":{\"bool_masks\":{"
	                         "\"values\":[false,false,true]}},\"detail_level\":1}");
	cr_assert_str_eq(code_of(r), "OK");
	cr_assert_eq(json_array_size(jpath(r, "metas")), 2, "the masked key is skipped");
	m0 = json_string_value(json_array_get(jpath(r, "metas"), 0));
	m1 = json_string_value(json_array_get(jpath(r, "metas"), 1));
	cr_expect(strstr(m0, "\"id\":") && strstr(m0, "CLS_SERVING"), "%s", m0);
	cr_expect_str_eq(m1, "{\"status\":\"CLS_NOT_FOUND\"}");
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(r, "locations"), 1), "type")), "ST_UNSPECIFIED");
	json_decref(r);
}

Test(meta, get_cache_meta_detail_shape)
{
	json_t *r, *items, *it, *loc;

	cr_assert(write_keys(&srv.meta, "i1", "[100,101]"));
	r = CALL("getCacheMetaDetail", "{\"instance_id\":\"i1\",\"block_keys\":[101,456],\"block_mask\":{\"offset\":0}"
	                               ",\"detail_level\":1}");
	cr_assert_str_eq(code_of(r), "OK");
	items = jpath(r, "items");
	cr_assert_eq(json_array_size(items), 2);
	it = json_array_get(items, 0);
	cr_expect_str_eq(json_string_value(jpath(jpath(it, "status"), "code")), "OK");
	cr_expect_eq(json_integer_value(jpath(it, "request_index")), 0);
	cr_expect_str_eq(json_string_value(jpath(it, "block_key")), "101");
	cr_expect_str_eq(json_string_value(jpath(it, "prev_block_key")), "100");
	cr_expect_str_eq(json_string_value(jpath(jpath(it, "properties"), "BP#prev_key")), "100");
	loc = json_array_get(jpath(it, "locations"), 0);
	cr_expect_eq(strlen(json_string_value(jpath(loc, "location_id"))), 8);
	cr_expect_str_eq(json_string_value(jpath(loc, "status")), "CLS_SERVING");
	cr_expect_str_eq(json_string_value(jpath(loc, "type")), "ST_NFS");
	cr_expect_eq(json_integer_value(jpath(loc, "spec_size")), 1);
	cr_expect(json_is_string(jpath(loc, "create_time")));
	it = json_array_get(items, 1);
	cr_expect_eq(json_integer_value(jpath(it, "request_index")), 1);
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(it, "locations"), 0), "status")),
	                 "CLS_NOT_FOUND");
	json_decref(r);
}

Test(meta, token_ids_derive_chained_block_keys)
{
	json_t *r;

	/* block_size 8: 17 tokens make 2 blocks, the partial third is ignored */
	r = CALL("startWriteCache", "{\"instance_id\":\"i1\",\"token_ids\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17],"
	                            "\"write_timeout_seconds\":30}");
	cr_assert_str_eq(code_of(r), "OK");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 2);
	json_decref(r);
	r = CALL("getCacheMetaDetail",
	         "{\"instance_id\":\"i1\",\"token_ids\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}");
	cr_assert_eq(json_array_size(jpath(r, "items")), 2);
	/* the values of the reference's chained hash (kvcm.md §3.5), computed independently */
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(r, "items"), 0), "block_key")),
	                 "6902853672176602142");
	cr_expect_str_eq(json_string_value(jpath(json_array_get(jpath(r, "items"), 1), "block_key")),
	                 "3436079420768077133");
	cr_expect_str_eq(json_string_value(jpath(
	                     json_array_get(jpath(json_array_get(jpath(r, "items"), 1), "locations"), 0), "status")),
	                 "CLS_WRITING");
	json_decref(r);
}

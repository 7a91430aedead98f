/*
 * The write path: startWriteCache masks (offset when the cached keys are a clean prefix, bools otherwise),
 * repeated keys written once, finishWriteCache mask rules (validated before the session is consumed), session
 * expiry, spec groups, and the errors of storage selection.
 */
#include "kvcm_test.h"

#include <sys/stat.h>
#include <unistd.h>

static const char *const fast_expiry[] = {"kvcm.write_session.sweep_interval_ms=50",
                                          "kvcm.write_session.empty_timeout_ms=300", DEBUG_SERVICE, NULL};

static void up(void)
{
	srv_up(fast_expiry);
	cr_assert(register_simple(&srv.meta, "default", "w", 1000));
}

TestSuite(write, .init = up, .fini = srv_down, .timeout = 30);

static json_t *start(const char *keys)
{
	json_t *r =
	    CALL("startWriteCache", "{\"instance_id\":\"w\",\"block_keys\":%s,\"write_timeout_seconds\":30}", keys);

	cr_assert_str_eq(code_of(r), "OK", "startWriteCache %s: %s", keys, message_of(r));
	return r;
}

static char *mask_text(json_t *r)
{
	return json_dumps(jpath(r, "block_mask"), JSON_COMPACT);
}

static void expect_mask(const char *keys, const char *want, size_t nlocs)
{
	json_t *r = start(keys);
	char *m = mask_text(r);

	cr_expect_str_eq(m, want, "keys %s", keys);
	cr_expect_eq(json_array_size(jpath(r, "locations")), nlocs, "keys %s", keys);
	cr_expect_eq(strlen(json_string_value(jpath(r, "write_session_id"))), 32);
	free(m);
	json_decref(r);
}

Test(write, mask_matrix)
{
	cr_assert(write_keys(&srv.meta, "w", "[1,2]"));
	expect_mask("[10,11]", "{\"offset\":0}", 2);  /* nothing cached */
	expect_mask("[1,2]", "{\"offset\":2}", 0);    /* all cached */
	expect_mask("[1,2,12]", "{\"offset\":2}", 1); /* clean prefix */
	expect_mask("[13,1,2]", "{\"bool_masks\":{\"values\":[false,true,true]}}", 1);
	expect_mask("[1,14,2]", "{\"bool_masks\":{\"values\":[true,false,true]}}", 1);
	/* 10 and 11 are WRITING in an open session: existing for writers, so masked */
	expect_mask("[10,11,15]", "{\"offset\":2}", 1);
}

Test(write, repeated_key_is_written_once)
{
	json_t *r = start("[1234,4567,1234]");
	char *m = mask_text(r);

	cr_expect_str_eq(m, "{\"bool_masks\":{\"values\":[false,false,true]}}");
	cr_expect_eq(json_array_size(jpath(r, "locations")), 2, "one location per distinct key");
	free(m);
	json_decref(r);
	r = CALL("getCacheMetaDetail", "{\"instance_id\":\"w\",\"block_keys\":[1234]}");
	cr_expect_eq(json_array_size(jpath(json_array_get(jpath(r, "items"), 0), "locations")), 1);
	json_decref(r);
}

static json_t *finish(json_t *started, const char *mask)
{
	return CALL("finishWriteCache", "{\"instance_id\":\"w\",\"write_session_id\":\"%s\",\"success_blocks\":%s}",
	            json_string_value(jpath(started, "write_session_id")), mask);
}

static size_t hits(const char *keys)
{
	json_t *r =
	    CALL("getCacheLocation", "{\"instance_id\":\"w\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":%s}", keys);
	size_t n = 0;

	for (size_t i = 0; i < json_array_size(jpath(r, "locations")); i++)
		n += strcmp(json_string_value(jpath(json_array_get(jpath(r, "locations"), i), "type")),
		            "ST_UNSPECIFIED") != 0;
	json_decref(r);
	return n;
}

Test(write, finish_mask_indexes_the_returned_locations)
{
	json_t *s;

	cr_assert(write_keys(&srv.meta, "w", "[2]"));
	/* keys 1,2,3: 2 is cached, so the locations are for 1 and 3; bools [false,true] means only 3 was written */
	s = start("[1,2,3]");
	cr_assert_eq(json_array_size(jpath(s, "locations")), 2);
	EXPECT_CODE(finish(s, "{\"bool_masks\":{\"values\":[false,true]}}"), "OK");
	cr_expect_eq(hits("[1]"), 0);
	cr_expect_eq(hits("[3]"), 1);
	json_decref(s);
	s = start("[20,21,22]");
	EXPECT_CODE(finish(s, "{\"offset\":2}"), "OK");
	cr_expect_eq(hits("[20,21,22]"), 2);
	json_decref(s);
}

Test(write, finish_validates_before_consuming)
{
	json_t *s = start("[30,31]");

	EXPECT_CODE(finish(s, "{\"offset\":3}"), "INVALID_ARGUMENT");
	EXPECT_CODE(finish(s, "{\"offset\":-1}"), "INVALID_ARGUMENT");
	EXPECT_CODE(finish(s, "{\"bool_masks\":{\"values\":[true,true,true]}}"), "INVALID_ARGUMENT");
	EXPECT_CODE(finish(s, "{}"), "INVALID_ARGUMENT");
	/* still open: a right mask now succeeds, and a second finish does not */
	EXPECT_CODE(finish(s, "{\"bool_masks\":{\"values\":[true,true]}}"), "OK");
	EXPECT_CODE(finish(s, "{\"offset\":2}"), "INTERNAL_ERROR");
	cr_expect_eq(hits("[30,31]"), 2);
	json_decref(s);
}

Test(write, finish_short_bool_mask_fails_the_rest)
{
	json_t *s = start("[40,41,42]");

	EXPECT_CODE(finish(s, "{\"bool_masks\":{\"values\":[true]}}"), "OK");
	cr_expect_eq(hits("[40]"), 1);
	cr_expect_eq(hits("[41,42]"), 0);
	json_decref(s);
}

Test(write, finish_errors)
{
	json_t *s = start("[50]");

	EXPECT_CODE(CALL("finishWriteCache", "{\"instance_id\":\"w\",\"success_blocks\":{\"offset\":0}}"),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("finishWriteCache", "{\"instance_id\":\"w\",\"write_session_id\":\"%s\"}",
	                 json_string_value(jpath(s, "write_session_id"))),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(CALL("finishWriteCache", "{\"instance_id\":\"w\",\"write_session_id\":\"nosuchsession\","
	                                     "\"success_blocks\":{\"offset\":0}}"),
	            "INTERNAL_ERROR");
	cr_assert(register_simple(&srv.meta, "default", "other", 1000));
	EXPECT_CODE(CALL("finishWriteCache",
	                 "{\"instance_id\":\"other\",\"write_session_id\":\"%s\","
	                 "\"success_blocks\":{\"offset\":1}}",
	                 json_string_value(jpath(s, "write_session_id"))),
	            "INVALID_ARGUMENT");
	EXPECT_CODE(finish(s, "{\"offset\":1}"), "OK");
	json_decref(s);
}

Test(write, empty_session_needs_an_empty_mask)
{
	json_t *s;

	cr_assert(write_keys(&srv.meta, "w", "[60]"));
	s = start("[60]");
	cr_expect_eq(json_array_size(jpath(s, "locations")), 0);
	EXPECT_CODE(finish(s, "{}"), "OK");
	json_decref(s);
}

Test(write, session_expiry_fails_its_blocks)
{
	json_t *s, *r;

	srv_clock_freeze();
	s = CALL("startWriteCache", "{\"instance_id\":\"w\",\"block_keys\":[70,71],\"write_timeout_seconds\":1}");
	cr_assert_str_eq(code_of(s), "OK");
	srv_clock_advance(1000);
	EXPECT_CODE(finish(s, "{\"offset\":2}"), "INTERNAL_ERROR");
	cr_expect(srv_deletes_done(), "the failed blocks' deletes did not finish");
	r = CALL("getCacheMeta", "{\"instance_id\":\"w\",\"block_keys\":[70,71]}");
	cr_expect_str_eq(json_string_value(json_array_get(jpath(r, "metas"), 0)), "{\"status\":\"CLS_NOT_FOUND\"}");
	json_decref(r);
	json_decref(s);
	/* a session that got no locations expires after kvcm.write_session.empty_timeout_ms */
	cr_assert(write_keys(&srv.meta, "w", "[72]"));
	s = start("[72]");
	srv_clock_advance(299);
	EXPECT_CODE(finish(s, "{}"), "OK");
	json_decref(s);
	s = start("[72]");
	srv_clock_advance(300);
	EXPECT_CODE(finish(s, "{}"), "INTERNAL_ERROR");
	json_decref(s);
	/* timeouts of 0 (or absent) expire at the next sweep, as the reference does */
	s = CALL("startWriteCache", "{\"instance_id\":\"w\",\"block_keys\":[73]}");
	srv_clock_advance(0);
	EXPECT_CODE(finish(s, "{\"offset\":1}"), "INTERNAL_ERROR");
	json_decref(s);
}

Test(write, writing_blocks_are_not_served)
{
	json_t *s = start("[80]");

	cr_expect_eq(hits("[80]"), 0);
	EXPECT_CODE(finish(s, "{\"offset\":1}"), "OK");
	cr_expect_eq(hits("[80]"), 1);
	json_decref(s);
}

Test(write, spec_groups)
{
	json_t *r;

	EXPECT_CODE(
	    CALL("registerInstance",
	         "{\"instance_group\":\"default\",\"instance_id\":\"hy\",\"block_size\":4,\"model_deployment\":"
	         "{\"model_name\":\"m\",\"dtype\":\"bf16\"},\"location_spec_infos\":[{\"name\":\"full\",\"size\":"
	         "100},{\"name\":\"linear\",\"size\":10}],\"location_spec_groups\":[{\"name\":\"F\","
	         "\"spec_names\":[\"full\"]},{\"name\":\"FL\",\"spec_names\":[\"full\",\"linear\"]}]}"),
	    "OK");
	EXPECT_CODE(CALL("startWriteCache", "{\"instance_id\":\"hy\",\"block_keys\":[1,2],"
	                                    "\"location_spec_group_names\":[\"F\"]}"),
	            "INTERNAL_ERROR");
	EXPECT_CODE(CALL("startWriteCache", "{\"instance_id\":\"hy\",\"block_keys\":[1,2],"
	                                    "\"location_spec_group_names\":[\"F\",\"nope\"]}"),
	            "INVALID_ARGUMENT");
	r = CALL("startWriteCache", "{\"instance_id\":\"hy\",\"block_keys\":[1,2],\"write_timeout_seconds\":9,"
	                            "\"location_spec_group_names\":[\"F\",\"FL\"]}");
	cr_assert_str_eq(code_of(r), "OK");
	cr_expect_eq(json_integer_value(jpath(json_array_get(jpath(r, "locations"), 0), "spec_size")), 1);
	cr_expect_eq(json_integer_value(jpath(json_array_get(jpath(r, "locations"), 1), "spec_size")), 2);
	json_decref(r);
}

Test(write, no_writable_storage)
{
	EXPECT_CODE(ADMIN("disableStorage", "{\"storage_unique_name\":\"nfs_01\"}"), "OK");
	EXPECT_CODE(CALL("startWriteCache", "{\"instance_id\":\"w\",\"block_keys\":[90]}"), "INTERNAL_ERROR");
	EXPECT_CODE(ADMIN("enableStorage", "{\"storage_unique_name\":\"nfs_01\"}"), "OK");
	EXPECT_CODE(CALL("startWriteCache", "{\"instance_id\":\"w\",\"block_keys\":[90],\"write_timeout_seconds\":5}"),
	            "OK");
}

Test(write, uris_follow_the_nfs_layout)
{
	json_t *r = start("[123]");
	const char *uri = json_string_value(
	    jpath(json_array_get(jpath(json_array_get(jpath(r, "locations"), 0), "location_specs"), 0), "uri"));
	char want[400];

	snprintf(want, sizeof(want), "file://%s/w/tp0/7b?size=1000", srv.root);
	cr_expect_str_eq(uri, want);
	json_decref(r);
	/* several keys of one request share a file, each in its slot */
	r = start("[124,125]");
	uri = json_string_value(
	    jpath(json_array_get(jpath(json_array_get(jpath(r, "locations"), 1), "location_specs"), 0), "uri"));
	cr_expect(strstr(uri, "/w/tp0/7c_") && strstr(uri, "?blkid=1&size=1000"), "%s", uri);
	json_decref(r);
}

static const char *const few_sessions[] = {"kvcm.write_session.max_sessions_per_instance=2", NULL};

static void up_few(void)
{
	srv_up(few_sessions);
	cr_assert(register_simple(&srv.meta, "default", "w", 1000));
	cr_assert(register_simple(&srv.meta, "default", "other", 1000));
}

TestSuite(write_sessions, .init = up_few, .fini = srv_down, .timeout = 30);

/* An instance holding its share of the open write sessions (kvcm.write_session.max_sessions_per_instance) is
 * refused more, and another instance is not: one leaking client cannot take every session for half an hour. */
Test(write_sessions, an_instance_s_sessions_leave_room_for_the_others)
{
	json_t *a = start("[1]"), *b = start("[2]"), *r;

	r = CALL("startWriteCache", "{\"instance_id\":\"w\",\"block_keys\":[3],\"write_timeout_seconds\":30}");
	cr_assert_str_eq(code_of(r), "INTERNAL_ERROR", "%s", message_of(r));
	cr_expect(strstr(message_of(r), "per instance"), "%s", message_of(r));
	json_decref(r);
	r = CALL("startWriteCache", "{\"instance_id\":\"other\",\"block_keys\":[3],\"write_timeout_seconds\":30}");
	cr_assert_str_eq(code_of(r), "OK", "another instance: %s", message_of(r));
	json_decref(r);
	json_decref(finish(a, "{\"offset\":1}"));
	json_decref(start("[3]")); /* a finished session gives its place back */
	json_decref(a);
	json_decref(b);
}

static const char *first_uri(json_t *started)
{
	return json_string_value(
	    jpath(json_array_get(jpath(json_array_get(jpath(started, "locations"), 0), "location_specs"), 0), "uri"));
}

/*
 * A second replica of a cached key on the same storage (min_replica_count 2) names a file of its own: on the first
 * copy's path its write would go over the served data, and the deleter of a failed write took the first copy's file
 * while its location still said CLS_SERVING.
 */
Test(write, a_second_replica_on_one_storage_names_a_file_of_its_own)
{
	char path[400], u1[400];
	json_t *s;
	FILE *f;

	srv_clock_freeze();
	s = start("[7]");
	snprintf(u1, sizeof(u1), "%s", first_uri(s));
	EXPECT_CODE(finish(s, "{\"offset\":1}"), "OK");
	json_decref(s);
	snprintf(path, sizeof(path), "%s/w", srv.root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/w/tp0", srv.root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/w/tp0/7", srv.root); /* the client's write of the first copy */
	cr_assert_not_null(f = fopen(path, "w"), "%s", path);
	fputs("the first copy", f);
	fclose(f);
	s = CALL("startWriteCache",
	         "{\"instance_id\":\"w\",\"block_keys\":[7],\"min_replica_count\":2,\"write_timeout_seconds\":30}");
	cr_assert_str_eq(code_of(s), "OK", "%s", message_of(s));
	cr_assert_eq(json_array_size(jpath(s, "locations")), 1, "a second replica is written");
	cr_expect_str_neq(first_uri(s), u1, "the second replica names the first one's file");
	EXPECT_CODE(finish(s, "{\"offset\":0}"), "OK"); /* its write failed: deleted */
	json_decref(s);
	srv_clock_advance(60000);
	cr_assert(srv_deletes_done());
	cr_expect_eq(access(path, F_OK), 0, "the failed replica's delete took the first copy's file");
	cr_expect_eq(hits("[7]"), 1);
}

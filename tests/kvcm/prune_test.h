/*
 * What the location pruning and multi-location test files share: a dummy storage whose data files the test
 * writes and deletes itself (as the reference's integration tests do), a group on it, writes, and prefix queries.
 */
#ifndef MMC_TEST_KVCM_PRUNE_TEST_H
#define MMC_TEST_KVCM_PRUNE_TEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvcm_test.h"

/*
 * Adds dummy storage "dm" (root under s's private directory, one key per file), group on it (32 KiB quota, no
 * reclaim) and registers id: one spec tp0 of 1024 bytes, or the registerInstance members of registration.
 */
static inline void prune_fixture(struct kvcm_srv *s, const char *group, const char *id, const char *registration)
{
	EXPECT_CODE(ADMIN("addStorage",
	                  "{\"storage\":{\"global_unique_name\":\"dm\",\"dummy\":{\"root_path\":\"%s/dummy/data/\","
	                  "\"key_count_per_file\":1}}}",
	                  s->root),
	            "OK");
	EXPECT_CODE(
	    ADMIN("createInstanceGroup",
	          "{\"instance_group\":{\"name\":\"%s\",\"storage_candidates\":[\"dm\"],\"quota\":{\"capacity\":"
	          "32768,\"quota_config\":[{\"storage_type\":6,\"capacity\":32768}]},\"cache_config\":{"
	          "\"reclaim_strategy\":{\"reclaim_policy\":1,\"trigger_strategy\":{\"used_percentage\":3.2},"
	          "\"delay_before_delete_ms\":100},\"meta_indexer_config\":{\"max_key_count\":32}}}}",
	          group),
	    "OK");
	if (!registration) {
		cr_assert(register_simple(&s->meta, group, id, 1024));
		return;
	}
	EXPECT_CODE(CALL("registerInstance",
	                 "{\"instance_group\":\"%s\",\"instance_id\":\"%s\",\"block_size\":128,\"model_deployment\":{"
	                 "\"model_name\":\"m\",\"dtype\":\"FP8\"},%s}",
	                 group, id, registration),
	            "OK");
}

/* startWriteCache of keys (a JSON array text), every block in spec group (NULL: none); asserts OK. */
static inline json_t *prune_start(const char *id, const char *keys, const char *spec_group)
{
	char groups[4096] = "";
	json_t *k = json_loads(keys, 0, NULL), *r;
	size_t n = json_array_size(k), len = 0;

	json_decref(k);
	for (size_t i = 0; spec_group && i < n && len + 300 < sizeof(groups); i++)
		len += (size_t)snprintf(groups + len, sizeof(groups) - len, "%s\"%s\"", i ? "," : "", spec_group);
	r = CALL("startWriteCache", "{\"instance_id\":\"%s\",\"block_keys\":%s,\"write_timeout_seconds\":30%s%s%s}", id,
	         keys, spec_group ? ",\"location_spec_group_names\":[" : "", groups, spec_group ? "]" : "");
	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	return r;
}

/* finishWriteCache of a start reply: every location written. */
static inline void prune_finish(const char *id, json_t *started)
{
	EXPECT_CODE(CALL("finishWriteCache",
	                 "{\"instance_id\":\"%s\",\"write_session_id\":\"%s\",\"success_blocks\":{\"offset\":%zu}}", id,
	                 json_string_value(jpath(started, "write_session_id")),
	                 json_array_size(jpath(started, "locations"))),
	            "OK");
}

static inline json_t *prune_specs(json_t *started, size_t i)
{
	return jpath(json_array_get(jpath(started, "locations"), i), "location_specs");
}

/* The file path of a dummy:// or file:// URI. */
static inline void prune_path(const char *uri, char *path, size_t cap)
{
	const char *p = strstr(uri, "://") + 3, *q = strchr(p, '?');

	snprintf(path, cap, "%.*s", (int)(q ? q - p : (ptrdiff_t)strlen(p)), p);
}

/* What a writer does: creates the file of every spec of every location (and its directories). */
static inline void prune_touch_all(json_t *started)
{
	char path[1024], cmd[2200];
	size_t i, j;
	json_t *spec;

	for (i = 0; i < json_array_size(jpath(started, "locations")); i++) {
		json_array_foreach(prune_specs(started, i), j, spec)
		{
			prune_path(json_string_value(jpath(spec, "uri")), path, sizeof(path));
			snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\" && touch '%s'", path, path);
			cr_assert_eq(system(cmd), 0);
		}
	}
}

/* Data lost behind the manager's back: the files of location i of a start reply are deleted. */
static inline void prune_remove(json_t *started, size_t i)
{
	char path[1024];
	size_t j;
	json_t *spec;

	json_array_foreach(prune_specs(started, i), j, spec)
	{
		prune_path(json_string_value(jpath(spec, "uri")), path, sizeof(path));
		cr_assert(unlink(path) == 0 || errno == ENOENT, "unlink %s", path);
	}
}

/* The block key a location's first URI names (its file is named by the key in hex). */
static inline int64_t prune_uri_key(json_t *started, size_t i)
{
	char path[1024];

	prune_path(json_string_value(jpath(json_array_get(prune_specs(started, i), 0), "uri")), path, sizeof(path));
	return (int64_t)strtoull(strrchr(path, '/') + 1, NULL, 16);
}

/* A prefix query of keys; returns the reply. */
static inline json_t *prune_prefix(const char *id, const char *keys)
{
	json_t *r = CALL("getCacheLocation",
	                 "{\"instance_id\":\"%s\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":%s,"
	                 "\"block_mask\":{\"offset\":0}}",
	                 id, keys);

	cr_assert_str_eq(code_of(r), "OK", "%s", message_of(r));
	return r;
}

static inline size_t prune_prefix_hits(const char *id, const char *keys)
{
	json_t *r = prune_prefix(id, keys);
	size_t n = json_array_size(jpath(r, "locations"));

	json_decref(r);
	return n;
}

#endif

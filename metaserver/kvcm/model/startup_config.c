#include "startup_config.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "group.h"
#include "kvcm_state.h"
#include "kvcm_store.h"
#include "log.h"
#include "mmc/mmc.h"
#include "storage.h"

static const char default_group[] =
    "{\"name\":\"default\",\"storage_candidates\":[\"nfs_01\"],"
    "\"global_quota_group_name\":\"default_quota_group\",\"max_instance_count\":100,"
    "\"quota\":{\"capacity\":30000000000,\"quota_config\":["
    "{\"storage_type\":\"file\",\"capacity\":10000000000},{\"storage_type\":\"hf3fs\",\"capacity\":10000000000},"
    "{\"storage_type\":\"pace\",\"capacity\":10000000000}]},"
    "\"cache_config\":{\"reclaim_strategy\":{\"reclaim_policy\":1,\"trigger_strategy\":{\"used_percentage\":0.8},"
    "\"delay_before_delete_ms\":1000},\"cache_prefer_strategy\":2,"
    "\"meta_indexer_config\":{\"max_key_count\":1000000,\"mutex_shard_num\":16,\"batch_key_size\":16,"
    "\"meta_storage_backend_config\":{\"storage_type\":\"local\",\"storage_uri\":\"\"},"
    "\"meta_cache_policy_config\":{\"type\":\"LRU\",\"capacity\":10000,\"cache_shard_bits\":0,"
    "\"high_pri_pool_ratio\":0.0}}},"
    "\"user_data\":\"{\\\"description\\\": \\\"Default instance group for KV Cache Manager\\\"}\",\"version\":1}";

static json_t *builtin(struct kvcm *k)
{
	json_error_t e;
	json_t *group = json_loads(default_group, 0, &e);
	json_t *nfs = json_pack("{s:s, s:s, s:{s:s, s:i}}", "type", "file", "global_unique_name", "nfs_01",
	                        "storage_spec", "root_path", k->conf.default_root, "key_count_per_file", 8);

	json_t *l1p5 = json_pack("{s:s, s:s, s:{}}", "type", "event_report_l1p5", "global_unique_name",
	                         "event_report_l1p5_default", "storage_spec");
	json_t *l2 = json_pack("{s:s, s:s, s:{}}", "type", "event_report_l2", "global_unique_name",
	                       "event_report_l2_default", "storage_spec");

	json_t *example;

	json_object_set_new(group, "event_report_storage_candidates",
	                    json_pack("[s, s]", "event_report_l1p5_default", "event_report_l2_default"));
	/* the group of the reference's own registerInstance example (its docs/api/meta_service.md), a copy of default:
	 * registering into a missing group fails, as in the reference, and that example still works as written */
	example = json_deep_copy(group);
	json_object_set_new(example, "name", json_string("test_group"));
	json_object_set_new(
	    example, "user_data",
	    json_string("{\"description\": \"The group of the reference's registerInstance example\"}"));
	return json_pack("{s:[o, o, o], s:[o, o]}", "storage_config", nfs, l1p5, l2, "instance_group", group, example);
}

/* Members named one of names, as a list whether the file gave one object or an array. */
static json_t *entries(json_t *root, const char *a, const char *b)
{
	json_t *v = json_object_get(root, a), *out;

	if (!v)
		v = json_object_get(root, b);
	if (json_is_array(v))
		return json_incref(v);
	out = json_array();
	if (json_is_object(v))
		json_array_append(out, v);
	return out;
}

static int add_storage(struct kvcm *k, json_t *e, char *err, size_t errlen)
{
	struct jd d = {0};
	json_t *cfg = json_object_get(e, "type") ? storage_from_internal(&d, e, err, errlen)
	                                         : jd_normalize(&d, e, storage_schema);
	json_t *avail = json_object_get(e, "is_available");
	char msg[512];
	int code;

	if (!cfg) {
		if (d.bad)
			snprintf(err, errlen, "startup config: bad storage (%s)", d.why);
		return MMC_ERROR;
	}
	code = storage_add(k, cfg, !json_is_false(avail), true, msg, sizeof(msg));
	if (code != KC_OK) {
		json_decref(cfg);
		snprintf(err, errlen, "startup config: %s", msg);
		return MMC_ERROR;
	}
	return 0;
}

/* The startup file's spellings: cache_prefer_strategy, and storage types by internal name ("file"). */
static void upgrade_group(json_t *g)
{
	json_t *cc = json_object_get(g, "cache_config"), *qc, *e;
	size_t i;
	int t;

	if (json_object_get(cc, "cache_prefer_strategy") && !json_object_get(cc, "data_storage_strategy"))
		json_object_set(cc, "data_storage_strategy", json_object_get(cc, "cache_prefer_strategy"));
	qc = json_object_get(json_object_get(g, "quota"), "quota_config");
	json_array_foreach(qc, i, e)
	{
		json_t *st = json_object_get(e, "storage_type");

		if (json_is_string(st) && storage_type_parse(json_string_value(st), &t))
			json_object_set_new(e, "storage_type", json_integer(t));
	}
}

static int add_group(struct kvcm *k, json_t *e, char *err, size_t errlen)
{
	struct jd d = {0};
	json_t *copy = json_deep_copy(e), *cfg;
	char msg[512];
	int code;

	upgrade_group(copy);
	cfg = jd_normalize(&d, copy, group_schema);
	json_decref(copy);
	if (!cfg) {
		snprintf(err, errlen, "startup config: bad instance group (%s)", d.why);
		return MMC_ERROR;
	}
	code = group_add(k, cfg, true, true, msg, sizeof(msg));
	if (code != KC_OK) {
		json_decref(cfg);
		snprintf(err, errlen, "startup config: %s", msg);
		return MMC_ERROR;
	}
	return 0;
}

static int apply(struct kvcm *k, json_t *root, char *err, size_t errlen)
{
	json_t *st = entries(root, "storage_config", "storage_configs"),
	       *gr = entries(root, "instance_group", "instance_groups"), *e;
	size_t i;
	int rc = 0;

	json_array_foreach(st, i, e) if (!rc) rc = add_storage(k, e, err, errlen);
	json_array_foreach(gr, i, e) if (!rc) rc = add_group(k, e, err, errlen);
	json_decref(st);
	json_decref(gr);
	return rc;
}

int startup_config_apply(struct kvcm *k, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root;
	int rc;

	if (store_initialized(&k->store))
		return 0;
	if (k->conf.startup_config[0]) {
		root = json_load_file(k->conf.startup_config, JSON_REJECT_DUPLICATES, &je);
		if (!root || !json_is_object(root)) {
			snprintf(err, errlen, "kvcm.startup_config \"%s\": %s (line %d)", k->conf.startup_config,
			         root ? "not a JSON object" : je.text, je.line);
			json_decref(root);
			return MMC_ERROR;
		}
	} else {
		root = builtin(k);
	}
	rc = apply(k, root, err, errlen);
	json_decref(root);
	if (rc == 0) {
		store_mark_initialized(&k->store);
		log_info("op=kvcm_startup_config source=\"%s\"",
		         k->conf.startup_config[0] ? k->conf.startup_config : "built-in");
	}
	return rc;
}

#include "group.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcm_state.h"
#include "kvcm_store.h"
#include "log.h"
#include "storage.h"

static const struct jfield quota_entry_schema[] = {
    {"storage_type", JF_ENUM, &enum_storage_type},
    {"capacity", JF_I64, NULL},
    {NULL, 0, NULL},
};
static const struct jfield quota_schema[] = {
    {"capacity", JF_I64, NULL},
    {"quota_config", JF_REP_MSG, quota_entry_schema},
    {NULL, 0, NULL},
};
static const struct jfield trigger_schema[] = {
    {"used_size", JF_I64, NULL}, {"used_percentage", JF_DBL, NULL}, {NULL, 0, NULL}};
static const struct jfield reclaim_schema[] = {
    {"storage_unique_name", JF_STR, NULL},
    {"reclaim_policy", JF_ENUM, &enum_reclaim_policy},
    {"trigger_strategy", JF_MSG, trigger_schema},
    {"trigger_period_seconds", JF_I64, NULL},
    {"reclaim_step_size", JF_I64, NULL},
    {"reclaim_step_percentage", JF_I32, NULL},
    {"delay_before_delete_ms", JF_I64, NULL},
    {"instance_reclaim_budget_policy", JF_ENUM, &enum_budget_policy},
    {NULL, 0, NULL},
};
static const struct jfield backend_schema[] = {
    {"storage_type", JF_STR, NULL},
    {"storage_uri", JF_STR, NULL},
    {"memory_primary", JF_BOOL, NULL},
    {NULL, 0, NULL},
};
static const struct jfield cache_policy_schema[] = {
    {"capacity", JF_I64, NULL},
    {"type", JF_STR, NULL},
    {"cache_shard_bits", JF_I32, NULL},
    {"high_pri_pool_ratio", JF_DBL, NULL},
    {NULL, 0, NULL},
};
/* The reference's defaults of an absent field (kv_cache_manager/config/meta_indexer_config.h) */
static const int64_t persist_interval_ms = 1000;
static const bool mutex_enabled = true;
/* Kept and returned as given; the index here has neither a persist interval nor per-shard mutexes to turn off. */
static const struct jfield indexer_schema[] = {
    {"max_key_count", JF_I64, NULL},
    {"mutex_shard_num", JF_I64, NULL},
    {"batch_key_size", JF_I64, NULL},
    {"meta_storage_backend_config", JF_MSG, backend_schema},
    {"meta_cache_policy_config", JF_MSG, cache_policy_schema},
    {"persist_metadata_interval_time_ms", JF_I64, &persist_interval_ms},
    {"mutex_enabled", JF_BOOL, &mutex_enabled},
    {NULL, 0, NULL},
};
static const struct jfield cache_config_schema[] = {
    {"reclaim_strategy", JF_MSG, reclaim_schema},
    {"data_storage_strategy", JF_ENUM, &enum_prefer_strategy},
    {"meta_indexer_config", JF_MSG, indexer_schema},
    {NULL, 0, NULL},
};

const struct jfield group_schema[] = {
    {"name", JF_STR, NULL},
    {"storage_candidates", JF_REP_STR, NULL},
    {"global_quota_group_name", JF_STR, NULL},
    {"max_instance_count", JF_I64, NULL},
    {"quota", JF_MSG, quota_schema},
    {"cache_config", JF_MSG, cache_config_schema},
    {"user_data", JF_STR, NULL},
    {"version", JF_I64, NULL},
    {"extra_info", JF_STR, NULL},
    {"event_report_storage_candidates", JF_REP_STR, NULL},
    {"revisit_interval_buckets", JF_STR, NULL},
    {"affinity_strategy_json", JF_STR, NULL}, /* kept and returned: there is no affinity layer here */
    {NULL, 0, NULL},
};

struct group *group_find(struct kvcm *k, const char *name)
{
	for (struct list *it = k->groups.next; it != &k->groups; it = it->next) {
		struct group *g = list_entry(it, struct group, link);

		if (strcmp(g->name, name) == 0)
			return g;
	}
	return NULL;
}

json_t *group_candidates(const struct group *g)
{
	return json_object_get(g->cfg, "storage_candidates");
}

json_t *group_event_candidates(const struct group *g)
{
	return json_object_get(g->cfg, "event_report_storage_candidates");
}

static bool in_list(json_t *a, const char *name)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v) if (strcmp(json_string_value(v), name) == 0) return true;
	return false;
}

bool group_uses_storage(const struct group *g, const char *storage)
{
	return in_list(group_candidates(g), storage) || in_list(group_event_candidates(g), storage);
}

/* Reads the fields the server acts on out of the canonical config. */
static void bind_cfg(struct group *g)
{
	json_t *quota = json_object_get(g->cfg, "quota"), *cc = json_object_get(g->cfg, "cache_config");
	json_t *rs = json_object_get(cc, "reclaim_strategy"), *qc = json_object_get(quota, "quota_config"), *e;
	size_t i;

	g->version = jn_i64(g->cfg, "version");
	g->max_instance_count = jn_i64(g->cfg, "max_instance_count");
	g->capacity = jn_i64(quota, "capacity");
	memset(g->type_capacity, 0, sizeof(g->type_capacity));
	json_array_foreach(qc, i, e)
	{
		int t = jn_enum(e, "storage_type", &enum_storage_type);

		if (t > 0 && t < ST_COUNT)
			g->type_capacity[t] = jn_i64(e, "capacity");
	}
	g->used_percentage = jn_double(json_object_get(rs, "trigger_strategy"), "used_percentage");
	g->delay_before_delete_ms = jn_i64(rs, "delay_before_delete_ms");
	g->prefer = jn_enum(cc, "data_storage_strategy", &enum_prefer_strategy);
	g->max_key_count = jn_i64(json_object_get(cc, "meta_indexer_config"), "max_key_count");
}

static int check_cfg(struct kvcm *k, json_t *cfg, char *msg, size_t msglen)
{
	json_t *c = json_object_get(cfg, "storage_candidates"),
	       *e = json_object_get(cfg, "event_report_storage_candidates");
	const char *name = jn_str(cfg, "name");
	struct storage *s;
	json_t *v;
	size_t i;

	if (!name[0] || strlen(name) >= KVCM_NAME_MAX) {
		snprintf(msg, msglen, "missing or invalid fields: {InstanceGroup: {name}}");
		return KC_INVALID_ARGUMENT;
	}
	/* a candidate may be added later (the reference's admin tests create groups first): a write finds out */
	json_array_foreach(c, i, v)
	{
		s = storage_find(k, json_string_value(v));
		if (!s)
			log_warn("op=kvcm_group_candidate_missing group=\"%s\" storage=\"%s\"", name,
			         json_string_value(v));
		else if (storage_is_event_report(s)) {
			snprintf(msg, msglen,
			         "storage_candidates: \"%s\" is an event-report storage, not a data storage",
			         json_string_value(v));
			return KC_INVALID_ARGUMENT;
		}
	}
	json_array_foreach(e, i, v)
	{
		s = storage_find(k, json_string_value(v));
		if (!s)
			log_warn("op=kvcm_group_candidate_missing group=\"%s\" storage=\"%s\"", name,
			         json_string_value(v));
		else if (!storage_is_event_report(s)) {
			snprintf(msg, msglen, "event_report_storage_candidates: \"%s\" is not an event-report storage",
			         json_string_value(v));
			return KC_INVALID_ARGUMENT;
		}
	}
	return KC_OK;
}

void group_free(struct group *g)
{
	if (!g)
		return;
	json_decref(g->cfg);
	free(g->name);
	free(g);
}

int group_add(struct kvcm *k, json_t *cfg, bool check, bool persist, char *msg, size_t msglen)
{
	const char *name = jn_str(cfg, "name");
	struct group *g;
	int rc = check ? check_cfg(k, cfg, msg, msglen) : KC_OK;

	if (rc != KC_OK)
		return rc;
	if (group_find(k, name)) {
		snprintf(msg, msglen, "instance group \"%s\" already exists", name);
		return KC_DUPLICATE_ENTITY;
	}
	g = calloc(1, sizeof(*g));
	if (!g || !(g->name = strdup(name))) {
		free(g);
		snprintf(msg, msglen, "out of memory");
		return KC_INTERNAL_ERROR;
	}
	g->cfg = cfg;
	bind_cfg(g);
	list_add_tail(&k->groups, &g->link);
	if (persist)
		store_put_json(&k->store, STORE_GROUPS, g->name, g->cfg);
	log_info("op=kvcm_add_group name=\"%s\" version=%lld", g->name, (long long)g->version);
	return KC_OK;
}

int group_update(struct kvcm *k, json_t *cfg, int64_t current_version, char *msg, size_t msglen)
{
	const char *name = jn_str(cfg, "name");
	struct group *g = group_find(k, name);
	int rc = check_cfg(k, cfg, msg, msglen);
	char v[24];

	if (rc != KC_OK)
		return rc;
	if (!g) {
		snprintf(msg, msglen, "instance group \"%s\" does not exist", name);
		return KC_INSTANCE_NOT_EXIST;
	}
	if (current_version != g->version) {
		snprintf(msg, msglen, "instance group \"%s\" is at version %lld, not current_version %lld", name,
		         (long long)g->version, (long long)current_version);
		return KC_INVALID_ARGUMENT;
	}
	if (jn_i64(cfg, "version") <= g->version) {
		snprintf(v, sizeof(v), "%lld", (long long)g->version + 1);
		json_object_set_new(cfg, "version", json_string(v));
	}
	json_decref(g->cfg);
	g->cfg = cfg;
	bind_cfg(g);
	store_put_json(&k->store, STORE_GROUPS, g->name, g->cfg);
	log_info("op=kvcm_update_group name=\"%s\" version=%lld", g->name, (long long)g->version);
	return KC_OK;
}

int group_remove(struct kvcm *k, const char *name, char *msg, size_t msglen)
{
	struct group *g = group_find(k, name);

	if (!g) {
		snprintf(msg, msglen, "instance group \"%s\" does not exist", name);
		return KC_INSTANCE_NOT_EXIST;
	}
	if (g->ninstances) {
		snprintf(msg, msglen, "instance group \"%s\" still has %u instances", name, g->ninstances);
		return KC_INVALID_ARGUMENT;
	}
	/* removed instances whose deletes are still running account their usage to g */
	for (struct list *it = k->zombie_instances.next; it != &k->zombie_instances; it = it->next) {
		if (list_entry(it, struct instance, zombie_link)->group == g) {
			snprintf(msg, msglen, "instance group \"%s\" still has an instance being removed; retry", name);
			return KC_INVALID_ARGUMENT;
		}
	}
	list_del(&g->link);
	store_del_json(&k->store, STORE_GROUPS, g->name);
	log_info("op=kvcm_remove_group name=\"%s\"", name);
	group_free(g);
	return KC_OK;
}

struct group *group_auto_create(struct kvcm *k, const char *name, char *msg, size_t msglen)
{
	struct group *def = group_find(k, "default");
	json_t *cfg;

	if (!def) {
		snprintf(msg, msglen,
		         "instance group \"%s\" does not exist (and there is no \"default\" group to copy)", name);
		return NULL;
	}
	cfg = json_deep_copy(def->cfg);
	if (!cfg)
		return NULL;
	json_object_set_new(cfg, "name", json_string(name));
	json_object_set_new(cfg, "version", json_string("1"));
	if (group_add(k, cfg, false, true, msg, msglen) != KC_OK) {
		json_decref(cfg);
		return NULL;
	}
	log_info("op=kvcm_auto_create_group name=\"%s\" from=default", name);
	return group_find(k, name);
}

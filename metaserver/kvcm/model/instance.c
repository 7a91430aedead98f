#include "instance.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_index.h"
#include "group.h"
#include "hash.h"
#include "kvcm_state.h"
#include "kvcm_store.h"
#include "log.h"

#define SPECS_MAX 256

static const struct jfield spec_info_schema[] = {{"name", JF_STR, NULL}, {"size", JF_I64, NULL}, {NULL, 0, NULL}};
static const struct jfield spec_group_schema[] = {
    {"name", JF_STR, NULL}, {"spec_names", JF_REP_STR, NULL}, {NULL, 0, NULL}};
static const struct jfield deployment_schema[] = {
    {"model_name", JF_STR, NULL},     {"dtype", JF_STR, NULL},   {"use_mla", JF_BOOL, NULL},
    {"tp_size", JF_I32, NULL},        {"dp_size", JF_I32, NULL}, {"lora_name", JF_STR, NULL},
    {"pp_size", JF_I32, NULL},        {"extra", JF_STR, NULL},   {"user_data", JF_STR, NULL},
    {"use_eagle_pop", JF_BOOL, NULL}, {NULL, 0, NULL},
};

const struct jfield instance_info_schema[] = {
    {"quota_group_name", JF_STR, NULL},
    {"instance_group_name", JF_STR, NULL},
    {"instance_id", JF_STR, NULL},
    {"block_size", JF_I32, NULL},
    {"location_spec_infos", JF_REP_MSG, spec_info_schema},
    {"model_deployment", JF_MSG, deployment_schema},
    {"location_spec_groups", JF_REP_MSG, spec_group_schema},
    {"default_query_type", JF_ENUM, &enum_query_type},
    {"affinity_strategy_json", JF_STR, NULL}, /* kept and returned: there is no affinity layer here */
    {NULL, 0, NULL},
};

static uint64_t id_hash(const char *id)
{
	return hash_bytes(id, strlen(id));
}

static uint64_t link_hash(const struct hmap_node *l)
{
	return id_hash(hmap_entry(l, struct instance, hlink)->id);
}

struct instance *instance_find(struct kvcm *k, const char *id)
{
	if (!id[0])
		return NULL;
	hmap_foreach_hash(&k->instances, id_hash(id), l)
	{
		struct instance *i = hmap_entry(l, struct instance, hlink);

		if (strcmp(i->id, id) == 0)
			return i;
	}
	return NULL;
}

static int registry_add(struct kvcm *k, struct instance *inst)
{
	return hmap_insert(&k->instances, &inst->hlink, id_hash(inst->id));
}

int instance_spec_index(const struct instance *inst, const char *name)
{
	for (uint32_t j = 0; j < inst->nspecs; j++)
		if (strcmp(inst->specs[j].name, name) == 0)
			return (int)j;
	return -1;
}

static void instance_free(struct instance *inst)
{
	if (inst->removed)
		list_del(&inst->zombie_link);
	block_index_free(inst);
	for (uint32_t j = 0; j < inst->nspecs; j++)
		free(inst->specs[j].name);
	for (uint32_t j = 0; j < inst->nspec_groups; j++) {
		free(inst->spec_groups[j].name);
		free(inst->spec_groups[j].specs);
	}
	free(inst->specs);
	free(inst->spec_groups);
	json_decref(inst->info);
	free(inst->id);
	free(inst);
}

/* Fills the typed fields from the canonical info; fails on a spec group naming an unknown spec. */
static int bind_info(struct instance *inst, char *msg, size_t msglen)
{
	json_t *specs = json_object_get(inst->info, "location_spec_infos");
	json_t *groups = json_object_get(inst->info, "location_spec_groups"), *e, *n;
	size_t i, j;

	inst->block_size = (int32_t)jn_i64(inst->info, "block_size");
	inst->default_query_type = jn_enum(inst->info, "default_query_type", &enum_query_type);
	inst->specs = calloc(json_array_size(specs) + 1, sizeof(*inst->specs));
	inst->spec_groups = calloc(json_array_size(groups) + 1, sizeof(*inst->spec_groups));
	if (!inst->specs || !inst->spec_groups)
		return KC_INTERNAL_ERROR;
	json_array_foreach(specs, i, e)
	{
		inst->specs[i].name = strdup(jn_str(e, "name"));
		inst->specs[i].size = jn_i64(e, "size");
		inst->nspecs++;
	}
	json_array_foreach(groups, i, e)
	{
		struct spec_group *g = &inst->spec_groups[i];
		json_t *names = json_object_get(e, "spec_names");

		g->name = strdup(jn_str(e, "name"));
		g->specs = calloc(json_array_size(names) + 1, sizeof(*g->specs));
		inst->nspec_groups++;
		if (!g->name || !g->specs)
			return KC_INTERNAL_ERROR;
		json_array_foreach(names, j, n)
		{
			int x = instance_spec_index(inst, json_string_value(n));

			if (x < 0) {
				snprintf(msg, msglen, "location_spec_groups: group \"%s\" names unknown spec \"%s\"",
				         g->name, json_string_value(n));
				return KC_INVALID_ARGUMENT;
			}
			g->specs[g->nspecs++] = (uint32_t)x;
		}
	}
	return KC_OK;
}

static struct instance *instance_new(json_t *info, struct group *g, char *msg, size_t msglen, int *code)
{
	struct instance *inst = calloc(1, sizeof(*inst));

	*code = KC_INTERNAL_ERROR;
	if (!inst)
		return NULL;
	block_index_init(inst);
	list_init(&inst->lru);
	list_init(&inst->zombie_link);
	inst->info = json_incref(info);
	inst->group = g;
	inst->id = strdup(jn_str(info, "instance_id"));
	if (!inst->id || (*code = bind_info(inst, msg, msglen)) != KC_OK) {
		instance_free(inst);
		return NULL;
	}
	return inst;
}

/* Appends "field (why)" to the list of invalid fields. */
static void invalid(char *list, size_t cap, const char *what)
{
	size_t n = strlen(list);

	snprintf(list + n, cap - n, "%s%s", n ? ", " : "", what);
}

static void validate(json_t *info, char *bad, size_t cap)
{
	json_t *md = json_object_get(info, "model_deployment"), *specs = json_object_get(info, "location_spec_infos");
	json_t *e;
	size_t i;

	/* as long as a group's name may be: an auto-created group of a longer one could not be stored, and its
	 * instance would be gone after a restart */
	if (!jn_str(info, "instance_group_name")[0] || strlen(jn_str(info, "instance_group_name")) >= KVCM_NAME_MAX)
		invalid(bad, cap, "instance_group");
	if (!jn_str(info, "instance_id")[0] || strlen(jn_str(info, "instance_id")) >= KVCM_NAME_MAX)
		invalid(bad, cap, "instance_id");
	if (jn_i64(info, "block_size") <= 0)
		invalid(bad, cap, "block_size (must be > 0)");
	if (!md)
		invalid(bad, cap, "model_deployment");
	else if (!jn_str(md, "model_name")[0] || !jn_str(md, "dtype")[0])
		invalid(bad, cap, "model_deployment (model_name and dtype must be set)");
	if (!json_array_size(specs) || json_array_size(specs) > SPECS_MAX)
		invalid(bad, cap, "location_spec_infos (1 to 256 specs)");
	json_array_foreach(specs, i, e)
	{
		if (!jn_str(e, "name")[0] || strlen(jn_str(e, "name")) >= KVCM_NAME_MAX) {
			invalid(bad, cap, "location_spec_infos.name");
			break;
		}
	}
	json_array_foreach(json_object_get(info, "location_spec_groups"), i, e)
	{
		if (!jn_str(e, "name")[0]) {
			invalid(bad, cap, "location_spec_groups.name");
			break;
		}
	}
}

/* The request as a canonical InstanceInfo (instance_group is named instance_group_name there). */
static json_t *request_info(struct jd *d, json_t *body)
{
	json_t *in = json_object(), *out;
	const char *fields[] = {"instance_id",           "block_size",           "location_spec_infos",
	                        "model_deployment",      "location_spec_groups", "default_query_type",
	                        "affinity_strategy_json"};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		json_t *v = jd_get(body, fields[i]);

		if (v)
			json_object_set(in, fields[i], v);
	}
	if (jd_get(body, "instance_group"))
		json_object_set(in, "instance_group_name", jd_get(body, "instance_group"));
	out = jd_normalize(d, in, instance_info_schema);
	json_decref(in);
	return out;
}

static json_t *identity(json_t *md)
{
	json_t *c = json_copy(md);

	if (c)
		json_object_del(c, "user_data");
	return c;
}

/* The reference's identity check: block size, specs, deployment (without user_data) and spec groups. */
static void mismatched(const struct instance *old, json_t *info, char *out, size_t cap)
{
	json_t *a = identity(json_object_get(old->info, "model_deployment"));
	json_t *b = identity(json_object_get(info, "model_deployment"));
	const char *fields[] = {"location_spec_infos", "location_spec_groups"};

	out[0] = '\0';
	if (!json_equal(a, b))
		invalid(out, cap, "model_deployment");
	if (jn_i64(old->info, "block_size") != jn_i64(info, "block_size"))
		invalid(out, cap, "block_size");
	for (size_t i = 0; i < 2; i++)
		if (!json_equal(json_object_get(old->info, fields[i]), json_object_get(info, fields[i])))
			invalid(out, cap, fields[i]);
	json_decref(a);
	json_decref(b);
}

/* The instance's record: {"uid":"N","info":{InstanceInfo}} (read back by instance_load), under its id; a removed
 * one's under its uid in STORE_REMOVED, until its last block is deleted (instance_load_removed). */
static void persist_record(struct kvcm *k, const struct instance *inst)
{
	char uid[24];
	json_t *rec;

	snprintf(uid, sizeof(uid), "%" PRIu64, inst->uid);
	rec = json_pack("{s:s, s:O}", "uid", uid, "info", inst->info);
	if (rec && inst->dir_uid)
		json_object_set_new(rec, "dir_uid", json_string(uid));
	store_put_json(&k->store, inst->removed ? STORE_REMOVED : STORE_INSTANCES, inst->removed ? uid : inst->id, rec);
	json_decref(rec);
}

/* Whether an earlier instance of id was removed and its deletes are still pending. */
static bool being_deleted(struct kvcm *k, const char *id)
{
	for (struct list *it = k->zombie_instances.next; it != &k->zombie_instances; it = it->next)
		if (strcmp(list_entry(it, struct instance, zombie_link)->id, id) == 0)
			return true;
	return false;
}

static int register_new(struct kvcm *k, json_t *info, struct instance **out, char *msg, size_t msglen)
{
	const char *gname = jn_str(info, "instance_group_name");
	struct group *g = group_find(k, gname);
	struct instance *inst;
	int code;

	if (!g && !k->conf.auto_create_group) {
		snprintf(msg, msglen, "instance group \"%s\" does not exist", gname);
		return KC_INSTANCE_NOT_EXIST;
	}
	if (!g && !(g = group_auto_create(k, gname, msg, msglen)))
		return KC_INSTANCE_NOT_EXIST;
	if (g->max_instance_count > 0 && g->ninstances >= g->max_instance_count) {
		snprintf(msg, msglen, "instance group \"%s\" already has max_instance_count (%lld) instances", gname,
		         (long long)g->max_instance_count);
		return KC_REACH_MAX_ENTITY_CAPACITY;
	}
	inst = instance_new(info, g, msg, msglen, &code);
	if (!inst)
		return code;
	inst->uid = k->next_uid++;
	/* the same id's files and pool objects would be the same ones: the removed instance's deletes, due later,
	 * would take this one's data (and its answers would say CLS_SERVING for files that are gone) */
	if (being_deleted(k, inst->id))
		inst->dir_uid = inst->uid;
	if (registry_add(k, inst)) {
		instance_free(inst);
		return KC_INTERNAL_ERROR;
	}
	g->ninstances++;
	persist_record(k, inst);
	store_put_next_uid(&k->store, k->next_uid);
	log_info("op=kvcm_register_instance id=\"%s\" group=\"%s\" uid=%" PRIu64, inst->id, g->name, inst->uid);
	*out = inst;
	return KC_OK;
}

int instance_register(struct kvcm *k, json_t *body, struct jd *d, struct instance **out, char *msg, size_t msglen)
{
	json_t *info = request_info(d, body);
	char bad[512] = "", diff[256];
	struct instance *old;
	int code;

	if (!info)
		return KC_INVALID_ARGUMENT;
	validate(info, bad, sizeof(bad));
	if (bad[0]) {
		snprintf(msg, msglen, "missing or invalid fields: {RegisterInstance: {%s}}", bad);
		json_decref(info);
		return KC_INVALID_ARGUMENT;
	}
	old = instance_find(k, jn_str(info, "instance_id"));
	if (old) {
		mismatched(old, info, diff, sizeof(diff));
		json_decref(info);
		*out = old;
		if (!diff[0])
			return KC_OK;
		snprintf(msg, msglen,
		         "register instance failed: instance_id '%s' already exists with different "
		         "configuration, mismatched fields: [%s]",
		         old->id, diff);
		return KC_DUPLICATE_ENTITY;
	}
	code = register_new(k, info, out, msg, msglen);
	json_decref(info);
	return code;
}

struct instance *instance_load(struct kvcm *k, json_t *record, char *msg, size_t msglen)
{
	json_t *info = json_object_get(record, "info");
	struct group *g = group_find(k, jn_str(info, "instance_group_name"));
	struct instance *inst;
	int code;

	if (!info || !g) {
		snprintf(msg, msglen, "instance record without a known group");
		return NULL;
	}
	inst = instance_new(info, g, msg, msglen, &code);
	if (!inst)
		return NULL;
	inst->uid = (uint64_t)jn_i64(record, "uid");
	inst->dir_uid = (uint64_t)jn_i64(record, "dir_uid");
	if (inst->uid >= k->next_uid)
		k->next_uid = inst->uid + 1;
	if (registry_add(k, inst)) {
		instance_free(inst);
		return NULL;
	}
	g->ninstances++;
	return inst;
}

struct instance *instance_load_removed(struct kvcm *k, json_t *record)
{
	json_t *info = json_object_get(record, "info");
	struct group *g = info ? group_find(k, jn_str(info, "instance_group_name")) : NULL;
	struct instance *inst;
	char msg[256];
	int code;

	if (!g) { /* its group went too: its blocks' records are dropped at load, as before such records */
		char uid[24];

		log_warn("op=kvcm_load removed_instance=\"%s\" err=\"its group is gone: its data is not deleted\"",
		         info ? jn_str(info, "instance_id") : "?");
		snprintf(uid, sizeof(uid), "%" PRIu64, (uint64_t)jn_i64(record, "uid"));
		store_del_json(&k->store, STORE_REMOVED, uid); /* said once, not at every start */
		return NULL;
	}
	if (!(inst = instance_new(info, g, msg, sizeof(msg), &code)))
		return NULL;
	inst->uid = (uint64_t)jn_i64(record, "uid");
	inst->dir_uid = (uint64_t)jn_i64(record, "dir_uid");
	if (inst->uid >= k->next_uid)
		k->next_uid = inst->uid + 1;
	inst->removed = true;
	list_add_tail(&k->zombie_instances, &inst->zombie_link);
	return inst;
}

void instance_unregister(struct kvcm *k, struct instance *inst)
{
	hmap_remove(&k->instances, &inst->hlink, id_hash(inst->id));
	inst->removed = true;
	list_add_tail(&k->zombie_instances, &inst->zombie_link);
	inst->group->ninstances--;
	store_del_json(&k->store, STORE_INSTANCES, inst->id);
	/* its blocks' deletes wait (delay_before_delete_ms, a scan of many blocks): a restart meanwhile finishes
	 * them from this record, or its data stayed for good, and a new instance of the id wrote over it */
	persist_record(k, inst);
	log_info("op=kvcm_remove_instance id=\"%s\" blocks=%" PRIu64, inst->id, inst->blocks.n);
	instance_hold(inst);
	instance_release(k, inst);
}

void instance_hold(struct instance *inst)
{
	inst->refs++;
}

void instance_release(struct kvcm *k, struct instance *inst)
{
	char uid[24];

	if (--inst->refs != 0 || !inst->removed || inst->blocks.n != 0)
		return;
	snprintf(uid, sizeof(uid), "%" PRIu64, inst->uid);
	store_del_json(&k->store, STORE_REMOVED, uid);
	instance_free(inst);
}

void instances_init(struct kvcm *k)
{
	hmap_init(&k->instances, link_hash, 64);
}

void instances_free(struct kvcm *k)
{
	hmap_foreach(&k->instances, l) instance_free(hmap_entry(l, struct instance, hlink));
	hmap_free(&k->instances);
	while (!list_empty(&k->zombie_instances))
		instance_free(list_entry(k->zombie_instances.next, struct instance, zombie_link));
}

static int by_id(const void *a, const void *b)
{
	return strcmp((*(struct instance *const *)a)->id, (*(struct instance *const *)b)->id);
}

void instance_each(struct kvcm *k, void (*fn)(void *arg, const struct instance *inst), void *arg)
{
	struct instance **v = malloc(k->instances.n * sizeof(*v) + 1);
	size_t n = 0;

	hmap_foreach(&k->instances, l)
	{
		struct instance *inst = hmap_entry(l, struct instance, hlink);

		if (v)
			v[n++] = inst;
		else
			fn(arg, inst); /* out of memory: every instance still, unordered */
	}
	if (!v)
		return;
	qsort(v, n, sizeof(*v), by_id);
	for (size_t i = 0; i < n; i++)
		fn(arg, v[i]);
	free(v);
}

void instance_write_info(struct jw *w, const struct instance *inst)
{
	json_t *c = json_copy(inst->info);

	if (!c) {
		w->oom = true;
		return;
	}
	json_object_set_new(c, "quota_group_name", json_string(jn_str(inst->group->cfg, "global_quota_group_name")));
	jw_json(w, c);
	json_decref(c);
}

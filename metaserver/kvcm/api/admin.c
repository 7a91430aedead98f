/*
 * The admin API (reference kvcm.md §4.16) on kvcm.service.admin_http_port: storages, instance groups,
 * instances and health. Changes are durable before the reply.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "block_scan.h"
#include "clock.h"
#include "group.h"
#include "instance.h"
#include "kvcm_state.h"
#include "reporter.h"
#include "storage.h"
#include "storage_root.h"

static void reply(struct call *c, int code, const char *msg, const char *ok_msg)
{
	if (code == KC_OK)
		call_ok(c, ok_msg);
	else
		call_fail(c, code, "%s", msg);
}

/* Normalises the message field of the body with schema; NULL when the call has been answered. */
static json_t *message(struct call *c, const char *field, const struct jfield *schema)
{
	json_t *in = jd_obj(&c->d, c->body, field), *cfg;

	if (call_decode_failed(c))
		return NULL;
	if (!in) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {%s}", field);
		return NULL;
	}
	cfg = jd_normalize(&c->d, in, schema);
	if (call_decode_failed(c)) {
		json_decref(cfg);
		return NULL;
	}
	return cfg;
}

/* Hands a normalised message to the model, which keeps cfg on KC_OK; arg: what the call read besides. */
typedef int apply_fn(struct kvcm *k, json_t *cfg, const void *arg, char *msg, size_t msglen);

/* The message field of the body, normalised with schema and applied; the reply says how that went. */
static void apply_message(struct call *c, const char *field, const struct jfield *schema, apply_fn *apply,
                          const void *arg, const char *ok_msg)
{
	json_t *cfg = message(c, field, schema);
	char msg[512];
	int code;

	if (!cfg)
		return;
	code = apply(c->k, cfg, arg, msg, sizeof(msg));
	if (code != KC_OK)
		json_decref(cfg);
	reply(c, code, msg, ok_msg);
}

static int add_storage(struct kvcm *k, json_t *cfg, const void *arg, char *msg, size_t msglen)
{
	int code = storage_roots_check(k, cfg, msg, msglen); /* where the operator allows KVCM's writes and deletes */

	return code != KC_OK ? code : storage_add(k, cfg, true, true, msg, msglen);
}

void admin_add_storage(struct call *c)
{
	apply_message(c, "storage", storage_schema, add_storage, NULL, "storage added");
}

void admin_list_storage(struct call *c)
{
	struct jw *o = &c->out;

	call_ok(c, "");
	jw_key(o, "storage");
	jw_arr(o);
	for (struct list *it = c->k->storages.next; it != &c->k->storages; it = it->next) {
		json_t *j = storage_admin_json(list_entry(it, struct storage, link));

		jw_json(o, j);
		json_decref(j);
	}
	jw_arr_end(o);
}

static void set_available(struct call *c, bool on)
{
	const char *name = jd_str(&c->d, c->body, "storage_unique_name");
	int code;

	if (call_decode_failed(c))
		return;
	code = storage_set_available(c->k, name, on);
	if (code != KC_OK)
		call_fail(c, code, "storage \"%.256s\" does not exist", name);
	else
		call_ok(c, on ? "storage enabled" : "storage disabled");
}

void admin_enable_storage(struct call *c)
{
	set_available(c, true);
}

void admin_disable_storage(struct call *c)
{
	set_available(c, false);
}

/* Removes what the body's field names (a storage, a group) with fn. */
static void remove_named(struct call *c, const char *field,
                         int (*fn)(struct kvcm *k, const char *name, char *msg, size_t msglen), const char *ok_msg)
{
	const char *name = jd_str(&c->d, c->body, field);
	char msg[512];

	if (call_decode_failed(c))
		return;
	reply(c, fn(c->k, name, msg, sizeof(msg)), msg, ok_msg);
}

void admin_remove_storage(struct call *c)
{
	remove_named(c, "storage_unique_name", storage_remove, "storage removed");
}

static int create_group(struct kvcm *k, json_t *cfg, const void *arg, char *msg, size_t msglen)
{
	return group_add(k, cfg, true, true, msg, msglen);
}

void admin_create_group(struct call *c)
{
	apply_message(c, "instance_group", group_schema, create_group, NULL, "instance group created");
}

static int update_group(struct kvcm *k, json_t *cfg, const void *arg, char *msg, size_t msglen)
{
	return group_update(k, cfg, *(const int64_t *)arg, msg, msglen);
}

void admin_update_group(struct call *c)
{
	/* read first: a malformed current_version is answered 400 like a malformed group */
	int64_t current = jd_i64(&c->d, c->body, "current_version");

	apply_message(c, "instance_group", group_schema, update_group, &current, "instance group updated");
}

void admin_get_group(struct call *c)
{
	const char *name = jd_str(&c->d, c->body, "name");
	struct group *g;

	if (call_decode_failed(c))
		return;
	g = group_find(c->k, name);
	if (!g) {
		call_fail(c, KC_INSTANCE_NOT_EXIST, "instance group \"%.256s\" does not exist", name);
		return;
	}
	call_ok(c, "");
	jw_key(&c->out, "instance_group");
	jw_json(&c->out, g->cfg);
}

void admin_list_groups(struct call *c)
{
	struct jw *o = &c->out;

	call_ok(c, "");
	jw_key(o, "instance_group");
	jw_arr(o);
	for (struct list *it = c->k->groups.next; it != &c->k->groups; it = it->next)
		jw_json(o, list_entry(it, struct group, link)->cfg);
	jw_arr_end(o);
}

void admin_remove_group(struct call *c)
{
	remove_named(c, "name", group_remove, "instance group removed");
}

void admin_register_instance(struct call *c)
{
	struct instance *inst = NULL;
	char msg[1024] = "";
	int code = instance_register(c->k, c->body, &c->d, &inst, msg, sizeof(msg));

	if (!call_decode_failed(c))
		reply(c, code, msg, "Instance registered successfully");
}

struct group_listing {
	struct jw *out;
	const char *group; /* "": every group */
};

static void list_instance(void *arg, const struct instance *inst)
{
	struct group_listing *g = arg;

	if (!g->group[0] || strcmp(inst->group->name, g->group) == 0)
		instance_write_info(g->out, inst);
}

void admin_list_instances(struct call *c)
{
	struct group_listing g = {&c->out, jd_str(&c->d, c->body, "instance_group_name")};

	if (call_decode_failed(c))
		return;
	call_ok(c, "");
	jw_key(g.out, "instance_info");
	jw_arr(g.out);
	instance_each(c->k, list_instance, &g);
	jw_arr_end(g.out);
}

void admin_remove_instance(struct call *c)
{
	const char *id = jd_str(&c->d, c->body, "instance_id");
	const char *group = jd_str(&c->d, c->body, "instance_group");
	struct instance *inst;

	if (call_decode_failed(c))
		return;
	inst = instance_find(c->k, id);
	if (!inst || (group[0] && strcmp(group, inst->group->name) != 0)) {
		call_fail(c, KC_INSTANCE_NOT_EXIST, "instance \"%.256s\" does not exist%s%.256s", id,
		          group[0] ? " in group " : "", group);
		return;
	}
	if (trim_instance(c->k, inst, NULL, NULL)) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return;
	}
	reporters_forget(c->k, inst);
	instance_unregister(c->k, inst);
	call_ok(c, "instance removed");
}

/*
 * registerInstance, getInstanceInfo and getClusterInfo (reference kvcm.md §4.1, §4.2, §4.12).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "fault_injection.h"
#include "group.h"
#include "instance.h"
#include "kvcm_state.h"
#include "storage.h"

/* The JSON text of the group's write candidates in their internal form (dummy storages left out). */
static void storage_configs(struct jw *w, const struct group *g, struct kvcm *k)
{
	json_t *arr = json_array(), *v;
	char *s;
	size_t i;

	json_array_foreach(group_candidates(g), i, v)
	{
		struct storage *st = storage_find(k, json_string_value(v));

		if (st && st->type != ST_DUMMY)
			json_array_append_new(arr, storage_internal_json(st));
	}
	s = json_dumps(arr, JSON_COMPACT | JSON_PRESERVE_ORDER);
	jw_kstr(w, "storage_configs", s ? s : "[]");
	free(s);
	json_decref(arr);
}

void api_register_instance(struct call *c)
{
	struct instance *inst = NULL;
	char msg[1024] = "";
	int code;

	if (fault_check(c, "RegisterInstance"))
		return;
	code = instance_register(c->k, c->body, &c->d, &inst, msg, sizeof(msg));
	if (call_decode_failed(c))
		return;
	if (code != KC_OK) {
		call_fail(c, code, "%s", msg);
		return;
	}
	call_ok(c, "Instance registered successfully");
	storage_configs(&c->out, inst->group, c->k);
	jw_kstr(&c->out, "extra_info", jn_str(inst->group->cfg, "extra_info"));
}

void api_register_instance_empty(struct jw *w)
{
	jw_kstr(w, "storage_configs", "");
	jw_kstr(w, "extra_info", "");
}

void api_get_instance_info(struct call *c)
{
	const char *id = jd_str(&c->d, c->body, "instance_id");
	struct instance *inst;

	if (call_decode_failed(c))
		return;
	inst = instance_find(c->k, id);
	if (!inst) {
		call_fail(c, KC_INSTANCE_NOT_EXIST, "instance \"%.256s\" does not exist", id);
		return;
	}
	call_ok(c, "");
	jw_kstr(&c->out, "instance_group", inst->group->name);
	jw_key(&c->out, "instance_info");
	instance_write_info(&c->out, inst);
}

void api_get_instance_info_empty(struct jw *w)
{
	jw_kstr(w, "instance_group", "");
}

void api_get_cluster_info_empty(struct jw *w)
{
	jw_kstr(w, "self_node_id", "");
	jw_kstr(w, "leader_node_id", "");
}

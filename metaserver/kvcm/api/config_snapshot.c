/*
 * genConfigSnapshot / loadConfigSnapshot (reference kvcm.md §4.16): the whole configuration as one JSON text,
 * and that text applied back. The snapshot is
 *   {"storage_config":[StorageConfig + is_available], "instance_group":[InstanceGroup], "instance_info":[...],
 *    "accounts":[{"user_name", "role", "password_hash"}]}
 * (the keys of kvcm.startup_config plus instances and accounts, with their salted PBKDF2 hashes: the passwords are
 * not in it). Loading adds what is missing and updates what exists, in that order; it never removes anything, and
 * an account that exists is kept as it is. Every entry is checked before the first is applied, so a malformed snapshot
 * changes nothing; an entry the model refuses stops the load there (earlier ones stay applied) and is named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "api.h"
#include "group.h"
#include "instance.h"
#include "kvcm_state.h"
#include "log.h"
#include "storage.h"
#include "storage_root.h"

static void list_storages(struct jw *w, struct kvcm *k)
{
	jw_key(w, "storage_config");
	jw_arr(w);
	for (struct list *it = k->storages.next; it != &k->storages; it = it->next) {
		json_t *j = storage_admin_json(list_entry(it, struct storage, link));

		jw_json(w, j);
		json_decref(j);
	}
	jw_arr_end(w);
}

static void snapshot_instance(void *arg, const struct instance *inst)
{
	instance_write_info(arg, inst);
}

static void snapshot_account(void *arg, const char *user, int role, const char *hash)
{
	struct jw *w = arg;

	jw_obj(w);
	jw_kstr(w, "user_name", user);
	jw_kstr(w, "role", enum_name(&enum_role, role));
	jw_kstr(w, "password_hash", hash);
	jw_obj_end(w);
}

void admin_gen_config_snapshot(struct call *c)
{
	struct kvcm *k = c->k;
	struct jw s;
	char *text;
	size_t len;

	jw_init(&s);
	jw_obj(&s);
	list_storages(&s, k);
	jw_key(&s, "instance_group");
	jw_arr(&s);
	for (struct list *it = k->groups.next; it != &k->groups; it = it->next)
		jw_json(&s, list_entry(it, struct group, link)->cfg);
	jw_arr_end(&s);
	jw_key(&s, "instance_info");
	jw_arr(&s);
	instance_each(k, snapshot_instance, &s);
	jw_arr_end(&s);
	jw_key(&s, "accounts");
	jw_arr(&s);
	account_each(k, snapshot_account, &s);
	jw_arr_end(&s);
	jw_obj_end(&s);
	text = s.oom ? NULL : jw_take(&s, &len);
	jw_free(&s);
	if (!text) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return;
	}
	call_ok(c, "");
	jw_key(&c->out, "config_snapshot");
	jw_strn(&c->out, text, len);
	free(text);
}

/* The entries of a snapshot, each in canonical form, checked before anything is applied. */
struct snapshot {
	json_t *storages, *groups, *instances; /* arrays of canonical objects (instances: registerInstance bodies) */
	json_t *available;                     /* is_available of each storage */
	json_t *accounts;                      /* canonical {user_name, role, password_hash} */
};

static const struct jfield account_schema[] = {
    {"user_name", JF_STR, NULL}, {"role", JF_ENUM, &enum_role}, {"password_hash", JF_STR, NULL}, {NULL, 0, NULL}};

static void snapshot_free(struct snapshot *s)
{
	json_decref(s->storages);
	json_decref(s->groups);
	json_decref(s->instances);
	json_decref(s->available);
	json_decref(s->accounts);
}

/* Each element of top[key] normalised with schema into out; false (msg) on the first that is not one. */
static bool normalize_all(struct jd *d, json_t *top, const char *key, const struct jfield *schema, json_t *out,
                          json_t *available, char *msg, size_t msglen)
{
	json_t *arr = jd_arr(d, top, key), *v;
	size_t i;

	json_array_foreach(arr, i, v)
	{
		json_t *n = json_is_object(v) ? jd_normalize(d, v, schema) : NULL;

		if (!n) {
			snprintf(msg, msglen, "config_snapshot: %s[%zu] is not a valid entry", key, i);
			return false;
		}
		json_array_append_new(out, n);
		if (available)
			json_array_append_new(available,
			                      json_boolean(!json_is_false(json_object_get(v, "is_available"))));
	}
	if (d->bad)
		snprintf(msg, msglen, "config_snapshot: %s is not a list", key);
	return !d->bad;
}

/* An instance_info entry as the registerInstance body that recreates it. */
static json_t *register_body(json_t *info)
{
	json_t *b = json_copy(info);

	json_object_set(b, "instance_group", json_object_get(info, "instance_group_name"));
	json_object_del(b, "instance_group_name");
	json_object_del(b, "quota_group_name");
	return b;
}

/* Every storage's root where addStorage would allow it (kvcm.storage.allowed_roots): a snapshot is no way around
 * that rule, which keeps KVCM's file writes and deletes out of /etc and home directories. */
static bool roots_allowed(const struct kvcm *k, json_t *storages, char *msg, size_t msglen)
{
	size_t i;
	json_t *v;

	json_array_foreach(storages, i, v)
	{
		if (storage_roots_check(k, v, msg, msglen) != KC_OK)
			return false;
	}
	return true;
}

static bool snapshot_read(struct call *c, struct snapshot *s, char *msg, size_t msglen)
{
	const char *text = jd_str(&c->d, c->body, "config_snapshot");
	json_t *top = jd_parse(text, strlen(text)), *v;
	struct jd d = {0};
	bool ok;
	size_t i;

	*s = (struct snapshot){json_array(), json_array(), json_array(), json_array(), json_array()};
	if (!top) {
		snprintf(msg, msglen, "config_snapshot is not a JSON object");
		return false;
	}
	ok = normalize_all(&d, top, "storage_config", storage_schema, s->storages, s->available, msg, msglen) &&
	     normalize_all(&d, top, "instance_group", group_schema, s->groups, NULL, msg, msglen) &&
	     normalize_all(&d, top, "accounts", account_schema, s->accounts, NULL, msg, msglen) &&
	     roots_allowed(c->k, s->storages, msg, msglen);
	json_array_foreach(ok ? jd_arr(&d, top, "instance_info") : NULL, i, v)
	    json_array_append_new(s->instances, register_body(v));
	json_decref(top);
	return ok;
}

static int apply_storage(struct kvcm *k, json_t *cfg, bool available, char *msg, size_t msglen)
{
	const char *name = jn_str(cfg, "global_unique_name");
	int rc;

	json_incref(cfg);
	rc = storage_find(k, name) ? storage_update(k, cfg, msg, msglen)
	                           : storage_add(k, cfg, available, true, msg, msglen);
	if (rc != KC_OK)
		json_decref(cfg);
	else
		storage_set_available(k, name, available);
	return rc;
}

static int apply_group(struct kvcm *k, json_t *cfg, char *msg, size_t msglen)
{
	struct group *g = group_find(k, jn_str(cfg, "name"));
	int rc;

	if (g && json_equal(g->cfg, cfg))
		return KC_OK; /* as it is: no new version */
	json_incref(cfg);
	rc = g ? group_update(k, cfg, g->version, msg, msglen) : group_add(k, cfg, true, true, msg, msglen);
	if (rc != KC_OK)
		json_decref(cfg);
	return rc;
}

/* An account from its stored hash; one of that name already here is kept as it is. */
static int apply_account(struct kvcm *k, json_t *a, char *msg, size_t msglen)
{
	int rc = account_add_hashed(k, jn_str(a, "user_name"), jn_str(a, "password_hash"),
	                            jn_enum(a, "role", &enum_role), true, msg, msglen);

	return rc == KC_DUPLICATE_ENTITY ? KC_OK : rc;
}

/* Applies the entries in order; the first refusal stops it. Returns a wire code; *done counts what was applied. */
static int snapshot_apply(struct call *c, const struct snapshot *s, size_t *done, char *msg, size_t msglen)
{
	struct instance *inst;
	json_t *v;
	size_t i;
	int rc;

	*done = 0;
	json_array_foreach(s->storages, i, v)
	{
		if ((rc = apply_storage(c->k, v, json_is_true(json_array_get(s->available, i)), msg, msglen)) != KC_OK)
			return rc;
		++*done;
	}
	json_array_foreach(s->groups, i, v)
	{
		if ((rc = apply_group(c->k, v, msg, msglen)) != KC_OK)
			return rc;
		++*done;
	}
	/* admins first: a user account is refused while no admin exists */
	for (int admins = 1; admins >= 0; admins--)
		json_array_foreach(s->accounts, i, v)
		{
			if ((jn_enum(v, "role", &enum_role) == ROLE_ADMIN) != admins)
				continue;
			if ((rc = apply_account(c->k, v, msg, msglen)) != KC_OK)
				return rc;
			++*done;
		}
	json_array_foreach(s->instances, i, v)
	{
		struct jd d = {0};

		rc = instance_register(c->k, v, &d, &inst, msg, msglen);
		if (d.bad)
			snprintf(msg, msglen, "instance_info[%zu] is not a valid entry", i);
		if (d.bad || rc != KC_OK)
			return d.bad ? KC_INVALID_ARGUMENT : rc;
		++*done;
	}
	return KC_OK;
}

void admin_load_config_snapshot(struct call *c)
{
	struct snapshot s;
	char msg[512] = "", why[640];
	size_t done;
	int rc;

	jd_str(&c->d, c->body, "config_snapshot");
	if (call_decode_failed(c))
		return;
	if (!snapshot_read(c, &s, msg, sizeof(msg))) {
		snapshot_free(&s);
		call_fail(c, KC_INVALID_ARGUMENT, "%s (nothing was applied)", msg);
		return;
	}
	rc = snapshot_apply(c, &s, &done, msg, sizeof(msg));
	snapshot_free(&s);
	if (rc != KC_OK) {
		snprintf(why, sizeof(why), "config_snapshot entry %zu refused: %s (the %zu before it were applied)",
		         done + 1, msg, done);
		call_fail(c, rc, "%s", why);
		return;
	}
	log_info("op=kvcm_load_config_snapshot entries=%zu", done);
	call_ok(c, "config snapshot loaded");
}

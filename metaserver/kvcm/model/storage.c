#include "storage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"
#include "kvcm_state.h"
#include "kvcm_store.h"
#include "log.h"
#include "reporter.h"

static const struct jfield threefs_schema[] = {
    {"cluster_name", JF_STR, NULL},
    {"mountpoint", JF_STR, NULL},
    {"root_dir", JF_STR, NULL},
    {"key_count_per_file", JF_I32, NULL},
    {"touch_file_when_create", JF_BOOL, NULL},
    {NULL, 0, NULL},
};
static const struct jfield mooncake_schema[] = {
    {"local_hostname", JF_STR, NULL}, {"metadata_connstring", JF_STR, NULL},  {"protocol", JF_STR, NULL},
    {"rdma_device", JF_STR, NULL},    {"master_service_entry", JF_STR, NULL}, {NULL, 0, NULL},
};
static const struct jfield pace_schema[] = {
    {"domain", JF_STR, NULL},     {"timeout", JF_I32, NULL}, {"service_discovery_url", JF_STR, NULL},
    {"media_type", JF_I32, NULL}, {NULL, 0, NULL},
};
static const struct jfield nfs_schema[] = {
    {"root_path", JF_STR, NULL}, {"key_count_per_file", JF_I32, NULL}, {NULL, 0, NULL}};
static const struct jfield event_report_schema[] = {
    {"heartbeat_timeout_ms", JF_I64, NULL},
    {"cleanup_grace_ms", JF_I64, NULL},
    {"liveness_check_interval_ms", JF_I64, NULL},
    {"snapshot_min_interval_ms", JF_I64, NULL},
    {"snapshot_delta_drain_timeout_ms", JF_I64, NULL},
    {NULL, 0, NULL},
};
static const struct jfield mmc_schema[] = {{"key_prefix", JF_STR, NULL}, {NULL, 0, NULL}};

const struct jfield storage_schema[] = {
    {"global_unique_name", JF_STR, NULL},
    {"local", JF_MSG, nfs_schema},
    {"threefs", JF_MSG, threefs_schema},
    {"mooncake", JF_MSG, mooncake_schema},
    {"tair_mem_pool", JF_MSG, pace_schema},
    {"nfs", JF_MSG, nfs_schema},
    {"vcnsthreefs", JF_MSG, threefs_schema},
    {"check_storage_available_when_open", JF_BOOL, NULL},
    {"dummy", JF_MSG, nfs_schema},
    {"storage_type", JF_ENUM, &enum_storage_type},
    {"event_report", JF_MSG, event_report_schema},
    {"mmc", JF_MSG, mmc_schema},
    {NULL, 0, NULL},
};

/* The oneof members of StorageConfig's spec and the type each one means. */
static const struct {
	const char *member;
	int type;
} members[] = {
    {"local", ST_DUMMY}, {"threefs", ST_3FS},          {"mooncake", ST_MOONCAKE}, {"tair_mem_pool", ST_TAIRMEMPOOL},
    {"nfs", ST_NFS},     {"vcnsthreefs", ST_VCNS_3FS}, {"dummy", ST_DUMMY},       {"event_report", ST_EVENT_REPORT_L2},
    {"mmc", ST_MMC},
};

#define NMEMBERS (sizeof(members) / sizeof(members[0]))

/* Which spec member cfg sets. On error writes a message to msg (which may be NULL when msglen is 0). */
static int spec_member(json_t *cfg, const char **member, char *msg, size_t msglen)
{
	int found = -1;

	for (size_t i = 0; i < NMEMBERS; i++) {
		if (!json_object_get(cfg, members[i].member))
			continue;
		if (found >= 0) {
			snprintf(msg, msglen, "storage config sets both \"%s\" and \"%s\"", members[found].member,
			         members[i].member);
			return -1;
		}
		found = (int)i;
	}
	if (found < 0) {
		snprintf(msg, msglen, "storage config sets no storage spec (nfs, local, dummy, mmc or event_report)");
		return -1;
	}
	*member = members[found].member;
	return found;
}

static int resolve_type(json_t *cfg, int *type, char *msg, size_t msglen)
{
	const char *member;
	int i = spec_member(cfg, &member, msg, msglen), given = jn_enum(cfg, "storage_type", &enum_storage_type);

	if (i < 0)
		return KC_INVALID_ARGUMENT;
	*type = members[i].type;
	if (*type == ST_EVENT_REPORT_L2) {
		if (given != ST_EVENT_REPORT_L1P5 && given != ST_EVENT_REPORT_L2) {
			snprintf(msg, msglen,
			         "an event_report storage must set storage_type to ST_EVENT_REPORT_L1P5 "
			         "or ST_EVENT_REPORT_L2");
			return KC_INVALID_ARGUMENT;
		}
		*type = given;
		return KC_OK;
	}
	if (given != ST_UNSPECIFIED && given != *type) {
		snprintf(msg, msglen, "storage_type %s does not match the \"%s\" spec",
		         enum_name(&enum_storage_type, given) ? enum_name(&enum_storage_type, given) : "(unknown)",
		         member);
		return KC_INVALID_ARGUMENT;
	}
	if (*type != ST_NFS && *type != ST_DUMMY && *type != ST_MMC) {
		snprintf(msg, msglen,
		         "storage spec \"%s\" is not supported by this server (use nfs, local, dummy, mmc or "
		         "event_report)",
		         member);
		return KC_UNSUPPORTED;
	}
	return KC_OK;
}

/* Checks what the back-end needs and points the typed fields into cfg. */
/* Event-report timings: 0 takes the kvcm.event_report.* default, a negative value is refused. */
static int check_event_report(const struct storage *s, char *msg, size_t msglen)
{
	json_t *spec = json_object_get(s->cfg, "event_report"), *v;
	const char *name;

	json_object_foreach(spec, name, v)
	{
		if (jn_i64(spec, name) < 0) {
			snprintf(msg, msglen, "event_report.%s must not be negative", name);
			return KC_INVALID_ARGUMENT;
		}
	}
	return KC_OK;
}

static int bind_spec(struct storage *s, char *msg, size_t msglen)
{
	const char *member = "";
	json_t *spec;
	int64_t kpf;

	if (storage_is_event_report(s))
		return check_event_report(s, msg, msglen);
	if (s->type == ST_NFS || s->type == ST_DUMMY) {
		spec_member(s->cfg, &member, NULL, 0); /* resolve_type found exactly one */
		spec = json_object_get(s->cfg, member);
		s->root_path = jn_str(spec, "root_path");
		kpf = jn_i64(spec, "key_count_per_file");
		s->key_count_per_file = kpf > 0 ? (uint32_t)(kpf > 4096 ? 4096 : kpf) : 1;
		/* nfs and local roots are where writes go (ours, or the clients' told by the URIs); a dummy is only
		 * stat-ed, and relative there as the reference allows */
		if (strcmp(member, "dummy") != 0 && s->root_path[0] != '/') {
			snprintf(msg, msglen, "%s.root_path must be an absolute path, got \"%s\"", member,
			         s->root_path);
			return KC_INVALID_ARGUMENT;
		}
	} else if (s->type == ST_MMC) {
		s->key_prefix = jn_str(json_object_get(s->cfg, "mmc"), "key_prefix");
		if (strlen(s->key_prefix) > 64) {
			snprintf(msg, msglen, "mmc.key_prefix is longer than 64 bytes");
			return KC_INVALID_ARGUMENT;
		}
	}
	return KC_OK;
}

/* The storage's record: {"is_available":..,"config":{StorageConfig}} (read back by storage_load). */
static void persist_record(struct kvcm *k, const struct storage *s)
{
	json_t *rec = json_pack("{s:b, s:O}", "is_available", s->available, "config", s->cfg);

	store_put_json(&k->store, STORE_STORAGES, s->name, rec);
	json_decref(rec);
}

struct storage *storage_find(struct kvcm *k, const char *name)
{
	struct list *it;

	for (it = k->storages.next; it != &k->storages; it = it->next) {
		struct storage *s = list_entry(it, struct storage, link);

		if (strcmp(s->name, name) == 0)
			return s;
	}
	return NULL;
}

void storage_free(struct storage *s)
{
	if (!s)
		return;
	json_decref(s->cfg);
	free(s->name);
	free(s);
}

int storage_add(struct kvcm *k, json_t *cfg, bool available, bool persist, char *msg, size_t msglen)
{
	const char *name = jn_str(cfg, "global_unique_name");
	struct storage *s;
	int rc;

	if (!name[0] || strlen(name) >= KVCM_NAME_MAX) {
		snprintf(msg, msglen, "missing or invalid fields: {AddStorage: {global_unique_name}}");
		return KC_INVALID_ARGUMENT;
	}
	if (storage_find(k, name)) {
		snprintf(msg, msglen, "storage \"%s\" already exists", name);
		return KC_DUPLICATE_ENTITY;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		snprintf(msg, msglen, "out of memory");
		return KC_INTERNAL_ERROR;
	}
	s->cfg = cfg;
	s->available = available;
	rc = resolve_type(cfg, &s->type, msg, msglen);
	if (rc == KC_OK)
		rc = bind_spec(s, msg, msglen);
	if (rc != KC_OK) {
		s->cfg = NULL;
		storage_free(s);
		return rc;
	}
	list_add_tail(&k->storages, &s->link);
	if (persist)
		persist_record(k, s);
	log_info("op=kvcm_add_storage name=\"%s\" type=%s", s->name, storage_type_kind(s->type));
	return KC_OK;
}

int storage_update(struct kvcm *k, json_t *cfg, char *msg, size_t msglen)
{
	struct storage *s = storage_find(k, jn_str(cfg, "global_unique_name"));
	struct storage next;
	int rc;

	if (!s) {
		snprintf(msg, msglen, "storage \"%s\" does not exist", jn_str(cfg, "global_unique_name"));
		return KC_INSTANCE_NOT_EXIST;
	}
	next = *s;
	next.cfg = cfg;
	rc = resolve_type(cfg, &next.type, msg, msglen);
	if (rc == KC_OK)
		rc = bind_spec(&next, msg, msglen);
	if (rc != KC_OK)
		return rc;
	/* locations keep the type they were written with: a kind changes only on an empty storage */
	if (next.type != s->type && s->nlocations) {
		snprintf(msg, msglen, "storage \"%s\" holds %llu cache locations: its type cannot change", s->name,
		         (unsigned long long)s->nlocations);
		return KC_INVALID_ARGUMENT;
	}
	json_decref(s->cfg);
	*s = next;
	persist_record(k, s);
	log_info("op=kvcm_update_storage name=\"%s\" type=%s", s->name, storage_type_kind(s->type));
	return KC_OK;
}

int storage_load(struct kvcm *k, json_t *record, char *msg, size_t msglen)
{
	json_t *cfg = json_incref(json_object_get(record, "config"));
	int rc = storage_add(k, cfg, json_is_true(json_object_get(record, "is_available")), false, msg, msglen);

	if (rc != KC_OK)
		json_decref(cfg);
	return rc;
}

int storage_remove(struct kvcm *k, const char *name, char *msg, size_t msglen)
{
	struct storage *s = storage_find(k, name);
	struct list *it;

	if (!s) {
		snprintf(msg, msglen, "storage \"%s\" does not exist", name);
		return KC_INSTANCE_NOT_EXIST;
	}
	if (s->nlocations) {
		snprintf(msg, msglen, "storage \"%s\" still holds %llu cache locations", name,
		         (unsigned long long)s->nlocations);
		return KC_INVALID_ARGUMENT;
	}
	for (it = k->groups.next; it != &k->groups; it = it->next) {
		struct group *g = list_entry(it, struct group, link);

		if (group_uses_storage(g, name)) {
			snprintf(msg, msglen, "storage \"%s\" is a candidate of instance group \"%s\"", name, g->name);
			return KC_INVALID_ARGUMENT;
		}
	}
	list_del(&s->link);
	store_del_json(&k->store, STORE_STORAGES, s->name);
	log_info("op=kvcm_remove_storage name=\"%s\"", name);
	reporters_forget_storage(k, s); /* reporters outlive their storage: they must not read it once freed */
	storage_free(s);
	return KC_OK;
}

int storage_set_available(struct kvcm *k, const char *name, bool available)
{
	struct storage *s = storage_find(k, name);

	if (!s)
		return KC_INSTANCE_NOT_EXIST;
	if (s->available != available) {
		s->available = available;
		persist_record(k, s);
		log_info("op=kvcm_storage_%s name=\"%s\"", available ? "enable" : "disable", name);
	}
	return KC_OK;
}

json_t *storage_internal_json(const struct storage *s)
{
	const char *member = NULL;
	json_t *spec;

	spec_member(s->cfg, &member, NULL, 0); /* a stored config is valid: no message to keep */
	spec = member ? json_copy(json_object_get(s->cfg, member)) : json_object();
	if (storage_is_event_report(s))
		json_object_set_new(spec, "storage_type", json_string(enum_name(&enum_storage_type, s->type)));
	return json_pack("{s:s, s:b, s:s, s:o}", "type", storage_type_kind(s->type), "is_available", s->available,
	                 "global_unique_name", s->name, "storage_spec", spec);
}

json_t *storage_admin_json(const struct storage *s)
{
	json_t *j = json_copy(s->cfg);

	if (j)
		json_object_set_new(j, "is_available", json_boolean(s->available));
	return j;
}

json_t *storage_from_internal(struct jd *d, json_t *in, char *msg, size_t msglen)
{
	const char *kind = jd_str(d, in, "type"), *member = NULL;
	json_t *spec = jd_obj(d, in, "storage_spec"), *admin, *out;
	int type;

	if (d->bad)
		return NULL;
	if (!storage_type_parse(kind, &type)) {
		snprintf(msg, msglen, "unknown storage type \"%s\"", kind);
		return NULL;
	}
	for (size_t i = 0; i < NMEMBERS; i++)
		if (members[i].type == type || (i == 7 && (type == ST_EVENT_REPORT_L1P5 || type == ST_EVENT_REPORT_L2)))
			member = members[i].member;
	admin = json_pack("{s:s, s:o}", "global_unique_name", jd_str(d, in, "global_unique_name"),
	                  member ? member : "local", spec ? json_incref(spec) : json_object());
	if (type == ST_EVENT_REPORT_L1P5 || type == ST_EVENT_REPORT_L2)
		json_object_set_new(admin, "storage_type", json_integer(type));
	out = jd_normalize(d, admin, storage_schema);
	json_decref(admin);
	return out;
}

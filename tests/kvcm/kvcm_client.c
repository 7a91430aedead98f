#include "kvcm_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *code_of(json_t *r)
{
	const char *s =
	    json_string_value(json_object_get(json_object_get(json_object_get(r, "header"), "status"), "code"));

	return s ? s : "";
}

const char *message_of(json_t *r)
{
	const char *s =
	    json_string_value(json_object_get(json_object_get(json_object_get(r, "header"), "status"), "message"));

	return s ? s : "";
}

static int start(struct kvcm_srv *s, const char *const *extra, bool restart)
{
	const char *env[48];
	static char rootkv[400];
	int n = 0, rc;

	snprintf(rootkv, sizeof(rootkv), "kvcm.default_storage.root_path=%s/", s->root);
	env[n++] = "kvcm.service.http_port=0";
	env[n++] = "kvcm.service.admin_http_port=0";
	env[n++] = "kvcm.service.bind=127.0.0.1";
	env[n++] = "kvcm.service.rpc_port=0";
	env[n++] = "kvcm.service.admin_rpc_port=0";
	env[n++] = "ock.mmc.meta.lmdb.sync=false";
	env[n++] = rootkv;
	for (int i = 0; extra && extra[i] && n < 46; i++)
		env[n++] = extra[i];
	env[n] = NULL;
	rc = restart ? metaserver_restart(&s->m, env) : metaserver_start(&s->m, env);
	if (rc)
		return rc;
	s->meta.fd = s->admin.fd = -1;
	s->meta.port = s->m.http_port;
	s->admin.port = s->m.admin_port;
	return 0;
}

int kvcm_srv_start(struct kvcm_srv *s, const char *const *extra)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->root, sizeof(s->root), "/tmp/mmc-kvcm-nfs-XXXXXX");
	if (!mkdtemp(s->root))
		return -1;
	return start(s, extra, false);
}

int kvcm_srv_restart(struct kvcm_srv *s, const char *const *extra)
{
	hc_close(&s->meta);
	hc_close(&s->admin);
	return start(s, extra, true);
}

void kvcm_srv_stop(struct kvcm_srv *s)
{
	char cmd[300];

	hc_close(&s->meta);
	hc_close(&s->admin);
	metaserver_cleanup(&s->m);
	if (s->root[0] && !getenv("MMC_TEST_KEEP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->root);
		if (system(cmd)) {
		}
	}
}

bool register_simple(struct hc *c, const char *group, const char *id, long spec_size)
{
	json_t *r = hc_call(c, "registerInstance",
	                    "{\"trace_id\":\"reg\",\"instance_group\":\"%s\",\"instance_id\":\"%s\","
	                    "\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"fp16\"},\"block_size\":8,"
	                    "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":%ld}]}",
	                    group, id, spec_size);
	bool ok = r && strcmp(code_of(r), "OK") == 0;

	json_decref(r);
	return ok;
}

bool write_keys(struct hc *c, const char *id, const char *keys_json)
{
	json_t *r = hc_call(c, "startWriteCache",
	                    "{\"instance_id\":\"%s\",\"block_keys\":%s,\"write_timeout_seconds\":30}", id, keys_json);
	json_t *f;
	size_t n;
	bool ok;

	if (!r || strcmp(code_of(r), "OK") != 0) {
		json_decref(r);
		return false;
	}
	n = json_array_size(json_object_get(r, "locations"));
	f = hc_call(c, "finishWriteCache",
	            "{\"instance_id\":\"%s\",\"write_session_id\":\"%s\",\"success_blocks\":{\"offset\":%zu}}", id,
	            json_string_value(json_object_get(r, "write_session_id")), n);
	ok = f && strcmp(code_of(f), "OK") == 0;
	json_decref(r);
	json_decref(f);
	return ok;
}

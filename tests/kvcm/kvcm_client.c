#include "kvcm_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

int hc_connect(struct hc *c, uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	int one = 1;

	c->port = port;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

void hc_close(struct hc *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads headers then Content-Length bytes. */
static int read_reply(int fd, char **out)
{
	size_t cap = 65536, len = 0, body_at = 0, clen = 0;
	char *buf = malloc(cap + 1), *hdr_end, *cl;
	int status = -1;

	while (buf) {
		ssize_t r;

		if (len == cap) {
			char *nb = realloc(buf, cap * 2 + 1);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = recv(fd, buf + len, cap - len, 0);
		if (r <= 0)
			break;
		len += (size_t)r;
		buf[len] = '\0';
		if (!body_at && (hdr_end = strstr(buf, "\r\n\r\n"))) {
			body_at = (size_t)(hdr_end - buf) + 4;
			sscanf(buf, "HTTP/1.%*d %d", &status);
			cl = strcasestr(buf, "\r\ncontent-length:");
			clen = cl && cl < hdr_end ? strtoul(cl + 17, NULL, 10) : 0;
		}
		if (body_at && len >= body_at + clen) {
			memmove(buf, buf + body_at, clen);
			buf[clen] = '\0';
			*out = buf;
			return status;
		}
	}
	free(buf);
	return -1;
}

int hc_request(struct hc *c, const char *method, const char *path, const char *body, size_t len, char **out)
{
	char head[512];
	int n, status;

	*out = NULL;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (c->fd < 0 && hc_connect(c, c->port))
			return -1;
		n = snprintf(head, sizeof(head),
		             "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
		             "Content-Length: %zu\r\n\r\n",
		             method, path, body ? len : 0);
		if (send_all(c->fd, head, (size_t)n) == 0 && (!body || send_all(c->fd, body, len) == 0) &&
		    (status = read_reply(c->fd, out)) > 0)
			return status;
		hc_close(c);
	}
	return -1;
}

json_t *hc_call(struct hc *c, const char *api, const char *fmt, ...)
{
	char path[128], *body = NULL, *resp;
	va_list ap;
	json_t *j = NULL;
	int n, status;

	va_start(ap, fmt);
	n = vasprintf(&body, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	snprintf(path, sizeof(path), "/api/%s", api);
	status = hc_request(c, "POST", path, body, (size_t)n, &resp);
	if (status == 200)
		j = json_loads(resp, 0, NULL);
	else if (getenv("KVCM_TEST_DEBUG"))
		fprintf(stderr, "%s -> HTTP %d: %s\nbody: %s\n", path, status, resp ? resp : "", body);
	free(resp);
	free(body);
	return j;
}

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

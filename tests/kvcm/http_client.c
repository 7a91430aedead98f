#include "http_client.h"

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

static char auth_header[512];
static char last_head[4096];

void hc_set_auth(const char *user_colon_password)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = (const unsigned char *)user_colon_password;
	size_t n = s ? strlen((const char *)s) : 0, o;

	auth_header[0] = '\0';
	if (!s)
		return;
	o = (size_t)snprintf(auth_header, sizeof(auth_header), "Authorization: Basic ");
	for (size_t i = 0; i < n && o + 8 < sizeof(auth_header); i += 3) {
		unsigned v = s[i] << 16 | (i + 1 < n ? s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);

		auth_header[o++] = b64[v >> 18 & 63];
		auth_header[o++] = b64[v >> 12 & 63];
		auth_header[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		auth_header[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	snprintf(auth_header + o, sizeof(auth_header) - o, "\r\n");
}

const char *hc_last_head(void)
{
	return last_head;
}

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
			snprintf(last_head, sizeof(last_head), "%.*s", (int)body_at, buf);
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
	char head[1024];
	int n, status;

	*out = NULL;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (c->fd < 0 && hc_connect(c, c->port))
			return -1;
		n = snprintf(head, sizeof(head),
		             "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
		             "%sContent-Length: %zu\r\n\r\n",
		             method, path, auth_header, body ? len : 0);
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

int hc_metric(uint16_t port, const char *sample, double *v)
{
	struct hc c = {-1, port};
	size_t n = strlen(sample);
	char *out = NULL;
	int status = hc_request(&c, "GET", "/metrics", NULL, 0, &out);

	*v = 0;
	for (char *at = out; status == 200 && (at = strstr(at, sample)); at += n)
		if ((at == out || at[-1] == '\n') && at[n] == ' ')
			*v = strtod(at + n + 1, NULL);
	free(out);
	hc_close(&c);
	return status;
}

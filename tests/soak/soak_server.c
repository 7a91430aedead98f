/*
 * The meta server of a soak run: started, killed and restarted through the test support library (same data dir,
 * same rpc port), and read through its Prometheus page on the admin port.
 */
#include "soak_server.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int server_start(struct soak_server *sv, const struct soak_opts *o)
{
	int n = 0;

	memset(sv, 0, sizeof(*sv));
	/* at info, op=evict is a line per put */
	snprintf(sv->env[n++], sizeof(sv->env[0]), "ock.mmc.log_level=%s", o->verbose ? "info" : "warn");
	if (o->evict_high) {
		snprintf(sv->env[n++], sizeof(sv->env[0]), "ock.mmc.evict_threshold_high=%u", o->evict_high);
		snprintf(sv->env[n++], sizeof(sv->env[0]), "ock.mmc.evict_threshold_low=%u", o->evict_low);
	}
	for (int i = 0; i < n; i++)
		sv->extra[i] = sv->env[i];
	sv->extra[n] = NULL;
	return metaserver_start(&sv->m, sv->extra);
}

int server_restart(struct soak_server *sv)
{
	return metaserver_restart(&sv->m, sv->extra);
}

void server_kill(struct soak_server *sv)
{
	uint64_t n;

	/* the counter lives with the process: take it before the kill */
	if (server_metric(sv, "mmc_evictions_total", &n) == 0)
		sv->evictions += n;
	metaserver_kill(&sv->m);
}

int server_cleanup(struct soak_server *sv)
{
	uint64_t n;

	if (sv->m.pid > 0 && server_metric(sv, "mmc_evictions_total", &n) == 0)
		sv->evictions += n;
	return metaserver_cleanup(&sv->m);
}

/* GET /metrics into buf (NUL-terminated); 0 or -1. */
static int fetch_metrics(const struct soak_server *sv, char *buf, size_t len)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(sv->m.admin_port)};
	struct timeval tv = {.tv_sec = 2};
	static const char req[] = "GET /metrics HTTP/1.0\r\nConnection: close\r\n\r\n";
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t n = 0;
	ssize_t r;

	if (fd < 0)
		return -1;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) || write(fd, req, sizeof(req) - 1) < 0) {
		close(fd);
		return -1;
	}
	while (n + 1 < len && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = '\0';
	return n ? 0 : -1;
}

int server_metric(const struct soak_server *sv, const char *name, uint64_t *out)
{
	static char buf[1 << 16];
	char pat[128];
	const char *p;

	if (!sv->m.admin_port || fetch_metrics(sv, buf, sizeof(buf)))
		return -1;
	snprintf(pat, sizeof(pat), "\n%s ", name);
	p = strstr(buf, pat);
	if (!p)
		return -1;
	*out = strtoull(p + strlen(pat), NULL, 10);
	return 0;
}

int server_wait_attached(const struct soak_server *sv, uint64_t bytes, int timeout_ms)
{
	uint64_t end = soak_now_ms() + (uint64_t)timeout_ms, have = 0;

	while (soak_now_ms() < end) {
		if (server_metric(sv, "mmc_pool_bytes{media=\"dram\"}", &have) == 0 && have >= bytes)
			return 0;
		usleep(20000);
	}
	fprintf(stderr, "soak: only %" PRIu64 " of %" PRIu64 " pool bytes rejoined within %d ms\n", have, bytes,
	        timeout_ms);
	return -1;
}

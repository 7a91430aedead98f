/*
 * Resource limits and framing on the HTTP ports: a request must arrive whole within kvcm.service.request_timeout_ms,
 * connections count from the accept and fit RLIMIT_NOFILE, accept errors do not spin, buffered request bytes have a
 * global budget, big JSON bodies are refused before jansson builds them, and an ambiguous Content-Length is a 400.
 */
#include "kvcm_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

TestSuite(limits, .timeout = 90);

static int raw_connect(uint16_t port, bool nonblocking)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | (nonblocking ? SOCK_NONBLOCK : 0), 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(fd >= 0);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) && errno != EINPROGRESS)
		cr_assert_fail("connect: %s", strerror(errno));
	return fd;
}

/* The HTTP status of the reply to raw, or -1 when the connection closed first. */
static int raw_status(uint16_t port, const char *raw)
{
	int fd = raw_connect(port, false), status = -1;
	char buf[4096];
	ssize_t n;

	cr_assert_eq(send(fd, raw, strlen(raw), MSG_NOSIGNAL), (ssize_t)strlen(raw));
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n > 0) {
		buf[n] = '\0';
		sscanf(buf, "HTTP/1.%*d %d", &status);
	}
	close(fd);
	return status;
}

/* True when the server closes fd within ms (a read sees EOF or a reset). */
static bool closed_within(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	return poll(&p, 1, ms) == 1 && recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* The server's peak resident memory (VmHWM) in KiB. */
static long server_hwm_kb(void)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)srv.m.pid);
	f = fopen(path, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

Test(limits, ambiguous_content_length_is_400, .fini = srv_down)
{
	srv_up(NULL);
	cr_expect_eq(raw_status(srv.m.http_port, "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\n"
	                                         "Content-Length: 2\r\n\r\n{}"),
	             200);
	cr_expect_eq(raw_status(srv.m.http_port, "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\n"
	                                         "Content-Length: 2\r\nContent-Length: 100\r\n\r\n{}"),
	             400, "two Content-Length headers");
	cr_expect_eq(raw_status(srv.m.http_port, "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\n"
	                                         "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
	             400, "a repeated Content-Length");
	cr_expect_eq(raw_status(srv.m.admin_port, "POST /api/checkHealth HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n"
	                                          "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
	             400, "Transfer-Encoding beside Content-Length");
}

Test(limits, request_deadline_closes_half_open_connections, .fini = srv_down)
{
	static const char *const env[] = {"kvcm.service.request_timeout_ms=300", NULL};
	static const char req[] = "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}";
	int silent, partial, kept;
	char buf[2048];

	srv_up(env);
	silent = raw_connect(srv.m.http_port, false);
	partial = raw_connect(srv.m.admin_port, false);
	kept = raw_connect(srv.m.http_port, false);
	cr_assert_eq(send(partial, "POST /api/checkHealth HTTP/1.1\r\nHost:", 37, MSG_NOSIGNAL), 37);
	cr_assert_eq(send(kept, req, sizeof(req) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(req) - 1);
	cr_assert_gt(recv(kept, buf, sizeof(buf), 0), 0);
	cr_expect(closed_within(silent, 5000), "a connection that sent nothing stays open");
	cr_expect(closed_within(partial, 5000), "a connection that sent half a header stays open");
	/* an idle keep-alive connection between requests is not a half-open one (deliberate: it idles 0.6 s) */
	usleep(600000);
	cr_expect_eq(send(kept, req, sizeof(req) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(req) - 1);
	cr_expect_gt(recv(kept, buf, sizeof(buf), 0), 0, "the kept-alive connection was closed");
	close(silent);
	close(partial);
	close(kept);
}

static char wrapper_dir[64];

/* Runs after a low-nofile test, failed or not. */
static void nofile_down(void)
{
	char cmd[128];

	srv_down();
	if (wrapper_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", wrapper_dir);
		cr_expect_eq(system(cmd), 0);
	}
}

/* mmc-metaserver under `ulimit -n 512`: a wrapper script the fixture starts instead of the server. */
static void low_nofile_server(void)
{
	char path[300], *dir = wrapper_dir;
	FILE *f;

	snprintf(dir, sizeof(wrapper_dir), "/tmp/mmc-kvcm-nofile-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/metaserver.sh", dir);
	f = fopen(path, "w");
	cr_assert(f);
	fprintf(f, "#!/bin/sh\nulimit -n 512 || exit 1\nexec \"$MMC_REAL_METASERVER\" \"$@\"\n");
	fclose(f);
	cr_assert_eq(chmod(path, 0755), 0);
	cr_assert_eq(setenv("MMC_REAL_METASERVER", getenv("MMC_METASERVER"), 1), 0);
	cr_assert_eq(setenv("MMC_METASERVER", path, 1), 0);
}

Test(limits, half_open_connections_under_low_nofile, .fini = nofile_down)
{
	enum { N = 600 };
	struct rlimit rl;
	int fds[N];
	char *out = NULL, cmd[400];
	long log0, grown;
	uint64_t t0, ms;
	struct hc c = {-1, 0};
	json_t *r;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < N + 200)
		cr_skip_test("the hard RLIMIT_NOFILE (%llu) is too low for %d client sockets",
		             (unsigned long long)rl.rlim_max, N);
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 4096 ? 4096 : rl.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	low_nofile_server();
	srv_up(NULL);
	log0 = file_size(srv.m.log);
	for (int i = 0; i < N; i++)
		fds[i] = raw_connect(i % 2 ? srv.m.admin_port : srv.m.http_port, true);
	sleep(1); /* deliberate: the server takes in (or turns away) the flood; nothing counts what it refused */
	t0 = proc_now_ms();
	cr_assert_eq(hc_connect(&c, srv.m.http_port), 0);
	r = hc_call(&c, "getClusterInfo", "{}");
	ms = proc_now_ms() - t0;
	cr_expect(r != NULL, "no answer under %d half-open connections", N);
	cr_expect_lt(ms, 2000, "the answer took %llu ms", (unsigned long long)ms);
	json_decref(r);
	hc_close(&c);
	cr_expect_eq(hc_request(&srv.admin, "GET", "/metrics", NULL, 0, &out), 200, "the admin port is stuck");
	free(out);
	sleep(1); /* deliberate: a second in which a log flood would show */
	grown = file_size(srv.m.log) - log0;
	cr_expect_lt(grown, 1 << 20, "the log grew by %ld bytes", grown);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	cr_expect(strstr(srv.m.ready, "mmc-metaserver ready"));
	snprintf(cmd, sizeof(cmd), "grep -q 'RLIMIT_NOFILE is 512' '%s'", srv.m.log);
	cr_expect_eq(system(cmd), 0, "no warning about the lowered connection limit");
}

/*
 * Descriptors exhausted by something else (here: silent connections to the libmmc port): the HTTP listeners meet
 * EMFILE, must not spin or flood the log, and still answer.
 */
Test(limits, http_answers_through_emfile, .fini = nofile_down)
{
	enum { RPC = 320, HTTP = 280 };
	struct rlimit rl;
	int fds[RPC + HTTP];
	long log0, grown;
	uint64_t t0, ms;
	struct hc c = {-1, 0};
	json_t *r;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < RPC + HTTP + 200)
		cr_skip_test("the hard RLIMIT_NOFILE (%llu) is too low", (unsigned long long)rl.rlim_max);
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 4096 ? 4096 : rl.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	low_nofile_server();
	srv_up(NULL);
	log0 = file_size(srv.m.log);
	for (int i = 0; i < RPC; i++)
		fds[i] = raw_connect(srv.m.rpc_port, true);
	usleep(500000); /* deliberate: as above, the RPC port's share of the descriptors first */
	for (int i = RPC; i < RPC + HTTP; i++)
		fds[i] = raw_connect(i % 2 ? srv.m.admin_port : srv.m.http_port, true);
	sleep(1); /* deliberate: as above */
	t0 = proc_now_ms();
	cr_assert_eq(hc_connect(&c, srv.m.http_port), 0, "connect: %s (server %s)", strerror(errno),
	             kill(srv.m.pid, 0) == 0 ? "alive" : "gone");
	r = hc_call(&c, "getClusterInfo", "{}");
	ms = proc_now_ms() - t0;
	cr_expect(r != NULL, "no answer with the descriptors exhausted");
	cr_expect_lt(ms, 2000, "the answer took %llu ms", (unsigned long long)ms);
	json_decref(r);
	hc_close(&c);
	sleep(1); /* deliberate: a second in which a log flood would show */
	grown = file_size(srv.m.log) - log0;
	cr_expect_lt(grown, 1 << 20, "the log grew by %ld bytes", grown);
	for (int i = 0; i < RPC + HTTP; i++)
		close(fds[i]);
}

/* A body of about mib MiB: {"instance_id":"i","block_keys":[1000000,...]}. */
static char *big_keys_body(size_t mib, size_t *len)
{
	size_t cap = (mib << 20) + 64, n;
	char *b = malloc(cap);

	cr_assert(b);
	n = (size_t)snprintf(b, cap, "{\"instance_id\":\"i\",\"block_keys\":[1000000");
	while (n + 9 < cap - 8)
		n += (size_t)snprintf(b + n, cap - n, ",1000000");
	n += (size_t)snprintf(b + n, cap - n, "]}");
	*len = n;
	return b;
}

/* POSTs body (len bytes, then freed) to path on a fresh server: it must be refused with 413 and cost the server at
 * most max_mib MiB of peak memory more, and the server must go on serving. */
static void refused_cheaply(const char *path, char *body, size_t len, long max_mib)
{
	char *out = NULL;
	long hwm0, grown;

	srv_up(NULL);
	cr_assert(register_simple(&srv.meta, "default", "i", 64));
	hwm0 = server_hwm_kb();
	cr_expect_eq(hc_request(&srv.meta, "POST", path, body, len, &out), 413);
	free(out);
	grown = server_hwm_kb() - hwm0;
	cr_expect_lt(grown, max_mib * 1024, "a %zu MiB body cost %ld MiB", len >> 20, grown / 1024);
	free(body);
	cr_expect(write_keys(&srv.meta, "i", "[1,2]"), "the server stopped serving");
}

Test(limits, big_json_body_is_refused_before_jansson, .fini = srv_down)
{
	size_t len;
	char *body = big_keys_body(60, &len);

	/* the body itself (60 MiB); jansson's tree of it costs 360 MiB more */
	refused_cheaply("/api/startWriteCache", body, len, 150);
}

/* The same bound for a body the fast reader takes but for its members: a key list of one key and a million other
 * members would have the reader build jansson's tree of them. */
Test(limits, a_body_of_many_members_is_refused_before_jansson, .fini = srv_down)
{
	size_t cap = 24u << 20, n;
	char *body = malloc(cap);

	cr_assert(body);
	n = (size_t)snprintf(body, cap, "{\"instance_id\":\"i\",\"block_keys\":[1]");
	for (unsigned i = 0; n + 32 < cap; i++)
		n += (size_t)snprintf(body + n, cap - n, ",\"m%u\":0", i);
	n += (size_t)snprintf(body + n, cap - n, "}");
	/* the body (24 MiB); jansson's objects for its two million members cost far more */
	refused_cheaply("/api/getCacheLocation", body, n, 100);
}

Test(limits, buffered_bytes_have_a_global_budget, .fini = srv_down)
{
	static const char *const env[] = {"kvcm.service.max_buffered_size=8MB", NULL};
	enum { N = 4, PART = 3 << 20 };
	static const char head[] = "POST /api/startWriteCache HTTP/1.1\r\nHost: a\r\nContent-Length: 60000000\r\n\r\n";
	char *part = malloc(PART), cmd[400];
	int fds[N], closed = 0;

	cr_assert(part);
	memset(part, ' ', PART);
	srv_up(env);
	for (int i = 0; i < N; i++) {
		fds[i] = raw_connect(srv.m.http_port, false);
		send(fds[i], head, sizeof(head) - 1, MSG_NOSIGNAL);
		for (size_t off = 0; off < PART;) {
			ssize_t w = send(fds[i], part + off, PART - off, MSG_NOSIGNAL);

			if (w <= 0)
				break;
			off += (size_t)w;
		}
	}
	for (int i = 0; i < N; i++)
		closed += closed_within(fds[i], i == N - 1 ? 3000 : 200);
	cr_expect_geq(closed, 1, "4 x 3 MiB of partial requests held under an 8 MiB budget");
	cr_expect_lt(closed, N, "every connection was closed, not only the one over the budget");
	snprintf(cmd, sizeof(cmd), "grep -q 'reason=max_buffered_size' '%s'", srv.m.log);
	cr_expect_eq(system(cmd), 0, "the close is not logged with its reason");
	for (int i = 0; i < N; i++)
		close(fds[i]);
	free(part);
	cr_expect(register_simple(&srv.meta, "default", "i", 64), "the server stopped serving");
}

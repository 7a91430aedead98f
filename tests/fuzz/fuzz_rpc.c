/*
 * libFuzzer target: the meta server's RPC input path as a client reaches it. Each input is the byte stream of one
 * connection (4-byte little-endian lengths and protobuf Frames, as libmmc sends them), written into a real loopback
 * connection of a real server core: framing, protobuf-c decoding, validation and the handlers, with LMDB in a
 * temporary directory. The connection closes at the end of each input, so its local service and pending writes go
 * the way a vanished client's do.
 */
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc_queue.h"
#include "clock.h"
#include "conn.h"
#include "listener.h"
#include "log.h"
#include "meta.h"
#include "meta_rpc.h"
#include "meta_conf.h"
#include "meta_policy.h"
#include "objects.h"
#include "persist.h"
#include "rpc.h"
#include "services.h"
#include "tier.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct meta m;
static struct meta_policy pol;
static struct meta_rpc rpc;
static uint16_t port;

static void sweep(struct meta *mm)
{
	objects_sweep(mm, clock_ms());
	services_sweep(mm, clock_ms());
}

static void setup(void)
{
	char dir[] = "/tmp/mmc-fuzz-rpc-XXXXXX", err[512], url[300];
	struct persist_opts po;

	signal(SIGPIPE, SIG_IGN);
	if (!getenv("MMC_FUZZ_LOG"))
		log_set_level(LOG_ERROR); /* a line per input would be most of the time spent */
	meta_conf_defaults(&m.conf);
	if (!mkdtemp(dir))
		abort();
	po = (struct persist_opts){.dir = dir, .map_size = UINT64_C(1) << 30, .sync = false};
	m.rpc = &rpc;
	list_init(&rpc.conns);
	m.sweep = sweep;
	rpc.run_id = 1;
	policy_init(&m, &pol, &rpc_ops);
	arena_init(&m.arena);
	m.base = event_base_new();
	if (objects_init(&m) || !m.base || event_base_priority_init(m.base, 3) ||
	    persist_open(&m.persist, m.base, &po, err, sizeof(err)) || objects_tables_open(&m) ||
	    persist_table(m.persist, "services", &m.db_services) || persist_table(m.persist, "info", &m.db_info) ||
	    services_load(&m) || objects_load(&m) || rpc_listen(&m, "127.0.0.1", 0, url, sizeof(url)))
		abort();
	port = (uint16_t)atoi(strrchr(url, ':') + 1); /* tcp://127.0.0.1:PORT */
}

static int connect_loopback(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		abort();
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* Runs the loop until the server has accepted, read everything and closed or seen the end of the input. */
static void drive(int fd, const uint8_t *data, size_t size)
{
	size_t sent = 0;
	char sink[65536];
	bool shut = false;

	for (int idle = 0; idle < 200;) {
		ssize_t w = sent < size ? send(fd, data + sent, size - sent, MSG_NOSIGNAL) : 0;

		if (w > 0)
			sent += (size_t)w;
		if (sent == size && !shut) {
			shutdown(fd, SHUT_WR);
			shut = true;
		}
		event_base_loop(m.base, EVLOOP_NONBLOCK);
		ssize_t r = recv(fd, sink, sizeof(sink), 0);

		if (r == 0 || (r < 0 && shut && m.nconns == 0))
			break; /* the server closed the connection */
		idle = r > 0 || w > 0 ? 0 : idle + 1;
		if (w < 0 && sent < size)
			break; /* it closed early: a protocol error */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd;

	if (!m.base)
		setup();
	fd = connect_loopback();
	drive(fd, data, size);
	close(fd);
	/* the server sees the close and drops the session */
	for (int i = 0; i < 50 && m.nconns; i++)
		event_base_loop(m.base, EVLOOP_NONBLOCK);
	persist_flush(m.persist);
	alloc_queue_kick(&m);
	return 0;
}

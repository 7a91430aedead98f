/*
 * The RPC port against a client that would exhaust the server (issue 17, D3 and D4): half-open connections under a
 * low descriptor limit, connections that never say hello, and partial frames that together would hold gigabytes.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <mmc/mmc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "raw_rpc.h"
#include "store_conf.h"

static struct metaserver meta;

static void fini(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(rpc_limits, .fini = fini, .timeout = 240);

static long log_bytes(void)
{
	struct stat st;

	return stat(meta.log, &st) ? 0 : (long)st.st_size;
}

/*
 * A new client gets served: a raw peer connects, says hello and gets a ping answered, timed (what the server
 * controls; a store's own start-up, its fabric above all, is not the server's to speed up), then a real store
 * connects and makes a round trip. Returns the raw peer's time in ms.
 */
static uint64_t served_in_ms(void)
{
	Mmc__Ping ping = MMC__PING__INIT;
	uint64_t t0 = proc_now_ms(), ms;
	Mmc__Frame *r;
	mmc_store *s;
	int fd = raw_dial(meta.rpc_port);

	cr_assert_geq(fd, 0, "a new client cannot connect");
	cr_assert_eq(raw_hello(fd, 0, NULL, false), 0, "a new client's hello was not answered");
	cr_assert_eq(raw_send_body(fd, 5, MMC__FRAME__BODY_PING, &ping), 0);
	r = raw_recv(fd);
	cr_assert(r && r->id == 5, "a new client's ping was not answered");
	ms = proc_now_ms() - t0;
	mmc__frame__free_unpacked(r, NULL);
	close(fd);
	cr_assert_eq(store_open(meta.url, NULL, false, &s), 0, "a new store was not served");
	cr_assert_eq(mmc_is_exist(s, "anything"), 0);
	mmc_destroy(s);
	return ms;
}

/* The server starts under `ulimit -n 512`; 600 connections then sit without a hello (half of them with one byte of a
 * frame). It used to hit EMFILE, spin in accept() and log "Too many open files" ~400,000 times a second. */
/* The server under `ulimit -n 512` (soft and hard, so it cannot raise it): a wrapper script execs the real one. */
static void start_with_fd_limit(int limit)
{
	const char *real = getenv("MMC_METASERVER");
	static char wrapper[64], text[4200];

	cr_assert_not_null(real, "MMC_METASERVER is not set");
	snprintf(text, sizeof(text), "#!/bin/sh\nulimit -n %d || exit 3\nexec '%s' \"$@\"\n", limit, real);
	conf_write_file(wrapper, text);
	cr_assert_eq(chmod(wrapper, 0700), 0);
	setenv("MMC_METASERVER", wrapper, 1);
	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	setenv("MMC_METASERVER", real, 1);
	unlink(wrapper);
}

Test(rpc_limits, half_open_connections_under_a_low_fd_limit)
{
	static int fds[600];
	long before;
	uint64_t ms;

	start_with_fd_limit(512);
	cr_assert(metaserver_log_has(&meta, "warning=fd_limit"), "the lowered limits are not warned about");
	before = log_bytes();
	for (int i = 0; i < 600; i++) {
		fds[i] = raw_dial(meta.rpc_port);
		cr_assert_geq(fds[i], 0, "connection %d", i);
		if (i % 2 && send(fds[i], "\x10", 1, MSG_NOSIGNAL) != 1)
			cr_log_warn("connection %d: the byte was not sent", i);
	}
	ms = served_in_ms();
	cr_log_info("a new client was served in %llu ms beside 600 half-open connections", (unsigned long long)ms);
	cr_assert_lt(ms, 2000, "a new client took %llu ms", (unsigned long long)ms);
	sleep(1); /* deliberate: a second in which a log flood would show */
	cr_assert_lt(log_bytes() - before, 1 << 20, "the log grew by %ld bytes", log_bytes() - before);
	for (int i = 0; i < 600; i++)
		close(fds[i]);
}

/* The same, with the server's descriptors nearly used up before it starts (300 inherited), so accept() itself fails
 * with EMFILE long before the connection limit: the accept-error handler must neither spin nor flood the log. */
Test(rpc_limits, out_of_descriptors_the_server_still_serves)
{
	static int held[300], fds[600];
	long before;
	uint64_t ms;

	for (int i = 0; i < 300; i++) /* not close-on-exec: the server inherits them */
		cr_assert_geq(held[i] = open("/dev/null", O_RDONLY), 0);
	start_with_fd_limit(512);
	for (int i = 0; i < 300; i++)
		close(held[i]);
	before = log_bytes();
	for (int i = 0; i < 600; i++)
		cr_assert_geq(fds[i] = raw_dial(meta.rpc_port), 0, "connection %d", i);
	ms = served_in_ms();
	cr_log_info("out of descriptors: a new client was served in %llu ms", (unsigned long long)ms);
	cr_assert_lt(ms, 2000, "a new client took %llu ms", (unsigned long long)ms);
	sleep(1); /* deliberate: a second in which a log flood would show */
	cr_assert_lt(log_bytes() - before, 1 << 20, "the log grew by %ld bytes", log_bytes() - before);
	cr_assert(metaserver_log_has(&meta, "err=\"Too many open files\" action=displace_before_hello"),
	          "accept() never failed: the test did not reach EMFILE");
	for (int i = 0; i < 600; i++)
		close(fds[i]);
}

/* The server's logical clock (docs/kvcm.md, debugClock): body is {"freeze":true} or {"advance_ms":N}. */
static void server_clock(const char *body)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "curl -sf -X POST -d '%s' http://127.0.0.1:%u/api/debugClock | grep -q '\"OK\"'",
	         body, meta.admin_port);
	cr_assert_eq(system(cmd), 0, "debugClock %s", body);
}

/* Closed within 10 s (a guard against a hang, not a bound the test depends on). */
static bool closed_soon(int fd)
{
	return raw_closed(fd, 10000);
}

Test(rpc_limits, the_hello_deadline_closes_silent_connections)
{
	const char *extra[] = {"kvcm.service.enable_debug_service=true", "ock.mmc.meta.hello_timeout_ms=5000",
	                       "ock.mmc.meta.heartbeat_timeout_ms=600000", NULL};
	int silent, slow, hello;

	cr_assert_eq(metaserver_start(&meta, extra), 0);
	server_clock("{\"freeze\":true}");
	silent = raw_dial(meta.rpc_port);
	slow = raw_dial(meta.rpc_port);
	hello = raw_dial(meta.rpc_port);
	cr_assert_eq(raw_hello(hello, 0, NULL, false), 0);
	/* a slowloris: bytes of a frame now and then, never a whole frame */
	cr_assert_eq(send(slow, "\x40", 1, MSG_NOSIGNAL), 1);
	server_clock("{\"advance_ms\":4000}");
	cr_assert_eq(send(slow, "\x00", 1, MSG_NOSIGNAL), 1);
	cr_assert(!raw_closed(silent, 200), "closed before its deadline");
	server_clock("{\"advance_ms\":1001}");
	cr_assert(closed_soon(silent), "a connection that never spoke is still open");
	cr_assert(closed_soon(slow), "a connection that never finished its hello is still open");
	cr_assert(!raw_closed(hello, 200), "a connection through its hello was closed");
	close(silent);
	close(slow);
	close(hello);
	served_in_ms();
}

/* Sends a frame header announcing 64 MiB, then 60 MiB of it; stops where the server closes the connection. */
static void send_partial_frame(int fd, char *chunk, size_t chunk_len)
{
	static const uint8_t hdr[4] = {0, 0, 0, 4}; /* 64 MiB, MMC_FRAME_MAX */
	struct timeval tv = {10, 0};

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (send(fd, hdr, 4, MSG_NOSIGNAL) != 4)
		return;
	for (size_t sent = 0; sent < (60u << 20);) {
		ssize_t n = send(fd, chunk, chunk_len, MSG_NOSIGNAL);

		if (n <= 0)
			return;
		sent += (size_t)n;
	}
}

/* 64 clients, through their hello, each hold a partial 60 MiB frame: each connection may buffer 64 MiB, so the server
 * used to grow by 60 MiB per client (32 clients: 2 GB). ock.mmc.meta.max_buffered_input bounds them all together. */
/* Under AddressSanitizer every buffered chunk carries redzones and shadow memory: the same bytes cost more RSS. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_PER_BYTE 1.6
#else
#define RSS_PER_BYTE 1.0
#endif

Test(rpc_limits, partial_frames_share_one_input_budget)
{
	const uint64_t budget = (uint64_t)((256 << 20) * RSS_PER_BYTE);
	const char *extra[] = {"ock.mmc.meta.max_buffered_input=256MB", NULL};
	static int fds[64];
	size_t chunk_len = 1u << 20;
	char *chunk = calloc(1, chunk_len);
	uint64_t base, peak = 0;

	cr_assert_eq(metaserver_start(&meta, extra), 0);
	base = proc_rss_bytes(meta.pid);
	for (int i = 0; i < 64; i++) {
		uint64_t rss;

		fds[i] = raw_dial(meta.rpc_port);
		cr_assert_geq(fds[i], 0);
		cr_assert_eq(raw_hello(fds[i], 0, NULL, false), 0); /* before it, no frame this large is read */
		send_partial_frame(fds[i], chunk, chunk_len);
		usleep(20000); /* deliberate: the server reads the frame meanwhile (a longer wait only adds reading) */
		rss = proc_rss_bytes(meta.pid);
		peak = rss > peak ? rss : peak;
		cr_assert_lt(rss - base, budget, "after %d clients the server grew by %llu MiB", i + 1,
		             (unsigned long long)((rss - base) >> 20));
	}
	usleep(500000); /* deliberate: what the server still reads after the last send counts too */
	peak = proc_rss_bytes(meta.pid) > peak ? proc_rss_bytes(meta.pid) : peak;
	cr_log_info("64 partial 60 MiB frames: RSS %llu MiB at start, %llu MiB at most (budget 256 MiB, x%.1f)",
	            (unsigned long long)(base >> 20), (unsigned long long)(peak >> 20), RSS_PER_BYTE);
	cr_assert_lt(peak - base, budget);
	cr_assert(metaserver_log_has(&meta, "err=input_budget_exceeded"),
	          "the closed connections' reason is not logged");
	served_in_ms();
	for (int i = 0; i < 64; i++)
		close(fds[i]);
	free(chunk);
}

#define TOKEN    "s3cret-cluster-token-0123456789"
#define KEYS_MAX 16384 /* keys of one batch at most */

/*
 * Four connections that never authenticate send nothing but a frame's 4-byte length: 3 x 64 MiB and 64 MiB - 4 KiB,
 * 16 bytes in all. The server used to reserve the announced lengths from ock.mmc.meta.max_buffered_input (256 MiB),
 * so an authenticated store's 16384-key batch was cut off (MMC_NOT_CONNECTED_META, err=input_budget_exceeded)
 * until the hello timeout closed them. A frame larger than a hello before the hello is refused: the connection
 * closes, logged and counted.
 */
Test(rpc_limits, unauthenticated_lengths_hold_no_input_budget)
{
	const char *extra[] = {"ock.mmc.meta.auth_token=" TOKEN, "ock.mmc.meta.hello_timeout_ms=600000", NULL};
	static const uint8_t lengths[4][4] = {{0, 0, 0, 4}, {0, 0, 0, 4}, {0, 0, 0, 4}, {0, 0xf0, 0xff, 3}};
	static char names[KEYS_MAX][16];
	static const char *keys[KEYS_MAX];
	static int results[KEYS_MAX];
	char cmd[256];
	int fds[4];
	mmc_store *s;

	cr_assert_eq(metaserver_start(&meta, extra), 0);
	for (int i = 0; i < 4; i++) {
		fds[i] = raw_dial(meta.rpc_port);
		cr_assert_geq(fds[i], 0);
		cr_assert_eq(send(fds[i], lengths[i], 4, MSG_NOSIGNAL), 4);
	}
	/* the store's connect and hello are round trips the server makes after it read the lengths sent before */
	cr_assert_eq(store_open(meta.url, "ock.mmc.client.auth_token = " TOKEN "\n", false, &s), 0);
	for (int i = 0; i < KEYS_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "key-%05d", i);
		keys[i] = names[i];
	}
	cr_assert_eq(mmc_batch_is_exist(s, keys, KEYS_MAX, results), 0,
	             "unauthenticated lengths took the input budget");
	cr_assert_eq(results[0], 0);
	mmc_destroy(s);
	for (int i = 0; i < 4; i++) {
		cr_assert(closed_soon(fds[i]), "connection %d announced 64 MiB before its hello and is still open", i);
		close(fds[i]);
	}
	cr_assert(metaserver_log_has(&meta, "err=frame_too_large_before_hello"), "the refusal is not logged");
	cr_assert(metaserver_log_has(&meta, "limit=4096"), "the refusal does not name the limit");
	snprintf(cmd, sizeof(cmd),
	         "curl -sf http://127.0.0.1:%u/metrics | grep -qx 'mmc_rpc_refused_total{reason=\"early_frame\"} 4'",
	         meta.admin_port);
	cr_assert_eq(system(cmd), 0, "the refusals are not counted");
}

/*
 * A client that pipelines requests and reads none of the replies: the server stops reading its requests once
 * UNREAD_MAX (4 MiB) of replies wait for it, instead of growing by some 2.5 times what the client sends (1.7 GB
 * after 655 MB, in an audit). Other clients are served meanwhile, and the connection goes at the heartbeat timeout.
 */
Test(rpc_limits, a_client_that_reads_no_replies_cannot_grow_the_server)
{
	const char *extra[] = {"ock.mmc.meta.heartbeat_timeout_ms=3000", NULL};
	static Mmc__KeyItem item = MMC__KEY_ITEM__INIT, *items[KEYS_MAX];
	Mmc__KeyBatch batch = MMC__KEY_BATCH__INIT;
	Mmc__Frame f = MMC__FRAME__INIT;
	uint64_t base, peak = 0, sent = 0;
	int fd, small = 4096;
	uint8_t *wire;
	size_t len;

	cr_assert_eq(metaserver_start(&meta, extra), 0);
	base = proc_rss_bytes(meta.pid);
	item.key = "never-read";
	for (int i = 0; i < KEYS_MAX; i++)
		items[i] = &item;
	batch.n_items = KEYS_MAX;
	batch.items = items;
	f.body_case = MMC__FRAME__BODY_QUERY;
	f.query = &batch;
	fd = raw_dial(meta.rpc_port);
	cr_assert_geq(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)); /* what it does not read stays at the server */
	cr_assert_eq(raw_hello(fd, 0, NULL, false), 0);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (uint64_t id = 2; sent < (512u << 20) && id < 100000; id++) {
		ssize_t n;
		size_t off = 0;

		f.id = id;
		wire = raw_pack(&f, &len);
		for (uint64_t t0 = proc_now_ms(); off < len && proc_now_ms() - t0 < 1000;) {
			n = write(fd, wire + off, len - off);
			if (n > 0)
				off += (size_t)n;
			else
				usleep(1000);
		}
		free(wire);
		if (off < len)
			break; /* the server reads nothing more of it */
		sent += len;
		if (id % 64 == 0) {
			uint64_t rss = proc_rss_bytes(meta.pid);

			peak = rss > peak ? rss : peak;
		}
	}
	peak = proc_rss_bytes(meta.pid) > peak ? proc_rss_bytes(meta.pid) : peak;
	cr_log_info("sent %llu MiB of requests and read nothing: server RSS %llu MiB at start, %llu MiB at most",
	            (unsigned long long)(sent >> 20), (unsigned long long)(base >> 20),
	            (unsigned long long)(peak >> 20));
	/* the server stopped reading: what the client could still send is what the two sockets' buffers hold */
	cr_assert_lt(sent, (uint64_t)128 << 20, "the server read %llu MiB of requests whose replies nobody took",
	             (unsigned long long)(sent >> 20));
#if !defined(__SANITIZE_ADDRESS__) /* there, freed memory stays resident in the allocator's quarantine */
	cr_assert_lt(peak - base, (uint64_t)48 << 20, "the server grew by %llu MiB",
	             (unsigned long long)((peak - base) >> 20));
#endif
	served_in_ms();
	cr_assert(raw_closed(fd, 10000), "a client that takes nothing goes at the heartbeat timeout");
	close(fd);
}

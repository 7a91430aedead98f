/*
 * lib/meta_conn.c against a meta server played by this test, speaking the wire by hand: what the client does with
 * frames that come before the server has said its hello.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "local_config.h"
#include "meta_conn.h"
#include "mmc/mmc.h"
#include "raw_rpc.h"
#include "wire_limits.h"

enum { EARLY_TASK = 77, LATE_TASK = 78 };

static struct raw_server srv;
static atomic_bool drop_first; /* the test asks the first connection to go */
static atomic_bool deaf;       /* after the hello, read nothing more (a paused or hung server) */

static atomic_int tasks_seen[2]; /* EARLY_TASK, LATE_TASK */

static void send_task(int fd, uint64_t id)
{
	Mmc__BlobTask t = MMC__BLOB_TASK__INIT;

	t.op = 1;
	t.src_media = MMC_MEDIA_DRAM;
	t.dst_media = MMC_MEDIA_SSD;
	t.size = 4096;
	raw_send_body(fd, id, MMC__FRAME__BODY_TASK, &t);
}

/* Answers hellos and pings until told to drop the connection (the first) or the peer goes. */
static void converse(int fd, bool first)
{
	Mmc__Frame *f;

	while (!atomic_load(&srv.stop) && (!first || !atomic_load(&drop_first))) {
		struct timeval tv = {0, 50000};

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (!(f = raw_recv(fd))) {
			if (raw_closed(fd, 0))
				return;
			continue;
		}
		if (f->body_case == MMC__FRAME__BODY_HELLO) {
			raw_hello_reply(fd, f, atomic_load(&deaf) ? 1000 : 10000);
			while (atomic_load(&deaf) && !atomic_load(&srv.stop))
				nanosleep(&(struct timespec){0, 10000000}, NULL);
			if (!first)
				send_task(fd, LATE_TASK); /* after the hello: the client's to run */
		}
		mmc__frame__free_unpacked(f, NULL);
	}
}

static void serve(int fd, int n)
{
	/* on the reconnection, before the hello's answer: any peer at the address could send it */
	if (n > 0)
		send_task(fd, EARLY_TASK);
	converse(fd, n == 0);
}

static void start(void)
{
	cr_assert_eq(raw_server_start(&srv, serve), 0);
}

static void stop(void)
{
	raw_server_stop(&srv);
}

TestSuite(meta_conn, .init = start, .fini = stop, .timeout = 60);

static void on_task(void *owner, uint64_t conn, uint64_t id, const uint8_t *data, size_t len)
{
	(void)owner, (void)conn, (void)data, (void)len;
	if (id == EARLY_TASK || id == LATE_TASK)
		atomic_fetch_add(&tasks_seen[id - EARLY_TASK], 1);
}

/* A reconnection meets a peer that sends a task before it answers the hello: the task is not run (a task moves the
 * pool's bytes, and nothing yet says this peer is the cluster's meta server); one sent after the hello is. */
Test(meta_conn, a_task_before_the_hello_is_not_run)
{
	mmc_local_config c = mmc_default_local_config();
	struct client_conf conf;
	struct meta_conn *mc;
	char err[256];

	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "tcp://127.0.0.1:%u", srv.port);
	cr_assert_eq(local_config_resolve(&c, &conf, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(meta_conn_open(&mc, &conf), 0);
	meta_conn_on_task(mc, on_task, NULL);
	cr_assert_eq(meta_conn_start(mc, NULL, NULL), 0);
	atomic_store(&drop_first, true); /* the server drops the first connection: the store reconnects */
	for (int i = 0; i < 200 && !atomic_load(&tasks_seen[1]); i++)
		nanosleep(&(struct timespec){0, 25000000}, NULL);
	cr_expect_eq(atomic_load(&tasks_seen[1]), 1, "the task after the hello ran");
	cr_expect_eq(atomic_load(&tasks_seen[0]), 0, "the task before the hello was dropped");
	meta_conn_close(mc);
}

struct sender {
	struct meta_conn *mc;
	atomic_bool done;
	int rc;
};

static void *send_until_refused(void *arg)
{
	struct sender *x = arg;

	while ((x->rc = meta_ping(x->mc)) == 0)
		;
	atomic_store(&x->done, true);
	return NULL;
}

/*
 * A server that stops reading (paused, hung) while the store keeps sending: once the socket is full a send waits,
 * holding the lock every other sender and the keeper's pings wait on. It fails after the server's heartbeat timeout
 * (1 s here) with nothing read, and the connection is dropped; it used to wait for ever, and every call of the store
 * and its teardown with it.
 */
Test(meta_conn, a_send_to_a_server_that_stopped_reading_fails_after_its_heartbeat_timeout)
{
	mmc_local_config c = mmc_default_local_config();
	struct sender x = {0};
	struct client_conf conf;
	pthread_t th;
	char err[256];
	int i;

	atomic_store(&deaf, true);
	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "tcp://127.0.0.1:%u", srv.port);
	cr_assert_eq(local_config_resolve(&c, &conf, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(meta_conn_open(&x.mc, &conf), 0);
	cr_assert_eq(pthread_create(&th, NULL, send_until_refused, &x), 0);
	for (i = 0; i < 150 && !atomic_load(&x.done); i++) /* 1 s of no progress, and the time to fill the socket */
		nanosleep(&(struct timespec){0, 100000000}, NULL);
	cr_assert(atomic_load(&x.done), "a send to a server that reads nothing still waits after 15 s");
	cr_expect_eq(x.rc, MMC_NOT_CONNECTED_META);
	pthread_join(th, NULL);
	atomic_store(&deaf, false);
	meta_conn_close(x.mc);
}

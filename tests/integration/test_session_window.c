/*
 * How long what the meta server granted on a session may be used: a server closes a client it has heard nothing from
 * for its heartbeat timeout, drops the session's allocations, and hands their space to other keys a second later. A
 * writer process paused past that (SIGSTOP, a frozen container) may run its writing thread before the thread that
 * reads the connection's end, so "the connection is not lost yet" proved nothing: its write landed over another
 * key's committed bytes. A grant now holds only until the newest answered frame's send plus three quarters of the
 * server's heartbeat timeout (meta_conn_held_until), which the writer checks before each RMA and each 4 MiB.
 *
 * The pause is made by holding the store's connection lock, which stops its keeper (no pings) and its reader (no
 * frame is taken in) as a stopped process would be; that takes the store's private side, so this test links
 * libmmc's internal static library.
 */
#include <unistd.h>

#include "clock.h"
#include "meta_conn_int.h"
#include "store.h"
#include "store_fixture.h"

#define HEARTBEAT_TIMEOUT_MS 1000

static struct metaserver meta;
static mmc_store *svc, *rd;

static void start(void)
{
	const char *env[] = {"ock.mmc.meta.heartbeat_timeout_ms=1000", NULL};

	cr_assert_eq(metaserver_start(&meta, env), 0);
	svc = fixture_store(meta.url, true, 16u << 20);
	rd = fixture_store(meta.url, false, 0);
}

static void stop(void)
{
	mmc_destroy(rd);
	mmc_destroy(svc);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(session_window, .init = start, .fini = stop, .timeout = 60);

Test(session_window, a_grant_holds_for_less_than_the_servers_heartbeat_timeout)
{
	uint64_t until, now;

	fixture_put(rd, "k", 4096, 1); /* answered: the server heard rd when it was sent */
	until = meta_conn_held_until(rd->meta);
	now = clock_ms();
	cr_assert_gt(until, now, "a session just answered holds");
	/* the newest answered frame was sent by now: the grant ends no later than the server's timeout after it */
	cr_assert_leq(until, now + HEARTBEAT_TIMEOUT_MS, "past the server's timeout");
	usleep(1000000); /* ten of rd's pings (heartbeat_ms 100): their answers move it on */
	cr_assert_gt(meta_conn_held_until(rd->meta), until, "pings keep it moving");
}

Test(session_window, a_paused_store_stops_trusting_its_grants_before_the_server_drops_them)
{
	uint64_t losses, until;

	fixture_put(rd, "k", 4096, 1);
	losses = meta_conn_losses(rd->meta);
	pthread_mutex_lock(&rd->meta->lock); /* paused: no ping goes out, no frame is taken in */
	until = meta_conn_held_until(rd->meta);
	usleep(HEARTBEAT_TIMEOUT_MS * 1000 + 500000);
	cr_assert_geq(clock_ms(), until, "the grant outlived the server's heartbeat timeout");
	cr_assert_eq(meta_conn_losses(rd->meta), losses, "the loss is not known yet: only the time says it");
	pthread_mutex_unlock(&rd->meta->lock);
	for (int i = 0; i < 100 && !metaserver_log_has(&meta, "reason=heartbeat_timeout"); i++)
		usleep(50000);
	cr_assert(metaserver_log_has(&meta, "reason=heartbeat_timeout"), "the server closed the session");
	for (int i = 0; i < 100 && fixture_get(rd, "k", 4096, 1) != 0; i++)
		usleep(50000); /* rd reconnects, and reads again */
	cr_assert_eq(fixture_get(rd, "k", 4096, 1), 0);
}

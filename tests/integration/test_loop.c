/*
 * The loop thread's spin (ock.mmc.meta.loop_spin_us): a stream of small calls is met with the loop awake and
 * answered right, the loop goes back to sleep once the calls stop, a stop signal ends a loop that is spinning, and 0
 * (at start, or by a reload) turns the spin off. Real mmc-metaserver processes, libmmc stores, /metrics over HTTP.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"
#include "store_fixture.h"

#define CALLS  2000
#define SPIN   "mmc_loop_spin_requests_total"
#define POLLED "mmc_loop_spin_seconds_total"

static struct metaserver meta;
static mmc_store *svc, *cl;
static pthread_t hammer_thread;
static atomic_bool hammering;
static char conf[300];

static void stop_hammer(void)
{
	if (atomic_exchange(&hammering, false))
		pthread_join(hammer_thread, NULL);
}

static void stop(void)
{
	stop_hammer(); /* before the store it calls goes */
	if (cl)
		mmc_destroy(cl);
	if (svc)
		mmc_destroy(svc);
	cl = svc = NULL;
	if (conf[0])
		unlink(conf);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(loop, .fini = stop, .timeout = 120);

/* A server started with extra (an --env value or --config=FILE) and a lending store holding "here", heartbeating
 * every heartbeat_ms. A spin of 1000 µs (the most) makes calls back to back close enough on any machine,
 * sanitizers included. */
static void start(const char *extra, uint32_t heartbeat_ms)
{
	const char *extras[] = {extra, NULL};
	mmc_local_config c;

	cr_assert_eq(metaserver_start(&meta, extras), 0);
	c = fixture_config(meta.url, 16u << 20);
	c.heartbeat_ms = heartbeat_ms;
	cr_assert_not_null(svc = mmc_create());
	cr_assert_eq(mmc_setup(svc, &c), 0);
	cr_assert_eq(mmc_init(svc, 0, true), 0);
	fixture_put(svc, "here", 4096, 1);
}

static double metric(const char *sample)
{
	double v;

	cr_assert_eq(hc_metric(meta.admin_port, sample, &v), 200);
	return v;
}

/* n calls of s back to back, each answered right: the stored key exists, the other does not, its bytes come back. */
static void calls(mmc_store *s, int n)
{
	for (int i = 0; i < n; i++) {
		cr_assert_eq(mmc_is_exist(s, "here"), 1, "call %d", i);
		cr_assert_eq(mmc_is_exist(s, "absent"), 0, "call %d", i);
		if (i % 100 == 0)
			cr_assert_eq(fixture_get(s, "here", 4096, 1), 0, "call %d", i);
	}
}

/* CPU time of the server's loop thread (its main thread), seconds. */
static double loop_cpu(void)
{
	double s = proc_cpu_seconds(meta.pid, meta.pid);

	cr_assert_geq(s, 0, "no /proc/%d/task/%d/stat", (int)meta.pid, (int)meta.pid);
	return s;
}

Test(loop, a_stream_of_small_calls_is_met_awake_and_answered_right)
{
	start("ock.mmc.meta.loop_spin_us=1000", 100);
	cl = fixture_store(meta.url, false, 0); /* its gets read over the fabric */
	calls(cl, CALLS);
	cr_assert_gt(metric(SPIN), 0, "calls back to back come within 1 ms of each other");
	cr_assert_gt(metric(POLLED), 0);
}

Test(loop, the_loop_sleeps_again_once_the_calls_stop)
{
	double cpu, polled;

	/* one store, heartbeating less often than the test waits: after its last call, nothing comes */
	start("ock.mmc.meta.loop_spin_us=1000", 10000);
	calls(svc, CALLS);
	usleep(100000);
	polled = metric(POLLED);
	cpu = loop_cpu();
	sleep(1);
	cr_assert_eq(metric(POLLED), polled, "no polling while nobody calls");
	/* a loop still polling would take most of this second; an idle one a timer tick or two */
	cr_assert_lt(loop_cpu() - cpu, 0.3, "loop CPU over an idle second: %.2f s", loop_cpu() - cpu);
}

static void *hammer(void *arg)
{
	(void)arg;
	while (atomic_load(&hammering))
		mmc_is_exist(cl, "here");
	return NULL;
}

/* SIGTERM, then the exit status within 10 s (a loop that ignored the stop would keep spinning); -1: no exit. */
static int stop_within_10s(void)
{
	int status;

	kill(meta.pid, SIGTERM);
	for (uint64_t t0 = proc_now_ms(); proc_now_ms() - t0 < 10000; usleep(10000))
		if (waitpid(meta.pid, &status, WNOHANG) == meta.pid) {
			meta.pid = 0;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
	return -1;
}

Test(loop, a_stop_signal_ends_a_spinning_loop)
{
	uint64_t t0;

	start("ock.mmc.meta.loop_spin_us=1000", 100);
	cl = fixture_store(meta.url, false, 0);
	atomic_store(&hammering, true);
	cr_assert_eq(pthread_create(&hammer_thread, NULL, hammer, NULL), 0);
	for (t0 = proc_now_ms(); metric(SPIN) < 100 && proc_now_ms() - t0 < 10000;)
		usleep(20000);
	cr_assert_geq(metric(SPIN), 100, "the loop is spinning between the hammer's calls");
	cr_assert_eq(stop_within_10s(), 0, "SIGTERM: a clean exit while calls keep coming");
	stop_hammer();
}

Test(loop, zero_never_spins)
{
	start("ock.mmc.meta.loop_spin_us=0", 100);
	calls(svc, CALLS);
	cr_assert_eq(metric(SPIN), 0);
	cr_assert_eq(metric(POLLED), 0);
}

/* The key is reloadable: 1000 from the file, then 0 by SIGHUP stops the polling at once. */
Test(loop, a_reload_to_zero_stops_the_spin)
{
	char arg[320];
	double caught;
	FILE *f;

	snprintf(conf, sizeof(conf), "/tmp/mmc-test-loop-%d.conf", (int)getpid());
	cr_assert_not_null(f = fopen(conf, "w"));
	fputs("ock.mmc.meta.loop_spin_us = 1000\n", f);
	fclose(f);
	snprintf(arg, sizeof(arg), "--config=%s", conf);
	start(arg, 100);
	calls(svc, CALLS);
	cr_assert_gt(metric(SPIN), 0, "1000 from the file");

	cr_assert_not_null(f = fopen(conf, "w"));
	fputs("ock.mmc.meta.loop_spin_us = 0\n", f);
	fclose(f);
	cr_assert_eq(kill(meta.pid, SIGHUP), 0);
	/* the reload line names the value: only the reload to 0 writes loop_spin_us=0 */
	for (uint64_t t0 = proc_now_ms(); !metaserver_log_has(&meta, "loop_spin_us=0"); usleep(20000))
		cr_assert_lt(proc_now_ms() - t0, 10000, "no op=reload result=applied ... loop_spin_us=0 in the log");
	caught = metric(SPIN);
	calls(svc, CALLS);
	cr_assert_eq(metric(SPIN), caught, "0 by a reload: no request met polling");
}

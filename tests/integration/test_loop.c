/*
 * The loop thread's spin (ock.mmc.meta.loop_spin_us): a stream of small calls is met with the loop awake and
 * answered right, the loop goes back to sleep once the calls stop, a stop signal ends a loop that is spinning, and 0
 * turns the spin off. Real mmc-metaserver processes, libmmc stores, /metrics over HTTP.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "http_client.h"
#include "store_fixture.h"

#define CALLS  2000
#define SPIN   "mmc_loop_spin_requests_total"
#define POLLED "mmc_loop_spin_seconds_total"

static struct metaserver meta;
static mmc_store *svc, *cl;

static void stop(void)
{
	if (cl)
		mmc_destroy(cl);
	if (svc)
		mmc_destroy(svc);
	cl = svc = NULL;
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(loop, .fini = stop, .timeout = 120);

/* A server whose loop spins up to spin_us (1000: the most, so that calls back to back are close enough on any
 * machine, sanitizers included) and a lending store holding "here", heartbeating every heartbeat_ms. */
static void start(const char *spin_us, uint32_t heartbeat_ms)
{
	char spin[64];
	const char *extra[] = {spin, NULL};
	mmc_local_config c;

	snprintf(spin, sizeof(spin), "ock.mmc.meta.loop_spin_us=%s", spin_us);
	cr_assert_eq(metaserver_start(&meta, extra), 0);
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

/* CPU time of the server's loop thread (the main thread), from the scheduler: nanoseconds. */
static uint64_t loop_cpu_ns(void)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)meta.pid, (int)meta.pid);
	cr_assert_not_null(f = fopen(path, "r"));
	cr_assert_eq(fscanf(f, "%llu", &ns), 1);
	fclose(f);
	return ns;
}

Test(loop, a_stream_of_small_calls_is_met_awake_and_answered_right)
{
	start("1000", 100);
	cl = fixture_store(meta.url, false, 0); /* its gets read over the fabric */
	calls(cl, CALLS);
	cr_assert_gt(metric(SPIN), 0, "calls back to back come within 1 ms of each other");
	cr_assert_gt(metric(POLLED), 0);
}

Test(loop, the_loop_sleeps_again_once_the_calls_stop)
{
	double polled;
	uint64_t cpu;

	/* one store, heartbeating less often than the test waits: after its last call, nothing comes */
	start("1000", 10000);
	calls(svc, CALLS);
	usleep(100000);
	polled = metric(POLLED);
	cpu = loop_cpu_ns();
	sleep(1);
	cr_assert_eq(metric(POLLED), polled, "no polling while nobody calls");
	/* a loop still spinning would take most of this second; an idle one a few timer ticks */
	cr_assert_lt(loop_cpu_ns() - cpu, 300000000ull, "loop CPU over an idle second: %llu ns",
	             (unsigned long long)(loop_cpu_ns() - cpu));
}

static volatile int hammering = 1;

static void *hammer(void *arg)
{
	(void)arg;
	while (hammering)
		mmc_is_exist(cl, "here");
	return NULL;
}

Test(loop, a_stop_signal_ends_a_spinning_loop)
{
	pthread_t t;
	double caught;

	start("1000", 100);
	cl = fixture_store(meta.url, false, 0);
	cr_assert_eq(pthread_create(&t, NULL, hammer, NULL), 0);
	usleep(300000);
	caught = metric(SPIN);
	cr_assert_gt(caught, 0, "the loop is spinning between the hammer's calls");
	cr_assert_eq(metaserver_stop(&meta), 0, "SIGTERM: a clean exit while calls keep coming");
	hammering = 0;
	pthread_join(t, NULL);
}

Test(loop, zero_never_spins)
{
	start("0", 100);
	calls(svc, CALLS);
	cr_assert_eq(metric(SPIN), 0);
	cr_assert_eq(metric(POLLED), 0);
}

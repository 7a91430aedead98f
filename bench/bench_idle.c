/*
 * mmc-bench idle: what a store costs when nobody calls it. A meta server and one lending store per protocol, warmed
 * up by a few puts and gets from this process (so connections and progress threads are live), then left alone:
 * CPU seconds (user + system, from /proc/PID/stat) per idle second of the lending store and of the meta server.
 */
#include <mmc/mmc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_cluster.h"

static const char usage[] = "usage: mmc-bench idle [options]\n"
                            "  --protocol tcp|shm[,..]  providers (default shm,tcp)\n"
                            "  --seconds S              idle time measured per protocol (default 10; --quick: 1)\n"
                            "  --no-host-path           same-host peers use the network provider\n";

/* Moves a few blocks through the target so that every path a call takes has run once. */
static int warm_up(const struct bench_cluster *c, const char *protocol)
{
	mmc_store *s = bench_client(c, protocol, 0, 0);
	static char buf[1 << 20];
	int rc = s ? 0 : -1;

	for (int i = 0; s && i < 8 && rc == 0; i++) {
		char key[32];

		snprintf(key, sizeof(key), "idle/%d", i);
		rc = mmc_put_from(s, key, buf, sizeof(buf), MMC_COPY_H2G, NULL);
		if (rc == 0)
			rc = mmc_get_into(s, key, buf, sizeof(buf), MMC_COPY_G2H);
	}
	mmc_destroy(s);
	return rc;
}

static int run_one(const char *self, const char *protocol, double seconds)
{
	struct bench_cluster c;
	double t0, store0, meta0, t1, store1, meta1;

	if (bench_cluster_start(&c, self, protocol, 1, 64ull << 20, 1))
		return -1;
	if (warm_up(&c, protocol)) {
		fprintf(stderr, "mmc-bench idle: the warm-up transfers failed over %s\n", protocol);
		bench_cluster_stop(&c);
		return -1;
	}
	usleep(200000); /* let the last lease releases and group commits settle */
	t0 = now_s();
	store0 = proc_cpu_seconds(c.targets[0], 0);
	meta0 = proc_cpu_seconds(c.meta.pid, 0);
	usleep((useconds_t)(seconds * 1e6));
	t1 = now_s();
	store1 = proc_cpu_seconds(c.targets[0], 0);
	meta1 = proc_cpu_seconds(c.meta.pid, 0);
	printf("%-6s %10.2f %14.4f %9.2f%% %14.4f %9.2f%%\n", bench_proto_str(protocol), t1 - t0,
	       (store1 - store0) / (t1 - t0), 100 * (store1 - store0) / (t1 - t0), (meta1 - meta0) / (t1 - t0),
	       100 * (meta1 - meta0) / (t1 - t0));
	fflush(stdout);
	bench_cluster_stop(&c);
	return store0 < 0 || meta0 < 0 ? -1 : 0;
}

int bench_idle_main(int argc, char **argv, const char *self)
{
	struct bench_opts o;
	int rc = bench_parse(argc, argv, &o, usage);
	double seconds;

	if (rc)
		return rc > 0 ? 0 : 2;
	seconds = o.quick ? 1.0 : o.seconds == 2.0 ? 10.0 : o.seconds;
	printf("# idle: CPU seconds (user + system, /proc/PID/stat) per idle second after a warm-up; %% of one core; "
	       "the target store lends 64 MiB%s\n",
	       o.no_host_path ? ", host path off" : "");
	printf("%-6s %10s %14s %10s %14s %10s\n", "proto", "idle_s", "store_cpu/s", "store", "meta_cpu/s", "meta");
	for (int i = 0; i < o.nprotocols; i++) {
		bench_use_protocol(&o, o.protocols[i]);
		rc |= run_one(self, o.protocols[i], seconds);
	}
	return rc ? 1 : 0;
}

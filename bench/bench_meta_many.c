/*
 * Many clients against one leader: `mmc-bench meta --procs P --threads T` re-executes itself P times as
 * `mmc-bench meta-client`, each a store with T threads calling one operation on random keys of the index (or on
 * fresh keys, for put_meta) for the same window. The leader's ceiling is then measured, not extrapolated from one
 * client: the aggregate keys/s and the CPU its loop thread spent per key over that window.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_cluster.h"
#include "bench_meta.h"
#include "bench_stats.h"
#include "proc.h"

#define MANY_MAX 64 /* processes */

static const char *const op_names[] = {"batch_is_exist", "put_meta"};

struct client_thread {
	mmc_store *s;
	int op, batch, id;
	size_t nkeys;
	double end;
	uint64_t keys;
	int failed;
};

static void *client_thread(void *arg)
{
	struct client_thread *t = arg;
	char(*names)[KEY_CHARS] = calloc((size_t)t->batch, KEY_CHARS);
	const char **keys = calloc((size_t)t->batch, sizeof(*keys));
	int *res = calloc((size_t)t->batch, sizeof(*res));
	unsigned seed = 777u * (unsigned)t->id + 1;
	uint64_t seq = 0;

	while (names && keys && res && !t->failed && now_s() < t->end) {
		for (int i = 0; i < t->batch; i++) {
			if (t->op == 0)
				key_name(names[i], (size_t)rand_r(&seed) % t->nkeys);
			else
				snprintf(names[i], KEY_CHARS, "many/%d/%llu/%d", t->id, (unsigned long long)seq, i);
			keys[i] = names[i];
		}
		if (t->op == 0)
			t->failed = mmc_batch_is_exist(t->s, keys, (size_t)t->batch, res) != 0;
		else
			t->failed = put_meta(t->s, keys, t->batch, res) != 0 ||
			            mmc_batch_remove(t->s, keys, (size_t)t->batch, res) != 0;
		t->keys += (uint64_t)t->batch;
		seq++;
	}
	free(names);
	free(keys);
	free(res);
	return NULL;
}

/* argv: meta-client URL PROTOCOL OP NKEYS BATCH SECONDS THREADS ID. Prints "ready", waits for a line, runs, prints
 * "done KEYS FAILED". */
int bench_meta_client_main(int argc, char **argv)
{
	mmc_local_config cfg = mmc_default_local_config();
	struct client_thread th[64];
	pthread_t tid[64];
	int threads, rc = 0;
	char line[16];
	uint64_t keys = 0;
	double seconds;
	mmc_store *s = mmc_create();

	if (argc < 10 || !s)
		return 2;
	snprintf(cfg.meta_service_url, sizeof(cfg.meta_service_url), "%s", argv[2]);
	snprintf(cfg.protocol, sizeof(cfg.protocol), "%s", argv[3]);
	bench_tenant_config(&cfg);
	threads = atoi(argv[8]);
	seconds = atof(argv[7]);
	if (threads < 1 || threads > 64 || mmc_setup(s, &cfg) || mmc_init(s, 0, false)) {
		printf("fail\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int i = 0; i < threads; i++) {
		th[i] = (struct client_thread){s,
		                               atoi(argv[4]),
		                               atoi(argv[6]),
		                               atoi(argv[9]) * 64 + i,
		                               strtoull(argv[5], NULL, 10),
		                               now_s() + seconds,
		                               0,
		                               0};
		pthread_create(&tid[i], NULL, client_thread, &th[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		keys += th[i].keys;
		rc |= th[i].failed;
	}
	printf("done %llu %d\n", (unsigned long long)keys, rc);
	fflush(stdout);
	mmc_destroy(s);
	return rc;
}

extern char **environ;

struct client_proc {
	pid_t pid;
	int in;
	FILE *out;
};

static int spawn(struct client_proc *c, char **argv)
{
	int out;

	c->pid = proc_spawn_piped(argv[0], argv, environ, &c->in, &out);
	c->out = c->pid > 0 ? fdopen(out, "r") : NULL;
	return c->out ? 0 : -1;
}

static int expect(struct client_proc *c, const char *word, char *line, size_t len)
{
	return fgets(line, (int)len, c->out) && strncmp(line, word, strlen(word)) == 0 ? 0 : -1;
}

static int run_op(const char *self, const char *url, const char *protocol, int op, size_t nkeys, int batch, int procs,
                  int threads, double seconds, pid_t server)
{
	struct client_proc c[MANY_MAX];
	char ops[16], nk[32], bs[16], secs[32], ths[16], ids[MANY_MAX][16], line[128];
	uint64_t keys = 0, c0, a0;
	double t0, wall;
	int rc = 0, n = 0;

	snprintf(ops, sizeof(ops), "%d", op);
	snprintf(nk, sizeof(nk), "%zu", nkeys);
	snprintf(bs, sizeof(bs), "%d", batch);
	snprintf(secs, sizeof(secs), "%.3f", seconds);
	snprintf(ths, sizeof(ths), "%d", threads);
	for (; n < procs && rc == 0; n++) {
		char *argv[] = {(char *)self, "meta-client", (char *)url, (char *)protocol, ops, nk,
		                bs,           secs,          ths,         ids[n],           NULL};

		snprintf(ids[n], sizeof(ids[n]), "%d", n);
		rc = spawn(&c[n], argv) || expect(&c[n], "ready", line, sizeof(line));
	}
	c0 = cpu_ns(server);
	a0 = cpu_all_ns(server);
	t0 = now_s();
	for (int i = 0; i < n && rc == 0; i++)
		rc = write(c[i].in, "go\n", 3) == 3 ? 0 : -1;
	for (int i = 0; i < n; i++) {
		unsigned long long k = 0;
		int failed = 1;

		if (rc == 0 && expect(&c[i], "done", line, sizeof(line)) == 0 &&
		    sscanf(line, "done %llu %d", &k, &failed) == 2 && !failed)
			keys += k;
		else
			rc = -1;
		close(c[i].in);
		fclose(c[i].out);
		waitpid(c[i].pid, NULL, 0);
	}
	wall = now_s() - t0;
	if (rc == 0)
		printf("%-14s %6d %8d %12.0f %10.3f %10.3f %10.0f %10.0f\n", op_names[op], procs, threads,
		       (double)keys / wall, keys ? (double)(cpu_ns(server) - c0) / 1e3 / (double)keys : 0,
		       keys ? (double)(cpu_all_ns(server) - a0) / 1e3 / (double)keys : 0,
		       100.0 * (double)(cpu_ns(server) - c0) / 1e9 / wall,
		       100.0 * (double)(cpu_all_ns(server) - a0) / 1e9 / wall);
	fflush(stdout);
	return rc;
}

int bench_meta_many(const char *self, const char *url, const char *protocol, size_t nkeys, int batch, int procs,
                    int threads, double seconds, pid_t server)
{
	int rc = 0;

	if (procs > MANY_MAX)
		procs = MANY_MAX;
	printf("\n# many clients: %d processes x %d threads, one leader, %zu keys in the index, batch %d\n", procs,
	       threads, nkeys, batch);
	printf("%-14s %6s %8s %12s %10s %10s %10s %10s\n", "op", "procs", "threads", "keys/s", "srv_us/key",
	       "all_us/key", "loop_cpu%", "all_cpu%");
	for (int op = 0; op < 2 && rc == 0; op++)
		rc = run_op(self, url, protocol, op, nkeys, batch, procs, threads, seconds, server);
	if (rc)
		fprintf(stderr, "mmc-bench meta: a client process failed\n");
	return rc;
}

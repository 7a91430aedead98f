/*
 * mmc-soak: the parent. It starts the meta server, forks the workers, runs the schedule of kills and prints the
 * summary. Exit status: 0 clean, 1 a violation (corrupt, stale-after-remove, older-version) or a worker that died
 * or hung on its own, 2 the harness could not run (server did not start or restart, workers did not join).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "soak.h"
#include "soak_server.h"

#define MIB            (UINT64_C(1) << 20)
#define POOL_ALIGN     (2 * MIB) /* libmmc rounds dram_size up to this */
#define JOIN_MS        60000     /* workers joining, services rejoining */
#define SWEEP_MS       30000     /* one verification sweep of every thread */
#define STOP_MS        60000     /* workers finishing their last call and leaving */
#define WORKER_GAP_S   2.0       /* a meta kill this close to the worker kill moves after it */
#define STALL_AFTER_MS 1000      /* reads only for this long after a stalled worker runs again */

/* SIGINT or SIGTERM: stop early, still with a summary (the data dir is removed too) */
static volatile sig_atomic_t interrupted;

struct parent {
	struct soak_run run;
	struct soak_server sv;
	pid_t pid[SOAK_MAX_PROCS];
	bool alive[SOAK_MAX_PROCS];
	int live;
	int died; /* workers that exited or crashed on their own */
	uint64_t rng;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: mmc-soak [--seconds N] [--procs N] [--threads N] [--pool-mb N] [--protocol tcp|shm]\n"
	           "                [--min-size BYTES] [--max-size BYTES] [--key-factor F] [--seed N]\n"
	           "                [--kill-worker-at S (negative: never)] [--meta-kills N] [--metaserver PATH]\n"
	           "                [--evict HIGH,LOW] [--stalls N] [--stall-ms MS] [--rma-timeout-ms MS]\n"
	           "                [--plain-buffers] [--verbose]\n"
	           "Sizes take K, M or G suffixes. See docs/testing.md.\n");
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	switch (*end) {
	case 'g':
	case 'G':
		return v << 30;
	case 'm':
	case 'M':
		return v << 20;
	case 'k':
	case 'K':
		return v << 10;
	default:
		return v;
	}
}

static void set_protocol(struct soak_opts *o, const char *p)
{
	snprintf(o->protocol, sizeof(o->protocol), "%s%s", strncmp(p, "host_", 5) ? "host_" : "", p);
}

static void defaults(struct soak_opts *o)
{
	const char *proto = getenv("MMC_PROTOCOL");

	*o = (struct soak_opts){
	    .seconds = 60,
	    .procs = 4,
	    .threads = 4,
	    .meta_kills = 3,
	    .pool_bytes = 128 * MIB,
	    .min_size = 4096,
	    .max_size = 4 * MIB,
	    .kill_worker_at = NAN,
	    .key_factor = 8,
	    .stall_ms = 2500,
	    .rma_timeout_ms = 5000,
	    .seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20),
	};
	set_protocol(o, proto && *proto ? proto : "tcp");
}

static int parse_opt(struct soak_opts *o, int c, const char *arg)
{
	switch (c) {
	case 's':
		o->seconds = atoi(arg);
		break;
	case 'p':
		o->procs = atoi(arg);
		break;
	case 't':
		o->threads = atoi(arg);
		break;
	case 'm':
		o->pool_bytes = strtoull(arg, NULL, 10) * MIB;
		break;
	case 'P':
		set_protocol(o, arg);
		break;
	case 'a':
		o->min_size = parse_size(arg);
		break;
	case 'z':
		o->max_size = parse_size(arg);
		break;
	case 'f':
		o->key_factor = atof(arg);
		break;
	case 'S':
		o->seed = strtoull(arg, NULL, 0);
		break;
	case 'w':
		o->kill_worker_at = atof(arg);
		break;
	case 'k':
		o->meta_kills = atoi(arg);
		break;
	case 'x':
		o->metaserver = arg;
		break;
	case 'e':
		if (sscanf(arg, "%u,%u", &o->evict_high, &o->evict_low) != 2)
			return -1;
		break;
	case 'v':
		o->verbose = true;
		break;
	case 'T':
		o->stalls = atoi(arg);
		break;
	case 'L':
		o->stall_ms = (unsigned)atoi(arg);
		break;
	case 'R':
		o->rma_timeout_ms = (unsigned)atoi(arg);
		break;
	case 'B':
		o->plain_buffers = true;
		break;
	case 'h':
		usage(stdout);
		exit(0);
	default:
		return -1;
	}
	return 0;
}

static int check_opts(struct soak_opts *o)
{
	if (o->seconds < 1 || o->procs < 1 || o->procs > SOAK_MAX_PROCS || o->threads < 1 ||
	    o->threads > SOAK_MAX_THREADS || o->pool_bytes < 4 * MIB || o->meta_kills < 0 || o->key_factor <= 0 ||
	    o->stalls < 0 || o->rma_timeout_ms < 100 ||
	    (strcmp(o->protocol, "host_tcp") && strcmp(o->protocol, "host_shm"))) {
		fprintf(stderr, "mmc-soak: bad option value (procs 1..%d, threads 1..%d, pool >= 4 MiB, tcp|shm)\n",
		        SOAK_MAX_PROCS, SOAK_MAX_THREADS);
		return -1;
	}
	if (o->evict_high && (o->evict_low < 1 || o->evict_low >= o->evict_high || o->evict_high > 99)) {
		fprintf(stderr, "mmc-soak: --evict HIGH,LOW needs 1 <= LOW < HIGH <= 99\n");
		return -1;
	}
	if (o->min_size < 64)
		o->min_size = 64; /* room for the header and some body */
	if (o->max_size < o->min_size)
		o->min_size = o->max_size < 64 ? 64 : o->max_size;
	if (o->max_size < o->min_size)
		o->max_size = o->min_size;
	if (isnan(o->kill_worker_at))
		o->kill_worker_at = 0.2 * o->seconds;
	if (o->procs == 1)
		o->kill_worker_at = -1; /* killing the only service would leave nothing to test */
	return 0;
}

static int parse_args(struct soak_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"seconds", 1, NULL, 's'},        {"procs", 1, NULL, 'p'},
	    {"threads", 1, NULL, 't'},        {"pool-mb", 1, NULL, 'm'},
	    {"protocol", 1, NULL, 'P'},       {"min-size", 1, NULL, 'a'},
	    {"max-size", 1, NULL, 'z'},       {"key-factor", 1, NULL, 'f'},
	    {"seed", 1, NULL, 'S'},           {"kill-worker-at", 1, NULL, 'w'},
	    {"meta-kills", 1, NULL, 'k'},     {"metaserver", 1, NULL, 'x'},
	    {"evict", 1, NULL, 'e'},          {"verbose", 0, NULL, 'v'},
	    {"stalls", 1, NULL, 'T'},         {"stall-ms", 1, NULL, 'L'},
	    {"rma-timeout-ms", 1, NULL, 'R'}, {"plain-buffers", 0, NULL, 'B'},
	    {"help", 0, NULL, 'h'},           {NULL, 0, NULL, 0},
	};
	int c;

	defaults(o);
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (parse_opt(o, c, optarg)) {
			usage(stderr);
			return -1;
		}
	}
	return optind == argc ? check_opts(o) : -1;
}

/* The server to run: --metaserver, else $MMC_METASERVER, else the one this build made. */
static void choose_metaserver(const struct soak_opts *o)
{
	if (o->metaserver)
		setenv("MMC_METASERVER", o->metaserver, 1);
#ifdef MMC_SOAK_METASERVER
	else if (!getenv("MMC_METASERVER"))
		setenv("MMC_METASERVER", MMC_SOAK_METASERVER, 1);
#endif
}

/* Seconds into the workload (0 before it starts). */
static double elapsed(const struct parent *P)
{
	uint64_t t0 = P->run.shm->t0_ms;

	return t0 ? (double)(soak_now_ms() - t0) / 1e3 : 0;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) && errno == EINTR && !interrupted) {
	}
}

static uint64_t parent_rand(struct parent *P)
{
	P->rng ^= P->rng << 13;
	P->rng ^= P->rng >> 7;
	P->rng ^= P->rng << 17;
	return P->rng;
}

/* Notices workers that exited on their own (a crash in libmmc, a failed allocation). */
static void reap(struct parent *P)
{
	int status;

	for (int p = 0; p < P->run.opts.procs; p++) {
		if (!P->alive[p] || waitpid(P->pid[p], &status, WNOHANG) != P->pid[p])
			continue;
		P->alive[p] = false;
		P->live--;
		P->died++;
		atomic_fetch_or(&P->run.shm->dead, 1u << p);
		printf("soak: %.2f s: worker %d exited on its own (%s %d)\n", elapsed(P), p,
		       WIFSIGNALED(status) ? "signal" : "status",
		       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
}

static int fork_workers(struct parent *P)
{
	fflush(NULL); /* the children inherit stdio buffers */
	for (int p = 0; p < P->run.opts.procs; p++) {
		pid_t pid = fork();

		if (pid == 0)
			soak_worker_main(&P->run, p);
		if (pid < 0)
			return -1;
		P->pid[p] = pid;
		P->alive[p] = true;
		P->live++;
	}
	return 0;
}

static int wait_ready(struct parent *P)
{
	uint64_t end = soak_now_ms() + JOIN_MS;

	while (atomic_load(&P->run.shm->ready) < P->run.opts.procs) {
		reap(P);
		if (P->died || soak_now_ms() > end)
			return -1;
		sleep_ms(10);
	}
	return 0;
}

/* A process killed with SIGKILL leaves its libfabric shm regions ("<pid>:<domain>:<ep>") behind. */
static void remove_shm_of(pid_t pid)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -f /dev/shm/%d:* 2>/dev/null", (int)pid);
	if (system(cmd)) {
	}
}

static void kill_worker(struct parent *P)
{
	int p = (int)(P->run.opts.seed % (uint64_t)P->run.opts.procs);

	if (!P->alive[p])
		return;
	kill(P->pid[p], SIGKILL);
	waitpid(P->pid[p], NULL, 0);
	remove_shm_of(P->pid[p]);
	P->alive[p] = false;
	P->live--;
	atomic_fetch_or(&P->run.shm->dead, 1u << p);
	printf("soak: %.2f s: SIGKILL worker %d (pid %d); its keys have no owner from now on\n", elapsed(P), p,
	       (int)P->pid[p]);
}

static bool wait_swept(struct parent *P, uint32_t threads)
{
	uint64_t end = soak_now_ms() + SWEEP_MS;

	while (atomic_load(&P->run.shm->swept) < threads) {
		if (soak_now_ms() > end)
			return false;
		sleep_ms(10);
	}
	return true;
}

/*
 * One meta server kill: a storm of puts first, so that eviction is freeing and the puts are reusing space when
 * the SIGKILL lands; then a restart on the same data dir and port, a wait for the services to rejoin, and one
 * verification sweep of every key while nothing is put (so nothing is evicted before it is read).
 */
static int meta_kill(struct parent *P, int i)
{
	struct soak_shm *shm = P->run.shm;
	uint64_t storm = 50 + parent_rand(P) % 450, t_kill, t_up, t_joined, pool, early = 0;
	bool swept;

	atomic_store(&shm->phase, SOAK_STORM);
	sleep_ms(storm);
	server_kill(&P->sv);
	t_kill = soak_now_ms();
	atomic_store(&shm->phase, SOAK_HOLD);
	printf("soak: %.2f s: SIGKILL meta server (kill %d) after a %" PRIu64 " ms put storm\n", elapsed(P), i + 1,
	       storm);
	if (server_restart(&P->sv)) {
		fprintf(stderr, "soak: the meta server did not restart (log: %s)\n", P->sv.m.log);
		return -1;
	}
	t_up = soak_now_ms();
	atomic_store(&shm->since_ms, t_up);
	pool = (P->run.opts.pool_bytes + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
	if (server_wait_attached(&P->sv, pool * (uint64_t)P->live, JOIN_MS))
		return -1;
	t_joined = soak_now_ms();
	server_metric(&P->sv, "mmc_evictions_total", &early); /* puts retried after the restart may evict */
	atomic_store(&shm->swept, 0);
	atomic_fetch_add(&shm->gen, 1);
	atomic_store(&shm->phase, SOAK_VERIFY);
	swept = wait_swept(P, (uint32_t)(P->live * P->run.opts.threads));
	atomic_store(&shm->phase, SOAK_RUN);
	printf("soak: %.2f s: meta server up again after %.2f s, services rejoined after %.2f s more (%" PRIu64
	       " evictions meanwhile), verification sweep %s in %.2f s\n",
	       elapsed(P), (double)(t_up - t_kill) / 1e3, (double)(t_joined - t_up) / 1e3, early,
	       swept ? "done" : "NOT done", (double)(soak_now_ms() - t_joined) / 1e3);
	return 0;
}

/*
 * One stall: a live worker other than the one to be killed is stopped (SIGSTOP: every thread, the fabric progress
 * thread too, while its kernel still takes the requests sent to it) for stall_ms, longer than the others'
 * rma_timeout_ms, so their reads and writes against its pool are given up; then it runs again and answers the
 * requests it holds. Nothing of a given-up read may land in a caller's buffer afterwards (the readers reuse theirs),
 * and nothing of a given-up write in space given to another key: the checks of every later read count either as
 * corrupt.
 */
static void stall_worker(struct parent *P, int i)
{
	int victim = (int)(P->run.opts.seed % (uint64_t)P->run.opts.procs), p = -1;

	for (int k = 0; k < P->run.opts.procs && p < 0; k++) {
		int c = (int)((parent_rand(P) + (uint64_t)k) % (uint64_t)P->run.opts.procs);

		if (P->alive[c] && (c != victim || P->run.opts.kill_worker_at < 0 || P->run.opts.procs == 1))
			p = c;
	}
	if (p < 0)
		return;
	/* reads only, from just before the stop to a while after: many gets are in flight when the owner resumes */
	atomic_store(&P->run.shm->phase, SOAK_HOLD);
	kill(P->pid[p], SIGSTOP);
	printf("soak: %.2f s: SIGSTOP worker %d for %u ms (stall %d)\n", elapsed(P), p, P->run.opts.stall_ms, i + 1);
	sleep_ms(P->run.opts.stall_ms);
	kill(P->pid[p], SIGCONT);
	sleep_ms(STALL_AFTER_MS);
	atomic_store(&P->run.shm->phase, SOAK_RUN);
}

/* Stall times spread over the run, offset from the meta kills by half a gap. */
static double stall_at(const struct parent *P, int i)
{
	const struct soak_opts *o = &P->run.opts;
	double gap = (double)o->seconds / (o->stalls + 1);

	return gap * (i + 1) - gap / 4;
}

/* Meta kill times spread over the run with some jitter, none within WORKER_GAP_S of the worker kill. */
static double meta_kill_at(struct parent *P, int i)
{
	const struct soak_opts *o = &P->run.opts;
	double gap = (double)o->seconds / (o->meta_kills + 1);
	double at = gap * (i + 1) + gap * ((double)(parent_rand(P) % 1000) / 1000 - 0.5) * 0.5;

	if (o->kill_worker_at >= 0 && fabs(at - o->kill_worker_at) < WORKER_GAP_S)
		at = o->kill_worker_at + WORKER_GAP_S;
	return at;
}

static void wait_until(struct parent *P, double at)
{
	while (elapsed(P) < at && !interrupted) {
		reap(P);
		sleep_ms(at - elapsed(P) > 0.1 ? 100 : 10);
	}
}

static void on_signal(int sig)
{
	interrupted = sig;
}

/* Installed after the fork: the workers keep the default action (and die with the parent anyway). */
static void catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int run_schedule(struct parent *P)
{
	const struct soak_opts *o = &P->run.opts;
	bool worker_done = o->kill_worker_at < 0;
	int k = 0, st = 0;
	double next = o->meta_kills ? meta_kill_at(P, 0) : INFINITY;

	while (elapsed(P) < o->seconds) {
		double w = worker_done ? INFINITY : o->kill_worker_at;
		double s = st < o->stalls ? stall_at(P, st) : INFINITY;
		double at = fmin(fmin(fmin(w, next), s), o->seconds);

		wait_until(P, at);
		if (at >= o->seconds || interrupted)
			break;
		if (at == w) {
			kill_worker(P);
			worker_done = true;
			continue;
		}
		if (at == s) {
			stall_worker(P, st++);
			continue;
		}
		if (meta_kill(P, k))
			return -1;
		next = ++k < o->meta_kills ? fmax(meta_kill_at(P, k), elapsed(P) + 1) : INFINITY;
	}
	return 0;
}

/* Asks the workers to finish; one that does not leave within STOP_MS is hung: killed and counted. */
static int stop_workers(struct parent *P)
{
	uint64_t end = soak_now_ms() + STOP_MS;
	int hung = 0;

	atomic_store(&P->run.shm->phase, SOAK_STOP);
	while (P->live > 0 && soak_now_ms() < end) {
		int status;

		for (int p = 0; p < P->run.opts.procs; p++) {
			if (!P->alive[p] || waitpid(P->pid[p], &status, WNOHANG) != P->pid[p])
				continue;
			P->alive[p] = false;
			P->live--;
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				P->died++;
				printf("soak: worker %d ended badly (status 0x%x)\n", p, (unsigned)status);
			}
		}
		sleep_ms(20);
	}
	for (int p = 0; p < P->run.opts.procs; p++) {
		if (!P->alive[p])
			continue;
		printf("soak: worker %d did not stop within %d s: killed\n", p, STOP_MS / 1000);
		kill(P->pid[p], SIGKILL);
		waitpid(P->pid[p], NULL, 0);
		remove_shm_of(P->pid[p]);
		hung++;
	}
	return hung;
}

static void print_run(const struct parent *P)
{
	const struct soak_opts *o = &P->run.opts;
	const struct soak_keys *k = &P->run.keys;

	const char *hp = getenv("MMC_HOST_PATH");

	printf("soak: seed=%" PRIu64 " seconds=%d procs=%d threads=%d pool=%" PRIu64 " MiB protocol=%s "
	       "sizes=%" PRIu64 "..%" PRIu64
	       " keys=%u per thread + %u shared, meta kills=%d, worker kill at %s%.1f s\n",
	       o->seed, o->seconds, o->procs, o->threads, o->pool_bytes / MIB, o->protocol, o->min_size, o->max_size,
	       k->per_writer, k->shared, o->meta_kills, o->kill_worker_at < 0 ? "never " : "",
	       o->kill_worker_at < 0 ? 0.0 : o->kill_worker_at);
	printf("soak: stalls=%d of %u ms, rma_timeout_ms=%u, host path %s, buffers %s\n", o->stalls, o->stall_ms,
	       o->rma_timeout_ms, hp && *hp ? hp : "on", o->plain_buffers ? "registered and plain" : "registered");
	printf("soak: meta server %s, data in %s\n", P->sv.m.url, P->sv.m.dir);
}

static int setup(struct parent *P, int argc, char **argv)
{
	memset(P, 0, sizeof(*P));
	if (parse_args(&P->run.opts, argc, argv))
		return -1;
	soak_keys_init(&P->run.keys, &P->run.opts);
	P->rng = P->run.opts.seed | 1;
	P->run.shm = mmap(NULL, sizeof(struct soak_shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (P->run.shm == MAP_FAILED)
		return -1;
	choose_metaserver(&P->run.opts);
	return 0;
}

/* Runs the soak once the server is up: 0, or 2 when the harness failed. */
static int soak(struct parent *P)
{
	P->run.meta_url = P->sv.m.url;
	print_run(P);
	if (fork_workers(P) || wait_ready(P)) {
		fprintf(stderr, "soak: the workers did not come up\n");
		stop_workers(P);
		return 2;
	}
	catch_signals();
	P->run.shm->t0_ms = soak_now_ms();
	atomic_store(&P->run.shm->go, 1);
	if (run_schedule(P)) {
		stop_workers(P);
		return 2;
	}
	if (interrupted)
		printf("soak: %.2f s: interrupted by signal %d\n", elapsed(P), (int)interrupted);
	P->died += stop_workers(P);
	return 0;
}

int main(int argc, char **argv)
{
	struct parent P;
	struct soak_counts total;
	uint64_t violations;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (setup(&P, argc, argv))
		return 2;
	if (server_start(&P.sv, &P.run.opts)) {
		fprintf(stderr, "soak: cannot start mmc-metaserver (set MMC_METASERVER or --metaserver)\n");
		return 2;
	}
	rc = soak(&P);
	if (server_cleanup(&P.sv))
		rc = rc ? rc : 1; /* a sanitizer report in the server log */
	violations = soak_report(&P.run, P.sv.evictions, &total);
	if (rc == 0 && total.correct == 0) {
		printf("soak: no read was verified: the run proved nothing\n");
		rc = 2;
	}
	if (rc == 0 && (violations || P.died))
		rc = 1;
	printf("soak: %s (corrupt %" PRIu64 ", stale-after-remove %" PRIu64 ", older-version %" PRIu64
	       ", workers died or hung %d)\n",
	       rc ? "FAIL" : "PASS", total.corrupt, total.stale, total.older, P.died);
	return rc;
}

#include "bench_data.h"

#include <mmc/mmc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *page_alloc(size_t n)
{
	return aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
}

static int piece_lists(struct kbufs *b, const struct shape *sh, int i)
{
	size_t off = 0;

	b->src_pieces[i] = calloc((size_t)sh->npieces, sizeof(void *));
	b->dst_pieces[i] = calloc((size_t)sh->npieces, sizeof(void *));
	b->piece_sizes[i] = calloc((size_t)sh->npieces, sizeof(size_t));
	if (!b->src_pieces[i] || !b->dst_pieces[i] || !b->piece_sizes[i])
		return -1;
	for (int l = 0; l < sh->npieces; l++) {
		b->src_pieces[i][l] = (char *)b->src[i] + off;
		b->dst_pieces[i][l] = (char *)b->dst[i] + off;
		b->piece_sizes[i][l] = sh->piece[l];
		off += sh->piece[l];
	}
	b->npieces[i] = (size_t)sh->npieces;
	return 0;
}

int kbufs_alloc(struct kbufs *b, const struct shape *sh, int batch)
{
	size_t n = (size_t)batch;

	memset(b, 0, sizeof(*b));
	b->batch = batch;
	b->keys = calloc(n, sizeof(*b->keys));
	b->src = calloc(n, sizeof(*b->src));
	b->dst = calloc(n, sizeof(*b->dst));
	b->src_pieces = calloc(n, sizeof(*b->src_pieces));
	b->dst_pieces = calloc(n, sizeof(*b->dst_pieces));
	b->piece_sizes = calloc(n, sizeof(*b->piece_sizes));
	b->npieces = calloc(n, sizeof(*b->npieces));
	b->results = calloc(n, sizeof(*b->results));
	if (!b->keys || !b->src || !b->dst || !b->src_pieces || !b->dst_pieces || !b->piece_sizes || !b->npieces ||
	    !b->results)
		return -1;
	for (int i = 0; i < batch; i++) {
		b->keys[i] = calloc(1, 96);
		b->src[i] = page_alloc(sh->block);
		b->dst[i] = page_alloc(sh->block);
		if (!b->keys[i] || !b->src[i] || !b->dst[i] || piece_lists(b, sh, i))
			return -1;
		for (size_t k = 0; k < sh->block; k += 4096)
			((unsigned char *)b->src[i])[k] = (unsigned char)(i * 7 + k / 4096);
		memset(b->dst[i], 0, sh->block);
	}
	return 0;
}

void kbufs_free(struct kbufs *b)
{
	for (int i = 0; b->keys && i < b->batch; i++) {
		free(b->keys[i]);
		free(b->src[i]);
		free(b->dst[i]);
		free(b->src_pieces[i]);
		free(b->dst_pieces[i]);
		free(b->piece_sizes[i]);
	}
	free(b->keys);
	free(b->src);
	free(b->dst);
	free(b->src_pieces);
	free(b->dst_pieces);
	free(b->piece_sizes);
	free(b->npieces);
	free(b->results);
	memset(b, 0, sizeof(*b));
}

/* ---- one client thread ---- */

struct djob {
	mmc_store *s, *ck; /* ck: a store with verify_checksum on (--checksum both), or NULL */
	const struct shape *sh;
	int batch, id, rc;
	double ramp_s; /* untimed rounds after the warm-up */
	const struct data_gate *g;
	pthread_barrier_t *bar; /* the client threads and the thread that runs g->between */
	struct dsamples d;
};

void dsamples_free(struct dsamples *d)
{
	samples_free(&d->put);
	samples_free(&d->get);
	samples_free(&d->put_ck);
	samples_free(&d->get_ck);
}

static void dsamples_merge(struct dsamples *dst, struct dsamples *src)
{
	samples_merge(&dst->put, &src->put);
	samples_merge(&dst->get, &src->get);
	samples_merge(&dst->put_ck, &src->put_ck);
	samples_merge(&dst->get_ck, &src->get_ck);
}

static int check(const int *results, int n, const char *what)
{
	for (int i = 0; i < n; i++) {
		if (results[i]) {
			fprintf(stderr, "mmc-bench: %s failed for key %d: %s\n", what, i, mmc_strerror(results[i]));
			return -1;
		}
	}
	return 0;
}

static int put_batch(mmc_store *s, struct kbufs *b)
{
	return mmc_batch_put_from_layers(s, (const char *const *)b->keys, (const void *const *const *)b->src_pieces,
	                                 (const size_t *const *)b->piece_sizes, b->npieces, (size_t)b->batch,
	                                 MMC_COPY_H2G, NULL, b->results) ||
	       check(b->results, b->batch, "put");
}

static int get_batch(mmc_store *s, struct kbufs *b)
{
	return mmc_batch_get_into_layers(s, (const char *const *)b->keys, (void *const *const *)b->dst_pieces,
	                                 (const size_t *const *)b->piece_sizes, b->npieces, (size_t)b->batch,
	                                 MMC_COPY_G2H, b->results) ||
	       check(b->results, b->batch, "get");
}

static void name_keys(struct kbufs *b, int id, int seq)
{
	for (int i = 0; i < b->batch; i++)
		snprintf(b->keys[i], 96, "d/%d/%d/%d/%d", (int)getpid(), id, seq, i);
}

/* The untimed first round: connections, page faults, and a byte-for-byte check of what came back. */
static int warm_up(struct djob *j, mmc_store *s, struct kbufs *b, int seq)
{
	name_keys(b, j->id, seq);
	if (put_batch(s, b) || get_batch(s, b))
		return -1;
	for (int i = 0; i < b->batch; i++) {
		if (memcmp(b->src[i], b->dst[i], j->sh->block)) {
			fprintf(stderr, "mmc-bench: key %d came back different\n", i);
			return -1;
		}
	}
	return mmc_batch_remove(s, (const char *const *)b->keys, (size_t)b->batch, b->results);
}

/* One round on store s: put (timed), get (timed), remove (untimed). */
static int one_round(struct djob *j, mmc_store *s, struct kbufs *b, int seq, struct samples *put, struct samples *get)
{
	double t0, t1;
	int rc;

	name_keys(b, j->id, seq);
	t0 = now_s();
	rc = put_batch(s, b);
	t1 = now_s();
	rc = rc ? rc : get_batch(s, b);
	samples_add(put, t1 - t0);
	samples_add(get, now_s() - t1);
	mmc_batch_remove(s, (const char *const *)b->keys, (size_t)b->batch, b->results);
	return rc;
}

static int register_all(mmc_store *s, struct kbufs *b, size_t block)
{
	int rc = 0;

	for (int i = 0; s && rc == 0 && i < b->batch; i++)
		rc = mmc_register_buffer(s, b->src[i], block) || mmc_register_buffer(s, b->dst[i], block);
	return rc;
}

static void unregister_all(mmc_store *s, struct kbufs *b, size_t block)
{
	for (int i = 0; s && b->src && i < b->batch; i++) {
		mmc_unregister_buffer(s, b->src[i], block);
		mmc_unregister_buffer(s, b->dst[i], block);
	}
}

/*
 * Untimed rounds before the first timed one, as fio's ramp_time: the first writes into a lender's pool pay the
 * first touch of its pages (zeroing, and on a VM the host backing them: about 2 ms per MiB on the 2-vCPU test VM),
 * once in a pool's life, which a short run would otherwise count as its p99. The rounds also reach the steady
 * state of the store's extents (a grant every few batches, into space already touched).
 */
#define RAMP_MAX_S 0.5

static void ramp(struct djob *j, struct kbufs *b, int *seq, double seconds)
{
	struct samples put = {0}, get = {0};
	double end = now_s() + seconds;

	/* one round at least, and none once a call failed (or the buffers could not be set up) */
	for (bool first = true; j->rc == 0 && (first || now_s() < end); first = false) {
		j->rc = one_round(j, j->s, b, (*seq)++, &put, &get);
		if (j->rc == 0 && j->ck)
			j->rc = one_round(j, j->ck, b, (*seq)++, &put, &get);
	}
	samples_free(&put);
	samples_free(&get);
}

/* One round of the gate: calls for round_s (at least three), then wait while the baseline runs. */
static void djob_round(struct djob *j, struct kbufs *b, int *seq)
{
	double end;
	size_t n0 = j->d.put.n;

	ramp(j, b, seq, 0); /* one untimed round after the pause, as rma_measure() makes one untimed call */
	end = now_s() + j->g->round_s;

	while (j->rc == 0 && (now_s() < end || j->d.put.n - n0 < 3)) {
		j->rc = one_round(j, j->s, b, (*seq)++, &j->d.put, &j->d.get);
		if (j->rc == 0 && j->ck)
			j->rc = one_round(j, j->ck, b, (*seq)++, &j->d.put_ck, &j->d.get_ck);
	}
	pthread_barrier_wait(j->bar);
	pthread_barrier_wait(j->bar);
}

static void *djob_main(void *arg)
{
	struct djob *j = arg;
	struct kbufs b;
	int seq = 0;

	j->rc = kbufs_alloc(&b, j->sh, j->batch);
	j->rc = j->rc ? j->rc : register_all(j->s, &b, j->sh->block) || register_all(j->ck, &b, j->sh->block);
	j->rc = j->rc ? j->rc : warm_up(j, j->s, &b, -1);
	j->rc = j->rc || !j->ck ? j->rc : warm_up(j, j->ck, &b, -2);
	ramp(j, &b, &seq, j->ramp_s);
	pthread_barrier_wait(j->bar);
	for (int r = 0; r < j->g->rounds; r++)
		djob_round(j, &b, &seq);
	unregister_all(j->s, &b, j->sh->block);
	unregister_all(j->ck, &b, j->sh->block);
	kbufs_free(&b);
	return NULL;
}

/* threads clients on one store (and the checked one, or NULL) in this process; this thread runs g->between */
static int run_threads(mmc_store *s, mmc_store *ck, const struct bench_opts *o, const struct shape *sh, int batch,
                       int base_id, const struct data_gate *g, struct dsamples *out)
{
	struct djob j[64];
	pthread_t th[64];
	pthread_barrier_t bar;
	int rc = 0;

	pthread_barrier_init(&bar, NULL, (unsigned)o->threads + 1);
	for (int i = 0; i < o->threads; i++) {
		j[i] =
		    (struct djob){.s = s, .ck = ck, .sh = sh, .batch = batch, .id = base_id + i, .g = g, .bar = &bar};
		j[i].ramp_s = o->seconds / 4 < RAMP_MAX_S ? o->seconds / 4 : RAMP_MAX_S;
		pthread_create(&th[i], NULL, djob_main, &j[i]);
	}
	pthread_barrier_wait(&bar);
	for (int r = 0; r < g->rounds; r++) {
		pthread_barrier_wait(&bar);
		if (rc == 0 && g->between)
			rc = g->between(g->arg);
		pthread_barrier_wait(&bar);
	}
	for (int i = 0; i < o->threads; i++) {
		pthread_join(th[i], NULL);
		rc |= j[i].rc;
		dsamples_merge(out, &j[i].d);
	}
	pthread_barrier_destroy(&bar);
	return rc;
}

/* ---- client processes ---- */

static int write_all(int fd, const void *p, size_t n)
{
	for (const char *c = p; n;) {
		ssize_t w = write(fd, c, n);

		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int read_all(int fd, void *p, size_t n)
{
	for (char *c = p; n;) {
		ssize_t r = read(fd, c, n);

		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

static int send_samples(int fd, const struct samples *s)
{
	return write_all(fd, &s->n, sizeof(s->n)) || write_all(fd, s->v, s->n * sizeof(*s->v));
}

static int send_dsamples(int fd, const struct dsamples *d)
{
	return send_samples(fd, &d->put) || send_samples(fd, &d->get) || send_samples(fd, &d->put_ck) ||
	       send_samples(fd, &d->get_ck);
}

static int recv_samples(int fd, struct samples *s)
{
	size_t n;
	double v;

	if (read_all(fd, &n, sizeof(n)))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (read_all(fd, &v, sizeof(v)))
			return -1;
		samples_add(s, v);
	}
	return 0;
}

static int recv_dsamples(int fd, struct dsamples *d)
{
	return recv_samples(fd, &d->put) || recv_samples(fd, &d->get) || recv_samples(fd, &d->put_ck) ||
	       recv_samples(fd, &d->get_ck);
}

/* The gate's rounds without clients (their store did not start), so the rounds still line up with the parent's. */
static void gate_idle(const struct data_gate *g)
{
	for (int r = 0; r < g->rounds; r++)
		if (g->between)
			g->between(g->arg);
}

static int one_process(const struct bench_cluster *c, const char *protocol, const struct bench_opts *o,
                       const struct shape *sh, int batch, int base_id, const struct data_gate *g, struct dsamples *out)
{
	mmc_store *s = bench_client_checked(c, protocol, o->checksum == BENCH_CK_ON);
	mmc_store *ck = o->checksum == BENCH_CK_BOTH ? bench_client_checked(c, protocol, true) : NULL;
	int rc = -1;

	if (!s || (o->checksum == BENCH_CK_BOTH && !ck)) {
		fprintf(stderr, "mmc-bench: client store did not start\n");
		gate_idle(g);
	} else {
		rc = run_threads(s, ck, o, sh, batch, base_id, g, out);
	}
	mmc_destroy(ck);
	mmc_destroy(s);
	return rc;
}

/* A client process's side of the gate: one byte up at the end of each round, then wait for one byte back. */
struct relay {
	int up, down;
};

static int relay_between(void *arg)
{
	struct relay *r = arg;
	char b = 'r';

	return write_all(r->up, &b, 1) || read_all(r->down, &b, 1);
}

static pid_t fork_client(const struct bench_cluster *c, const char *protocol, const struct bench_opts *o,
                         const struct shape *sh, int batch, int p, const struct data_gate *g, int *fd, int *go)
{
	int pfd[2], gfd[2];
	pid_t pid;

	if (pipe(pfd))
		return -1;
	if (pipe(gfd)) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		struct relay rl = {pfd[1], gfd[0]};
		struct data_gate cg = {g->rounds, g->round_s, relay_between, &rl};
		struct dsamples d = {0};
		int rc;

		close(pfd[0]);
		close(gfd[1]);
		rc = one_process(c, protocol, o, sh, batch, p * 64, &cg, &d);
		rc = write_all(pfd[1], &rc, sizeof(rc)) || send_dsamples(pfd[1], &d);
		_exit(rc ? 1 : 0);
	}
	close(pfd[1]);
	close(gfd[0]);
	*fd = pfd[0];
	*go = gfd[1];
	return pid;
}

/* The parent's side of the gate: between runs once every client process has finished the round. */
static int gate_parent(const struct data_gate *g, const pid_t *pids, const int *fds, const int *gos, int procs)
{
	bool up[16];
	int rc = 0;

	for (int p = 0; p < procs; p++)
		up[p] = pids[p] > 0;
	for (int r = 0; r < g->rounds; r++) {
		char b = 'g';

		for (int p = 0; p < procs; p++)
			if (up[p] && read_all(fds[p], &b, 1))
				up[p] = false, rc = -1;
		if (rc == 0 && g->between)
			rc = g->between(g->arg);
		for (int p = 0; p < procs; p++)
			if (up[p] && write_all(gos[p], &b, 1))
				up[p] = false, rc = -1;
	}
	return rc;
}

int data_measure(const struct bench_cluster *c, const char *protocol, const struct bench_opts *o,
                 const struct shape *sh, int batch, const struct data_gate *g, struct dsamples *out)
{
	struct data_gate one = {1, o->seconds, NULL, NULL};
	pid_t pids[16];
	int fds[16], gos[16], rc;

	g = g ? g : &one;
	if (o->procs == 1)
		return one_process(c, protocol, o, sh, batch, 0, g, out);
	fflush(stdout);
	for (int p = 0; p < o->procs; p++)
		pids[p] = fork_client(c, protocol, o, sh, batch, p, g, &fds[p], &gos[p]);
	rc = gate_parent(g, pids, fds, gos, o->procs);
	for (int p = 0; p < o->procs; p++) {
		int crc = -1, status = 0;

		if (pids[p] < 0 || read_all(fds[p], &crc, sizeof(crc)) || recv_dsamples(fds[p], out))
			crc = -1;
		rc |= crc;
		if (pids[p] > 0) {
			close(fds[p]);
			close(gos[p]);
			waitpid(pids[p], &status, 0);
			rc |= !WIFEXITED(status) || WEXITSTATUS(status);
		}
	}
	return rc;
}

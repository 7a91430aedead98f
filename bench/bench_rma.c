#include "bench_rma.h"

#include <pthread.h>
#include <sched.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

#define REQ_MR_MODE (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)

struct rma_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	uint64_t mr_mode;
	bool can_wait; /* the CQ has a wait object: the target blocks in fi_cq_sread */
	struct fi_context2 ctx[RMA_WINDOW];
	atomic_int done[RMA_WINDOW]; /* per slot: completed (set by whichever thread reads the completion) */
	pthread_t progress;          /* initiator: blocks on the CQ like libmmc's progress thread */
	bool progress_started;
	atomic_bool stop;
	uint64_t eagain;
};

static const char *provider_of(const char *protocol)
{
	return strcmp(protocol, "host_tcp") == 0 ? "tcp;ofi_rxm" : strcmp(protocol, "host_shm") == 0 ? "shm" : protocol;
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "mmc-bench rma: %s: %s\n", what, fi_strerror(-rc));
	return -1;
}

/* The same hints as lib/fabric.c make_hints(). */
static int ep_info(struct rma_ep *e, const char *protocol)
{
	struct fi_info *h = fi_allocinfo();
	int rc;

	if (!h)
		return -1;
	h->caps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = REQ_MR_MODE;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	if (!getenv("FI_PROVIDER"))
		h->fabric_attr->prov_name = strdup(provider_of(protocol));
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &e->info);
	fi_freeinfo(h);
	if (rc)
		return fail("fi_getinfo", rc);
	e->mr_mode = e->info->domain_attr->mr_mode;
	return 0;
}

/* As lib/fabric.c open_cq(): a file-descriptor wait when the provider has one, else none (polling). */
static int cq_open(struct rma_ep *e)
{
	struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_FD};

	cq.size = e->info->tx_attr->size * 2 + e->info->rx_attr->size;
	e->can_wait = fi_cq_open(e->domain, &cq, &e->cq, NULL) == 0;
	if (e->can_wait)
		return 0;
	cq.wait_obj = FI_WAIT_NONE;
	return fi_cq_open(e->domain, &cq, &e->cq, NULL);
}

static int ep_open(struct rma_ep *e, const char *protocol)
{
	struct fi_av_attr av = {.type = FI_AV_TABLE};
	int rc;

	if (ep_info(e, protocol))
		return -1;
	if ((rc = fi_fabric(e->info->fabric_attr, &e->fabric, NULL)) ||
	    (rc = fi_domain(e->fabric, e->info, &e->domain, NULL)) || (rc = cq_open(e)) ||
	    (rc = fi_av_open(e->domain, &av, &e->av, NULL)) || (rc = fi_endpoint(e->domain, e->info, &e->ep, NULL)) ||
	    (rc = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV)) || (rc = fi_ep_bind(e->ep, &e->av->fid, 0)) ||
	    (rc = fi_enable(e->ep)))
		return fail("endpoint setup", rc);
	return 0;
}

static void ep_close(struct rma_ep *e)
{
	if (e->ep)
		fi_close(&e->ep->fid);
	if (e->av)
		fi_close(&e->av->fid);
	if (e->cq)
		fi_close(&e->cq->fid);
	if (e->domain)
		fi_close(&e->domain->fid);
	if (e->fabric)
		fi_close(&e->fabric->fid);
	if (e->info)
		fi_freeinfo(e->info);
	free(e);
}

static int ep_reg(struct rma_ep *e, void *buf, size_t len, bool remote, uint64_t key, struct fid_mr **mr)
{
	uint64_t access = FI_READ | FI_WRITE | (remote ? FI_REMOTE_READ | FI_REMOTE_WRITE : 0);
	int rc = fi_mr_reg(e->domain, buf, len, access, 0, key, 0, mr, NULL);

	if (rc)
		return fail("fi_mr_reg", rc);
	if ((e->mr_mode & FI_MR_ENDPOINT) && ((rc = fi_mr_bind(*mr, &e->ep->fid, 0)) || (rc = fi_mr_enable(*mr))))
		return fail("fi_mr_bind", rc);
	return 0;
}

/* ---- target: lend a buffer, progress until stdin closes ---- */

static atomic_bool target_stop;

static void *target_progress(void *arg)
{
	struct rma_ep *e = arg;
	struct fi_cq_entry c[32];

	while (!atomic_load(&target_stop)) { /* as lib/fabric.c progress_main() */
		if (e->can_wait) {
			fi_cq_sread(e->cq, c, 32, NULL, 100);
		} else if (fi_cq_read(e->cq, c, 32) == -FI_EAGAIN) {
			struct timespec ts = {0, 50000};

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void print_ready(struct rma_ep *e, void *buf, size_t len, struct fid_mr *mr)
{
	unsigned char name[256];
	size_t nlen = sizeof(name);

	fi_getname(&e->ep->fid, name, &nlen);
	printf("ready %llx %llx %zx ", (unsigned long long)((e->mr_mode & FI_MR_VIRT_ADDR) ? (uintptr_t)buf : 0),
	       (unsigned long long)fi_mr_key(mr), len);
	for (size_t i = 0; i < nlen; i++)
		printf("%02x", name[i]);
	printf("\n");
	fflush(stdout);
}

int bench_rma_target_main(int argc, char **argv)
{
	struct rma_ep *e = calloc(1, sizeof(*e));
	struct fid_mr *mr = NULL;
	pthread_t th;
	size_t len;
	void *buf;
	char tmp[16];

	if (argc < 4 || !e || ep_open(e, argv[2]))
		return 1;
	len = (strtoull(argv[3], NULL, 0) + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 1;
	madvise(buf, len, MADV_HUGEPAGE);
	memset(buf, 0, len);
	if (ep_reg(e, buf, len, true, 0xC0DE, &mr))
		return 1;
	pthread_create(&th, NULL, target_progress, e);
	print_ready(e, buf, len, mr);
	while (read(0, tmp, sizeof(tmp)) > 0)
		;
	atomic_store(&target_stop, true);
	pthread_join(th, NULL);
	fi_close(&mr->fid);
	ep_close(e);
	return 0;
}

/* ---- initiator ---- */

static void mark_done(struct rma_ep *e, const struct fi_cq_entry *c, ssize_t n)
{
	for (ssize_t i = 0; i < n; i++)
		atomic_store(&e->done[(struct fi_context2 *)c[i].op_context - e->ctx], 1);
}

/* lib/fabric.c runs this thread in every process, the initiator's included: it drives the provider while the
 * caller sleeps in sched_yield(), which matters for tcp;ofi_rxm on 2 vCPUs. */
static void *initiator_progress(void *arg)
{
	struct rma_ep *e = arg;
	struct fi_cq_entry c[32];

	while (!atomic_load(&e->stop)) {
		ssize_t n;

		if (e->can_wait) {
			n = fi_cq_sread(e->cq, c, 32, NULL, 100);
		} else {
			struct timespec ts = {0, 50000};

			n = fi_cq_read(e->cq, c, 32);
			if (n == -FI_EAGAIN)
				nanosleep(&ts, NULL);
		}
		if (n > 0)
			mark_done(e, c, n);
	}
	return NULL;
}

static int parse_ready(struct rma_bench *r, const char *line)
{
	unsigned long long a, k;
	size_t sz, n = 0;
	unsigned char name[256];
	const char *hex;
	fi_addr_t fa;
	int off = 0;

	if (sscanf(line, "ready %llx %llx %zx %n", &a, &k, &sz, &off) != 3 || !off)
		return -1;
	for (hex = line + off; hex[0] && hex[1] && hex[0] != '\n' && n < sizeof(name); hex += 2) {
		unsigned v;

		sscanf(hex, "%2x", &v);
		name[n++] = (unsigned char)v;
	}
	if (fi_av_insert(r->ep->av, name, 1, &fa, 0, NULL) != 1)
		return -1;
	r->raddr = a;
	r->rkey = k;
	r->rsize = sz;
	r->peer = fa;
	return 0;
}

extern char **environ;

static int spawn_target(struct rma_bench *r, const char *self, const char *protocol, size_t bytes, char *line,
                        size_t len)
{
	char sz[32];
	char *argv[] = {(char *)self, "rma-target", (char *)protocol, sz, NULL};
	int in, out;
	FILE *f;

	snprintf(sz, sizeof(sz), "%zu", bytes);
	r->target = proc_spawn_piped(self, argv, environ, &in, &out);
	if (r->target < 0)
		return -1;
	r->target_in = in;
	f = fdopen(out, "r");
	if (!f || !fgets(line, (int)len, f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

int rma_start(struct rma_bench *r, const char *self, const char *protocol, size_t bytes)
{
	char line[1024];

	memset(r, 0, sizeof(*r));
	r->target_in = -1;
	r->ep = calloc(1, sizeof(*r->ep));
	if (!r->ep || ep_open(r->ep, protocol) || spawn_target(r, self, protocol, bytes, line, sizeof(line)) ||
	    parse_ready(r, line)) {
		fprintf(stderr, "mmc-bench: raw RMA target did not start\n");
		rma_stop(r);
		return -1;
	}
	r->ep->progress_started = pthread_create(&r->ep->progress, NULL, initiator_progress, r->ep) == 0;
	return 0;
}

void rma_stop(struct rma_bench *r)
{
	if (r->target_in >= 0)
		close(r->target_in);
	if (r->target > 0)
		waitpid(r->target, NULL, 0);
	if (r->ep && r->ep->progress_started) {
		atomic_store(&r->ep->stop, true);
		pthread_join(r->ep->progress, NULL);
	}
	if (r->ep)
		ep_close(r->ep);
	memset(r, 0, sizeof(*r));
	r->target_in = -1;
}

/* ---- the timed loop: post like lib/fabric.c fab_batch_post(), reap in order ---- */

struct window {
	struct rma_ep *e;
	size_t posted, reaped;
	int err;
};

/* Returns the completions read (0 when none), like lib/fabric.c poll_cq(). */
static int poll_cq(struct window *w)
{
	struct fi_cq_entry c[32];
	ssize_t n = fi_cq_read(w->e->cq, c, 32);

	mark_done(w->e, c, n);
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {0};

		if (fi_cq_readerr(w->e->cq, &err, 0) == 1 && err.op_context)
			atomic_store(&w->e->done[(struct fi_context2 *)err.op_context - w->e->ctx], 1);
		w->err = -1;
		return 1;
	}
	return n > 0 ? (int)n : 0;
}

static void reap_one(struct window *w)
{
	size_t slot = w->reaped % RMA_WINDOW;
	unsigned spins = 0;

	while (!atomic_load(
	    &w->e->done[slot])) /* as lib/fabric.c reap_one(): yield the core to the target after 64 empty polls */
		if (!poll_cq(w) && ++spins > 64)
			sched_yield();
	atomic_store(&w->e->done[slot], 0);
	w->reaped++;
}

static int post(struct window *w, enum rma_op op, void *buf, size_t len, void *desc, uint64_t peer, uint64_t raddr,
                uint64_t rkey)
{
	struct iovec iov = {buf, len};
	struct fi_rma_iov rma = {raddr, len, rkey};
	struct fi_msg_rma msg = {
	    .msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = peer, .rma_iov = &rma, .rma_iov_count = 1};
	ssize_t rc;

	if (w->posted - w->reaped == RMA_WINDOW)
		reap_one(w);
	msg.context = &w->e->ctx[w->posted % RMA_WINDOW];
	for (;;) {
		if (op == RMA_READ)
			rc = fi_readmsg(w->e->ep, &msg, FI_COMPLETION);
		else
			rc = fi_writemsg(w->e->ep, &msg,
			                 FI_COMPLETION | (op == RMA_WRITE_DC ? FI_DELIVERY_COMPLETE : 0));
		if (rc != -FI_EAGAIN)
			break;
		w->e->eagain++;
		if (!poll_cq(w))
			sched_yield();
	}
	if (rc)
		return fail("fi_writemsg/fi_readmsg", (int)rc);
	w->posted++;
	return 0;
}

static int one_call(struct rma_bench *r, struct window *w, enum rma_op op, const struct shape *sh, void *const *bufs,
                    void *const *descs, int batch)
{
	uint64_t off = r->next, base = r->raddr;

	for (int i = 0; i < batch; i++) {
		char *p = bufs[i];

		for (int j = 0; j < sh->npieces; j++) {
			if (off + sh->piece[j] > r->rsize)
				off = 0; /* wrap: the target lends less than a batch */
			bool last = i == batch - 1 && j == sh->npieces - 1;
			enum rma_op o = op == RMA_WRITE_DC_LAST ? (last ? RMA_WRITE_DC : RMA_WRITE) : op;

			o = o == RMA_WRITE_FLUSH ? RMA_WRITE : o;

			if (post(w, o, p, sh->piece[j], descs[i], r->peer, base + off, r->rkey))
				return -1;
			p += sh->piece[j];
			off += sh->piece[j];
		}
	}
	if (op == RMA_WRITE_FLUSH && post(w, RMA_READ, bufs[0], 8, descs[0], r->peer, base + off - 8, r->rkey))
		return -1;
	r->next = off;
	while (w->reaped < w->posted)
		reap_one(w);
	return w->err;
}

int rma_measure(struct rma_bench *r, enum rma_op op, const struct shape *sh, void *const *bufs, int batch,
                double seconds, struct samples *out)
{
	struct fid_mr **mrs = calloc((size_t)batch, sizeof(*mrs));
	void **descs = calloc((size_t)batch, sizeof(*descs));
	struct window w = {r->ep, 0, 0, 0};
	int rc = 0;
	double end;

	for (int i = 0; mrs && descs && i < batch && rc == 0; i++) {
		rc = ep_reg(r->ep, bufs[i], sh->block, false, 0x1000 + (uint64_t)i, &mrs[i]);
		descs[i] = rc ? NULL : fi_mr_desc(mrs[i]);
	}
	if (!mrs || !descs)
		rc = -1;
	rc = rc ? rc : one_call(r, &w, op, sh, bufs, descs, batch); /* warm-up: connections, page faults */
	end = now_s() + seconds;
	while (rc == 0 && (now_s() < end || out->n < 3)) {
		double t0 = now_s();

		rc = one_call(r, &w, op, sh, bufs, descs, batch);
		samples_add(out, now_s() - t0);
	}
	for (int i = 0; mrs && i < batch; i++)
		if (mrs[i])
			fi_close(&mrs[i]->fid);
	free(mrs);
	free(descs);
	return rc;
}

bool rma_orders(const struct rma_bench *r, bool raw)
{
	uint64_t o = r->ep->info->tx_attr->msg_order;

	return (o & (raw ? FI_ORDER_RAW : FI_ORDER_WAW)) != 0;
}

#include "fabric.h"

#include <pthread.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/providers/fi_prov.h> /* fi_param_get: whether libfabric has started */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "lg.h"
#include "mmc/mmc.h"
#include "sock_cut.h"

#define FI_API      FI_VERSION(1, 17)
#define CQ_BATCH    32
#define SREAD_MS    100
#define REQ_MR_MODE (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)

/*
 * How a stalled peer's connection is cut (sever): its TCP sockets shut down from this side (tcp; see sock_cut.h); the
 * provider's own close (fi_av_remove with FI_AV_REMOVE_CLEANUP, rxm over verbs: it crashes rxm over tcp when an
 * answer is half received); or not at all (the call waits for its ops).
 */
enum sever_kind { SEVER_NONE, SEVER_SOCKET, SEVER_AV };
#define FAB_CUT_MAX 16

struct fabric {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint64_t mr_mode;
	atomic_uint_fast64_t next_key;
	pthread_t progress;
	bool progress_started;
	atomic_bool stop;
	bool can_wait;      /* the CQ has a wait object (fi_cq_sread) */
	atomic_int reapers; /* callers reading the CQ for their own batches: the progress thread stands back */
	bool fence_by_read;
	uint64_t write_flags;
	struct fab_mr scratch_mr;
	uint64_t scratch[512]; /* fence reads land here */
	unsigned char addr[256];
	size_t addrlen;
	char provider[64];
	bool host_only;        /* host_shm: no libfabric at all; every peer is reached through the host path */
	enum sever_kind sever; /* how a stalled peer's connection is cut */
	/* peers whose connection was cut lately: the next op to one waits until rxm has dropped the dead connection */
	pthread_mutex_t cut_mu;
	atomic_uint_fast64_t cut_latest; /* the latest until_ms of cut[]: past it, a post takes no lock */
	struct {
		fi_addr_t peer;
		uint64_t until_ms;
	} cut[FAB_CUT_MAX];
};

static int fab_err(const char *what, int rc)
{
	lg_error("libfabric %s: %s (%d)", what, fi_strerror(-rc), rc);
	return MMC_ERROR;
}

/* ---- completions ---- */

static void complete(struct fi_cq_entry *e, int n)
{
	for (int i = 0; i < n; i++) {
		struct fab_op *op = e[i].op_context;

		op->err = 0;
		atomic_store_explicit(&op->state, 2, memory_order_release);
	}
}

static void complete_error(struct fabric *f)
{
	struct fi_cq_err_entry err;

	memset(&err, 0, sizeof(err));
	if (fi_cq_readerr(f->cq, &err, 0) == 1 && err.op_context) {
		struct fab_op *op = err.op_context;

		lg_warn("libfabric RMA failed: %s (prov_errno %d)", fi_strerror(err.err), err.prov_errno);
		op->err = MMC_ERROR;
		atomic_store_explicit(&op->state, 2, memory_order_release);
	}
}

/* Reads what the CQ has; returns entries handled (0 when empty). */
static int poll_cq(struct fabric *f)
{
	struct fi_cq_entry e[CQ_BATCH];
	ssize_t n = f->cq ? fi_cq_read(f->cq, e, CQ_BATCH) : 0;

	if (n > 0) {
		complete(e, (int)n);
		return (int)n;
	}
	if (n == -FI_EAVAIL) {
		complete_error(f);
		return 1;
	}
	return 0;
}

/*
 * A provider without a wait object (shm) must be polled. Polling every 50 us while traffic flows, backing off to
 * IDLE_NAP_MAX once nothing has happened for a while, keeps an idle store under 0.5% of a core; the first
 * completion, or any caller reaping its own batch, brings the fast pace back.
 */
#define IDLE_NAP_MIN_NS 50000L
#define IDLE_NAP_MAX_NS 5000000L

static void nap(long *ns, bool busy)
{
	struct timespec ts = {0, 0};

	*ns = busy ? IDLE_NAP_MIN_NS : *ns < IDLE_NAP_MAX_NS ? *ns + *ns / 8 + 1000 : IDLE_NAP_MAX_NS;
	ts.tv_nsec = *ns;
	nanosleep(&ts, NULL);
}

static void *progress_main(void *arg)
{
	struct fabric *f = arg;
	struct fi_cq_entry e[CQ_BATCH];
	long pace = IDLE_NAP_MIN_NS;

	while (!atomic_load(&f->stop)) {
		ssize_t n;

		if (atomic_load_explicit(&f->reapers, memory_order_relaxed)) {
			/* a caller is polling the CQ itself: two threads spinning on its lock only slow both down */
			struct timespec ts = {0, 20000};

			nanosleep(&ts, NULL);
			pace = IDLE_NAP_MIN_NS;
			continue;
		}
		if (f->can_wait) {
			n = fi_cq_sread(f->cq, e, CQ_BATCH, NULL, SREAD_MS);
		} else {
			n = fi_cq_read(f->cq, e, CQ_BATCH);
			if (n == -FI_EAGAIN)
				nap(&pace, false);
			else
				pace = IDLE_NAP_MIN_NS;
		}
		if (n > 0)
			complete(e, (int)n);
		else if (n == -FI_EAVAIL)
			complete_error(f);
	}
	return NULL;
}

/* ---- setup ---- */

static const char *provider_for(const char *protocol)
{
	if (getenv("FI_PROVIDER"))
		return NULL; /* the user's choice wins; libfabric filters by it */
	if (strcmp(protocol, "host_tcp") == 0)
		return "tcp;ofi_rxm";
	if (strcmp(protocol, "host_shm") == 0)
		return "shm";
	if (strcmp(protocol, "host_rdma") == 0)
		return "verbs;ofi_rxm";
	return NULL;
}

static struct fi_info *make_hints(const char *prov)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = REQ_MR_MODE;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	if (prov)
		h->fabric_attr->prov_name = strdup(prov);
	return h;
}

/* "tcp://ip[:port]" -> node, service */
static void split_hcom(const char *url, char *node, size_t nlen, char *service, size_t slen)
{
	const char *h = strncmp(url, "tcp://", 6) == 0 ? url + 6 : url;
	const char *colon = strrchr(h, ':');
	size_t n = colon ? (size_t)(colon - h) : strlen(h);

	node[0] = service[0] = '\0';
	if (n >= nlen)
		return;
	memcpy(node, h, n);
	node[n] = '\0';
	if (colon && strcmp(colon + 1, "0") != 0)
		snprintf(service, slen, "%s", colon + 1);
}

static bool cleanup_on(void);
static bool av_cleanup; /* libfabric closes a connection when its address is removed: decided once, by ask_env */

/*
 * rxm drops a connection whose socket ended (sever) in its connection progress, which runs once per
 * FI_OFI_RXM_CM_PROGRESS_INTERVAL microseconds (10 ms by default): until then an op to that peer goes out on the
 * dead connection and fails; cm_settle_ms is how long the next op to a cut peer drives progress first. And
 * fi_av_remove closes an address's connection only with FI_AV_REMOVE_CLEANUP. libfabric reads both once, when it
 * initialises (the process's first fi_getinfo): libmmc sets them before (1 ms, on), unless the user chose. An
 * application that started libfabric before libmmc (another transport in the same process) fixed the values then,
 * from the environment as it was, so a variable set only now must not count. libfabric defines its core parameters
 * when it initialises: until then fi_param_get says -FI_ENOENT.
 */
static uint32_t cm_settle_ms = 20;

static void ask_env(void)
{
	const char *v;
	int started;

	if (fi_param_get(NULL, "av_remove_cleanup", &started) == -FI_ENOENT) {
		setenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL", "1000", 0);
		setenv("FI_AV_REMOVE_CLEANUP", "1", 0);
	} else {
		lg_info("fabric: libfabric was started before libmmc: FI_AV_REMOVE_CLEANUP is %s as it found it",
		        cleanup_on() ? "on" : "off");
	}
	av_cleanup = cleanup_on();
	v = getenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL");
	if (v && atol(v) > 0 && atol(v) < 1000000)
		cm_settle_ms = (uint32_t)(2 * atol(v) / 1000 + 1);
}

/* The variable as libfabric reads a boolean: a number, or yes/no, true/false, on/off, y/n. */
static bool cleanup_on(void)
{
	const char *v = getenv("FI_AV_REMOVE_CLEANUP");

	if (!v)
		return false;
	if (*v >= '0' && *v <= '9')
		return atoi(v) != 0;
	return strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "on") == 0 ||
	       strcasecmp(v, "y") == 0;
}

static int get_info(struct fabric *f, const char *protocol, const char *hcom_url)
{
	/* auto: a network provider, best first */
	static const char *const auto_order[] = {"verbs;ofi_rxm", "efa", "tcp;ofi_rxm", NULL};
	const char *one[2] = {provider_for(protocol), NULL};
	const char *const *order = strcmp(protocol, "auto") == 0 && !getenv("FI_PROVIDER") ? auto_order : one;
	char node[256], service[16];
	int rc = -FI_ENODATA;
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, ask_env);
	split_hcom(hcom_url, node, sizeof(node), service, sizeof(service));
	for (; order == one || *order; order++) {
		struct fi_info *h = make_hints(*order);

		if (!h)
			return MMC_MALLOC_FAILED;
		rc = fi_getinfo(FI_API, node[0] ? node : NULL, service[0] ? service : NULL, node[0] ? FI_SOURCE : 0, h,
		                &f->info);
		fi_freeinfo(h);
		if (rc == 0 || order == one)
			break;
	}
	if (rc)
		return fab_err("fi_getinfo (no provider for this protocol)", rc);
	snprintf(f->provider, sizeof(f->provider), "%s", f->info->fabric_attr->prov_name);
	f->mr_mode = f->info->domain_attr->mr_mode;
	f->sever = strncmp(f->provider, "tcp", 3) == 0            ? SEVER_SOCKET
	           : strstr(f->provider, "ofi_rxm") && av_cleanup ? SEVER_AV
	                                                          : SEVER_NONE;
	return 0;
}

static int open_cq(struct fabric *f)
{
	/* a file-descriptor wait: FI_WAIT_UNSPEC may be a sched_yield loop (shm), which burns a core */
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_FD};
	int rc;

	attr.size = f->info->tx_attr->size * 2 + f->info->rx_attr->size;
	rc = fi_cq_open(f->domain, &attr, &f->cq, NULL);
	if (rc == 0) {
		f->can_wait = true;
		return 0;
	}
	attr.wait_obj = FI_WAIT_NONE;
	rc = fi_cq_open(f->domain, &attr, &f->cq, NULL);
	return rc ? fab_err("fi_cq_open", rc) : 0;
}

/*
 * shm names its region after the process id. A process killed with SIGKILL cannot remove its region, and a later
 * process that gets the same pid then fails to enable with EBUSY. A region named with our own pid that we did not
 * create can only be such a leftover: remove it.
 */
static int clear_stale_shm(struct fabric *f)
{
	char name[256], own[32], *n = name;
	size_t len = sizeof(name) - 1;

	if (strcmp(f->provider, "shm") != 0 || fi_getname(&f->ep->fid, name, &len))
		return MMC_ERROR;
	name[len < sizeof(name) ? len : sizeof(name) - 1] = '\0';
	if (strncmp(n, "fi_shm://", 9) == 0)
		n += 9;
	snprintf(own, sizeof(own), "%d:", (int)getpid());
	if (strncmp(n, own, strlen(own)) != 0 || shm_unlink(n))
		return MMC_ERROR;
	lg_warn("libfabric shm: removed the stale region \"%s\" left by a killed process with our pid", n);
	return 0;
}

static int open_objects(struct fabric *f)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	int rc;

	if ((rc = fi_fabric(f->info->fabric_attr, &f->fabric, NULL)))
		return fab_err("fi_fabric", rc);
	if ((rc = fi_domain(f->fabric, f->info, &f->domain, NULL)))
		return fab_err("fi_domain", rc);
	if ((rc = open_cq(f)))
		return rc;
	if ((rc = fi_av_open(f->domain, &av_attr, &f->av, NULL)))
		return fab_err("fi_av_open", rc);
	if ((rc = fi_endpoint(f->domain, f->info, &f->ep, NULL)))
		return fab_err("fi_endpoint", rc);
	if ((rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)))
		return fab_err("fi_ep_bind(cq)", rc);
	if ((rc = fi_ep_bind(f->ep, &f->av->fid, 0)))
		return fab_err("fi_ep_bind(av)", rc);
	rc = fi_enable(f->ep);
	if (rc == -FI_EBUSY && clear_stale_shm(f) == 0)
		rc = fi_enable(f->ep);
	if (rc)
		return fab_err("fi_enable", rc);
	f->addrlen = sizeof(f->addr);
	if ((rc = fi_getname(&f->ep->fid, f->addr, &f->addrlen)))
		return fab_err("fi_getname", rc);
	return 0;
}

/*
 * Whether a read after writes proves the writes landed. The provider must order read after write on a connection
 * (FI_ORDER_RAW; shm's per-peer queue is FIFO), and a write's completion must not be the only trace of its bytes:
 * tcp completes a plain write once the kernel has it, and a connection the peer closes (a peer that gave up its own
 * operations to us while we were stopped) takes the writes it had yet to read with it, while the fence, posted
 * later, goes out on the next connection and succeeds. There a write asks for FI_DELIVERY_COMPLETE: it completes
 * once the peer placed its bytes, or fails with its connection.
 */
static bool fence_orders_writes(const struct fabric *f)
{
	if (strcmp(f->provider, "shm") == 0)
		return true;
	if (strncmp(f->provider, "tcp", 3) == 0)
		return false;
	return (f->info->tx_attr->msg_order & (FI_ORDER_RAW | FI_ORDER_RMA_RAW)) != 0;
}

/* host_shm: an endpoint only in name. Its address says which process it is; nothing can be posted to a peer. */
static int open_host_only(struct fabric *f)
{
	int n = snprintf((char *)f->addr, sizeof(f->addr), "host:%d", (int)getpid());

	f->host_only = true;
	f->addrlen = (size_t)n + 1;
	snprintf(f->provider, sizeof(f->provider), "%s", FABRIC_HOST_ONLY);
	lg_info("fabric: provider %s: the host path only, no network provider", FABRIC_HOST_ONLY);
	return 0;
}

/*
 * Where the keys this process asks for start: at random, within the provider's key size. A process that restarts on
 * the same address (a fixed hcom_url port) and counted from 1 again would give its pool its predecessor's key at the
 * same offsets, so that an RMA granted on the old incarnation and posted late read or wrote the new pool's objects.
 */
static void key_base(struct fabric *f)
{
	size_t bytes = f->info && f->info->domain_attr->mr_key_size ? f->info->domain_attr->mr_key_size : 8;
	uint64_t base = 0, mask = bytes >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * bytes)) - 1;

	if (getrandom(&base, sizeof(base), 0) != sizeof(base))
		base = clock_ns() ^ (uint64_t)getpid() << 32;
	base &= mask >> 1; /* the upper half stays free: counting up never wraps to 0 */
	atomic_store(&f->next_key, base ? base : 1);
}

int fabric_open(struct fabric **out, const char *protocol, const char *hcom_url)
{
	struct fabric *f = calloc(1, sizeof(*f));
	int rc;

	if (!f)
		return MMC_MALLOC_FAILED;
	atomic_init(&f->next_key, 1);
	pthread_mutex_init(&f->cut_mu, NULL);
	if (strcmp(protocol, "host_shm") == 0 && !getenv("FI_PROVIDER")) {
		open_host_only(f);
		*out = f;
		return 0;
	}
	if ((rc = get_info(f, protocol, hcom_url)) || (key_base(f), rc = open_objects(f))) {
		/* the address the configuration chose is the likely cause: name the key, not only libfabric's call */
		if (hcom_url[0])
			lg_error("no %s endpoint could be opened at ock.mmc.local_service.hcom_url \"%s\": is it an "
			         "address of this host, and its port free?",
			         protocol, hcom_url);
		goto fail;
	}
	f->fence_by_read = fence_orders_writes(f);
	f->write_flags = FI_COMPLETION | (f->fence_by_read ? 0 : FI_DELIVERY_COMPLETE);
	if ((rc = fabric_mr_reg(f, f->scratch, sizeof(f->scratch), false, &f->scratch_mr)))
		goto fail;
	if (pthread_create(&f->progress, NULL, progress_main, f)) {
		rc = MMC_ERROR;
		goto fail;
	}
	f->progress_started = true;
	lg_info("fabric: provider %s, mr_mode 0x%llx, %s, %s", f->provider, (unsigned long long)f->mr_mode,
	        f->can_wait ? "blocking progress" : "polling progress",
	        f->sever != SEVER_NONE ? "stalled RMA cut off" : "stalled RMA waited for");
	*out = f;
	return 0;
fail:
	fabric_close(f);
	return rc;
}

void fabric_close(struct fabric *f)
{
	if (!f)
		return;
	atomic_store(&f->stop, true);
	if (f->progress_started)
		pthread_join(f->progress, NULL);
	fabric_mr_close(&f->scratch_mr);
	if (f->ep)
		fi_close(&f->ep->fid);
	if (f->av)
		fi_close(&f->av->fid);
	if (f->cq)
		fi_close(&f->cq->fid);
	if (f->domain)
		fi_close(&f->domain->fid);
	if (f->fabric)
		fi_close(&f->fabric->fid);
	if (f->info)
		fi_freeinfo(f->info);
	pthread_mutex_destroy(&f->cut_mu);
	free(f);
}

const char *fabric_provider(const struct fabric *f)
{
	return f->provider;
}

const void *fabric_addr(const struct fabric *f, size_t *len)
{
	*len = f->addrlen;
	return f->addr;
}

bool fabric_virt_addr(const struct fabric *f)
{
	return (f->mr_mode & FI_MR_VIRT_ADDR) != 0;
}

bool fabric_local_mr(const struct fabric *f)
{
	return (f->mr_mode & FI_MR_LOCAL) != 0;
}

bool fabric_fence_by_read(const struct fabric *f)
{
	return f->fence_by_read;
}

void *fabric_scratch(const struct fabric *f, void **desc)
{
	*desc = f->scratch_mr.desc;
	return (void *)f->scratch;
}

int fabric_mr_reg(struct fabric *f, void *buf, size_t len, bool remote, struct fab_mr *out)
{
	uint64_t access = FI_READ | FI_WRITE | (remote ? FI_REMOTE_READ | FI_REMOTE_WRITE : 0);
	uint64_t want = atomic_fetch_add(&f->next_key, 1); /* ignored under FI_MR_PROV_KEY */
	int rc;

	memset(out, 0, sizeof(*out));
	if (f->host_only) { /* nothing to register with; a fresh key still tells a rekey happened */
		out->key = want;
		return 0;
	}
	rc = fi_mr_reg(f->domain, buf, len, access, 0, want, 0, &out->mr, NULL);
	if (rc)
		return fab_err("fi_mr_reg", rc);
	if (f->mr_mode & FI_MR_ENDPOINT) {
		if ((rc = fi_mr_bind(out->mr, &f->ep->fid, 0)) || (rc = fi_mr_enable(out->mr))) {
			fi_close(&out->mr->fid);
			out->mr = NULL;
			return fab_err("fi_mr_bind/enable", rc);
		}
	}
	out->desc = fi_mr_desc(out->mr);
	out->key = fi_mr_key(out->mr);
	return 0;
}

void fabric_mr_close(struct fab_mr *mr)
{
	if (mr->mr)
		fi_close(&mr->mr->fid);
	mr->mr = NULL;
}

int fabric_peer_add(struct fabric *f, const void *addr, size_t len, fi_addr_t *out)
{
	int rc;

	(void)len;
	if (f->host_only) {
		lg_error("fabric: protocol host_shm reaches only local services on this host (no network provider)");
		return MMC_LINK_NOT_FOUND;
	}
	rc = fi_av_insert(f->av, addr, 1, out, 0, NULL);

	return rc == 1 ? 0 : fab_err("fi_av_insert", rc < 0 ? rc : -FI_EINVAL);
}

/* ---- batches ---- */

int fab_batch_init(struct fab_batch *b, struct fabric *f, size_t window, uint32_t stall_ms,
                   void (*done)(void *arg, uint32_t tag, int err), void *arg)
{
	memset(b, 0, sizeof(*b));
	b->ops = calloc(window, sizeof(*b->ops));
	if (!b->ops)
		return MMC_MALLOC_FAILED;
	b->f = f;
	b->window = window;
	b->stall_ms = stall_ms;
	b->done = done;
	b->arg = arg;
	for (size_t i = 0; i < window; i++)
		atomic_init(&b->ops[i].state, 0);
	return 0;
}

void fab_batch_fini(struct fab_batch *b)
{
	if (b->abandoned)
		lg_warn("libfabric: %s", "keeping the contexts of cancelled operations (their peer stopped answering)");
	else
		free(b->ops);
	b->ops = NULL;
}

/* The provider's own close of peer's connection: under the endpoint's lock, whatever the address's use count, so
 * nothing of that connection is written once it returns. Inserting the address again first keeps its use count,
 * and so the fi_addr every caller holds: their next op to it opens a new connection. */
static int sever_av(struct fabric *f, fi_addr_t peer, const void *addr)
{
	fi_addr_t again = FI_ADDR_NOTAVAIL;
	int rc;

	if (fi_av_insert(f->av, addr, 1, &again, 0, NULL) != 1)
		return MMC_ERROR;
	if (again != peer) { /* not the entry we hold: undo, and do not trust this provider to sever */
		fi_av_remove(f->av, &again, 1, 0);
		return MMC_ERROR;
	}
	rc = fi_av_remove(f->av, &peer, 1, 0);
	return rc ? fab_err("fi_av_remove", rc) : 0;
}

/* The next op to peer waits cm_settle_ms: its dead connection goes first. */
static void cut_note(struct fabric *f, fi_addr_t peer)
{
	size_t oldest = 0;

	pthread_mutex_lock(&f->cut_mu);
	for (size_t i = 0; i < FAB_CUT_MAX; i++) {
		if (f->cut[i].peer == peer || !f->cut[i].until_ms) {
			oldest = i;
			break;
		}
		if (f->cut[i].until_ms < f->cut[oldest].until_ms)
			oldest = i;
	}
	f->cut[oldest].peer = peer;
	f->cut[oldest].until_ms = clock_ms() + cm_settle_ms;
	atomic_store_explicit(&f->cut_latest, f->cut[oldest].until_ms, memory_order_release);
	pthread_mutex_unlock(&f->cut_mu);
}

/* Until when an op to peer must wait for its cut connection to go (0: no wait). */
static uint64_t cut_until(struct fabric *f, fi_addr_t peer)
{
	uint64_t until = 0, now = clock_ms();

	if (now >= atomic_load_explicit(&f->cut_latest, memory_order_acquire))
		return 0; /* no cut lately: every post but the few after one */
	pthread_mutex_lock(&f->cut_mu);
	for (size_t i = 0; i < FAB_CUT_MAX; i++)
		if (f->cut[i].peer == peer && f->cut[i].until_ms > now)
			until = f->cut[i].until_ms;
	pthread_mutex_unlock(&f->cut_mu);
	return until;
}

/*
 * Cuts the connection to peer: an RMA that the peer has yet to answer is not stopped by fi_cancel, and its answer,
 * coming after the caller gave up, would land in a buffer the caller has since reused. expired: for the caller's
 * deadline, not a stall; a stall may cut every connection the peer's host opened to this process when which one is
 * the peer's cannot be told (else the call would wait for hours), a deadline, routine, cuts none of them. Returns 0,
 * or MMC_ERROR when it could not be cut (no way for this provider, or no connection to peer found): the caller then
 * waits for its ops.
 */
static int sever(struct fabric *f, fi_addr_t peer, bool expired)
{
	unsigned char addr[256];
	size_t len = sizeof(addr);

	if (f->sever == SEVER_NONE || fi_av_lookup(f->av, peer, addr, &len) || len > sizeof(addr))
		return MMC_ERROR;
	if (f->sever == SEVER_AV)
		return sever_av(f, peer, addr);
	/* a stall may take the peer's host wide: a call that would otherwise wait for hours; a deadline, routine, not
	 */
	if (sock_cut(addr, len, f->addr, f->addrlen, !expired) == 0)
		return MMC_ERROR;
	cut_note(f, peer);
	return 0;
}

/* Severs every peer an unfinished op of b waits on; false when one could not be severed. expired: for the
 * caller's deadline, not a stall (the log says which). */
static bool sever_stalled(struct fab_batch *b, bool expired)
{
	fi_addr_t done[16];
	size_t ndone = 0;
	bool ok = true;

	for (size_t i = b->reaped; i < b->posted; i++) {
		struct fab_op *op = &b->ops[i % b->window];
		size_t j = 0;

		if (atomic_load_explicit(&op->state, memory_order_acquire) == 2)
			continue;
		while (j < ndone && done[j] != op->peer)
			j++;
		if (j < ndone)
			continue;
		if (sever(b->f, op->peer, expired)) {
			ok = false;
			continue;
		}
		if (expired)
			lg_info(
			    "libfabric: closed the connection to peer %llu: a read from it was still in flight at its "
			    "call's deadline (other calls' operations on it fail and reconnect)",
			    (unsigned long long)op->peer);
		else
			lg_warn(
			    "libfabric: closed the connection to peer %llu: an RMA to it made no progress for %u ms",
			    (unsigned long long)op->peer, b->stall_ms);
		if (ndone < sizeof(done) / sizeof(done[0]))
			done[ndone++] = op->peer;
	}
	return ok;
}

/*
 * The oldest op made no progress for stall_ms, or the caller's deadline passed. Its buffer may be handed back only
 * once nothing can land in it: the connections of the unfinished ops are cut. Cut from the socket, the ops are
 * failed by the provider and reaped as any (reported MMC_TIMEOUT); closed by the provider (SEVER_AV), they are
 * reported MMC_TIMEOUT at once, and since their contexts may still come back through the CQ their ring is kept.
 * Where a connection cannot be cut, the call waits for its ops instead: a late answer is better than wrong bytes.
 */
static void abandon(struct fab_batch *b, bool expired)
{
	if (expired) /* the caller's own deadline (a prefix read): no fault, just later than the caller can wait */
		lg_debug("libfabric: the call's deadline passed; giving up %zu operations", b->posted - b->reaped);
	else
		lg_error("libfabric: an RMA made no progress for %u ms; giving up %zu operations", b->stall_ms,
		         b->posted - b->reaped);
	b->severed = true;
	b->patient = false;
	if (!sever_stalled(b, expired)) {
		lg_error("libfabric: provider %s cannot close a connection: waiting for the stalled operations",
		         b->f->provider);
		b->patient = true;
		return;
	}
	if (b->f->sever != SEVER_AV)
		return;
	b->abandoned = true;
	for (; b->reaped < b->posted; b->reaped++) {
		struct fab_op *op = &b->ops[b->reaped % b->window];

		b->done(b->arg, op->tag,
		        atomic_load_explicit(&op->state, memory_order_acquire) == 2 ? op->err : MMC_TIMEOUT);
	}
}

/* An op's result as the caller sees it: one failed because its connection was cut for the call timed out. */
static int op_result(const struct fab_batch *b, const struct fab_op *op)
{
	return op->err && b->severed ? MMC_TIMEOUT : op->err;
}

/* Waits until the oldest op is done, then reports it. */
static void reap_one(struct fab_batch *b)
{
	struct fab_op *op = &b->ops[b->reaped % b->window];
	unsigned spins = 0;
	uint64_t stall = 0, now, last = 0;

	atomic_fetch_add_explicit(&b->f->reapers, 1, memory_order_relaxed);
	while (atomic_load_explicit(&op->state, memory_order_acquire) != 2) {
		bool expired;

		if (poll_cq(b->f))
			continue;
		if (++spins < 64)
			continue;
		sched_yield();
		if (b->severed) /* the cut ops end soon; a stopped peer's, maybe long after: no core's worth of polling
		                 */
			nanosleep(&(struct timespec){0, 1000000}, NULL);
		now = clock_ms();
		/* this process did not run for a while (stopped, frozen, swapped out): its peers did nothing wrong */
		if (!stall || now - last > b->stall_ms / 2)
			stall = now + b->stall_ms;
		last = now;
		expired = b->deadline_ms && now >= b->deadline_ms;
		/* a deadline cuts only the peer's own connection, and may find none it can tell; the stall that
		 * follows may still cut its host's: a stopped peer must not hold the call past rma_timeout_ms */
		if ((now > stall && !b->stall_cut) || (expired && !b->severed)) {
			bool stalled = now > stall;

			atomic_fetch_sub_explicit(&b->f->reapers, 1, memory_order_relaxed);
			b->stall_cut |= stalled;
			abandon(b, !stalled);
			if (b->abandoned)
				return;
			atomic_fetch_add_explicit(&b->f->reapers, 1, memory_order_relaxed);
		}
	}
	atomic_fetch_sub_explicit(&b->f->reapers, 1, memory_order_relaxed);
	atomic_store_explicit(&op->state, 0, memory_order_relaxed);
	b->reaped++;
	b->done(b->arg, op->tag, op_result(b, op));
}

/* Reports the ops at the head of the ring that are done, without waiting: a caller's hook learns of a landed key
 * while a later post still waits for its peer. */
static void reap_done(struct fab_batch *b)
{
	while (b->reaped < b->posted) {
		struct fab_op *op = &b->ops[b->reaped % b->window];

		if (atomic_load_explicit(&op->state, memory_order_acquire) != 2)
			return;
		atomic_store_explicit(&op->state, 0, memory_order_relaxed);
		b->reaped++;
		b->done(b->arg, op->tag, op_result(b, op));
	}
}

/*
 * -FI_EAGAIN means the provider is out of credits, or still connecting to the peer: drive progress (never drop
 * completions) and retry. rxm answers it for ever to a peer whose port refuses connections (a process killed
 * before the meta server noticed), hence the same deadline as a stalled op. Returns the last fi_*msg() code;
 * -FI_EAGAIN with *ended set when the batch's lease ended meanwhile.
 */
static ssize_t post_retry(struct fab_batch *b, bool write, const struct fi_msg_rma *msg, int *ended)
{
	uint64_t deadline = 0;

	for (;;) {
		ssize_t rc =
		    write ? fi_writemsg(b->f->ep, msg, b->f->write_flags) : fi_readmsg(b->f->ep, msg, FI_COMPLETION);

		uint64_t now;

		if (rc != -FI_EAGAIN)
			return rc;
		if (poll_cq(b->f))
			continue;
		reap_done(b);
		if (b->lease && (*ended = b->lease(b->lease_arg, ((const struct fab_op *)msg->context)->tag)))
			return rc;
		sched_yield();
		now = clock_ms();
		if (b->deadline_ms && now >= b->deadline_ms)
			return rc; /* the caller's own deadline came first (a prefix read): no fault of the peer */
		if (!deadline)
			deadline = now + b->stall_ms;
		else if (now > deadline)
			return rc;
	}
}

/* An op to a peer whose connection was cut lately waits until the provider has dropped the dead one (cut_note),
 * or until the call's deadline: MMC_TIMEOUT then. */
static int wait_cut(struct fab_batch *b, fi_addr_t peer)
{
	uint64_t until = cut_until(b->f, peer), now;

	while (until && (now = clock_ms()) < until) {
		if (b->deadline_ms && now >= b->deadline_ms)
			return MMC_TIMEOUT;
		if (!poll_cq(b->f))
			nanosleep(&(struct timespec){0, 200000}, NULL);
		reap_done(b);
	}
	return 0;
}

static bool refused(const struct fab_batch *b, fi_addr_t peer)
{
	for (size_t i = 0; i < b->nrefused; i++)
		if (b->refused[i] == peer)
			return true;
	return false;
}

int fab_batch_post(struct fab_batch *b, bool write, const struct iovec *iov, void **desc, size_t count, fi_addr_t peer,
                   uint64_t raddr, uint64_t rkey, uint32_t tag)
{
	struct fi_rma_iov rma = {raddr, 0, rkey};
	struct fi_msg_rma msg = {
	    .msg_iov = iov, .desc = desc, .iov_count = count, .addr = peer, .rma_iov = &rma, .rma_iov_count = 1};
	struct fab_op *op;
	ssize_t rc;
	int ended = 0;

	for (size_t i = 0; i < count; i++)
		rma.len += iov[i].iov_len;
	if (b->severed || b->abandoned || (b->deadline_ms && clock_ms() >= b->deadline_ms))
		return MMC_TIMEOUT; /* given up, or past the caller's deadline: start nothing more */
	if (b->f->host_only)
		return MMC_LINK_NOT_FOUND;
	if (b->posted - b->reaped == b->window)
		reap_one(b);
	if (b->severed || b->abandoned)
		return MMC_TIMEOUT;
	if (refused(b, peer))
		return MMC_TIMEOUT; /* it already kept an earlier post waiting for stall_ms */
	if ((ended = wait_cut(b, peer)) != 0)
		return ended;
	if (b->lease && (ended = b->lease(b->lease_arg, tag)))
		return ended; /* after the wait for a slot above, too: that took time */
	op = &b->ops[b->posted % b->window];
	op->tag = tag;
	op->peer = peer;
	op->err = 0;
	msg.context = op;
	atomic_store_explicit(&op->state, 1, memory_order_relaxed);
	rc = post_retry(b, write, &msg, &ended);
	if (rc) {
		atomic_store_explicit(&op->state, 0, memory_order_relaxed);
		if (ended)
			return ended;
		if (rc != -FI_EAGAIN)
			return fab_err(write ? "fi_writemsg" : "fi_readmsg", (int)rc);
		if (!b->deadline_ms || clock_ms() < b->deadline_ms)
			lg_error("libfabric: peer %llu refused RMA for %u ms (gone?)", (unsigned long long)peer,
			         b->stall_ms);
		if (b->nrefused < FAB_REFUSED_MAX)
			b->refused[b->nrefused++] = peer;
		return MMC_TIMEOUT;
	}
	b->posted++;
	return 0;
}

void fab_batch_deadline(struct fab_batch *b, uint64_t deadline_ms)
{
	b->deadline_ms = deadline_ms;
}

void fab_batch_lease(struct fab_batch *b, int (*lease)(void *arg, uint32_t tag), void *arg)
{
	b->lease = lease;
	b->lease_arg = arg;
}

size_t fabric_iov_limit(const struct fabric *f)
{
	size_t n = f->info ? f->info->tx_attr->iov_limit : FAB_IOV_MAX;

	return n < 1 ? 1 : n > FAB_IOV_MAX ? FAB_IOV_MAX : n;
}

void fab_batch_wait(struct fab_batch *b)
{
	while (b->reaped < b->posted)
		reap_one(b);
}

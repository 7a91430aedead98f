/*
 * The data path: one libfabric RDM endpoint per store with one-sided RMA. The provider comes from the protocol
 * (host_tcp: tcp;ofi_rxm, host_rdma: verbs;ofi_rxm, auto: the best network provider); FI_PROVIDER
 * still overrides. MR modes are requested as real NICs need them and honoured as the provider returns them.
 * host_shm opens no provider at all (FABRIC_HOST_ONLY): every peer it can reach is on this host and reached through
 * the host path (host_map.h); FI_PROVIDER=shm still gets libfabric's shm provider for it.
 *
 * Completions: software providers progress only when their completion queue is read. A progress thread blocks on
 * the CQ (serving peers' RMA into our pool); a thread waiting for its own batch reads the CQ itself. Completions
 * are delivered to the op they name, whoever reads them. Thread-safe.
 */
#ifndef MMC_FABRIC_H
#define MMC_FABRIC_H

#include <rdma/fabric.h>
#include <sys/uio.h>
#include <rdma/fi_domain.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fabric;

#define FABRIC_HOST_ONLY "host" /* fabric_provider() of host_shm: the host path, no libfabric */

struct fab_mr {
	struct fid_mr *mr;
	void *desc;   /* local descriptor (NULL when the provider needs none) */
	uint64_t key; /* remote key */
};

/* Opens the endpoint. hcom_url "tcp://ip[:port]" selects the interface, "" lets the provider pick. */
int fabric_open(struct fabric **out, const char *protocol, const char *hcom_url);
void fabric_close(struct fabric *f);

const char *fabric_provider(const struct fabric *f);
/* The endpoint's address for peers (fi_getname). */
const void *fabric_addr(const struct fabric *f, size_t *len);
/* True when remote targets are virtual addresses (FI_MR_VIRT_ADDR), false for offsets into the MR. */
bool fabric_virt_addr(const struct fabric *f);
/* True when local buffers must be registered to be used (FI_MR_LOCAL). */
bool fabric_local_mr(const struct fabric *f);

/*
 * True when an RMA read issued after RMA writes to the same peer completes only after those writes landed
 * (FI_ORDER_RAW, and shm, whose per-peer command queue is FIFO), on a provider whose write completion is not the
 * only trace of its bytes (not tcp: see fence_orders_writes). Then writes go out plain and one small read per peer
 * ends a batch (a fence), whose failure fails every key written to that peer; otherwise every write asks for
 * FI_DELIVERY_COMPLETE. Plain writes matter beyond
 * speed: a delivery-complete write to a peer that died can block every later completion on shm.
 */
bool fabric_fence_by_read(const struct fabric *f);
/* An 8-byte registered buffer for fence reads (its content is never used). */
void *fabric_scratch(const struct fabric *f, void **desc);

/* Registers [buf, buf+len) for local use, and for peers' RMA when remote. Returns 0 or MMC_ERROR. */
int fabric_mr_reg(struct fabric *f, void *buf, size_t len, bool remote, struct fab_mr *out);
void fabric_mr_close(struct fab_mr *mr);

/* Adds a peer's address to the address vector. */
int fabric_peer_add(struct fabric *f, const void *addr, size_t len, fi_addr_t *out);

/* One posted operation (libfabric's context). Owned by a batch. */
struct fab_op {
	struct fi_context2 ctx; /* first: libfabric hands this pointer back */
	atomic_int state;       /* 0 free, 1 posted, 2 done */
	int err;
	uint32_t tag;
	fi_addr_t peer;
};

/*
 * A set of operations issued by one call: a ring of `window` ops in flight. Owned by the calling thread. When an op
 * makes no progress for stall_ms (its peer died or stopped mid-transfer: some providers never complete such an op),
 * or the call's deadline passes, the connections to the peers of every unfinished op are cut before the ops are
 * reported MMC_TIMEOUT: no late answer lands in a buffer after the call returned (a stopped peer resumed answers
 * the requests it had). Over tcp the provider fails the cut ops and they are reaped as any; over rxm's other
 * providers (verbs) the provider closes the connection and the ops are reported at once, their ring kept since
 * their contexts may still come back through the CQ. A connection that cannot be cut (shm, a provider started
 * without FI_AV_REMOVE_CLEANUP, a tcp peer whose socket this process cannot tell apart) makes the call wait for its
 * ops instead ("patient").
 */
#define FAB_REFUSED_MAX 16

struct fab_batch {
	struct fabric *f;
	struct fab_op *ops;
	size_t window;
	size_t posted, reaped;
	uint32_t stall_ms;
	uint64_t deadline_ms; /* clock_ms() past which the call gives up what is still in flight; 0: none */
	bool severed;         /* given up: the unfinished ops' connections were cut, nothing more is posted */
	bool abandoned;       /* and the ops reported at once (the provider closed them: their ring is kept) */
	bool patient;         /* one could not be cut: its ops are waited for, however long */
	bool stall_cut;       /* abandoned for a stall (a deadline's cut, declined, leaves a stall's to come) */
	/* peers the provider would not take an op for during stall_ms: later posts to them fail at once */
	fi_addr_t refused[FAB_REFUSED_MAX];
	size_t nrefused;
	/* called on the owner's thread as each op is reaped: err 0 or an MMC_* code */
	void (*done)(void *arg, uint32_t tag, int err);
	void *arg;
	int (*lease)(void *arg, uint32_t tag); /* fab_batch_lease(); NULL: none */
	void *lease_arg;
};

int fab_batch_init(struct fab_batch *b, struct fabric *f, size_t window, uint32_t stall_ms,
                   void (*done)(void *arg, uint32_t tag, int err), void *arg);

/*
 * Posts of b go out only while lease(arg, the post's tag) returns 0. It is asked before each post and each time the
 * provider turns one away: once it returns an MMC_* code, that post and every later one fail with it, not posted. For
 * writes into space that a server granted on a connection since lost: its successor may give the space to another
 * object, so a write that waited for a window slot or for a refusing peer must not go out after the loss is known. The
 * posts already made are the caller's to wait for, as before.
 */
void fab_batch_lease(struct fab_batch *b, int (*lease)(void *arg, uint32_t tag), void *arg);

/*
 * Posts one RMA between count local pieces (iov, with their descriptors) and one contiguous remote range at
 * (peer, raddr, rkey): a write gathers them, a read scatters into them. Waits for a free slot when
 * the window is full. A write's completion means its data is visible at the target only when the provider does not
 * fence by read (fabric_fence_by_read()); otherwise the caller ends its writes to a peer with a read.
 * Returns 0 or an MMC_* code (the op was not posted): MMC_TIMEOUT when the provider would not take the op for
 * stall_ms (a peer that refuses connections), and at once for every later op to that peer in this batch; the
 * lease's code once it has ended (fab_batch_lease).
 */
int fab_batch_post(struct fab_batch *b, bool write, const struct iovec *iov, void **desc, size_t count, fi_addr_t peer,
                   uint64_t raddr, uint64_t rkey, uint32_t tag);

#define FAB_IOV_MAX 4
/* Local pieces one RMA may gather (the provider's iov_limit, at most FAB_IOV_MAX). */
size_t fabric_iov_limit(const struct fabric *f);

/* Waits for every posted op; returns after done() was called for each. */
void fab_batch_wait(struct fab_batch *b);

/*
 * Gives the batch the caller's deadline (clock_ms(); 0: none): past it, nothing more is posted (MMC_TIMEOUT), and
 * the ops still in flight are given up as a stalled op is (their connections closed, then reported MMC_TIMEOUT),
 * so no byte of them lands after the call. A provider that cannot close connections waits for them instead.
 */
void fab_batch_deadline(struct fab_batch *b, uint64_t deadline_ms);

/* Frees the ring, unless a stalled op may still be written by the provider. */
void fab_batch_fini(struct fab_batch *b);

#endif

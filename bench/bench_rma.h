/*
 * The transport's limit: raw libfabric fi_writemsg / fi_readmsg between this process and a target process
 * (`mmc-bench rma-target`) with no metadata at all, as fabtests' fi_rma_bw measures it: a window of outstanding
 * ops, the same provider, hints, MR modes and progress model as libmmc (lib/fabric.c), writes with or without
 * FI_DELIVERY_COMPLETE.
 */
#ifndef MMC_BENCH_RMA_H
#define MMC_BENCH_RMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench.h"

#define RMA_WINDOW 128 /* what libmmc keeps in flight per call (lib/xfer.c WINDOW) */

struct rma_ep;

struct rma_bench {
	struct rma_ep *ep;
	pid_t target;
	int target_in;
	uint64_t raddr, rkey, rsize;
	uint64_t next; /* offset of the next op in the target's region: calls move through all of it, wrapping */
	uint64_t peer; /* fi_addr_t */
};

/* Starts a target lending `bytes` (pre-faulted, so no call pays the first touch of a page) and opens the local
 * endpoint. protocol: host_tcp / host_shm. */
int rma_start(struct rma_bench *r, const char *self, const char *protocol, size_t bytes);
void rma_stop(struct rma_bench *r);

/* RMA_WRITE_DC_LAST: only the last write of a call asks for FI_DELIVERY_COMPLETE (enough for visibility when the
 * provider orders writes after writes, FI_ORDER_WAW); the fix proposed for lib/fabric.c. */
/* RMA_WRITE_FLUSH: plain writes, then one 8-byte read of the last range (visibility when the provider orders reads
 * after writes, FI_ORDER_RAW). */
enum rma_op { RMA_WRITE_DC, RMA_WRITE, RMA_READ, RMA_WRITE_DC_LAST, RMA_WRITE_FLUSH };

/* The provider's tx msg_order has FI_ORDER_WAW / FI_ORDER_RAW. */
bool rma_orders(const struct rma_bench *r, bool raw);

/*
 * One call moves `batch` keys of shape sh from/to bufs[i] (each sh->block bytes), one op per piece, up to
 * RMA_WINDOW in flight; keys sit end to end at the target, each call after the last one's bytes (wrapping at the
 * region's end), so a large region is not cache-hot at the target. Adds one sample per call for `seconds`.
 */
int rma_measure(struct rma_bench *r, enum rma_op op, const struct shape *sh, void *const *bufs, int batch,
                double seconds, struct samples *out);

#endif

/*
 * Moves the bytes of many keys at once: every RMA of a call is in flight together (up to a window), a key's local
 * pieces are gathered into (put) or scattered from (get) one contiguous object, and a blob in this store's own pool
 * is copied with memcpy. Thread-safe; the caller's arrays must stay valid during the call.
 */
#ifndef MMC_XFER_H
#define MMC_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire_limits.h"

struct mmc_store;

struct xfer_piece {
	void *buf;
	size_t len;
};

struct xfer_target {
	uint32_t rank;
	uint64_t incarnation;
	uint32_t media;
	uint64_t offset; /* of the key's first byte in that pool */
};

struct xfer_key {
	const struct xfer_piece *pieces; /* in object order */
	uint32_t npieces;
	uint32_t ntargets; /* put: every replica; get: the one to read */
	struct xfer_target targets[MMC_WIRE_REPLICAS];
	bool skip;  /* in: leave the key alone (its result is 0) */
	int result; /* out: 0 or the key's first error */
};

/*
 * Work a caller overlaps with its transfers, on its own thread (the checksums of verify_checksum). posted: once,
 * after the last RMA of the call is posted and before waiting for them. landed (reads only): once per key whose
 * bytes all arrived without error, as soon as they have, while later keys are still in flight. lease (writes
 * only): 0 while key's target space is still the caller's to write, else the MMC_* code that key fails with; asked
 * before each key's every target, and by the fabric before each RMA (fab_batch_lease); key XFER_NO_KEY for an RMA
 * of no key's (a fence read). Any of them may be NULL.
 */
#define XFER_NO_KEY SIZE_MAX
struct xfer_hook {
	void (*posted)(void *arg);
	void (*landed)(void *arg, size_t key);
	int (*lease)(void *arg, size_t key);
	void *arg;
};

/* write: pieces -> every target; read: the target -> pieces. Key i is PER_KEY(keys, i, stride): a plain array
 * (stride 0) or the xfer_key inside each of a caller's per-key records. Per-key errors land in its result. hook may
 * be NULL. */
void xfer_run(struct mmc_store *s, int write, struct xfer_key *keys, size_t n, size_t stride,
              const struct xfer_hook *hook);
/* The same, given up at deadline_ms (clock_ms(); 0: none): keys not started by then, and keys whose RMA is still in
 * flight then, fail with MMC_TIMEOUT, and nothing of them lands after the return (fab_batch_deadline). */
void xfer_run_until(struct mmc_store *s, int write, struct xfer_key *keys, size_t n, size_t stride,
                    const struct xfer_hook *hook, uint64_t deadline_ms);

#endif

/*
 * Memory a load is about to write, faulted in on a thread of its own. The kernel zeroes every new page at its first
 * touch, on the thread that touches it: at 10^7 objects a restart writes about 2 GB it never had (the object slab,
 * the index, the load's arrays), and on a VM that zeroing was a third of the loop thread's load time. Here a worker
 * thread makes blocks ahead (slab chunks, mapped and faulted in) and faults in ranges the loop is about to write
 * (MADV_POPULATE_WRITE), while the loop parses records: the same work, on the other core.
 *
 * The slab (slab.h) keeps it running for the server's life: many blocks ahead during a load, a few otherwise, so that
 * the loop never waits for a chunk's huge page to be zeroed. One worker per process, started and stopped by one
 * thread (the loop); prefault_take and prefault_range are for that thread too. Nothing here changes what memory holds:
 * a block or range not faulted in yet is faulted in by whoever touches it first, as without this.
 */
#ifndef MMC_PREFAULT_H
#define MMC_PREFAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; glibc names it from 2.35 */
#endif

/* Starts the worker: it keeps up to ahead (at most PREFAULT_AHEAD) blocks of block bytes made by make (called on
 * the worker: thread-safe, the block's pages faulted in, NULL when out of memory), at most max_blocks in all, and
 * drop gives back a block nobody took. false: no worker (one is running already, or no thread could start): the
 * caller does without. */
#define PREFAULT_AHEAD 16
bool prefault_start(size_t block, size_t max_blocks, size_t ahead, void *(*make)(void), void (*drop)(void *));
/* A block made ahead, or NULL when none is ready (the caller makes its own). */
void *prefault_take(void);
/* Blocks made and not taken yet. */
size_t prefault_ready(void);
/* Faults in [p, p + len) ahead of the caller, in queue order, after the blocks run low. The range must stay mapped
 * until prefault_stop, or be unmapped only by the caller (the worker's fault-in then fails harmlessly). A no-op
 * without a worker, or once PREFAULT_RANGES are queued. */
#define PREFAULT_RANGES 1024
void prefault_range(void *p, size_t len);
/* Stops and joins the worker; blocks nobody took are dropped. Returns the bytes the worker faulted in for the
 * caller (blocks taken, and ranges), for the load's log line. */
size_t prefault_stop(void);

#endif

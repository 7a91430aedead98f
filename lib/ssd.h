/*
 * A local service's SSD tier: a file (or block device) the meta server allocates in like a pool. The bytes move
 * between the DRAM pool and the SSD only on the meta server's request (a BlobTask: demote on eviction, rewarm or
 * stage on get, explicit evict / prefetch), executed with aligned pread / pwrite (O_DIRECT where the file system
 * allows it) on a worker thread, never on the reader or progress thread. Thread-safe.
 */
#ifndef MMC_SSD_H
#define MMC_SSD_H

#include <stddef.h>
#include <stdint.h>

struct ssd;
struct meta_conn;

/* Opens path, creating a regular file of size bytes (a block device must be at least that large, and is opened
 * exclusively), and reads its label (its first 4 KiB), labelling it first when it has none and those bytes are
 * zeros. MMC_INVALID_PARAM: it cannot be opened, sized or labelled, another local service holds it (a block device:
 * anything does, a mount included), it holds data that is not an SSD tier's, or size is under 8 KiB. */
int ssd_open(struct ssd **out, const char *path, uint64_t size);
/* Starts the worker; tasks read and write pool[0..pool_size) and answer on mc. */
int ssd_start(struct ssd *d, struct meta_conn *mc, void *pool, size_t pool_size);
/* Stops the worker (before the meta connection closes: it answers on it). NULL is ignored. */
void ssd_stop(struct ssd *d);
/* Stops if needed, drops queued tasks and closes the file (after the meta connection closed). NULL is ignored. */
void ssd_close(struct ssd *d);
/* What the meta server may allocate in: size less the label. */
uint64_t ssd_size(const struct ssd *d);
/* The file's identity (MMC_WIRE_SSD_ID bytes, from its label): Register.ssd_id. */
const uint8_t *ssd_id(const struct ssd *d);

/*
 * meta_task_fn: decodes a BlobTask and queues it. A task runs only while the connection it came on is the current
 * one: its destination was reserved by the server at the other end, and a restarted server, which knows nothing of
 * that, gives the same range to other keys once this service has rejoined it. Tasks still queued when it is lost
 * are dropped unanswered (that server is gone; the next one never asked).
 */
void ssd_on_task(void *owner, uint64_t conn, uint64_t id, const uint8_t *data, size_t len);
/*
 * Waits until no task of a lost connection is still moving bytes; the keeper thread calls it before the service
 * rejoins. Without it a read from a slow disk that began before the loss would land in the pool after the rejoin,
 * over the bytes of a put the new server placed there. NULL is ignored.
 */
void ssd_fence(struct ssd *d);

#endif

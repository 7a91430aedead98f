/*
 * mmc-metaserver under leader election (kvcm.distributed_lock.uri): it starts as a standby that listens, answers
 * health, cluster info and redirects, and loads nothing; when the elector wins the lease it loads the state from the
 * store exactly as a restart does (the load callback: main.c's open_store) and serves; when the lease is lost or
 * given up it stops serving at once and restarts itself (execve of its own binary, same pid, same ports) as a
 * standby, so that the next time it leads it loads again from what is durable. Loop thread only.
 */
#ifndef MMC_LEADERSHIP_H
#define MMC_LEADERSHIP_H

#include <stddef.h>

struct meta;
struct kvcm_conf;

/* The configuration's leader-election keys, checked as leadership_open checks them, opening nothing (the start and
 * --check-config both run it). Returns 0, or MMC_ERROR with a message in err. */
int leadership_check(const struct kvcm_conf *kc, char *err, size_t errlen);
/* Opens the elector when a lock URI is configured (m->rpc->ha; stays NULL without one: one server that always leads).
 * argv is kept for the restart. Returns 0, or MMC_ERROR with a message in err. */
int leadership_open(struct meta *m, int argc, char **argv, int (*load)(struct meta *m), char *err, size_t errlen);
/* Once the listeners are up: writes this node's addresses into the lock record and starts campaigning. */
int leadership_start(struct meta *m, const char *rpc_host, unsigned rpc_port);
/* Installs the store's fences for the node about to lead (no-op without an elector): the lease, asked before every
 * commit, and where the lock lives in the store's Redis and db, the lock key checked at Redis. Called by the load
 * as soon as the store is open, so that the load's own writes are fenced too. */
void leadership_fence(struct meta *m);
/* Stops the elector and gives the lock back (shutdown). */
void leadership_close(struct meta *m);

#endif

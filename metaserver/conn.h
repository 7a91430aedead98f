/*
 * Protobuf connections from libmmc: framing (4-byte little-endian length + Frame), limits, and replies that are
 * held back until the loop turn's LMDB commit so that an acknowledged change is durable. Loop thread only.
 */
#ifndef MMC_CONN_H
#define MMC_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "meta.h"
#include "mmc.pb-c.h"

struct bufferevent;
struct evbuffer;

struct conn {
	struct list link; /* meta.conns */
	struct meta *m;
	struct bufferevent *bev;
	struct evbuffer *held; /* replies waiting for the commit */
	struct session session;
	uint64_t last_seen_ms;
	bool waiting_commit;
	bool closed; /* freed when the pending commit callback runs */
	char peer[64];
};

/* Listens on host:port (port 0: any); *bound gets the real port. */
int conn_listen(struct meta *m, const char *host, uint16_t port, uint16_t *bound);
void conn_stop_listening(struct meta *m);

/*
 * Encodes f and queues it to c. A durable reply acknowledges a metadata change (commit, remove, ...): it waits for
 * the loop turn's LMDB commit. Any other frame goes out at once, even past a held one (replies carry ids).
 */
void conn_send(struct conn *c, const Mmc__Frame *f, bool durable);

/* Drops the connection; its local service (if any) is unmounted and its pending writes dropped. */
void conn_close(struct conn *c, const char *why);

/* Closes connections silent for longer than the heartbeat timeout. */
void conns_sweep(struct meta *m, uint64_t now_ms);
/* Closes every connection (shutdown). */
void conns_close_all(struct meta *m);

#endif

/*
 * Protobuf connections from libmmc: framing (4-byte little-endian length + Frame), limits, and replies that are
 * held back until the LMDB commit of the changes they acknowledge, so that an acknowledged change is durable. Loop
 * thread only.
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
	/* replies waiting for a commit, by the persist batch they wait for (0: slot free); at most two batches are
	 * uncommitted at a time, the one being synced and the one filling */
	struct evbuffer *held[2];
	uint64_t held_seq[2];
	uint64_t held_since[2]; /* persist_durable_seq when the slot was taken: its replies acknowledge later batches */
	int commit_waits;       /* persist_after_commit callbacks still to run */
	struct session session;
	uint64_t last_seen_ms;
	bool closed; /* freed when the last commit callback runs */
	char peer[64];
};

/* Listens on host:port (port 0: any); *bound gets the real port. */
int conn_listen(struct meta *m, const char *host, uint16_t port, uint16_t *bound);
void conn_stop_listening(struct meta *m);

/*
 * Encodes f and queues it to c. A durable reply acknowledges a metadata change (commit, remove, ...): it waits for
 * the LMDB commit of every change made so far. Any other frame goes out at once, even past a held one (replies carry
 * ids).
 */
void conn_send(struct conn *c, const Mmc__Frame *f, bool durable);

/* Drops the connection; its local service (if any) is unmounted and its pending writes dropped. */
void conn_close(struct conn *c, const char *why);

/* Closes connections silent for longer than the heartbeat timeout. */
void conns_sweep(struct meta *m, uint64_t now_ms);
/* Closes every connection (shutdown). */
void conns_close_all(struct meta *m);

#endif

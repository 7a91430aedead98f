/*
 * Protobuf connections from libmmc: framing (4-byte little-endian length + Frame), limits, and replies that are
 * held back until the LMDB commit of the changes they acknowledge, so that an acknowledged change is durable. Loop
 * thread only.
 */
#ifndef MMC_CONN_H
#define MMC_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/util.h>

#include "meta.h"
#include "meta_rpc.h"
#include "mmc.pb-c.h"
#include "wire_limits.h"

struct bufferevent;
struct evbuffer;

/* How far a connection is through its hello (rpc/auth.c). */
enum conn_phase {
	CONN_NEW,        /* no Hello yet */
	CONN_CHALLENGED, /* AuthChallenge sent: only an AuthProof may follow */
	CONN_READY,      /* admitted */
};

struct conn {
	struct list link; /* meta_rpc.conns */
	struct meta *m;
	struct bufferevent *bev;
	/* replies waiting for a commit, by the persist batch they wait for (0: slot free); at most two batches are
	 * uncommitted at a time, the one being synced and the one filling */
	struct evbuffer *held[2];
	/* plain TCP: the replies to the frames of one read, written straight to the socket at its end (no write
	 * event to add and remove per request, two epoll_ctl calls); NULL with TLS */
	struct evbuffer *turn_out;
	bool in_turn;   /* in read_cb: conn_send queues to turn_out */
	bool reading;   /* in read_cb's frames: a close there frees the connection only when they are done */
	bool throttled; /* its replies pile up untaken: its requests are not read (conn.c throttle) */
	int rcvlowat;   /* the socket's SO_RCVLOWAT, as last set */
	uint64_t held_seq[2];
	uint64_t held_since[2]; /* persist_durable_seq when the slot was taken: its replies acknowledge later batches */
	int commit_waits;       /* persist_after_commit callbacks still to run */
	struct session session;
	uint64_t last_seen_ms;
	bool closed; /* freed when the last commit callback runs */
	char peer[64];
	/* the guards of the RPC port */
	enum conn_phase phase;
	struct list hello_link; /* meta_rpc.hello_waits until the phase is CONN_READY */
	uint64_t accepted_ms;   /* for ock.mmc.meta.hello_timeout_ms */
	uint64_t
	    input_reserved;  /* this connection's share of meta_rpc.input_reserved (ock.mmc.meta.max_buffered_input) */
	const char *closing; /* a refusal is being flushed; then the connection closes for this reason */
	uint8_t client_nonce[MMC_WIRE_NONCE], server_nonce[MMC_WIRE_NONCE];
	uint32_t claim; /* the tenant its hello named (meta.tenants; TENANT_NONE: none of this server's) */
	char claim_name[MMC_TENANT_NAME_MAX + 1];
};

/* Takes accepted socket fd (owned from here: closed on failure) from peer ("ADDR:PORT") as a new connection, before
 * its hello. Returns 0 or MMC_MALLOC_FAILED. */
int conn_accept(struct meta *m, evutil_socket_t fd, const char *peer);
/* Closes the oldest connection still before its hello (meta_rpc.hello_waits must not be empty), for a new one. */
void conn_displace_oldest(struct meta *m);

/*
 * Encodes f and queues it to c. A durable reply acknowledges a metadata change (commit, remove, ...): it waits for
 * the LMDB commit of every change made so far. Any other frame goes out at once, even past a held one (replies carry
 * ids).
 */
void conn_send(struct conn *c, const Mmc__Frame *f, bool durable);
/* conn_send of a frame already encoded: head then body (hlen + blen bytes, at most MMC_FRAME_MAX). */
void conn_send_bytes(struct conn *c, const void *head, size_t hlen, const void *body, size_t blen, bool durable);

/* Drops the connection; its local service (if any) is unmounted and its pending writes dropped. */
void conn_close(struct conn *c, const char *why);
/* Reads nothing more from c and closes it (for why) once what is queued to it has been sent: a refusal's reply. */
void conn_close_flushed(struct conn *c, const char *why);
/* c finished its hello: it no longer counts against ock.mmc.meta.hello_timeout_ms. */
void conn_admitted(struct conn *c);

/* Closes connections silent for longer than the heartbeat timeout, or not through their hello in time. */
void conns_sweep(struct meta *m, uint64_t now_ms);
/* Closes the connections of tenants a reload removed (state/tenants.h): what they proved no longer names anyone. */
void conns_close_removed_tenants(struct meta *m);
/* Closes every connection (shutdown). */
void conns_close_all(struct meta *m);

#endif

/*
 * The store's one TCP connection to mmc-metaserver. Calls from many threads are pipelined on it: each call has a
 * request id and its reply is decoded straight into the caller's arrays. A caller that finds nobody reading the
 * socket reads it itself until its reply is in, dispatching whatever else arrives; the others wait on their own
 * condition variables. A reader thread reads whenever no caller does (server tasks, a dropped connection), so a
 * call's reply costs one thread wake-up instead of two. A session thread sends heartbeats and, when the
 * connection drops, reconnects and replays the handshake (hello, then the local service's re-registration).
 * Thread-safe.
 */
#ifndef MMC_META_CONN_H
#define MMC_META_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hmap.h"
#include "wire.h"

struct client_conf;
struct meta_conn;

/* One request in flight. Lives on the caller's stack. */
struct mcall {
	/* set by the caller */
	/* on the thread that reads the reply: the reader thread, or a caller waiting on the same connection */
	int (*decode)(struct mcall *c, uint32_t body, const uint8_t *data, size_t len);
	void *arg;
	bool bypass; /* handshake calls: allowed while the connection is not ready yet */
	/* clock_ms() by which a connection that is down must be back, counted from the start of the public call that
	 * makes this one, so that its later round trips do not each wait retry_ms again; 0: retry_ms from now */
	uint64_t deadline_ms;
	/* clock_ms() past which the reply is no longer waited for (MMC_TIMEOUT; a late one is dropped), when sooner
	 * than timeout_ms from the send; 0: timeout_ms */
	uint64_t reply_by_ms;
	/* pinned: sent only on the connection whose meta_conn_losses() is on_conn, else MMC_NOT_CONNECTED_META. For a
	 * call that names what that connection's server granted (a commit, a put into extents): the next server gave
	 * the same ids and tokens to others */
	bool pinned;
	uint64_t on_conn;
	/* owned by meta_conn */
	uint64_t id;
	uint64_t losses;  /* meta_conn_losses() when the frame went out: which connection's server answered */
	uint64_t sent_ns; /* clock_ns() when it was numbered: its reply's round trip is meta_conn.last_rtt_ns */
	int status;
	bool done;
	pthread_cond_t cond;
	struct hmap_node link; /* in the connection's pending calls, by id */
};

/* What a (re)connected session learned from the server. */
struct meta_session {
	uint64_t id;
	uint64_t lease_ttl_ms;
	uint32_t heartbeat_timeout_ms;
	uint64_t server_run; /* changes when the meta server process restarted */
	char leader[320];    /* hello answered MMC_NOT_LEADER: the leader that server named ("" : none known) */
};

/* Called by the session thread after a reconnect, once hello succeeded (sess: what it learned); re-registers the local
 * service. */
typedef int (*meta_reconnect_fn)(void *owner, const struct meta_session *sess);

/* A request from the meta server (a BlobTask) arrived on connection conn (the meta_conn_losses() it was read under);
 * called on the thread reading the socket (the reader thread, or a caller waiting for its reply), so it must not
 * block. */
typedef void (*meta_task_fn)(void *owner, uint64_t conn, uint64_t id, const uint8_t *data, size_t len);

/* Routes the server's task requests to fn (set before the local service registers). */
void meta_conn_on_task(struct meta_conn *mc, meta_task_fn fn, void *owner);
/*
 * Answers the server's request id, which arrived on connection conn, with Reply{result}: only on that connection.
 * MMC_NOT_CONNECTED_META once it is lost: the id is that server's, and on the next connection (a restarted server
 * numbering its own requests from anywhere) it could name another request.
 */
int meta_reply(struct meta_conn *mc, uint64_t conn, uint64_t id, int result);

/* Connects (through TLS when configured) and says hello (proving the cluster secret when the server asks). Returns 0,
 * MMC_NOT_CONNECTED_META, MMC_NOT_AUTHORIZED (a missing or wrong secret, a server that cannot prove it, a
 * certificate that does not verify), MMC_INVALID_PARAM (TLS files that cannot be loaded, another major wire version)
 * or MMC_MALLOC_FAILED. */
int meta_conn_open(struct meta_conn **out, const struct client_conf *conf);
/* Starts heartbeats and automatic reconnection; on_reconnect may be NULL. */
int meta_conn_start(struct meta_conn *mc, meta_reconnect_fn on_reconnect, void *owner);
/* Stops the threads, fails pending calls, closes. NULL is ignored. */
void meta_conn_close(struct meta_conn *mc);
/* The store is being torn down: calls waiting for a lost connection to come back fail now, and later ones fail at
 * once while it is down, so that teardown does not wait out their retry_ms; a connected one still carries calls
 * (the Unregister). NULL is ignored. */
void meta_conn_closing(struct meta_conn *mc);

/*
 * Sends msg as Frame body `body` and waits for the reply: for a connection that is down, until c->deadline_ms,
 * then timeout_ms for the reply. fields NULL: msg is a struct wire_hand, a body written by hand (wire.h). Returns the
 * call's status: what c->decode returned, MMC_NOT_CONNECTED_META, MMC_TIMEOUT, or MMC_INVALID_PARAM when the
 * request cannot be encoded (checked first, before any wait for the connection).
 */
int meta_call(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg, struct mcall *c);
/* Sends without waiting for any reply (id 0). */
int meta_send(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg);
/* A ping the server answers (the keeper's, every heartbeat_ms): an answer is what tells a server that stopped from
 * one that is merely quiet. */
int meta_ping(struct meta_conn *mc);
/* meta_send, only on the connection whose meta_conn_losses() is conn (MMC_NOT_CONNECTED_META once another one is
 * up): for a message naming what that connection's server granted. */
int meta_send_on(struct meta_conn *mc, uint64_t conn, uint32_t body, const pb_msgdesc_t *fields, const void *msg);
/*
 * Like meta_send, for a message whose timing does not matter (a lease release): over plain TCP the
 * kernel may hold it until the next frame goes out (Linux: at most about 200 ms), so that it rides with that frame
 * instead of costing a transmit of its own, about 25 us of the caller's time, and a server wake-up. Lost with the
 * connection like any frame not yet sent.
 */
int meta_send_deferred(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg);

/*
 * How many times the connection has been lost. Placements and read leases live only in the server that granted
 * them: a transfer started under one connection must not be trusted once this has moved on, because a restarted
 * server knows nothing of them and may hand the same memory to another writer. Lock-free.
 */
uint64_t meta_conn_losses(struct meta_conn *mc);
/*
 * Until when (clock_ms()) the server surely still holds this store's session, and so what it granted on it: a server
 * closes a client it has heard nothing from for its heartbeat timeout (then drops the session's allocations, whose
 * space goes to other keys), and it had heard this store when the newest frame it answered was sent. A quarter of
 * the timeout is kept as margin for the two clocks. A process paused past it (SIGSTOP, a frozen container) must not
 * write into space granted before: its thread may run before it reads the connection's end. UINT64_MAX before any
 * answer or when the server named no timeout. Lock-free.
 */
uint64_t meta_conn_held_until(struct meta_conn *mc);
/* What the current (or last) connection's hello learned. */
void meta_conn_session(struct meta_conn *mc, struct meta_session *out);

/* Decoders for the simple replies: Reply{result} -> result. */
int meta_decode_reply(struct mcall *c, uint32_t body, const uint8_t *data, size_t len);

#endif

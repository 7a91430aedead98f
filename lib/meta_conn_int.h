/*
 * The meta connection's insides, shared by its three files and no one else:
 *   meta_conn.c  the connection's life: dial, hello, the keeper thread (reconnects, heartbeats), open and close
 *   meta_call.c  calls: the pending-call table, sending frames, waiting for a reply (or reading it, meta_read.c)
 *   meta_read.c  the read side: who reads the socket (the reader thread or a waiting caller), frames dispatched
 */
#ifndef MMC_META_CONN_INT_H
#define MMC_META_CONN_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "local_config.h"
#include "meta_conn.h"
#include "meta_leader.h"
#include "meta_tls.h"

#define PENDING_MIN  256 /* buckets of the pending-call table to start with */
#define READ_PARK_MS 20  /* the reader thread keeps off the socket this long after a call: callers read */

enum mc_state { MC_DOWN, MC_CONNECTING, MC_READY };

/*
 * Who owns what: lock guards state, fd, next_id, pending, session and the task route, and every write to them
 * takes it. The reader and keeper handles (reader_started, keeper_started) belong to the thread that starts and
 * joins them: meta_conn_open's caller, then the keeper alone. stop and losses are atomics, read without the lock.
 * send_lock only orders the bytes of whole frames on the socket; it is never held together with lock.
 */
struct meta_conn {
	const struct client_conf *conf;
	pthread_mutex_t lock;
	pthread_cond_t state_cond;
	pthread_mutex_t send_lock;
	enum mc_state state;
	/* this connection's server said its hello (and proved the cluster secret, where one is set): until then a task
	 * it sends is not run, for any peer at the address (or at a redirect's) could send one */
	bool authed;
	int fd;
	uint64_t next_id;
	struct hmap pending; /* calls waiting for their reply, by id (mcall.link) */
	struct meta_session session;
	pthread_t reader, keeper;
	bool reader_started, keeper_started;
	_Atomic bool stop;
	_Atomic bool closing; /* meta_conn_closing: no call waits for the connection to come back */
	meta_reconnect_fn on_reconnect;
	void *owner;
	meta_task_fn on_task;
	void *task_owner;
	_Atomic uint64_t losses;      /* connections lost so far: see meta_conn_losses() */
	struct meta_tls_ctx *tls_ctx; /* NULL: plain TCP */
	struct meta_tls *tls;         /* the session on fd, with tls_ctx */
	/* bumped (under send_lock) when fd and tls go: a sender that read them before checks this under send_lock,
	 * so it never writes to a closed (or reused) descriptor or a freed session */
	_Atomic uint64_t gen;
	struct meta_leader leader; /* which of the configured servers to dial (handshake thread only) */
	/*
	 * Who reads the socket (under lock). A caller waiting for its reply reads and dispatches every frame itself
	 * when nobody else does, which saves the reader thread's wake-up of it; the reader thread reads while no call
	 * is in flight (server tasks, a closed connection), and for callers that came while the socket was taken.
	 * Plain TCP only: under TLS the reader thread reads everything. rd belongs to the owner of the read side.
	 */
	enum { RD_NONE, RD_THREAD, RD_CALLER } rd_owner;
	bool rd_failed;            /* a caller's read failed (or the connection is being dropped): the reader ends it */
	uint64_t rd_active_ms;     /* clock_ms() when the newest reply came in */
	_Atomic uint64_t heard_ms; /* clock_ms() when the server last sent anything (the keeper drops a silent one) */
	/* clock_ms() when the newest frame the server has answered was sent: it heard us then (meta_conn_held_until) */
	_Atomic uint64_t answered_sent_ms;
	/* a copy of session.heartbeat_timeout_ms, set with it under the lock: every RMA's grant check reads it
	 * (meta_conn_held_until), and taking the lock there would serialize the data path's threads */
	_Atomic uint32_t heartbeat_timeout_ms;
	uint64_t ping_id, ping_sent_ms; /* the newest ping (under lock): its answer has no call waiting for it */
	uint64_t last_rtt_ns;   /* the newest reply's round trip: whether a waiting caller polls before it sleeps */
	uint64_t spin_probe_ns; /* clock_ns() of the last poll after a slow reply (meta_read.c spin_for_reply) */
	pthread_cond_t rd_cond; /* the reader thread waits here while callers read */
	struct wbuf rd;         /* read and not yet dispatched */
};

/* The connection a sender read under the lock. */
struct link {
	int fd;
	struct meta_tls *tls;
	uint64_t gen;
};

/* ---- meta_call.c ---- */

/* The hash of a pending call: its id (hmap_hash_fn). */
uint64_t mc_pending_hash(const struct hmap_node *n);
/* Takes the pending call id out of the table, or NULL (it timed out). Lock held. */
struct mcall *mc_pending_take(struct meta_conn *mc, uint64_t id);
/* Completes every pending call with status. Lock held. */
void mc_fail_all(struct meta_conn *mc, int status);

/* ---- meta_read.c ---- */

/* The reader thread of one connection (meta_conn.c starts it with mc as its argument). */
void *mc_reader_main(void *arg);
/* Makes the reader thread end the connection, parked or not. Lock held. */
void mc_reader_end(struct meta_conn *mc);
/* Whether this caller may read the socket of link l itself: plain TCP, still that connection, nobody reading. Lock
 * held. */
bool mc_may_read(const struct meta_conn *mc, struct link l);
/*
 * The caller reads the socket until its own reply is in or its deadline passes, dispatching every frame that comes
 * (other callers' replies, server tasks). Lock held on entry and return. Returns true when the deadline passed.
 */
bool mc_read_own(struct meta_conn *mc, struct mcall *c, struct link l, const struct timespec *dl);

#endif

/*
 * The RPC layer's own state: the libmmc port's listener, its connections and their guards, and what a hello
 * answers with. The layers below see it only as struct meta's opaque rpc pointer. Loop thread only.
 */
#ifndef MMC_META_RPC_H
#define MMC_META_RPC_H

#include <stdbool.h>
#include <stdint.h>

#include "list.h"

struct event;
struct evconnlistener;
struct ha;
struct rpc_tls;

struct meta_rpc {
	struct ha *ha;         /* leader election (metaserver/ha); NULL: none, this server always leads */
	uint64_t run_id;       /* random per process, in every HelloReply: clients tell a restart from a reconnect */
	uint64_t next_session; /* the last session id given out */
	bool draining;         /* shutting down: no new connections, no unmounts for the ones that close */
	struct evconnlistener *listener;
	struct list conns; /* struct conn.link */
	/* the port's guards (conn.c, auth.c, tls.c, listener.c) */
	struct list hello_waits;         /* struct conn.hello_link, oldest first: connections not through their hello */
	uint32_t max_connections;        /* ock.mmc.meta.max_connections as RLIMIT_NOFILE allows (fd_budget.c); 0: it */
	uint64_t input_reserved;         /* bytes of partial frames all connections may buffer now */
	struct event *accept_resume_ev;  /* accepting paused on EMFILE / ENFILE: resume */
	uint64_t accept_error_logged_ms; /* at most one accept-error line a second */
	struct rpc_tls *tls;             /* NULL: plain TCP */
	uint64_t reads;                  /* read callbacks so far: the loop's spin sees a request come */
};

#endif

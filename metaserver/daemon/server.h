/*
 * The server the daemon runs: the object store's state and the parts of it the policy and RPC layers own, wired
 * together (struct meta's policy and rpc pointers), with what only the daemon uses. Loop thread only.
 */
#ifndef MMC_SERVER_H
#define MMC_SERVER_H

#include <stddef.h>

#include "meta.h"
#include "meta_policy.h"
#include "meta_rpc.h"

struct event;
struct kvcm;

struct server {
	struct meta meta;
	struct meta_policy policy;
	struct meta_rpc rpc;
	struct kvcm *kvcm;      /* the KV Cache Manager on its HTTP and gRPC ports */
	struct event *sweep_ev; /* the deadline sweep, every SWEEP_MS */
};

/* The server whose state m is (every struct meta of the daemon is a server's). */
static inline struct server *server_of(struct meta *m)
{
	return (struct server *)((char *)m - offsetof(struct server, meta));
}

#endif

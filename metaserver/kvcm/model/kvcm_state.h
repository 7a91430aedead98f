/*
 * The KV Cache Manager's state: one struct, owned by the event-loop thread, reached by every module. The HTTP
 * servers, metrics and injected faults of the layers above are opaque pointers here: the model never looks in.
 */
#ifndef MMC_KVCM_STATE_H
#define MMC_KVCM_STATE_H

#include <stdint.h>

#include "kvcm_conf.h"
#include "kvcm_store.h"
#include "list.h"
#include "model.h"

struct event;
struct event_base;
struct persist;
struct meta;
struct ha;
struct http_server;
struct grpc_server;
struct sessions;
struct deleter;
struct reclaimer;
struct metrics;
struct reporters;
struct faults;
struct accounts;

struct kvcm {
	struct event_base *base;
	struct persist *persist;
	struct meta *meta;
	struct ha *ha; /* leader election (metaserver/ha), NULL: none; the model never looks in */
	struct kvcm_conf conf;
	struct http_server *http, *admin;
	uint16_t http_port, admin_port;
	struct http_server *debug; /* the DebugService on http_port + 3000 (enable_debug_service), else NULL */
	uint16_t debug_port;
	char host[256];
	char node_id[320];

	struct list storages;  /* struct storage.link */
	struct list groups;    /* struct group.link */
	struct hmap instances; /* struct instance.hlink, by id */
	uint64_t next_uid;
	struct list zombie_instances; /* removed, waiting for their deletes */

	struct sessions *sessions;
	struct deleter *deleter;
	struct metrics *metrics;
	struct reporters *reporters;
	struct hmap file_refs;       /* files shared by several blocks: deleted with the last one */
	struct reclaimer *reclaimer; /* model/reclaim.c */
	struct faults *faults;       /* injected by the debug service (api/fault_injection.c); NULL: none yet */
	struct accounts *accounts;   /* model/account.c; NULL: none yet */

	struct kvcm_store
	    store; /* the LMDB tables; a reply to a request that moved store.writes waits for the commit */
	uint64_t rng[2];
	struct grpc_server *grpc, *admin_grpc; /* the gRPC listeners (grpc/); NULL when their port is off */
	uint16_t rpc_port, admin_rpc_port;     /* the ports they bound (0: none) */
	uint32_t grpc_connections;             /* open on both, for /metrics */
	/* without leader election: after a leaderDemote this server leads again, as the only candidate, once the
	 * logical clock reaches this (0: leading) */
	uint64_t demoted_until_ms;
};

/* Seeds the id generator from /dev/urandom (the clock and pid when it cannot be read). */
void kvcm_seed_random(struct kvcm *k);
/* Random lowercase [a-z0-9] text of n chars (ids of locations and write sessions), NUL-terminated. */
void kvcm_random_id(struct kvcm *k, char *out, size_t n);
/* Wall-clock microseconds (create_time, request_id, LRU stamps). */
uint64_t kvcm_now_us(void);
/* Without leader election: whether a leaderDemote still keeps this server from leading. Once its campaign delay
 * has passed the server leads again (the reference's single node re-elects itself, the only candidate). */
bool kvcm_demoted(struct kvcm *k);

#endif

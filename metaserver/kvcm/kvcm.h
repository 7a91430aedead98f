/*
 * The KV Cache Manager (KVCM): the MetaService HTTP/JSON API (kvcm.service.http_port, default 6382) and the
 * admin API (kvcm.service.admin_http_port, default 6492), served from mmc-metaserver's event loop.
 *
 * Life cycle, driven by metaserver/daemon/main.c:
 *   kvcm_conf_use() (the kvcm.* rows of the server's configuration, kvcm_conf.h) -> kvcm_start() -> loop runs
 *   (kvcm_conf_reload() at each SIGHUP) -> kvcm_stop().
 * Loop thread only.
 */
#ifndef MMC_KVCM_H
#define MMC_KVCM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct event_base;
struct persist;
struct meta;
struct kvcm;
struct kvcm_conf;
struct ha;
struct meta_err;

/*
 * Starts the HTTP listeners on base and loads persisted KVCM state from p. meta gives access to the object
 * store (for ST_MMC storages). Writes "http=PORT admin=PORT" (the bound ports) to ready_line.
 * Returns 0 and *out, or MMC_* with *e filled (meta_err.h) where it failed: EXIT_LISTEN for a port that cannot be
 * bound, EXIT_CONFIG for a setting the KVCM refuses, EXIT_INTERNAL for its own resources.
 */
int kvcm_start(struct kvcm **out, struct event_base *base, struct persist *p, struct meta *meta, char *ready_line,
               size_t ready_len, struct meta_err *e);

/*
 * The same in two steps, for a server that may stand by (leader election): kvcm_listen starts the HTTP listeners
 * only (every leader-only call answers SERVER_NOT_LEADER until promoted; ha may be NULL: no election);
 * kvcm_promote loads the persisted state from p once this node leads, exactly as kvcm_start would.
 */
int kvcm_listen(struct kvcm **out, struct event_base *base, struct meta *meta, struct ha *ha, char *ready_line,
                size_t ready_len, struct meta_err *e);
int kvcm_promote(struct kvcm *k, struct persist *p, struct meta_err *e);
/*
 * --check-config and a reload: what kvcm_start and kvcm_listen check of c before they bind (as a standby does when
 * c names a lock), with the same messages: the configured admin and its password file, the binds' exposure, the TLS
 * files. Stored accounts are not read, so a bind that relies on an admin account stored in the data dir fails here
 * and not at the start (a standby refuses it too). Returns 0, or MMC_ERROR with *e filled.
 */
int kvcm_check(const struct kvcm_conf *c, struct meta_err *e);
/* This node's id (kvcm.leader_elector.node_id, or host:admin_port_random). */
const char *kvcm_node_id(const struct kvcm *k);
/* The ports this node's listeners bound: HTTP and gRPC (0: gRPC is off). */
struct kvcm_ports {
	uint16_t http, admin, rpc, admin_rpc;
};
struct kvcm_ports kvcm_ports(const struct kvcm *k);

/* Stops listening and frees everything. NULL is ignored. */
void kvcm_stop(struct kvcm *k);

#endif

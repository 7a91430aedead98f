/*
 * Descriptors against the connection limits. Every accepted socket costs a descriptor, so limits above
 * RLIMIT_NOFILE are a promise the process cannot keep: at EMFILE it could accept no one, not even the operator's
 * check. At start-up, as Redis does with maxclients, the soft limit is raised towards what all the limits need
 * (ock.mmc.meta.max_connections and kvcm.service.max_connections for each of the two HTTP ports); where the hard
 * limit does not allow that, the RPC port's limit is lowered to what the HTTP ports leave, with a warning naming the
 * key. The HTTP ports fit their own limit when they start (at most half of the descriptors: kvcm/http/http_conn.c).
 */
#ifndef MMC_FD_BUDGET_H
#define MMC_FD_BUDGET_H

#include "server_conf.h"

/* Descriptors kept for everything but connections: LMDB, listeners, the log, the KVCM I/O threads' files. */
#define FD_BUDGET_RESERVED 64

/* Raises RLIMIT_NOFILE towards the configured limits; returns the RPC connection limit that fits (c's own, or lower
 * with a warning). The configuration keeps what the operator wrote. Before any listener opens. */
uint32_t fd_budget_fit(const struct meta_conf *c);

#endif

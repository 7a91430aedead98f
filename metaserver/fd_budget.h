/*
 * Descriptors against the connection limits. Every accepted socket costs a descriptor, so limits above
 * RLIMIT_NOFILE are a promise the process cannot keep: at EMFILE it could accept no one, not even the operator's
 * check. At start-up, as Redis does with maxclients, the soft limit is raised towards what the limits need, and
 * where the hard limit does not allow that the limits are lowered to fit, with a warning naming each key.
 */
#ifndef MMC_FD_BUDGET_H
#define MMC_FD_BUDGET_H

#include "server_conf.h"

/* Descriptors kept for everything but connections: LMDB, listeners, the log, the KVCM I/O threads' files. */
#define FD_BUDGET_RESERVED 64

/* Checks ock.mmc.meta.max_connections and kvcm.service.max_connections (for each of the two HTTP ports) against
 * RLIMIT_NOFILE; lowers them in c and in the KVCM configuration when they do not fit. Before any listener opens. */
void fd_budget_apply(struct meta_conf *c);

#endif

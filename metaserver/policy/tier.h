/*
 * The SSD tier: moves of single-replica objects between a local service's DRAM pool and its SSD file, executed by
 * that service (BlobTask) while the loop goes on.
 *   demote  DRAM -> SSD  eviction victims (when the service has SSD room), mmc_evict_keys
 *   promote SSD -> DRAM  a get while DRAM is below ock.mmc.rewarm.dram_watermark, mmc_prefetch_keys
 *   stage   SSD -> DRAM  a get above the watermark: a transient DRAM copy, freed when the reader's lease ends
 * An object's bytes are never freed while a task or a reader uses them: tasks pin the object (busy), and a demoted
 * object's old DRAM range stays with its readers' leases until they end. Loop thread only.
 */
#ifndef MMC_TIER_H
#define MMC_TIER_H

#include <stdbool.h>
#include <stdint.h>

#include "meta.h"

struct key_call;

void tier_init(struct meta *m);
/* Shutdown: forgets tasks and waiting requests (no replies). */
void tier_fini(struct meta *m);

/* True when o lives on SSD. */
bool tier_on_ssd(const struct object *o);
/* Starts demoting eviction victim o to its service's SSD. False when it cannot (no SSD, no room, replicas). */
bool tier_demote_victim(struct meta *m, struct object *o);

/* A GET batch with at least one SSD-resident key: replies (policy_ops) once the SSD reads are done. */
void tier_get(struct meta *m, const struct key_call *call);
/* EVICT (evict true) and PREFETCH batches. */
void tier_move(struct meta *m, const struct key_call *call, bool evict);

/* DRAM was freed (or time passed): SSD reads waiting for room get another try. */
void tier_kick(struct meta *m);

/* Local service svc (NULL: the connection registered none) answered task id; an answer from any other connection is
 * ignored: a task's completion publishes bytes only its service's worker could have moved. */
void tier_task_done(struct meta *m, const struct service *svc, uint64_t id, int result);
/* The session's connection closed: its waiting requests will not be answered. */
void tier_session_closed(struct meta *m, struct session *s);
/* meta.moves_lost: svc will answer none of the tasks sent to it (it is leaving, or its store is back on a new
 * connection and dropped what came on the old one, having ended the move on its disk first), so they fail now and
 * give their reservations back (a leaving service's SSD allocator may be adopted). */
void tier_moves_lost(struct meta *m, struct service *svc);

#endif

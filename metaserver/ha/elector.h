/*
 * Leader election for mmc-metaserver (kvcm.distributed_lock.uri): a thread takes or renews a lease on a
 * distributed lock (lock.h) every loop_interval_ms; the process that holds it leads, the others stand by.
 *
 * The fence. A leader may commit a change only while its lease is certainly still its own. The thread records,
 * on CLOCK_MONOTONIC, the moment it *sent* each successful renewal; the lease is trusted until that moment +
 * lease_ms - margin (margin = max(lease_ms / 5, 2 * loop_interval_ms)). Any thread asks ha_lease_valid() (one
 * atomic load and one clock read), so the persistence writer checks it right before each commit. A process that was
 * stopped (SIGSTOP, a VM pause, a long swap) finds on waking that the monotonic clock moved on while it slept, so
 * its late commits fail before it has even noticed that it lost the lock. The others judge the lease by the
 * wall-clock expiry in the lock (file://) or by the lock store's own TTL (redis://); the assumption is that
 * clocks *advance* at the same rate within the margin (wall clocks of the hosts of one file:// lock are one clock;
 * with redis:// only the rate of the holder's monotonic clock against Redis's matters, not the time of day).
 *
 * Threads: the elector thread drives the lock; the loop thread learns of changes through the callback given to
 * ha_open (called on the loop, from an eventfd) and reads the role with the functions below.
 */
#ifndef MMC_HA_ELECTOR_H
#define MMC_HA_ELECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "lock.h"

struct event_base;
struct ha;

struct ha_opts {
	const char *lock_uri;       /* kvcm.distributed_lock.uri */
	uint32_t lease_ms;          /* kvcm.leader_elector.lease_ms */
	uint32_t loop_interval_ms;  /* kvcm.leader_elector.loop_interval_ms */
	uint32_t campaign_delay_ms; /* after a demotion: do not campaign for this long (updateLeaderElectorConfig) */
	int64_t campaign_after_wall_ms; /* do not campaign before this wall-clock time (a demoted process's restart) */
	const char *lock_password_file; /* kvcm.distributed_lock.password_file; NULL or "": none */
};

/* Opens the lock backend; the thread starts with ha_start. on_change(arg) runs on base's loop whenever the
 * lease is won or lost. Returns 0, or MMC_INVALID_PARAM / MMC_MALLOC_FAILED with a message in err. */
int ha_open(struct ha **out, struct event_base *base, const struct ha_opts *o, void (*on_change)(void *arg), void *arg,
            char *err, size_t errlen);
/* The checks of o that ha_open makes before it opens anything (the lock URI's text, its password file, the loop
 * interval against the lease): also what --check-config runs. Returns 0, or MMC_INVALID_PARAM with a message in err. */
int ha_check(const struct ha_opts *o, char *err, size_t errlen);
/* Who this node is, as written into the lock (set before ha_start). */
void ha_set_self(struct ha *h, const struct ha_holder *self);
int ha_start(struct ha *h);
/* Stops the thread and gives the lock back if held. NULL is ignored. */
void ha_close(struct ha *h);

/* Any thread: this node holds the lease and it has not run out by the monotonic clock (the write fence). */
bool ha_lease_valid(const struct ha *h);
/* The same, as a persist_set_fence callback. */
bool ha_fence(void *h);

/* Loop thread: whether the elector holds the lease (the loop then promotes; once promoted, serves). */
bool ha_holds(const struct ha *h);
/* Loop thread: this node has loaded its state, serves (set by the promotion, cleared by a demotion) and its lease
 * is valid right now: what every gate (RPC, HTTP, checkHealth.is_leader) asks. */
bool ha_serving(const struct ha *h);
void ha_set_serving(struct ha *h, bool on);
/* The loop is loading state to lead with: from now on a lost lease retires this process (it restarts as a standby
 * and never campaigns again as it is). Loop thread. */
void ha_mark_loaded(struct ha *h);

/* The last holder seen in the lock (self when leading); node_id "" when none is known. */
void ha_leader(const struct ha *h, struct ha_holder *out);
const struct ha_holder *ha_self(const struct ha *h);
/* Wall-clock ms until which this node's lease runs (0 when not leading), and of the thread's last loop. */
int64_t ha_self_expiry_wall_ms(const struct ha *h);
int64_t ha_last_loop_wall_ms(const struct ha *h);
/* Wall-clock ms of the last change of the leader seen (info_updated_time). */
int64_t ha_info_updated_wall_ms(const struct ha *h);
uint64_t ha_transitions(const struct ha *h);

/* With a redis:// lock: its key, and the value this node holds it with, so that a Redis metadata store in the same
 * Redis and db can refuse every commit made after another node took the lock (persist_set_redis_fence_key). Returns
 * false for a file:// lock. */
bool ha_lock_redis_key(const struct ha *h, const char **key, char *value, size_t len);

/* leaderDemote: gives the lease up at once (the fence closes before this returns) and does not campaign for
 * campaign_delay_ms. */
void ha_demote(struct ha *h);
uint32_t ha_campaign_delay_ms(const struct ha *h);
/* Wall-clock ms before which this node does not campaign (after a demotion; a restart carries it over). */
int64_t ha_campaign_after_wall_ms(const struct ha *h);
void ha_set_campaign_delay_ms(struct ha *h, uint32_t ms);
uint32_t ha_lease_ms(const struct ha *h);
uint32_t ha_loop_interval_ms(const struct ha *h);

#endif

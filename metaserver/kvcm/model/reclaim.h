/*
 * The cache reclaimer, as the reference's CacheReclaimer with its default Group LRU mode (docs/kvcm.md "Quota and
 * reclaim"). A round looks at every instance group; one whose usage, less what its delete requests still in
 * flight are credited with, is at or over its used_percentage water level (group bytes, bytes of a storage type,
 * or keys against instances x max_key_count) has its instances' least recently written blocks sampled, the
 * oldest picked across the whole group, and their SERVING locations handed to the deleter (after
 * delay_before_delete_ms) in requests of at most kvcm.cache_reclaimer.del_batch_size blocks, the water level
 * checked again before each. A request's bytes and the keys it will delete are credited at once, so that later
 * rounds do not evict again what is already going (no over-eviction), until it completes or its credit times
 * out; pending limits refuse new requests. A round that made progress is followed by the next at once; one that
 * found a group over its level and could do nothing (only WRITING blocks, say) backs off for idle_interval_ms.
 * Loop thread only.
 */
#ifndef MMC_KVCM_RECLAIM_H
#define MMC_KVCM_RECLAIM_H

#include <stdbool.h>
#include <stdint.h>

struct kvcm;
struct evbuffer;

int reclaim_start(struct kvcm *k);
/* Drops the requests still in flight (their deletes go on in the deleter). */
void reclaim_stop(struct kvcm *k);
/* Rounds until one makes no progress: what the reclaimer's timer does, at once (the debug clock's sweep). */
void reclaim_run(struct kvcm *k);
/* Locations handed to the deleter so far. */
uint64_t reclaim_evicted(const struct kvcm *k);

/* The reclaimer's metrics, Prometheus text (mmc_kvcm_cache_reclaimer_*), appended to b. */
void reclaim_metrics_write(struct kvcm *k, struct evbuffer *b);
/*
 * The reference's name (cache_reclaimer.<name>) of one of those metrics, and the factor from its Prometheus value
 * to the reference's unit; NULL for any other name.
 */
const char *reclaim_metric_reference(const char *prometheus_name, double *scale);

#endif

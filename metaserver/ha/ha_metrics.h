/* The leader elector's Prometheus gauges, for /metrics on the admin port (a standby serves them too). */
#ifndef MMC_HA_METRICS_H
#define MMC_HA_METRICS_H

struct evbuffer;
struct ha;

/* Appends mmc_leader, mmc_leader_lease_valid, mmc_leader_transitions_total and mmc_leader_elector_loop_age_seconds.
 * h NULL (no election): this server always leads. */
void ha_metrics_write(const struct ha *h, struct evbuffer *b);

#endif

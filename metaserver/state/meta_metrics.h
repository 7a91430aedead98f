/* The object store's Prometheus metrics, served with the KV Cache Manager's on the admin port's /metrics. */
#ifndef MMC_META_METRICS_H
#define MMC_META_METRICS_H

struct evbuffer;
struct meta;

/* Appends the object store's metrics (mmc_ prefix, base units) in Prometheus text format to b. */
void meta_metrics_write(struct meta *m, struct evbuffer *b);

#endif

/*
 * KVCM metrics: request counts and latency per API, keys and bytes; served as Prometheus text (names prefixed
 * mmc_kvcm_, base units, _total counters, low-cardinality labels) at GET /metrics on the admin port, next to
 * GET /api/healthy.
 */
#ifndef MMC_KVCM_METRICS_H
#define MMC_KVCM_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kvcm;
struct metrics;
struct evhttp_request;

int metrics_new(struct metrics **out);
void metrics_free(struct metrics *m);
/* The slot of an API name (one per name, whichever port serves it); -1 when out of room. */
int metrics_slot(struct metrics *m, const char *api);
void metrics_request(struct metrics *m, int slot, int code, int http_status, uint64_t ns);
void metrics_rejected(struct metrics *m);
/* A request authentication refused: no or wrong credentials (role false: 401), or the wrong role (403). m may be
 * NULL. */
void metrics_auth_refused(struct metrics *m, bool role);
/* A body read by its route's own reader (route_reader) rather than jansson. */
void metrics_fast_read(struct metrics *m);
void metrics_queried(struct metrics *m, size_t keys, size_t hits);
void metrics_written(struct metrics *m, size_t locations, uint64_t bytes);
struct evbuffer;
/* The Prometheus text of GET /metrics, appended to b (getMetrics reads it back as JSON). */
void metrics_text(struct kvcm *k, struct evbuffer *b);
/* Answers GET /metrics and GET /api/healthy; false for other paths. */
bool metrics_serve_get(struct kvcm *k, struct evhttp_request *req, const char *path);

#endif

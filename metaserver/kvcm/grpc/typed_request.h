/*
 * The hot MetaService requests read straight from their protobuf-c messages into the handlers' inputs, the same
 * values that HTTP reads from JSON (api/cache_location.h, write_cache.h, report_event.h) and that the JSON mapping
 * of the message (pb_request_json) would have given them: proto3 defaults read as absent members, the limits of
 * kvcm.service.max_keys_per_request. Strings and arrays are borrowed from the message, which must outlive the
 * input. Only for messages pb_request_plain accepts.
 */
#ifndef MMC_KVCM_TYPED_REQUEST_H
#define MMC_KVCM_TYPED_REQUEST_H

#include "cache_location.h"
#include "meta_service.pb-c.h"
#include "report_event.h"
#include "write_cache.h"

typedef KvCacheManager__Proto__Meta__GetCacheLocationRequest pb_location_request;
typedef KvCacheManager__Proto__Meta__StartWriteCacheRequest pb_write_request;
typedef KvCacheManager__Proto__Meta__FinishWriteCacheRequest pb_finish_request;
typedef KvCacheManager__Proto__Meta__ReportEventRequest pb_report_request;

/* Into a zeroed q. */
void location_query_pb(struct call *c, const pb_location_request *m, struct location_query *q);
void write_request_pb(struct call *c, const pb_write_request *m, struct write_request *in);
void finish_request_pb(struct call *c, const pb_finish_request *m, struct finish_request *in);
void report_request_pb(struct call *c, const pb_report_request *m, struct report_request *in);
/* The events of m into e, as er_events_from_json reads their JSON; MMC_ERROR when out of memory. */
int er_events_from_pb(struct er_events *e, const pb_report_request *m);

#endif

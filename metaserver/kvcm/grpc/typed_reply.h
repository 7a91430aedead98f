/*
 * The hot MetaService replies encoded as protobuf straight from the handlers' results (api/cache_location.h,
 * write_cache.h, report_event.h): the same messages the JSON reply would map to (pb_reply_text), without the JSON.
 * The header (field 1 of every response) is encoded apart, when the call is over (a commit that fails after the
 * handler turns the reply into an error), and goes in front of the fields.
 */
#ifndef MMC_KVCM_TYPED_REPLY_H
#define MMC_KVCM_TYPED_REPLY_H

#include "cache_location.h"
#include "http.h"
#include "pb_wire.h"
#include "report_event.h"
#include "write_cache.h"

/* The CommonResponseHeader, as field 1. */
void pb_header(struct pbw *w, const struct call_header *h);
/* GetCacheLocationResponse's fields after the header: the query's rows. */
void pb_cache_locations(struct pbw *w, struct call *c, const struct location_query *q);
/* StartWriteCacheResponse's and ReportEventResponse's (out a struct pbw). */
void pb_write_reply(void *out, const struct write_reply *r);
void pb_report_reply(void *out, const struct report_reply *r);

#endif

/*
 * reportEvent in steps that do not depend on the transport: the request read into struct report_request (by HTTP
 * from JSON here, by gRPC from the protobuf message; the events as http/report_request.h's struct er_events), the
 * handler, and the reply's fields (struct report_reply) handed to the transport's encoder.
 */
#ifndef MMC_KVCM_REPORT_EVENT_H
#define MMC_KVCM_REPORT_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "report_request.h"

struct report_request {
	const char *host; /* host_ip_port, "" when absent */
	int storage_type;
	size_t n;                       /* events given */
	const struct er_events *events; /* read when 0 < n <= kvcm.service.max_keys_per_request; NULL: out of memory */
	struct er_events own;           /* what the reader read them into, unless another reader had */
	struct jd d;                    /* how reading went */
};

/* The reply's own fields, valid while the encoder runs. */
struct report_reply {
	const int *results; /* item_results: one KC_* code per event when one failed, else none */
	size_t nresults;
	const char *committed_snapshot_version;
	uint64_t retry_after_ms;
	bool snapshot_required;
	const char *extra_info;
};

/* Writes r's fields after the header, into out. */
typedef void report_reply_enc(void *out, const struct report_reply *r);

/* Reads c's JSON body (or what its route's reader made of it) into in. */
void report_request_json(struct call *c, struct report_request *in);
/* Answers reportEvent: the header, and on success or partial failure enc(out, reply). */
void report_event_answer(struct call *c, struct report_request *in, report_reply_enc *enc, void *out);
/* Reads in->n events of a request into in->own, by read(arg, &in->own) (-1: out of memory), when their count is
 * within the limit; sets in->events. */
void report_request_events(struct call *c, struct report_request *in, int (*read)(void *arg, struct er_events *e),
                           void *arg);
void report_request_free(struct report_request *in);

#endif

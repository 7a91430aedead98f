#include "typed_reply.h"

#include "location_json.h"
#include "wire_enums.h"

/* The response messages' field numbers. */
enum {
	F_HEADER = 1,
	F_LOCATION_LOCATIONS = 2, /* GetCacheLocationResponse.locations */
	F_WRITE_SESSION_ID = 2,   /* StartWriteCacheResponse */
	F_WRITE_BLOCK_MASK = 3,
	F_WRITE_LOCATIONS = 4,
	F_REPORT_ITEM_RESULTS = 2, /* ReportEventResponse */
	F_REPORT_COMMITTED = 3,
	F_REPORT_RETRY_AFTER = 4,
	F_REPORT_SNAPSHOT_REQUIRED = 5,
	F_REPORT_EXTRA_INFO = 6,
};

/* An enum as the JSON reply names it and the mapping reads the name back: a value without a name is 0. */
static uint64_t named(const struct enum_desc *e, int v)
{
	return enum_name(e, v) ? (uint64_t)(int64_t)v : 0;
}

/* An ErrorCode: the JSON reply names one it does not know UNKNOWN_ERROR (code_name). */
static uint64_t code(int v)
{
	return (uint64_t)(int64_t)(enum_name(&enum_error_code, v) ? v : KC_UNKNOWN_ERROR);
}

void pb_header(struct pbw *w, const struct call_header *h)
{
	size_t header = pbw_open(w, F_HEADER), status = pbw_open(w, 1);

	pbw_varint_nz(w, 1, code(h->code));
	pbw_str(w, 2, h->message);
	pbw_close(w, status);
	pbw_str(w, 2, h->request_id);
	pbw_close(w, header); /* tracer_result (3) is always "" */
}

/* CacheLocations as fields `field` of the message being written to w. */
struct pb_locs {
	struct pbw *w;
	uint32_t field;
	size_t at; /* the open CacheLocation */
};

static void loc_begin(void *out, int type, unsigned spec_size)
{
	struct pb_locs *o = out;

	o->at = pbw_open(o->w, o->field);
	pbw_varint_nz(o->w, 1, named(&enum_storage_type, type));
	pbw_varint_nz(o->w, 2, spec_size);
}

static void loc_spec(void *out, const char *name, const char *uri)
{
	struct pb_locs *o = out;
	size_t at = pbw_open(o->w, 3);

	pbw_str(o->w, 1, name);
	pbw_str(o->w, 2, uri); /* node_id (3) is always "" */
	pbw_close(o->w, at);
}

static void loc_end(void *out, const char *id, int status, uint64_t create_time_us)
{
	struct pb_locs *o = out;

	pbw_str(o->w, 4, id);
	pbw_str(o->w, 5, enum_name(&enum_cls, status));
	pbw_varint_nz(o->w, 6, create_time_us);
	pbw_close(o->w, o->at);
}

static void loc_oom(void *out)
{
	((struct pb_locs *)out)->w->oom = true;
}

static const struct loc_enc loc_pb = {loc_begin, loc_spec, loc_end, NULL, loc_oom};

void pb_cache_locations(struct pbw *w, struct call *c, const struct location_query *q)
{
	struct pb_locs o = {w, F_LOCATION_LOCATIONS, 0};

	/* hints (3) are always empty, replication_capabilities (4) always 0 */
	cache_location_rows(c, q, &loc_pb, &o);
}

/* A BlockMask as field `field`: the oneof's member is written even when 0. */
static void pb_mask(struct pbw *w, uint32_t field, const struct mask *m)
{
	size_t at = pbw_open(w, field), bools, values;

	if (m->kind == MASK_OFFSET) {
		pbw_varint_field(w, 1, (uint64_t)(int64_t)m->offset);
	} else if (m->kind == MASK_BOOLS) {
		bools = pbw_open(w, 2);
		if (m->nvalues) {
			values = pbw_open(w, 1); /* packed */
			for (size_t i = 0; i < m->nvalues; i++)
				pbw_varint(w, m->values[i]);
			pbw_close(w, values);
		}
		pbw_close(w, bools);
	}
	pbw_close(w, at);
}

void pb_write_reply(void *out, const struct write_reply *r)
{
	struct pbw *w = out;
	struct pb_locs o = {w, F_WRITE_LOCATIONS, 0};

	pbw_str(w, F_WRITE_SESSION_ID, r->session_id);
	pb_mask(w, F_WRITE_BLOCK_MASK, &r->mask);
	for (size_t i = 0; i < r->nlocs; i++)
		loc_put(&loc_pb, &o, r->locs[i], NULL);
}

void pb_report_reply(void *out, const struct report_reply *r)
{
	struct pbw *w = out;
	size_t at;

	if (r->nresults) {
		at = pbw_open(w, F_REPORT_ITEM_RESULTS); /* packed */
		for (size_t i = 0; i < r->nresults; i++)
			pbw_varint(w, code(r->results[i]));
		pbw_close(w, at);
	}
	pbw_str(w, F_REPORT_COMMITTED, r->committed_snapshot_version);
	pbw_varint_nz(w, F_REPORT_RETRY_AFTER, r->retry_after_ms);
	pbw_varint_nz(w, F_REPORT_SNAPSHOT_REQUIRED, r->snapshot_required);
	pbw_str(w, F_REPORT_EXTRA_INFO, r->extra_info);
}

#include "wire.h"

#include <stdlib.h>
#include <string.h>

#include "mmc/mmc.h"
#include "per_key.h"
#include "pb_fields.h"

void wbuf_free(struct wbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

static int wbuf_reserve(struct wbuf *b, size_t need)
{
	uint8_t *d;
	size_t cap;

	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap *= 2;
	d = realloc(b->data, cap);
	if (!d)
		return MMC_MALLOC_FAILED;
	b->data = d;
	b->cap = cap;
	return 0;
}

/* The frame's head: a 4-byte length, Frame.id's tag and up to 10 bytes of id, right before the body's tag. */
#define HEAD_MAX (4 + 1 + 10)

/* Room in b for a body of len bytes after the head's room, with Frame's `body` field tag and length written: returns
 * where the body goes, 0 when it cannot be sent (*rc says why). */
static size_t body_room(struct wbuf *b, uint32_t body, size_t len, int *rc)
{
	size_t at;

	*rc = MMC_INVALID_PARAM;
	if (len > MMC_FRAME_MAX)
		return 0;
	at = HEAD_MAX + varint_len((uint64_t)body << 3 | PB_BYTES) + varint_len(len);
	if (at + len - 4 > MMC_FRAME_MAX)
		return 0;
	*rc = MMC_MALLOC_FAILED;
	if (wbuf_reserve(b, at + len))
		return 0;
	*rc = 0;
	varint_put(varint_put(b->data + HEAD_MAX, (uint64_t)body << 3 | PB_BYTES), len);
	return at;
}

static int encode_pb(struct wbuf *b, uint32_t body, const pb_msgdesc_t *fields, const void *msg, size_t *end)
{
	size_t len, at;
	pb_ostream_t s;
	int rc;

	if (!pb_get_encoded_size(&len, fields, msg))
		return MMC_INVALID_PARAM;
	if (!(at = body_room(b, body, len, &rc)))
		return rc;
	s = pb_ostream_from_buffer(b->data + at, len);
	if (!pb_encode(&s, fields, msg) || s.bytes_written != len)
		return MMC_INTERNAL_ERROR;
	*end = at + len;
	return 0;
}

static int encode_hand(struct wbuf *b, uint32_t body, const struct wire_hand *h, size_t *end)
{
	size_t len = h->len(h->arg), at;
	int rc;

	if (len == SIZE_MAX)
		return MMC_INVALID_PARAM;
	if (!(at = body_room(b, body, len, &rc)))
		return rc;
	if (h->put(b->data + at, h->arg) != b->data + at + len)
		return MMC_INTERNAL_ERROR;
	*end = at + len;
	return 0;
}

int wire_encode_body(struct wbuf *b, uint32_t body, const pb_msgdesc_t *fields, const void *msg)
{
	size_t end = 0;
	int rc = fields ? encode_pb(b, body, fields, msg, &end) : encode_hand(b, body, msg, &end);

	b->start = 0;
	b->len = rc ? 0 : end;
	return rc;
}

void wire_frame_head(struct wbuf *b, uint64_t id)
{
	size_t frame = 1 + varint_len(id) + (b->len - HEAD_MAX);
	uint8_t *p;

	b->start = HEAD_MAX - 5 - varint_len(id);
	p = b->data + b->start;
	for (int i = 0; i < 4; i++)
		*p++ = (uint8_t)(frame >> (8 * i));
	*p++ = PB_TAG(1, PB_VARINT);
	varint_put(p, id);
}

int wire_encode(struct wbuf *b, uint64_t id, uint32_t body, const pb_msgdesc_t *fields, const void *msg)
{
	int rc = wire_encode_body(b, body, fields, msg);

	if (rc == 0)
		wire_frame_head(b, id);
	return rc;
}

int wire_split(const uint8_t *frame, size_t len, uint64_t *id, uint32_t *body, const uint8_t **data, size_t *dlen)
{
	pb_istream_t s = pb_istream_from_buffer(frame, len);
	pb_wire_type_t wt;
	uint32_t tag;
	bool eof;

	*id = 0;
	*body = 0;
	*data = NULL;
	*dlen = 0;
	while (pb_decode_tag(&s, &wt, &tag, &eof)) {
		uint64_t v;

		if (tag == 1 && wt == PB_WT_VARINT) {
			if (!pb_decode_varint(&s, id))
				return MMC_INVALID_PARAM;
		} else if (wt == PB_WT_STRING) {
			if (!pb_decode_varint(&s, &v) || v > s.bytes_left)
				return MMC_INVALID_PARAM;
			*body = tag;
			*data = (const uint8_t *)s.state;
			*dlen = (size_t)v;
			if (!pb_read(&s, NULL, (size_t)v))
				return MMC_INVALID_PARAM;
		} else if (!pb_skip_field(&s, wt)) {
			return MMC_INVALID_PARAM;
		}
	}
	return eof && *body ? 0 : MMC_INVALID_PARAM;
}

/* ---- KeyBatch{items 1, replica_num 2, preferred 3 (packed sint32), flags 4, media 5, lease_ttl_ms 6} ---- */

/* KeyItem{key 1, size 2, value 3 (sint32), token 4, checksum_type 5, checksum 6 (fixed32), lease 7}: one item's
 * fields. */
struct item {
	const char *key;
	size_t klen, len; /* the key's bytes; the item's */
	uint64_t size, value, token;
	uint32_t ck_type, ck, lease;
};

static void item_of(const struct wire_items *it, size_t i, struct item *f)
{
	size_t k = it->index ? it->index[i] : i;

	f->key = it->keys[k];
	f->klen = strlen(f->key);
	f->size = it->sizes ? PER_KEY(it->sizes, k, it->stride) : 0;
	f->value = it->values ? pb_zigzag32(PER_KEY(it->values, k, it->stride)) : 0;
	f->token = it->tokens ? PER_KEY(it->tokens, k, it->stride) : 0;
	f->ck_type = it->checksums ? PER_KEY(it->checksums, k, it->stride).type : 0;
	f->ck = it->checksums ? PER_KEY(it->checksums, k, it->stride).value : 0;
	f->lease = it->leases ? PER_KEY(it->leases, k, it->stride) : 0;
	f->len = pb_str_len(f->klen) + pb_field_len(f->size) + pb_field_len(f->value) + pb_field_len(f->token) +
	         pb_field_len(f->ck_type) + pb_fixed32_len(f->ck) + pb_field_len(f->lease);
}

static size_t preferred_len(const mmc_KeyBatch *req)
{
	size_t n = 0;

	for (pb_size_t i = 0; i < req->preferred_count; i++)
		n += varint_len(pb_zigzag32(req->preferred[i]));
	return n;
}

static size_t key_batch_len(const void *arg)
{
	const struct wire_key_batch *kb = arg;
	const mmc_KeyBatch *req = kb->req;
	size_t n = 0, pref = preferred_len(req);

	for (size_t i = 0; kb->items && i < kb->items->n; i++) {
		struct item f;

		item_of(kb->items, i, &f);
		if (f.klen > MMC_WIRE_KEY_MAX)
			return SIZE_MAX; /* as nanopb's KeyItem.key (max_size 256) */
		n += pb_sub_len(f.len);
	}
	return n + pb_field_len(req->replica_num) + (pref ? pb_sub_len(pref) : 0) + pb_field_len(req->flags) +
	       pb_field_len(req->media) + pb_field_len(req->lease_ttl_ms);
}

static uint8_t *key_batch_put(uint8_t *p, const void *arg)
{
	const struct wire_key_batch *kb = arg;
	const mmc_KeyBatch *req = kb->req;
	size_t pref = preferred_len(req);

	for (size_t i = 0; kb->items && i < kb->items->n; i++) {
		struct item f;

		item_of(kb->items, i, &f);
		p = pb_put_sub(p, 0x0a, f.len);
		p = pb_put_str(p, 0x0a, f.key, f.klen);
		p = pb_put_field(p, 0x10, f.size);
		p = pb_put_field(p, 0x18, f.value);
		p = pb_put_field(p, 0x20, f.token);
		p = pb_put_field(p, 0x28, f.ck_type);
		p = pb_put_fixed32(p, 0x35, f.ck);
		p = pb_put_field(p, 0x38, f.lease);
	}
	p = pb_put_field(p, 0x10, req->replica_num);
	if (pref) {
		p = pb_put_sub(p, 0x1a, pref);
		for (pb_size_t i = 0; i < req->preferred_count; i++)
			p = varint_put(p, pb_zigzag32(req->preferred[i]));
	}
	p = pb_put_field(p, 0x20, req->flags);
	p = pb_put_field(p, 0x28, req->media);
	return pb_put_field(p, 0x30, req->lease_ttl_ms);
}

void wire_key_batch_init(struct wire_key_batch *kb, const mmc_KeyBatch *req, const struct wire_items *items)
{
	kb->hand = (struct wire_hand){key_batch_len, key_batch_put, kb};
	kb->req = req;
	kb->items = items;
}

/* ---- KeyBatchReply{result 1 (sint32), items 2} ---- */

/* A field the reader did not take: one of a later version (a number past the known ones) is skipped; a known one in
 * another wire type is a reply protobuf-c and nanopb refuse, and would read as its default (a result of 0: success). */
static void skip_later(struct pb_rd *r, uint64_t tag, uint64_t known)
{
	if ((tag >> 3) <= known)
		r->bad = true;
	else
		pb_rd_skip(r, tag);
}

/* Blob{rank 1, incarnation 2, media 3, offset 4, state 5} */
static void blob_parse(struct pb_rd *r, mmc_Blob *b)
{
	while (!r->bad && r->p < r->end) {
		uint64_t tag = pb_rd_tag(r);

		switch (tag) {
		case PB_TAG(1, PB_VARINT):
			b->rank = pb_rd_u32(r);
			break;
		case PB_TAG(2, PB_VARINT):
			b->incarnation = pb_rd_varint(r);
			break;
		case PB_TAG(3, PB_VARINT):
			b->media = pb_rd_u32(r);
			break;
		case PB_TAG(4, PB_VARINT):
			b->offset = pb_rd_varint(r);
			break;
		case PB_TAG(5, PB_VARINT):
			b->state = pb_rd_u32(r);
			break;
		default:
			skip_later(r, tag, 5);
		}
	}
}

/* KeyResult{result 1 (sint32), size 2, blobs 3, lease_ms 4, token 5, checksum_type 6, checksum 7 (fixed32)} */
static void result_parse(struct pb_rd *r, mmc_KeyResult *k)
{
	static const mmc_Blob blob_init = mmc_Blob_init_zero;

	while (!r->bad && r->p < r->end) {
		uint64_t tag = pb_rd_tag(r);
		struct pb_rd s;

		switch (tag) {
		case PB_TAG(1, PB_VARINT):
			k->result = pb_rd_s32(r);
			break;
		case PB_TAG(2, PB_VARINT):
			k->size = pb_rd_varint(r);
			break;
		case PB_TAG(3, PB_BYTES):
			s = pb_rd_sub(r);
			if (r->bad || k->blobs_count >= sizeof(k->blobs) / sizeof(k->blobs[0])) {
				r->bad = true;
				break;
			}
			k->blobs[k->blobs_count] = blob_init;
			blob_parse(&s, &k->blobs[k->blobs_count++]);
			r->bad |= s.bad;
			break;
		case PB_TAG(4, PB_VARINT):
			k->lease_ms = pb_rd_varint(r);
			break;
		case PB_TAG(5, PB_VARINT):
			k->token = pb_rd_varint(r);
			break;
		case PB_TAG(6, PB_VARINT):
			k->checksum_type = pb_rd_u32(r);
			break;
		case PB_TAG(7, PB_FIXED32):
			k->checksum = pb_rd_fixed32(r);
			break;
		case PB_TAG(8, PB_VARINT):
			k->lease = pb_rd_u32(r);
			break;
		default:
			skip_later(r, tag, 8);
		}
	}
}

int wire_decode_key_reply(const uint8_t *data, size_t len, struct wire_results *sink, int32_t *result)
{
	struct pb_rd r = {data, data + len, false};

	sink->count = 0;
	*result = 0;
	while (!r.bad && r.p < r.end) {
		uint64_t tag = pb_rd_tag(&r);

		if (tag == PB_TAG(1, PB_VARINT)) {
			*result = pb_rd_s32(&r);
		} else if (tag == PB_TAG(2, PB_BYTES)) {
			mmc_KeyResult k = mmc_KeyResult_init_zero;
			struct pb_rd s = pb_rd_sub(&r);

			if (r.bad || sink->count >= sink->max) {
				r.bad = true;
				break;
			}
			result_parse(&s, &k);
			r.bad |= s.bad || !sink->fn(sink->arg, sink->count++, &k);
		} else {
			skip_later(&r, tag, 2);
		}
	}
	return r.bad ? MMC_INVALID_PARAM : 0;
}

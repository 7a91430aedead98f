#include "key_codec.h"

#include <string.h>

#include "varint.h"
#include "wire_limits.h"

/* ---- protobuf's varints ---- */

static uint32_t zigzag32(int32_t v)
{
	return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
}

/* A field: its tag's byte (numbers below 16), then its value; left out when 0, as proto3 does. */
static size_t field_len(uint64_t v)
{
	return v ? 1 + varint_len(v) : 0;
}

static uint8_t *put_field(uint8_t *p, uint8_t tag, uint64_t v)
{
	if (!v)
		return p;
	*p++ = tag;
	return varint_put(p, v);
}

/* ---- KeyBatchReply ---- */

/* Blob{rank 1, incarnation 2, media 3, offset 4, state 5} */
static size_t blob_len(const struct key_result *r, uint32_t i)
{
	return field_len(r->blobs[i].rank) + field_len(r->blobs[i].incarnation) + field_len(r->blobs[i].media) +
	       field_len(r->blobs[i].offset) + field_len(r->blobs[i].state);
}

uint8_t *key_result_put(uint8_t *p, const struct key_result *r)
{
	size_t blen[MMC_WIRE_REPLICAS], len;
	uint32_t nblobs = r->nblobs < MMC_WIRE_REPLICAS ? r->nblobs : MMC_WIRE_REPLICAS;

	/* KeyResult{result 1 (sint32), size 2, blobs 3, lease_ms 4, token 5, checksum_type 6, checksum 7 (fixed32)} */
	len = field_len(zigzag32(r->result)) + field_len(r->size) + field_len(r->lease_ms) + field_len(r->token) +
	      field_len(r->checksum_type) + (r->checksum ? 5 : 0);
	for (uint32_t i = 0; i < nblobs; i++) {
		blen[i] = blob_len(r, i);
		len += 1 + varint_len(blen[i]) + blen[i];
	}
	*p++ = 0x12; /* KeyBatchReply.items */
	p = varint_put(p, len);
	p = put_field(p, 0x08, zigzag32(r->result));
	p = put_field(p, 0x10, r->size);
	for (uint32_t i = 0; i < nblobs; i++) {
		*p++ = 0x1a;
		p = varint_put(p, blen[i]);
		p = put_field(p, 0x08, r->blobs[i].rank);
		p = put_field(p, 0x10, r->blobs[i].incarnation);
		p = put_field(p, 0x18, r->blobs[i].media);
		p = put_field(p, 0x20, r->blobs[i].offset);
		p = put_field(p, 0x28, r->blobs[i].state);
	}
	p = put_field(p, 0x20, r->lease_ms);
	p = put_field(p, 0x28, r->token);
	p = put_field(p, 0x30, r->checksum_type);
	if (r->checksum) {
		*p++ = 0x3d;
		for (int b = 0; b < 4; b++)
			*p++ = (uint8_t)(r->checksum >> (8 * b));
	}
	return p;
}

size_t key_reply_head(uint8_t *head, uint64_t id, int32_t result, size_t items_len)
{
	size_t body = field_len(zigzag32(result)) + items_len;
	uint8_t *p = put_field(head, 0x08, id); /* Frame.id */

	p = varint_put(p, (uint64_t)MMC__FRAME__BODY_KEY_REPLY << 3 | 2);
	p = varint_put(p, body);
	p = put_field(p, 0x08, zigzag32(result)); /* KeyBatchReply.result */
	return (size_t)(p - head);
}

/* ---- KeyBatch requests ---- */

/* A bounded reader; any read past the end or of a malformed varint sets bad. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t get_varint(struct rd *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
		uint8_t b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

/* A uint32 field: a value that does not fit is left to protobuf-c (which keeps its low bits). */
static uint32_t get_u32(struct rd *r)
{
	uint64_t v = get_varint(r);

	r->bad |= v > UINT32_MAX;
	return (uint32_t)v;
}

static int32_t get_s32(struct rd *r)
{
	uint32_t v = get_u32(r);

	return (int32_t)((v >> 1) ^ (uint32_t) - (int32_t)(v & 1));
}

/* A length-delimited field's bytes. */
static struct rd get_sub(struct rd *r)
{
	uint64_t n = get_varint(r);
	struct rd s = {r->p, r->p, true};

	if (r->bad || n > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		return s;
	}
	s.end = r->p + n;
	s.bad = false;
	r->p += n;
	return s;
}

/* Field numbers and wire types as (number << 3 | type). */
#define TAG(n, t) ((uint64_t)(n) << 3 | (t))
enum { VARINT = 0, FIXED64 = 1, BYTES = 2, FIXED32 = 5 };

static void item_parse(struct rd *r, struct arena *a, Mmc__KeyItem *it)
{
	while (!r->bad && r->p < r->end) {
		uint64_t tag = get_varint(r);

		switch (tag) {
		case TAG(1, BYTES): {
			struct rd s = get_sub(r);
			char *k = r->bad ? NULL : arena_alloc(a, (size_t)(s.end - s.p) + 1);

			if (!k) {
				r->bad = true;
				break;
			}
			memcpy(k, s.p, (size_t)(s.end - s.p));
			k[s.end - s.p] = '\0';
			it->key = k;
			break;
		}
		case TAG(2, VARINT):
			it->size = get_varint(r);
			break;
		case TAG(3, VARINT):
			it->value = get_s32(r);
			break;
		case TAG(4, VARINT):
			it->token = get_varint(r);
			break;
		case TAG(5, VARINT):
			it->checksum_type = get_u32(r);
			break;
		case TAG(6, FIXED32):
			if (r->end - r->p < 4) {
				r->bad = true;
				break;
			}
			it->checksum = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
			               (uint32_t)r->p[3] << 24;
			r->p += 4;
			break;
		default: /* another field or wire type: protobuf-c's business */
			r->bad = true;
		}
	}
}

/* KeyBatch{items 1, replica_num 2, preferred 3 (sint32, packed or not), flags 4, media 5, lease_ttl_ms 6}: counts
 * items and preferred entries (fill false), or fills the arrays a first pass sized (fill true). false: bytes to
 * leave to protobuf-c. */
static bool batch_parse(struct rd r, struct arena *a, Mmc__KeyBatch *kb, bool fill)
{
	static const Mmc__KeyItem item_init = MMC__KEY_ITEM__INIT;
	size_t ni = 0, np = 0;

	while (!r.bad && r.p < r.end) {
		uint64_t tag = get_varint(&r);

		switch (tag) {
		case TAG(1, BYTES): {
			struct rd s = get_sub(&r);

			if (fill && !r.bad) {
				*kb->items[ni] = item_init;
				item_parse(&s, a, kb->items[ni]);
				r.bad |= s.bad;
			}
			ni++;
			break;
		}
		case TAG(2, VARINT):
			kb->replica_num = get_u32(&r);
			break;
		case TAG(3, VARINT): {
			int32_t v = get_s32(&r);

			if (fill)
				kb->preferred[np] = v;
			np++;
			break;
		}
		case TAG(3, BYTES): {
			struct rd s = get_sub(&r);

			while (!s.bad && s.p < s.end) {
				int32_t v = get_s32(&s);

				if (fill && !s.bad)
					kb->preferred[np] = v;
				np += !s.bad;
			}
			r.bad |= s.bad;
			break;
		}
		case TAG(4, VARINT):
			kb->flags = get_u32(&r);
			break;
		case TAG(5, VARINT):
			kb->media = get_u32(&r);
			break;
		case TAG(6, VARINT):
			kb->lease_ttl_ms = get_varint(&r);
			break;
		default:
			r.bad = true;
		}
	}
	kb->n_items = ni;
	kb->n_preferred = np;
	return !r.bad;
}

/* The body's place in Frame for each KeyBatch body case (alloc 20 .. prefetch 32). */
static Mmc__KeyBatch **body_slot(Mmc__Frame *f)
{
	switch (f->body_case) {
	case MMC__FRAME__BODY_ALLOC:
		return &f->alloc;
	case MMC__FRAME__BODY_COMMIT:
		return &f->commit;
	case MMC__FRAME__BODY_GET:
		return &f->get;
	case MMC__FRAME__BODY_RELEASE:
		return &f->release;
	case MMC__FRAME__BODY_REMOVE:
		return &f->remove;
	case MMC__FRAME__BODY_EXIST:
		return &f->exist;
	case MMC__FRAME__BODY_QUERY:
		return &f->query;
	case MMC__FRAME__BODY_ADD_LEASE:
		return &f->add_lease;
	case MMC__FRAME__BODY_REMOVE_LEASE:
		return &f->remove_lease;
	case MMC__FRAME__BODY_MALLOC:
		return &f->malloc;
	case MMC__FRAME__BODY_WRITE_FINISH:
		return &f->write_finish;
	case MMC__FRAME__BODY_EVICT:
		return &f->evict;
	case MMC__FRAME__BODY_PREFETCH:
		return &f->prefetch;
	default:
		return NULL;
	}
}

/* The arrays of kb, from the counts of a first pass. */
static bool batch_arrays(struct arena *a, Mmc__KeyBatch *kb)
{
	Mmc__KeyItem *items = arena_alloc(a, (kb->n_items ? kb->n_items : 1) * sizeof(*items));

	kb->items = arena_alloc(a, (kb->n_items ? kb->n_items : 1) * sizeof(*kb->items));
	kb->preferred = arena_alloc(a, (kb->n_preferred ? kb->n_preferred : 1) * sizeof(*kb->preferred));
	if (!items || !kb->items || !kb->preferred)
		return false;
	for (size_t i = 0; i < kb->n_items; i++)
		kb->items[i] = &items[i];
	if (!kb->n_items)
		kb->items = NULL;
	if (!kb->n_preferred)
		kb->preferred = NULL;
	return true;
}

Mmc__Frame *key_frame_decode(struct arena *a, const uint8_t *p, size_t len)
{
	static const Mmc__Frame frame_init = MMC__FRAME__INIT;
	static const Mmc__KeyBatch batch_init = MMC__KEY_BATCH__INIT;
	struct rd r = {p, p + len, false}, body = {NULL, NULL, true};
	Mmc__Frame *f = arena_alloc(a, sizeof(*f));
	Mmc__KeyBatch *kb = arena_alloc(a, sizeof(*kb)), **slot;

	if (!f || !kb)
		return NULL;
	*f = frame_init;
	while (!r.bad && r.p < r.end) {
		uint64_t tag = get_varint(&r);

		if (tag == TAG(1, VARINT)) {
			f->id = get_varint(&r);
		} else if ((tag & 7) == BYTES && f->body_case == MMC__FRAME__BODY__NOT_SET) {
			f->body_case = (Mmc__Frame__BodyCase)(tag >> 3);
			body = get_sub(&r);
			r.bad |= !body_slot(f);
		} else {
			r.bad = true; /* a second body, or a field this decoder leaves to protobuf-c */
		}
	}
	if (r.bad || body.bad)
		return NULL;
	*kb = batch_init;
	if (!batch_parse(body, a, kb, false) || !batch_arrays(a, kb) || !batch_parse(body, a, kb, true))
		return NULL;
	slot = body_slot(f);
	*slot = kb;
	return f;
}

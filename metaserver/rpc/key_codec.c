#include "key_codec.h"

#include <string.h>

#include "pb_fields.h"
#include "wire_limits.h"

/* ---- KeyBatchReply ---- */

/* Blob: three 32-bit and two 64-bit varint fields, each with its one-byte tag */
_Static_assert(3 * (1 + 5) + 2 * (1 + 10) < 0x80, "a Blob's length takes one byte");
/* KeyResult: tag and length, result, checksum_type and lease (32-bit), size, lease_ms and token (64-bit), the blobs
 * with their tags and lengths, checksum (fixed32) */
_Static_assert(1 + 2 + 3 * (1 + 5) + 3 * (1 + 10) + MMC_WIRE_REPLICAS * (2 + 40) + 5 <= KEY_RESULT_MAX,
               "KEY_RESULT_MAX holds the largest KeyResult");

/*
 * A sub-message is written before its length is known, after one byte left for that length: a Blob is at most 40
 * bytes (five varint fields), a KeyResult passes 127 only with several blobs of large offsets, and then its bytes
 * move up by the length's extra bytes (KEY_RESULT_MAX leaves room for them). One pass, not a sizing pass and a
 * writing pass: the sizing took as long as the writing.
 */
static uint8_t *sub_close(uint8_t *len_at, uint8_t *end)
{
	size_t n = (size_t)(end - len_at - 1), extra;

	if (n < 0x80) {
		*len_at = (uint8_t)n;
		return end;
	}
	extra = varint_len(n) - 1;
	memmove(len_at + 1 + extra, len_at + 1, n);
	varint_put(len_at, n);
	return end + extra;
}

uint8_t *key_result_put(uint8_t *p, const struct key_result *r)
{
	uint32_t nblobs = r->nblobs < MMC_WIRE_REPLICAS ? r->nblobs : MMC_WIRE_REPLICAS;
	uint8_t *item;

	/* KeyResult{result 1 (sint32), size 2, blobs 3, lease_ms 4, token 5, checksum_type 6, checksum 7 (fixed32),
	 * lease 8} */
	*p++ = 0x12; /* KeyBatchReply.items */
	item = p++;
	p = pb_put_field(p, 0x08, pb_zigzag32(r->result));
	p = pb_put_field(p, 0x10, r->size);
	for (uint32_t i = 0; i < nblobs; i++) {
		uint8_t *blob;

		/* Blob{rank 1, incarnation 2, media 3, offset 4, state 5} */
		*p++ = 0x1a;
		blob = p++;
		p = pb_put_field(p, 0x08, r->blobs[i].rank);
		p = pb_put_field(p, 0x10, r->blobs[i].incarnation);
		p = pb_put_field(p, 0x18, r->blobs[i].media);
		p = pb_put_field(p, 0x20, r->blobs[i].offset);
		p = pb_put_field(p, 0x28, r->blobs[i].state);
		*blob = (uint8_t)(p - blob - 1);
	}
	p = pb_put_field(p, 0x20, r->lease_ms);
	p = pb_put_field(p, 0x28, r->token);
	p = pb_put_field(p, 0x30, r->checksum_type);
	p = pb_put_fixed32(p, 0x3d, r->checksum);
	p = pb_put_field(p, 0x40, r->lease);
	return sub_close(item, p);
}

uint8_t *key_result_code_put(uint8_t *p, int32_t result)
{
	uint8_t *item;

	*p++ = 0x12; /* KeyBatchReply.items */
	item = p++;
	p = pb_put_field(p, 0x08, pb_zigzag32(result)); /* KeyResult.result: a tag and at most five bytes */
	*item = (uint8_t)(p - item - 1);
	return p;
}

size_t key_reply_head(uint8_t *head, uint64_t id, int32_t result, size_t items_len)
{
	size_t body = pb_field_len(pb_zigzag32(result)) + items_len;
	uint8_t *p = pb_put_field(head, 0x08, id); /* Frame.id */

	p = varint_put(p, (uint64_t)MMC__FRAME__BODY_KEY_REPLY << 3 | 2);
	p = varint_put(p, body);
	p = pb_put_field(p, 0x08, pb_zigzag32(result)); /* KeyBatchReply.result */
	return (size_t)(p - head);
}

/* ---- KeyBatch requests ---- */

/* A key's bytes (s) copied to *keys and NUL-terminated; *keys moves past them. Bytes holding a NUL give "", which
 * every operation refuses (MMC_INVALID_PARAM): read as a C string they would name another key, their prefix. */
static char *key_copy(const struct pb_rd *s, char **keys)
{
	char *key = *keys;
	size_t n = (size_t)(s->end - s->p);

	if (memchr(s->p, '\0', n))
		n = 0;
	memcpy(key, s->p, n);
	key[n] = '\0';
	*keys += n + 1;
	return key;
}

/* keys: where the item's key is copied and NUL-terminated, moved past it. */
static void item_parse(struct pb_rd *r, char **keys, Mmc__KeyItem *it)
{
	while (!r->bad && r->p < r->end) {
		uint64_t tag = pb_rd_tag(r);

		switch (tag) {
		case PB_TAG(1, PB_BYTES): {
			struct pb_rd s = pb_rd_sub(r);

			if (!r->bad)
				it->key = key_copy(&s, keys);
			break;
		}
		case PB_TAG(2, PB_VARINT):
			it->size = pb_rd_varint(r);
			break;
		case PB_TAG(3, PB_VARINT):
			it->value = pb_rd_s32(r);
			break;
		case PB_TAG(4, PB_VARINT):
			it->token = pb_rd_varint(r);
			break;
		case PB_TAG(5, PB_VARINT):
			it->checksum_type = pb_rd_u32(r);
			break;
		case PB_TAG(6, PB_FIXED32):
			it->checksum = pb_rd_fixed32(r);
			break;
		case PB_TAG(7, PB_VARINT):
			it->lease = pb_rd_u32(r);
			break;
		default: /* another field or wire type: protobuf-c's business */
			r->bad = true;
		}
	}
}

/* KeyBatch{items 1, replica_num 2, preferred 3 (sint32, packed or not), flags 4, media 5, lease_ttl_ms 6}: counts
 * items and preferred entries (keys NULL), or fills the arrays a first pass sized and copies the keys to *keys.
 * false: bytes to leave to protobuf-c. */
static bool batch_parse(struct pb_rd r, char **keys, Mmc__KeyBatch *kb)
{
	bool fill = keys != NULL;
	static const Mmc__KeyItem item_init = MMC__KEY_ITEM__INIT;
	size_t ni = 0, np = 0;

	while (!r.bad && r.p < r.end) {
		uint64_t tag = pb_rd_tag(&r);

		switch (tag) {
		case PB_TAG(1, PB_BYTES): {
			struct pb_rd s = pb_rd_sub(&r);

			if (fill && !r.bad) {
				*kb->items[ni] = item_init;
				item_parse(&s, keys, kb->items[ni]);
				r.bad |= s.bad;
			}
			/* more than a batch may hold: nothing is sized for them (key_frame_scan refuses the frame) */
			r.bad |= ++ni > MMC_WIRE_KEYS_MAX;
			break;
		}
		case PB_TAG(2, PB_VARINT):
			kb->replica_num = pb_rd_u32(&r);
			break;
		case PB_TAG(3, PB_VARINT): {
			int32_t v = pb_rd_s32(&r);

			if (fill)
				kb->preferred[np] = v;
			np++;
			break;
		}
		case PB_TAG(3, PB_BYTES): {
			struct pb_rd s = pb_rd_sub(&r);

			while (!s.bad && s.p < s.end) {
				int32_t v = pb_rd_s32(&s);

				if (fill && !s.bad)
					kb->preferred[np] = v;
				np += !s.bad;
			}
			r.bad |= s.bad;
			break;
		}
		case PB_TAG(4, PB_VARINT):
			kb->flags = pb_rd_u32(&r);
			break;
		case PB_TAG(5, PB_VARINT):
			kb->media = pb_rd_u32(&r);
			break;
		case PB_TAG(6, PB_VARINT):
			kb->lease_ttl_ms = pb_rd_varint(&r);
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

/* The arrays of kb, from the counts of a first pass, and one block for its keys (*keys): a key of n bytes takes
 * n + 1 with its NUL, and at least n + 2 of the body (its tag and length), so the body's length is enough. */
static bool batch_arrays(struct arena *a, Mmc__KeyBatch *kb, size_t body_len, char **keys)
{
	Mmc__KeyItem *items = arena_alloc(a, (kb->n_items ? kb->n_items : 1) * sizeof(*items));

	*keys = arena_alloc(a, body_len ? body_len : 1);
	kb->items = arena_alloc(a, (kb->n_items ? kb->n_items : 1) * sizeof(*kb->items));
	kb->preferred = arena_alloc(a, (kb->n_preferred ? kb->n_preferred : 1) * sizeof(*kb->preferred));
	if (!items || !*keys || !kb->items || !kb->preferred)
		return false;
	for (size_t i = 0; i < kb->n_items; i++)
		kb->items[i] = &items[i];
	if (!kb->n_items)
		kb->items = NULL;
	if (!kb->n_preferred)
		kb->preferred = NULL;
	return true;
}

/* A KeyBatch body: a counting pass, the arrays, a filling pass. */
static Mmc__KeyBatch *batch_decode(struct arena *a, struct pb_rd body)
{
	static const Mmc__KeyBatch batch_init = MMC__KEY_BATCH__INIT;
	Mmc__KeyBatch *kb = arena_alloc(a, sizeof(*kb));
	char *keys;

	if (!kb)
		return NULL;
	*kb = batch_init;
	if (!batch_parse(body, NULL, kb) || !batch_arrays(a, kb, (size_t)(body.end - body.p), &keys) ||
	    !batch_parse(body, &keys, kb))
		return NULL;
	return kb;
}

/* ---- PutBatch requests ---- */

/* PutPlace{extent 1, rank 2, incarnation 3, offset 4} */
static void place_parse(struct pb_rd *r, Mmc__PutPlace *pl)
{
	while (!r->bad && r->p < r->end) {
		uint64_t tag = pb_rd_tag(r);

		switch (tag) {
		case PB_TAG(1, PB_VARINT):
			pl->extent = pb_rd_varint(r);
			break;
		case PB_TAG(2, PB_VARINT):
			pl->rank = pb_rd_u32(r);
			break;
		case PB_TAG(3, PB_VARINT):
			pl->incarnation = pb_rd_varint(r);
			break;
		case PB_TAG(4, PB_VARINT):
			pl->offset = pb_rd_varint(r);
			break;
		default:
			r->bad = true;
		}
	}
}

/* An item's places, from pl[n] into the arena as protobuf-c lays them out: an array of pointers to each. */
static bool places_keep(struct arena *a, Mmc__PutItem *it, const Mmc__PutPlace *pl, size_t n)
{
	Mmc__PutPlace *copy, **ptrs;

	if (!n)
		return true;
	copy = arena_alloc(a, n * sizeof(*copy));
	ptrs = arena_alloc(a, n * sizeof(*ptrs));
	if (!copy || !ptrs)
		return false;
	for (size_t j = 0; j < n; j++) {
		copy[j] = pl[j];
		ptrs[j] = &copy[j];
	}
	it->places = ptrs;
	it->n_places = n;
	return true;
}

/*
 * PutItem{key 1, size 2, checksum_type 3, checksum 4 (fixed32), places 5}, its key copied to *keys. An item of more
 * places than a put may name is left to protobuf-c (and then refused), so that one pass needs no count of them.
 */
static void put_item_parse(struct arena *a, struct pb_rd *r, char **keys, Mmc__PutItem *it)
{
	static const Mmc__PutPlace place_init = MMC__PUT_PLACE__INIT;
	Mmc__PutPlace pl[MMC_WIRE_REPLICAS];
	size_t n = 0;

	while (!r->bad && r->p < r->end) {
		uint64_t tag = pb_rd_tag(r);

		switch (tag) {
		case PB_TAG(1, PB_BYTES): {
			struct pb_rd s = pb_rd_sub(r);

			if (!r->bad)
				it->key = key_copy(&s, keys);
			break;
		}
		case PB_TAG(2, PB_VARINT):
			it->size = pb_rd_varint(r);
			break;
		case PB_TAG(3, PB_VARINT):
			it->checksum_type = pb_rd_u32(r);
			break;
		case PB_TAG(4, PB_FIXED32):
			it->checksum = pb_rd_fixed32(r);
			break;
		case PB_TAG(5, PB_BYTES): {
			struct pb_rd s = pb_rd_sub(r);

			if (r->bad || n == MMC_WIRE_REPLICAS) {
				r->bad = true;
				break;
			}
			pl[n] = place_init;
			place_parse(&s, &pl[n++]);
			r->bad |= s.bad;
			break;
		}
		default:
			r->bad = true;
		}
	}
	r->bad |= !places_keep(a, it, pl, n);
}

/* The number of items of a PutBatch{items 1}, their bytes not read; SIZE_MAX: bytes to leave to protobuf-c. */
static size_t put_count(struct pb_rd r)
{
	size_t n = 0;

	while (!r.bad && r.p < r.end) {
		r.bad |= pb_rd_tag(&r) != PB_TAG(1, PB_BYTES);
		pb_rd_sub(&r);
		r.bad |= ++n > MMC_WIRE_KEYS_MAX; /* as in batch_parse */
	}
	return r.bad ? SIZE_MAX : n;
}

/* A PutBatch body: its items counted, then read; the keys' block is the body's length (a key of n bytes takes
 * n + 2 of it). */
static Mmc__PutBatch *put_decode(struct arena *a, struct pb_rd body)
{
	static const Mmc__PutBatch put_init = MMC__PUT_BATCH__INIT;
	static const Mmc__PutItem item_init = MMC__PUT_ITEM__INIT;
	size_t n = put_count(body);
	Mmc__PutBatch *pb;
	Mmc__PutItem *items;
	char *keys;

	if (n == SIZE_MAX || !(pb = arena_alloc(a, sizeof(*pb))))
		return NULL;
	*pb = put_init;
	if (n == 0)
		return pb;
	items = arena_alloc(a, n * sizeof(*items));
	keys = arena_alloc(a, (size_t)(body.end - body.p));
	if (!items || !keys || !(pb->items = arena_alloc(a, n * sizeof(*pb->items))))
		return NULL;
	for (pb->n_items = 0; pb->n_items < n; pb->n_items++) {
		struct pb_rd s;

		pb_rd_tag(&body); /* the tag put_count read */
		s = pb_rd_sub(&body);
		items[pb->n_items] = item_init;
		pb->items[pb->n_items] = &items[pb->n_items];
		put_item_parse(a, &s, &keys, &items[pb->n_items]);
		if (s.bad)
			return NULL;
	}
	return pb;
}

Mmc__Frame *key_frame_decode(struct arena *a, const uint8_t *p, size_t len)
{
	static const Mmc__Frame frame_init = MMC__FRAME__INIT;
	struct pb_rd r = {p, p + len, false}, body = {NULL, NULL, true};
	Mmc__Frame *f = arena_alloc(a, sizeof(*f));
	Mmc__KeyBatch **slot;

	if (!f)
		return NULL;
	*f = frame_init;
	while (!r.bad && r.p < r.end) {
		uint64_t tag = pb_rd_tag(&r);

		if (tag == PB_TAG(1, PB_VARINT)) {
			f->id = pb_rd_varint(&r);
		} else if ((tag & 7) == PB_BYTES && f->body_case == MMC__FRAME__BODY__NOT_SET) {
			f->body_case = (Mmc__Frame__BodyCase)(tag >> 3);
			body = pb_rd_sub(&r);
			r.bad |= !body_slot(f) && f->body_case != MMC__FRAME__BODY_PUT;
		} else {
			r.bad = true; /* a second body, or a field this decoder leaves to protobuf-c */
		}
	}
	if (r.bad || body.bad)
		return NULL;
	if (f->body_case == MMC__FRAME__BODY_PUT)
		return (f->put = put_decode(a, body)) ? f : NULL;
	slot = body_slot(f);
	return (*slot = batch_decode(a, body)) ? f : NULL;
}

/* Whether a Frame field number is a body this file decodes: a KeyBatch or a PutBatch. */
static bool batch_body(uint64_t field)
{
	Mmc__Frame f = {.body_case = (Mmc__Frame__BodyCase)field};

	return field == MMC__FRAME__BODY_PUT || body_slot(&f);
}

/* Whether an item's key (field 1 of a KeyItem and of a PutItem) holds a NUL; its other fields are skipped. */
static bool item_key_has_nul(struct pb_rd it)
{
	bool nul = false;

	while (!it.bad && it.p < it.end) {
		uint64_t tag = pb_rd_tag(&it);

		if (tag == PB_TAG(1, PB_BYTES)) {
			struct pb_rd k = pb_rd_sub(&it);

			nul |= !k.bad && memchr(k.p, '\0', (size_t)(k.end - k.p)) != NULL;
		} else {
			pb_rd_skip(&it, tag);
		}
	}
	return nul;
}

void key_frame_scan(const uint8_t *p, size_t len, struct key_frame_scan *out)
{
	struct pb_rd r = {p, p + len, false}, body = {NULL, NULL, true};

	*out = (struct key_frame_scan){0};
	while (!r.bad && r.p < r.end) {
		uint64_t tag = pb_rd_tag(&r);

		if (tag == PB_TAG(1, PB_VARINT))
			out->id = pb_rd_varint(&r);
		else if ((tag & 7) == PB_BYTES && batch_body(tag >> 3))
			body = pb_rd_sub(&r);
		else
			pb_rd_skip(&r, tag);
	}
	while (!r.bad && !body.bad && body.p < body.end && out->items <= MMC_WIRE_KEYS_MAX) {
		uint64_t tag = pb_rd_tag(&body);

		if (tag == PB_TAG(1, PB_BYTES)) {
			out->nul_key |= item_key_has_nul(pb_rd_sub(&body));
			out->items++;
		} else {
			pb_rd_skip(&body, tag);
		}
	}
	if (r.bad)
		out->items = 0, out->nul_key = false;
}

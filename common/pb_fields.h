/*
 * protobuf's wire fields for the codecs that write and read the key batches by hand: libmmc's KeyBatch and PutBatch
 * requests and KeyBatchReply decoding (lib/wire.c, lib/extent_put.c), the meta server's KeyBatch decoding and
 * KeyResult encoding (metaserver/rpc/key_codec.c). Both ends of a round trip use these, so they cannot drift apart.
 * Fields are written in field-number order and proto3 defaults (0) are left out, as nanopb and protobuf-c do.
 */
#ifndef MMC_PB_FIELDS_H
#define MMC_PB_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "varint.h"

/* A field's tag: number << 3 | wire type. */
#define PB_TAG(n, t) ((uint64_t)(n) << 3 | (t))
enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_BYTES = 2, PB_FIXED32 = 5 };

static inline uint32_t pb_zigzag32(int32_t v)
{
	return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
}

static inline int32_t pb_unzigzag32(uint32_t v)
{
	return (int32_t)((v >> 1) ^ (uint32_t) - (int32_t)(v & 1));
}

/* ---- writing: fields of numbers below 16, whose tag is one byte ---- */

/* The bytes of a varint field of value v: 0 when v is 0 (left out). */
static inline size_t pb_field_len(uint64_t v)
{
	return v ? 1 + varint_len(v) : 0;
}

/* Writes a varint field (tag: its byte) unless v is 0; returns the byte after it. */
static inline uint8_t *pb_put_field(uint8_t *p, uint8_t tag, uint64_t v)
{
	if (!v)
		return p;
	*p++ = tag;
	return varint_put(p, v);
}

/* The bytes of a fixed32 field of value v: 0 when v is 0. */
static inline size_t pb_fixed32_len(uint32_t v)
{
	return v ? 5 : 0;
}

static inline uint8_t *pb_put_fixed32(uint8_t *p, uint8_t tag, uint32_t v)
{
	if (!v)
		return p;
	*p++ = tag;
	for (int b = 0; b < 4; b++)
		*p++ = (uint8_t)(v >> (8 * b));
	return p;
}

/* The bytes of a length-delimited field (string, bytes, sub-message) of n bytes: written even when n is 0. */
static inline size_t pb_sub_len(size_t n)
{
	return 1 + varint_len(n) + n;
}

/* Writes a length-delimited field's tag and length; its n bytes follow. */
static inline uint8_t *pb_put_sub(uint8_t *p, uint8_t tag, size_t n)
{
	*p++ = tag;
	return varint_put(p, n);
}

/* The bytes of a string field of n bytes: 0 when n is 0 (proto3 leaves an empty string out). */
static inline size_t pb_str_len(size_t n)
{
	return n ? pb_sub_len(n) : 0;
}

/* Writes a string field of n bytes at s unless n is 0; returns the byte after it. */
static inline uint8_t *pb_put_str(uint8_t *p, uint8_t tag, const void *s, size_t n)
{
	if (!n)
		return p;
	p = pb_put_sub(p, tag, n);
	memcpy(p, s, n);
	return p + n;
}

/* ---- reading: a bounded reader; any read past the end or of a malformed value sets bad and reads 0 ---- */

struct pb_rd {
	const uint8_t *p, *end;
	bool bad;
};

static inline uint64_t pb_rd_varint(struct pb_rd *r)
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

/* A tag or a length: a varint of at most five bytes (protobuf-c refuses a longer one, however small its value). */
static inline uint64_t pb_rd_tag(struct pb_rd *r)
{
	const uint8_t *start = r->p;
	uint64_t v = pb_rd_varint(r);

	r->bad |= r->p - start > 5;
	return v;
}

/* A 32-bit varint field: a wider value is cut to its low 32 bits, as protobuf's languages guide says a parser does
 * (and protobuf-c, which the hand decoders must read alike, does). */
static inline uint32_t pb_rd_u32(struct pb_rd *r)
{
	return (uint32_t)pb_rd_varint(r);
}

static inline int32_t pb_rd_s32(struct pb_rd *r)
{
	return pb_unzigzag32(pb_rd_u32(r));
}

static inline uint32_t pb_rd_fixed32(struct pb_rd *r)
{
	uint32_t v;

	if (r->end - r->p < 4) {
		r->bad = true;
		return 0;
	}
	v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;
	r->p += 4;
	return v;
}

/* A length-delimited field's bytes, as a reader of their own (bad when they run past r's end). */
static inline struct pb_rd pb_rd_sub(struct pb_rd *r)
{
	uint64_t n = pb_rd_tag(r);
	struct pb_rd s = {r->p, r->p, true};

	if (r->bad || n > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		return s;
	}
	s.end = r->p + n;
	s.bad = false;
	r->p += n;
	return s;
}

/* Skips the value of a field this reader does not know (tag just read); groups are bad. */
static inline void pb_rd_skip(struct pb_rd *r, uint64_t tag)
{
	switch (tag & 7) {
	case PB_VARINT:
		pb_rd_varint(r);
		break;
	case PB_FIXED64:
		if (r->end - r->p < 8)
			r->bad = true;
		else
			r->p += 8;
		break;
	case PB_BYTES:
		pb_rd_sub(r);
		break;
	case PB_FIXED32:
		pb_rd_fixed32(r);
		break;
	default:
		r->bad = true;
	}
}

#endif

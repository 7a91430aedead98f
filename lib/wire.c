#include "wire.h"

#include <stdlib.h>
#include <string.h>

#include "mmc/mmc.h"
#include "per_key.h"
#include "varint.h"

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

int wire_encode(struct wbuf *b, uint64_t id, uint32_t body, const pb_msgdesc_t *fields, const void *msg)
{
	size_t body_len, frame_len;
	pb_ostream_t s;

	if (!pb_get_encoded_size(&body_len, fields, msg))
		return MMC_INVALID_PARAM;
	frame_len = 1 + varint_len(id) + varint_len((uint64_t)body << 3) + varint_len(body_len) + body_len;
	if (frame_len > MMC_FRAME_MAX)
		return MMC_INVALID_PARAM;
	if (wbuf_reserve(b, 4 + frame_len))
		return MMC_MALLOC_FAILED;
	s = pb_ostream_from_buffer(b->data + 4, frame_len);
	if (!pb_encode_tag(&s, PB_WT_VARINT, 1) || !pb_encode_varint(&s, id) ||
	    !pb_encode_tag(&s, PB_WT_STRING, body) || !pb_encode_varint(&s, body_len) || !pb_encode(&s, fields, msg) ||
	    s.bytes_written != frame_len)
		return MMC_INTERNAL_ERROR;
	b->data[0] = (uint8_t)frame_len;
	b->data[1] = (uint8_t)(frame_len >> 8);
	b->data[2] = (uint8_t)(frame_len >> 16);
	b->data[3] = (uint8_t)(frame_len >> 24);
	b->len = 4 + frame_len;
	return 0;
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

static bool encode_items(pb_ostream_t *s, const pb_field_t *field, void *const *arg)
{
	const struct wire_items *it = *arg;
	mmc_KeyItem item = mmc_KeyItem_init_zero;

	for (size_t i = 0; i < it->n; i++) {
		size_t k = it->index ? it->index[i] : i;
		size_t len = strlen(it->keys[k]);

		if (len >= sizeof(item.key))
			return false;
		memcpy(item.key, it->keys[k], len + 1);
		item.size = it->sizes ? PER_KEY(it->sizes, k, it->stride) : 0;
		item.value = it->values ? PER_KEY(it->values, k, it->stride) : 0;
		item.token = it->tokens ? PER_KEY(it->tokens, k, it->stride) : 0;
		item.checksum_type = it->checksums ? PER_KEY(it->checksums, k, it->stride).type : 0;
		item.checksum = it->checksums ? PER_KEY(it->checksums, k, it->stride).value : 0;
		if (!pb_encode_tag_for_field(s, field) || !pb_encode_submessage(s, mmc_KeyItem_fields, &item))
			return false;
	}
	return true;
}

void wire_items_bind(mmc_KeyBatch *req, const struct wire_items *it)
{
	req->items.funcs.encode = encode_items;
	req->items.arg = (void *)it;
}

static bool decode_result(pb_istream_t *s, const pb_field_t *field, void **arg)
{
	struct wire_results *sink = *arg;
	mmc_KeyResult r = mmc_KeyResult_init_zero;

	if (!pb_decode(s, mmc_KeyResult_fields, &r))
		return false;
	return sink->fn(sink->arg, sink->count++, &r);
}

int wire_decode_key_reply(const uint8_t *data, size_t len, struct wire_results *sink, int32_t *result)
{
	mmc_KeyBatchReply r = mmc_KeyBatchReply_init_zero;
	pb_istream_t s = pb_istream_from_buffer(data, len);

	sink->count = 0;
	r.items.funcs.decode = decode_result;
	r.items.arg = sink;
	if (!pb_decode(&s, mmc_KeyBatchReply_fields, &r))
		return MMC_INVALID_PARAM;
	*result = r.result;
	return 0;
}

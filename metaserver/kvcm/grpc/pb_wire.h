/*
 * Protobuf wire format written straight into one growing buffer: what the hot replies (typed_reply.c) are encoded
 * with, from the handlers' results, without protobuf-c messages. Callers write fields in field-number order and
 * leave proto3 defaults out, as protobuf_c_message_pack does, so the bytes are the ones it would write.
 */
#ifndef MMC_KVCM_PB_WIRE_H
#define MMC_KVCM_PB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pbw {
	uint8_t *buf;
	size_t len, cap;
	bool oom; /* memory ran out: the content is not whole */
};

void pbw_init(struct pbw *w);
void pbw_free(struct pbw *w);

/* A varint field (int32, int64, uint32, uint64, enum, bool: negative numbers take ten bytes), even when 0. */
void pbw_varint_field(struct pbw *w, uint32_t field, uint64_t v);
/* The same, left out when 0. */
static inline void pbw_varint_nz(struct pbw *w, uint32_t field, uint64_t v)
{
	if (v)
		pbw_varint_field(w, field, v);
}
/* A string field, left out when empty. */
void pbw_str(struct pbw *w, uint32_t field, const char *s);
/* Bytes as a length-delimited field, even when n is 0. */
void pbw_bytes(struct pbw *w, uint32_t field, const void *p, size_t n);
/* A varint with no tag (the elements of a packed repeated field). */
void pbw_varint(struct pbw *w, uint64_t v);

/* A sub-message or packed field: open writes its tag and returns where its length goes; close sets the length
 * once its content is written. */
size_t pbw_open(struct pbw *w, uint32_t field);
void pbw_close(struct pbw *w, size_t at);

#endif

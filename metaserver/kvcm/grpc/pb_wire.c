#include "pb_wire.h"

#include <stdlib.h>
#include <string.h>

#include "varint.h"

enum { WT_VARINT = 0, WT_LEN = 2 };

void pbw_init(struct pbw *w)
{
	memset(w, 0, sizeof(*w));
}

void pbw_free(struct pbw *w)
{
	free(w->buf);
	pbw_init(w);
}

static bool grow(struct pbw *w, size_t n)
{
	size_t cap;
	uint8_t *b;

	if (w->oom)
		return false;
	cap = w->cap ? w->cap : 4096;
	while (cap < w->len + n)
		cap *= 2;
	if (!(b = realloc(w->buf, cap))) {
		w->oom = true;
		return false;
	}
	w->buf = b;
	w->cap = cap;
	return true;
}

static inline bool reserve(struct pbw *w, size_t n)
{
	return w->len + n <= w->cap || grow(w, n);
}

void pbw_varint(struct pbw *w, uint64_t v)
{
	if (reserve(w, 10))
		w->len = (size_t)(varint_put(w->buf + w->len, v) - w->buf);
}

static void tag(struct pbw *w, uint32_t field, int type)
{
	pbw_varint(w, (uint64_t)field << 3 | (uint64_t)type);
}

void pbw_varint_field(struct pbw *w, uint32_t field, uint64_t v)
{
	tag(w, field, WT_VARINT);
	pbw_varint(w, v);
}

void pbw_bytes(struct pbw *w, uint32_t field, const void *p, size_t n)
{
	tag(w, field, WT_LEN);
	pbw_varint(w, n);
	if (n && reserve(w, n)) {
		memcpy(w->buf + w->len, p, n);
		w->len += n;
	}
}

void pbw_str(struct pbw *w, uint32_t field, const char *s)
{
	if (s && *s)
		pbw_bytes(w, field, s, strlen(s));
}

size_t pbw_open(struct pbw *w, uint32_t field)
{
	tag(w, field, WT_LEN);
	if (reserve(w, 1))
		w->buf[w->len++] = 0; /* most contents are shorter than 128 bytes: a one-byte length */
	return w->len - 1;
}

void pbw_close(struct pbw *w, size_t at)
{
	size_t n, k;

	if (w->oom)
		return;
	n = w->len - at - 1;
	k = varint_len(n);
	if (k > 1) { /* a longer length: the content moves up */
		if (!reserve(w, k - 1))
			return;
		memmove(w->buf + at + k, w->buf + at + 1, n);
		w->len += k - 1;
	}
	varint_put(w->buf + at, n);
}

#include "http_head.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Where the block's end is: the first empty line, RFC 9112 allowing a bare LF as a line's end (§2.2). */
static bool whole(const struct http_head *h, uint32_t from)
{
	for (uint32_t i = from; i < h->len; i++) {
		if (h->buf[i] != '\n')
			continue;
		if ((i >= 1 && h->buf[i - 1] == '\n') || (i >= 2 && h->buf[i - 1] == '\r' && h->buf[i - 2] == '\n'))
			return true;
	}
	return false;
}

/* Empty lines before a request line are ignored (RFC 9112 §2.2), as evhttp does. */
static void skip_leading_newlines(struct http_head *h)
{
	uint32_t n = 0;

	while (n < h->len && (h->buf[n] == '\r' || h->buf[n] == '\n'))
		n++;
	memmove(h->buf, h->buf + n, h->len - n);
	h->len -= n;
}

static int copy_tail(struct http_head *h, struct evbuffer *in, size_t n)
{
	size_t have = evbuffer_get_length(in);
	uint32_t from = h->len >= 2 ? h->len - 2 : 0, want;
	struct evbuffer_ptr at;

	if (n > have)
		n = have;
	if (h->len + n > h->limit)
		return -1;
	want = h->len + (uint32_t)n;
	if (want > h->cap) {
		uint32_t cap = h->cap ? h->cap : 512;
		char *p;

		while (cap < want)
			cap *= 2;
		if (!(p = realloc(h->buf, cap)))
			return -1;
		h->buf = p;
		h->cap = cap;
	}
	if (evbuffer_ptr_set(in, &at, have - n, EVBUFFER_PTR_SET) ||
	    evbuffer_copyout_from(in, &at, h->buf + h->len, n) != (ev_ssize_t)n)
		return -1;
	h->len = want;
	skip_leading_newlines(h);
	if (from > h->len)
		from = 0;
	return whole(h, from) ? 1 : 0;
}

int http_head_begin(struct http_head *h, struct evbuffer *in, uint32_t limit)
{
	h->len = 0;
	h->limit = limit;
	h->active = true;
	return http_head_feed(h, in, evbuffer_get_length(in));
}

int http_head_feed(struct http_head *h, struct evbuffer *in, size_t n)
{
	int rc;

	if (!h->active || !n)
		return 0;
	rc = copy_tail(h, in, n);
	if (rc)
		h->active = false;
	if (rc < 0)
		http_head_free(h);
	return rc;
}

bool http_head_field(const struct http_head *h, const char *name, char *out, size_t cap)
{
	size_t nlen = strlen(name);
	const char *p = h->buf, *end = h->buf + h->len;

	/* the request line first, then a field per line up to the empty one */
	for (const char *eol; p < end && (eol = memchr(p, '\n', (size_t)(end - p))); p = eol + 1) {
		const char *v = p + nlen + 1, *ve = eol;

		if (p != h->buf && (eol == p || (eol == p + 1 && *p == '\r')))
			break;
		if (p == h->buf || (size_t)(eol - p) <= nlen || p[nlen] != ':' || strncasecmp(p, name, nlen) != 0)
			continue;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if ((size_t)(ve - v) >= cap)
			return false;
		memcpy(out, v, (size_t)(ve - v));
		out[ve - v] = '\0';
		return true;
	}
	return false;
}

void http_head_free(struct http_head *h)
{
	free(h->buf);
	h->buf = NULL;
	h->len = h->cap = 0;
	h->active = false;
}

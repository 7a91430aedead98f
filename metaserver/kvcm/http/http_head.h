/*
 * A request's header block, copied as its bytes arrive on a connection and before evhttp parses them, so that its
 * credentials can be judged before its body is read (http_conn.c): a request that will be refused 401 or 403 has its
 * body read only up to a small cap, and a client without credentials cannot fill the request-byte budget that the
 * authenticated ones share. The copy is of the received bytes, not of evhttp's parse, which drains header lines as it
 * goes and gives no hook before the body in libevent 2.1.
 *
 * The parse is the simple one of RFC 9112 §5: a field line is "name: value"; folded lines (obsolete, §5.2) are not
 * joined, so a folded Authorization reads as absent here and such a request is judged as one without credentials
 * until evhttp's own parse judges it again. Loop thread only.
 */
#ifndef MMC_KVCM_HTTP_HEAD_H
#define MMC_KVCM_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;

struct http_head {
	char *buf;      /* the bytes copied so far (owned; NULL when none) */
	uint32_t len;   /* of buf */
	uint32_t cap;   /* of buf's allocation */
	uint32_t limit; /* the most bytes a header block may take; beyond it evhttp refuses the request anyway */
	bool active;    /* copying: the connection's next bytes belong to this request's header block */
};

/* Starts copying the header block of the request whose first bytes are all of in (which may be empty): the bytes
 * received after a request's body begin the next request. limit: see struct http_head. Returns as http_head_feed. */
int http_head_begin(struct http_head *h, struct evbuffer *in, uint32_t limit);
/* Copies the n bytes just added at the end of in. Returns 1 when the block is now whole (the fields may be read,
 * until the next http_head_begin or http_head_free), 0 when more is needed, -1 when it cannot be whole (past limit,
 * or out of memory): copying stops. */
int http_head_feed(struct http_head *h, struct evbuffer *in, size_t n);
/* The value of the first field named name (case-insensitive) of a whole block, without its surrounding blanks, in
 * out as a C string; false when the field is absent or its value does not fit in cap bytes. */
bool http_head_field(const struct http_head *h, const char *name, char *out, size_t cap);
/* Stops copying and frees the copy. */
void http_head_free(struct http_head *h);

#endif

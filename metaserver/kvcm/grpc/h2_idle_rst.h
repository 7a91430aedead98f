/*
 * A filter in front of nghttp2 that drops one frame: RST_STREAM for a client stream the client never opened.
 * RFC 9113 6.4 makes that a connection error, and nghttp2 closes the connection for it; but python3-grpcio 1.51
 * sends it when a call is cancelled right after it was started (the stream id allocated, its HEADERS not yet
 * written), and the connection's other calls would fail with it. Everything else passes through unchanged, frame
 * by frame; the filter only reads frame headers (9 bytes: length, type, flags, stream id).
 */
#ifndef MMC_KVCM_H2_IDLE_RST_H
#define MMC_KVCM_H2_IDLE_RST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct h2_idle_rst {
	size_t preface_left; /* the client magic passes unread */
	uint8_t hdr[9];      /* a frame header split across reads */
	size_t hdr_len;
	size_t payload_left; /* of the current frame */
	bool skipping;       /* the current frame is dropped */
	uint32_t max_opened; /* the highest client stream id a HEADERS frame named */
	uint64_t dropped;
};

void h2_idle_rst_init(struct h2_idle_rst *f);

/* Hands in[0..len) to feed() in runs, less the dropped frames; stops at the first feed() that fails (< 0) and
 * returns its result, else 0. feed may be called with a run of the filter's own (a frame header). */
typedef long h2_feed_fn(void *arg, const uint8_t *data, size_t len);
long h2_idle_rst_pass(struct h2_idle_rst *f, const uint8_t *in, size_t len, h2_feed_fn *feed, void *arg);

#endif

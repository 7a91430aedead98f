#include "h2_idle_rst.h"

#include <string.h>

#define H2_HEADERS    1
#define H2_RST_STREAM 3

void h2_idle_rst_init(struct h2_idle_rst *f)
{
	memset(f, 0, sizeof(*f));
	f->preface_left = 24;
}

/* A complete frame header: whether to drop its frame, and what it tells about the client's streams. */
static void judge(struct h2_idle_rst *f)
{
	uint32_t sid = ((uint32_t)f->hdr[5] << 24 | (uint32_t)f->hdr[6] << 16 | (uint32_t)f->hdr[7] << 8 | f->hdr[8]) &
	               0x7fffffffu;

	f->payload_left = (size_t)f->hdr[0] << 16 | (size_t)f->hdr[1] << 8 | f->hdr[2];
	f->skipping = f->hdr[3] == H2_RST_STREAM && (sid & 1) && sid > f->max_opened;
	if (f->hdr[3] == H2_HEADERS && (sid & 1) && sid > f->max_opened)
		f->max_opened = sid;
	f->dropped += f->skipping;
}

long h2_idle_rst_pass(struct h2_idle_rst *f, const uint8_t *in, size_t len, h2_feed_fn *feed, void *arg)
{
	size_t i = 0, n;
	long rc;

	while (i < len) {
		if (f->preface_left || (f->hdr_len == 9 && f->payload_left)) {
			/* a run of the preface or of a payload: passed or dropped as a whole */
			n = f->preface_left ? f->preface_left : f->payload_left;
			n = n < len - i ? n : len - i;
			if ((f->preface_left || !f->skipping) && (rc = feed(arg, in + i, n)) < 0)
				return rc;
			*(f->preface_left ? &f->preface_left : &f->payload_left) -= n;
			i += n;
			continue;
		}
		if (f->hdr_len == 9)
			f->hdr_len = 0; /* the last frame is over */
		n = 9 - f->hdr_len < len - i ? 9 - f->hdr_len : len - i;
		memcpy(f->hdr + f->hdr_len, in + i, n);
		f->hdr_len += n;
		i += n;
		if (f->hdr_len < 9)
			break;
		judge(f);
		if (!f->skipping && (rc = feed(arg, f->hdr, 9)) < 0)
			return rc;
	}
	return 0;
}

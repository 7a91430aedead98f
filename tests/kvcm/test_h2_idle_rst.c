/*
 * The frame filter in front of nghttp2 (metaserver/kvcm/grpc/h2_idle_rst.c), alone: it drops exactly the
 * RST_STREAM frames of client streams no HEADERS opened, passes every other byte in order, and gives the same
 * result however the input is split across reads.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "h2_idle_rst.h"

struct sink {
	uint8_t buf[4096];
	size_t len;
};

static long collect(void *arg, const uint8_t *data, size_t len)
{
	struct sink *s = arg;

	cr_assert_leq(s->len + len, sizeof(s->buf));
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	return 0;
}

static size_t frame(uint8_t *p, uint8_t type, uint32_t sid, size_t len)
{
	p[0] = 0;
	p[1] = (uint8_t)(len >> 8);
	p[2] = (uint8_t)len;
	p[3] = type;
	p[4] = 0;
	p[5] = (uint8_t)(sid >> 24);
	p[6] = (uint8_t)(sid >> 16);
	p[7] = (uint8_t)(sid >> 8);
	p[8] = (uint8_t)sid;
	memset(p + 9, 0xa0 + type, len);
	return 9 + len;
}

/* preface, SETTINGS, RST 5 (idle: dropped), HEADERS 3, RST 3 (kept), RST 7 (idle), DATA 3, RST 2 (server's: kept) */
static size_t input(uint8_t *in, uint8_t *want, size_t *want_len)
{
	size_t n = 24, w = 24, at;

	memcpy(in, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
	memcpy(want, in, 24);
	struct {
		uint8_t type;
		uint32_t sid;
		size_t len;
		bool kept;
	} fs[] = {{4, 0, 6, true},  {3, 5, 4, false},  {1, 3, 20, true}, {3, 3, 4, true},
	          {3, 7, 4, false}, {0, 3, 300, true}, {3, 2, 4, true},  {4, 0, 0, true}};

	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++) {
		at = n;
		n += frame(in + n, fs[i].type, fs[i].sid, fs[i].len);
		if (fs[i].kept) {
			memcpy(want + w, in + at, n - at);
			w += n - at;
		}
	}
	*want_len = w;
	return n;
}

Test(h2_idle_rst, drops_only_resets_of_idle_client_streams)
{
	uint8_t in[1024], want[1024];
	size_t want_len, len = input(in, want, &want_len);
	struct h2_idle_rst f;
	struct sink s = {.len = 0};

	h2_idle_rst_init(&f);
	cr_assert_eq(h2_idle_rst_pass(&f, in, len, collect, &s), 0);
	cr_assert_eq(s.len, want_len);
	cr_assert(memcmp(s.buf, want, want_len) == 0);
	cr_assert_eq(f.dropped, 2);
}

Test(h2_idle_rst, any_split_gives_the_same_bytes)
{
	uint8_t in[1024], want[1024];
	size_t want_len, len = input(in, want, &want_len);

	for (size_t step = 1; step <= 17; step++) {
		struct h2_idle_rst f;
		struct sink s = {.len = 0};

		h2_idle_rst_init(&f);
		for (size_t i = 0; i < len; i += step)
			cr_assert_eq(h2_idle_rst_pass(&f, in + i, i + step < len ? step : len - i, collect, &s), 0);
		cr_assert_eq(s.len, want_len, "step %zu", step);
		cr_assert(memcmp(s.buf, want, want_len) == 0, "step %zu", step);
	}
}

static long refuse(void *arg, const uint8_t *data, size_t len)
{
	(void)arg;
	(void)data;
	(void)len;
	return -7;
}

Test(h2_idle_rst, a_failing_feed_stops_it)
{
	uint8_t in[1024], want[1024];
	size_t want_len, len = input(in, want, &want_len);
	struct h2_idle_rst f;

	h2_idle_rst_init(&f);
	cr_assert_eq(h2_idle_rst_pass(&f, in, len, refuse, NULL), -7);
}
